"""What the training code and the repository state beyond argparse and config files.

* `code_facts(closure, parsed, facts, launch)`: values the code derives or hard-codes where training
  runs (`pyconfig.code_facts`) and the class a script builds its model from;
* `attribute_defaults(tree, text)`: yacs-style `_C.TRAIN.EPOCHS = 300` defaults;
* `find_config_file(repo, value)`: the file a `--config` value names, searched in the repository
  when a project CLI gives it without its folder;
* `CONFIGURATOR`: nanoGPT's `exec(open('configurator.py').read())`, which makes a script's globals
  its configuration.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path
from typing import Any

from schedmate.agents.advisor import pyconfig as pyc
from schedmate.agents.advisor import pysource as pys
from schedmate.agents.advisor.facts import UNRESOLVED, Fact, effective
from schedmate.agents.advisor.knowledge import FIELD_KEYS
from schedmate.agents.advisor.launch import Launch
from schedmate.agents.advisor.names import find_known_model
from schedmate.agents.advisor.tools import NOISE_DIRS, SKIP_DIRS

__all__ = ["CONFIGURATOR", "CONFIG_EXT", "attribute_defaults", "code_facts", "find_config_file", "flat_items",
           "loader_without_workers"]


CONFIG_EXT = (".yaml", ".yml", ".json", ".toml")
CONFIGURATOR = re.compile(r"exec\(\s*open\(")
_YACS_KEY = re.compile(r"^[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)+$")
_DEFAULTS_ROOT = re.compile(r"^_?_?C$|^cfg$|^config$|^defaults?$|^_CN$")


def attribute_defaults(tree: Any, text: str) -> dict[str, tuple[Any, str]]:
    """yacs-style defaults at module level: `_C.TRAIN.EPOCHS = 300` -> {'TRAIN.EPOCHS': (300, line)}."""
    out: dict[str, tuple[Any, str]] = {}
    lines = text.splitlines()
    stmts = [(st, False) for st in tree.body]
    for fn in tree.body:  # a project's `get_cfg()` that sets `cfg.DATALOADER.NUM_WORKERS = 6` on the library's
        if isinstance(fn, ast.FunctionDef):  # defaults: yacs-style upper-case keys only
            stmts += [(st, True) for st in fn.body]
    for st, in_function in stmts:
        if not isinstance(st, ast.Assign) or len(st.targets) != 1 or not isinstance(st.targets[0], ast.Attribute):
            continue
        key = pyc.dotted(st.targets[0])
        root, _, rest = key.partition(".")
        if not rest or not _DEFAULTS_ROOT.match(root) or (in_function and not _YACS_KEY.match(rest)):
            continue
        value = pyc.evaluate(st.value, {})
        if value is not pyc.MISSING and isinstance(value, (int, float, str, list, tuple)) and value != "":
            out[rest] = (value, " ".join(lines[st.lineno - 1].split())[:200])
    return out
_ALL_KEYS = {k for group in FIELD_KEYS.values() for k in group}
_LENGTH_KEYS = {k for g in ("steps", "epochs") for k in FIELD_KEYS[g]}
_SCHEDULER = re.compile(r"sched|_schedule_with_warmup|LR\(|OneCycle", re.I)
_DERIVABLE = {k for g in ("learning_rate", "steps", "epochs") for k in FIELD_KEYS[g]}


def flat_items(values: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for k, v in values.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, dict) and v:
            out += flat_items(v, key)
        else:
            out.append((key, v))
    return out


def find_config_file(repo: Path, value: str, limit: int = 4000) -> str | None:
    """The repository file a `--config` value names: a path, a path without its extension, or (for
    project CLIs such as `tune run ... --config llama3/8B_lora`) a file whose path ends with it."""
    value = value.strip().removeprefix("./")
    if value.startswith("/") or (value.startswith("$") and "/" in value):
        # /workspace/proj/configs/x.yaml, $ROOT/configs/x.yaml: the longest tail that is a repository file
        parts = [p for p in value.split("/") if p and p not in (".", "..")]
        return next(("/".join(parts[i:]) for i in range(1, len(parts)) if (repo / "/".join(parts[i:])).is_file()),
                    None)
    if not value or value.startswith("..") or UNRESOLVED.search(value):
        return None
    exts = ("", ".yaml", ".yml", ".json", ".toml", ".py") if not value.endswith((*CONFIG_EXT, ".py")) else ("",)
    for ext in exts:
        if (repo / f"{value}{ext}").is_file():
            return f"{value}{ext}"
    if re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", value):  # an importable module: `--config configs.base`
        rel = value.replace(".", "/") + ".py"
        if (repo / rel).is_file():
            return rel
    wanted = {f"{value}{ext}" for ext in exts if (ext or value.endswith((*CONFIG_EXT, ".py")))}
    seen = 0
    for root, dirs, names in os.walk(repo):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and d not in NOISE_DIRS and not d.startswith("."))
        rel_root = Path(root).relative_to(repo).as_posix()
        for name in sorted(names):
            seen += 1
            rel = name if rel_root == "." else f"{rel_root}/{name}"
            if any(rel.endswith("/" + w) for w in wanted):
                return rel
        if seen > limit:
            break
    return None


_WORLD = re.compile(r"^(?:world_size|num_gpus|n_gpus?|ngpus?|num_processes|nproc(?:s|_per_node)?|gpus)$")


def _lookup_from(facts: list[Fact], world_size: int | None = None):
    """Resolve a dotted name the code reads (`args.lr`, `cfg.train.batch_size`, `learning_rate`) to the
    value the configuration states for it: the longest matching key suffix, else the leaf. The number of
    processes (`world_size`, `dist.get_world_size()`) is the job's GPU count when the scheduler gives it."""
    eff = effective(facts)
    by_key = {k.lower(): f.value for k, f in eff.items()}
    by_leaf: dict[str, Fact] = {}
    for f in eff.values():
        cur = by_leaf.get(f.leaf)
        if cur is None or f.rank > cur.rank:
            by_leaf[f.leaf] = f

    def lookup(name: str) -> Any:
        parts = name.lower().split(".")
        for i in range(len(parts)):
            suffix = ".".join(parts[i:])
            if suffix in by_key:
                return by_key[suffix]
        leaf = parts[-1]
        if leaf in by_leaf and not (world_size and _WORLD.match(leaf) and by_leaf[leaf].rank < 5):
            return by_leaf[leaf].value
        if world_size and (_WORLD.match(leaf) or leaf == pyc.WORLD_SIZE):
            return world_size
        return pyc.MISSING

    return lookup


