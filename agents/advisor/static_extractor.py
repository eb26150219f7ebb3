"""Static Metadata Extractor: the workload fingerprint read from code and configs, no LLM.

This is the honest baseline and the agent's fallback. It resolves the *effective* configuration
the way the training program would at launch time, then maps configuration keys to
`WorkloadMetadata` fields:

1. the launch command is followed to the entry point (`launch.parse_launch`: shell scripts and
   wrappers forwarding "$@", option loops, bash arrays, pipes and redirections, `cd`, sourced env files
   and `set -a`, sbatch files with `sbatch` options and `$SLURM_*` variables, Makefile targets with make
   variables, torchrun / deepspeed / accelerate / python -m / yolo, project CLIs such as `tune run`,
   `litgpt`, `fairseq-train`); python-dotenv's `load_dotenv()` adds `.env`;
2. the entry script and the repository modules it imports are parsed (`pysource`): argparse
   definitions, HfArgumentParser dataclasses (+ `transformers.TrainingArguments` library
   defaults), constants modules (with `os.environ` overrides the launcher exports), yacs-style
   `_C.TRAIN.EPOCHS = 300` defaults, nanoGPT-style globals when the script `exec`s a configurator
   (or trains at module level), absl `flags.DEFINE_*` (with `--flagfile`), python-fire signatures,
   literal keyword arguments of calls that run, and `@hydra.main` / NeMo's `@hydra_runner`;
3. configuration files are composed (`configs`, `pyconfig`, `getconfig`): YAML/JSON/TOML named on the command line
   (or as `cfg=x.yaml` among key=value arguments; TOML tables give dotted keys that `--training.steps` overrides),
   ml_collections `get_config(arg)` files (`--config=x.py:variant` with `--config.k=v` overrides),
   (found in the repository when a project CLI names it without its folder) with their base files
   (`base`, `_base_`, `_BASE_`) and overrides (`--opts a.b=c`, `--cfg-options a.b=c`, detectron2
   `KEY VALUE`, Lightning `--trainer.max_epochs 30`); Python configs (nanoGPT `config/x.py` +
   `--k=v`, mmengine `_base_` inheritance); Hydra's defaults list, experiments, overrides and
   `--config-dir/--config-name`; DeepSpeed JSON;
4. what the code itself decides (`pyconfig.code_facts`): values derived from known ones
   (`lr = blr * batch / 256`, iterations from samples), literals where training runs
   (`for epoch in range(90)`, `AdamW(lr=3e-4)`), config dicts built in code;
5. every value becomes a `Fact` with a precedence (derived in code > command line > exported
   environment > config files / code dicts > constants / code literals > argparse/dataclass defaults
   > literal call arguments > library defaults > README prose) and the winning fact per key is kept;
   library defaults: HF TrainingArguments (and TRL configs), Ultralytics, fairseq, Megatron, torchtune;
   framework rules derive what no key states: mmengine `--auto-scale-lr`, Megatron `--train-samples` over
   the global batch, per-epoch step caps times epochs, Composer time strings ('24800ba', '2ep'), library
   defaults (a DataLoader without workers: 0; Megatron: 2);
6. fields are chosen from those keys by name (`knowledge.FIELD_KEYS`: the per-device batch over a total,
   DeepSpeed's optimizer block over a script's --lr, no schedule length as a run length; plus keys that name a field
   by their place: `model._component_`, `DATASETS.TRAIN`), highest precedence first, then the most
   specific key name; names are put in the extractor's own canonical forms (`knowledge`: model
   families, dataset spellings), never in any corpus generator's;
7. what configs never state is inferred and marked so: the task (weighted, case-aware cues in
   code, docstrings and README), iteration type (a positive step budget wins over epochs, as in HF
   Trainer, Lightning and Megatron, unless both sit in one config section and the epochs of a dataset of
   public size end first), model size (written in the name, else ~12*L*h^2 + vocab*h from stated
   dimensions, else a word LM's embedding + recurrent layers, else the public size of a variant named by
   a word); the model of an OpenMMLab config is the one its file name states (`deeplabv3plus_r50-d8_...`).

Every field carries its provenance (`FieldEvidence`: file, snippet, kind, key) and the
candidates it beat. Unknown stays None; nothing is invented.
"""

from __future__ import annotations

import ast
import math
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from schedmate.agents.advisor import budget, codefacts, getconfig, runenv
from schedmate.agents.advisor import configs as cfgs
from schedmate.agents.advisor import pyconfig as pyc
from schedmate.agents.advisor import pysource as pys
from schedmate.agents.advisor.codefacts import CONFIG_EXT
from schedmate.agents.advisor.facts import (
    ABSTAIN_BELOW,
    RANK,
    Fact,
    as_int,
    as_lr,
    as_str,
    confidence,
    effective,
    evidence_tier,
    parse_number,
)
from schedmate.agents.advisor.knowledge import (
    DATASET_TRAIN_SIZES,
    FIELD_KEYS,
    HF_TRAINING_ARGS,
    LIBRARY_DEFAULTS,
    PER_DEVICE_BATCH,
    TASK_ALIASES,
    TASK_CUES,
    TOTAL_BATCH,
    WORD_VOCAB,
    canonical_model,
    family_vocab,
    llama_ffn,
    model_size_b,
    recurrent_lm_size,
    size_from_dims,
    size_from_name,
)
from schedmate.agents.advisor.launch import Launch, parse_launch
from schedmate.agents.advisor.names import dataset_name, find_known_model, generic_name, known_dataset
from schedmate.agents.advisor.tools import NOISE_DIRS, SKIP_DIRS
from schedmate.workload import WorkloadMetadata, normalize_model_name, normalize_task_type, parse_model_size_b

__all__ = [
    "FIELDS", "MANDATORY", "RANK", "Fact", "FieldEvidence", "StaticExtraction", "extract_static", "find_known_model",
    "known_dataset", "parse_number",
]

MANDATORY = ("model_name", "task_type", "dataset", "iterations", "iteration_type")
FIELDS = (*MANDATORY, "model_size_b", "batch_size", "learning_rate", "num_workers", "valid_dataset")
_CONFIG_OPTS = {"config", "cfg", "config_file", "config_path", "conf", "c", "config_yaml", "yaml", "hparams",
                "args_file", "config_name_or_path", "deepspeed", "ds_config", "deepspeed_config", "cfg_file",
                "configs", "config_json", "train_config", "hyp", "hparams_file"}
_TOKENIZER = re.compile(r"tokeni[sz]er|vocab|merges?[._-]|merge_file", re.I)
_OVERRIDE_OPTS = {"opts", "cfg_options", "override", "overrides", "set", "options", "opt"}
_GIN_FILE_OPTS = {"gin_file", "gin_files", "gin_config", "gin_configs", "gin_config_file"}
_GIN_BINDING_OPTS = {"gin_bindings", "gin_binding", "gin_param", "gin_params", "gin_parameters"}
_HYDRA_OPTS = {"config_name": "name", "cn": "name", "config_path": "path", "cp": "path", "config_dir": "dir",
               "cd": "dir"}
_DS_OPTIMIZER_LR = re.compile(r"(?:^|\.)optimizer\.params\.lr$")
_HF_IMPORT = re.compile(r"^\s*(?:from|import)\s+(?:transformers|trl)\b", re.M)
# a mixture of datasets given as {name: weight} (alignment-handbook `dataset_mixer`)
_MIXTURE = re.compile(r"^(?:.*\.)?(?:dataset_mixer|dataset_mixture|data_mixture|datasets_mixture)\.(.+)$", re.I)
_ULTRALYTICS = re.compile(r"^\s*(?:from|import)\s+ultralytics\b", re.M)
_FAIRSEQ = re.compile(r"^\s*(?:from|import)\s+fairseq\b", re.M)
_MEGATRON_IMPORT = re.compile(r"^\s*(?:from|import)\s+megatron\b", re.M)
_YACS_KEY = re.compile(r"^[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)+$")


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
    tiers: dict[str, str] = field(default_factory=dict)  # field -> how its value was found (`facts.evidence_tier`)
    confidence: dict[str, float] = field(default_factory=dict)  # field -> P(right), calibrated on the dev set
    skipped: list[str] = field(default_factory=list)  # files left unread by the budget (`budget.Budget`), one note each

    def abstaining(self, threshold: float | None = None) -> dict[str, Any]:
        """The fields with every value whose confidence is below `threshold` (default `ABSTAIN_BELOW`) as None."""
        t = ABSTAIN_BELOW if threshold is None else threshold
        return {k: (v if v is None or self.confidence.get(k, 0.0) >= t else None) for k, v in self.fields.items()}

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
        return {"fields": self.fields, "confidence": self.confidence, "tiers": self.tiers,
                "evidence": {k: v.model_dump() for k, v in self.evidence.items()},
                "entry": self.launch.entry, "launcher": self.launch.launcher, "files": self.files,
                "missing": self.missing, "errors": self.errors, "skipped": self.skipped}


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
                if any("=" in v for v in values):
                    overrides += [v for v in values if "=" in v]
                else:  # yacs style: `--opts KEY VALUE KEY VALUE`
                    overrides += [f"{k}={v}" for k, v in zip(values[::2], values[1::2])]
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


