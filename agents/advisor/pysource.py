"""Static reading of Python training code (AST only, nothing imported or executed).

* `local_imports(repo, rel)`: the repository modules a file imports (transitively, bounded);
* `argparse_specs(tree)`: every `add_argument(...)` (option strings, dest, default, action) plus
  `set_defaults(...)`;
* `dataclass_fields(tree)`: defaults of `@dataclass` fields (HfArgumentParser argument classes)
  and whether a class extends `transformers.TrainingArguments`;
* `module_constants(tree, env)`: module-level `NAME = literal` and `NAME = int(os.environ.get(
  "NAME", default))` (the environment value wins when the launcher sets it);
* `call_literals(tree)`: literal keyword arguments of calls that run (module level, or functions
  the module calls: an unused legacy helper does not count) and string arguments of model loaders
  (`from_pretrained("...")`, `create_model("...")`, `YOLO("...")`);
* `hydra_main(tree)`: `@hydra.main(config_path=..., config_name=...)`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schedmate.agents.advisor import budget

__all__ = [
    "ArgSpec", "Literal_", "argparse_specs", "call_literals", "dataclass_fields", "hydra_main", "literal",
    "local_imports", "module_constants", "parse_file",
]

_MISSING = object()
_EVAL_TARGET = re.compile(r"(?:^|[._])(?:val|valid|eval|test)", re.I)
MAX_IMPORTED_FILES = 40
MODEL_LOADERS = ("from_pretrained", "create_model", "YOLO", "load_model", "build_model", "get_model",
                 "create_model_and_transforms", "RTDETR", "timm_model")


@dataclass(frozen=True)
class Literal_:
    value: Any
    line: int
    snippet: str
    env_var: str | None = None  # set when the value is an os.environ default


@dataclass(frozen=True)
class ArgSpec:
    options: tuple[str, ...]
    dest: str
    default: Any
    has_default: bool
    action: str | None
    type_name: str | None
    line: int
    snippet: str
    env_var: str | None = None  # the default reads this variable, which the launcher sets


def parse_file(path: Path, cache: dict[Path, tuple[ast.Module, str] | None] | None = None) -> tuple[ast.Module, str] | None:
    if cache is not None and path in cache:
        return cache[path]
    text = budget.read_capped(path)  # over the advisor's budget: None, and the skip is noted
    try:
        out: tuple[ast.Module, str] | None = (ast.parse(text), text) if text is not None else None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        out = None
    if cache is not None:
        cache[path] = out
    return out


def literal(node: ast.AST | None, names: dict[str, Any] | None = None, env: dict[str, str] | None = None) -> Any:
    """The value of a literal expression; names resolve through `names`; `os.environ.get(K, d)`
    / `os.getenv` through `env`; `int(...)`/`float(...)`/`str(...)` casts applied. Else _MISSING."""
    if node is None:
        return _MISSING
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if isinstance(node, ast.Name) and names is not None and node.id in names:
        return names[node.id]
    if isinstance(node, ast.Attribute) and names is not None:
        dotted = _dotted(node)
        if dotted in names:
            return names[dotted]
    if isinstance(node, ast.Call):
        fn = _dotted(node.func)
        if fn in ("int", "float", "str", "bool") and len(node.args) == 1:
            inner = literal(node.args[0], names, env)
            if inner is _MISSING or inner is None:
                return inner
            try:
                if fn == "bool" and isinstance(inner, str):
                    return inner.strip().lower() in ("1", "true", "yes", "y")
                convert: dict[str, Callable[[Any], Any]] = {"int": lambda v: int(float(v)), "float": float, "str": str,
                                                            "bool": bool}
                return convert[fn](inner)
            except (ValueError, TypeError):
                return _MISSING
        if fn in ("os.environ.get", "os.getenv", "environ.get", "getenv") and node.args:
            key = literal(node.args[0])
            default = literal(node.args[1], names, env) if len(node.args) > 1 else None
            if isinstance(key, str) and env is not None and key in env:
                return env[key]
            return default
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = literal(node.operand, names, env)
        if isinstance(inner, (int, float)) and not isinstance(inner, bool):
            return -inner
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add, ast.Sub, ast.Pow)):
        a, b = literal(node.left, names, env), literal(node.right, names, env)
        if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b)):
            try:
                op = {ast.Mult: lambda x, y: x * y, ast.Add: lambda x, y: x + y,
                      ast.Sub: lambda x, y: x - y, ast.Pow: lambda x, y: x ** y}[type(node.op)]
                return op(a, b)
            except (OverflowError, ValueError):
                return _MISSING
    return _MISSING


def env_var_of(node: ast.AST | None) -> str | None:
    """`K` when `node` reads `os.environ.get("K", ...)` (possibly inside a cast)."""
    if isinstance(node, ast.Call):
        fn = _dotted(node.func)
        if fn in ("int", "float", "str", "bool") and len(node.args) == 1:
            return env_var_of(node.args[0])
        if fn in ("os.environ.get", "os.getenv", "environ.get", "getenv") and node.args:
            key = literal(node.args[0])
            return key if isinstance(key, str) else None
    if isinstance(node, ast.Subscript) and _dotted(node.value) in ("os.environ", "environ"):
        key = literal(node.slice)
        return key if isinstance(key, str) else None
    return None


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    return ""


_LINES_CACHE: dict[int, tuple[str, list[str]]] = {}


def _segment(text: str, node: ast.AST) -> str:
    """Source text of `node`, whitespace collapsed (line list cached per text)."""
    cached = _LINES_CACHE.get(id(text))
    if cached is None or cached[0] is not text:
        if len(_LINES_CACHE) > 64:
            _LINES_CACHE.clear()
        cached = (text, text.splitlines())
        _LINES_CACHE[id(text)] = cached
    lines = cached[1]
    try:
        l0, l1 = node.lineno - 1, (node.end_lineno or node.lineno) - 1  # type: ignore[attr-defined]  # any ast node; one without a position raises (caught)
        c0, c1 = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]  # as above
    except AttributeError:
        return ""
    if l0 == l1:
        seg = lines[l0][c0:c1]
    else:
        seg = "\n".join([lines[l0][c0:], *lines[l0 + 1 : l1], lines[l1][:c1]])
    return " ".join(seg.split())[:300]


# ----------------------------------------------------------------------------------------- imports


def _module_file(repo: Path, base: Path, dotted: str, roots: tuple[Path, ...] = ()) -> Path | None:
    rel = dotted.replace(".", "/")
    for root in (base, repo, *roots):
        for cand in (root / f"{rel}.py", root / rel / "__init__.py"):
            if cand.is_file():
                try:
                    real = cand.resolve(strict=True)
                except OSError:
                    continue
                if real.is_relative_to(repo.resolve()):
                    return real
    return None


def imported_files(repo: Path, path: Path, tree: ast.Module, roots: tuple[Path, ...] = ()) -> list[Path]:
    """Repository files imported by one module (direct imports only)."""
    base = path.parent
    found: list[Path] = []
    for node in ast.walk(tree):
        mods: list[str] = []
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level and node.level > 0:
                prefix_dir = path.parent
                for _ in range(node.level - 1):
                    prefix_dir = prefix_dir.parent
                mod = node.module or ""
                cands = [mod] if mod else []
                cands += [f"{mod}.{a.name}" if mod else a.name for a in node.names]
                for m in cands:
                    f = _module_file(repo, prefix_dir, m)
                    if f is not None:
                        found.append(f)
                continue
            mod = node.module or ""
            mods = [mod] + [f"{mod}.{a.name}" for a in node.names]
        for m in mods:
            parts = m.split(".")
            for i in range(len(parts), 0, -1):  # package __init__ files on the way count too
                f = _module_file(repo, base, ".".join(parts[:i]), roots)
                if f is not None:
                    found.append(f)
    return list(dict.fromkeys(found))


def local_imports(repo: Path, rel: str, limit: int = MAX_IMPORTED_FILES,
                  cache: dict[Path, tuple[ast.Module, str] | None] | None = None,
                  python_path: str | None = None) -> list[str]:
    """`rel` and the repository modules it imports, transitively (breadth first, bounded); `python_path`
    (the launcher's PYTHONPATH, e.g. `$PWD/src`) adds import roots inside the repository."""
    repo_real = repo.resolve()
    roots: tuple[Path, ...] = ()
    for part in (python_path or "").split(":"):
        part = re.sub(r"^\$\{?(?:PWD|HOME_DIR|ROOT)\}?/?|^\./", "", part.strip())
        if part and not part.startswith(("$", "/", "..")) and (repo / part).is_dir():
            roots += ((repo / part).resolve(),)
    start = (repo / rel).resolve()
    order: list[Path] = [start]
    seen = {start}
    i = 0
    while i < len(order) and len(order) < limit:
        parsed = parse_file(order[i], cache)
        i += 1
        if parsed is None:
            continue
        for f in imported_files(repo, order[i - 1], parsed[0], roots):
            if f not in seen:
                seen.add(f)
                order.append(f)
    return [p.relative_to(repo_real).as_posix() for p in order if p.is_file()]


# ----------------------------------------------------------------------------------------- argparse


def argparse_specs(tree: ast.Module, text: str, names: dict[str, Any] | None = None,
                   env: dict[str, str] | None = None) -> tuple[list[ArgSpec], dict[str, Literal_]]:
    """Options of `add_argument(...)` / absl `DEFINE_*` calls; a default read from the environment
    (`default=int(os.environ.get("EPOCHS", 3))`) takes the launcher's value when it exports one."""
    specs: list[ArgSpec] = _fire_specs(tree, text, names, env)
    set_defaults: dict[str, Literal_] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        if node.func.attr == "set_defaults":
            for kw in node.keywords:
                if kw.arg:
                    v = literal(kw.value, names)
                    if v is not _MISSING:
                        set_defaults[kw.arg] = Literal_(v, node.lineno, _segment(text, node))
            continue
        if node.func.attr.startswith("DEFINE_"):
            spec = _absl_spec(node, text, names)
            if spec is not None:
                specs.append(spec)
            continue
        is_click = node.func.attr == "option" and _dotted(node.func) in ("click.option", "option")
        if node.func.attr != "add_argument" and not is_click:
            continue
        options = tuple(a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str))
        if is_click:  # @click.option("--lr", "-l", "learning_rate", ...): a bare name is the parameter
            options = tuple(o.split("/")[0] for o in options if o.startswith("-")) or options
        if not options:
            continue
        kws = {kw.arg: kw.value for kw in node.keywords if kw.arg}
        action = literal(kws.get("action"))
        action = action if isinstance(action, str) else None
        if is_click and literal(kws.get("is_flag")) is True:
            action = "store_true"
        dest = literal(kws.get("dest"))
        if not isinstance(dest, str):
            longs = [o for o in options if o.startswith("--")]
            dest = (longs[0] if longs else options[0]).lstrip("-").replace("-", "_")
        has_default = "default" in kws
        default = literal(kws.get("default"), names, env) if has_default else None
        var = env_var_of(kws.get("default"))
        if default is _MISSING:
            default, has_default = None, False
        if not has_default and action in ("store_true", "store_false"):
            default, has_default = action == "store_false", True
        type_node = kws.get("type")
        type_name = _dotted(type_node) if type_node is not None else None
        specs.append(ArgSpec(options, dest, default, has_default, action, type_name, node.lineno, _segment(text, node),
                             env_var=var if var and env and var in env else None))
    return specs, set_defaults