_NOT_A_MODEL_CALL = re.compile(
    r"(?:^|\.)(?:from_pretrained|from_config|DistributedDataParallel|DDP|DataParallel|FSDP|FullyShardedDataParallel|"
    r"compile|to|cuda|half|float|prepare|get_peft_model|prepare_model_for_kbit_training|load_state_dict|eval|train|"
    r"initialize|wrap|build|create|get|load)$")


def _model_class_facts(body: list[ast.stmt], text: str, rel: str) -> list[Fact]:
    """`model = GPT(config)` / `net = torchvision.models.resnet50()`: the class a script builds its model
    from, as a weak (lowest code rank) model-name candidate for repositories that name it nowhere else."""
    out: list[Fact] = []
    lines = text.splitlines()
    for st in ast.walk(ast.Module(body=body, type_ignores=[])):
        if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.value, ast.Call)):
            continue
        target = pyc.dotted(st.targets[0]).rsplit(".", 1)[-1].lower()
        fn = pyc.dotted(st.value.func)
        if target not in ("model", "net", "network", "backbone") or not fn or _NOT_A_MODEL_CALL.search(fn):
            continue
        leaf = fn.rsplit(".", 1)[-1]
        if leaf[:1].isupper() or find_known_model(leaf):
            out.append(Fact("model_class", leaf, rel, " ".join(lines[st.lineno - 1].split())[:200], "call_kwarg"))
    return out


