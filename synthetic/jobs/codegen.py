"""Repository writer: a whole training project for one `WorkloadConfig`, deterministic in it.

`render_repo(cfg)` returns a `Repo` (path -> text or bytes, the launch command, the traps it
contains and the evidence of every label); `write_repo(cfg, dest)` writes it. Around the program
(programs.py) it adds what real projects carry: a launcher (direct torchrun / deepspeed / accelerate
command, a bash script, or a Slurm sbatch file), README, requirements.txt, .gitignore, sometimes a
Dockerfile, and noise a file-tree tool should skip: `.git/`, `data/` and `checkpoints/` with
binary-ish files, `__pycache__/`, old run folders (wandb, hydra outputs) whose configs are stale.
"""

from __future__ import annotations

import json
import random
import shlex
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from .programs import Entry, render_program
from .styles import Ctx, fmt_float
from .workloads import WorkloadConfig

__all__ = ["NOISE_DIRS", "Repo", "TRAP_KINDS", "render_repo", "write_repo"]

NOISE_DIRS = (".git", "data", "checkpoints", "outputs", "wandb", "__pycache__", "runs")
TRAP_KINDS = (
    "misleading_name",  # a variable / project named after another architecture
    "dead_config",  # an unused config or run script for another model / dataset
    "dead_code",  # commented-out alternatives, unused legacy functions or modules
    "stale_readme",  # README quotes hyper-parameters of an earlier run
    "stale_run_config",  # old wandb / hydra run folders with other values
    "cli_override",  # the launch command overrides a default stated in code / config
    "env_override",  # an environment variable set by the launcher overrides a constant
    "ignored_arg",  # an argument the framework ignores (num_train_epochs with max_steps)
    "misleading_default",  # a code default naming another model; the command sets the real one
    "library_default",  # the value is the framework's default, stated nowhere in the repo
)

_OTHER_ARCH = {
    "vit-l-16": "resnet", "resnet-50": "vit", "efficientnet-b4": "resnet50", "convnext-base": "vit_model",
    "mobilenetv2": "resnet", "unet2d": "vit", "clip-vit-l-14": "resnet_model", "dlrm": "bert",
    "llama-3-8b": "gpt2_model", "qwen-2.5-14b": "llama", "bert-base": "roberta", "deberta-large": "bert",
    "t5-small": "bart", "stable-diffusion-v1-5": "vae_model", "yolov8m": "yolov5",
}
_PROJECT_NAMES = {
    "vision_cls": ("imagenet-training", "cls-baselines", "vision-pretrain", "image-classification"),
    "segmentation": ("brats-seg", "medseg", "tumor-segmentation"),
    "contrastive": ("clip-training", "vl-pretrain", "open-clip-exp"),
    "recsys": ("dlrm", "recsys-bench", "ctr-models"),
    "causal_sft": ("llm-sft", "instruct-tuning", "alpaca-finetune", "chat-sft"),
    "qa": ("squad-finetune", "qa-models", "mrc"),
    "seq2seq": ("t5-pretrain", "seq2seq-lab"),
    "diffusion": ("sd-finetune", "t2i-training", "diffusion-exp"),
    "detection": ("yolo-train", "det-exp", "coco-detection"),
    "megatron": ("megatron-lm", "llm-pretrain", "gpt-pretraining"),
}
_MISLEADING_PROJECT = {  # project (repo) names that survive from an earlier model
    "vit-l-16": "resnet-baselines", "resnet-50": "vit-experiments", "efficientnet-b4": "resnet-baselines",
    "convnext-base": "vit-experiments", "mobilenetv2": "resnet-baselines", "unet2d": "unet3d-kits",
    "clip-vit-l-14": "resnet-clip-small", "dlrm": "wide-and-deep", "llama-3-8b": "llama2-7b-sft",
    "qwen-2.5-14b": "llama2-7b-sft", "bert-base": "roberta-squad", "deberta-large": "roberta-squad",
    "t5-small": "bart-summarization", "stable-diffusion-v1-5": "sdxl-lora", "yolov8m": "yolov5-coco",
}


