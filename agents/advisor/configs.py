"""Configuration files as the training code would see them: YAML/JSON with base files, and Hydra.

* `load_config_chain(repo, rel)`: a YAML/JSON file merged over its bases (`base:`, `_base_`,
  `__base__`, `defaults: [file, ...]`), later files winning, with the file each leaf came from;
* `compose_hydra(repo, config_dir, config_name, overrides)`: Hydra's composition, as far as
  training repositories use it: the primary config's `defaults` list (`group: option`,
  `_self_`), `+experiment=name` files with `# @package _global_` and `override /group: option`,
  command-line group selections (`model=vit`) and value overrides (`trainer.max_steps=1000`,
  `+x=1`, `++x=1`).

Leaves are returned flat as dotted keys -> (value, file, line text). Nothing is executed;
interpolations (`${...}`) stay as strings.
"""

from __future__ import annotations

import ast
import json
import os
import re
import tomllib
from pathlib import Path
from typing import Any

import yaml

from schedmate.agents.advisor import budget

__all__ = ["Leaf", "compose_hydra", "flatten", "load_config_chain", "load_gin", "load_structured", "parse_gin",
           "parse_override_value"]

Leaf = tuple[Any, str, str]  # value, file, snippet
BASE_KEYS = ("base", "_base_", "_BASE_", "__base__", "base_config", "inherit", "extends")
MAX_CHAIN = 8


def load_structured(repo: Path, rel: str) -> Any:
    """Parsed YAML/JSON/TOML (None when missing, outside the repository or unparsable)."""
    p = repo / rel
    try:
        real = p.resolve(strict=True)
        if not real.is_relative_to(repo.resolve()) or not real.is_file() or not budget.admit(real, real.stat().st_size):
            return None
        text = real.read_text(encoding="utf-8", errors="replace")
    except (OSError, RuntimeError):
        return None
    try:
        if rel.endswith(".json"):
            return json.loads(text)
        if rel.endswith(".toml"):  # torchtitan-style `[training]` tables
            return tomllib.loads(text)
        return yaml.safe_load(text)
    except (yaml.YAMLError, json.JSONDecodeError, tomllib.TOMLDecodeError, ValueError):
        return None


def _snippet(repo: Path, rel: str, key: str, value: Any) -> str:
    leaf = key.rsplit(".", 1)[-1]
    for line in (budget.read_capped(repo / rel) or "").splitlines():
        s = line.strip()
        if s.startswith((f"{leaf}:", f'"{leaf}":', f"'{leaf}':")):
            return s[:200]
    return f"{leaf}: {value}"


def flatten(data: Any, rel: str, repo: Path | None = None, prefix: str = "") -> dict[str, Leaf]:
    out: dict[str, Leaf] = {}
    if isinstance(data, dict):
        for k, v in data.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            if isinstance(v, dict) and v:
                out.update(flatten(v, rel, repo, key))
            else:
                out[key] = (v, rel, _snippet(repo, rel, key, v) if repo else f"{k}: {v}")
    return out


def _resolve_ref(repo: Path, current: str, ref: str) -> str | None:
    ref = ref.strip()
    cands = [ref, str(Path(current).parent / ref)]
    if not ref.endswith((".yaml", ".yml", ".json")):
        cands += [c + ext for c in list(cands) for ext in (".yaml", ".yml")]
    for c in cands:
        c = str(Path(c)).lstrip("./") if not c.startswith("../") else c
        try:
            real = (repo / c).resolve(strict=True)
        except (OSError, RuntimeError):
            continue
        if real.is_file() and real.is_relative_to(repo.resolve()):
            return real.relative_to(repo.resolve()).as_posix()
    return None


def load_config_chain(repo: Path, rel: str, _depth: int = 0) -> tuple[dict[str, Leaf], list[str]]:
    """Flat leaves of `rel` merged over its base files; and the files used (base first)."""
    data = load_structured(repo, rel)
    if not isinstance(data, dict) or _depth > MAX_CHAIN:
        return {}, []
    merged: dict[str, Leaf] = {}
    files: list[str] = []
    refs: list[str] = []
    for key in BASE_KEYS:
        val = data.get(key)
        if isinstance(val, str):
            refs.append(val)
        elif isinstance(val, list):
            refs += [v for v in val if isinstance(v, str)]
    defaults = data.get("defaults")
    if isinstance(defaults, list) and all(isinstance(v, str) for v in defaults):
        refs += [v for v in defaults if v != "_self_"]
    for ref in refs:
        target = _resolve_ref(repo, rel, ref)
        if target and target != rel:
            leaves, used = load_config_chain(repo, target, _depth + 1)
            merged.update(leaves)
            files += used
    own = {k: v for k, v in data.items() if k not in BASE_KEYS and not (k == "defaults" and refs)}
    merged.update(flatten(own, rel, repo))
    files.append(rel)
    return merged, files


