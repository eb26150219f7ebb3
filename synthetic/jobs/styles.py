"""How a generated project states its hyper-parameters: argparse, YAML, Hydra, constants modules.

A program (programs.py) declares `Param`s; a style decides their names, where each value lives
(parser defaults, config files, constants, launch-command overrides, environment variables) and
returns a `StyleOut`: the Python expression that reads each value, code to paste into the training
script, config files, and the arguments/environment the launcher must pass. Every value that is a
label (batch size, learning rate, iterations, workers, model, dataset) is recorded as *evidence*:
the file and the exact text where a careful reader finds the value that actually takes effect.
"""

from __future__ import annotations

import json
import random
import string
import textwrap
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Ctx", "Param", "StyleOut", "fill", "fmt_float", "py_lit", "sh_lit", "yaml_lit", "STYLES"]


class _T(string.Template):
    delimiter = "§"


def fill(text: str, **kw: Any) -> str:
    """Dedent `text` and substitute §name / §{name} placeholders (all must be given)."""
    return _T(textwrap.dedent(text).lstrip("\n")).substitute(**kw)


def indent(block: str, n: int) -> str:
    pad = " " * n
    return "\n".join(pad + line if line.strip() else line for line in block.splitlines())


def fmt_float(x: float, *, yaml: bool = False) -> str:
    """0.1 -> '0.1', 2e-05 -> '2e-5' ('2.0e-5' for YAML 1.1, which needs the dot)."""
    if x == 0:
        return "0.0"
    if 1e-3 <= abs(x) < 1e5:
        text = f"{x:.6g}"
        return text if "." in text or "e" in text else text + ".0"
    mant, exp = f"{x:.2e}".split("e")
    mant = mant.rstrip("0").rstrip(".")
    exp_i = int(exp)
    if yaml and "." not in mant:
        mant += ".0"
    return f"{mant}e{exp_i}" if exp_i < 0 or not yaml else f"{mant}e+{exp_i}"


def py_lit(v: Any) -> str:
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, float):
        return fmt_float(v)
    if isinstance(v, str):
        return json.dumps(v)
    if v is None:
        return "None"
    return repr(v)


