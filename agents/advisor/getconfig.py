"""Configuration returned by a function: ml_collections / JAX-style `get_config(arg)` config files.

`--config=configs/vit.py:b16,cifar10` makes ml_collections call `get_config("b16,cifar10")` and train
with the `ConfigDict` it returns. `run_get_config(repo, rel, arg)` folds that call without running it:
statements are read in order with a local name table (assignments to names, attributes and keys,
tuple unpacking of `arg.split(',')`, `if`/`elif` on known values, `config.update(...)`, calls of
other functions of the same file or of a repository module it imports); expressions fold through
`pyconfig.evaluate` (f-strings, string methods, dict look-ups, arithmetic). What does not fold is left
out; nothing is executed.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from schedmate.agents.advisor import pyconfig as pyc

__all__ = ["CONFIG_FUNCTIONS", "defines_config_function", "run_get_config"]

CONFIG_FUNCTIONS = ("get_config", "get_default_config", "get_hparams")
_MAX_CALLS = 6


def defines_config_function(tree: ast.Module) -> str | None:
    return next((st.name for st in tree.body if isinstance(st, ast.FunctionDef) and st.name in CONFIG_FUNCTIONS),
                None)


def _parse(repo: Path, rel: str) -> ast.Module | None:
    text = pyc.read_text(repo, rel)
    if text is None:
        return None
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None


class _Folder:
    """Folds the functions of one file (and the repository modules it imports) for one call."""

    def __init__(self, repo: Path, rel: str, tree: ast.Module, env: Mapping[str, str] | None, depth: int) -> None:
        self.repo, self.rel, self.env, self.depth = repo, rel, env, depth
        self.functions = {st.name: st for st in tree.body if isinstance(st, ast.FunctionDef)}
        self.modules: dict[str, str] = {}  # local alias -> repository file of an imported module
        for st in tree.body:
            if isinstance(st, ast.ImportFrom) and st.module is not None:
                for a in st.names:
                    cand = self._module_file(st.module, a.name, st.level)
                    if cand:
                        self.modules[a.asname or a.name] = cand
            elif isinstance(st, ast.Import):
                for a in st.names:
                    cand = self._module_file(a.name, None, 0)
                    if cand:
                        self.modules[a.asname or a.name.rsplit(".", 1)[-1]] = cand
        self.globals: dict[str, Any] = {k: v for k, (v, _) in pyc.module_values(tree, {}, env).items()}

    def _module_file(self, module: str, name: str | None, level: int) -> str | None:
        base = Path(self.rel).parent
        for _ in range(max(level - 1, 0)):
            base = base.parent
        parts = module.replace(".", "/")
        cands = [f"{parts}/{name}.py"] if name else []
        cands.append(f"{parts}.py")
        for c in cands:
            for root in ((base,) if level else (Path("."), base)):
                rel = (root / c).as_posix().removeprefix("./")
                if (self.repo / rel).is_file():
                    return rel
        return None

    def call(self, fn: ast.FunctionDef, args: list[Any]) -> Any:
        local: dict[str, Any] = dict(self.globals)
        params = fn.args.args
        defaults = [None] * (len(params) - len(fn.args.defaults)) + list(fn.args.defaults)
        for i, p in enumerate(params):
            if i < len(args):
                local[p.arg] = args[i]
            elif defaults[i] is not None:
                local[p.arg] = pyc.evaluate(defaults[i], local, None, self.env)
            else:
                local[p.arg] = None
        result = self._run(fn.body, local)
        return None if result is pyc.MISSING else result

    def value(self, node: ast.AST, local: dict[str, Any]) -> Any:
        if isinstance(node, ast.Call):
            called = self._call(node, local)
            if called is not pyc.MISSING:
                return called
        return pyc.evaluate(node, local, None, self.env)

    def _call(self, node: ast.Call, local: dict[str, Any]) -> Any:
        name = pyc.dotted(node.func)
        if self.depth >= _MAX_CALLS:
            return pyc.MISSING
        args = [self.value(a, local) for a in node.args]
        if name in self.functions:
            self.depth += 1
            try:
                return self.call(self.functions[name], args)
            finally:
                self.depth -= 1
        mod, _, fname = name.rpartition(".")
        if not mod and name in self.modules:  # from configs.default import get_default_configs
            mod, fname = name, name
        if mod in self.modules:  # default_config.get_config() of an imported config module
            tree = _parse(self.repo, self.modules[mod])
            if tree is not None:
                other = _Folder(self.repo, self.modules[mod], tree, self.env, self.depth + 1)
                if fname in other.functions:
                    return other.call(other.functions[fname], args)
        return pyc.MISSING

    def _assign(self, target: ast.AST, value: Any, local: dict[str, Any]) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            items = value if isinstance(value, (list, tuple)) and len(value) == len(target.elts) else None
            for i, t in enumerate(target.elts):
                self._assign(t, items[i] if items is not None else pyc.MISSING, local)
            return
        if isinstance(target, ast.Name):
            local[target.id] = value
            return
        if isinstance(target, (ast.Attribute, ast.Subscript)):
            owner = pyc.evaluate(target.value, local, None, self.env)
            key = target.attr if isinstance(target, ast.Attribute) else pyc.evaluate(target.slice, local, None, self.env)
            if isinstance(owner, dict) and isinstance(key, (str, int)):
                if value is pyc.MISSING:
                    owner.pop(str(key), None)  # set to something unknown: the earlier value no longer holds
                else:
                    owner[str(key)] = value

    def _run(self, body: list[ast.stmt], local: dict[str, Any]) -> Any:
        for st in body:
            if isinstance(st, ast.Return):
                return self.value(st.value, local) if st.value is not None else None
            if isinstance(st, ast.Assign):
                v = self.value(st.value, local)
                for t in st.targets:
                    self._assign(t, v, local)
            elif isinstance(st, ast.AnnAssign) and st.value is not None:
                self._assign(st.target, self.value(st.value, local), local)
            elif isinstance(st, ast.AugAssign):
                v = pyc.evaluate(ast.BinOp(left=st.target, op=st.op, right=st.value), local, None, self.env)
                self._assign(st.target, v, local)
            elif isinstance(st, ast.If):
                test = pyc.evaluate(st.test, local, None, self.env)
                if test is pyc.MISSING:
                    continue  # a branch on something unknown: neither side is known to run
                r = self._run(st.body if test else st.orelse, local)
                if r is not pyc.MISSING:
                    return r
            elif isinstance(st, (ast.With, ast.Try)):
                r = self._run(st.body, local)
                if r is not pyc.MISSING:
                    return r
            elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) \
                    and isinstance(st.value.func, ast.Attribute) and st.value.func.attr == "update":
                owner = pyc.evaluate(st.value.func.value, local, None, self.env)
                if isinstance(owner, dict):  # config.update(dict(...)) / config.update(lr=...)
                    for a in st.value.args:
                        v = self.value(a, local)
                        if isinstance(v, dict):
                            owner.update(v)
                    for kw in st.value.keywords:
                        v = self.value(kw.value, local)
                        if kw.arg and v is not pyc.MISSING:
                            owner[kw.arg] = v
        return pyc.MISSING


def run_get_config(repo: Path, rel: str, arg: str | None = None, *, env: Mapping[str, str] | None = None
                   ) -> dict[str, Any] | None:
    """The nested values `get_config(arg)` of `rel` returns (None when the file has no such function or
    its result does not fold to a dict)."""
    tree = _parse(repo, rel)
    if tree is None:
        return None
    name = defines_config_function(tree)
    if name is None:
        return None
    folder = _Folder(repo, rel, tree, env, 0)
    fn = folder.functions[name]
    result = folder.call(fn, [arg] if arg is not None else [])
    return _plain(result) if isinstance(result, dict) else None


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items() if v is not pyc.MISSING}
    return value
