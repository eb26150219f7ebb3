"""Python written as configuration, read by constant folding (AST only; nothing is executed).

* `evaluate(node, names, lookup)`: the value of an expression built from literals, known names
  (`names`, then `lookup` for values the configuration states elsewhere: `args.batch_size`),
  `dict(...)`, containers, arithmetic, `int/float/round/min/max/math.ceil`, `a or b`, `x if c else y`;
  `MISSING` when any part is unknown, so nothing is guessed;
* `load_py_config(repo, rel)`: a Python config file (nanoGPT `config/*.py`, mmengine/mmcv
  `configs/**.py`) as flat dotted leaves, merged over its `_base_` files (mmengine semantics:
  dicts merge recursively, `_delete_=True` replaces);
* `code_facts(tree, text, lookup, env)`: what training code itself decides: values derived from
  known ones (`lr = base_lr * batch_size / 256`, `max_steps = total_samples // global_batch`),
  literals hard-coded where training runs (`for epoch in range(90)`, `AdamW(params, lr=3e-4)`,
  `DataLoader(..., num_workers=4)`) and configuration dicts built in code (a DeepSpeed dict).
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schedmate.agents.advisor import budget

__all__ = ["MISSING", "WORLD_SIZE", "CodeFact", "Returns", "code_facts", "constant_returns", "evaluate",
           "load_py_config", "merge", "module_values", "read_text"]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
Lookup = Callable[[str], Any]
_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}
_FUNCS: dict[str, Callable[..., Any]] = {
    "int": lambda v: int(float(v)), "float": float, "str": str, "round": round, "abs": abs, "min": min, "max": max,
    "math.ceil": math.ceil, "math.floor": math.floor, "math.sqrt": math.sqrt, "bool": bool,
}
_ENV_GET = ("os.environ.get", "os.getenv", "environ.get", "getenv")
_CMPOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Is: operator.is_, ast.IsNot: operator.is_not, ast.Eq: operator.eq, ast.NotEq: operator.ne,
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
_STR_METHODS: dict[str, Callable[..., Any]] = {
    "split": lambda s, sep=None: s.split(sep), "upper": str.upper, "lower": str.lower, "strip": str.strip,
    "replace": str.replace, "startswith": str.startswith, "endswith": str.endswith,
}
MAX_BASES = 8
WORLD_SIZE = "<world_size>"  # what `lookup` is asked for `dist.get_world_size()` / `torch.cuda.device_count()`
_WORLD_CALLS = ("get_world_size", "device_count", "num_processes")


@dataclass(frozen=True)
class Returns:
    """What a module-level function returns whatever its arguments: the keys every `return {...}` of
    the function states with the same value (`get_default_params(model)` -> {'lr': 5e-4})."""

    value: dict[str, Any]


def constant_returns(tree: ast.Module) -> dict[str, Returns]:
    out: dict[str, Returns] = {}
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        rets = [n.value for n in ast.walk(fn) if isinstance(n, ast.Return)]
        if not rets or not all(isinstance(r, ast.Dict) for r in rets):
            continue
        dicts = [evaluate(r, {}) for r in rets]
        if any(not isinstance(d, dict) for d in dicts):
            continue
        common = {k: v for k, v in dicts[0].items() if all(k in d and d[k] == v for d in dicts[1:])}
        if common:
            out[fn.name] = Returns(common)
    return out


def dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        base = dotted(node.value)
        return f"{base}.{node.slice.value}" if base else ""
    return ""


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def evaluate(node: ast.AST | None, names: Mapping[str, Any], lookup: Lookup | None = None,
             env: Mapping[str, str] | None = None) -> Any:
    """The value of `node`, or MISSING. Pure: reads only `names`, `lookup` and `env`."""
    if node is None:
        return MISSING
    ev = lambda n: evaluate(n, names, lookup, env)  # noqa: E731
    try:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Subscript) and dotted(node.value) in ("os.environ", "environ"):
            key = ev(node.slice)  # os.environ["LR"]: only the launcher's environment states it
            return env[key] if env is not None and isinstance(key, str) and key in env else MISSING
        if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)):
            key = dotted(node)
            if key and key in names:
                return names[key]
            if isinstance(node, (ast.Attribute, ast.Subscript)):
                base = ev(node.value)
                attr = node.attr if isinstance(node, ast.Attribute) else ev(node.slice)
                if isinstance(base, dict) and attr in base:
                    return base[attr]
                if isinstance(base, (list, tuple)) and isinstance(attr, int) and -len(base) <= attr < len(base):
                    return base[attr]
            if key and lookup is not None:
                return lookup(key)
            return MISSING
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [ev(e) for e in node.elts]
            return MISSING if any(i is MISSING for i in items) else items
        if isinstance(node, ast.Dict):
            out: dict[str, Any] = {}
            for k, v in zip(node.keys, node.values, strict=True):
                if k is None:  # **other
                    other = ev(v)
                    if isinstance(other, dict):
                        out.update(other)
                    continue
                key = ev(k)
                val = ev(v)
                if isinstance(key, (str, int)) and val is not MISSING:
                    out[str(key)] = val
            return out
        if isinstance(node, ast.UnaryOp):
            v = ev(node.operand)
            if _number(v):
                return -v if isinstance(node.op, ast.USub) else v if isinstance(node.op, ast.UAdd) else MISSING
            if isinstance(node.op, ast.Not) and v is not MISSING:
                return not v
            return MISSING
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            a, b = ev(node.left), ev(node.right)
            if a is MISSING or b is MISSING:
                return MISSING
            if (_number(a) and _number(b)) or (isinstance(node.op, ast.Add) and type(a) is type(b)
                                               and isinstance(a, (str, list))):
                if isinstance(node.op, ast.Pow) and _number(b) and abs(b) > 64:
                    return MISSING
                return _BINOPS[type(node.op)](a, b)
            return MISSING
        if isinstance(node, ast.BoolOp):
            vals = [ev(v) for v in node.values]
            if isinstance(node.op, ast.Or):
                for v in vals:
                    if v is MISSING:
                        return MISSING
                    if v:
                        return v
                return vals[-1]
            return MISSING
        if isinstance(node, ast.IfExp):
            test = ev(node.test)
            return MISSING if test is MISSING else ev(node.body if test else node.orelse)
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMPOPS:
            a, b = ev(node.left), ev(node.comparators[0])
            if a is MISSING or b is MISSING:
                return MISSING
            return _CMPOPS[type(node.ops[0])](a, b)
        if isinstance(node, ast.JoinedStr):  # f"ViT-{variant}"
            parts = []
            for v in node.values:
                x = ev(v.value) if isinstance(v, ast.FormattedValue) else ev(v)
                if x is MISSING or isinstance(x, (dict, list)):
                    return MISSING
                parts.append(str(x))
            return "".join(parts)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _STR_METHODS:
            base = ev(node.func.value)  # 'b16,cifar10'.split(','), variant.upper()
            args = [ev(a) for a in node.args]
            if isinstance(base, str) and not node.keywords and all(isinstance(a, str) for a in args):
                return _STR_METHODS[node.func.attr](base, *args)
        if isinstance(node, ast.Call):
            fn = dotted(node.func)
            if fn.rsplit(".", 1)[-1] in ("ConfigDict", "FrozenConfigDict", "EasyDict", "edict", "Namespace",
                                          "SimpleNamespace", "OmegaConf.create", "create"):
                fn = "dict"  # ml_collections / easydict containers hold plain values
            if isinstance(names.get(fn), Returns):  # a helper whose every return states the same values
                return dict(names[fn].value)
            if fn == "dict":
                out = {}
                for a in node.args:
                    v = ev(a)
                    if isinstance(v, dict):
                        out.update(v)
                for kw in node.keywords:
                    v = ev(kw.value)
                    if kw.arg is None and isinstance(v, dict):
                        out.update(v)
                    elif kw.arg and v is not MISSING:
                        out[kw.arg] = v
                return out
            if fn in _ENV_GET and node.args:
                key = ev(node.args[0])
                if isinstance(key, str) and env is not None and key in env:
                    return env[key]
                return ev(node.args[1]) if len(node.args) > 1 else None
            if fn.rsplit(".", 1)[-1] in _WORLD_CALLS and not node.args and lookup is not None:
                return lookup(WORLD_SIZE)
            if fn in _FUNCS and node.args and not node.keywords:
                args = [ev(a) for a in node.args]
                if any(a is MISSING for a in args):
                    return MISSING
                return _FUNCS[fn](*args)
    except (ArithmeticError, ValueError, TypeError, RecursionError):
        return MISSING
    return MISSING


# ------------------------------------------------------------------------------------- config files


def merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """mmengine-style merge: nested dicts merge, `_delete_=True` in `over` replaces the base dict."""
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict) and not v.get("_delete_"):
            out[k] = merge(out[k], v)
        elif isinstance(v, dict):
            out[k] = {kk: vv for kk, vv in v.items() if kk != "_delete_"}
        else:
            out[k] = v
    return out


def _jsonish(v: Any) -> bool:
    if isinstance(v, (str, int, float, bool)) or v is None:
        return True
    if isinstance(v, (list, tuple)):
        return all(_jsonish(x) for x in v)
    if isinstance(v, dict):
        return all(isinstance(k, str) and _jsonish(x) for k, x in v.items())
    return False


def read_text(repo: Path, rel: str) -> str | None:
    """A repository file's text (None when missing, outside the repository or over 1 MB)."""
    try:
        real = (repo / rel).resolve(strict=True)
        if not real.is_relative_to(repo.resolve()) or not real.is_file() or not budget.admit(real, real.stat().st_size):
            return None
        return real.read_text(encoding="utf-8", errors="replace")
    except (OSError, RuntimeError):
        return None


