"""What the launch environment decides beyond the arguments: process counts, env files, flag files.

* `world_size(repo, launch)`: processes the launch starts (torchrun `--nproc_per_node` x `--nnodes`,
  deepspeed `--num_gpus`, accelerate `--num_processes` or its `--config_file`, a SLURM allocation);
* `expand_flagfiles`: absl `--flagfile=x.cfg` replaced by the file's flags, so later flags win;
* `load_dotenv`: python-dotenv's `.env`, under what the launcher exports;
* `interpolate`: OmegaConf `${oc.env:VAR,default}` and `${a.b}` values resolved.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from schedmate.agents.advisor import configs as cfgs
from schedmate.agents.advisor import pyconfig as pyc
from schedmate.agents.advisor.facts import Fact, as_int, effective
from schedmate.agents.advisor.launch import Launch

__all__ = ["accelerate_world", "expand_flagfiles", "interpolate", "launcher_world", "load_dotenv", "sbatch_world",
           "world_size"]


def world_size(repo: Path, launch: Launch) -> int | None:
    """Processes the launch itself states, if any (the scheduler's GPU count takes precedence)."""
    return launcher_world(launch) or accelerate_world(repo, launch) or sbatch_world(launch)


def launcher_world(launch: Launch) -> int | None:
    """Processes a torchrun-style launcher starts (`--nproc_per_node` x `--nnodes`), if stated."""
    opts: dict[str, str] = {}
    args = launch.launcher_args
    for i, tok in enumerate(args):
        key, eq, val = tok.partition("=")
        if not eq and i + 1 < len(args):
            val = args[i + 1]
        opts[key.lstrip("-").replace("-", "_")] = val
    per = as_int(opts.get("nproc_per_node") or opts.get("num_gpus"), 1)  # torchrun / deepspeed, per node
    if per:
        return per * (as_int(opts.get("nnodes") or opts.get("num_nodes"), 1) or 1)
    return as_int(opts.get("num_processes"), 1)  # accelerate: processes over all machines


_INTERP = re.compile(r"^\$\{\s*([^{}]+?)\s*\}$")


def interpolate(facts: list[Fact], env: dict[str, str]) -> list[Fact]:
    """OmegaConf values that are one interpolation: `${oc.env:LR,6e-5}` / `${env:LR}` take the launcher's
    environment (else the default), `${model.micro_batch_size}` the value that key has (absolute keys)."""
    eff = effective(facts)
    out: list[Fact] = []
    for f in facts:
        m = _INTERP.match(f.value) if isinstance(f.value, str) else None
        if m is None:
            out.append(f)
            continue
        ref = m.group(1)
        resolver, colon, arg = ref.partition(":")
        value: Any = None
        kind = f.kind
        if colon and resolver in ("oc.env", "env"):
            var, _, default = arg.partition(",")
            if var.strip() in env:
                value, kind = env[var.strip()], "env" if f.kind != "cli" else f.kind
            elif default.strip():
                value = default.strip().strip("'\"")
        elif not colon and ref in eff and eff[ref] is not f and not (isinstance(eff[ref].value, str)
                                                                      and _INTERP.match(eff[ref].value)):
            value = eff[ref].value
        if value is None:
            out.append(f)
            continue
        value = cfgs.parse_override_value(value) if isinstance(value, str) else value
        out.append(Fact(f.key, value, f.source, f"{f.snippet} -> {value!r}"[:200], kind))
    return out


def expand_flagfiles(repo: Path, args: list[str], depth: int = 0) -> list[str]:
    """absl `--flagfile=x.cfg`: the file's flags (one per line) take its place, so later flags win."""
    out: list[str] = []
    i = 0
    while i < len(args):
        tok = args[i]
        path = tok.partition("=")[2] if tok.startswith("--flagfile=") else None
        if tok == "--flagfile" and i + 1 < len(args):
            path, i = args[i + 1], i + 1
        text = pyc.read_text(repo, path.removeprefix("./")) if path is not None and depth < 3 else None
        if text is not None:
            lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith(("#", "//"))]
            out += expand_flagfiles(repo, lines, depth + 1)
        elif path is None:
            out.append(tok)
        i += 1
    return out


_DOTENV_CALL = re.compile(r"""load_dotenv\(\s*(?:dotenv_path\s*=\s*)?(?:["']([^"']+)["'])?""")


def load_dotenv(repo: Path, closure: list[str], launch: Launch, parse_text: Any) -> None:
    """python-dotenv's `load_dotenv()` reads `.env` (or the file it names) into the environment; variables
    the launcher already set win (its default `override=False`)."""
    for rel in closure:
        text = parse_text(rel) or ""
        m = _DOTENV_CALL.search(text)
        if m is None:
            continue
        env_text = parse_text(m.group(1).removeprefix("./")) if m.group(1) else parse_text(".env")
        for line in (env_text or "").splitlines():
            k, eq, v = line.strip().removeprefix("export ").partition("=")
            if eq and re.fullmatch(r"[A-Za-z_]\w*", k.strip()) and k.strip() not in launch.env:
                launch.env[k.strip()] = v.strip().strip("'\"")
                launch.env_source.setdefault(k.strip(), m.group(1) or ".env")
        return


def accelerate_world(repo: Path, launch: Launch) -> int | None:
    """`accelerate launch --config_file x.yaml`: the processes the config file starts (`num_processes`)."""
    if launch.launcher != "accelerate":
        return None
    args = launch.launcher_args
    for i, tok in enumerate(args):
        key, eq, val = tok.partition("=")
        if key == "--config_file" and (eq or i + 1 < len(args)):
            data = cfgs.load_structured(repo, (val if eq else args[i + 1]).removeprefix("./"))
            if isinstance(data, dict):
                return as_int(data.get("num_processes"), 1)
    return None


def sbatch_world(launch: Launch) -> int | None:
    """Processes a SLURM allocation runs (`#SBATCH --nodes` x GPUs or tasks per node), if stated."""
    sb = launch.sbatch
    if not sb:
        return None
    nodes = as_int(sb.get("nodes", sb.get("N", "1")).split("-")[0], 1) or 1
    per = None
    for key in ("gpus-per-node", "ntasks-per-node", "gres"):
        m = re.search(r"(\d+)$", sb.get(key, ""))
        if m:
            per = int(m.group(1))
            break
    if per is None and (count := re.search(r"(\d+)$", sb.get("gpus", ""))):
        return int(count.group(1))
    return nodes * per if per else None
