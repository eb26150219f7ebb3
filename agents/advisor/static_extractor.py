"""Static Metadata Extractor: the workload fingerprint read from code and configs, no LLM.

This is the honest baseline and the agent's fallback. It resolves the *effective* configuration
the way the training program would at launch time, then maps configuration keys to
`WorkloadMetadata` fields:

1. the launch command is followed to the entry point (`launch.parse_launch`: shell scripts,
   sbatch files, torchrun / deepspeed / accelerate / python -m / yolo);
2. the entry script and the repository modules it imports are parsed (`pysource`): argparse
   definitions, HfArgumentParser dataclasses (+ `transformers.TrainingArguments` library
   defaults), constants modules (with `os.environ` overrides the launcher exports), literal
   keyword arguments of calls that run, and `@hydra.main`;
3. configuration files are composed (`configs`): YAML/JSON passed on the command line with their
   base files and `--opts a.b=c` overrides, or Hydra's defaults list, experiments and overrides;
4. every value becomes a `Fact` with a precedence (command line > exported environment >
   config files > constants > argparse/dataclass defaults > literal call arguments > library
   defaults > README prose) and the winning fact per configuration key is kept;
5. fields are chosen from those keys by name (`knowledge.FIELD_KEYS`), highest precedence first,
   then the most specific key name; names are normalised with the corpus schema's normalisers
   (`meta-llama/Meta-Llama-3-8B` -> `llama-3-8b`, `/datasets/imagenet` -> `imagenet-1k`);
6. what configs never state is inferred and marked so: the task (weighted cues in code,
   docstrings and README), iteration type (a positive step budget wins over epochs, as in HF
   Trainer, Lightning and Megatron), model size (from the name, or a table of public sizes).

Every field carries its provenance (`FieldEvidence`: file, snippet, kind, key) and the
candidates it beat. Unknown stays None; nothing is invented.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from schedmate.agents.advisor import configs as cfgs
from schedmate.agents.advisor import pysource as pys
from schedmate.agents.advisor.knowledge import FIELD_KEYS, LIBRARY_DEFAULTS, MODEL_SIZES_B, TASK_CUES, size_from_name
from schedmate.agents.advisor.launch import Launch, parse_launch
from schedmate.agents.advisor.tools import NOISE_DIRS, SKIP_DIRS
from schedmate.workload import (
    DATASET_ALIASES, MODEL_ALIASES, WorkloadMetadata, normalize_dataset, normalize_model_name, normalize_task_type,
)

__all__ = [
    "FIELDS", "MANDATORY", "RANK", "Fact", "FieldEvidence", "StaticExtraction", "extract_static", "find_known_model",
    "known_dataset",
]

MANDATORY = ("model_name", "task_type", "dataset", "iterations", "iteration_type")
FIELDS = (*MANDATORY, "model_size_b", "batch_size", "learning_rate", "num_workers", "valid_dataset")
RANK = {
    "readme": 0, "library_default": 1, "call_kwarg": 2, "argparse_default": 3, "dataclass_default": 3,
    "constant": 4, "config": 5, "env": 6, "cli": 7,
}
_CONFIG_OPTS = {"config", "cfg", "config_file", "config_path", "conf", "c", "config_yaml", "yaml", "hparams",
                "args_file", "config_name_or_path"}
_OVERRIDE_OPTS = {"opts", "cfg_options", "override", "overrides", "set", "options", "opt"}
_KNOWN_MODELS = set(MODEL_ALIASES)
_KNOWN_DATASETS = set(DATASET_ALIASES)
_UNRESOLVED = re.compile(r"\$|\{\{|\$\{")


@dataclass(frozen=True)
class Fact:
    key: str  # dotted configuration key
    value: Any
    source: str  # repository file, '<command>', '<library default: ...>'
    snippet: str
    kind: str  # see RANK

    @property
    def rank(self) -> int:
        return RANK[self.kind]

    @property
    def leaf(self) -> str:
        return self.key.rsplit(".", 1)[-1].lower().replace("-", "_").lstrip("+~")


class FieldEvidence(BaseModel):
    """Where a field's value came from."""

    model_config = ConfigDict(extra="forbid")

    value: Any
    raw: Any = None
    key: str | None = None
    source: str
    kind: str
    snippet: str = ""
    beaten: list[str] = []  # other candidates: "value (kind, source)"