def _repo_py_files(repo: Path, limit: int = 400, walk_limit: int = 20000) -> list[str]:
    """Python files outside vendored/noise folders, in path order; the walk itself is bounded
    (`walk_limit` entries) so a folder of a million files costs a bounded scan, not minutes."""
    out: list[str] = []
    seen = 0
    for root, dirs, names in os.walk(repo):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and d not in NOISE_DIRS)
        rel_root = Path(root).relative_to(repo)
        for name in sorted(names):
            if name.endswith(".py"):
                out.append((rel_root / name).as_posix())
        seen += len(names) + len(dirs)
        if seen > walk_limit:
            break
    return sorted(out)[:limit]


def _readme(repo: Path) -> tuple[str, str] | None:
    for name in ("README.md", "README.rst", "README.txt", "README", "readme.md"):
        p = repo / name
        if p.is_file():
            try:
                with open(p, "rb") as fh:  # prose hints live near the top: a huge README costs 20 kB
                    return name, fh.read(20000).decode("utf-8", errors="replace")
            except OSError:
                return None
    return None


_README_HINTS = (
    ("batch_size", re.compile(r"batch[ _-]?size(?: of| =|:)?\s*(\d+)", re.I)),
    ("num_train_epochs", re.compile(r"\b(\d+)\s+epochs?\b", re.I)),
    ("max_steps", re.compile(r"\b(\d[\d,]*)\s+(?:training\s+)?(?:steps|iterations|iters)\b", re.I)),
    ("learning_rate", re.compile(r"\b(?:lr|learning rate)(?: of| =|:)?\s*([0-9.]+(?:e-?\d+)?)", re.I)),
)


def extract_static(repo: Path | str, command: str, *, gpus: int | None = None, nodes: int | None = None,
                   abstain_below: float | None = None, limits: budget.Budget | None = None) -> StaticExtraction:
    """Read the workload fingerprint of the job launched by `command` in `repo`.

    Every field carries a calibrated confidence (`.confidence`); with `abstain_below` a value less
    confident than that is returned as None (unknown), its evidence kept.
    Never raises on a strange repository: an internal failure yields an empty result whose
    `errors` say why (the advisor then falls back like for any unknown fingerprint). Reads are
    charged to `limits` (default `budget.DEFAULT_BUDGET`); what it skipped is in `skipped`.
    """
    with budget.spending(limits, root=Path(repo).resolve()) as spent:
        try:
            res = _extract_static(Path(repo), command, world_size=gpus * (nodes or 1) if gpus else None)
            if abstain_below is not None:
                res.fields = res.abstaining(abstain_below)
        except budget.BudgetSpent as exc:  # over time or cancelled: unknown, said, and the worker is free
            res = StaticExtraction(fields={f: None for f in FIELDS}, evidence={}, launch=Launch(command=command),
                                   errors=[f"static extraction stopped: {exc}"])
        except Exception as exc:  # noqa: BLE001 -- the fallback path must not crash the scheduler
            res = StaticExtraction(fields={f: None for f in FIELDS}, evidence={}, launch=Launch(command=command),
                                   errors=[f"static extraction failed: {type(exc).__name__}: {exc}"[:300]])
        res.skipped = list(spent.notes)
        over = {n.split(":", 1)[0].removeprefix("skipped ") for n in spent.notes}
        res.errors = [e for e in res.errors if e.removeprefix("cannot parse ") not in over]  # said once, with why
        res.errors.extend(n for n in spent.notes if n not in res.errors)
    return res