def _fire_specs(tree: ast.Module, text: str, names: dict[str, Any] | None, env: dict[str, str] | None) -> list[ArgSpec]:
    """python-fire / typer: `fire.Fire(train)` or `typer.run(train)` turns the parameters of `train` into
    `--name` options with their defaults (`typer.Option(3e-4)` unwrapped)."""
    functions = {st.name: st for st in tree.body if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef))}
    out: list[ArgSpec] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _dotted(node.func) in ("fire.Fire", "Fire", "typer.run") and node.args
                and isinstance(node.args[0], ast.Name) and node.args[0].id in functions):
            continue
        fn = functions[node.args[0].id].args
        params = fn.args + fn.kwonlyargs
        defaults = [None] * (len(fn.args) - len(fn.defaults)) + list(fn.defaults) + list(fn.kw_defaults)
        for p, d in zip(params, defaults, strict=False):
            if isinstance(d, ast.Call) and _dotted(d.func) in ("typer.Option", "Option", "typer.Argument"):
                d = d.args[0] if d.args else next((kw.value for kw in d.keywords if kw.arg == "default"), None)
            value = literal(d, names, env) if d is not None else _MISSING
            var = env_var_of(d)
            ann = _dotted(p.annotation) if p.annotation is not None else None
            out.append(ArgSpec((f"--{p.arg}", f"--{p.arg.replace('_', '-')}"), p.arg,
                               None if value is _MISSING else value, value is not _MISSING, None, ann,
                               p.lineno, _segment(text, p) if d is None else f"{p.arg}={_segment(text, d)}",
                               env_var=var if var and env and var in env else None))
    return out