@dataclass
class StaticExtraction:
    fields: dict[str, Any]
    evidence: dict[str, FieldEvidence]
    launch: Launch
    files: list[str] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def missing(self) -> list[str]:
        return [f for f in MANDATORY if self.fields.get(f) is None]

    @property
    def metadata(self) -> WorkloadMetadata | None:
        """The fingerprint, or None when a mandatory field is unknown."""
        if self.missing:
            return None
        try:
            return WorkloadMetadata.model_validate({k: v for k, v in self.fields.items() if v is not None})
        except ValidationError:
            return None

    def as_dict(self) -> dict[str, Any]:
        return {"fields": self.fields, "evidence": {k: v.model_dump() for k, v in self.evidence.items()},
                "entry": self.launch.entry, "launcher": self.launch.launcher, "files": self.files,
                "missing": self.missing, "errors": self.errors}


# ----------------------------------------------------------------------------------------- names


def _windows(text: str, max_len: int = 4) -> list[str]:
    words = [w for w in re.split(r"[^A-Za-z0-9.]+", text) if w]
    out = []
    for i in range(len(words)):
        for j in range(i + 1, min(len(words), i + max_len) + 1):
            out.append("-".join(words[i:j]).strip("."))
    return out


def find_known_model(text: str) -> tuple[str, str] | None:
    """(canonical, as written) of the first well-known model named in `text`, longest match first."""
    best: tuple[int, str, str] | None = None
    for tok in re.findall(r"[A-Za-z0-9][A-Za-z0-9._/\-]*[A-Za-z0-9]", text) + [text]:
        cands = [tok, tok.rsplit("/", 1)[-1]]
        for c in cands:
            if normalize_model_name(c) in _KNOWN_MODELS:
                return normalize_model_name(c), c
    for w in _windows(text):
        canon = normalize_model_name(w)
        if canon in _KNOWN_MODELS and (best is None or len(w) > best[0]):
            best = (len(w), canon, w)
    return (best[1], best[2]) if best else None


def known_dataset(value: str) -> str | None:
    """Canonical dataset named by a value or any component of a path ('/datasets/imagenet/train')."""
    text = value.strip()
    if not text:
        return None
    cands = [text]
    parts = [p for p in re.split(r"[/\\]", text) if p]
    for p in reversed(parts):
        stem = re.sub(r"\.(json|jsonl|yaml|yml|csv|parquet|arrow|txt|tar|gz)$", "", p, flags=re.I)
        cands += [p, stem]
    for c in cands:
        canon = normalize_dataset(c)
        if canon in _KNOWN_DATASETS:
            return canon
    for c in cands[1:]:
        for w in _windows(c, 3):
            canon = normalize_dataset(w)
            if canon in _KNOWN_DATASETS:
                return canon
    return None


def _dataset_name(value: str) -> str:
    known = known_dataset(value)
    if known:
        return known
    parts = [p for p in re.split(r"[/\\]", value.strip()) if p and p not in (".", "..")]
    generic = {"train", "training", "data", "datasets", "dataset", "mnt", "home", "shards", "raw", "processed"}
    for p in reversed(parts):
        stem = re.sub(r"\.(json|jsonl|yaml|yml|csv|parquet|arrow|txt)$", "", p, flags=re.I)
        if stem.lower() not in generic:
            return normalize_dataset(stem)
    return normalize_dataset(value)


# ----------------------------------------------------------------------------------------- values


def parse_number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(float(value)) else None
    if isinstance(value, str):
        s = value.strip().lower().replace("_", "").replace(",", "")
        mult = 1.0
        if s.endswith("k") and s[:-1].replace(".", "", 1).isdigit():
            s, mult = s[:-1], 1000.0
        try:
            v = float(s) * mult
        except ValueError:
            return None
        return v if math.isfinite(v) else None
    return None