@dataclass
class Repo:
    files: dict[str, str | bytes]
    command: str
    entrypoint: str
    traps: list[str] = field(default_factory=list)
    evidence: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # label -> (path, snippet, literal)

    def text_files(self) -> dict[str, str]:
        return {p: c for p, c in self.files.items() if isinstance(c, str)}

    def write(self, dest: Path) -> None:
        dest.mkdir(parents=True, exist_ok=True)
        made: set[Path] = set()
        for rel, content in self.files.items():
            path = dest / rel
            if path.parent not in made:
                path.parent.mkdir(parents=True, exist_ok=True)
                made.add(path.parent)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")


def render_repo(cfg: WorkloadConfig) -> Repo:
    """The project for `cfg`: same config (incl. layout_seed), same bytes."""
    rng = random.Random(f"repo:{cfg.layout_seed}:{cfg.family}")
    ctx = Ctx(cfg=cfg, rng=rng)
    ctx.underscores = ctx.chance(0.3)
    if ctx.chance(0.2):
        ctx.model_var = _OTHER_ARCH.get(cfg.model_name, "net")
        ctx.trap("misleading_name")
    else:
        ctx.model_var = rng.choice(("model", "model", "net"))
    entry = render_program(ctx)
    command, launch_file = _launcher(ctx, entry)
    _resolve_evidence(ctx, entry, launch_file, command)
    program = cfg.family_spec.program
    project = rng.choice(_PROJECT_NAMES[program])
    if ctx.chance(0.1):
        project = _MISLEADING_PROJECT.get(cfg.model_name, "gpt2-small-owt")
        ctx.trap("misleading_name")
    ctx.files["README.md"] = _readme(ctx, entry, project, command)
    ctx.files["requirements.txt"] = "\n".join(sorted(set(entry.requirements), key=str.lower)) + "\n"
    ctx.files[".gitignore"] = "data/\ncheckpoints/\noutputs/\nruns/\nwandb/\n__pycache__/\n*.pth\n*.pt\n*.bin\n.DS_Store\n"
    if ctx.chance(0.25):
        ctx.files["Dockerfile"] = ("FROM nvcr.io/nvidia/pytorch:24.03-py3\nWORKDIR /workspace\nCOPY requirements.txt .\n"
                                   "RUN pip install --no-cache-dir -r requirements.txt\nCOPY . .\n")
    _noise(ctx, project)
    ordered = dict(sorted(ctx.files.items()))
    return Repo(files=ordered, command=command, entrypoint=entry.script, traps=list(ctx.traps),
                evidence=dict(ctx.evidence))


def write_repo(cfg: WorkloadConfig, dest: Path) -> Repo:
    repo = render_repo(cfg)
    repo.write(Path(dest))
    return repo


# --------------------------------------------------------------------------------------------- launchers


def _q(arg: str) -> str:
    return shlex.quote(arg) if any(c in arg for c in " {}*$;&|<>()'\"") else arg


def _args_lines(args: list[str], indent: str = "    ") -> str:
    """Group ['--a', '1', '--flag', '--b', '2'] into one '--a 1' per continuation line."""
    groups: list[list[str]] = []
    for arg in args:
        if arg.startswith("-") or not groups or "=" in arg and not groups[-1][-1].startswith("-"):
            groups.append([arg])
        else:
            groups[-1].append(arg)
    return "".join(f" \\\n{indent}" + " ".join(_q(a) for a in g) for g in groups)