_ABSL_TYPES = {"integer": "int", "float": "float", "string": "str", "bool": "bool", "boolean": "bool",
               "enum": "str"}


def _absl_spec(node: ast.Call, text: str, names: dict[str, Any] | None) -> ArgSpec | None:
    """absl `flags.DEFINE_integer("batch_size", 128, "help")` as an option `--batch_size` with its default
    (ml_collections' `DEFINE_config_file("config", ...)` is an option without a default)."""
    assert isinstance(node.func, ast.Attribute)
    kind = node.func.attr.removeprefix("DEFINE_")
    kws = {kw.arg: kw.value for kw in node.keywords if kw.arg}
    name_node = node.args[0] if node.args else kws.get("name")
    name = literal(name_node)
    if not isinstance(name, str) or not name:
        return None
    default_node = node.args[1] if len(node.args) > 1 else kws.get("default")
    default = literal(default_node, names) if default_node is not None and not kind.startswith("config") else _MISSING
    has_default = default is not _MISSING
    type_name = _ABSL_TYPES.get(kind)
    return ArgSpec((f"--{name}",), name, default if has_default else None, has_default,
                   None, type_name, node.lineno, _segment(text, node))


# ----------------------------------------------------------------------------------------- dataclasses


def dataclass_fields(tree: ast.Module, text: str) -> tuple[dict[str, Literal_], bool, bool]:
    """(field -> default, extends TrainingArguments, uses HfArgumentParser)."""
    fields: dict[str, Literal_] = {}
    hf_training = False
    uses_hf_parser = "HfArgumentParser" in text
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        if not any(_dotted(d.func if isinstance(d, ast.Call) else d).split(".")[-1] == "dataclass"
                   for d in node.decorator_list):
            continue
        bases = [_dotted(b) for b in node.bases]
        if any(b.split(".")[-1] in ("TrainingArguments", "Seq2SeqTrainingArguments") for b in bases):
            hf_training = True
        for stmt in node.body:
            if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name) or stmt.value is None:
                continue
            value: Any = _MISSING
            if isinstance(stmt.value, ast.Call) and _dotted(stmt.value.func).split(".")[-1] == "field":
                for kw in stmt.value.keywords:
                    if kw.arg == "default":
                        value = literal(kw.value)
            else:
                value = literal(stmt.value)
            if value is not _MISSING:
                fields[stmt.target.id] = Literal_(value, stmt.lineno, _segment(text, stmt))
    return fields, hf_training, uses_hf_parser