def _as_int(value: Any, minimum: int) -> int | None:
    v = parse_number(value)
    if v is None or v != int(v) or v < minimum:
        return None
    return int(v)


def _as_lr(value: Any) -> float | None:
    v = parse_number(value)
    return v if v is not None and 0 < v < 100 else None


def _as_str(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    s = value.strip()
    if not s or _UNRESOLVED.search(s) or s.lower() in ("none", "null", "auto", "???", ""):
        return None
    return s


# ----------------------------------------------------------------------------------------- CLI


def _parse_cli(args: list[str], specs: dict[str, pys.ArgSpec]) -> tuple[list[tuple[str, Any, str]], list[str], list[str]]:
    """(dest, value, snippet) options, `k=v` overrides, other positionals."""
    options: list[tuple[str, Any, str]] = []
    overrides: list[str] = []
    positionals: list[str] = []
    i = 0
    while i < len(args):
        tok = args[i]
        if tok.startswith("-") and not _is_number(tok) and len(tok) > 1:
            flag, _, inline = tok.partition("=")
            spec = specs.get(flag)
            dest = spec.dest if spec else flag.lstrip("-").replace("-", "_")
            if inline or "=" in tok:
                options.append((dest, inline, tok))
                i += 1
                continue
            if spec is not None and spec.action in ("store_true", "store_false", "store_const", "count"):
                options.append((dest, spec.action != "store_false", tok))
                i += 1
                continue
            values: list[str] = []
            j = i + 1
            while j < len(args) and (not args[j].startswith("-") or _is_number(args[j])):
                values.append(args[j])
                j += 1
                if dest not in _OVERRIDE_OPTS:
                    break
            if dest in _OVERRIDE_OPTS:
                overrides += [v for v in values if "=" in v]
                i = j
                continue
            if not values:
                options.append((dest, True, tok))
                i += 1
                continue
            options.append((dest, values[0], f"{tok} {values[0]}"))
            i = j
            continue
        if "=" in tok and not tok.startswith("="):
            overrides.append(tok)
        else:
            positionals.append(tok)
        i += 1
    return options, overrides, positionals


def _is_number(tok: str) -> bool:
    try:
        float(tok)
        return True
    except ValueError:
        return False


def _typed(spec: pys.ArgSpec | None, raw: Any) -> Any:
    if not isinstance(raw, str) or spec is None:
        return cfgs.parse_override_value(raw) if isinstance(raw, str) else raw
    try:
        if spec.type_name == "int":
            return int(float(raw))
        if spec.type_name == "float":
            return float(raw)
    except ValueError:
        return raw
    if spec.type_name == "str":
        return raw
    return cfgs.parse_override_value(raw)


# ----------------------------------------------------------------------------------------- extraction


def _repo_py_files(repo: Path, limit: int = 400) -> list[str]:
    out: list[str] = []
    for p in sorted(repo.rglob("*.py")):
        rel = p.relative_to(repo)
        if any(part in SKIP_DIRS or part in NOISE_DIRS for part in rel.parts[:-1]):
            continue
        out.append(rel.as_posix())
        if len(out) >= limit:
            break
    return out


def _readme(repo: Path) -> tuple[str, str] | None:
    for name in ("README.md", "README.rst", "README.txt", "README", "readme.md"):
        p = repo / name
        if p.is_file():
            try:
                return name, p.read_text(encoding="utf-8", errors="replace")[:20000]
            except OSError:
                return None
    return None


_README_HINTS = (
    ("batch_size", re.compile(r"batch[ _-]?size(?: of| =|:)?\s*(\d+)", re.I)),
    ("num_train_epochs", re.compile(r"\b(\d+)\s+epochs?\b", re.I)),
    ("max_steps", re.compile(r"\b(\d[\d,]*)\s+(?:training\s+)?(?:steps|iterations|iters)\b", re.I)),
    ("learning_rate", re.compile(r"\b(?:lr|learning rate)(?: of| =|:)?\s*([0-9.]+(?:e-?\d+)?)", re.I)),
)


def extract_static(repo: Path | str, command: str, *, gpus: int | None = None, nodes: int | None = None) -> StaticExtraction:
    """Read the workload fingerprint of the job launched by `command` in `repo`.

    Never raises on a strange repository: an internal failure yields an empty result whose
    `errors` say why (the advisor then falls back like for any unknown fingerprint).
    """
    try:
        return _extract_static(Path(repo), command)
    except Exception as exc:  # noqa: BLE001 -- the fallback path must not crash the scheduler
        return StaticExtraction(fields={f: None for f in FIELDS}, evidence={}, launch=Launch(command=command),
                                errors=[f"static extraction failed: {type(exc).__name__}: {exc}"[:300]])


def _extract_static(repo: Path, command: str) -> StaticExtraction:
    repo = repo.resolve()
    launch = parse_launch(command, repo)
    facts: list[Fact] = []
    errors: list[str] = []
    files: list[str] = []
    texts: dict[str, str] = {}
    src_cli = launch.args_source

    # -- code -----------------------------------------------------------------------------------
    closure: list[str] = []
    ast_cache: dict[Path, Any] = {}
    if launch.entry and (repo / launch.entry).is_file():
        closure = pys.local_imports(repo, launch.entry, cache=ast_cache)
    elif launch.entry:
        errors.append(f"entry {launch.entry} not found in the repository")
    specs: dict[str, pys.ArgSpec] = {}
    spec_src: dict[str, str] = {}
    hf_training = False
    uses_hf = False
    hydra: tuple[str | None, str | None] | None = None
    parsed: dict[str, tuple[Any, str]] = {}
    code_configs: list[str] = []

    def parse(rel: str) -> tuple[Any, str] | None:
        if rel not in parsed:
            res = pys.parse_file((repo / rel).resolve(), ast_cache)
            if res is None:
                return None
            parsed[rel] = res
        return parsed[rel]

    def add_specs(rel: str) -> None:
        res = parse(rel)
        if res is None:
            return
        tree, text = res
        consts = {k: v.value for k, v in pys.module_constants(tree, text, launch.env).items()}
        found, set_defaults = pys.argparse_specs(tree, text, consts)
        for sp in found:
            for opt in sp.options:
                specs.setdefault(opt, sp)
            spec_src.setdefault(sp.dest, rel)
            if sp.has_default and sp.default is not None:
                facts.append(Fact(sp.dest, sp.default, rel, sp.snippet, "argparse_default"))
        for k, lit in set_defaults.items():
            facts.append(Fact(k, lit.value, rel, lit.snippet, "argparse_default"))

    for rel in closure:
        res = parse(rel)
        if res is None:
            errors.append(f"cannot parse {rel}")
            continue
        files.append(rel)
        tree, text = res
        texts[rel] = text
        add_specs(rel)
        dfields, hf_t, hf_p = pys.dataclass_fields(tree, text)
        hf_training |= hf_t
        uses_hf |= hf_p
        for k, lit in dfields.items():
            if lit.value is not None:
                facts.append(Fact(k, lit.value, rel, lit.snippet, "dataclass_default"))
        for name, lit in pys.module_constants(tree, text, launch.env).items():
            if rel == launch.entry and not name.isupper():
                continue  # entry-script locals at module level are rarely configuration
            if lit.env_var:
                src = launch.env_source.get(lit.env_var, src_cli)
                facts.append(Fact(name.lower(), lit.value, src, f"{lit.env_var}={launch.env.get(lit.env_var)}", "env"))
            else:
                facts.append(Fact(name.lower(), lit.value, rel, lit.snippet, "constant"))
        if rel != launch.entry:
            continue
        hydra = pys.hydra_main(tree)
        consts = {k: v.value for k, v in pys.module_constants(tree, text, launch.env).items()}
        kwargs, loaders = pys.call_literals(tree, text, consts)
        for k, lit in kwargs.items():
            if (k.lower() in _CONFIG_OPTS and isinstance(lit.value, str) and lit.value.endswith((".yaml", ".yml"))
                    and (repo / lit.value).is_file()):
                code_configs.append(lit.value)  # model.train(cfg="cfg/train.yaml")
                continue
            facts.append(Fact(k, lit.value, rel, lit.snippet, "call_kwarg"))
        for lit in loaders:
            facts.append(Fact("model", lit.value, rel, lit.snippet, "call_kwarg"))
    if hf_training or (uses_hf and any("TrainingArguments" in t for t in texts.values())):
        for k, v in LIBRARY_DEFAULTS["transformers.TrainingArguments"].items():
            facts.append(Fact(k, v, "<library default: transformers.TrainingArguments>", f"{k}={v}", "library_default"))

    # -- command line -----------------------------------------------------------------------------
    options, overrides, positionals = _parse_cli(launch.args, specs)
    unknown = [d for d, _, snip in options if snip.split("=")[0].split(" ")[0] not in specs]
    if len(unknown) >= 2 and len(unknown) > len(options) / 2:
        # the parser lives in a module the entry does not import statically: find it by its flags
        flags = {snip.split("=")[0].split(" ")[0] for _, _, snip in options}
        scored = []
        for rel in _repo_py_files(repo):
            if rel in closure:
                continue
            res = parse(rel)
            if res is None or "add_argument" not in res[1]:
                continue
            defined = set(re.findall(r"""add_argument\(\s*["'](--?[\w-]+)""", res[1]))
            overlap = len(flags & defined)
            if overlap >= 2:
                scored.append((overlap, rel))
        for _, rel in sorted(scored, reverse=True)[:2]:
            files.append(rel)
            add_specs(rel)
        options, overrides, positionals = _parse_cli(launch.args, specs)

    config_files: list[str] = list(code_configs)
    for dest, raw, snippet in options:
        spec = specs.get(snippet.split("=")[0].split(" ")[0])
        value = _typed(spec, raw)
        if isinstance(raw, str) and raw.endswith((".yaml", ".yml", ".json")) and (
            dest.lower() in _CONFIG_OPTS or "config" in dest.lower()
        ) and (repo / raw).is_file():
            config_files.append(raw)
            continue
        facts.append(Fact(dest, value, src_cli, snippet, "cli"))
    for pos in positionals:
        if pos.endswith((".yaml", ".yml", ".json")) and (repo / pos).is_file():
            config_files.append(pos)

    if hydra is not None and launch.entry:
        cpath, cname = hydra
        base_dir = Path(launch.entry).parent
        cdir = ""
        for cand in (os.path.normpath(base_dir / (cpath or ".")), os.path.normpath(cpath or ".")):
            if not cand.startswith("..") and (repo / cand).is_dir():
                cdir = "" if cand == "." else cand
                break
        merged, used, cli = cfgs.compose_hydra(repo, cdir, cname or "config", overrides)
        files += used
        for key, (value, src, snip) in merged.items():
            facts.append(Fact(key, value, src, snip, "config"))
        for key, (value, _src, snip) in cli.items():
            facts.append(Fact(key, value, src_cli, snip, "cli"))
        overrides = []
    for rel in config_files:
        merged, used = cfgs.load_config_chain(repo, rel)
        files += used
        kind = "cli" if rel.endswith(".json") and uses_hf else "config"
        for key, (value, src, snip) in merged.items():
            facts.append(Fact(key, value, src, snip, kind))
    for ov in overrides:
        key, _, raw = ov.partition("=")
        key = key.lstrip("+~")
        if key and not key.startswith("$"):
            facts.append(Fact(key, cfgs.parse_override_value(raw), src_cli, ov, "cli"))

    # -- README prose (lowest precedence) -----------------------------------------------------------
    readme = _readme(repo)
    if readme is not None:
        name, text = readme
        texts[name] = text
        for key, rx in _README_HINTS:
            m = rx.search(text)
            if m:
                facts.append(Fact(key, m.group(1).replace(",", ""), name, m.group(0), "readme"))

    return _choose(repo, launch, facts, files, texts, errors)


# ----------------------------------------------------------------------------------------- choosing


def _effective(facts: list[Fact]) -> dict[str, Fact]:
    eff: dict[str, Fact] = {}
    for f in facts:  # later facts of equal precedence win (config chains are merged in order)
        cur = eff.get(f.key)
        if cur is None or f.rank >= cur.rank:
            eff[f.key] = f
    return eff


def _candidates(eff: dict[str, Fact], group: str) -> list[tuple[Fact, int]]:
    keys = FIELD_KEYS[group]
    out = []
    for f in eff.values():
        spec = keys.get(f.leaf)
        if spec is None:
            continue
        path = f.key.lower()
        if group != "valid_dataset" and re.search(r"(^|[._])(val|valid|validation|eval|test)([._]|$)", path):
            continue
        out.append((f, spec))
    return out


def _pick(cands: list[tuple[Fact, Any, int]], *, prefer_known: bool = False) -> tuple[Fact, Any] | None:
    """Highest (rank, known?, specificity); `cands` are (fact, converted value, specificity)."""
    if not cands:
        return None
    def score(c: tuple[Fact, Any, int]) -> tuple:
        fact, _, spec = c
        return (fact.rank, c[3] if len(c) > 3 else 0, spec) if not prefer_known else (c[3], fact.rank, spec)  # type: ignore[misc]
    best = max(cands, key=score)
    return best[0], best[1]


def _evidence(fact: Fact, value: Any, others: list[tuple[Fact, Any]], raw: Any = None) -> FieldEvidence:
    seen: set[str] = set()
    beaten = []
    for f, v in others:
        if f is fact or v == value or v == fact.value:
            continue
        item = f"{v!r} ({f.kind}, {f.source})"
        if item not in seen:
            seen.add(item)
            beaten.append(item)
    return FieldEvidence(value=value, raw=fact.value if raw is None else raw, key=fact.key, source=fact.source,
                         kind=fact.kind, snippet=fact.snippet, beaten=beaten)


def _choose(repo: Path, launch: Launch, facts: list[Fact], files: list[str], texts: dict[str, str],
            errors: list[str]) -> StaticExtraction:
    eff = _effective(facts)
    fields: dict[str, Any] = {f: None for f in FIELDS}

    def overridden(group: str) -> list[tuple[Fact, Any]]:
        """Facts of this field's keys that lost to a higher-precedence value of the same key."""
        keys = FIELD_KEYS[group]
        return [(f, f.value) for f in facts if f.leaf in keys and eff.get(f.key) is not f]
    evidence: dict[str, FieldEvidence] = {}

    def numeric(group: str, conv) -> list[tuple[Fact, Any, int]]:  # type: ignore[no-untyped-def]
        out = []
        for f, spec in _candidates(eff, group):
            v = conv(f.value)
            if v is not None:
                out.append((f, v, spec))
        return out

    for fld, group, conv in (("batch_size", "batch_size", lambda v: _as_int(v, 1)),
                             ("learning_rate", "learning_rate", _as_lr),
                             ("num_workers", "num_workers", lambda v: _as_int(v, 0))):
        cands = numeric(group, conv)
        best = _pick(cands)
        if best:
            fields[fld] = best[1]
            evidence[fld] = _evidence(best[0], best[1], [(c[0], c[1]) for c in cands] + overridden(group))

    # iterations: a positive step budget overrides epochs (HF Trainer / Lightning / Megatron semantics)
    steps = numeric("steps", lambda v: _as_int(v, 1))
    epochs = numeric("epochs", lambda v: _as_int(v, 1))
    best_s, best_e = _pick(steps), _pick(epochs)
    if best_s and (not best_e or best_s[0].rank >= best_e[0].rank - 2):
        fields["iterations"], fields["iteration_type"] = best_s[1], "steps"
        evidence["iterations"] = _evidence(best_s[0], best_s[1], [(c[0], c[1]) for c in steps + epochs])
    elif best_e:
        fields["iterations"], fields["iteration_type"] = best_e[1], "epochs"
        evidence["iterations"] = _evidence(best_e[0], best_e[1], [(c[0], c[1]) for c in steps + epochs])
    if "iterations" in evidence:
        ev = evidence["iterations"]
        evidence["iteration_type"] = FieldEvidence(value=fields["iteration_type"], raw=ev.key, key=ev.key,
                                                   source=ev.source, kind="derived", snippet=ev.snippet)

    # model name: config keys, then names mentioned in launch values / scripts / docs
    model_cands: list[tuple[Fact, Any, int, int]] = []
    for f, spec in _candidates(eff, "model_name"):
        s = _as_str(f.value)
        if s is None or s.lower() in ("true", "false"):
            continue
        known = find_known_model(s)
        canon = known[0] if known else normalize_model_name(s)
        model_cands.append((f, canon, spec, 1 if known else 0))
    best_m = max(model_cands, key=lambda c: (c[0].rank, c[3], c[2])) if model_cands else None
    if best_m is not None and best_m[3] == 0:
        better = [c for c in model_cands if c[3] == 1 and c[0].rank >= best_m[0].rank - 2]
        if better:
            best_m = max(better, key=lambda c: (c[0].rank, c[2]))
    if best_m is not None and (best_m[3] == 1 or not _hint_model(eff, launch, texts)):
        fields["model_name"] = best_m[1]
        evidence["model_name"] = _evidence(best_m[0], best_m[1], [(c[0], c[1]) for c in model_cands])
    else:
        hint = _hint_model(eff, launch, texts)
        if hint is not None:
            canon, raw, src, kind = hint
            fields["model_name"] = canon
            evidence["model_name"] = FieldEvidence(value=canon, raw=raw, source=src, kind=kind, snippet=raw)
        elif best_m is not None:
            fields["model_name"] = best_m[1]
            evidence["model_name"] = _evidence(best_m[0], best_m[1], [(c[0], c[1]) for c in model_cands])

    # dataset
    for fld, group in (("dataset", "dataset"), ("valid_dataset", "valid_dataset")):
        ds_cands: list[tuple[Fact, Any, int, int]] = []
        for f, spec in _candidates(eff, group):
            s = _as_str(f.value)
            if s is None:
                continue
            known = known_dataset(s)
            ds_cands.append((f, known or _dataset_name(s), spec, 1 if known else 0))
        if ds_cands:
            best_d = max(ds_cands, key=lambda c: (c[3], c[0].rank, c[2]))
            fields[fld] = best_d[1]
            evidence[fld] = _evidence(best_d[0], best_d[1], [(c[0], c[1]) for c in ds_cands])
    if fields["dataset"] is None:
        for src, text in list(launch.texts.items()) + list(texts.items()):
            for tok in re.findall(r"[A-Za-z0-9_./-]{3,}", text):
                known = known_dataset(tok) if "/" in tok else None
                if known:
                    fields["dataset"] = known
                    evidence["dataset"] = FieldEvidence(value=known, raw=tok, source=src, kind="mention", snippet=tok)
                    break
            if fields["dataset"]:
                break

    # task type: an explicit setting naming a known task, else cues in code and docs
    explicit = [(f, s) for f, s in _candidates(eff, "task_type") if _as_str(f.value) and f.rank >= RANK["argparse_default"]]
    known_tasks = [(f, s) for f, s in explicit if normalize_task_type(str(f.value)) in TASK_CUES]
    if known_tasks:
        f, _ = max(known_tasks, key=lambda c: (c[0].rank, c[1]))
        fields["task_type"] = normalize_task_type(str(f.value))
        evidence["task_type"] = _evidence(f, fields["task_type"], [])
    else:
        hints = " ".join(str(f.value) for f, _ in explicit)
        task, why = _infer_task(launch, texts, fields, hints)
        if task:
            fields["task_type"] = task
            evidence["task_type"] = FieldEvidence(value=task, source=why[0], kind="inferred", snippet=why[1])

    # model size: explicit, else from the name, else the public size of a well-known model
    size_facts = [(f, s) for f, s in _candidates(eff, "model_size")]
    for f, _ in sorted(size_facts, key=lambda c: (c[0].rank, c[1]), reverse=True):
        try:
            from schedmate.workload import parse_model_size_b

            v = parse_model_size_b(f.value)
        except ValueError:
            v = None
        if v:
            fields["model_size_b"] = v
            evidence["model_size_b"] = _evidence(f, v, [])
            break
    if fields["model_size_b"] is None and fields["model_name"]:
        canon = fields["model_name"]
        raw = str(evidence["model_name"].raw) if "model_name" in evidence else canon
        if canon in MODEL_SIZES_B:
            fields["model_size_b"] = MODEL_SIZES_B[canon]
            evidence["model_size_b"] = FieldEvidence(value=MODEL_SIZES_B[canon], raw=canon, source="<public model size>",
                                                     kind="derived", snippet=f"{canon}: {MODEL_SIZES_B[canon]}B")
        elif size_from_name(raw) is not None:
            fields["model_size_b"] = size_from_name(raw)
            evidence["model_size_b"] = FieldEvidence(value=fields["model_size_b"], raw=raw, source="<model name>",
                                                     kind="derived", snippet=raw)
    return StaticExtraction(fields=fields, evidence=evidence, launch=launch, files=list(dict.fromkeys(files)),
                            facts=facts, errors=errors)


def _hint_model(eff: dict[str, Fact], launch: Launch, texts: dict[str, str]) -> tuple[str, str, str, str] | None:
    """A well-known model named in launch values, launch scripts, the entry's docs or the README."""
    ordered = sorted((f for f in eff.values() if isinstance(f.value, str)), key=lambda f: -f.rank)
    for f in ordered:
        if f.kind in ("cli", "env", "config", "constant"):
            hit = find_known_model(f.value)
            if hit:
                return hit[0], hit[1], f.source, f"name:{f.kind}"
    for name, value in launch.shell_vars.items():
        hit = find_known_model(value)
        if hit:
            return hit[0], hit[1], launch.args_source, "name:shell"
    for src, text in launch.texts.items():
        hit = find_known_model(" ".join(re.findall(r"#\s*(.*)", text)) + " " + src)
        if hit:
            return hit[0], hit[1], src, "name:comment"
    if launch.entry and launch.entry in texts:
        doc = re.match(r'\s*(?:"""|\'\'\')(.*?)(?:"""|\'\'\')', texts[launch.entry], re.S)
        if doc:
            hit = find_known_model(doc.group(1))
            if hit:
                return hit[0], hit[1], launch.entry, "name:docstring"
    return None


def _infer_task(launch: Launch, texts: dict[str, str], fields: dict[str, Any],
                hints: str = "") -> tuple[str | None, tuple[str, str]]:
    scores: dict[str, float] = {}
    why: dict[str, tuple[float, str, str]] = {}
    sources: list[tuple[str, str, float]] = []
    if launch.entry and launch.entry in texts:
        sources.append((launch.entry, texts[launch.entry], 1.0))
    for src, text in texts.items():
        if src != launch.entry and src.lower().startswith("readme"):
            intro = "\n".join(text.split("\n## ")[:1])  # title and summary, not stale notes
            sources.append((src, intro, 1.0))
        elif src != launch.entry:
            sources.append((src, text, 0.3))
    for src, text in launch.texts.items():
        sources.append((src, text, 0.5))
    extra = " ".join(str(v) for v in (fields.get("model_name"), fields.get("dataset")) if v)
    sources.append(("<fields>", extra, 1.0))
    if hints:
        sources.append(("<task setting>", hints, 1.0))
    for task, cues in TASK_CUES.items():
        for rx, weight in cues:
            for src, text, w in sources:
                m = re.search(rx, text, re.I)
                if m:
                    gain = weight * w
                    scores[task] = scores.get(task, 0.0) + gain
                    if gain > why.get(task, (0.0, "", ""))[0]:
                        why[task] = (gain, src, m.group(0))
    if not scores:
        return None, ("", "")
    task = max(scores, key=lambda t: scores[t])
    return task, (why[task][1], f"{why[task][2]} (score {scores[task]:.1f})")