def _sbatch_header(ctx: Ctx, name: str, nodes: int, gpn: int) -> str:
    rng = ctx.rng
    hours = rng.choice((12, 24, 48, 72))
    return (
        "#!/bin/bash\n"
        f"#SBATCH --job-name={name}\n"
        f"#SBATCH --partition={rng.choice(('gpu', 'a800', 'llm', 'train'))}\n"
        f"#SBATCH --nodes={nodes}\n"
        "#SBATCH --ntasks-per-node=1\n"
        f"#SBATCH --gres=gpu:{gpn}\n"
        f"#SBATCH --cpus-per-task={min(128, 12 * gpn)}\n"
        f"#SBATCH --time={hours}:00:00\n"
        "#SBATCH --output=logs/%x-%j.out\n\n"
        "module load cuda/12.2 nccl/2.19\n"
        f"source {rng.choice(('~/miniconda3/bin/activate torch', '/opt/venvs/train/bin/activate', '~/.venv/bin/activate'))}\n\n"
        'export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)\n'
        "export MASTER_PORT=29500\nexport NCCL_IB_DISABLE=0\nexport OMP_NUM_THREADS=8\n"
    )


def _exports(env: dict[str, str]) -> str:
    return "".join(f"export {k}={v}\n" for k, v in env.items())