def _extract_static(repo: Path, command: str, *, world_size: int | None = None) -> StaticExtraction:
    repo = repo.resolve()
    launch = parse_launch(command, repo)
    world_size = world_size or runenv.world_size(repo, launch)
    facts: list[Fact] = []
    errors: list[str] = []
    files: list[str] = []
    texts: dict[str, str] = {}
    src_cli = launch.args_source

    # -- code -----------------------------------------------------------------------------------
    closure: list[str] = []
    ast_cache: dict[Path, Any] = {}
    if launch.entry and (repo / launch.entry).is_file():
        closure = pys.local_imports(repo, launch.entry, cache=ast_cache, python_path=launch.env.get("PYTHONPATH"))
    elif launch.entry:
        errors.append(f"entry {launch.entry} not found in the repository")
    runenv.load_dotenv(repo, closure, launch, parse_text=lambda rel: pyc.read_text(repo, rel))
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
        found, set_defaults = pys.argparse_specs(tree, text, consts, launch.env)
        for sp in found:
            for opt in sp.options:
                specs.setdefault(opt, sp)
            spec_src.setdefault(sp.dest, rel)
            if sp.has_default and sp.default is not None:
                kind = "env" if sp.env_var else "argparse_default"
                facts.append(Fact(sp.dest, _typed(sp, sp.default) if sp.env_var else sp.default,
                                  launch.env_source.get(sp.env_var, rel) if sp.env_var else rel, sp.snippet, kind))
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
        for key, (default, quote) in codefacts.attribute_defaults(tree, text).items():
            facts.append(Fact(key, default, rel, quote, "dataclass_default"))
        if "configurable" in text:
            for key, (default, quote) in codefacts.configurable_defaults(tree, text).items():
                facts.append(Fact(key, default, rel, quote, "dataclass_default"))
        configurator = rel == launch.entry and codefacts.CONFIGURATOR.search(text) is not None
        for name, lit in pys.module_constants(tree, text, launch.env).items():
            if rel == launch.entry and not name.isupper() and not configurator and not _script_style(tree):
                continue  # entry-script locals at module level are rarely configuration (nanoGPT's are)
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
    for rel in closure:  # a training DataLoader built without workers loads in the main process
        res = parsed.get(rel)
        snip = codefacts.loader_without_workers(*res) if res is not None else None
        if snip:
            facts.append(Fact("num_workers", 0, rel, snip, "library_default"))
            break
    if any(_MEGATRON_IMPORT.search(t) for t in texts.values()) and "--num-workers" not in specs:
        facts.append(Fact("num_workers", LIBRARY_DEFAULTS["megatron"]["num_workers"],
                          "<library default: megatron>", "--num-workers 2", "library_default"))
    if launch.cli == "tune":
        facts.append(Fact("num_workers", LIBRARY_DEFAULTS["torchtune"]["num_workers"],
                          "<library default: torchtune recipe>", "DataLoader(...) without num_workers",
                          "library_default"))
    if launch.cli == "yolo" or any(_ULTRALYTICS.search(t) for t in texts.values()):
        for k, v in LIBRARY_DEFAULTS["ultralytics"].items():
            facts.append(Fact(k, v, "<library default: ultralytics>", f"{k}: {v}", "library_default"))
    if (launch.cli or "").startswith("fairseq") or any(_FAIRSEQ.search(t) for t in texts.values()):
        for k, v in LIBRARY_DEFAULTS["fairseq"].items():  # fairseq's own argparse defaults
            facts.append(Fact(k, v, "<library default: fairseq>", f"--{k.replace('_', '-')} {v}", "argparse_default"))
    for fw in _frameworks(repo, launch, texts, closure):  # frameworks whose loader defaults the code does not show
        for k, v in LIBRARY_DEFAULTS[fw].items():
            facts.append(Fact(k, v, f"<library default: {fw}>", f"{k}: {v}", "library_default"))
    if hf_training or ((uses_hf or any(_HF_IMPORT.search(t) for t in texts.values()))
                       and any(HF_TRAINING_ARGS.search(t) for t in texts.values())):
        for k, v in LIBRARY_DEFAULTS["transformers.TrainingArguments"].items():
            facts.append(Fact(k, v, "<library default: transformers.TrainingArguments>", f"{k}={v}", "library_default"))

    # -- command line -----------------------------------------------------------------------------
    cli_args = runenv.expand_flagfiles(repo, launch.args)
    options, overrides, positionals = _parse_cli(cli_args, specs)
    unknown = [d for d, _, snip in options if snip.split("=")[0].split(" ")[0] not in specs]
    if len(unknown) >= 2 and len(unknown) > len(options) / 2:
        # the parser lives in a module the entry does not import statically: find it by its flags
        flags = {snip.split("=")[0].split(" ")[0] for _, _, snip in options}
        scored = []
        for rel in _repo_py_files(repo):
            if rel in closure or "add_argument" not in (budget.peek_text(repo / rel) or ""):
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
        options, overrides, positionals = _parse_cli(cli_args, specs)

    config_files: list[str] = list(code_configs)
    py_configs: list[str] = []
    fn_configs: list[tuple[str, str, str | None]] = []  # (option, file, argument) of `get_config(arg)` files
    hydra_cli: dict[str, str] = {}
    gin_files: list[str] = []
    gin_bindings: list[str] = []
    registry_used = False
    for dest, raw, snippet in options:
        low = dest.lower().replace("-", "_")
        if low in _HYDRA_OPTS and isinstance(raw, str) and not (
                hydra is None and raw.endswith(CONFIG_EXT) and codefacts.find_config_file(repo, raw)):
            hydra_cli[_HYDRA_OPTS[low]] = raw  # (HF's `--config_name x.json` without @hydra.main is a model config)
            continue
        if isinstance(raw, str) and (low in _GIN_FILE_OPTS or raw.endswith(".gin")):
            found = codefacts.find_config_file(repo, raw)
            if found is not None:
                gin_files.append(found)
                continue
        if isinstance(raw, str) and low in _GIN_BINDING_OPTS:  # --gin_bindings='train.lr = 0.1'
            gin_bindings.append(raw)
            continue
        if low.startswith("gin.") and len(low) > 4:  # t5x: --gin.TRAIN_STEPS=1000, --gin.train.batch_size=64
            gin_bindings.append(f"{dest[4:]} = {raw}")
            continue
        if low in _PARAMS_OVERRIDE_OPTS and isinstance(raw, str) and raw.strip():
            found = codefacts.find_config_file(repo, raw) if raw.endswith(CONFIG_EXT) else None
            if found is not None:  # TF Model Garden: a YAML file of overrides, merged after --config_file
                config_files.append(found)
                continue
            overrides += _params_override(raw)
            continue
        spec = specs.get(snippet.split("=")[0].split(" ")[0])
        value = _typed(spec, raw)
        if isinstance(raw, str) and (low in _CONFIG_OPTS or "config" in low):
            path, colon, arg = raw.partition(":")  # ml_collections: `--config=configs/vit.py:b16,cifar10`
            found = codefacts.find_config_file(repo, path if colon and path.endswith(".py") else raw)
            if found is not None and found.endswith(".py") and _has_config_function(repo, found, parse):
                fn_configs.append((dest, found, arg if colon else None))
                continue
            if found is not None:
                (py_configs if found.endswith(".py") else config_files).append(found)
                continue
            if _registry_facts(raw, closure, parse, facts):
                registry_used = True
                continue
        facts.append(Fact(dest, value, src_cli, snippet, "cli"))
    if not registry_used:  # `--config` not given: argparse's default names the registry entry
        given = {d.lower().replace("-", "_") for d, _, _ in options}
        for sp in specs.values():
            low = sp.dest.lower()
            if (low in _CONFIG_OPTS or low.endswith("config")) and low not in given and isinstance(sp.default, str) \
                    and sp.default and _registry_facts(sp.default, closure, parse, facts):
                break
    i = 0
    while i < len(positionals):
        pos = positionals[i]
        if _YACS_KEY.match(pos) and i + 1 < len(positionals):  # detectron2 / yacs: KEY VALUE pairs
            facts.append(Fact(pos, cfgs.parse_override_value(positionals[i + 1]), src_cli,
                              f"{pos} {positionals[i + 1]}", "cli"))
            i += 2
            continue
        if pos.endswith(CONFIG_EXT) and (repo / pos).is_file():
            config_files.append(pos)
        elif pos.endswith(".gin") and (repo / pos).is_file():
            gin_files.append(pos)
        elif pos.endswith(".py") and pos != launch.entry and (repo / pos).is_file():
            py_configs.append(pos)  # nanoGPT `train.py config/x.py`, mmengine `tools/train.py configs/x.py`
        elif find_known_model(pos) and not pos.startswith("-"):
            facts.append(Fact("model", pos, src_cli, pos, "cli"))  # `litgpt finetune meta-llama/Llama-2-7b-hf`
        elif known_dataset(pos) and not _is_number(pos):
            facts.append(Fact("data", pos, src_cli, pos, "cli"))  # `fairseq-train data-bin/wikitext-103`
        elif (launch.cli or "").startswith("fairseq") and pos == positionals[0] and "=" not in pos:
            facts.append(Fact("data", pos, src_cli, pos, "cli"))  # fairseq's one positional is the data directory
        i += 1
    if launch.cli == "yolo":  # `yolo segment train ...`: the task is a word of the command
        word = next((p for p in positionals if p.lower() in TASK_ALIASES), None)
        if word is None:  # no task word: Ultralytics takes it from the weights (yolo11n-seg.pt), else detect
            model = next((ov.partition("=")[2] for ov in overrides if ov.startswith("model=")), "")
            suffix = re.search(r"-(seg|cls|pose|obb)\b", model)
            word = {"seg": "segment", "cls": "classify"}.get(suffix.group(1), suffix.group(1)) if suffix else (
                "detect" if model else None)
        if word is not None:
            facts.append(Fact("task", word, src_cli, f"yolo {word}", "cli"))
    kept: list[str] = []
    for ov in overrides:  # `cfg=hyp.yaml` among key=value arguments names a configuration file
        key, _, raw = ov.partition("=")
        found = codefacts.find_config_file(repo, raw) if key.lower() in _CONFIG_OPTS and raw.endswith(
            (*CONFIG_EXT, ".py")) else None
        if found is None:
            kept.append(ov)
        else:
            (py_configs if found.endswith(".py") else config_files).append(found)
    overrides = kept
    for dest, rel, get_arg in fn_configs:
        values = getconfig.run_get_config(repo, rel, get_arg, env=launch.env)
        if not values:
            py_configs.append(rel)
            continue
        files.append(rel)
        call = f"get_config({get_arg!r})" if get_arg is not None else "get_config()"
        for key, value in codefacts.flat_items(values):
            facts.append(Fact(f"{dest}.{key}", value, rel, f"{call}: {key} = {value!r}"[:200], "config"))
    for rel in py_configs:
        values, origin, used = pyc.load_py_config(repo, rel, env=launch.env)
        files += used
        for key, value in codefacts.flat_items(values):
            facts.append(Fact(key, value, origin.get(key.split(".", 1)[0], rel), f"{key} = {value!r}"[:200], "config"))

    if (hydra is not None and launch.entry) or hydra_cli.get("name"):
        cpath, cname = hydra if hydra is not None else (None, None)
        cname = hydra_cli.get("name", cname)
        base_dir = Path(launch.entry).parent if launch.entry else Path(".")
        cands = []
        if hydra_cli.get("dir"):
            cands.append(_repo_dir(repo, os.path.normpath(hydra_cli["dir"])))
        if hydra_cli.get("path"):
            cpath = _repo_dir(repo, hydra_cli["path"])
        cands += [os.path.normpath(base_dir / (cpath or ".")), os.path.normpath(cpath or ".")]
        cdir = ""
        for cand in cands:
            if not cand.startswith("..") and (repo / cand).is_dir() and (
                    (repo / cand / f"{cname or 'config'}.yaml").is_file() or (repo / cand / (cname or "")).is_file()):
                cdir = "" if cand == "." else cand
                break
        merged, used, cli = cfgs.compose_hydra(repo, cdir, (cname or "config").removesuffix(".yaml"), overrides)
        files += used
        for key, (value, src, snip) in merged.items():
            facts.append(Fact(key, value, src, snip, "config"))
        for key, (value, _src, snip) in cli.items():
            facts.append(Fact(key, value, src_cli, snip, "cli"))
        overrides = []
    for rel in config_files:
        base = _omegaconf_default(repo, rel, parse)
        if base is not None:  # OmegaConf.merge(default_cfg, cfg, cli): the package's default config first
            merged, used = cfgs.load_config_chain(repo, base)
            files += used
            for key, (value, src, snip) in merged.items():
                facts.append(Fact(key, value, src, snip, "config"))
        merged, used = cfgs.load_config_chain(repo, rel)
        files += used
        kind = "cli" if rel.endswith(".json") and uses_hf else "config"
        for key, (value, src, snip) in merged.items():
            facts.append(Fact(key, value, src, snip, kind))
    macros: dict[str, Any] = {}
    for rel in gin_files:  # gin: files in order (each after its includes), then command-line bindings
        merged, used = cfgs.load_gin(repo, rel, macros)
        files += used
        for key, (value, src, snip) in merged.items():
            facts.append(Fact(key, value, src, snip, "config"))
    for binding in gin_bindings:
        for key, (value, _src, snip) in cfgs.parse_gin(binding.replace(";", "\n"), src_cli, macros).items():
            facts.append(Fact(key, value, src_cli, snip, "cli"))
    for ov in overrides:
        key, _, raw = ov.partition("=")
        key = key.lstrip("+~")
        if key and not key.startswith("$"):
            facts.append(Fact(key, cfgs.parse_override_value(raw), src_cli, ov, "cli"))

    facts = runenv.interpolate(facts, launch.env)
    facts += _schedule_lr(facts)
    facts += _scaling_rule_lr(facts, launch, world_size)

    # -- README prose (lowest precedence) -----------------------------------------------------------
    readme = _readme(repo)
    if readme is not None:
        name, text = readme
        texts[name] = text
        for key, rx in _README_HINTS:
            m = rx.search(text)
            if m:
                facts.append(Fact(key, m.group(1).replace(",", ""), name, m.group(0), "readme"))

    # -- what the training code itself decides (derived values, hard-coded literals, dicts) ---------
    facts += codefacts.code_facts(closure, parsed, facts, launch, world_size=world_size)
    facts += _auto_scale_lr(facts, launch, world_size)

    return _choose(repo, launch, facts, files, texts, errors)


# ----------------------------------------------------------------------------------------- choosing


# keys that name a field by their place, not their leaf: a component or class under `model` / `data`,
# detectron2's DATASETS.TRAIN, mmdet's dataset_type
_PATH_KEYS: dict[str, tuple[tuple[re.Pattern[str], int], ...]] = {
    "model_name": ((re.compile(r"(^|\.)(model|net)\.(_component_|class_path|type|_target_)$"), 6),
                   (re.compile(r"(^|\.)model\.(name|name_or_path|path|id)$"), 8)),
    "dataset": ((re.compile(r"(^|\.)(dataset|data|datamodule|train_dataset|train)\.(_component_|class_path|type|_target_)$"), 6),
                (re.compile(r"(^|\.)(dataset|data|datasets|train_data)\.(name|path|id|hf_name|hf_path)$"), 8),
                (re.compile(r"(^|\.)datasets\.train$"), 7), (re.compile(r"^dataset_type$"), 4),
                (re.compile(r"(^|\.)data\.(train|train_data|train_path|train_shards|train_files)$"), 7)),
    "valid_dataset": ((re.compile(r"(^|\.)datasets\.test$"), 6),),
    "task_type": ((re.compile(r"(^|\.)task\.(_name|name|type)$"), 8),),  # fairseq-hydra `task._name: masked_lm`
}