def yaml_lit(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return fmt_float(v, yaml=True)
    if v is None:
        return "null"
    if isinstance(v, str):
        if v == "" or any(c in v for c in ":#{}[],&*!|>'\"%@`") or v.lower() in ("true", "false", "null", "yes", "no"):
            return json.dumps(v)
        return v
    return str(v)


def sh_lit(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return fmt_float(v)
    return str(v)


# semantic key -> names people use for it
NAMES: dict[str, tuple[str, ...]] = {
    "model": ("model", "arch", "model_name", "backbone"),
    "data_path": ("data_dir", "data_path", "data_root", "dataset_dir"),
    "dataset": ("dataset", "dataset_name"),
    "batch_size": ("batch_size", "bs", "train_batch_size", "batch_size_per_gpu"),
    "lr": ("lr", "learning_rate", "base_lr"),
    "epochs": ("epochs", "num_epochs", "max_epochs"),
    "max_steps": ("max_steps", "total_steps", "train_steps", "max_iters"),
    "workers": ("workers", "num_workers", "dataloader_workers"),
    "weight_decay": ("weight_decay", "wd"),
    "img_size": ("img_size", "image_size", "input_size"),
    "seq_len": ("seq_len", "max_seq_length", "max_length"),
    "warmup": ("warmup_epochs", "warmup"),
    "warmup_steps": ("warmup_steps", "warmup_iters"),
    "output_dir": ("output_dir", "out_dir", "save_dir"),
    "log_interval": ("log_interval", "print_freq", "log_every"),
}

GROUP_NAMES = {
    "model": ("model",),
    "data": ("data", "dataset"),
    "train": ("train", "training", "solver"),
    "optim": ("optim", "optimizer"),
    "misc": ("misc", "runtime"),
}


@dataclass
class Param:
    key: str  # semantic key
    value: Any
    group: str = "train"  # model / data / train / optim / misc
    help: str = ""
    names: tuple[str, ...] = ()  # name candidates; default NAMES[key] or (key,)
    truth: str | None = None  # WorkloadMetadata field this value is the label of
    decoys: tuple[Any, ...] = ()  # plausible wrong values (stale defaults, other configs)
    choices: tuple[str, ...] | None = None


@dataclass
class StyleOut:
    acc: dict[str, str]  # key -> python expression reading the value
    header: str = ""  # import lines for the training script
    setup_fn: str = ""  # top-level functions for the training script
    main_sig: str = "def main():"
    main_setup: str = ""  # first statements of main()
    cli: list[str] = field(default_factory=list)  # arguments the launcher passes to the entry script
    env: dict[str, str] = field(default_factory=dict)  # variables the launcher exports
    files: dict[str, str] = field(default_factory=dict)


@dataclass
class Ctx:
    """Everything a repository render shares: the config, a layout RNG, files and bookkeeping."""

    cfg: Any  # WorkloadConfig
    rng: random.Random
    files: dict[str, str | bytes] = field(default_factory=dict)
    traps: list[str] = field(default_factory=list)
    evidence: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # field -> (path, snippet, literal)
    launcher_file: str = "<command>"  # where CLI args end up (set by the launcher choice)
    underscores: bool = False  # argparse flags as --batch_size instead of --batch-size
    model_var: str = "model"
    _names: dict[str, str] = field(default_factory=dict)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def name(self, param: Param) -> str:
        if param.key not in self._names:
            options = param.names or NAMES.get(param.key, (param.key,))
            self._names[param.key] = self.rng.choice(options)
        return self._names[param.key]

    def trap(self, kind: str) -> None:
        if kind not in self.traps:
            self.traps.append(kind)

    def note(self, param: Param, path: str, snippet: str, literal: str) -> None:
        """Record where the effective value of a label lives: `literal` is the value as written."""
        if param.truth:
            if literal not in snippet:
                raise AssertionError(f"evidence literal {literal!r} not in snippet {snippet!r}")
            self.evidence[param.truth] = (path, snippet, literal)


def _decoy(ctx: Ctx, p: Param) -> Any:
    options = [d for d in p.decoys if d != p.value]
    if options:
        return ctx.rng.choice(options)
    v = p.value
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return ctx.rng.choice([x for x in (v * 2, max(1, v // 2), v + 10) if x != v] or [v + 1])
    if isinstance(v, float):
        return ctx.rng.choice((v * 2, v / 2, v * 10))
    return v


def _flag(ctx: Ctx, name: str) -> str:
    return "--" + (name if ctx.underscores else name.replace("_", "-"))


def _py_type(v: Any) -> str:
    return {bool: "bool", int: "int", float: "float"}.get(type(v), "str")


# --------------------------------------------------------------------------------------------- argparse


def argparse_style(ctx: Ctx, params: list[Param], *, cli_share: float = 0.3, description: str = "Training") -> StyleOut:
    rng = ctx.rng
    in_file = rng.choice(("train", "train", "opts.py", "utils/args.py"))
    grouped = ctx.chance(0.4)
    lines: list[str] = []
    cli: list[str] = []
    acc: dict[str, str] = {}
    parser_path = "§TRAIN§" if in_file == "train" else in_file
    groups_seen: dict[str, str] = {}
    override_count = 0
    for p in params:
        name = ctx.name(p)
        flag = _flag(ctx, name)
        acc[p.key] = f"args.{name}"
        on_cli = bool(p.truth) and rng.random() < cli_share
        if not p.truth and rng.random() < 0.08:
            on_cli = True
        default = p.value
        if on_cli and p.truth and rng.random() < 0.6:
            default = _decoy(ctx, p)
        target = "parser"
        if grouped:
            gname = {"model": "model", "data": "data", "train": "training", "optim": "optimization"}.get(p.group, "misc")
            if gname not in groups_seen:
                var = f"g_{gname}"
                groups_seen[gname] = var
                lines.append(f'{var} = parser.add_argument_group("{gname}")')
            target = groups_seen[gname]
        short = ""
        if name in ("batch_size", "bs") and rng.random() < 0.3:
            short = '"-b", '
        elif name == "workers" and rng.random() < 0.5:
            short = '"-j", '
        help_txt = json.dumps(p.help or name.replace("_", " "))
        if isinstance(p.value, bool):
            if p.value:
                line = f'{target}.add_argument({short}"{flag}", action="store_true", help={help_txt})'
                cli.append(flag)
            else:
                line = f'{target}.add_argument({short}"{flag}", action="store_true", help={help_txt})'
            lines.append(line)
            continue
        choices = f", choices={list(p.choices)!r}" if p.choices else ""
        line = (
            f'{target}.add_argument({short}"{flag}", type={_py_type(p.value)}, default={py_lit(default)}'
            f"{choices}, help={help_txt})"
        )
        lines.append(line)
        if on_cli:
            cli += [flag, sh_lit(p.value)]
            ctx.note(p, "§LAUNCH§", f"{flag} {sh_lit(p.value)}", sh_lit(p.value))
            if default != p.value:
                override_count += 1
        else:
            ctx.note(p, parser_path, f'"{flag}", type={_py_type(p.value)}, default={py_lit(default)}', py_lit(default))
    if override_count:
        ctx.trap("cli_override")
    body = "\n".join("    " + ln for ln in lines)
    fn = (
        "def get_args():\n"
        f"    parser = argparse.ArgumentParser(description={json.dumps(description)})\n"
        f"{body}\n"
        "    return parser.parse_args()\n"
    )
    out = StyleOut(acc=acc, cli=cli, main_setup="args = get_args()")
    if in_file == "train":
        out.header = "import argparse"
        out.setup_fn = fn
    else:
        module = in_file[:-3].replace("/", ".")
        out.header = f"from {module} import get_args"
        out.files[in_file] = f'"""Command-line options."""\n\nimport argparse\n\n\n{fn}'
        if in_file.startswith("utils/"):
            out.files.setdefault("utils/__init__.py", "")
    return out


# --------------------------------------------------------------------------------------------- yaml


def _yaml_doc(sections: dict[str, dict[str, Any]], top: dict[str, Any], comment: str = "") -> str:
    out = [f"# {comment}"] if comment else []
    for k, v in top.items():
        out.append(f"{k}: {yaml_lit(v)}")
    for sec, values in sections.items():
        if not values:
            continue
        out.append(f"{sec}:")
        for k, v in values.items():
            out.append(f"  {k}: {yaml_lit(v)}")
    return "\n".join(out) + "\n"


def yaml_style(ctx: Ctx, params: list[Param], *, exp_name: str, decoy_doc: str | None = None) -> StyleOut:
    rng = ctx.rng
    groups = {g: rng.choice(opts) for g, opts in GROUP_NAMES.items()}
    attr_access = ctx.chance(0.5)
    folder = rng.choice(("configs", "configs", "config", "cfg"))
    exp_path = f"{folder}/{exp_name}.yaml"
    use_base = ctx.chance(0.35)
    cli_override = ctx.chance(0.25)
    sections: dict[str, dict[str, Any]] = {}
    base_sections: dict[str, dict[str, Any]] = {}
    acc: dict[str, str] = {}
    cli_opts: list[str] = []
    truth_params = [p for p in params if p.truth]
    override_key = rng.choice(truth_params).key if cli_override and truth_params else None
    for p in params:
        name = ctx.name(p)
        group = p.group
        if p.key == "batch_size" and rng.random() < 0.3:
            group = "data"
        sec = groups[group]
        acc[p.key] = f"cfg.{sec}.{name}" if attr_access else f"cfg['{sec}']['{name}']"
        value = p.value
        if p.key == override_key:
            value = _decoy(ctx, p)
            cli_opts.append(f"{sec}.{name}={sh_lit(p.value)}")
            ctx.note(p, "§LAUNCH§", f"{sec}.{name}={sh_lit(p.value)}", sh_lit(p.value))
            ctx.trap("cli_override")
        if use_base:
            base_val = _decoy(ctx, p) if p.truth and rng.random() < 0.5 else value
            base_sections.setdefault(sec, {})[name] = base_val
            if base_val != value or rng.random() < 0.3:
                sections.setdefault(sec, {})[name] = value
                if p.key != override_key:
                    ctx.note(p, exp_path, f"{name}: {yaml_lit(value)}", yaml_lit(value))
            elif p.key != override_key:
                ctx.note(p, f"{folder}/base.yaml", f"{name}: {yaml_lit(value)}", yaml_lit(value))
        else:
            sections.setdefault(sec, {})[name] = value
            if p.key != override_key:
                ctx.note(p, exp_path, f"{name}: {yaml_lit(value)}", yaml_lit(value))
    files: dict[str, str] = {}
    top: dict[str, Any] = {}
    if use_base:
        top["base"] = f"{folder}/base.yaml"
        files[f"{folder}/base.yaml"] = _yaml_doc(base_sections, {}, "shared defaults; experiment files override")
    files[exp_path] = _yaml_doc(sections, top, f"experiment: {exp_name}")
    if decoy_doc is not None:  # first line: the old experiment's name; the rest: its yaml
        old = rng.choice(("old", "legacy", "archive"))
        doc_name, _, doc_body = decoy_doc.partition("\n")
        files[f"{folder}/{old}/{doc_name}.yaml"] = f"# {doc_name}: earlier experiment, kept for reference\n{doc_body}"
        ctx.trap("dead_config")
    loader = fill(
        '''
        def _merge(base, override):
            out = dict(base)
            for key, value in override.items():
                if isinstance(value, dict) and isinstance(out.get(key), dict):
                    out[key] = _merge(out[key], value)
                else:
                    out[key] = value
            return out


        def load_config(path, overrides=()):
            with open(path) as f:
                cfg = yaml.safe_load(f) or {}
            base = cfg.pop("base", None)
            if base:
                cfg = _merge(load_config(base), cfg)
            for item in overrides:
                dotted, raw = item.split("=", 1)
                node = cfg
                *parents, leaf = dotted.split(".")
                for key in parents:
                    node = node.setdefault(key, {})
                node[leaf] = yaml.safe_load(raw)
            return §wrap


        def get_args():
            parser = argparse.ArgumentParser()
            parser.add_argument("--config", required=True, help="path to the experiment yaml")
            parser.add_argument("--opts", nargs="*", default=[], help="dotted overrides, e.g. train.lr=0.1")
            return parser.parse_args()
        ''',
        wrap="ConfigDict(cfg)" if attr_access else "cfg",
    )
    if attr_access:
        loader = fill(
            '''
            class ConfigDict(dict):
                """dict with attribute access, recursively."""

                def __init__(self, data):
                    super().__init__({k: ConfigDict(v) if isinstance(v, dict) else v for k, v in data.items()})

                def __getattr__(self, name):
                    try:
                        return self[name]
                    except KeyError as exc:
                        raise AttributeError(name) from exc


            '''
        ) + loader
    cli = ["--config", exp_path]
    if cli_opts:
        cli += ["--opts", *cli_opts]
    return StyleOut(
        acc=acc, header="import argparse\nimport yaml", setup_fn=loader,
        main_setup="args = get_args()\ncfg = load_config(args.config, args.opts)", cli=cli, files=files,
    )


# --------------------------------------------------------------------------------------------- hydra


def hydra_style(
    ctx: Ctx, params: list[Param], *, names: dict[str, str], alt_files: dict[str, str] | None = None
) -> StyleOut:
    """conf/config.yaml with a defaults list; groups model/dataset/optim/trainer in their own files.

    `names` gives the option names: {"model": "vit_l16", "dataset": "imagenet", "optim": "adamw"}.
    `alt_files` are other options of the groups (unused by this job: conf/dataset/cifar10.yaml).
    """
    rng = ctx.rng
    group_dir = {"model": "model", "data": "dataset", "optim": "optim", "train": "trainer", "misc": None}
    values: dict[str | None, dict[str, Any]] = {}
    acc: dict[str, str] = {}
    for p in params:
        name = ctx.name(p)
        g = group_dir[p.group]
        values.setdefault(g, {})[name] = p.value
        acc[p.key] = f"cfg.{g}.{name}" if g else f"cfg.{name}"
    use_experiment = ctx.chance(0.4)
    truth_params = [p for p in params if p.truth and group_dir[p.group]]
    n_over = rng.choice((0, 1, 1, 2, 3)) if not use_experiment else 0
    overridden = rng.sample(truth_params, min(n_over, len(truth_params)))
    exp_overrides = rng.sample(truth_params, min(rng.choice((1, 2, 3)), len(truth_params))) if use_experiment else []
    shown = {g: dict(v) for g, v in values.items()}  # what the group files say
    cli: list[str] = []
    exp_name = f"{names['model']}_{names['dataset']}"
    exp_lines = ["# @package _global_", f"# {exp_name}: settings used for the reported run", "defaults:",
                 f"  - override /model: {names['model']}", f"  - override /dataset: {names['dataset']}", ""]
    exp_groups: dict[str, list[str]] = {}
    for p in params:
        g = group_dir[p.group]
        name = ctx.name(p)
        file = f"conf/{g}/{'default' if g == 'trainer' else names.get(g, 'default')}.yaml" if g else "conf/config.yaml"
        if p in overridden:
            shown[g][name] = _decoy(ctx, p)
            cli.append(f"{g}.{name}={sh_lit(p.value)}")
            ctx.note(p, "§LAUNCH§", f"{g}.{name}={sh_lit(p.value)}", sh_lit(p.value))
            ctx.trap("cli_override")
        elif p in exp_overrides:
            assert g is not None  # experiment overrides are truth parameters, which all have a group
            shown[g][name] = _decoy(ctx, p)
            exp_groups.setdefault(g, []).append(f"  {name}: {yaml_lit(p.value)}")
            ctx.note(p, f"conf/experiment/{exp_name}.yaml", f"{name}: {yaml_lit(p.value)}", yaml_lit(p.value))
        else:
            ctx.note(p, file, f"{name}: {yaml_lit(p.value)}", yaml_lit(p.value))
    files: dict[str, str] = {}
    top = shown.pop(None, {})
    defaults = ["defaults:", f"  - model: {names['model']}", f"  - dataset: {names['dataset']}",
                f"  - optim: {names.get('optim', 'default')}", "  - trainer: default", "  - _self_", ""]
    files["conf/config.yaml"] = "\n".join(defaults) + "\n".join(f"{k}: {yaml_lit(v)}" for k, v in top.items()) + "\n"
    for g, vals in shown.items():
        assert g is not None  # the group-less values were popped into `top`
        fname = "default" if g == "trainer" else names.get(g, "default")
        files[f"conf/{g}/{fname}.yaml"] = "".join(f"{k}: {yaml_lit(v)}\n" for k, v in vals.items())
    if use_experiment:
        for g, lines in exp_groups.items():
            exp_lines.append(f"{g}:")
            exp_lines += lines
        files[f"conf/experiment/{exp_name}.yaml"] = "\n".join(exp_lines) + "\n"
        cli.insert(0, f"+experiment={exp_name}")
    for path, text in (alt_files or {}).items():
        files[path] = text
        ctx.trap("dead_config")
    return StyleOut(
        acc=acc,
        header="import hydra\nfrom omegaconf import DictConfig, OmegaConf",
        main_sig='@hydra.main(config_path="conf", config_name="config", version_base=None)\ndef main(cfg: DictConfig):',
        main_setup='print(OmegaConf.to_yaml(cfg))',
        cli=cli,
        files=files,
    )


# --------------------------------------------------------------------------------------------- constants


def constants_style(ctx: Ctx, params: list[Param], *, legacy_values: dict[str, Any] | None = None) -> StyleOut:
    """Values spread over config/*.py modules (one per group), optionally env-overridable."""
    rng = ctx.rng
    pkg = rng.choice(("config", "settings", "conf_py"))
    files_by_group = {
        "model": rng.choice(("model_cfg", "model_settings")), "data": rng.choice(("data_cfg", "paths")),
        "train": rng.choice(("train_cfg", "hparams", "schedule")), "optim": rng.choice(("optim_cfg", "hparams")),
        "misc": "runtime",
    }
    env_key = None
    truth_params = [p for p in params if p.truth and not isinstance(p.value, str)]
    if truth_params and ctx.chance(0.3):
        env_key = rng.choice(truth_params).key
    modules: dict[str, list[str]] = {}
    acc: dict[str, str] = {}
    env: dict[str, str] = {}
    imports: dict[str, list[str]] = {}
    alias_import = ctx.chance(0.4)
    for p in params:
        const = ctx.name(p).upper()
        mod = files_by_group[p.group]
        path = f"{pkg}/{mod}.py"
        if p.key == env_key:
            caster = _py_type(p.value)
            default = _decoy(ctx, p) if rng.random() < 0.7 else p.value
            line = f'{const} = {caster}(os.environ.get("{const}", {py_lit(default)}))'
            env[const] = sh_lit(p.value)
            ctx.note(p, "§LAUNCH§", f"{const}={sh_lit(p.value)}", sh_lit(p.value))
            if default != p.value:
                ctx.trap("env_override")
            modules.setdefault(mod, []).append(line)
        else:
            comment = f"  # {p.help}" if p.help and rng.random() < 0.5 else ""
            line = f"{const} = {py_lit(p.value)}{comment}"
            modules.setdefault(mod, []).append(line)
            ctx.note(p, path, f"{const} = {py_lit(p.value)}", py_lit(p.value))
        imports.setdefault(mod, []).append(const)
        acc[p.key] = f"{mod}.{const}" if alias_import else const
    files: dict[str, str] = {f"{pkg}/__init__.py": '"""Project configuration, split by concern."""\n'}
    for mod, lines in modules.items():
        head = "import os\n\n" if any("os.environ" in ln for ln in lines) else ""
        doc = {"model_cfg": "Model settings.", "model_settings": "Model settings.", "data_cfg": "Data settings.",
               "paths": "Dataset paths and loading.", "train_cfg": "Training schedule.", "hparams": "Hyper-parameters.",
               "schedule": "Training schedule.", "optim_cfg": "Optimizer settings.", "runtime": "Runtime settings."}[mod]
        files[f"{pkg}/{mod}.py"] = f'"""{doc}"""\n\n{head}' + "\n".join(lines) + "\n"
    if legacy_values:
        body = "\n".join(f"{k} = {py_lit(v)}" for k, v in legacy_values.items())
        files[f"{pkg}/legacy.py"] = f'"""Settings of the first baseline (kept for reference, not imported)."""\n\n{body}\n'
        ctx.trap("dead_code")
    if alias_import:
        header = "\n".join(f"from {pkg} import {mod}" for mod in imports)
    else:
        header = "\n".join(f"from {pkg}.{mod} import {', '.join(names)}" for mod, names in imports.items())
    return StyleOut(acc=acc, header=header, env=env, files=files)


STYLES = ("argparse", "yaml", "hydra", "constants", "hf_args", "megatron", "ultralytics")