def parse_override_value(raw: str) -> Any:
    try:
        return yaml.safe_load(raw) if raw != "" else ""
    except yaml.YAMLError:
        return raw


def _package_global(repo: Path, rel: str) -> bool:
    try:
        with open(repo / rel, "rb") as fh:
            head = fh.read(400).decode("utf-8", errors="replace")
    except OSError:
        return False
    return "@package _global_" in head


def _group_file(repo: Path, cdir: str, group: str, option: str) -> str | None:
    for ext in (".yaml", ".yml"):
        rel = f"{cdir}/{group}/{option}{ext}" if cdir else f"{group}/{option}{ext}"
        if (repo / rel).is_file():
            return rel
    return None


def _group_name(key: str) -> str:
    """'override /model' / 'optional model' -> 'model' (a package suffix '@x' is kept)."""
    key = key.strip()
    for word in ("override ", "optional "):
        key = key.removeprefix(word).strip()
    return key.lstrip("/")


def _group_chain(repo: Path, cdir: str, group: str, rel: str, depth: int = 0) -> list[str]:
    """A group option file after the same-group files its own `defaults` list names (base first)."""
    data = load_structured(repo, rel)
    chain: list[str] = []
    if isinstance(data, dict) and depth < MAX_CHAIN:
        for item in data.get("defaults") or []:
            if isinstance(item, str) and item != "_self_":
                base = _group_file(repo, cdir, group, item)
                if base and base != rel:
                    chain += _group_chain(repo, cdir, group, base, depth + 1)
    return [*chain, rel]


def compose_hydra(
    repo: Path, config_dir: str, config_name: str, overrides: list[str], _depth: int = 0
) -> tuple[dict[str, Leaf], list[str], dict[str, Leaf]]:
    """(flat composed config, files used, CLI value overrides applied) for a Hydra app. A plain name in
    the defaults list (`- base`) is another primary config of the same folder, composed in its place."""
    cdir = config_dir.strip("./") if config_dir not in (".", "./") else ""
    primary = f"{cdir}/{config_name}" if cdir else config_name
    if not primary.endswith((".yaml", ".yml")):
        primary += ".yaml"
    data = load_structured(repo, primary)
    if not isinstance(data, dict):
        return {}, [], {}
    selections: dict[str, str | None] = {}
    packages: dict[str, str] = {}  # group -> package, for `group@package: option`
    order: list[str] = []
    for item in data.get("defaults") or []:
        if isinstance(item, str):
            order.append(item)  # "_self_" or a plain config name
        elif isinstance(item, dict) and len(item) == 1:
            (g, opt), = item.items()
            g, _, pkg = _group_name(str(g)).partition("@")
            if pkg:
                packages[g] = pkg
            if g.startswith("hydra/") or g == "hydra":
                continue  # launcher / logging settings, not the job's configuration
            selections[g] = None if opt is None else str(opt)
            order.append(f"group:{g}")
    if "_self_" not in order:
        order.append("_self_")
    experiments: list[str] = []
    value_overrides: list[tuple[str, str]] = []
    for ov in overrides:
        if "=" not in ov or ov.startswith("-"):
            continue
        key, raw = ov.split("=", 1)
        plain = key.lstrip("+~")
        if "/" not in plain and "." not in plain and (repo / (f"{cdir}/{plain}" if cdir else plain)).is_dir():
            if plain == "experiment" or key.startswith("+") and plain not in selections:
                experiments.append(f"{plain}/{raw}")
            else:
                selections[plain] = raw
                if f"group:{plain}" not in order:
                    order.insert(order.index("_self_"), f"group:{plain}")
            continue
        value_overrides.append((plain, raw))
    # experiment files may re-select groups
    exp_files: list[str] = []
    for exp in experiments:
        group, option = exp.split("/", 1)
        rel = _group_file(repo, cdir, group, option)
        if rel is None:
            continue
        exp_files.append(rel)
        edata = load_structured(repo, rel)
        if isinstance(edata, dict):
            for item in edata.get("defaults") or []:
                if isinstance(item, dict) and len(item) == 1:
                    (g, opt), = item.items()
                    g = _group_name(str(g))
                    selections[g] = None if opt is None else str(opt)
    merged: dict[str, Leaf] = {}
    files: list[str] = []
    for entry in order:
        if entry == "_self_":
            own = {k: v for k, v in data.items() if k != "defaults"}
            merged.update(flatten(own, primary, repo))
            files.append(primary)
            continue
        if not entry.startswith("group:"):
            if _depth < MAX_CHAIN and entry.removesuffix(".yaml") != config_name.removesuffix(".yaml"):
                bmerged, bfiles, _ = compose_hydra(repo, config_dir, entry.removesuffix(".yaml"), [], _depth + 1)
                merged.update(bmerged)
                files += bfiles
            continue
        g = entry[len("group:"):]
        opt = selections.get(g)
        if not opt:
            continue
        rel = _group_file(repo, cdir, g, opt)
        if rel is None:
            continue
        prefix = "" if _package_global(repo, rel) else packages.get(g, g.replace("/", "."))
        for part in _group_chain(repo, cdir, g, rel):
            gdata = load_structured(repo, part)
            if not isinstance(gdata, dict):
                continue
            gdata = {k: v for k, v in gdata.items() if k != "defaults"}
            merged.update(flatten(gdata, part, repo, prefix))
            files.append(part)
    for rel in exp_files:
        edata = load_structured(repo, rel)
        if isinstance(edata, dict):
            edata = {k: v for k, v in edata.items() if k != "defaults"}
            prefix = "" if _package_global(repo, rel) else rel.split("/")[-2]
            merged.update(flatten(edata, rel, repo, prefix))
            files.append(rel)
    cli: dict[str, Leaf] = {}
    for key, raw in value_overrides:
        leaf = (parse_override_value(raw), "<command>", f"{key}={raw}")
        cli[key] = leaf
    return merged, files, cli