def _launcher(ctx: Ctx, entry: Entry) -> tuple[str, str]:
    """(command the scheduler receives, file holding the entry arguments or '<command>')."""
    cfg = ctx.cfg
    rng = ctx.rng
    g, n = cfg.gpus, cfg.nodes
    gpn = -(-g // n)  # GPUs per node
    kind = cfg.launcher
    program = cfg.family_spec.program
    name = f"{cfg.family}-{rng.getrandbits(12):03x}"
    args = list(entry.cli)
    env = dict(entry.env)

    if program == "megatron":
        script = entry.script
        if kind == "slurm":
            path = f"slurm/{Path(script).stem}.sbatch"
            ctx.files[path] = _sbatch_header(ctx, name, n, 8) + f"\nsrun bash {script}\n"
            return f"sbatch {path}", path
        return f"bash {script}", script
    if entry.script == "yolo":
        return "yolo " + " ".join(_q(a) for a in args), "<command>"

    def runner(multi: bool) -> str:
        if kind in ("accelerate", "accelerate_script") or program == "diffusion":
            mp = cfg.precision if cfg.precision in ("fp16", "bf16") else "no"
            parts = ["accelerate launch"]
            if g > 1:
                parts.append("--multi_gpu")
            parts.append(f"--num_processes {g}" if not multi else "--num_processes $((SLURM_NNODES * 8))")
            if multi:
                parts.append("--num_machines $SLURM_NNODES --machine_rank $SLURM_NODEID --main_process_ip $MASTER_ADDR")
            parts.append(f"--mixed_precision {mp}")
            return " ".join(parts)
        if kind == "deepspeed":
            return (f"deepspeed --hostfile hostfile --num_nodes {n} --num_gpus 8" if n > 1
                    else f"deepspeed --num_gpus {g}")
        if g == 1 and program != "detection":
            return "python"
        if program == "detection":
            return "python"
        if multi:
            return (f"torchrun --nnodes=$SLURM_NNODES --nproc_per_node={gpn} --rdzv_id=$SLURM_JOB_ID "
                    "--rdzv_backend=c10d --rdzv_endpoint=$MASTER_ADDR:$MASTER_PORT")
        if n > 1:
            return (f"torchrun --nnodes=$NNODES --nproc_per_node={gpn} --node_rank=$NODE_RANK "
                    "--master_addr=$MASTER_ADDR --master_port=29500")
        return rng.choice((f"torchrun --nproc_per_node={g}", f"torchrun --standalone --nproc_per_node={g}",
                           f"python -m torch.distributed.run --nproc_per_node={g}"))

    if kind in ("python", "torchrun", "deepspeed", "accelerate"):
        if kind == "deepspeed" and n > 1:
            ctx.files["hostfile"] = "".join(f"node{i:02d} slots=8\n" for i in range(n))
        prefix = " ".join(f"{k}={v}" for k, v in env.items())
        cmd = f"{runner(False)} {entry.script}" + ("".join(" " + _q(a) for a in args))
        return (f"{prefix} {cmd}" if prefix else cmd), "<command>"

    if kind == "slurm":
        path = rng.choice(("scripts/train.sbatch", "slurm/train.sbatch", f"slurm/{cfg.family}.sbatch"))
        body = _sbatch_header(ctx, name, n, gpn) + _exports(env)
        body += "\nsrun " + runner(True) + f" {entry.script}" + _args_lines(args) + "\n"
        ctx.files[path] = body
        return f"sbatch {path}", path

    # bash script (script / accelerate_script): values may be hoisted into variables at the top
    path = rng.choice(("scripts/train.sh", "run.sh", "scripts/run_train.sh", "train.sh"))
    head = "#!/usr/bin/env bash\nset -euo pipefail\n\n"
    if n > 1:
        head += "NNODES=${NNODES:-%d}\nNODE_RANK=${NODE_RANK:-0}\nMASTER_ADDR=${MASTER_ADDR:-127.0.0.1}\n" % n
    if g > 1 and n == 1 and ctx.chance(0.3):
        head += "export CUDA_VISIBLE_DEVICES=" + ",".join(str(i) for i in range(g)) + "\n"
    head += _exports(env)
    args, hoisted = _hoist(ctx, args, path)
    head += "".join(f'{var}="{val}"\n' for var, val in hoisted.items())
    ctx.files[path] = head + "\n" + runner(False) + f" {entry.script}" + _args_lines(args) + "\n"
    return f"bash {path}", path


def _hoist(ctx: Ctx, args: list[str], path: str) -> tuple[list[str], dict[str, str]]:
    """Move string values of model/data flags into shell variables (MODEL_NAME=...; --model $MODEL_NAME)."""
    hoisted: dict[str, str] = {}
    if not ctx.chance(0.4):
        return args, hoisted
    out = list(args)
    for i in range(len(out) - 1):
        flag, val = out[i], out[i + 1]
        if not flag.startswith("--") or val.startswith("-"):
            continue
        key = flag.lstrip("-").replace("-", "_")
        if not any(w in key for w in ("model", "data", "train_data", "dataset")) or "num" in key:
            continue
        var = "MODEL_NAME" if "model" in key else ("DATASET" if "dataset" in key else "DATA_DIR")
        if var in hoisted:
            continue
        hoisted[var] = val
        out[i + 1] = f"${var}"
        for label, (where, snippet, literal) in list(ctx.evidence.items()):
            if where == "§LAUNCH§" and snippet == f"{flag} {val}":
                ctx.evidence[label] = (path, f'{var}="{val}"', literal)
    return out, hoisted


def _resolve_evidence(ctx: Ctx, entry: Entry, launch_file: str, command: str) -> None:
    """Replace the §LAUNCH§ / §TRAIN§ placeholders; follow shell quoting of launch arguments."""
    for label, (where, snippet, literal) in list(ctx.evidence.items()):
        if where == "§LAUNCH§":
            where = launch_file
            text = command if where == "<command>" else ctx.files.get(where, "")
            quoted = snippet.replace(literal, _q(literal))
            if isinstance(text, str) and snippet not in text and quoted in text:
                snippet = quoted
        elif where == "§TRAIN§":
            where = entry.script
        ctx.evidence[label] = (where, snippet, literal)


# --------------------------------------------------------------------------------------------- README


def _readme(ctx: Ctx, entry: Entry, project: str, command: str) -> str:
    cfg = ctx.cfg
    rng = ctx.rng
    lines = [f"# {project}", "", f"{entry.summary}.", "", "## Setup", "", "```bash", "pip install -r requirements.txt",
             "```", "", "## Training", "", "```bash", command, "```", ""]
    if ctx.chance(0.35):
        ctx.trap("stale_readme")
        fam = cfg.family_spec
        bs = rng.choice([b for b in (*fam.batch_choices, cfg.batch_size * 2) if b != cfg.batch_size])
        if cfg.iteration_type == "epochs":
            it, unit = rng.choice([e for e in (*fam.epoch_choices, 300) if e != cfg.iterations]), "epochs"
        else:
            it, unit = rng.choice([s for s in (fam.step_range[1], fam.step_range[1] * 2) if s != cfg.iterations]), "steps"
        lines += ["## Notes", "",
                  f"The reference run used a batch size of {bs} and trained for {it} {unit} "
                  f"(lr {fmt_float(cfg.learning_rate * rng.choice((2, 10, 0.5)))}); see the configs for the current settings.",
                  ""]
    if ctx.chance(0.5):
        lines += ["## Results", "", "| run | metric | value |", "|---|---|---|",
                  f"| baseline | {_metric(cfg)} | {rng.uniform(20, 90):.1f} |", ""]
    if ctx.chance(0.3):
        lines += ["## Data", "", "Datasets are expected under `/datasets` (read-only NFS mount); a small local sample "
                  "lives in `data/` for debugging.", ""]
    return "\n".join(lines)


def _metric(cfg: WorkloadConfig) -> str:
    return {"image-classification": "top-1", "qa": "F1", "object-detection": "mAP50-95", "segmentation": "Dice",
            "text-to-image": "FID", "recommendation": "AUC", "contrastive-pretraining": "zero-shot top-1",
            "instruction-finetuning": "MT-Bench", "lm-pretraining": "val ppl", "text-generation": "val loss"}.get(
        cfg.task_type, "score")


# --------------------------------------------------------------------------------------------- noise


def _blob(rng: random.Random, magic: bytes, lo: int = 256, hi: int = 3072) -> bytes:
    return magic + rng.randbytes(rng.randint(lo, hi))


def _noise(ctx: Ctx, project: str) -> None:
    rng = ctx.rng
    cfg = ctx.cfg
    files = ctx.files
    # .git
    sha = lambda: "%040x" % rng.getrandbits(160)  # noqa: E731
    head = sha()
    files[".git/HEAD"] = "ref: refs/heads/main\n"
    files[".git/config"] = ("[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
                            f'[remote "origin"]\n\turl = git@gitlab.internal:ml/{project}.git\n'
                            "\tfetch = +refs/heads/*:refs/remotes/origin/*\n")
    files[".git/description"] = "Unnamed repository; edit this file 'description' to name the repository.\n"
    files[".git/refs/heads/main"] = head + "\n"
    files[".git/logs/HEAD"] = f"{'0' * 40} {head} dev <dev@lab> 1714000000 +0800\tcommit (initial): init\n"
    files[".git/index"] = b"DIRC\x00\x00\x00\x02" + rng.randbytes(rng.randint(400, 1600))
    for _ in range(rng.randint(3, 7)):
        obj = sha()
        payload = zlib.compress(b"blob %d\x00" % 64 + rng.randbytes(64))
        files[f".git/objects/{obj[:2]}/{obj[2:]}"] = payload
    # __pycache__
    for py in [p for p in list(files) if p.endswith(".py")][: rng.randint(1, 4)]:
        parent, _, stem = py.rpartition("/")
        pyc = (parent + "/" if parent else "") + f"__pycache__/{stem[:-3]}.cpython-310.pyc"
        files[pyc] = _blob(rng, b"\x6f\x0d\x0d\x0a\x00\x00\x00\x00", 200, 1200)
    # data/
    program = cfg.family_spec.program
    if program in ("vision_cls",):
        for i in range(rng.randint(2, 4)):
            files[f"data/imagenet/train/n01440764/n01440764_{10026 + i * 7}.JPEG"] = _blob(rng, b"\xff\xd8\xff\xe0\x00\x10JFIF\x00")
        files["data/imagenet/val/n01440764/ILSVRC2012_val_00000293.JPEG"] = _blob(rng, b"\xff\xd8\xff\xe0\x00\x10JFIF\x00")
    elif program == "causal_sft":
        sample = [{"instruction": "Give three tips for staying healthy.", "input": "",
                   "output": "1. Eat a balanced diet. 2. Exercise regularly. 3. Get enough sleep."},
                  {"instruction": "Translate to French.", "input": "Good morning", "output": "Bonjour"}]
        files["data/alpaca_sample.json"] = json.dumps(sample, indent=2) + "\n"
        files["data/tokenized/train-00000-of-00004.arrow"] = _blob(rng, b"\xff\xff\xff\xff\x00\x00\x00\x00")
    elif program == "megatron":
        stem = cfg.dataset_spec.path.rsplit("/", 1)[-1]
        files[f"data/{stem}.idx"] = _blob(rng, b"MMIDIDX\x00\x00")
        files[f"data/{stem}.bin"] = _blob(rng, b"", 1024, 4096)
    elif program == "recsys":
        files["data/day_0_processed.npz"] = _blob(rng, b"PK\x03\x04")
    elif program == "segmentation":
        for m in ("flair", "t1", "seg"):
            files[f"data/BraTS2021_00000/BraTS2021_00000_{m}.nii.gz"] = _blob(rng, b"\x1f\x8b\x08\x00")
    elif program == "detection":
        files["data/coco/images/train2017/000000000009.jpg"] = _blob(rng, b"\xff\xd8\xff\xe0\x00\x10JFIF\x00")
        files["data/coco/labels/train2017/000000000009.txt"] = "45 0.479492 0.688771 0.955609 0.5955\n50 0.617 0.7 0.13 0.2\n"
    elif program in ("contrastive", "diffusion"):
        files[f"data/shards/{'wit' if program == 'contrastive' else 'laion'}-000000.tar"] = _blob(rng, b"000000000.jpg\x00" + b"\x00" * 86)
        files["data/shards/metadata.parquet"] = _blob(rng, b"PAR1")
    elif program in ("qa", "seq2seq"):
        files[f"data/cache/{cfg.dataset}/dataset_info.json"] = json.dumps({"builder_name": cfg.dataset, "splits": {}}) + "\n"
        files[f"data/cache/{cfg.dataset}/train-00000-of-00001.arrow"] = _blob(rng, b"\xff\xff\xff\xff")
    # checkpoints / outputs
    ckdir = rng.choice(("checkpoints", "outputs"))
    for tag in rng.sample(("ep001", "ep002", "step2000", "step4000", "best"), rng.randint(1, 3)):
        files[f"{ckdir}/checkpoint_{tag}.pth"] = _blob(rng, b"PK\x03\x04", 1024, 4096)
    files[f"{ckdir}/latest"] = "checkpoint_best.pth\n"
    # stale run folders: configs of an earlier run, with other values
    if ctx.chance(0.35):
        ctx.trap("stale_run_config")
        stamp = f"2024{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}_{rng.randint(0, 23):02d}{rng.randint(0, 59):02d}{rng.randint(0, 59):02d}"
        run = f"run-{stamp}-{rng.getrandbits(32):08x}"
        files[f"wandb/{run}/files/config.yaml"] = (
            "wandb_version: 1\n\n_wandb:\n  desc: null\n  value:\n    python_version: 3.10.12\n"
            f"batch_size:\n  desc: null\n  value: {cfg.batch_size * 2}\n"
            f"lr:\n  desc: null\n  value: {fmt_float(cfg.learning_rate / 2, yaml=True)}\n"
            f"epochs:\n  desc: null\n  value: {rng.choice((1, 5, 100))}\n")
        files[f"wandb/{run}/files/wandb-summary.json"] = json.dumps({"_runtime": rng.randint(60, 9000), "loss": 2.31}) + "\n"
        files[f"wandb/{run}/run-{run[-8:]}.wandb"] = _blob(rng, b":W&B\x00")
    if cfg.style == "hydra" and ctx.chance(0.5):
        ctx.trap("stale_run_config")
        files["outputs/2024-05-02/14-31-07/.hydra/overrides.yaml"] = (
            f"- trainer.{'max_epochs' if cfg.iteration_type == 'epochs' else 'max_steps'}=1\n- trainer.batch_size=2\n")
        files["outputs/2024-05-02/14-31-07/.hydra/config.yaml"] = "# resolved config of a debug run\ntrainer:\n  batch_size: 2\n"