# key names no table lists that still say which field they set (`--per-device-batch`, `instance_data_dir`,
# `max_train_iters`), at the lowest specificity; what they must not be is excluded first
_LEAF_PATTERNS: dict[str, tuple[re.Pattern[str], re.Pattern[str], int]] = {
    "batch_size": (re.compile(r"^(?:(?:train|training|per_device|per_gpu|micro|local|device|mini|img|imgs|images)_)*"
                              r"(?:batch|bsz|bs)(?:_?size)?(?:_per_(?:gpu|device|rank))?$"),
                   re.compile(r"accum|global|total|effective"), 2),
    "num_workers": (re.compile(r"(?:^|_)workers?$|^num_\w*workers$"),
                    re.compile(r"preprocess|tokeni|map|proc|download|write|io_"), 2),
    "learning_rate": (re.compile(r"(?:^|_)(?:lr|learning_rate)$|^(?:lr|learning_rate)_(?:base|init|start|peak|max)$"),
                      re.compile(r"min|end|final|warmup|decay|scale|factor|mult|ratio|head|backbone|embed"), 2),
    "steps": (re.compile(r"^(?:max|total|num|n)_(?:train(?:ing)?_)?(?:steps|iters|iterations|updates|batches_total)$"),
              re.compile(r"warmup|eval|save|log|decay|accum"), 2),
    "epochs": (re.compile(r"^(?:max|total|num|n)_(?:train(?:ing)?_)?epochs?$"), re.compile(r"warmup|eval|save|decay"), 2),
    "dataset": (re.compile(r"(?:^|_)(?:data(?:set)?)(?:_(?:dir|path|root|name|id|file|files))?$"),
                re.compile(r"output|cache|log|save|class_data|prior"), 2),
}


def _candidates(eff: dict[str, Fact], group: str) -> list[tuple[Fact, int]]:
    keys = FIELD_KEYS[group]
    out: list[tuple[Fact, int]] = []
    fallback: list[tuple[Fact, int]] = []  # keys only a name pattern recognises: used where no known key is stated
    for f in eff.values():
        spec = keys.get(f.leaf)
        if spec is None:
            low = f.key.lower()
            spec = next((w for rx, w in _PATH_KEYS.get(group, ()) if rx.search(low)), None)
        by_pattern = False
        if spec is None and group in _LEAF_PATTERNS:
            ok, bad, weight = _LEAF_PATTERNS[group]
            spec = weight if ok.search(f.leaf) and not bad.search(f.leaf) else None
            by_pattern = spec is not None
        if spec is None:
            continue
        path = f.key.lower()
        if group != "valid_dataset" and re.search(r"(^|[._])(val|valid|validation|eval|test)([._]|$)", path):
            continue
        if group in ("steps", "epochs") and re.search(r"sched", path):
            continue  # a learning-rate schedule's length (DeepSpeed scheduler.params.total_num_steps) is not the run's
        (fallback if by_pattern else out).append((f, spec))
    return out or fallback


def _pick(cands: Sequence[tuple[Any, ...]], *, prefer_known: bool = False) -> tuple[Fact, Any] | None:
    """Highest (rank, known?, specificity); `cands` are (fact, converted value, specificity), with
    a fourth item, known (0/1), where the caller prefers known names (`prefer_known`)."""
    if not cands:
        return None
    def score(c: tuple[Any, ...]) -> tuple:
        fact, spec = c[0], c[2]
        return (fact.rank, c[3] if len(c) > 3 else 0, spec) if not prefer_known else (c[3], fact.rank, spec)
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


def _epochs_end_first(eff: dict[str, Fact], steps: tuple[Fact, Any], epochs: tuple[Fact, Any]) -> bool:
    """Both limits set side by side in one config section (litgpt `train.epochs` + `train.max_steps`,
    Lightning `trainer.max_epochs` + `trainer.max_steps`) stop training at whichever comes first. Where the
    dataset's public size and the global batch are known, the epochs end first when they need fewer steps.
    (HF `num_train_epochs` is not such a limit: a positive `max_steps` replaces it.)"""
    (fs, n_steps), (fe, n_epochs) = steps, epochs
    parent_s, _, _ = fs.key.rpartition(".")
    parent_e, _, _ = fe.key.rpartition(".")
    if not parent_s or parent_s != parent_e or fe.leaf == "num_train_epochs" or min(fs.rank, fe.rank) < RANK["config"]:
        return False
    data = next((f for f, _ in sorted(_candidates(eff, "dataset"), key=lambda c: -c[0].rank)), None)
    if data is None:
        return False
    value = data.value
    if isinstance(value, str) and "." in value and "/" not in value:
        value = value.rsplit(".", 1)[-1]  # litgpt.data.Dolly
    size = DATASET_TRAIN_SIZES.get(known_dataset(str(value)) or "")
    gbs = next((as_int(f.value, 1) for f in eff.values() if f.leaf in TOTAL_BATCH and f.key.startswith(parent_s)), None)
    if not size or not gbs:
        return False
    return math.ceil(size / gbs) * n_epochs < n_steps


def _auto_scale_lr(facts: list[Fact], launch: Launch, world_size: int | None) -> list[Fact]:
    """mmengine's `--auto-scale-lr` (or `auto_scale_lr.enable=True`): the optimizer's lr is scaled by
    (processes x per-GPU batch) / `auto_scale_lr.base_batch_size` (the linear scaling rule)."""
    eff = effective(facts)
    flag = next((f for f in eff.values() if f.leaf == "auto_scale_lr" and f.kind == "cli" and f.value is True), None)
    enable = eff.get("auto_scale_lr.enable")
    if flag is None and not (enable is not None and enable.value is True):
        return []
    base = as_int(eff["auto_scale_lr.base_batch_size"].value, 1) if "auto_scale_lr.base_batch_size" in eff else None
    batch = next((as_int(f.value, 1) for k, f in eff.items() if k == "train_dataloader.batch_size"), None)
    lrs = [f for k, f in eff.items() if re.search(r"(?:^|\.)optimizer\.lr$", k) and as_lr(f.value)]
    n = world_size or runenv.launcher_world(launch)
    if not (base and batch and lrs and n):
        return []
    lr = max(lrs, key=lambda f: f.rank)
    lr_value, switch = as_lr(lr.value), flag or enable
    if lr_value is None or switch is None:  # neither happens: lrs hold readable rates, one switch is set
        return []
    scaled = lr_value * n * batch / base
    why = f"{lr.value} x ({n} GPUs x {batch}) / {base} (auto_scale_lr)"
    return [Fact(lr.key, scaled, switch.source, why, "derived")]