def dataclass_defaults(tree: ast.Module) -> dict[str, dict[str, Any]]:
    """`@dataclass class Config: lr: float = 1e-4` -> {'Config': {'lr': 1e-4}} (fields whose default folds)."""
    out: dict[str, dict[str, Any]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or not any(
                dotted(d.func if isinstance(d, ast.Call) else d).rsplit(".", 1)[-1] == "dataclass"
                for d in node.decorator_list):
            continue
        fields: dict[str, Any] = {}
        for st in node.body:
            if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.value is not None:
                value: ast.expr | None = st.value
                if isinstance(value, ast.Call) and dotted(value.func).rsplit(".", 1)[-1] == "field":
                    value = next((kw.value for kw in value.keywords if kw.arg == "default"), None)
                v = evaluate(value, {}) if value is not None else MISSING
                if v is not MISSING and _jsonish(v):
                    fields[st.target.id] = v
        out[node.name] = fields
    return out


def _imported_dataclasses(repo: Path, rel: str, tree: ast.Module) -> dict[str, dict[str, Any]]:
    """Dataclasses a config module imports from the repository (`from configs.base import Config`)."""
    out: dict[str, dict[str, Any]] = {}
    for st in tree.body:
        if not isinstance(st, ast.ImportFrom) or not st.module:
            continue
        base = Path(rel).parent
        for _ in range(max(st.level - 1, 0)):
            base = base.parent
        mod = st.module.replace(".", "/") + ".py"
        for cand in ([(base / mod).as_posix()] if st.level else [mod, (Path(rel).parent / mod).as_posix()]):
            text = read_text(repo, cand)
            if text is None:
                continue
            try:
                classes = dataclass_defaults(ast.parse(text))
            except (SyntaxError, ValueError, RecursionError):
                break
            for a in st.names:
                if a.name in classes:
                    out[a.asname or a.name] = classes[a.name]
            break
    return out


def _instance(node: ast.AST, classes: Mapping[str, dict[str, Any]], names: Mapping[str, Any],
              env: Mapping[str, str] | None) -> Any:
    """`Config(lr=2e-4)` of a known dataclass: its defaults updated with the keywords that fold."""
    if not (isinstance(node, ast.Call) and dotted(node.func) in classes):
        return MISSING
    out = dict(classes[dotted(node.func)])
    for kw in node.keywords:
        if kw.arg:
            v = evaluate(kw.value, names, None, env)
            if v is not MISSING:
                out[kw.arg] = v
    return out


def module_values(tree: ast.Module, names: dict[str, Any], env: Mapping[str, str] | None,
                   classes: Mapping[str, dict[str, Any]] | None = None) -> dict[str, tuple[Any, int]]:
    """Top-level `NAME = expr` values that fold to plain data, in order (name -> (value, line)); an
    instance of a dataclass the module defines or imports is its field values."""
    out: dict[str, tuple[Any, int]] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        else:
            continue
        v = _instance(value, classes or {}, names, env)
        if v is MISSING:
            v = evaluate(value, names, None, env)
        if v is MISSING or not _jsonish(v):
            continue
        for t in targets:
            if isinstance(t, ast.Name):
                names[t.id] = v
                out[t.id] = (v, stmt.lineno)
    return out


def load_py_config(repo: Path, rel: str, *, env: Mapping[str, str] | None = None, _depth: int = 0
                   ) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """(nested values, top-level name -> file that set it last, files used base first) of a Python config."""
    text = read_text(repo, rel)
    if text is None or _depth > MAX_BASES:
        return {}, {}, []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return {}, {}, []
    classes = {**_imported_dataclasses(repo, rel, tree), **dataclass_defaults(tree)}
    values = module_values(tree, {}, env, classes)
    merged: dict[str, Any] = {}
    origin: dict[str, str] = {}
    files: list[str] = []
    base = values.pop("_base_", (None, 0))[0]
    refs = [base] if isinstance(base, str) else [b for b in base if isinstance(b, str)] if isinstance(base, list) else []
    refs += _read_base_imports(tree)
    for ref in refs:
        target = _normpath((Path(rel).parent / ref).as_posix())
        if target and target != rel:
            bvals, borigin, bfiles = load_py_config(repo, target, env=env, _depth=_depth + 1)
            merged = merge(merged, bvals)
            origin.update(borigin)
            files += bfiles
    own = {k: v for k, (v, _) in values.items() if not k.startswith("__")}
    merged = merge(merged, own)
    origin.update({k: rel for k in own})
    files.append(rel)
    return merged, origin, files


def _read_base_imports(tree: ast.Module) -> list[str]:
    """mmengine's new-style bases: `with read_base(): from .._base_.models.x import *` -> ['../_base_/models/x.py']."""
    refs: list[str] = []
    for st in tree.body:
        if not isinstance(st, ast.With) or not any(
                isinstance(i.context_expr, ast.Call) and dotted(i.context_expr.func).endswith("read_base") for i in st.items):
            continue
        for imp in st.body:
            if isinstance(imp, ast.ImportFrom) and imp.level and imp.module:
                up = "../" * (imp.level - 1)
                refs.append(f"{up}{imp.module.replace('.', '/')}.py")
    return refs


def _normpath(path: str) -> str | None:
    parts: list[str] = []
    for p in path.split("/"):
        if p in ("", "."):
            continue
        if p == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(p)
    return "/".join(parts)


# --------------------------------------------------------------------------------------- code facts


@dataclass(frozen=True)
class CodeFact:
    key: str  # dotted name as the code writes it (args.lr, ds_config.optimizer.params.lr)
    value: Any
    line: int
    snippet: str
    kind: str  # "derived" (computed from known values), "code" (a literal where training runs), "code_dict"


_LOOP_EPOCH = re.compile(r"epoch", re.I)
_LOOP_STEP = re.compile(r"step|iter|^it$|^i_iter$|update", re.I)
_CONFIG_NAME = re.compile(r"config|cfg|ds_|deepspeed|hparams|params", re.I)
# constructors whose literal keyword arguments are what training runs with
_RUNTIME_CALLS = re.compile(
    r"(?:^|\.)(?:Adam|AdamW|SGD|Adafactor|Lion|LAMB|Lamb|RMSprop|Adagrad|FusedAdam|DeepSpeedCPUAdam|AdamW8bit|"
    r"DataLoader|Trainer|TrainingArguments|Seq2SeqTrainingArguments|SFTConfig|DPOConfig|"
    r"OneCycleLR|get_scheduler|get_linear_schedule_with_warmup|get_cosine_schedule_with_warmup|"
    r"CosineAnnealingLR|train)$")


# a model's configuration built in code (`GPTConfig(n_layer=24, n_embd=1024)`): its dimensions replace the class
# defaults (only dimensions: a `LoraConfig(task_type=...)` states no training setting)
_MODEL_CONFIG_CALL = re.compile(r"(?:^|\.)[A-Z]\w*Config$")
_DIM_KEYS = frozenset({"n_layer", "num_layers", "num_hidden_layers", "n_layers", "n_embd", "n_embed", "hidden_size",
                       "d_model", "dim", "emb_dim", "embed_dim", "hidden_dim", "vocab_size", "padded_vocab_size",
                       "n_vocab"})


def _line(text_lines: list[str], lineno: int) -> str:
    return " ".join(text_lines[lineno - 1].split())[:200] if 0 < lineno <= len(text_lines) else ""


def _has_ref(node: ast.AST) -> bool:
    """Does the expression read a variable (so its value is derived, not a literal)? Function names
    (`int`, `os.environ.get`) do not count: `int(os.environ.get("STEPS", 100))` is a stated value."""
    funcs: set[int] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            funcs.update(id(x) for x in ast.walk(n.func))
    return any(isinstance(n, (ast.Name, ast.Attribute)) and id(n) not in funcs for n in ast.walk(node))


def _env_read(node: ast.AST) -> str | None:
    """The variable an expression reads from the environment (`int(os.getenv("BATCH", 16))`), if any."""
    if isinstance(node, ast.Call) and dotted(node.func) in _FUNCS and len(node.args) == 1:
        return _env_read(node.args[0])
    if isinstance(node, ast.Call) and dotted(node.func) in _ENV_GET and node.args \
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        return node.args[0].value
    if isinstance(node, ast.Subscript) and dotted(node.value) in ("os.environ", "environ") \
            and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    return None


def _derived_expr(node: ast.AST) -> bool:
    return isinstance(node, (ast.BinOp, ast.Call, ast.IfExp, ast.BoolOp)) and _has_ref(node)


def _guard_target(test: ast.AST) -> str | None:
    """`if X is None:` / `if not X:` -> 'X' (the body only runs when X is unset)."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is) \
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None:
        return dotted(test.left) or None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return dotted(test.operand) or None
    return None


def _flatten(prefix: str, value: dict[str, Any]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for k, v in value.items():
        key = f"{prefix}.{k}" if prefix else k
        if isinstance(v, dict):
            out += _flatten(key, v)
        else:
            out.append((key, v))
    return out


def code_facts(body: list[ast.stmt], text: str, lookup: Lookup, *, names: Mapping[str, Any] | None = None,
               env: Mapping[str, str] | None = None, is_field: Callable[[str], bool] = lambda k: True) -> list[CodeFact]:
    """Facts training code decides itself, walking `body` in order with a local name table.

    `lookup(dotted)` resolves names the configuration states (MISSING if unknown); `is_field(leaf)`
    says whether a key name is one the extractor reads. Statements under `if X is None:` count only
    when X is unset; other branches are read in order (the last assignment wins, as in a straight run).
    """
    lines = text.splitlines()
    local: dict[str, Any] = dict(names or {})
    derived: set[str] = set()  # local names holding a value derived from others (`scaled = lr * batch / 512`)
    out: list[CodeFact] = []

    def resolve(key: str) -> Any:
        return lookup(key)

    def value_of(node: ast.AST) -> Any:
        return evaluate(node, local, resolve, env)

    def assign(target: ast.AST, node: ast.AST, lineno: int) -> None:
        key = dotted(target)
        if not key:
            return
        v = value_of(node)
        if v is MISSING:
            local[key] = MISSING  # set to something unknown here: the stated value no longer holds
            return
        local[key] = v
        # derived here, or copied from a name derived earlier (DeiT: `scaled = args.lr * ... / 512.0`,
        # then `args.lr = scaled`)
        from_derived = _derived_expr(node) or (isinstance(node, (ast.Name, ast.Attribute)) and dotted(node) in derived)
        if from_derived and _number(v):
            derived.add(key)
        else:
            derived.discard(key)
        leaf = key.rsplit(".", 1)[-1]
        var = _env_read(node)
        if var is not None and is_field(leaf) and (_number(v) or isinstance(v, str)):
            # `lr = float(os.environ.get("LR", "3e-4"))`: the launcher's value, else the default written here
            kind = "env" if env is not None and var in env else "code"
            out.append(CodeFact(key, v, lineno, _line(lines, lineno), kind))
        elif isinstance(v, dict) and (_CONFIG_NAME.search(key) or any(is_field(k.rsplit(".", 1)[-1]) for k, _ in
                                                                      _flatten("", v))):
            for k, x in _flatten(key, v):
                if is_field(k.rsplit(".", 1)[-1]) and _jsonish(x):
                    out.append(CodeFact(k, x, lineno, _line(lines, lineno), "code_dict"))
        elif _number(v) and is_field(leaf) and from_derived:
            out.append(CodeFact(key, v, lineno, _line(lines, lineno), "derived"))

    in_loop = [0]  # depth of training loops around the statement being read

    def visit(stmts: list[ast.stmt]) -> None:
        for st in stmts:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(st, ast.Assign):
                for t in st.targets:
                    assign(t, st.value, st.lineno)
            elif isinstance(st, ast.AnnAssign) and st.value is not None:
                assign(st.target, st.value, st.lineno)
            elif isinstance(st, ast.AugAssign):
                key = dotted(st.target)
                if key and in_loop[0]:
                    local[key] = MISSING  # `lr /= 4.0` inside the loop: a schedule step, not the stated start
                elif key:
                    assign(st.target, ast.BinOp(left=st.target, op=st.op, right=st.value), st.lineno)
            elif isinstance(st, ast.If):
                guard = _guard_target(st.test)
                if guard is not None:
                    cur = local.get(guard, MISSING)
                    if cur is MISSING:
                        cur = resolve(guard)
                    if cur is None or cur is MISSING or cur == "" or cur == 0:
                        visit(st.body)
                    else:
                        visit(st.orelse)
                    continue
                test = value_of(st.test)
                if test is not MISSING:
                    visit(st.body if test else st.orelse)
                else:
                    visit(st.body)
                    visit(st.orelse)
            elif isinstance(st, (ast.For, ast.AsyncFor, ast.While)):
                if not isinstance(st, ast.While):
                    loop_range(st)
                in_loop[0] += 1
                visit(st.body)
                in_loop[0] -= 1
            elif isinstance(st, (ast.With, ast.AsyncWith)):
                visit(st.body)
            elif isinstance(st, ast.Try):
                visit(st.body)
            if not isinstance(st, (ast.If,)):
                calls(st)

    def loop_range(st: ast.For | ast.AsyncFor) -> None:
        var = dotted(st.target) if isinstance(st.target, ast.Name) else ""
        it = st.iter
        if not (isinstance(it, ast.Call) and dotted(it.func) == "range" and it.args) or not var:
            return
        bound = it.args[1] if len(it.args) >= 2 else it.args[0]
        start = value_of(it.args[0]) if len(it.args) >= 2 else 0
        stop = value_of(bound)
        if len(it.args) >= 2 and isinstance(bound, ast.BinOp) and isinstance(bound.op, ast.Add) \
                and dotted(bound.left) and dotted(bound.left) == dotted(it.args[0]):
            start, stop = 0, value_of(bound.right)  # range(start_epoch, start_epoch + 200): 200 whatever the start
            bound = bound.right
        if not _number(start):
            start = 0  # resumed from an unknown point: the bound is the length as written
        if not _number(stop):
            return
        v = stop - start  # range(1, epochs + 1) runs `epochs` times
        if v <= 0:
            return
        if _config_read(bound):
            return  # a bound read straight from the configuration (or off by one: `max_iters + 1`) adds nothing
        key = "epochs" if _LOOP_EPOCH.search(var) else "max_steps" if _LOOP_STEP.search(var) else None
        if key:
            kind = "derived" if _derived_expr(bound) else "code"
            out.append(CodeFact(key, int(v), st.lineno, _line(lines, st.lineno), kind))

    def _config_read(node: ast.AST) -> bool:
        if isinstance(node, (ast.Name, ast.Attribute)):
            return dotted(node) not in local
        return (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub))
                and isinstance(node.right, ast.Constant) and node.right.value == 1 and _config_read(node.left))

    def calls(st: ast.stmt) -> None:
        nodes = [st.value] if isinstance(st, (ast.Assign, ast.Expr, ast.AnnAssign, ast.Return)) and st.value else []
        for root in nodes:
            for node in ast.walk(root):
                if not isinstance(node, ast.Call):
                    continue
                dataset_call(node)
                model_config = _MODEL_CONFIG_CALL.search(dotted(node.func) or "-") is not None
                if not _RUNTIME_CALLS.search(dotted(node.func) or "-") and not model_config:
                    continue
                for kw in node.keywords:
                    if not kw.arg or not is_field(kw.arg) or (model_config and kw.arg.lower() not in _DIM_KEYS):
                        continue
                    if isinstance(kw.value, (ast.Name, ast.Attribute)) and dotted(kw.value) not in local:
                        continue  # read straight from the configuration: nothing new
                    v = value_of(kw.value)
                    if _number(v) or (isinstance(v, str) and v):
                        kind = "derived" if _derived_expr(kw.value) else "code"
                        out.append(CodeFact(kw.arg, v, node.lineno, _line(lines, node.lineno), kind))

    def dataset_call(node: ast.Call) -> None:
        """`load_dataset("tatsu-lab/alpaca")`, `datasets.CIFAR10(...)`, `ImageFolder("/data/imagenet/train")`."""
        fn = dotted(node.func)
        leaf = fn.rsplit(".", 1)[-1]
        split = next((evaluate(kw.value, local, resolve, env) for kw in node.keywords if kw.arg == "split"), None)
        if isinstance(split, str) and re.search(r"val|test|eval", split):
            return
        if (leaf == "load_dataset" or fn in ("tfds.load", "tfds.builder", "tensorflow_datasets.load")) and node.args:
            v = value_of(node.args[0])
            if isinstance(v, str) and v and v not in ("json", "csv", "text", "parquet", "imagefolder", "arrow"):
                out.append(CodeFact("dataset", v, node.lineno, _line(lines, node.lineno), "code"))
            elif isinstance(v, str):  # load_dataset("json", data_files="alpaca_data.json")
                files = next((value_of(kw.value) for kw in node.keywords if kw.arg == "data_files"), MISSING)
                if isinstance(files, str) and files:
                    out.append(CodeFact("data_files", files, node.lineno, _line(lines, node.lineno), "code"))
        elif re.match(r"(?:torchvision\.)?datasets\.[A-Z]", fn) and leaf not in ("ImageFolder", "DatasetFolder"):
            out.append(CodeFact("dataset", leaf, node.lineno, _line(lines, node.lineno), "code"))
        elif leaf in ("ImageFolder", "DatasetFolder") and node.args:
            v = value_of(node.args[0])
            if isinstance(v, str) and v:
                out.append(CodeFact("data_root", v, node.lineno, _line(lines, node.lineno), "code"))

    visit(body)
    return out


def _call_values(node: ast.Call, names: Mapping[str, Any], classes: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """`TrainConfig(lr=3e-4, model=ModelConfig(n_layer=12))` -> its dataclass defaults (where the class is a
    dataclass of the module) updated with the keywords that fold, nested calls as nested dicts."""
    out: dict[str, Any] = dict(classes.get(dotted(node.func).rsplit(".", 1)[-1], {}))
    for kw in node.keywords:
        if not kw.arg:
            continue
        if isinstance(kw.value, ast.Call) and kw.value.keywords:
            out[kw.arg] = _call_values(kw.value, names, classes)
            continue
        v = evaluate(kw.value, names)
        if v is not MISSING and _jsonish(v):
            out[kw.arg] = v
    return out


def registry_entry(tree: ast.Module, name: str) -> tuple[str, dict[str, Any], int] | None:
    """A named configuration in a module-level registry, selected by `--config NAME`:
    `CONFIGS = {"gpt2-small": TrainConfig(lr=6e-4, ...)}` or a list of `TrainConfig(name="pi0_aloha", ...)`
    (openpi's `_CONFIGS`); (registry, values, line), the values over the class's dataclass defaults."""
    names: dict[str, Any] = {}
    for stmt in tree.body:  # plain constants the entries may use
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            v = evaluate(stmt.value, names)
            if v is not MISSING and _jsonish(v):
                names[stmt.targets[0].id] = v
    classes = dataclass_defaults(tree)
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            target, value = stmt.targets[0].id, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            target, value = stmt.target.id, stmt.value
        else:
            continue
        if isinstance(value, ast.Dict):
            for k, v in zip(value.keys, value.values):
                if isinstance(k, ast.Constant) and k.value == name and isinstance(v, ast.Call):
                    return target, _call_values(v, names, classes), v.lineno
        elif isinstance(value, (ast.List, ast.Tuple)):
            for v in value.elts:
                if isinstance(v, ast.Call) and any(kw.arg == "name" and isinstance(kw.value, ast.Constant)
                                                   and kw.value.value == name for kw in v.keywords):
                    return target, _call_values(v, names, classes), v.lineno
    return None