# ------------------------------------------------------------------------------------------------ gin

_GIN_BINDING = re.compile(r"^\s*([A-Za-z_][\w./]*)\s*=\s*(.+?)\s*$")
_GIN_INCLUDE = re.compile(r"""^\s*include\s+['"]([^'"]+)['"]""")


def _gin_value(raw: str, macros: dict[str, Any]) -> Any:
    """A gin literal (Python syntax), a `%MACRO` reference, or a `@configurable` reference kept as its name."""
    raw = raw.strip()
    if raw.startswith("%"):
        return macros.get(raw[1:], raw)
    if raw.startswith("@"):
        return raw[1:].removesuffix("()").rsplit("/", 1)[-1]
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        return raw


def _gin_logical_lines(text: str) -> list[str]:
    """Bindings with their continuation lines joined (a list or dict over several lines), comments dropped."""
    out: list[str] = []
    depth = 0
    for line in text.splitlines():
        code = re.sub(r"\s+#.*$|^\s*#.*$", "", line)
        if not code.strip():
            continue
        if depth > 0 and out:
            out[-1] += " " + code.strip()
        else:
            out.append(code)
        depth = max(0, depth + sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}"))
    return out


def parse_gin(text: str, rel: str, macros: dict[str, Any] | None = None) -> dict[str, Leaf]:
    """Gin bindings (`train.batch_size = 64`, `scope/Model.num_layers = 12`, macros `STEPS = 10_000` and
    `%STEPS`) as dotted keys; `include`/`import` lines are not followed here (see `load_gin`)."""
    macros = macros if macros is not None else {}
    out: dict[str, Leaf] = {}
    for line in _gin_logical_lines(text):
        if _GIN_INCLUDE.match(line) or re.match(r"^\s*(?:import|from)\s", line):
            continue
        m = _GIN_BINDING.match(line)
        if m is None:
            continue
        key, raw = m.group(1), m.group(2)
        value = _gin_value(raw, macros)
        if "." not in key and "/" not in key:  # a macro
            macros[key] = value
        out[key.replace("/", ".")] = (value, rel, line.strip()[:200])
    return out


def load_gin(repo: Path, rel: str, macros: dict[str, Any] | None = None, _depth: int = 0) -> tuple[dict[str, Leaf], list[str]]:
    """A gin file with the files it `include`s first (later bindings win), and the files read."""
    macros = macros if macros is not None else {}
    text = budget.read_capped(repo / rel)
    if text is None:
        return {}, []
    merged: dict[str, Leaf] = {}
    files: list[str] = []
    if _depth < MAX_CHAIN:
        for line in text.splitlines():
            m = _GIN_INCLUDE.match(line)
            if m:
                target = next((c for c in (m.group(1), str(Path(rel).parent / m.group(1)))
                               if (repo / c).is_file()), None)
                if target is not None:
                    sub, used = load_gin(repo, os.path.normpath(target), macros, _depth + 1)
                    merged.update(sub)
                    files += used
    merged.update(parse_gin(text, rel, macros))
    return merged, [*files, rel]