def _derived_lengths(eff: dict[str, Fact], epochs: tuple[Fact, Any] | None) -> list[tuple[Fact, Any, int]]:
    """Step budgets a framework derives from other settings:
    * a sample budget over the global batch (Megatron `--train-samples` / `--global-batch-size`);
    * epochs times a stated per-epoch step cap (torchtune `max_steps_per_epoch`, DLRM `--num-batches`): the cap
      binds on any dataset larger than cap x batch, which is why it is set."""
    out: list[tuple[Fact, Any, int]] = []
    by_leaf: dict[str, Fact] = {}
    for f in eff.values():
        if f.leaf not in by_leaf or f.rank > by_leaf[f.leaf].rank:
            by_leaf[f.leaf] = f
    samples = next((by_leaf[k] for k in ("train_samples", "max_train_samples", "total_train_samples")
                    if k in by_leaf), None)
    gbs = next((by_leaf[k] for k in ("global_batch_size", "global_train_batch_size") if k in by_leaf), None)
    n, b = (as_int(samples.value, 1), as_int(gbs.value, 1)) if samples and gbs else (None, None)
    if n and b and samples and gbs:  # n and b come from samples and gbs
        low = min((samples, gbs), key=lambda f: f.rank)  # as strong as the weaker of the two statements
        out.append((Fact("train_iters", n // b, low.source, f"{samples.snippet} // {gbs.snippet}", low.kind),
                    n // b, 9))
    for key in ("max_steps_per_epoch", "num_batches", "max_batches_per_epoch",
                "official_epoch_length", "epoch_length", "iterations_per_epoch"):  # DINOv2: fixed-length 'epochs'
        cap = by_leaf.get(key)
        per = as_int(cap.value, 1) if cap is not None and cap.kind != "derived" else None
        if not per or cap is None:  # a count the code derives (ceil(samples / batch)) is an epoch's size, not a cap
            continue
        if epochs is None:
            out.append((cap, per, 6))
            continue
        low = min((cap, epochs[0]), key=lambda f: f.rank)
        out.append((Fact("max_steps", per * epochs[1], cap.source, f"{epochs[0].snippet} x {cap.snippet}", low.kind),
                    per * epochs[1], 9))
    return out


_DURATION = re.compile(r"^\s*(\d[\d_]*)\s*(ba|ep|sp|tok|dur)\s*$", re.I)


def _duration(value: Any, unit: str) -> Any:
    """Composer time strings: '24800ba' is 24800 batches (steps), '2ep' 2 epochs; a string in another unit
    (samples, tokens) is no count of `unit`. Other values pass through."""
    m = _DURATION.match(value) if isinstance(value, str) else None
    if m is None:
        return value
    return m.group(1) if m.group(2).lower() == unit else None


def _choose(repo: Path, launch: Launch, facts: list[Fact], files: list[str], texts: dict[str, str],
            errors: list[str]) -> StaticExtraction:
    eff = effective(facts)
    fields: dict[str, Any] = {f: None for f in FIELDS}
    cfg_files = [f for f in files if f.endswith(CONFIG_EXT) or (f.endswith(".py") and f not in texts)]

    def overridden(group: str) -> list[tuple[Fact, Any]]:
        """Facts of this field's keys that lost to a higher-precedence value of the same key."""
        keys = FIELD_KEYS[group]
        return [(f, f.value) for f in facts if f.leaf in keys and eff.get(f.key) is not f]
    evidence: dict[str, FieldEvidence] = {}

    def numeric(group: str, conv) -> list[tuple[Fact, Any, int]]:
        out = []
        for f, spec in _candidates(eff, group):
            v = conv(f.value)
            if v is not None:
                out.append((f, v, spec))
        return out

    for fld, group, conv in (("batch_size", "batch_size", lambda v: as_int(v, 1)),
                             ("learning_rate", "learning_rate", as_lr),
                             ("num_workers", "num_workers", lambda v: as_int(v, 0)),
                             ("seq_len", "seq_len", lambda v: as_int(v, 1))):
        cands = numeric(group, conv)
        ds_lr = [c for c in cands if fld == "learning_rate" and _DS_OPTIMIZER_LR.search(c[0].key)
                 and c[0].rank >= RANK["config"]]
        if ds_lr:  # DeepSpeed builds the optimizer from its config: the script's own --lr only feeds other paths
            cands = ds_lr
        if fld == "batch_size" and any(f.leaf in PER_DEVICE_BATCH and f.rank >= RANK["argparse_default"]
                                       for f, _, _ in cands):
            # a total over devices (global/effective batch) is not the batch once a per-device one is stated
            cands = [c for c in cands if c[0].leaf not in TOTAL_BATCH]
        best = _pick(cands)
        if best is None and fld == "batch_size":  # fairseq/Megatron-style token budgets: the only batch stated
            tokens = [(f, as_int(f.value, 1), 1) for f in eff.values() if f.leaf in _TOKEN_BATCH and as_int(f.value, 1)]
            best = _pick(tokens)
        if best:
            fields[fld] = best[1]
            evidence[fld] = _evidence(best[0], best[1], [(c[0], c[1]) for c in cands] + overridden(group))

    # iterations: a positive step budget overrides epochs (HF Trainer / Lightning / Megatron semantics)
    steps = numeric("steps", lambda v: as_int(_duration(v, "ba"), 1))
    epochs = numeric("epochs", lambda v: as_int(_duration(v, "ep"), 1))
    steps += _derived_lengths(eff, _pick(epochs))
    best_s, best_e = _pick(steps), _pick(epochs)
    if best_s and best_e and _epochs_end_first(eff, best_s, best_e):
        best_s = None
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
    for key, f in eff.items():  # mmengine-style `backbone=dict(type='ResNet', depth=50)` -> resnet-50
        low = key.lower()
        parent_type = eff.get(key[: -len("backbone.type")] + "type")
        if low.endswith("backbone.type") and isinstance(f.value, str) and (
                parent_type is None or generic_name(str(parent_type.value))):  # not a MaskRCNN's backbone
            depth = eff.get(key[: -len("type")] + "depth")
            name = f"{f.value}{depth.value}" if depth is not None and as_int(depth.value, 1) else f.value
            known = find_known_model(name)
            if known:
                model_cands.append((f, known[0], 7, 1))
    for f, spec in _candidates(eff, "model_name"):
        s = as_str(f.value)
        if s is None or s.lower() in ("true", "false"):
            continue
        if "." in s and f.leaf in ("_component_", "class_path", "type", "_target_") and "/" not in s:
            s = s.rsplit(".", 1)[-1]  # torchtune.models.llama3.lora_llama3_8b -> lora_llama3_8b
        s = re.sub(r"^(?:q?lora|full|peft)[_-]", "", s)
        patch = eff.get(f"{f.key.rpartition('.')[0]}.patch_size" if "." in f.key else "patch_size")
        if patch is not None and as_int(patch.value, 1) and _VIT_NO_PATCH.match(s):
            s = f"{s}_patch{as_int(patch.value, 1)}"  # DINO/DINOv2 `arch: vit_large` beside `patch_size: 16`
        flavor = _flavor(eff, f)
        if flavor and size_from_name(s) is None:
            s = f"{s}-{flavor}"  # torchtitan `[model] name = "llama3"`, `flavor = "8B"`
        known = find_known_model(s)
        if not known and generic_name(s):
            continue
        if not known and f.leaf in ("_component_", "class_path", "type", "_target_"):
            # a project's own class (SimpleDenseNet): its name, kebab-cased, framework suffixes dropped
            s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", re.sub(r"(?:Lit)?(?:Module|Model|LightningModule)$", "", s))
            if not s or generic_name(s):
                continue
            spec = spec + (1 if f.key.lower().endswith(("net._target_", "backbone._target_")) else 0)
        canon = known[0] if known else canonical_model(s)
        model_cands.append((f, canon, spec, 1 if known else 0))
    best_m = max(model_cands, key=lambda c: (c[0].rank, c[3], c[2])) if model_cands else None
    if best_m is not None and best_m[3] == 0:
        better = [c for c in model_cands if c[3] == 1 and c[0].rank >= best_m[0].rank - 2]
        if better:
            best_m = max(better, key=lambda c: (c[0].rank, c[2]))
    if best_m is not None and (best_m[3] == 1 or not _hint_model(eff, launch, texts, cfg_files)):
        fields["model_name"] = best_m[1]
        evidence["model_name"] = _evidence(best_m[0], best_m[1], [(c[0], c[1]) for c in model_cands])
    else:
        hint = _hint_model(eff, launch, texts, cfg_files)
        if hint is not None:
            canon, raw, src, kind = hint
            fields["model_name"] = canon
            evidence["model_name"] = FieldEvidence(value=canon, raw=raw, source=src, kind=kind, snippet=raw)
        elif best_m is not None:
            fields["model_name"] = best_m[1]
            evidence["model_name"] = _evidence(best_m[0], best_m[1], [(c[0], c[1]) for c in model_cands])

    # OpenMMLab configs are named `{algorithm}_{components}_{schedule}_{dataset}`: the algorithm and its
    # components name the model (deeplabv3plus_r50-d8_4xb2-80k_cityscapes -> deeplabv3plus-r50-d8), where
    # `model.type` is a generic wrapper (EncoderDecoder) or the backbone alone would be read
    top_py = [f for f in cfg_files if f.endswith(".py")]
    if top_py and "model.type" in eff:
        mm_named = _openmmlab_model(Path(top_py[-1]).stem)
        if mm_named is not None and mm_named[0] != fields["model_name"]:
            fields["model_name"] = mm_named[0]
            evidence["model_name"] = FieldEvidence(value=mm_named[0], raw=mm_named[1], source=top_py[-1],
                                                   kind="name:config file", snippet=Path(top_py[-1]).name)

    # an image tower named the open_clip way ('ViT-L-14') in a CLIP codebase is the CLIP model
    if fields["model_name"] and re.match(r"vit-|rn\d+", fields["model_name"]) and any(
            re.search(r"\bopen_clip\b|\bCLIP\b|clip\.load\(", t) for t in texts.values()):
        fields["model_name"] = "clip-" + fields["model_name"]
        evidence["model_name"] = evidence["model_name"].model_copy(update={"value": fields["model_name"]})

    # a backbone trained by self-distillation (DINO / iBOT / DINOv2 `student:` and `teacher:` sections) is the
    # method's model, named after the method's package (dinov2/run/train/train.py -> dinov2-vit-l-16)
    ev_m = evidence.get("model_name")
    method = _ssl_method(launch)
    if (fields["model_name"] and ev_m is not None and method and (ev_m.key or "").startswith("student.")
            and any(k.startswith("teacher.") for k in eff) and not fields["model_name"].startswith(method)):
        fields["model_name"] = f"{method}-{fields['model_name']}"
        evidence["model_name"] = ev_m.model_copy(update={"value": fields["model_name"]})

    # dataset
    for fld, group in (("dataset", "dataset"), ("valid_dataset", "valid_dataset")):
        ds_cands: list[tuple[Fact, Any, int, int]] = []
        for f, spec in _candidates(eff, group):
            value = f.value
            if isinstance(value, (list, tuple)):  # Megatron/NeMo `data_prefix: [1.0, /data/pile_text_document]`
                value = next((x for x in value if isinstance(x, (str, dict))), None)
            if isinstance(value, dict):  # axolotl-style `datasets: [{path: ..., type: ...}]`
                value = value.get("path") or value.get("name") or value.get("data_files")
            s = as_str(value)
            if s is not None and "." in s and "/" not in s and f.leaf in ("_component_", "class_path", "type", "_target_"):
                s = s.rsplit(".", 1)[-1]  # litgpt.data.Alpaca2k -> Alpaca2k
            if s is None or generic_name(s):
                continue
            ds_known = known_dataset(s)
            ds_cands.append((f, ds_known or dataset_name(s), spec, 1 if ds_known else 0))
        if fld == "dataset":
            for f in eff.values():
                m = _MIXTURE.match(f.key)
                if m and parse_number(f.value) and not generic_name(m.group(1)):
                    ds_known = known_dataset(m.group(1))
                    ds_cands.append((f, ds_known or dataset_name(m.group(1)), 6, 1 if ds_known else 0))
        if ds_cands:
            best_d = max(ds_cands, key=lambda c: (c[3], c[0].rank, c[2]))
            fields[fld] = best_d[1]
            evidence[fld] = _evidence(best_d[0], best_d[1], [(c[0], c[1]) for c in ds_cands])
    if fields["dataset"] is None:  # `--task sst2`: a task setting that names a public dataset (GLUE tasks)
        for f, _ in sorted(_candidates(eff, "task_type"), key=lambda c: -c[0].rank):
            ds_known = known_dataset(str(f.value)) if as_str(f.value) else None
            if ds_known:
                fields["dataset"] = ds_known
                evidence["dataset"] = _evidence(f, ds_known, [])
                break
    if fields["dataset"] is None and launch.entry in texts:  # named in the entry's docstring
        m = re.match(r'\s*(?:"""|\'\'\')(.*?)(?:"""|\'\'\')', texts[launch.entry], re.S)
        doc = m.group(1) if m else ""
        ds_known = next((k for w in re.findall(r"[A-Za-z][\w.-]*\w", doc) if (k := known_dataset(w))), None)
        if ds_known:
            fields["dataset"] = ds_known
            evidence["dataset"] = FieldEvidence(value=ds_known, raw=doc[:200], source=launch.entry, kind="mention",
                                                snippet=doc[:200])
    if fields["dataset"] is None:
        for src, text in list(launch.texts.items()) + list(texts.items()):
            for tok in re.findall(r"[A-Za-z0-9_./-]{3,}", text):
                ds_known = known_dataset(tok) if "/" in tok else None
                if ds_known:
                    fields["dataset"] = ds_known
                    evidence["dataset"] = FieldEvidence(value=ds_known, raw=tok, source=src, kind="mention", snippet=tok)
                    break
            if fields["dataset"]:
                break

    # task type: an explicit setting naming a known task, else cues in code and docs
    explicit = [(f, s) for f, s in _candidates(eff, "task_type") if as_str(f.value) and f.rank >= RANK["argparse_default"]]
    known_tasks = [(f, s) for f, s in explicit if _task_name(str(f.value)) in TASK_CUES]
    if known_tasks:
        f, _ = max(known_tasks, key=lambda c: (c[0].rank, c[1]))
        fields["task_type"] = _task_name(str(f.value))
        evidence["task_type"] = _evidence(f, fields["task_type"], [])
    else:
        hints = " ".join(str(f.value) for f, _ in explicit)
        task, why = _infer_task(launch, texts, fields, hints)
        if task:
            fields["task_type"] = task
            evidence["task_type"] = FieldEvidence(value=task, source=why[0], kind="inferred", snippet=why[1])

    # model size: explicit, else written in the name, else from architecture dimensions, else the
    # public size of a variant named by a word (bert-base)
    size_facts = [(f, s) for f, s in _candidates(eff, "model_size")]
    for f, _ in sorted(size_facts, key=lambda c: (c[0].rank, c[1]), reverse=True):
        try:
            v = parse_model_size_b(f.value)
        except ValueError:
            v = None
        if v:
            fields["model_size_b"] = v
            evidence["model_size_b"] = _evidence(f, v, [])
            break
    named = None
    if fields["model_name"]:
        canon = fields["model_name"]
        raw = str(evidence["model_name"].raw) if "model_name" in evidence else canon
        named = model_size_b(canon, raw)
        method = _ssl_method(launch)
        if named is None and method and canon.startswith(method + "-"):
            named = model_size_b(canon[len(method) + 1:], raw)  # the backbone's size (heads are not kept)
    dims = _dims(eff, fields["model_name"])
    hinted = "model_name" in evidence and evidence["model_name"].kind.startswith("name:")
    if hinted and dims is not None and (" + " in dims[1] or " vocab=" in dims[1]) and named is not None:
        named = None  # a size in a run or file name (mpt-1b) is rounded; dimensions with the vocabulary are exact
    if fields["model_size_b"] is None and named is not None and named[1].startswith("size written"):
        fields["model_size_b"] = named[0]
        evidence["model_size_b"] = FieldEvidence(value=named[0], raw=fields["model_name"], source="<model name>",
                                                 kind="derived", snippet=named[1])
    elif fields["model_size_b"] is None and dims is not None:
        fields["model_size_b"], size_why, size_src = dims
        evidence["model_size_b"] = FieldEvidence(value=fields["model_size_b"], raw=size_why, source=size_src, kind="derived",
                                                 snippet=size_why)
    elif fields["model_size_b"] is None and (rnn := _word_lm_size(eff, fields)) is not None:
        fields["model_size_b"] = rnn[0]
        evidence["model_size_b"] = FieldEvidence(value=rnn[0], raw=rnn[1], source=rnn[2], kind="derived",
                                                 snippet=rnn[1])
    elif fields["model_size_b"] is None and named is not None:
        fields["model_size_b"] = named[0]
        evidence["model_size_b"] = FieldEvidence(value=named[0], raw=fields["model_name"], source="<public model size>",
                                                 kind="derived", snippet=named[1])
    tiers: dict[str, str] = {}
    for fld, ev in evidence.items():
        tier_ev = evidence.get("iterations", ev) if fld == "iteration_type" else ev  # the type is as sure as the count
        tiers[fld] = evidence_tier(fld, tier_ev.kind, tier_ev.source)
    conf = {fld: confidence(fld, tier) for fld, tier in tiers.items() if fields.get(fld) is not None}
    return StaticExtraction(fields=fields, evidence=evidence, launch=launch, files=list(dict.fromkeys(files)),
                            facts=facts, errors=errors, tiers=tiers, confidence=conf)


_PARAMS_OVERRIDE_OPTS = {"params_override", "params_overrides", "config_override", "config_overrides"}


def _params_override(raw: str) -> list[str]:
    """TF Model Garden's `--params_override`: 'a.b=1,c.d=[2,3]' (commas between assignments) or a YAML/JSON
    mapping ('{trainer: {train_steps: 10}}'), as `key=value` overrides."""
    text = raw.strip()
    if text.startswith("{") or (":" in text and "=" not in text):
        try:
            import yaml
            data = yaml.safe_load(text)
        except Exception:  # noqa: BLE001 -- not YAML: try the a=b form
            data = None
        if isinstance(data, dict):
            return [f"{k}={v}" for k, v in codefacts.flat_items(data)]
    parts = re.split(r",\s*(?=[A-Za-z_][\w.]*\s*=)", text)
    return [p.strip() for p in parts if "=" in p]


def _registry_facts(name: str, closure: list[str], parse: Any, facts: list[Fact]) -> bool:
    """Registry-based argument parsing: `--config NAME` selects `CONFIGS[NAME]` (a dict of config objects, or a
    list of them with `name=`) in the entry or a module it imports; its values become config facts."""
    if not re.fullmatch(r"[\w.+-]+", name):
        return False
    for rel in closure:
        res = parse(rel)
        if res is None or name not in res[1]:
            continue
        hit = pyc.registry_entry(res[0], name)
        if hit is None:
            continue
        registry, values, line = hit
        for key, value in codefacts.flat_items(values):
            facts.append(Fact(key, value, rel, f"{registry}[{name!r}]: {key} = {value!r}"[:200], "config"))
        return True
    return False


_VIT_NO_PATCH = re.compile(r"(?i)^vit[_-]?(?:tiny|small|base|large|huge|giant\d?|[tsblhg])$")
_SSL_METHODS = ("dinov2", "dinov3", "dino", "ibot", "esvit", "msn", "ijepa")


def _ssl_method(launch: Launch) -> str | None:
    """The self-distillation method whose package the entry belongs to (`dinov2/run/train/train.py`,
    `python -m dinov2.train`)."""
    top = (launch.entry or launch.module or "").replace(".", "/").split("/")[0].lower()
    return top if top in _SSL_METHODS else None


_OMEGA_MERGE = re.compile(r"OmegaConf\.merge\(\s*\w*default\w*\s*,")


def _omegaconf_default(repo: Path, rel: str, parse: Any) -> str | None:
    """The package default a YAML config is merged over where the code does
    `OmegaConf.merge(default_cfg, OmegaConf.load(args.config_file), OmegaConf.from_cli(opts))` (DINOv2's
    ssl_default_config.yaml): the nearest `*default*.yaml` in the config's folder or one above it, used only
    when a module of the repository merges a default config first and the YAML names no base of its own."""
    if not rel.endswith((".yaml", ".yml")):
        return None
    data = cfgs.load_structured(repo, rel)
    if not isinstance(data, dict) or any(k in data for k in (*cfgs.BASE_KEYS, "defaults")):
        return None
    if not any((res := parse(py)) is not None and _OMEGA_MERGE.search(res[1]) for py in _repo_py_files(repo)
               if "OmegaConf" in (pyc.read_text(repo, py) or "")):
        return None
    folder = Path(rel).parent
    while True:
        cands = sorted(p for p in (repo / folder).glob("*default*.y*ml") if p.is_file() and p.name != Path(rel).name)
        if cands:
            return str(min(cands, key=lambda p: ("config" not in p.name, len(p.name))).relative_to(repo))
        if folder == Path(".") or folder == Path(""):
            return None
        folder = folder.parent


_SCALING_RULE = re.compile(r"^(sqrt|linear)_wrt_(\d+)(?:k)?$", re.I)


def _scaling_rule_lr(facts: list[Fact], launch: Launch, world_size: int | None) -> list[Fact]:
    """A learning rate the code derives from a base rate and the global batch by a named rule (DINOv2
    `optim.scaling_rule: sqrt_wrt_1024`: lr = base_lr x sqrt(batch_size_per_gpu x world / 1024); `linear_wrt_256`
    the linear rule), replacing the YAML's placeholder `lr`."""
    eff = effective(facts)
    rule = next((f for f in eff.values() if f.leaf == "scaling_rule" and isinstance(f.value, str)
                 and _SCALING_RULE.match(f.value.strip())), None)
    if rule is None:
        return []
    parent = rule.key.rpartition(".")[0]
    base = eff.get(f"{parent}.base_lr" if parent else "base_lr")
    per_gpu = max((f for f in eff.values() if f.leaf in PER_DEVICE_BATCH or f.leaf == "batch_size_per_gpu"),
                  key=lambda f: f.rank, default=None)
    n = world_size or runenv.launcher_world(launch)
    b = as_lr(base.value) if base is not None else None
    bs = as_int(per_gpu.value, 1) if per_gpu is not None else None
    if not (b and bs and n):
        return []
    m = _SCALING_RULE.match(rule.value.strip())
    denom = int(m.group(2)) * (1000 if rule.value.strip().lower().endswith("k") else 1) if m is not None else 0
    if m is None or denom <= 0:
        return []
    ratio = bs * n / denom
    lr = float(f"{b * (math.sqrt(ratio) if m.group(1).lower() == 'sqrt' else ratio):.4g}")  # as a log prints it
    assert base is not None  # b was read from it
    why = f"{base.value} x {m.group(1)}({bs} x {n} GPUs / {m.group(2)}) ({rule.value})"
    return [Fact(f"{parent}.lr" if parent else "lr", lr, rule.source, why, "derived")]


_STEPWISE = re.compile(r"^(.*?)(?:^|\.)(stepwise|piecewise_constant|piecewise)\.values$", re.I)


def _schedule_lr(facts: list[Fact]) -> list[Fact]:
    """The peak learning rate of a step schedule stated only as its values (TF Model Garden
    `learning_rate: {type: stepwise, stepwise: {boundaries: [...], values: [0.8, 0.08, ...]}}`): the first
    value, the rate the run trains at after any warm-up. Skipped where the section's `type` names another
    schedule."""
    eff = effective(facts)
    out: list[Fact] = []
    for key, f in eff.items():
        m = _STEPWISE.match(key)
        if m is None or not isinstance(f.value, (list, tuple)) or not f.value:
            continue
        parent = key[: m.start(2)].rstrip(".")
        kind = eff.get(f"{parent}.type" if parent else "type")
        if kind is not None and str(kind.value).lower() != m.group(2).lower():
            continue
        lr = as_lr(f.value[0])
        if lr is None:
            continue
        out.append(Fact(f"{key[: -len('values')]}initial_lr", lr, f.source, f"{f.snippet} -> values[0] = {lr}",
                        f.kind))
    return out


_DETECTRON2 = re.compile(r"^\s*(?:from|import)\s+detectron2\b", re.M)
_MEGATRON_ENTRY = re.compile(r"(?:^|/)pretrain_(?:gpt|bert|t5|mamba|retro|vlm|ict)\w*\.py$")


def _frameworks(repo: Path, launch: Launch, texts: dict[str, str], closure: list[str]) -> list[str]:
    """Frameworks recognised by their launcher (a CLI, a `-m` module, a known entry) or their imports, whose
    data-loader defaults apply where neither the code copied nor a config sets them:
    * HF-Trainer-based CLIs (`llamafactory-cli`, `axolotl`): `TrainingArguments.dataloader_num_workers` 0;
    * detectron2 (`from detectron2 ...`, a yacs `_BASE_` config chain): `DATALOADER.NUM_WORKERS` 4;
    * Megatron-LM's `pretrain_*.py` launched from a script without its parser in the repository: 2;
    * torchtitan (`-m torchtitan.train`): its dataloader runs without worker processes: 0."""
    out: list[str] = []
    head = (launch.cli or launch.module or "").replace("-", "_").lower()
    if re.match(r"(?:llamafactory|llama_factory|axolotl)", head):
        out.append("hf_trainer_cli")
    if head.startswith("torchtitan"):
        out.append("torchtitan")
    if any(_DETECTRON2.search(t) for t in texts.values()):
        out.append("detectron2")
    if (launch.entry and _MEGATRON_ENTRY.search(launch.entry) and not (repo / launch.entry).is_file()
            and not any(_MEGATRON_IMPORT.search(t) for t in texts.values())):
        out.append("megatron")
    return out


_TOKEN_BATCH = frozenset({"max_tokens", "max_tokens_per_batch", "batch_size_tokens", "tokens_per_batch"})


def _repo_dir(repo: Path, path: str) -> str:
    """A folder given as an absolute or variable-prefixed path (`--config-path=/workspace/repo/conf`): the
    longest tail of it that is a folder of the repository (else the path as given)."""
    if not path.startswith(("/", "$")):
        return path
    parts = [p for p in path.split("/") if p and p not in (".", "..")]
    return next(("/".join(parts[i:]) for i in range(1, len(parts)) if (repo / "/".join(parts[i:])).is_dir()), path)


def _script_style(tree: ast.Module) -> bool:
    """A script that trains at module level (a top-level `for step in range(max_steps)` loop): its
    module-level assignments are its configuration, as in a configurator script."""
    return any(isinstance(st, (ast.For, ast.While)) for st in tree.body)


def _task_name(value: str) -> str:
    """A task setting in the core's form: framework task identifiers ('language_modeling', yolo 'segment')
    mapped to the task they train."""
    norm = normalize_task_type(value)
    return TASK_ALIASES.get(norm, norm)


def _flavor(eff: dict[str, Fact], f: Fact) -> str | None:
    """A size variant stated beside a model name in the same section (`flavor`, `variant`, `size`)."""
    if f.leaf not in ("name", "model_name", "model", "arch", "architecture"):
        return None
    parent = f.key.rpartition(".")[0]
    for sib in ("flavor", "variant", "size", "model_size"):
        sf = eff.get(f"{parent}.{sib}" if parent else sib)
        if sf is not None and isinstance(sf.value, str) and re.fullmatch(r"[A-Za-z0-9.][A-Za-z0-9./_-]*", sf.value):
            return sf.value
    return None


def _has_config_function(repo: Path, rel: str, parse: Any) -> bool:
    res = parse(rel)
    return res is not None and getconfig.defines_config_function(res[0]) is not None


def _dims(eff: dict[str, Fact], model_name: str | None = None) -> tuple[float, str, str] | None:
    """(size in billions, formula, source) from stated layers x hidden size (+ vocabulary)."""
    found: dict[str, tuple[int, Fact]] = {}
    for group in ("n_layer", "d_model", "vocab"):
        best = None
        for f, spec in _candidates(eff, group):
            if re.search(r"(^|[._])(vision|text|image|decoder|encoder|head|mlp|ffn|proj)", f.key.lower()) and group != "vocab":
                continue  # one tower of a multi-tower model, or a sub-module width
            v = as_int(f.value, 1)
            if v is not None and (best is None or (f.rank, spec) > (best[1].rank, best[2])):
                best = (v, f, spec)
        if best is not None:
            found[group] = (best[0], best[1])
    if "n_layer" not in found or "d_model" not in found:
        return None
    (L, _fl), (h, fh) = found["n_layer"], found["d_model"]
    if not (1 <= L <= 200 and 64 <= h <= 65536):
        return None
    vocab, fv = found.get("vocab", (None, None))
    if fv is not None and fv.rank < RANK["constant"]:
        vocab = None  # a class default (nanoGPT's 50304) is often replaced at run time (a char-level vocab)
    if fv is None and model_name:
        vocab = family_vocab(model_name)  # no vocabulary stated: the named family's tokenizer
    arch = _arch_extras(eff, fh, h, model_name)
    size = size_from_dims(L, h, vocab, **arch)
    if not arch:
        why = f"12*{L}*{h}^2" + (f" + {vocab}*{h}" if vocab else "") + f" = {size:.3g}B"
    else:
        why = (f"L={L} h={h}" + "".join(f" {k}={v}" for k, v in arch.items()) + (f" vocab={vocab}" if vocab else "")
               + f" = {size:.3g}B")
    return size, why, fh.source


# architecture keys beyond depth and width, by normalised leaf (HF config.json, Megatron flags, Meta/torchtitan
# ModelArgs, nanotron/llm-foundry YAML, fairseq/T5)
_FFN_KEYS = ("intermediate_size", "ffn_hidden_size", "ffn_dim", "d_ff", "dim_feedforward", "n_inner", "mlp_dim",
             "ffn_embed_dim", "encoder_ffn_embed_dim", "ffn_size", "mlp_hidden_dim", "hidden_dim")
_HEAD_KEYS = ("num_attention_heads", "n_head", "n_heads", "num_heads", "encoder_attention_heads", "nhead")
_KV_KEYS = ("num_key_value_heads", "n_kv_heads", "num_kv_heads", "num_query_groups", "n_kv_head", "kv_heads")
_TIE_KEYS = ("tie_word_embeddings", "tie_embeddings", "tied_embeddings", "weight_tying", "share_embeddings",
             "tie_embedding", "share_decoder_input_output_embed", "share_all_embeddings")
_UNTIE_KEYS = ("untie_embeddings_and_output_weights",)
_ACT_KEYS = ("hidden_act", "activation", "activation_function", "ffn_act", "mlp_type", "ffn_type", "act_fn",
             "hidden_activation", "feed_forward_proj", "mlp_activation", "swiglu", "gated_linear_unit", "glu")
_DEC_KEYS = ("num_decoder_layers", "decoder_layers", "n_decoder_layers", "dec_layers")
_GATED_ACT = re.compile(r"silu|swi-?glu|ge-?glu|gated|reglu|swish", re.I)
_GATED_FAMILIES = re.compile(r"^(?:code|tiny)?llama|^mi[sx]tral|^qwen|^gemma|^olmo|^deepseek|^smollm|^phi-3|^phi-4")


def _arch_extras(eff: dict[str, Fact], width: Fact, h: int, model_name: str | None) -> dict[str, Any]:
    """FFN width, heads and key/value heads, gating, tied embeddings and decoder depth stated in the same
    section as the width (keys of another tower or sub-module are skipped); {} when none is stated."""
    parent = width.key.rpartition(".")[0]

    def stated(leaves: tuple[str, ...]) -> Fact | None:
        best = None
        for f in eff.values():
            if f.leaf in leaves and f.key.rpartition(".")[0] == parent and (best is None or f.rank > best.rank):
                best = f
        return best

    out: dict[str, Any] = {}
    ffn_f = stated(_FFN_KEYS)
    ffn = as_int(ffn_f.value, 1) if ffn_f is not None else None
    if ffn is not None and ffn_f is not None and ffn_f.leaf == "hidden_dim" and width.leaf == "hidden_dim":
        ffn = None
    mult = stated(("multiple_of",))
    if ffn is None and mult is not None and (multiple := as_int(mult.value, 1)):  # Meta's Llama ModelArgs / torchtitan
        fdm = stated(("ffn_dim_multiplier",))
        ffn = llama_ffn(h, multiple, parse_number(fdm.value) if fdm is not None else None)
        out["gated"] = True
    if ffn is not None and 0.5 * h <= ffn <= 16 * h:
        out["ffn"] = ffn
    heads_f, kv_f = stated(_HEAD_KEYS), stated(_KV_KEYS)
    heads = as_int(heads_f.value, 1) if heads_f is not None else None
    kv = as_int(kv_f.value, 1) if kv_f is not None else None
    if heads and kv and kv < heads and heads % kv == 0:
        out["heads"], out["kv_heads"] = heads, kv
    act = stated(_ACT_KEYS)
    if act is not None:
        gated = act.value is True or (isinstance(act.value, str) and _GATED_ACT.search(act.value) is not None)
        out["gated"] = out.get("gated", False) or gated
    elif "gated" not in out and "ffn" in out:
        ratio = out["ffn"] / h
        out["gated"] = not 3.9 <= ratio <= 4.1 or bool(model_name and _GATED_FAMILIES.match(model_name))
    tie, untie = stated(_TIE_KEYS), stated(_UNTIE_KEYS)
    if tie is not None and isinstance(tie.value, bool):
        out["tied"] = tie.value
    elif untie is not None and isinstance(untie.value, bool):
        out["tied"] = not untie.value
    elif out.get("gated") and not (model_name and model_name.startswith("gemma")):
        out["tied"] = False  # Llama-style models keep a separate output head unless they say otherwise
    dec = stated(_DEC_KEYS)
    if dec is not None and as_int(dec.value, 1):
        out["decoder_layers"] = as_int(dec.value, 1)
    return out


_MM_SETTING = re.compile(r"^\d+x(?:b\d+)?(?:-|$)|^\d+(?:e|k|ep|ki)$|^(?:ms|mstrain|amp|fp16|lsj)(?:-|$)|"
                         r"^(?:coco|voc|cityscapes|ade20k|ade|imagenet|in1k|lvis|objects365|pascal|kitti)", re.I)


def _openmmlab_model(stem: str) -> tuple[str, str] | None:
    """(canonical, as written) of the model an OpenMMLab config file name states, if a known family."""
    parts: list[str] = []
    for tok in stem.split("_"):
        if _MM_SETTING.match(tok):
            break
        parts.append(tok)
    if not parts:
        return None
    written = "_".join(parts)
    hit = find_known_model(written)
    if hit is None or not normalize_model_name(parts[0]).startswith(hit[0].split("-")[0]):
        return None
    return canonical_model(written.replace("_", "-")), written


def _word_lm_size(eff: dict[str, Fact], fields: dict[str, Any]) -> tuple[float, str, str] | None:
    """A word-level LM sized by `--emsize/--nhid/--nlayers` and a public corpus's vocabulary."""
    by_leaf = {f.leaf: f for f in sorted(eff.values(), key=lambda f: f.rank)}
    em = next((as_int(by_leaf[k].value, 1) for k in ("emsize", "emb_size", "embedding_dim") if k in by_leaf), None)
    hid = next((as_int(by_leaf[k].value, 1) for k in ("nhid", "hidden_size") if k in by_leaf), None)
    layers = next((as_int(by_leaf[k].value, 1) for k in ("nlayers", "num_layers", "n_layers") if k in by_leaf), None)
    vocab = WORD_VOCAB.get(str(fields.get("dataset")))
    kind = next((str(by_leaf[k].value) for k in ("model", "rnn_type", "model_type") if k in by_leaf), "")
    if not (em and hid and layers and vocab):
        return None
    tied = by_leaf.get("tied") is not None and by_leaf["tied"].value is True
    size = recurrent_lm_size(kind, vocab, em, hid, layers, tied)
    if size is None:
        return None
    why = f"{kind} word LM: vocab {vocab} ({fields['dataset']}) x {em} + {layers} x {hid}" + (" tied" if tied else "")
    return size, why, by_leaf["nhid" if "nhid" in by_leaf else "hidden_size"].source


def _hint_models(eff: dict[str, Fact], launch: Launch, texts: dict[str, str],
                 config_files: Sequence[str] = ()) -> Iterator[tuple[str, str, str, str]]:
    """Well-known models named in launch values, launch scripts, the entry's docs or the README, in order."""
    ordered = sorted((f for f in eff.values() if isinstance(f.value, str)), key=lambda f: -f.rank)
    for f in ordered:
        if _TOKENIZER.search(f.key) or _TOKENIZER.search(f.value):
            continue  # 'gpt2-vocab.json' names a tokenizer, not the model
        if f.kind in ("cli", "env", "config", "constant"):
            hit = find_known_model(f.value)
            if hit:
                yield hit[0], hit[1], f.source, f"name:{f.kind}"
    for name, value in launch.shell_vars.items():
        if _TOKENIZER.search(name) or _TOKENIZER.search(value):
            continue
        hit = find_known_model(value)
        if hit:
            yield hit[0], hit[1], launch.args_source, "name:shell"
    for src in reversed(config_files):  # a configuration file named after its model (mask_rcnn_R_50_FPN_3x.yaml)
        hit = find_known_model(Path(src).stem)
        if hit:
            yield hit[0], hit[1], src, "name:config file"
    for src, text in launch.texts.items():  # a launch script named after its model with its size
        hit = find_known_model(Path(src).stem) if src != "<command>" else None  # (pretrain_gpt_1.3b.sh) is more
        if hit and size_from_name(hit[0]) is not None:  # specific than the prose in its comments ('GPT-3')
            yield hit[0], hit[1], src, "name:script file"
        hit = find_known_model(" ".join(re.findall(r"#\s*(.*)", text)) + " " + src)
        if hit:
            yield hit[0], hit[1], src, "name:comment"
    if launch.entry and launch.entry in texts:
        hit = find_known_model(Path(launch.entry).stem)  # dlrm_s_pytorch.py
        if hit:
            yield hit[0], hit[1], launch.entry, "name:entry file"
        doc = re.match(r'\s*(?:"""|\'\'\')(.*?)(?:"""|\'\'\')', texts[launch.entry], re.S)
        if doc:
            hit = find_known_model(doc.group(1))
            if hit:
                yield hit[0], hit[1], launch.entry, "name:docstring"


def _hint_model(eff: dict[str, Fact], launch: Launch, texts: dict[str, str],
                config_files: Sequence[str] = ()) -> tuple[str, str, str, str] | None:
    """The first well-known model named (`_hint_models`); a name without a size (`/ckpt/gpt3`) gives way to a
    later mention of the same family that states one (`train_gpt3_175b_distributed.sh`)."""
    first = None
    for hit in _hint_models(eff, launch, texts, config_files):
        if first is None:
            first = hit
            if size_from_name(hit[0]) is not None:
                return hit
            continue
        if size_from_name(hit[0]) is not None and hit[0].startswith(first[0] + "-"):
            return hit
    return first


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
                m = re.search(rx, text)  # cues say (?i) where case does not matter
                if m:
                    gain = weight * w
                    scores[task] = scores.get(task, 0.0) + gain
                    if gain > why.get(task, (0.0, "", ""))[0]:
                        why[task] = (gain, src, m.group(0))
    if not scores:
        return None, ("", "")
    task = max(scores, key=lambda t: scores[t])
    return task, (why[task][1], f"{why[task][2]} (score {scores[task]:.1f})")