# ----------------------------------------------------------------------------------------- constants


def module_constants(tree: ast.Module, text: str, env: dict[str, str]) -> dict[str, Literal_]:
    out: dict[str, Literal_] = {}
    names: dict[str, Any] = {}
    for stmt in tree.body:
        targets: list[ast.expr] = []
        value_node: ast.AST | None = None
        if isinstance(stmt, ast.Assign):
            targets, value_node = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value_node = [stmt.target], stmt.value
        for t in targets:
            if not isinstance(t, ast.Name):
                continue
            value = literal(value_node, names, env)
            if value is _MISSING or isinstance(value, (dict, set)):
                continue
            var = env_var_of(value_node)
            names[t.id] = value
            out[t.id] = Literal_(value, stmt.lineno, _segment(text, stmt), env_var=var if var and var in env else None)
    return out


# ----------------------------------------------------------------------------------------- calls


def _called_names(tree: ast.Module) -> set[str]:
    called: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            called.add(_dotted(node.func).split(".")[-1])
        elif isinstance(node, ast.Name):
            called.add(node.id)  # passed as a callback
    return called


def call_literals(tree: ast.Module, text: str, names: dict[str, Any] | None = None) -> tuple[dict[str, Literal_], list[Literal_]]:
    """(keyword -> literal, model-loader string arguments) in code that runs."""
    called = _called_names(tree)
    live: list[ast.AST] = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if stmt.name in called or stmt.name == "main":
                live.append(stmt)
        elif isinstance(stmt, ast.ClassDef):
            live.append(stmt)
        else:
            live.append(stmt)
    kwargs: dict[str, Literal_] = {}
    loaders: list[Literal_] = []
    evaluation = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
                  and any(_EVAL_TARGET.search(_dotted(t)) for t in n.targets)}  # val_loader = DataLoader(...)
    for root in live:
        for node in ast.walk(root):
            if not isinstance(node, ast.Call) or id(node) in evaluation:
                continue
            fn = _dotted(node.func).split(".")[-1]
            for kw in node.keywords:
                if not kw.arg:
                    continue
                v = literal(kw.value, names)
                if v is not _MISSING and isinstance(v, (int, float, str)) and not isinstance(v, bool):
                    kwargs.setdefault(kw.arg, Literal_(v, node.lineno, f"{kw.arg}={_segment(text, kw.value)}"))
            if fn in MODEL_LOADERS and node.args:
                v = literal(node.args[0], names)
                if isinstance(v, str):
                    loaders.append(Literal_(v, node.lineno, _segment(text, node)))
    return kwargs, loaders


def hydra_main(tree: ast.Module) -> tuple[str | None, str | None] | None:
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for dec in node.decorator_list:
            if isinstance(dec, ast.Call) and _dotted(dec.func).endswith(("hydra.main", "hydra_runner")):  # NeMo's wrapper
                kws = {kw.arg: literal(kw.value) for kw in dec.keywords if kw.arg}
                path = kws.get("config_path")
                name = kws.get("config_name")
                return (path if isinstance(path, str) else None, name if isinstance(name, str) else None)
    return None