def code_facts(closure: list[str], parsed: dict[str, tuple[Any, str]], facts: list[Fact], launch: Launch, *,
               world_size: int | None = None) -> list[Fact]:
    """Facts the training code decides itself (`pyconfig.code_facts`), over the entry's top level and the
    functions that run in the entry and the modules it imports."""
    lookup = _lookup_from(facts, world_size)
    env = dict(launch.env)
    if world_size and launch.launcher in ("torchrun", "deepspeed", "accelerate"):
        env.setdefault("WORLD_SIZE", str(world_size))  # what the launcher exports
    out: list[Fact] = []

    def is_field(k: str) -> bool:
        return k.lower().replace("-", "_") in _ALL_KEYS

    called_anywhere: set[str] = set()  # a module's function runs when any file of the program calls it
    for rel in closure:
        res = parsed.get(rel)
        if res is not None:
            called_anywhere |= {n.func.id if isinstance(n.func, ast.Name) else n.func.attr for n in ast.walk(res[0])
                                if isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute))}
    for rel in closure:
        res = parsed.get(rel)
        if res is None:
            continue
        tree, text = res
        called = called_anywhere
        helpers = pyc.constant_returns(tree)
        consts = {k: v.value for k, v in pys.module_constants(tree, text, launch.env).items()}

        def resolve(name: str, consts: dict[str, Any] = consts) -> Any:
            v = lookup(name)  # the configuration's winning value first (a CLI beats a module default)
            return consts.get(name, pyc.MISSING) if v is pyc.MISSING else v

        bodies: list[list[ast.stmt]] = []
        if rel == launch.entry:  # a script's top level runs; a config module's top level only states values
            top = [st for st in tree.body if not isinstance(
                st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom))]
            configurator = CONFIGURATOR.search(text)
            if configurator:  # nanoGPT: globals set before `exec(open('configurator.py')...)` are defaults the
                # config file and `--key=value` replace; read them through the configuration, not as code
                exec_line = text.count("\n", 0, configurator.start()) + 1
                top = [st for st in top if not (isinstance(st, (ast.Assign, ast.AnnAssign)) and st.lineno < exec_line)]
            bodies.append(top)
        for st in tree.body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)) and (st.name in called or st.name in (
                    "main", "train", "run", "fit")):
                bodies.append(st.body)
            elif isinstance(st, ast.ClassDef):
                bodies += [m.body for m in st.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for body in bodies:
            out += _model_class_facts(body, text, rel)
            for cf in pyc.code_facts(body, text, resolve, names=helpers, env=env, is_field=is_field):
                leaf = cf.key.rsplit(".", 1)[-1].lower()
                if cf.kind == "derived" and leaf not in _DERIVABLE:
                    continue  # a batch size or worker count recomputed in code is not what the config states
                if leaf in _LENGTH_KEYS and _SCHEDULER.search(cf.snippet):
                    continue  # get_scheduler(num_training_steps=max_train_steps * num_processes): a schedule length
                if re.search(r"(^|[._])(val|valid|eval|test)", cf.key.lower()) or re.search(
                        r"\b(?:val|valid|eval|test)\w*\s*=", cf.snippet):
                    continue
                out.append(Fact(cf.key, cf.value, rel, cf.snippet, cf.kind))
    return out


_EVAL_NAME = re.compile(r"val|eval|test", re.I)


def loader_without_workers(tree: Any, text: str) -> str | None:
    """The line of a training `DataLoader(...)` built without `num_workers` (PyTorch's default: 0), if any."""
    lines = text.splitlines()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Call):
            continue
        call = node.value
        if pyc.dotted(call.func).rsplit(".", 1)[-1] != "DataLoader" or any(
                kw.arg in (None, "num_workers") for kw in call.keywords):
            continue
        target = " ".join(pyc.dotted(t) for t in node.targets)
        first_arg = pyc.dotted(call.args[0]) if call.args else ""
        if _EVAL_NAME.search(target) or _EVAL_NAME.search(first_arg):
            continue
        return " ".join(lines[node.lineno - 1].split())[:200]
    return None


def _is_configurable(dec: ast.expr) -> bool:
    target = dec.func if isinstance(dec, ast.Call) else dec
    name = ast.unparse(target)
    return name in ("gin.configurable", "configurable", "gin.register") or name.endswith(".gin.configurable")


def configurable_defaults(tree: Any, text: str) -> dict[str, tuple[Any, str]]:
    """Keyword defaults of `@gin.configurable` functions and classes (`def train(batch_size=32)` ->
    `train.batch_size`: 32; a class's `__init__`), the values gin uses where no file binds them; a
    `@gin.configurable('name')` registers under that name."""
    out: dict[str, tuple[Any, str]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            continue
        decs = [d for d in node.decorator_list if _is_configurable(d)]
        if not decs:
            continue
        name = node.name
        dec = decs[0]
        if isinstance(dec, ast.Call) and dec.args and isinstance(dec.args[0], ast.Constant) and isinstance(
                dec.args[0].value, str):
            name = dec.args[0].value
        fn = node if isinstance(node, ast.FunctionDef) else next(
            (b for b in node.body if isinstance(b, ast.FunctionDef) and b.name == "__init__"), None)
        if fn is None:
            continue
        args = fn.args
        pos = args.posonlyargs + args.args
        pairs = list(zip(pos[len(pos) - len(args.defaults):], args.defaults)) + [
            (a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
        for arg, default in pairs:
            try:
                value = ast.literal_eval(default)
            except (ValueError, SyntaxError, TypeError):
                continue
            if value is None:
                continue
            out[f"{name}.{arg.arg}"] = (value, f"def {name}(... {arg.arg}={ast.unparse(default)})"[:200])
    return out
