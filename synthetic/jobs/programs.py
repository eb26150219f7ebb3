"""Training programs: the Python code of each kind of workload, parameterised by a config style.

Each `render_<program>(ctx)` fills `ctx.files` with the project's source (training script, model
and data modules, helpers, config files through a style of styles.py) and returns an `Entry`: the
script the launcher runs, its arguments and environment, and the pip requirements. The code is
meant to be read, never executed: it must parse and look like what people write, including the
dead code and misleading names a careful reader has to see through.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .styles import (
    Ctx,
    Param,
    StyleOut,
    argparse_style,
    constants_style,
    fill,
    fmt_float,
    hydra_style,
    indent,
    py_lit,
    sh_lit,
    yaml_lit,
    yaml_style,
)

__all__ = ["Entry", "PROGRAMS", "render_program"]


@dataclass
class Entry:
    script: str  # path of the entry script, relative to the repository root
    cli: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    requirements: list[str] = field(default_factory=list)
    summary: str = ""


# --------------------------------------------------------------------------------------------- helpers

UTILS_DIST = '''"""Distributed helpers (torchrun / slurm environment)."""

import os

import torch
import torch.distributed as dist


def init_distributed():
    """Initialise NCCL from the launcher's environment; returns (local_rank, world_size)."""
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        rank = int(os.environ["RANK"])
        world_size = int(os.environ["WORLD_SIZE"])
        local_rank = int(os.environ.get("LOCAL_RANK", 0))
    elif "SLURM_PROCID" in os.environ:
        rank = int(os.environ["SLURM_PROCID"])
        world_size = int(os.environ["SLURM_NTASKS"])
        local_rank = rank % torch.cuda.device_count()
    else:
        return 0, 1
    torch.cuda.set_device(local_rank)
    dist.init_process_group(backend="nccl", rank=rank, world_size=world_size)
    dist.barrier()
    return local_rank, world_size


def is_main_process():
    return not dist.is_initialized() or dist.get_rank() == 0


def reduce_mean(tensor):
    if not dist.is_initialized():
        return tensor
    tensor = tensor.clone()
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor / dist.get_world_size()
'''

UTILS_METERS = '''"""Running averages for logging."""


class AverageMeter:
    def __init__(self, name, fmt=":.4f"):
        self.name = name
        self.fmt = fmt
        self.reset()

    def reset(self):
        self.val = 0.0
        self.sum = 0.0
        self.count = 0
        self.avg = 0.0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / max(self.count, 1)

    def __str__(self):
        fmtstr = "{name} {val" + self.fmt + "} ({avg" + self.fmt + "})"
        return fmtstr.format(**self.__dict__)
'''

UTILS_SCHED = '''"""Learning-rate schedules."""

import math


def cosine_lr(optimizer, base_lr, step, total_steps, warmup_steps=0, min_lr=0.0):
    """Linear warm-up then cosine decay; sets the lr of every param group and returns it."""
    if step < warmup_steps:
        lr = base_lr * (step + 1) / warmup_steps
    else:
        progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
        lr = min_lr + 0.5 * (base_lr - min_lr) * (1.0 + math.cos(math.pi * progress))
    for group in optimizer.param_groups:
        group["lr"] = lr * group.get("lr_scale", 1.0)
    return lr
'''

UTILS_CKPT = '''"""Checkpoint save/resume."""

import glob
import os

import torch


def save_checkpoint(state, output_dir, tag):
    os.makedirs(output_dir, exist_ok=True)
    path = os.path.join(output_dir, f"checkpoint_{tag}.pth")
    torch.save(state, path)
    latest = os.path.join(output_dir, "latest")
    with open(latest, "w") as f:
        f.write(os.path.basename(path))
    return path


def find_latest(output_dir):
    latest = os.path.join(output_dir, "latest")
    if os.path.exists(latest):
        with open(latest) as f:
            return os.path.join(output_dir, f.read().strip())
    ckpts = sorted(glob.glob(os.path.join(output_dir, "checkpoint_*.pth")), key=os.path.getmtime)
    return ckpts[-1] if ckpts else None
'''


def _add_utils(ctx: Ctx, *, ckpt: bool = True) -> None:
    ctx.files["utils/__init__.py"] = ""
    ctx.files["utils/dist.py"] = UTILS_DIST
    ctx.files["utils/meters.py"] = UTILS_METERS
    ctx.files["utils/lr_sched.py"] = UTILS_SCHED
    if ckpt:
        ctx.files["utils/checkpoint.py"] = UTILS_CKPT


def _iter_param(ctx: Ctx, *, names_steps: tuple[str, ...] = (), names_epochs: tuple[str, ...] = ()) -> Param:
    cfg = ctx.cfg
    if cfg.iteration_type == "epochs":
        decoys = tuple(e for e in (10, 30, 90, 100, 300, 3, 5) if e != cfg.iterations)
        return Param("epochs", cfg.iterations, "train", "number of training epochs", names_epochs, "iterations", decoys)
    decoys = (cfg.iterations * 2, max(100, cfg.iterations // 2), 100000, 1000)
    return Param("max_steps", cfg.iterations, "train", "total optimizer steps", names_steps, "iterations", decoys)


def _apply_style(ctx: Ctx, params: list[Param], *, exp_name: str, hydra_names: dict[str, str] | None = None,
                 hydra_alt: dict[str, str] | None = None, decoy_yaml: str | None = None,
                 legacy: dict[str, Any] | None = None, description: str = "Training", cli_share: float = 0.3) -> StyleOut:
    style = ctx.cfg.style
    if style == "argparse":
        return argparse_style(ctx, params, cli_share=cli_share, description=description)
    if style == "yaml":
        return yaml_style(ctx, params, exp_name=exp_name, decoy_doc=decoy_yaml if ctx.chance(0.5) else None)
    if style == "hydra":
        return hydra_style(ctx, params, names=hydra_names or {"model": "default", "dataset": "default"},
                           alt_files=hydra_alt if ctx.chance(0.7) else None)
    if style == "constants":
        return constants_style(ctx, params, legacy_values=legacy if ctx.chance(0.4) else None)
    raise ValueError(f"style {style!r} is not a generic config style")


def _module(doc: str, imports: str, style: StyleOut, helpers: str, body: str, *, local: str = "") -> str:
    """Assemble a training script: docstring, imports, style header, helpers, main()."""
    third = [ln for ln in style.header.splitlines() if ln.startswith(("import ", "from omegaconf"))]
    mine = [ln for ln in style.header.splitlines() if ln.strip() and ln not in third]
    std = [ln for ln in third if ln == "import argparse"]
    ext = [ln for ln in third if ln != "import argparse"]
    imports = "\n".join(std + [imports.strip()] + ext)
    local = "\n".join([ln for ln in (local.strip(), *mine) if ln])
    parts = [f'"""{doc}"""', "", imports.strip()]
    if local:
        parts += ["", local]
    parts += ["", ""]
    if helpers.strip():
        parts += [helpers.strip(), "", ""]
    if style.setup_fn.strip():
        parts += [style.setup_fn.strip(), "", ""]
    main_setup = indent(style.main_setup, 4) + "\n" if style.main_setup.strip() else ""
    parts += [style.main_sig + "\n" + main_setup + indent(body.strip("\n"), 4), "", "",
              'if __name__ == "__main__":', "    main()", ""]
    return "\n".join(parts)


def _dead_comment(ctx: Ctx, line: str) -> str:
    """A commented-out alternative, as people leave them."""
    if ctx.chance(0.35):
        ctx.trap("dead_code")
        return f"# {line}\n"
    return ""


def _pick(ctx: Ctx, options: tuple[Any, ...]) -> Any:
    return ctx.rng.choice(options)


def _common_tail(ctx: Ctx, params: list[Param], *, log: bool = True) -> list[Param]:
    out = [Param("output_dir", _pick(ctx, ("./outputs", "./checkpoints", "/mnt/ckpt/" + ctx.cfg.family, "runs/exp")),
                 "misc", "where checkpoints go"),
           Param("seed", _pick(ctx, (0, 42, 1234, 3407)), "misc", "random seed")]
    if log:
        out.append(Param("log_interval", _pick(ctx, (10, 20, 50, 100)), "misc", "steps between log lines"))
    return params + out


# --------------------------------------------------------------------------------------------- vision


_VISION_LIB = {
    "vit-l-16": {"timm": "vit_large_patch16_224", "torchvision": "vit_l_16"},
    "resnet-50": {"timm": "resnet50", "torchvision": "resnet50"},
    "efficientnet-b4": {"timm": "efficientnet_b4", "torchvision": "efficientnet_b4"},
    "convnext-base": {"timm": "convnext_base", "torchvision": "convnext_base"},
    "mobilenetv2": {"timm": "mobilenetv2_100", "torchvision": "mobilenet_v2"},
}
_VISION_DECOYS = ("resnet18", "vit_base_patch16_224", "resnet101", "deit_small_patch16_224", "efficientnet_b0")
_IMAGENET_PATHS = ("/datasets/imagenet", "/mnt/shared/ILSVRC2012", "/data/imagenet-1k", "/cache/datasets/imagenet")


def render_vision_cls(ctx: Ctx) -> Entry:
    cfg = ctx.cfg
    lib = _pick(ctx, ("timm", "timm", "torchvision"))
    arch = _VISION_LIB[cfg.model_name][lib]
    sgd = cfg.learning_rate >= 0.04
    data_path = _pick(ctx, _IMAGENET_PATHS)
    params = [
        Param("model", arch, "model", "model architecture", truth="model_name",
              decoys=tuple(d for d in _VISION_DECOYS if d != arch)),
        Param("num_classes", 1000, "model", "number of classes"),
        Param("data_path", data_path, "data", "ImageNet root with train/ and val/", truth="dataset",
              decoys=("/datasets/cifar10", "/data/tiny-imagenet-200")),
        Param("img_size", cfg.image_size, "data", "input resolution"),
        Param("workers", cfg.num_workers, "data", "dataloader workers per GPU", truth="num_workers", decoys=(4, 8, 16, 32)),
        Param("batch_size", cfg.batch_size, "train", "batch size per GPU", truth="batch_size", decoys=(32, 64, 128, 256)),
        _iter_param(ctx),
        Param("lr", cfg.learning_rate, "optim", "peak learning rate", truth="learning_rate",
              decoys=(0.1, 0.4, 1e-3, 5e-4, 0.01)),
        Param("optimizer", "sgd" if sgd else "adamw", "optim", "optimizer", names=("opt", "optimizer"),
              choices=("sgd", "adamw", "lamb")),
        Param("weight_decay", 1e-4 if sgd else 0.05, "optim", "weight decay"),
        Param("warmup", 5 if cfg.iteration_type == "epochs" else 2000, "optim", "warm-up length",
              names=("warmup_epochs",) if cfg.iteration_type == "epochs" else ("warmup_steps", "warmup_iters")),
        Param("label_smoothing", 0.1, "train", "label smoothing"),
        Param("amp", cfg.precision != "fp32", "train", "mixed precision"),
    ]
    params = _common_tail(ctx, params)
    model_short = {"vit-l-16": "vit_l16", "resnet-50": "resnet50", "efficientnet-b4": "effnet_b4",
                   "convnext-base": "convnext_b", "mobilenetv2": "mbv2"}[cfg.model_name]
    style = _apply_style(
        ctx, params, exp_name=f"{model_short}_in1k",
        hydra_names={"model": model_short, "dataset": "imagenet", "optim": "sgd" if sgd else "adamw"},
        hydra_alt={"conf/dataset/cifar10.yaml": "data_dir: /datasets/cifar10\nimg_size: 32\nnum_classes: 10\n",
                   "conf/model/resnet18.yaml": "model: resnet18\nnum_classes: 10\n"},
        decoy_yaml="cifar10_resnet18\nmodel:\n  arch: resnet18\n  num_classes: 10\ndata:\n  data_dir: /datasets/cifar10\n"
                   "  batch_size: 256\n  workers: 4\ntrain:\n  epochs: 200\noptim:\n  lr: 0.1\n",
        legacy={"MODEL": "resnet18", "DATA_DIR": "/datasets/cifar10", "BATCH_SIZE": 256, "EPOCHS": 200, "LR": 0.1},
        description=f"{cfg.family_spec.title}",
    )
    a = style.acc
    mv = ctx.model_var
    _add_utils(ctx)
    if lib == "timm":
        imports = "import timm\nfrom timm.data import create_transform\nfrom timm.loss import LabelSmoothingCrossEntropy"
        build = fill('''
            def build_model(name, num_classes):
                return timm.create_model(name, pretrained=False, num_classes=num_classes, drop_path_rate=0.1)


            def build_transforms(img_size, is_training):
                return create_transform(img_size, is_training=is_training, auto_augment="rand-m9-mstd0.5-inc1"
                                        if is_training else None, interpolation="bicubic")
            ''')
        criterion = "LabelSmoothingCrossEntropy(smoothing=§ls)"
    else:
        imports = "import torchvision\nfrom torchvision import transforms"
        build = fill('''
            def build_model(name, num_classes):
                return getattr(torchvision.models, name)(weights=None, num_classes=num_classes)


            def build_transforms(img_size, is_training):
                normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
                if is_training:
                    return transforms.Compose([transforms.RandomResizedCrop(img_size), transforms.RandomHorizontalFlip(),
                                               transforms.ToTensor(), normalize])
                return transforms.Compose([transforms.Resize(int(img_size * 1.14)), transforms.CenterCrop(img_size),
                                           transforms.ToTensor(), normalize])
            ''')
        criterion = "nn.CrossEntropyLoss(label_smoothing=§ls)"
    helpers = build + "\n\n" + fill('''
        def build_loaders(data_dir, img_size, batch_size, workers):
            train_set = datasets.ImageFolder(os.path.join(data_dir, "train"), build_transforms(img_size, True))
            val_set = datasets.ImageFolder(os.path.join(data_dir, "val"), build_transforms(img_size, False))
            train_sampler = DistributedSampler(train_set) if dist.is_initialized() else None
            train_loader = DataLoader(train_set, batch_size=batch_size, shuffle=train_sampler is None,
                                      sampler=train_sampler, num_workers=workers, pin_memory=True, drop_last=True,
                                      persistent_workers=workers > 0)
            val_loader = DataLoader(val_set, batch_size=batch_size, shuffle=False, num_workers=workers, pin_memory=True)
            return train_loader, val_loader, train_sampler


        @torch.no_grad()
        def evaluate(model, loader, device):
            model.eval()
            correct = torch.zeros(1, device=device)
            total = torch.zeros(1, device=device)
            for images, targets in loader:
                images, targets = images.to(device, non_blocking=True), targets.to(device, non_blocking=True)
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    logits = model(images)
                correct += (logits.argmax(dim=1) == targets).sum()
                total += targets.numel()
            model.train()
            return (reduce_mean(correct / total) * 100).item()
        ''')
    if ctx.chance(0.3):
        ctx.trap("dead_code")
        helpers = helpers.rstrip() + "\n\n\n" + fill('''
            def build_cifar_loaders(data_dir="/datasets/cifar10", batch_size=256, workers=4):
                """Old CIFAR-10 baseline loaders (not used any more)."""
                tf = transforms.Compose([transforms.RandomCrop(32, padding=4), transforms.ToTensor()])
                train_set = datasets.CIFAR10(data_dir, train=True, transform=tf, download=True)
                return DataLoader(train_set, batch_size=batch_size, shuffle=True, num_workers=workers)
            ''')
        if lib == "timm":
            imports += "\nfrom torchvision import transforms"
    amp_dtype = "torch.bfloat16" if cfg.precision == "bf16" else "torch.float16"
    opt_line = ("torch.optim.SGD(§mv.parameters(), lr=§lr, momentum=0.9, weight_decay=§wd, nesterov=True)" if sgd
                else "torch.optim.AdamW(§mv.parameters(), lr=§lr, weight_decay=§wd, betas=(0.9, 0.999))")
    head = fill('''
        local_rank, world_size = init_distributed()
        device = torch.device("cuda", local_rank)
        torch.manual_seed(§seed + local_rank)
        torch.backends.cudnn.benchmark = True

        §dead§mv = build_model(§arch, num_classes=§ncls).to(device)
        if world_size > 1:
            §mv = DDP(§mv, device_ids=[local_rank])
        train_loader, val_loader, train_sampler = build_loaders(§data, §img, §bs, §workers)
        criterion = §criterion
        optimizer = §opt
        scaler = torch.cuda.amp.GradScaler(enabled=§amp)
        ''', dead=_dead_comment(ctx, f'{mv} = build_model("resnet18", num_classes=10)  # CIFAR baseline'),
        mv=mv, arch=a["model"], ncls=a["num_classes"], data=a["data_path"], img=a["img_size"], bs=a["batch_size"],
        workers=a["workers"], criterion=fill(criterion, ls=a["label_smoothing"]), opt=fill(opt_line, mv=mv, lr=a["lr"],
        wd=a["weight_decay"]), amp=a["amp"], seed=a["seed"])
    step_body = fill('''
        images, targets = images.to(device, non_blocking=True), targets.to(device, non_blocking=True)
        lr = cosine_lr(optimizer, §lr, step, total_steps, warmup_steps)
        with torch.autocast("cuda", dtype=§dtype, enabled=§amp):
            loss = criterion(§mv(images), targets)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        losses.update(loss.item(), images.size(0))
        step += 1
        if step % §log == 0 and is_main_process():
            elapsed = time.time() - tic
            print(f"step {step}/{total_steps} loss {losses.avg:.4f} lr {lr:.6f} "
                  f"time/step {elapsed / §log:.3f}s", flush=True)
            tic = time.time()
        ''', lr=a["lr"], dtype=amp_dtype, amp=a["amp"], mv=mv, log=a["log_interval"])
    if cfg.iteration_type == "epochs":
        loop = fill('''
            total_steps = §epochs * len(train_loader)
            warmup_steps = §warmup * len(train_loader)
            losses = AverageMeter("loss")
            step, best_acc = 0, 0.0
            for epoch in range(§epochs):
                if train_sampler is not None:
                    train_sampler.set_epoch(epoch)
                tic = time.time()
                for images, targets in train_loader:
            §body
                acc1 = evaluate(§mv, val_loader, device)
                if is_main_process():
                    print(f"epoch {epoch} val acc@1 {acc1:.2f}", flush=True)
                    best_acc = max(best_acc, acc1)
                    save_checkpoint({"model": §mv.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch},
                                    §out, f"ep{epoch:03d}")
            ''', epochs=a["epochs"], warmup=a["warmup"], body=indent(step_body, 8), mv=mv, out=a["output_dir"])
    else:
        loop = fill('''
            total_steps = §steps
            warmup_steps = §warmup
            losses = AverageMeter("loss")
            step, epoch = 0, 0
            tic = time.time()
            while step < total_steps:
                if train_sampler is not None:
                    train_sampler.set_epoch(epoch)
                for images, targets in train_loader:
            §body
                    if step % 5000 == 0 and is_main_process():
                        save_checkpoint({"model": §mv.state_dict(), "step": step}, §out, f"step{step}")
                    if step >= total_steps:
                        break
                epoch += 1
            acc1 = evaluate(§mv, val_loader, device)
            print(f"final val acc@1 {acc1:.2f}", flush=True)
            ''', steps=a["max_steps"], warmup=a["warmup"], body=indent(step_body, 8), mv=mv, out=a["output_dir"])
    script = _pick(ctx, ("train.py", "train.py", "main.py", "tools/train.py"))
    local = ("from utils.checkpoint import save_checkpoint\nfrom utils.dist import init_distributed, is_main_process, "
             "reduce_mean\nfrom utils.lr_sched import cosine_lr\nfrom utils.meters import AverageMeter")
    text = _module(
        f"Train {cfg.family_spec.title.split(' on ')[0]} on ImageNet-1k ({lib}, DDP, AMP).",
        "import os\nimport time\n\nimport torch\nimport torch.distributed as dist\nimport torch.nn as nn\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\nfrom torch.utils.data import DataLoader\n"
        "from torch.utils.data.distributed import DistributedSampler\nfrom torchvision import datasets\n" + imports,
        style, helpers, head + "\n" + loop, local=local,
    )
    if script.startswith("tools/"):
        text = text.replace('"""\n\nimport os', '"""\n\nimport os\nimport sys\n\nsys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))', 1)
    ctx.files[script] = text
    ctx.files.update(style.files)
    reqs = ["torch>=2.1", "torchvision>=0.16", "numpy", "pillow"]
    reqs += ["timm==0.9.16"] if lib == "timm" else []
    return Entry(script, style.cli, style.env, reqs + _style_reqs(cfg.style),
                 summary=f"{arch} ({lib}) on ImageNet-1k")


def _style_reqs(style: str) -> list[str]:
    return {"yaml": ["pyyaml"], "hydra": ["hydra-core>=1.3", "omegaconf"]}.get(style, [])


# --------------------------------------------------------------------------------------------- segmentation

UNET_MODULE = '''"""2D U-Net (Ronneberger et al.) for multi-modal MRI slices."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class DoubleConv(nn.Module):
    def __init__(self, in_ch, out_ch):
        super().__init__()
        self.block = nn.Sequential(
            nn.Conv2d(in_ch, out_ch, 3, padding=1, bias=False), nn.InstanceNorm2d(out_ch), nn.LeakyReLU(0.01, True),
            nn.Conv2d(out_ch, out_ch, 3, padding=1, bias=False), nn.InstanceNorm2d(out_ch), nn.LeakyReLU(0.01, True),
        )

    def forward(self, x):
        return self.block(x)


class Down(nn.Module):
    def __init__(self, in_ch, out_ch):
        super().__init__()
        self.pool_conv = nn.Sequential(nn.MaxPool2d(2), DoubleConv(in_ch, out_ch))

    def forward(self, x):
        return self.pool_conv(x)


class Up(nn.Module):
    def __init__(self, in_ch, out_ch):
        super().__init__()
        self.up = nn.ConvTranspose2d(in_ch, in_ch // 2, 2, stride=2)
        self.conv = DoubleConv(in_ch, out_ch)

    def forward(self, x, skip):
        x = self.up(x)
        dy, dx = skip.size(2) - x.size(2), skip.size(3) - x.size(3)
        x = F.pad(x, [dx // 2, dx - dx // 2, dy // 2, dy - dy // 2])
        return self.conv(torch.cat([skip, x], dim=1))


class UNet2D(nn.Module):
    """Five-level 2D U-Net, base width 32: about 30M parameters at base 64... and 7.8M at 32."""

    def __init__(self, in_channels=4, num_classes=3, base=64):
        super().__init__()
        widths = [base, base * 2, base * 4, base * 8, base * 16]
        self.inc = DoubleConv(in_channels, widths[0])
        self.downs = nn.ModuleList(Down(widths[i], widths[i + 1]) for i in range(4))
        self.ups = nn.ModuleList(Up(widths[i + 1], widths[i]) for i in reversed(range(4)))
        self.head = nn.Conv2d(widths[0], num_classes, 1)

    def forward(self, x):
        skips = [self.inc(x)]
        for down in self.downs:
            skips.append(down(skips[-1]))
        x = skips.pop()
        for up in self.ups:
            x = up(x, skips.pop())
        return self.head(x)


MODELS = {"unet2d": UNet2D}


def build_model(name, **kwargs):
    return MODELS[name](**kwargs)
'''

BRATS_DATASET = '''"""BraTS 2021: 4-modality MRI volumes (t1, t1ce, t2, flair) sliced to 2D."""

import glob
import os

import nibabel as nib
import numpy as np
import torch
from torch.utils.data import Dataset

MODALITIES = ("t1", "t1ce", "t2", "flair")


def regions(seg):
    """Whole tumour, tumour core and enhancing tumour masks from BraTS labels 1, 2, 4."""
    wt = seg > 0
    tc = (seg == 1) | (seg == 4)
    et = seg == 4
    return np.stack([wt, tc, et]).astype(np.float32)


class BraTSSlices(Dataset):
    def __init__(self, root, split="train", img_size=240, val_fraction=0.1, min_foreground=1):
        cases = sorted(glob.glob(os.path.join(root, "BraTS2021_*")))
        n_val = int(len(cases) * val_fraction)
        self.cases = cases[n_val:] if split == "train" else cases[:n_val]
        self.img_size = img_size
        self.index = []
        for case in self.cases:
            seg = nib.load(glob.glob(os.path.join(case, "*_seg.nii.gz"))[0]).get_fdata()
            for z in range(seg.shape[2]):
                if (seg[:, :, z] > 0).sum() >= min_foreground or split != "train":
                    self.index.append((case, z))

    def __len__(self):
        return len(self.index)

    def __getitem__(self, i):
        case, z = self.index[i]
        name = os.path.basename(case)
        image = np.stack([nib.load(os.path.join(case, f"{name}_{m}.nii.gz")).dataobj[:, :, z] for m in MODALITIES])
        image = (image - image.mean(axis=(1, 2), keepdims=True)) / (image.std(axis=(1, 2), keepdims=True) + 1e-6)
        seg = np.asarray(nib.load(os.path.join(case, f"{name}_seg.nii.gz")).dataobj[:, :, z])
        image, target = torch.from_numpy(image.astype(np.float32)), torch.from_numpy(regions(seg))
        if self.img_size != image.shape[-1]:
            image = torch.nn.functional.interpolate(image[None], size=self.img_size, mode="bilinear")[0]
            target = torch.nn.functional.interpolate(target[None], size=self.img_size, mode="nearest")[0]
        return image, target
'''


def render_segmentation(ctx: Ctx) -> Entry:
    cfg = ctx.cfg
    monai = ctx.chance(0.35)
    data_path = _pick(ctx, ("/datasets/BraTS2021", "/data/brats", "/mnt/medical/BraTS21", "/datasets/brats2021"))
    params = [
        Param("model", "unet2d", "model", "network from models.MODELS", truth="model_name", decoys=("unet3d", "attention_unet")),
        Param("in_channels", 4, "model", "MRI modalities"),
        Param("num_classes", 3, "model", "WT / TC / ET regions"),
        Param("data_path", data_path, "data", "BraTS training cases", truth="dataset", decoys=("/datasets/LiTS", "/data/kits19")),
        Param("img_size", cfg.image_size, "data", "slice size"),
        Param("workers", cfg.num_workers, "data", "dataloader workers", truth="num_workers", decoys=(2, 4, 8)),
        Param("batch_size", cfg.batch_size, "train", "slices per GPU", truth="batch_size", decoys=(8, 16, 32)),
        _iter_param(ctx),
        Param("lr", cfg.learning_rate, "optim", "Adam learning rate", truth="learning_rate", decoys=(1e-3, 1e-4, 3e-4)),
        Param("weight_decay", 1e-5, "optim", "weight decay"),
        Param("amp", cfg.precision != "fp32", "train", "mixed precision"),
    ]
    params = _common_tail(ctx, params)
    style = _apply_style(
        ctx, params, exp_name="unet2d_brats",
        hydra_names={"model": "unet2d", "dataset": "brats", "optim": "adam"},
        hydra_alt={"conf/dataset/lits.yaml": "data_dir: /datasets/LiTS\nimg_size: 256\n"},
        decoy_yaml="unet3d_kits\nmodel:\n  name: unet3d\ndata:\n  data_dir: /data/kits19\n  batch_size: 2\ntrain:\n  epochs: 500\n",
        legacy={"MODEL": "unet3d", "DATA_DIR": "/data/kits19", "BATCH_SIZE": 2, "EPOCHS": 500},
        description="UNet2D training on BraTS",
    )
    a = style.acc
    mv = ctx.model_var
    _add_utils(ctx)
    if monai:
        build = ('if §model != "unet2d":\n    raise ValueError(f"unsupported model {§model}")\n'
                 f"{mv} = UNet(spatial_dims=2, in_channels=§inch, out_channels=§ncls, channels=(32, 64, 128, 256, 512),\n"
                 f"         strides=(2, 2, 2, 2), num_res_units=2).to(device)\n")
        imports = "from monai.losses import DiceCELoss\nfrom monai.networks.nets import UNet"
        loss = "DiceCELoss(sigmoid=True, squared_pred=True)"
    else:
        build = f"{mv} = build_model(§model, in_channels=§inch, num_classes=§ncls).to(device)\n"
        imports = ""
        loss = "DiceBCELoss()"
        ctx.files["models/__init__.py"] = "from .unet import UNet2D, build_model\n"
        ctx.files["models/unet.py"] = UNET_MODULE
    ctx.files["brats_data.py"] = BRATS_DATASET
    helpers = fill('''
        class DiceBCELoss(nn.Module):
            def __init__(self, smooth=1.0):
                super().__init__()
                self.bce = nn.BCEWithLogitsLoss()
                self.smooth = smooth

            def forward(self, logits, target):
                probs = torch.sigmoid(logits)
                inter = (probs * target).sum(dim=(2, 3))
                dice = (2 * inter + self.smooth) / (probs.sum(dim=(2, 3)) + target.sum(dim=(2, 3)) + self.smooth)
                return self.bce(logits, target) + (1 - dice.mean())


        @torch.no_grad()
        def dice_score(model, loader, device):
            model.eval()
            scores = []
            for image, target in loader:
                pred = (torch.sigmoid(model(image.to(device))) > 0.5).float()
                target = target.to(device)
                inter = (pred * target).sum(dim=(2, 3))
                scores.append(((2 * inter + 1) / (pred.sum(dim=(2, 3)) + target.sum(dim=(2, 3)) + 1)).mean(0))
            model.train()
            return torch.stack(scores).mean(0).tolist()
        ''')
    body = fill('''
        local_rank, world_size = init_distributed()
        device = torch.device("cuda", local_rank)
        torch.manual_seed(§seed)
        §build
        if world_size > 1:
            §mv = DDP(§mv, device_ids=[local_rank])
        train_set = BraTSSlices(§data, "train", img_size=§img)
        val_set = BraTSSlices(§data, "val", img_size=§img)
        sampler = DistributedSampler(train_set) if world_size > 1 else None
        train_loader = DataLoader(train_set, batch_size=§bs, shuffle=sampler is None, sampler=sampler,
                                  num_workers=§workers, pin_memory=True, drop_last=True)
        val_loader = DataLoader(val_set, batch_size=§bs, num_workers=§workers)
        criterion = §loss
        optimizer = torch.optim.AdamW(§mv.parameters(), lr=§lr, weight_decay=§wd)
        scaler = torch.cuda.amp.GradScaler(enabled=§amp)
        ''', build=fill(build, inch=a["in_channels"], ncls=a["num_classes"], model=a["model"]).rstrip(),
        mv=mv, data=a["data_path"], img=a["img_size"], bs=a["batch_size"], workers=a["workers"], loss=loss,
        lr=a["lr"], wd=a["weight_decay"], amp=a["amp"], seed=a["seed"])
    step = fill('''
        image, target = image.to(device), target.to(device)
        with torch.autocast("cuda", enabled=§amp):
            loss = criterion(§mv(image), target)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        step += 1
        if step % §log == 0 and is_main_process():
            print(f"[{time.strftime('%H:%M:%S')}] step {step} loss {loss.item():.4f}", flush=True)
        ''', amp=a["amp"], mv=mv, log=a["log_interval"])
    if cfg.iteration_type == "epochs":
        loop = fill('''
            step = 0
            scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=§epochs)
            for epoch in range(§epochs):
                if sampler is not None:
                    sampler.set_epoch(epoch)
                for image, target in train_loader:
            §step
                scheduler.step()
                if is_main_process() and (epoch + 1) % 5 == 0:
                    wt, tc, et = dice_score(§mv, val_loader, device)
                    print(f"epoch {epoch + 1} dice WT {wt:.3f} TC {tc:.3f} ET {et:.3f}", flush=True)
                    save_checkpoint({"model": §mv.state_dict(), "epoch": epoch}, §out, f"ep{epoch + 1}")
            ''', epochs=a["epochs"], step=indent(step, 8), mv=mv, out=a["output_dir"])
    else:
        loop = fill('''
            step = 0
            scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=§steps)
            while step < §steps:
                for image, target in train_loader:
            §step
                    scheduler.step()
                    if step >= §steps:
                        break
            save_checkpoint({"model": §mv.state_dict(), "step": step}, §out, "final")
            ''', steps=a["max_steps"], step=indent(step, 8), mv=mv, out=a["output_dir"])
    local = ("from brats_data import BraTSSlices\n" + ("" if monai else "from models import build_model\n") +
             "from utils.checkpoint import save_checkpoint\nfrom utils.dist import init_distributed, is_main_process")
    text = _module("Train a 2D U-Net on BraTS 2021 slices (WT/TC/ET regions).",
                   "import time\n\nimport torch\nimport torch.nn as nn\n"
                   "from torch.nn.parallel import DistributedDataParallel as DDP\nfrom torch.utils.data import DataLoader\n"
                   "from torch.utils.data.distributed import DistributedSampler\n" + imports,
                   style, helpers, body + "\n" + loop, local=local)
    ctx.files["train.py"] = text
    ctx.files.update(style.files)
    reqs = ["torch>=2.1", "nibabel>=5.0", "numpy", "scipy"] + (["monai>=1.3"] if monai else [])
    return Entry("train.py", style.cli, style.env, reqs + _style_reqs(cfg.style), summary="2D U-Net on BraTS 2021")


# --------------------------------------------------------------------------------------------- contrastive


def render_contrastive(ctx: Ctx) -> Entry:
    cfg = ctx.cfg
    hf = ctx.chance(0.35)
    model_id = "openai/clip-vit-large-patch14" if hf else "ViT-L-14"
    shards = _pick(ctx, ("/datasets/wit/shards/wit-{000000..002047}.tar", "/mnt/data/wit_base/train-{00000..01023}.tar"))
    params = [
        Param("model", model_id, "model", "CLIP architecture", truth="model_name",
              decoys=("ViT-B-32", "RN50") if not hf else ("openai/clip-vit-base-patch32",)),
        Param("train_data", shards, "data", "webdataset shards of WIT (image, caption) pairs", truth="dataset",
              names=("train_data", "train_shards"), decoys=("/datasets/cc3m/{00000..00331}.tar",)),
        Param("dataset", "wit", "data", "dataset name (logging only)", names=("dataset_type", "dataset")),
        Param("workers", cfg.num_workers, "data", "dataloader workers", truth="num_workers", decoys=(4, 8)),
        Param("batch_size", cfg.batch_size, "train", "image-text pairs per GPU", truth="batch_size", decoys=(256, 128)),
        _iter_param(ctx),
        Param("lr", cfg.learning_rate, "optim", "peak learning rate", truth="learning_rate", decoys=(5e-4, 1e-3)),
        Param("weight_decay", 0.2, "optim", "AdamW weight decay", names=("wd", "weight_decay")),
        Param("warmup_steps", 2000, "optim", "warm-up steps"),
        Param("precision", "amp" if cfg.precision != "fp32" else "fp32", "train", "amp / fp32"),
    ]
    params = _common_tail(ctx, params)
    style = _apply_style(
        ctx, params, exp_name="clip_vitl14_wit",
        hydra_names={"model": "vit_l_14", "dataset": "wit", "optim": "adamw"},
        hydra_alt={"conf/dataset/cc3m.yaml": "train_data: /datasets/cc3m/{00000..00331}.tar\n"},
        decoy_yaml="clip_rn50_cc3m\nmodel:\n  model: RN50\ndata:\n  train_data: /datasets/cc3m/{00000..00331}.tar\n"
                   "train:\n  batch_size: 256\n  epochs: 30\n",
        description="CLIP contrastive pre-training",
    )
    a = style.acc
    mv = ctx.model_var
    _add_utils(ctx)
    if hf:
        imports = "from transformers import CLIPConfig, CLIPModel, CLIPProcessor"
        build = fill('''
            clip_config = CLIPConfig.from_pretrained(§model)
            §mv = CLIPModel(clip_config).to(device)  # trained from scratch
            processor = CLIPProcessor.from_pretrained(§model)
            preprocess = lambda img: processor(images=img, return_tensors="pt")["pixel_values"][0]
            tokenize = lambda txt: processor(text=txt, padding="max_length", truncation=True, max_length=77,
                                             return_tensors="pt")["input_ids"]
            ''', model=a["model"], mv=mv)
        forward = "out = §mv(input_ids=texts, pixel_values=images)\nimage_features, text_features = out.image_embeds, out.text_embeds\nlogit_scale = unwrap(§mv).logit_scale.exp()"
    else:
        imports = "import open_clip"
        build = fill('''
            §mv, preprocess, _ = open_clip.create_model_and_transforms(§model, pretrained=None, device=device)
            tokenize = open_clip.get_tokenizer(§model)
            ''', model=a["model"], mv=mv)
        forward = "image_features, text_features, logit_scale = §mv(images, texts)"
    helpers = fill('''
        def unwrap(model):
            return model.module if hasattr(model, "module") else model


        def clip_loss(image_features, text_features, logit_scale):
            """Symmetric InfoNCE over the global batch (features gathered from every rank)."""
            if dist.is_initialized():
                all_img = [torch.zeros_like(image_features) for _ in range(dist.get_world_size())]
                all_txt = [torch.zeros_like(text_features) for _ in range(dist.get_world_size())]
                dist.all_gather(all_img, image_features)
                dist.all_gather(all_txt, text_features)
                all_img[dist.get_rank()] = image_features
                all_txt[dist.get_rank()] = text_features
                image_features, text_features = torch.cat(all_img), torch.cat(all_txt)
            image_features = F.normalize(image_features, dim=-1)
            text_features = F.normalize(text_features, dim=-1)
            logits = logit_scale * image_features @ text_features.t()
            labels = torch.arange(logits.size(0), device=logits.device)
            return (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels)) / 2


        def make_loader(shards, preprocess, tokenize, batch_size, workers):
            dataset = (
                wds.WebDataset(shards, resampled=True, shardshuffle=True, nodesplitter=wds.split_by_node)
                .shuffle(5000)
                .decode("pilrgb")
                .to_tuple("jpg;png", "txt")
                .map_tuple(preprocess, lambda t: tokenize([t])[0])
                .batched(batch_size, partial=False)
            )
            return wds.WebLoader(dataset, batch_size=None, num_workers=workers, persistent_workers=True)
        ''')
    total = a["max_steps"] if "max_steps" in a else f"{a['epochs']} * 10000"
    body = fill('''
        local_rank, world_size = init_distributed()
        device = torch.device("cuda", local_rank)
        torch.manual_seed(§seed)
        §build
        if world_size > 1:
            §mv = DDP(§mv, device_ids=[local_rank])
        loader = make_loader(§shards, preprocess, tokenize, §bs, §workers)
        params_decay = [p for n, p in §mv.named_parameters() if p.ndim >= 2]
        params_no_decay = [p for n, p in §mv.named_parameters() if p.ndim < 2]
        optimizer = torch.optim.AdamW([{"params": params_decay, "weight_decay": §wd},
                                       {"params": params_no_decay, "weight_decay": 0.0}], lr=§lr, betas=(0.9, 0.98), eps=1e-6)
        scaler = torch.cuda.amp.GradScaler(enabled=§prec == "amp")
        total_steps = §total
        step, tic = 0, time.time()
        for images, texts in loader:
            images, texts = images.to(device, non_blocking=True), texts.to(device, non_blocking=True)
            lr = cosine_lr(optimizer, §lr, step, total_steps, §warm)
            with torch.autocast("cuda", enabled=§prec == "amp"):
                §fwd
                loss = clip_loss(image_features, text_features, logit_scale)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            with torch.no_grad():
                unwrap(§mv).logit_scale.clamp_(0, math.log(100))
            step += 1
            if step % §log == 0 and is_main_process():
                dt = (time.time() - tic) / §log
                print(f"Train step {step}/{total_steps} loss {loss.item():.4f} lr {lr:.3e} "
                      f"samples/s {§bs * world_size / dt:.1f}", flush=True)
                tic = time.time()
            if step % 10000 == 0 and is_main_process():
                save_checkpoint({"model": unwrap(§mv).state_dict(), "step": step}, §out, f"step{step}")
            if step >= total_steps:
                break
        ''', build=build.rstrip(), mv=mv, shards=a["train_data"], bs=a["batch_size"],
        workers=a["workers"], wd=a["weight_decay"], lr=a["lr"], prec=a["precision"], total=total,
        warm=a["warmup_steps"], fwd=fill(forward, mv=mv).replace("\n", "\n        "), log=a["log_interval"],
        out=a["output_dir"], seed=a["seed"])
    local = "from utils.checkpoint import save_checkpoint\nfrom utils.dist import init_distributed, is_main_process\nfrom utils.lr_sched import cosine_lr"
    text = _module("CLIP ViT-L/14 contrastive pre-training on WIT image-caption pairs (webdataset shards).",
                   "import math\nimport time\n\nimport torch\nimport torch.distributed as dist\nimport torch.nn.functional as F\n"
                   "import webdataset as wds\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n" + imports,
                   style, helpers, body, local=local)
    ctx.files["train_clip.py"] = text
    ctx.files.update(style.files)
    reqs = ["torch>=2.1", "webdataset>=0.2.86", "pillow"] + (["transformers>=4.40"] if hf else ["open_clip_torch>=2.24"])
    return Entry("train_clip.py", style.cli, style.env, reqs + _style_reqs(cfg.style), summary=f"CLIP {model_id} on WIT")


# --------------------------------------------------------------------------------------------- recsys

DLRM_MODULE = '''"""DLRM (Naumov et al. 2019): embedding bags for sparse features, MLPs for dense ones, dot interaction."""

import numpy as np
import torch
import torch.nn as nn


def mlp(sizes, sigmoid_layer=-1):
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1], bias=True))
        layers.append(nn.Sigmoid() if i == sigmoid_layer else nn.ReLU())
    return nn.Sequential(*layers)


class DLRM_Net(nn.Module):
    def __init__(self, embedding_dim, table_sizes, bottom_mlp, top_mlp):
        super().__init__()
        self.embeddings = nn.ModuleList(nn.EmbeddingBag(n, embedding_dim, mode="sum", sparse=True) for n in table_sizes)
        for emb, n in zip(self.embeddings, table_sizes):
            bound = np.sqrt(1.0 / n)
            nn.init.uniform_(emb.weight, -bound, bound)
        self.bot_l = mlp(bottom_mlp)
        n_feat = len(table_sizes) + 1
        inter = n_feat * (n_feat - 1) // 2 + embedding_dim
        self.top_l = mlp([inter] + list(top_mlp), sigmoid_layer=len(top_mlp) - 2)

    def interact(self, dense, sparse):
        t = torch.cat([dense] + sparse, dim=1).view(dense.size(0), -1, dense.size(1))
        z = torch.bmm(t, t.transpose(1, 2))
        li, lj = torch.tril_indices(t.size(1), t.size(1), offset=-1)
        return torch.cat([dense, z[:, li, lj]], dim=1)

    def forward(self, dense_x, offsets, indices):
        x = self.bot_l(dense_x)
        ly = [emb(indices[k], offsets[k]) for k, emb in enumerate(self.embeddings)]
        return self.top_l(self.interact(x, ly))
'''

CRITEO_DATA = '''"""Criteo click logs, pre-processed to per-day .npz files (13 dense, 26 categorical features)."""

import os

import numpy as np
import torch
from torch.utils.data import Dataset

# counts of the hashed categorical features (max 40M rows per table, as in the MLPerf setup)
TB_TABLE_SIZES = [39884406, 39043, 17289, 7420, 20263, 3, 7120, 1543, 63, 38532951, 2953546, 403346, 10, 2208,
                  11938, 155, 4, 976, 14, 39979771, 25641295, 39664984, 585935, 12972, 108, 36]
KAGGLE_TABLE_SIZES = [1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3, 93145, 5683, 8351593, 3194, 27, 14992,
                      5461306, 10, 5652, 2173, 4, 7046547, 18, 15, 286181, 105, 142572]


class CriteoDays(Dataset):
    def __init__(self, root, days, max_ind_range=40000000):
        self.files = [os.path.join(root, f"day_{d}_processed.npz") for d in days]
        self.max_ind_range = max_ind_range
        self._load(0)

    def _load(self, i):
        data = np.load(self.files[i])
        self.dense = np.log1p(data["X_int"].astype(np.float32).clip(min=0))
        self.sparse = data["X_cat"] % self.max_ind_range
        self.labels = data["y"].astype(np.float32)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.dense[i], self.sparse[i], self.labels[i]


def collate(batch):
    dense, sparse, labels = zip(*batch)
    sparse = torch.as_tensor(np.stack(sparse), dtype=torch.long)
    offsets = [torch.arange(len(batch)) for _ in range(sparse.size(1))]
    indices = [sparse[:, k] for k in range(sparse.size(1))]
    return torch.as_tensor(np.stack(dense)), offsets, indices, torch.as_tensor(labels).view(-1, 1)
'''


def render_recsys(ctx: Ctx) -> Entry:
    cfg = ctx.cfg
    tb = cfg.dataset == "criteo-tb"
    pinned = cfg.style == "argparse" and ctx.chance(0.7)  # dlrm_s_pytorch.py naming
    data_root = _pick(ctx, ("/datasets/criteo_terabyte", "/mnt/recsys/criteo-1tb")) if tb else \
        _pick(ctx, ("/datasets/criteo_kaggle", "/mnt/recsys/criteo-kaggle"))
    set_name = "terabyte" if tb else "kaggle"

    def nm(*names: str) -> tuple[str, ...]:
        return names[:1] if pinned else names

    params = [
        Param("arch", "dlrm", "model", "model", names=nm("arch", "model"), truth="model_name"),
        Param("arch_sparse_feature_size", 128 if tb else 16, "model", "embedding dimension",
              names=nm("arch_sparse_feature_size", "embedding_dim")),
        Param("arch_mlp_bot", "13-512-256-128" if tb else "13-512-256-64-16", "model", "bottom MLP sizes",
              names=nm("arch_mlp_bot", "bottom_mlp")),
        Param("arch_mlp_top", "1024-1024-512-256-1" if tb else "512-256-1", "model", "top MLP sizes",
              names=nm("arch_mlp_top", "top_mlp")),
        Param("data_set", set_name, "data", "kaggle or terabyte", names=nm("data_set", "dataset")),
        Param("data_path", data_root, "data", "pre-processed day_*.npz files", names=nm("processed_data_dir", "data_dir"),
              truth="dataset"),
        Param("workers", cfg.num_workers, "data", "dataloader workers", names=nm("num_workers", "workers"),
              truth="num_workers"),
        Param("batch_size", cfg.batch_size, "train", "mini-batch size per GPU", names=nm("mini_batch_size", "batch_size"),
              truth="batch_size", decoys=(128, 4096, 32768)),
    ]
    if cfg.iteration_type == "epochs":
        params.append(Param("epochs", cfg.iterations, "train", "passes over the data", names=nm("nepochs", "epochs"),
                            truth="iterations", decoys=(2, 5)))
    else:
        params.append(Param("max_steps", cfg.iterations, "train", "number of mini-batches to train on",
                            names=nm("num_batches", "max_steps"), truth="iterations", decoys=(0, 1000000)))
    params += [
        Param("lr", cfg.learning_rate, "optim", "SGD learning rate", names=nm("learning_rate", "lr"),
              truth="learning_rate", decoys=(0.01, 15.0, 0.1)),
        Param("loss_threshold", 0.0, "train", "stop when the loss falls below this", names=nm("loss_threshold",)),
        Param("log_interval", _pick(ctx, (1024, 2048, 4096)), "misc", "mini-batches between prints",
              names=nm("print_freq", "log_interval")),
        Param("output_dir", "./ckpt", "misc", "model save path", names=nm("save_model", "output_dir")),
        Param("seed", 123, "misc", "random seed", names=nm("numpy_rand_seed", "seed")),
    ]
    style = _apply_style(
        ctx, params, exp_name=f"dlrm_criteo_{set_name}",
        hydra_names={"model": "dlrm", "dataset": f"criteo_{set_name}"},
        decoy_yaml="dlrm_kaggle_small\nmodel:\n  arch: dlrm\n  arch_sparse_feature_size: 16\ndata:\n  data_set: kaggle\n"
                   "train:\n  batch_size: 128\n  epochs: 1\n",
        legacy={"DATA_SET": "kaggle", "MINI_BATCH_SIZE": 128, "LEARNING_RATE": 0.1, "NUM_BATCHES": 0},
        description="Deep Learning Recommendation Model (DLRM)", cli_share=0.6 if pinned else 0.3,
    )
    a = style.acc
    mv = ctx.model_var
    _add_utils(ctx)
    ctx.files["dlrm/__init__.py"] = "from .model import DLRM_Net\n"
    ctx.files["dlrm/model.py"] = DLRM_MODULE
    ctx.files["dlrm/criteo.py"] = CRITEO_DATA
    days = "range(23)" if tb else "range(7)"
    total = a["max_steps"] if "max_steps" in a else f"{a['epochs']} * len(loader)"
    body = fill('''
        local_rank, world_size = init_distributed()
        device = torch.device("cuda", local_rank)
        np.random.seed(§seed)
        torch.manual_seed(§seed)
        table_sizes = TB_TABLE_SIZES if §set == "terabyte" else KAGGLE_TABLE_SIZES
        bot = [int(v) for v in §bot.split("-")]
        top = [int(v) for v in §top.split("-")]
        assert §arch == "dlrm", "only the DLRM architecture is implemented"
        §mv = DLRM_Net(§emb, table_sizes, bot, top).to(device)
        if world_size > 1:
            §mv = DDP(§mv, device_ids=[local_rank], broadcast_buffers=False)
        train_set = CriteoDays(§data, days=§days)
        sampler = DistributedSampler(train_set, shuffle=False) if world_size > 1 else None
        loader = DataLoader(train_set, batch_size=§bs, sampler=sampler, num_workers=§workers, collate_fn=collate,
                            drop_last=True, pin_memory=True)
        optimizer = torch.optim.SGD(§mv.parameters(), lr=§lr)
        loss_fn = torch.nn.BCELoss(reduction="mean")
        total_batches = §total
        step, tic = 0, time.time()
        while step < total_batches:
            for dense, offsets, indices, labels in loader:
                dense, labels = dense.to(device), labels.to(device)
                offsets = [o.to(device) for o in offsets]
                indices = [i.to(device) for i in indices]
                probs = §mv(dense, offsets, indices)
                loss = loss_fn(probs, labels)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                step += 1
                if step % §log == 0 and is_main_process():
                    ms = 1000.0 * (time.time() - tic) / §log
                    print(f"Finished training it {step}/{total_batches}, {ms:.2f} ms/it, loss {loss.item():.6f}",
                          flush=True)
                    tic = time.time()
                if step >= total_batches or loss.item() < §thr:
                    break
        if is_main_process():
            torch.save({"state_dict": §mv.state_dict(), "iter": step}, §out)
        ''', seed=a["seed"], set=a["data_set"], bot=a["arch_mlp_bot"], top=a["arch_mlp_top"], mv=mv,
        emb=a["arch_sparse_feature_size"], data=a["data_path"], days=days, bs=a["batch_size"], workers=a["workers"],
        lr=a["lr"], total=total, log=a["log_interval"], thr=a["loss_threshold"], out=a["output_dir"], arch=a["arch"])
    local = ("from dlrm import DLRM_Net\nfrom dlrm.criteo import KAGGLE_TABLE_SIZES, TB_TABLE_SIZES, CriteoDays, collate\n"
             "from utils.dist import init_distributed, is_main_process")
    text = _module(f"DLRM training on Criteo {'Terabyte' if tb else 'Kaggle'} click logs.",
                   "import time\n\nimport numpy as np\nimport torch\n"
                   "from torch.nn.parallel import DistributedDataParallel as DDP\nfrom torch.utils.data import DataLoader\n"
                   "from torch.utils.data.distributed import DistributedSampler",
                   style, "", body, local=local)
    script = "dlrm_s_pytorch.py" if pinned else _pick(ctx, ("train.py", "train_dlrm.py"))
    ctx.files[script] = text
    ctx.files.update(style.files)
    return Entry(script, style.cli, style.env, ["torch>=2.1", "numpy", "scikit-learn", "tqdm"] + _style_reqs(cfg.style),
                 summary=f"DLRM on Criteo {set_name}")


# --------------------------------------------------------------------------------------------- HF programs


def _hf_training_args(ctx: Ctx, *, extra: Sequence[tuple[str, Any, str | None]] = ()) -> list[tuple[str, Any, str | None]]:
    """(flag, value, truth field) for the TrainingArguments part of an HF command line."""
    cfg = ctx.cfg
    out: list[tuple[str, Any, str | None]] = [("output_dir", f"./outputs/{cfg.family}", None)]
    if cfg.iteration_type == "epochs":
        out.append(("num_train_epochs", cfg.iterations, "iterations"))
    else:
        if ctx.chance(0.4):
            out.append(("num_train_epochs", 3, None))  # ignored: max_steps wins
            ctx.trap("ignored_arg")
        out.append(("max_steps", cfg.iterations, "iterations"))
    out.append(("per_device_train_batch_size", cfg.batch_size, "batch_size"))
    out.append(("per_device_eval_batch_size", max(1, cfg.batch_size * 2 if cfg.batch_size < 8 else cfg.batch_size), None))
    if cfg.grad_accum > 1 or ctx.chance(0.3):
        out.append(("gradient_accumulation_steps", cfg.grad_accum, None))
    out.append(("learning_rate", cfg.learning_rate, "learning_rate"))
    out += [("weight_decay", 0.0 if ctx.chance(0.5) else 0.01, None), ("warmup_ratio", 0.03, None),
            ("lr_scheduler_type", "cosine" if ctx.chance(0.7) else "linear", None),
            ("logging_steps", _pick(ctx, (1, 10, 50)), None), ("save_strategy", "steps", None),
            ("save_steps", _pick(ctx, (500, 1000, 2000)), None), ("save_total_limit", 2, None)]
    if cfg.num_workers > 0 or ctx.chance(0.5):
        out.append(("dataloader_num_workers", cfg.num_workers, "num_workers"))
    else:
        ctx.evidence["num_workers"] = ("<transformers default>", "dataloader_num_workers=0", "0")
        ctx.trap("library_default")
    if cfg.precision == "bf16":
        out.append(("bf16", True, None))
    elif cfg.precision == "fp16":
        out.append(("fp16", True, None))
    out += list(extra)
    out.append(("report_to", _pick(ctx, ("wandb", "tensorboard", "none")), None))
    return out


def _hf_cli(ctx: Ctx, items: list[tuple[str, Any, str | None]], *, as_json: str | None) -> list[str]:
    """Turn (flag, value, truth) into CLI args, or into a JSON args file passed as the only argument."""
    if as_json:
        data = {k: v for k, v, _ in items}
        text = json.dumps(data, indent=2) + "\n"
        ctx.files[as_json] = text
        for k, v, truth in items:
            if truth:
                lit = json.dumps(v)
                ctx.evidence[truth] = (as_json, f'"{k}": {lit}', lit)
        return [as_json]
    cli: list[str] = []
    for k, v, truth in items:
        lit = sh_lit(v) if not isinstance(v, bool) else "True"
        cli += [f"--{k}", lit]
        if truth:
            ctx.evidence[truth] = ("§LAUNCH§", f"--{k} {lit}", lit)
    return cli


HF_PARSE = '''    parser = transformers.HfArgumentParser((ModelArguments, DataArguments, TrainingArguments))
    if len(sys.argv) == 2 and sys.argv[1].endswith(".json"):
        model_args, data_args, training_args = parser.parse_json_file(json_file=os.path.abspath(sys.argv[1]))
    else:
        model_args, data_args, training_args = parser.parse_args_into_dataclasses()'''

ALPACA_PROMPTS = '''PROMPT_DICT = {
    "prompt_input": (
        "Below is an instruction that describes a task, paired with an input that provides further context. "
        "Write a response that appropriately completes the request.\\n\\n"
        "### Instruction:\\n{instruction}\\n\\n### Input:\\n{input}\\n\\n### Response:"
    ),
    "prompt_no_input": (
        "Below is an instruction that describes a task. "
        "Write a response that appropriately completes the request.\\n\\n"
        "### Instruction:\\n{instruction}\\n\\n### Response:"
    ),
}
IGNORE_INDEX = -100'''

SFT_DATA = ALPACA_PROMPTS + '''


def format_example(example):
    template = PROMPT_DICT["prompt_input"] if example.get("input") else PROMPT_DICT["prompt_no_input"]
    return template.format_map(example), f"{example['output']}"


def tokenize_example(example, tokenizer, max_length):
    source, target = format_example(example)
    source_ids = tokenizer(source, add_special_tokens=True)["input_ids"]
    target_ids = tokenizer(target + tokenizer.eos_token, add_special_tokens=False)["input_ids"]
    input_ids = (source_ids + target_ids)[:max_length]
    labels = ([IGNORE_INDEX] * len(source_ids) + target_ids)[:max_length]
    return {"input_ids": input_ids, "labels": labels}


class SupervisedCollator:
    def __init__(self, tokenizer):
        self.pad_id = tokenizer.pad_token_id

    def __call__(self, batch):
        width = max(len(ex["input_ids"]) for ex in batch)
        input_ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
        labels = torch.full((len(batch), width), IGNORE_INDEX, dtype=torch.long)
        for i, ex in enumerate(batch):
            input_ids[i, : len(ex["input_ids"])] = torch.tensor(ex["input_ids"])
            labels[i, : len(ex["labels"])] = torch.tensor(ex["labels"])
        return {"input_ids": input_ids, "labels": labels, "attention_mask": input_ids.ne(self.pad_id)}
'''

DS_ZERO3 = {
    "bf16": {"enabled": "auto"},
    "fp16": {"enabled": "auto", "loss_scale": 0, "initial_scale_power": 16},
    "zero_optimization": {"stage": 3, "overlap_comm": True, "contiguous_gradients": True,
                          "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
                          "stage3_param_persistence_threshold": "auto", "stage3_gather_16bit_weights_on_model_save": True},
    "gradient_accumulation_steps": "auto",
    "gradient_clipping": "auto",
    "train_batch_size": "auto",
    "train_micro_batch_size_per_gpu": "auto",
    "steps_per_print": 10,
    "wall_clock_breakdown": False,
}


def _sft_data_source(ctx: Ctx) -> tuple[str, bool]:
    """(data path or hub id, is_local_json)."""
    ds = ctx.cfg.dataset_spec
    if ctx.chance(0.5):
        return ds.hub_id, False
    return _pick(ctx, (ds.path, "./data/" + ds.path.rsplit("/", 1)[-1])), True


def render_causal_sft(ctx: Ctx) -> Entry:
    cfg = ctx.cfg
    variant = cfg.variant
    model_id = _pick(ctx, (variant.hub_id, variant.hub_id, f"/mnt/models/{variant.hub_id.split('/')[-1]}"))
    data_src, local_json = _sft_data_source(ctx)
    lora = cfg.finetune == "lora"
    mv = ctx.model_var
    reqs = ["torch>=2.1", "transformers>=4.40", "accelerate>=0.28", "datasets>=2.18", "sentencepiece", "deepspeed>=0.14"]
    reqs += ["peft>=0.10"] if lora else []
    lora_block = fill('''
        if §use_lora:
            lora_config = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.05, task_type="CAUSAL_LM",
                                     target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
            §mv = get_peft_model(§mv, lora_config)
            §mv.print_trainable_parameters()
        ''', use_lora="§LORA§", mv=mv)
    if cfg.style == "hf_args":
        ds_cfg = "configs/ds_zero3.json" if ctx.chance(0.6) else "ds_config_zero3.json"
        ctx.files[ds_cfg] = json.dumps(DS_ZERO3, indent=2) + "\n"
        decoy_default = _pick(ctx, ("facebook/opt-125m", "huggyllama/llama-7b", "gpt2"))
        ctx.trap("misleading_default")
        extra: list[tuple[str, Any]] = [("model_max_length", cfg.seq_len), ("gradient_checkpointing", True),
                                        ("tf32", True)]
        extra_items: list[tuple[str, Any, str | None]] = [(k, v, None) for k, v in extra]
        if cfg.launcher != "torchrun" or ctx.chance(0.5):
            extra_items.append(("deepspeed", ds_cfg, None))
        items: list[tuple[str, Any, str | None]] = [("model_name_or_path", model_id, "model_name"),
                                                    ("data_path", data_src, "dataset")]
        if lora:
            items.append(("use_lora", True, None))
        items += _hf_training_args(ctx) + extra_items
        as_json = "configs/sft_args.json" if ctx.chance(0.3) else None
        cli = _hf_cli(ctx, items, as_json=as_json)
        load = ('load_dataset("json", data_files=data_args.data_path)["train"]' if local_json
                else 'load_dataset(data_args.data_path, split="train")')
        text = fill('''
            """Supervised instruction fine-tuning (Alpaca format) with the HF Trainer; DeepSpeed ZeRO-3 via --deepspeed."""

            import os
            import sys
            from dataclasses import dataclass, field
            from typing import Optional

            import torch
            import transformers
            from datasets import load_dataset
            from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer
            §peft_import
            from sft_data import SupervisedCollator, tokenize_example


            @dataclass
            class ModelArguments:
                model_name_or_path: Optional[str] = field(default="§decoy")
                use_lora: bool = field(default=False, metadata={"help": "train LoRA adapters instead of all weights"})


            @dataclass
            class DataArguments:
                data_path: str = field(default=None, metadata={"help": "Path to the training data (json) or a hub id."})


            @dataclass
            class TrainingArguments(transformers.TrainingArguments):
                cache_dir: Optional[str] = field(default=None)
                optim: str = field(default="adamw_torch")
                model_max_length: int = field(default=512, metadata={"help": "Maximum sequence length; longer is truncated."})


            def train():
            §parse
                tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path, model_max_length=training_args.model_max_length,
                                                          padding_side="right", use_fast=True)
                if tokenizer.pad_token is None:
                    tokenizer.pad_token = tokenizer.eos_token
                §mv = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path, torch_dtype=torch.bfloat16,
                                                            cache_dir=training_args.cache_dir, attn_implementation="flash_attention_2")
            §lora
                raw = §load
                train_dataset = raw.map(lambda ex: tokenize_example(ex, tokenizer, training_args.model_max_length),
                                        remove_columns=raw.column_names, num_proc=8)
                trainer = Trainer(model=§mv, tokenizer=tokenizer, args=training_args, train_dataset=train_dataset,
                                  data_collator=SupervisedCollator(tokenizer))
                trainer.train()
                trainer.save_state()
                trainer.save_model(output_dir=training_args.output_dir)


            if __name__ == "__main__":
                train()
            ''', peft_import="from peft import LoraConfig, get_peft_model" if lora else "", decoy=decoy_default,
            parse=HF_PARSE, mv=mv, lora=indent(lora_block.replace("§LORA§", "model_args.use_lora"), 4) if lora else "",
            load=load)
        ctx.files["train.py"] = text.replace("\n\n\n\n", "\n\n\n")
        ctx.files["sft_data.py"] = '"""Alpaca-style prompt formatting and collation."""\n\nimport torch\n\n' + SFT_DATA
        return Entry("train.py", cli, {}, reqs, summary=f"{variant.name} SFT on {cfg.dataset} (HF Trainer)")

    # accelerate custom loop with yaml or constants configs
    params = [
        Param("model", model_id, "model", "base model (hub id or local path)", names=("model_name_or_path", "base_model"),
              truth="model_name", decoys=("meta-llama/Llama-2-7b-hf", "mistralai/Mistral-7B-v0.1")),
        Param("use_lora", lora, "model", "LoRA adapters instead of full fine-tuning"),
        Param("data_path", data_src, "data", "alpaca json or hub id", names=("data_path", "dataset"), truth="dataset",
              decoys=("databricks/databricks-dolly-15k",)),
        Param("seq_len", cfg.seq_len, "data", "max tokens per example"),
        Param("workers", cfg.num_workers, "data", "dataloader workers", truth="num_workers", decoys=(4, 8)),
        Param("batch_size", cfg.batch_size, "train", "micro batch per GPU", names=("micro_batch_size", "batch_size"),
              truth="batch_size", decoys=(8, 16)),
        Param("grad_accum", cfg.grad_accum, "train", "gradient accumulation steps",
              names=("gradient_accumulation_steps", "grad_accum")),
        _iter_param(ctx),
        Param("lr", cfg.learning_rate, "optim", "peak learning rate", truth="learning_rate", decoys=(1e-4, 3e-4, 2e-5)),
        Param("warmup_ratio", 0.03, "optim", "warm-up fraction"),
        Param("weight_decay", 0.0, "optim", "weight decay"),
    ]
    params = _common_tail(ctx, params)
    style = _apply_style(
        ctx, params, exp_name=f"sft_{cfg.model_name.replace('.', '_').replace('-', '_')}",
        decoy_yaml="sft_llama2_7b_dolly\nmodel:\n  model_name_or_path: meta-llama/Llama-2-7b-hf\ndata:\n"
                   "  data_path: databricks/databricks-dolly-15k\ntrain:\n  micro_batch_size: 8\n  num_epochs: 3\n",
        legacy={"BASE_MODEL": "meta-llama/Llama-2-7b-hf", "DATA_PATH": "databricks/databricks-dolly-15k",
                "MICRO_BATCH_SIZE": 8, "NUM_EPOCHS": 3},
    )
    a = style.acc
    load = ('load_dataset("json", data_files=§data)["train"]' if local_json else 'load_dataset(§data, split="train")')
    if cfg.iteration_type == "epochs":
        total = f"{a['epochs']} * math.ceil(len(loader) / §accum)"
        loop_head = f"for epoch in range({a['epochs']}):"
    else:
        total = a["max_steps"]
        loop_head = "while completed_steps < total_steps:"
    body = fill('''
        accelerator = Accelerator(gradient_accumulation_steps=§accum, mixed_precision="bf16", log_with="wandb")
        set_seed(§seed)
        tokenizer = AutoTokenizer.from_pretrained(§model, use_fast=True)
        tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token
        §mv = AutoModelForCausalLM.from_pretrained(§model, torch_dtype=torch.bfloat16)
        §mv.gradient_checkpointing_enable()
        §lora
        raw = §load
        with accelerator.main_process_first():
            train_set = raw.map(lambda ex: tokenize_example(ex, tokenizer, §seq), remove_columns=raw.column_names)
        loader = DataLoader(train_set, batch_size=§bs, shuffle=True, collate_fn=SupervisedCollator(tokenizer),
                            num_workers=§workers)
        optimizer = torch.optim.AdamW(§mv.parameters(), lr=§lr, weight_decay=§wd)
        total_steps = §total
        scheduler = get_cosine_schedule_with_warmup(optimizer, int(§warm * total_steps), total_steps)
        §mv, optimizer, loader, scheduler = accelerator.prepare(§mv, optimizer, loader, scheduler)
        completed_steps = 0
        §loop_head
            §mv.train()
            for batch in loader:
                with accelerator.accumulate(§mv):
                    loss = §mv(**batch).loss
                    accelerator.backward(loss)
                    optimizer.step()
                    scheduler.step()
                    optimizer.zero_grad()
                if accelerator.sync_gradients:
                    completed_steps += 1
                    if completed_steps % §log == 0:
                        accelerator.print(f"step {completed_steps}/{total_steps} loss {loss.item():.4f} "
                                          f"lr {scheduler.get_last_lr()[0]:.2e}")
                if completed_steps >= total_steps:
                    break
        accelerator.wait_for_everyone()
        accelerator.unwrap_model(§mv).save_pretrained(§out, save_function=accelerator.save)
        ''', accum=a["grad_accum"], seed=a["seed"], model=a["model"], mv=mv,
        lora=lora_block.replace("§LORA§", a["use_lora"]).rstrip(),
        load=fill(load, data=a["data_path"]), seq=a["seq_len"], bs=a["batch_size"], workers=a["workers"], lr=a["lr"],
        wd=a["weight_decay"], total=fill(total, accum=a["grad_accum"]), warm=a["warmup_ratio"], loop_head=loop_head,
        log=a["log_interval"], out=a["output_dir"])
    text = _module(f"Instruction fine-tuning of {variant.name} on {cfg.dataset} with Accelerate.",
                   "import math\n\nimport torch\nfrom accelerate import Accelerator\nfrom accelerate.utils import set_seed\n"
                   "from datasets import load_dataset\nfrom peft import LoraConfig, get_peft_model\n"
                   "from torch.utils.data import DataLoader\n"
                   "from transformers import AutoModelForCausalLM, AutoTokenizer, get_cosine_schedule_with_warmup",
                   style, "", body, local="from sft_data import SupervisedCollator, tokenize_example")
    ctx.files["finetune.py"] = text
    ctx.files["sft_data.py"] = '"""Alpaca-style prompt formatting and collation."""\n\nimport torch\n\n' + SFT_DATA
    ctx.files.update(style.files)
    if "peft" not in " ".join(reqs):
        reqs.append("peft>=0.10")
    return Entry("finetune.py", style.cli, style.env, reqs + _style_reqs(cfg.style),
                 summary=f"{variant.name} SFT on {cfg.dataset} (Accelerate loop)")


QA_PREP = '''"""SQuAD feature preparation: long contexts split into overlapping windows (doc stride)."""


def prepare_train_features(examples, tokenizer, max_seq_length=384, doc_stride=128):
    pad_right = tokenizer.padding_side == "right"
    examples["question"] = [q.lstrip() for q in examples["question"]]
    tokenized = tokenizer(
        examples["question" if pad_right else "context"],
        examples["context" if pad_right else "question"],
        truncation="only_second" if pad_right else "only_first",
        max_length=max_seq_length,
        stride=doc_stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        padding="max_length",
    )
    sample_mapping = tokenized.pop("overflow_to_sample_mapping")
    offset_mapping = tokenized.pop("offset_mapping")
    tokenized["start_positions"], tokenized["end_positions"] = [], []
    for i, offsets in enumerate(offset_mapping):
        input_ids = tokenized["input_ids"][i]
        cls_index = input_ids.index(tokenizer.cls_token_id)
        sequence_ids = tokenized.sequence_ids(i)
        answers = examples["answers"][sample_mapping[i]]
        if len(answers["answer_start"]) == 0:
            tokenized["start_positions"].append(cls_index)
            tokenized["end_positions"].append(cls_index)
            continue
        start_char = answers["answer_start"][0]
        end_char = start_char + len(answers["text"][0])
        token_start = 0
        while sequence_ids[token_start] != (1 if pad_right else 0):
            token_start += 1
        token_end = len(input_ids) - 1
        while sequence_ids[token_end] != (1 if pad_right else 0):
            token_end -= 1
        if not (offsets[token_start][0] <= start_char and offsets[token_end][1] >= end_char):
            tokenized["start_positions"].append(cls_index)
            tokenized["end_positions"].append(cls_index)
        else:
            while token_start < len(offsets) and offsets[token_start][0] <= start_char:
                token_start += 1
            tokenized["start_positions"].append(token_start - 1)
            while offsets[token_end][1] >= end_char:
                token_end -= 1
            tokenized["end_positions"].append(token_end + 1)
    return tokenized
'''


def render_qa(ctx: Ctx) -> Entry:
    cfg = ctx.cfg
    model_id = cfg.variant.hub_id if cfg.model_name != "deberta-large" else _pick(ctx, ("microsoft/deberta-large", "microsoft/deberta-v3-large"))
    if cfg.model_name == "bert-base":
        model_id = _pick(ctx, ("bert-base-uncased", "bert-base-cased", "bert-base-uncased"))
    ds_name = cfg.dataset_spec.hub_id.split("/")[-1]  # squad / squad_v2
    mv = ctx.model_var
    reqs = ["torch>=2.1", "transformers>=4.40", "datasets>=2.18", "evaluate", "accelerate>=0.28"]
    ctx.files["qa_utils.py"] = QA_PREP
    if cfg.style == "hf_args":
        extra: list[tuple[str, Any, str | None]] = [("max_seq_length", cfg.seq_len, None), ("doc_stride", 128, None),
                                                    ("do_train", True, None), ("do_eval", True, None)]
        items: list[tuple[str, Any, str | None]] = [("model_name_or_path", model_id, "model_name"),
                                                    ("dataset_name", ds_name, "dataset")]
        items += _hf_training_args(ctx, extra=extra)
        cli = _hf_cli(ctx, items, as_json="configs/qa_args.json" if ctx.chance(0.25) else None)
        text = fill('''
            """Fine-tune a transformer for extractive question answering (SQuAD), HF Trainer version of run_qa.py."""

            import os
            import sys
            from dataclasses import dataclass, field
            from typing import Optional

            import transformers
            from datasets import load_dataset
            from transformers import AutoModelForQuestionAnswering, AutoTokenizer, Trainer, TrainingArguments, default_data_collator

            from qa_utils import prepare_train_features


            @dataclass
            class ModelArguments:
                model_name_or_path: str = field(metadata={"help": "Path to pretrained model or model identifier"})
                cache_dir: Optional[str] = field(default=None)


            @dataclass
            class DataArguments:
                dataset_name: Optional[str] = field(default="squad", metadata={"help": "squad or squad_v2"})
                max_seq_length: int = field(default=384)
                doc_stride: int = field(default=128)
                preprocessing_num_workers: Optional[int] = field(default=None)


            def main():
            §parse
                transformers.set_seed(training_args.seed)
                raw = load_dataset(data_args.dataset_name)
                tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path, use_fast=True)
                §mv = AutoModelForQuestionAnswering.from_pretrained(model_args.model_name_or_path,
                                                                     cache_dir=model_args.cache_dir)
                train_features = raw["train"].map(
                    lambda ex: prepare_train_features(ex, tokenizer, data_args.max_seq_length, data_args.doc_stride),
                    batched=True, remove_columns=raw["train"].column_names,
                    num_proc=data_args.preprocessing_num_workers,
                )
                trainer = Trainer(model=§mv, args=training_args, train_dataset=train_features, tokenizer=tokenizer,
                                  data_collator=default_data_collator)
                result = trainer.train()
                trainer.save_model()
                trainer.log_metrics("train", result.metrics)
                trainer.save_metrics("train", result.metrics)


            if __name__ == "__main__":
                main()
            ''', parse=HF_PARSE.replace("TrainingArguments))", "TrainingArguments))"), mv=mv)
        script = _pick(ctx, ("run_qa.py", "train_squad.py"))
        ctx.files[script] = text
        return Entry(script, cli, {}, reqs, summary=f"{model_id} on {ds_name} (HF Trainer)")
    params = [
        Param("model", model_id, "model", "pretrained model", names=("model_name_or_path", "pretrained_model"),
              truth="model_name", decoys=("roberta-base", "distilbert-base-uncased")),
        Param("dataset", ds_name, "data", "HF dataset name", names=("dataset_name", "dataset"), truth="dataset",
              decoys=("squad_v2", "adversarial_qa")),
        Param("seq_len", cfg.seq_len, "data", "max sequence length"),
        Param("doc_stride", 128, "data", "overlap between context windows"),
        Param("workers", cfg.num_workers, "data", "dataloader workers", truth="num_workers", decoys=(2, 4)),
        Param("batch_size", cfg.batch_size, "train", "train batch size per GPU", truth="batch_size", decoys=(12, 8, 64)),
        _iter_param(ctx),
        Param("lr", cfg.learning_rate, "optim", "AdamW learning rate", truth="learning_rate", decoys=(5e-5, 3e-5, 1e-4)),
        Param("warmup_ratio", 0.1, "optim", "warm-up fraction"),
        Param("weight_decay", 0.01, "optim", "weight decay"),
        Param("fp16", cfg.precision != "fp32", "train", "mixed precision"),
    ]
    params = _common_tail(ctx, params)
    style = _apply_style(
        ctx, params, exp_name=f"{cfg.model_name.replace('-', '_')}_{ds_name}",
        decoy_yaml="roberta_base_squad_v2\nmodel:\n  model_name_or_path: roberta-base\ndata:\n  dataset_name: squad_v2\n"
                   "train:\n  batch_size: 12\n  epochs: 2\n",
        legacy={"MODEL_NAME": "distilbert-base-uncased", "BATCH_SIZE": 64, "EPOCHS": 2},
        hydra_names={"model": cfg.model_name.replace("-", "_"), "dataset": ds_name, "optim": "adamw"},
    )
    a = style.acc
    total = a["max_steps"] if "max_steps" in a else f"{a['epochs']} * len(loader)"
    body = fill('''
        accelerator = Accelerator(mixed_precision="fp16" if §fp16 else "no")
        set_seed(§seed)
        tokenizer = AutoTokenizer.from_pretrained(§model)
        §mv = AutoModelForQuestionAnswering.from_pretrained(§model)
        raw = load_dataset(§dataset)
        with accelerator.main_process_first():
            features = raw["train"].map(lambda ex: prepare_train_features(ex, tokenizer, §seq, §stride), batched=True,
                                        remove_columns=raw["train"].column_names)
        loader = DataLoader(features, shuffle=True, batch_size=§bs, collate_fn=default_data_collator,
                            num_workers=§workers)
        no_decay = ["bias", "LayerNorm.weight"]
        groups = [
            {"params": [p for n, p in §mv.named_parameters() if not any(nd in n for nd in no_decay)], "weight_decay": §wd},
            {"params": [p for n, p in §mv.named_parameters() if any(nd in n for nd in no_decay)], "weight_decay": 0.0},
        ]
        optimizer = torch.optim.AdamW(groups, lr=§lr)
        total_steps = §total
        scheduler = get_linear_schedule_with_warmup(optimizer, int(§warm * total_steps), total_steps)
        §mv, optimizer, loader, scheduler = accelerator.prepare(§mv, optimizer, loader, scheduler)
        step = 0
        while step < total_steps:
            for batch in loader:
                outputs = §mv(**batch)
                accelerator.backward(outputs.loss)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
                step += 1
                if step % §log == 0:
                    accelerator.print(f"step {step}/{total_steps} loss {outputs.loss.item():.4f}")
                if step >= total_steps:
                    break
        accelerator.wait_for_everyone()
        accelerator.unwrap_model(§mv).save_pretrained(§out)
        ''', fp16=a["fp16"], seed=a["seed"], model=a["model"], mv=mv, dataset=a["dataset"], seq=a["seq_len"],
        stride=a["doc_stride"], bs=a["batch_size"], workers=a["workers"], wd=a["weight_decay"], lr=a["lr"],
        total=total, warm=a["warmup_ratio"], log=a["log_interval"], out=a["output_dir"])
    text = _module("Extractive QA fine-tuning on SQuAD with a plain Accelerate loop.",
                   "import torch\nfrom accelerate import Accelerator\nfrom accelerate.utils import set_seed\n"
                   "from datasets import load_dataset\nfrom torch.utils.data import DataLoader\n"
                   "from transformers import AutoModelForQuestionAnswering, AutoTokenizer, default_data_collator, "
                   "get_linear_schedule_with_warmup",
                   style, "", body, local="from qa_utils import prepare_train_features")
    ctx.files["train_qa.py"] = text
    ctx.files.update(style.files)
    return Entry("train_qa.py", style.cli, style.env, reqs + _style_reqs(cfg.style), summary=f"{model_id} on {ds_name}")


T5_COLLATOR = '''"""T5 span corruption: mask 15% of tokens in spans of mean length 3, sentinel ids from the vocab end."""

import numpy as np
import torch


def random_spans_noise_mask(length, noise_density=0.15, mean_noise_span_length=3.0):
    num_noise = int(round(length * noise_density))
    num_spans = max(1, int(round(num_noise / mean_noise_span_length)))
    noise_lengths = np.random.multinomial(num_noise - num_spans, [1 / num_spans] * num_spans) + 1
    nonnoise_lengths = np.random.multinomial(length - num_noise - num_spans, [1 / num_spans] * num_spans) + 1
    interleaved = np.reshape(np.stack([nonnoise_lengths, noise_lengths], axis=1), [num_spans * 2])
    span_starts = np.cumsum(interleaved)[:-1]
    span_start_indicator = np.zeros((length,), dtype=np.int8)
    span_start_indicator[span_starts] = True
    span_num = np.cumsum(span_start_indicator)
    return (span_num % 2 == 1)[:length]


class SpanCorruptionCollator:
    def __init__(self, tokenizer, input_length=512, target_length=114):
        self.tokenizer = tokenizer
        self.input_length = input_length
        self.target_length = target_length

    def _sentinels(self, mask):
        start = mask - np.roll(mask, 1, axis=-1) * mask
        ids = np.where(start != 0, np.cumsum(start, axis=-1), start)
        return np.where(ids != 0, len(self.tokenizer) - ids, 0) - (mask - start)

    def __call__(self, examples):
        ids = np.stack([np.asarray(e["input_ids"][: self.input_length]) for e in examples])
        mask = np.stack([random_spans_noise_mask(ids.shape[1]) for _ in range(len(ids))]).astype(np.int8)
        inputs = np.where(self._sentinels(mask) != 0, self._sentinels(mask), ids)
        labels = np.where(self._sentinels(1 - mask) != 0, self._sentinels(1 - mask), ids)
        return {"input_ids": torch.as_tensor(inputs), "labels": torch.as_tensor(labels[:, : self.target_length])}
'''


def render_seq2seq(ctx: Ctx) -> Entry:
    cfg = ctx.cfg
    model_id = _pick(ctx, ("t5-small", "google-t5/t5-small", "google/t5-v1_1-small"))
    ds_id = _pick(ctx, ("allenai/c4", "c4"))
    mv = ctx.model_var
    reqs = ["torch>=2.1", "transformers>=4.40", "datasets>=2.18", "sentencepiece", "numpy"]
    ctx.files["span_corruption.py"] = T5_COLLATOR
    if cfg.style == "hf_args":
        use_config = ctx.chance(0.5)
        items = [(("config_name" if use_config else "model_name_or_path"), model_id, "model_name"),
                 ("tokenizer_name", model_id, None), ("dataset_name", ds_id, "dataset"),
                 ("dataset_config_name", "en", None), ("max_seq_length", cfg.seq_len, None)]
        items += _hf_training_args(ctx, extra=[("do_train", True, None)])
        cli = _hf_cli(ctx, items, as_json=None)
        text = fill('''
            """T5 span-corruption pre-training on C4 (streaming) with the HF Trainer."""

            import os
            import sys
            from dataclasses import dataclass, field
            from typing import Optional

            import transformers
            from datasets import load_dataset
            from transformers import AutoConfig, AutoTokenizer, T5ForConditionalGeneration, Trainer, TrainingArguments

            from span_corruption import SpanCorruptionCollator


            @dataclass
            class ModelArguments:
                model_name_or_path: Optional[str] = field(default=None, metadata={"help": "start from these weights"})
                config_name: Optional[str] = field(default=None, metadata={"help": "train from scratch with this config"})
                tokenizer_name: Optional[str] = field(default=None)


            @dataclass
            class DataArguments:
                dataset_name: str = field(default="wikitext")
                dataset_config_name: Optional[str] = field(default="wikitext-103-raw-v1")
                max_seq_length: int = field(default=512)


            def main():
            §parse
                tokenizer = AutoTokenizer.from_pretrained(model_args.tokenizer_name or model_args.model_name_or_path)
                if model_args.model_name_or_path:
                    §mv = T5ForConditionalGeneration.from_pretrained(model_args.model_name_or_path)
                else:
                    §mv = T5ForConditionalGeneration(AutoConfig.from_pretrained(model_args.config_name))
                raw = load_dataset(data_args.dataset_name, data_args.dataset_config_name, split="train", streaming=True)
                tokenized = raw.map(lambda ex: tokenizer(ex["text"], truncation=True, max_length=data_args.max_seq_length),
                                    batched=True, remove_columns=["text", "timestamp", "url"])
                trainer = Trainer(model=§mv, args=training_args, train_dataset=tokenized,
                                  data_collator=SpanCorruptionCollator(tokenizer, data_args.max_seq_length))
                trainer.train()
                trainer.save_model()


            if __name__ == "__main__":
                main()
            ''', parse=HF_PARSE, mv=mv)
        ctx.trap("misleading_default")
        ctx.files["run_t5_span.py"] = text
        return Entry("run_t5_span.py", cli, {}, reqs, summary=f"{model_id} span corruption on C4")
    params = [
        Param("model", model_id, "model", "T5 config to train from scratch", names=("model_config", "model_name"),
              truth="model_name", decoys=("t5-base", "google/t5-v1_1-base")),
        Param("dataset", ds_id, "data", "HF dataset", names=("dataset_name", "dataset"), truth="dataset",
              decoys=("wikitext", "bookcorpus")),
        Param("seq_len", cfg.seq_len, "data", "input tokens"),
        Param("workers", cfg.num_workers, "data", "dataloader workers", truth="num_workers", decoys=(4, 8)),
        Param("batch_size", cfg.batch_size, "train", "per-GPU batch", truth="batch_size", decoys=(32, 64, 128)),
        Param("grad_accum", cfg.grad_accum, "train", "gradient accumulation"),
        _iter_param(ctx),
        Param("lr", cfg.learning_rate, "optim", "Adafactor / AdamW learning rate", truth="learning_rate",
              decoys=(1e-2, 5e-3)),
        Param("warmup_steps", 10000 if cfg.iterations > 30000 else 1000, "optim", "warm-up steps"),
    ]
    params = _common_tail(ctx, params)
    style = _apply_style(
        ctx, params, exp_name="t5_small_c4",
        decoy_yaml="t5_base_wikitext\nmodel:\n  model_config: t5-base\ndata:\n  dataset_name: wikitext\ntrain:\n"
                   "  batch_size: 64\n  max_steps: 65536\n",
        legacy={"MODEL_CONFIG": "t5-base", "BATCH_SIZE": 128, "MAX_STEPS": 524288},
        hydra_names={"model": "t5_small", "dataset": "c4", "optim": "adafactor"},
    )
    a = style.acc
    total = a["max_steps"] if "max_steps" in a else f"{a['epochs']} * 100000"
    body = fill('''
        accelerator = Accelerator(gradient_accumulation_steps=§accum, mixed_precision="bf16")
        set_seed(§seed)
        tokenizer = AutoTokenizer.from_pretrained(§model)
        §mv = T5ForConditionalGeneration(AutoConfig.from_pretrained(§model))
        raw = load_dataset(§dataset, "en", split="train", streaming=True).shuffle(buffer_size=10000, seed=§seed)
        tokenized = raw.map(lambda ex: tokenizer(ex["text"], truncation=True, max_length=§seq), batched=True,
                            remove_columns=["text", "timestamp", "url"])
        loader = DataLoader(tokenized, batch_size=§bs, collate_fn=SpanCorruptionCollator(tokenizer, §seq),
                            num_workers=§workers)
        optimizer = Adafactor(§mv.parameters(), lr=§lr, scale_parameter=False, relative_step=False)
        total_steps = §total
        scheduler = get_linear_schedule_with_warmup(optimizer, §warm, total_steps)
        §mv, optimizer, loader, scheduler = accelerator.prepare(§mv, optimizer, loader, scheduler)
        step = 0
        for batch in loader:
            with accelerator.accumulate(§mv):
                loss = §mv(**batch).loss
                accelerator.backward(loss)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
            if accelerator.sync_gradients:
                step += 1
                if step % §log == 0:
                    accelerator.print(f"step {step}/{total_steps} loss {loss.item():.4f}")
                if step >= total_steps:
                    break
        accelerator.unwrap_model(§mv).save_pretrained(§out)
        ''', accum=a["grad_accum"], seed=a["seed"], model=a["model"], mv=mv, dataset=a["dataset"], seq=a["seq_len"],
        bs=a["batch_size"], workers=a["workers"], lr=a["lr"], total=total, warm=a["warmup_steps"],
        log=a["log_interval"], out=a["output_dir"])
    text = _module("T5-small span-corruption pre-training on C4 (streaming), Accelerate loop.",
                   "from accelerate import Accelerator\nfrom accelerate.utils import set_seed\n"
                   "from datasets import load_dataset\nfrom torch.utils.data import DataLoader\n"
                   "from transformers import AutoConfig, AutoTokenizer, T5ForConditionalGeneration, "
                   "get_linear_schedule_with_warmup\nfrom transformers.optimization import Adafactor",
                   style, "", body, local="from span_corruption import SpanCorruptionCollator")
    ctx.files["pretrain_t5.py"] = text
    ctx.files.update(style.files)
    return Entry("pretrain_t5.py", style.cli, style.env, reqs + ["accelerate>=0.28"] + _style_reqs(cfg.style),
                 summary=f"{model_id} span corruption on C4")


# --------------------------------------------------------------------------------------------- diffusion


def render_diffusion(ctx: Ctx) -> Entry:
    cfg = ctx.cfg
    model_id = _pick(ctx, ("runwayml/stable-diffusion-v1-5", "runwayml/stable-diffusion-v1-5", "/mnt/models/stable-diffusion-v1-5"))
    data_dir = _pick(ctx, ("/datasets/laion-aesthetics-6plus", "/mnt/data/laion2B-en-aesthetic/subset_512",
                           "/datasets/laion/improved_aesthetics_6plus"))
    pinned = cfg.style == "argparse"
    mv = ctx.model_var

    def nm(*names: str) -> tuple[str, ...]:
        return names[:1] if pinned else names

    params = [
        Param("model", model_id, "model", "Path to pretrained model or model identifier from huggingface.co/models.",
              names=nm("pretrained_model_name_or_path", "pretrained_model"), truth="model_name",
              decoys=("CompVis/stable-diffusion-v1-4", "stabilityai/stable-diffusion-2-1")),
        Param("data_path", data_dir, "data", "A folder containing the training data (imagefolder with metadata.jsonl).",
              names=nm("train_data_dir", "data_dir"), truth="dataset", decoys=("lambdalabs/pokemon-blip-captions",)),
        Param("resolution", cfg.image_size, "data", "Training resolution.", names=nm("resolution",)),
        Param("workers", cfg.num_workers, "data", "Number of subprocesses to use for data loading.",
              names=nm("dataloader_num_workers", "num_workers"), truth="num_workers", decoys=(0, 8)),
        Param("batch_size", cfg.batch_size, "train", "Batch size (per device) for the training dataloader.",
              names=nm("train_batch_size", "batch_size"), truth="batch_size", decoys=(16, 1)),
        Param("num_train_epochs", 100, "train", "Ignored when max_train_steps is set.", names=nm("num_train_epochs",)),
        Param("max_steps", cfg.iterations, "train", "Total number of training steps to perform.",
              names=nm("max_train_steps", "max_steps"), truth="iterations", decoys=(15000, 1000)),
        Param("grad_accum", cfg.grad_accum, "train", "Number of updates steps to accumulate.",
              names=nm("gradient_accumulation_steps", "grad_accum")),
        Param("lr", cfg.learning_rate, "optim", "Initial learning rate (after the potential warmup period) to use.",
              names=nm("learning_rate", "lr"), truth="learning_rate", decoys=(1e-4, 1e-5)),
        Param("lr_warmup_steps", 500, "optim", "Number of steps for the warmup in the lr scheduler.",
              names=nm("lr_warmup_steps",)),
        Param("mixed_precision", cfg.precision, "train", "fp16 or bf16", names=nm("mixed_precision",)),
        Param("output_dir", "sd-laion-finetuned", "misc", "output directory", names=nm("output_dir",)),
        Param("seed", 42, "misc", "A seed for reproducible training.", names=nm("seed",)),
        Param("checkpointing_steps", 2500, "misc", "Save a checkpoint every X updates.", names=nm("checkpointing_steps",)),
    ]
    if pinned:
        ctx.trap("ignored_arg")
    style = _apply_style(ctx, params, exp_name="sd15_laion_aesthetics",
                         decoy_yaml="sd15_pokemon\nmodel:\n  pretrained_model: CompVis/stable-diffusion-v1-4\ndata:\n"
                                    "  data_dir: lambdalabs/pokemon-blip-captions\ntrain:\n  batch_size: 1\n  max_steps: 15000\n",
                         description="Simple example of a training script.", cli_share=0.85)
    a = style.acc
    body = fill('''
        accelerator = Accelerator(gradient_accumulation_steps=§accum, mixed_precision=§mp, log_with="tensorboard",
                                  project_config=ProjectConfiguration(project_dir=§out))
        set_seed(§seed)
        noise_scheduler = DDPMScheduler.from_pretrained(§model, subfolder="scheduler")
        tokenizer = CLIPTokenizer.from_pretrained(§model, subfolder="tokenizer")
        text_encoder = CLIPTextModel.from_pretrained(§model, subfolder="text_encoder")
        vae = AutoencoderKL.from_pretrained(§model, subfolder="vae")
        §mv = UNet2DConditionModel.from_pretrained(§model, subfolder="unet")
        vae.requires_grad_(False)
        text_encoder.requires_grad_(False)
        §mv.enable_gradient_checkpointing()
        optimizer = torch.optim.AdamW(§mv.parameters(), lr=§lr, betas=(0.9, 0.999), weight_decay=1e-2, eps=1e-8)
        dataset = load_dataset("imagefolder", data_dir=§data, split="train")
        train_transforms = transforms.Compose([
            transforms.Resize(§res, interpolation=transforms.InterpolationMode.BILINEAR),
            transforms.CenterCrop(§res), transforms.RandomHorizontalFlip(), transforms.ToTensor(),
            transforms.Normalize([0.5], [0.5]),
        ])

        def preprocess(examples):
            examples["pixel_values"] = [train_transforms(image.convert("RGB")) for image in examples["image"]]
            examples["input_ids"] = tokenizer(examples["text"], max_length=tokenizer.model_max_length, padding="max_length",
                                              truncation=True, return_tensors="pt").input_ids
            return examples

        train_dataset = dataset.with_transform(preprocess)
        loader = torch.utils.data.DataLoader(train_dataset, shuffle=True, batch_size=§bs, num_workers=§workers,
                                             collate_fn=collate_fn)
        max_train_steps = §steps
        lr_scheduler = get_scheduler("constant_with_warmup", optimizer=optimizer, num_warmup_steps=§warm,
                                     num_training_steps=max_train_steps)
        §mv, optimizer, loader, lr_scheduler = accelerator.prepare(§mv, optimizer, loader, lr_scheduler)
        weight_dtype = torch.float16 if §mp == "fp16" else torch.bfloat16
        vae.to(accelerator.device, dtype=weight_dtype)
        text_encoder.to(accelerator.device, dtype=weight_dtype)
        num_epochs = math.ceil(max_train_steps / math.ceil(len(loader) / §accum))  # --num_train_epochs is overridden
        progress_bar = tqdm(range(max_train_steps), disable=not accelerator.is_local_main_process, desc="Steps")
        global_step = 0
        for epoch in range(num_epochs):
            for batch in loader:
                with accelerator.accumulate(§mv):
                    latents = vae.encode(batch["pixel_values"].to(weight_dtype)).latent_dist.sample() * vae.config.scaling_factor
                    noise = torch.randn_like(latents)
                    timesteps = torch.randint(0, noise_scheduler.config.num_train_timesteps, (latents.shape[0],),
                                              device=latents.device).long()
                    noisy_latents = noise_scheduler.add_noise(latents, noise, timesteps)
                    encoder_hidden_states = text_encoder(batch["input_ids"])[0]
                    model_pred = §mv(noisy_latents, timesteps, encoder_hidden_states).sample
                    loss = F.mse_loss(model_pred.float(), noise.float(), reduction="mean")
                    accelerator.backward(loss)
                    optimizer.step()
                    lr_scheduler.step()
                    optimizer.zero_grad()
                if accelerator.sync_gradients:
                    progress_bar.update(1)
                    global_step += 1
                    progress_bar.set_postfix(step_loss=loss.detach().item(), lr=lr_scheduler.get_last_lr()[0])
                    if global_step % §ckpt == 0 and accelerator.is_main_process:
                        accelerator.save_state(os.path.join(§out, f"checkpoint-{global_step}"))
                if global_step >= max_train_steps:
                    break
        ''', accum=a["grad_accum"], mp=a["mixed_precision"], out=a["output_dir"], seed=a["seed"], model=a["model"],
        mv=mv, lr=a["lr"], data=a["data_path"], res=a["resolution"], bs=a["batch_size"], workers=a["workers"],
        steps=a["max_steps"], warm=a["lr_warmup_steps"], ckpt=a["checkpointing_steps"])
    helpers = fill('''
        def collate_fn(examples):
            pixel_values = torch.stack([example["pixel_values"] for example in examples])
            pixel_values = pixel_values.to(memory_format=torch.contiguous_format).float()
            input_ids = torch.stack([example["input_ids"] for example in examples])
            return {"pixel_values": pixel_values, "input_ids": input_ids}
        ''')
    text = _module("Fine-tune Stable Diffusion v1.5 (UNet only) on a LAION-Aesthetics subset; adapted from diffusers' train_text_to_image.py.",
                   "import math\nimport os\n\nimport torch\nimport torch.nn.functional as F\nfrom accelerate import Accelerator\n"
                   "from accelerate.utils import ProjectConfiguration, set_seed\nfrom datasets import load_dataset\n"
                   "from diffusers import AutoencoderKL, DDPMScheduler, UNet2DConditionModel\n"
                   "from diffusers.optimization import get_scheduler\nfrom torchvision import transforms\nfrom tqdm.auto import tqdm\n"
                   "from transformers import CLIPTextModel, CLIPTokenizer", style, helpers, body)
    script = "train_text_to_image.py"
    ctx.files[script] = text
    ctx.files.update(style.files)
    reqs = ["torch>=2.1", "diffusers>=0.27", "transformers>=4.40", "accelerate>=0.28", "datasets>=2.18", "torchvision",
            "xformers", "tensorboard"]
    return Entry(script, style.cli, style.env, reqs + _style_reqs(cfg.style), summary="SD v1.5 fine-tuning on LAION")


# --------------------------------------------------------------------------------------------- detection


COCO2YOLO = '''"""Convert COCO instances_*.json to YOLO txt labels (class cx cy w h, normalised)."""

import argparse
import json
import os
from collections import defaultdict


def convert(ann_file, out_dir):
    with open(ann_file) as f:
        coco = json.load(f)
    cat_ids = sorted(c["id"] for c in coco["categories"])
    cat_map = {cid: i for i, cid in enumerate(cat_ids)}  # 91 sparse ids -> 80 contiguous
    images = {im["id"]: im for im in coco["images"]}
    boxes = defaultdict(list)
    for ann in coco["annotations"]:
        if ann.get("iscrowd"):
            continue
        im = images[ann["image_id"]]
        x, y, w, h = ann["bbox"]
        cx, cy = (x + w / 2) / im["width"], (y + h / 2) / im["height"]
        boxes[im["file_name"]].append((cat_map[ann["category_id"]], cx, cy, w / im["width"], h / im["height"]))
    os.makedirs(out_dir, exist_ok=True)
    for name, rows in boxes.items():
        with open(os.path.join(out_dir, os.path.splitext(name)[0] + ".txt"), "w") as f:
            f.writelines(f"{c} {cx:.6f} {cy:.6f} {w:.6f} {h:.6f}\\n" for c, cx, cy, w, h in rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--ann", default="/datasets/coco/annotations/instances_train2017.json")
    parser.add_argument("--out", default="/datasets/coco/labels/train2017")
    args = parser.parse_args()
    convert(args.ann, args.out)
'''


def render_detection(ctx: Ctx) -> Entry:
    cfg = ctx.cfg
    weights = _pick(ctx, ("yolov8m.pt", "yolov8m.yaml"))
    devices = ",".join(str(i) for i in range(cfg.gpus))
    data_yaml = "cfg/datasets/coco.yaml"
    ctx.files[data_yaml] = fill('''
        # COCO 2017 dataset https://cocodataset.org by Microsoft
        path: /datasets/coco  # dataset root dir
        train: train2017.txt  # train images (relative to 'path') 118287 images
        val: val2017.txt  # val images (relative to 'path') 5000 images
        test: test-dev2017.txt

        names:
          0: person
          1: bicycle
          2: car
          3: motorcycle
          4: airplane
          5: bus
          6: train
          7: truck
          8: boat
          9: traffic light
        # ... 80 classes in total, see ultralytics/cfg/datasets/coco.yaml
        ''')
    if ctx.chance(0.6):
        ctx.files["cfg/datasets/coco128.yaml"] = ("# COCO128: first 128 images of COCO train2017, for quick tests\n"
                                                  "path: /datasets/coco128\ntrain: images/train2017\nval: images/train2017\n")
        ctx.trap("dead_config")
    values = {"model": weights, "data": data_yaml, "epochs": cfg.iterations, "imgsz": cfg.image_size,
              "batch": cfg.batch_size, "workers": cfg.num_workers, "lr0": cfg.learning_rate, "device": devices,
              "optimizer": "SGD", "cos_lr": True, "close_mosaic": 10, "amp": True, "project": "runs/detect",
              "name": f"yolov8m_coco_e{cfg.iterations}"}
    truth_of = {"model": "model_name", "data": "dataset", "epochs": "iterations", "batch": "batch_size",
                "workers": "num_workers", "lr0": "learning_rate"}
    ctx.files["tools/coco2yolo.py"] = COCO2YOLO
    mode = "yolo_cli" if cfg.launcher == "yolo_cli" else _pick(ctx, ("kwargs", "cfg_yaml"))
    reqs = ["ultralytics==8.1.47", "torch>=2.1", "pycocotools"]
    if mode == "yolo_cli":
        args = [f"{k}={sh_lit(v)}" for k, v in values.items() if k not in ("project", "close_mosaic")]
        for k, field_ in truth_of.items():
            lit = sh_lit(values[k])
            ctx.evidence[field_] = ("§LAUNCH§", f"{k}={lit}", lit)
        return Entry("yolo", ["detect", "train", *args], {}, reqs, summary="YOLOv8m on COCO (ultralytics CLI)")
    if mode == "cfg_yaml":
        lines = [f"# training settings for {values['name']}", "task: detect", "mode: train"]
        for k, v in values.items():
            lines.append(f"{k}: {yaml_lit(v)}")
            if k in truth_of:
                ctx.evidence[truth_of[k]] = ("cfg/train_yolov8m.yaml", f"{k}: {yaml_lit(v)}", yaml_lit(v))
        ctx.files["cfg/train_yolov8m.yaml"] = "\n".join(lines) + "\n"
        text = fill('''
            """Train YOLOv8m on COCO; every setting lives in cfg/train_yolov8m.yaml."""

            from ultralytics import YOLO

            if __name__ == "__main__":
                §mv = YOLO("§w")
                §mv.train(cfg="cfg/train_yolov8m.yaml")
                metrics = §mv.val()
                print(metrics.box.map)
            ''', mv=ctx.model_var, w=weights)
    else:
        kw = []
        for k, v in values.items():
            if k == "model":
                continue
            kw.append(f"    {k}={py_lit(v)},")
            if k in truth_of:
                ctx.evidence[truth_of[k]] = ("§TRAIN§", f"{k}={py_lit(v)}", py_lit(v))
        ctx.evidence["model_name"] = ("§TRAIN§", f'YOLO("{weights}")', weights)
        old = ""
        if ctx.chance(0.4):
            ctx.trap("dead_code")
            old = '# model = YOLO("yolov8n.pt")  # nano baseline, too weak\n# model.train(data="coco128.yaml", epochs=3, imgsz=640)\n'
        text = fill('''
            """Train YOLOv8m on COCO 2017 with ultralytics (DDP is spawned by ultralytics for multi-GPU device lists)."""

            from ultralytics import YOLO

            §old
            def main():
                §mv = YOLO("§w")
                results = §mv.train(
            §kw
                )
                return results


            if __name__ == "__main__":
                main()
            ''', old=old, mv=ctx.model_var, w=weights, kw="\n".join("    " + k for k in kw))
    script = _pick(ctx, ("train.py", "train_yolo.py"))
    ctx.files[script] = text
    return Entry(script, [], {}, reqs, summary="YOLOv8m on COCO 2017")


# --------------------------------------------------------------------------------------------- megatron

PRETRAIN_GPT = '''"""Pretrain GPT (Megatron-LM style entry point)."""

from functools import partial

import torch

from megatron import get_args, get_timers, get_tokenizer, print_rank_0
from megatron.core import tensor_parallel
from megatron.core.enums import ModelType
from megatron.data.gpt_dataset import build_train_valid_test_datasets
from megatron.model import GPTModel
from megatron.training import pretrain
from megatron.utils import average_losses_across_data_parallel_group, get_ltor_masks_and_position_ids


def model_provider(pre_process=True, post_process=True):
    """Build the model."""
    print_rank_0("building GPT model ...")
    model = GPTModel(num_tokentypes=0, parallel_output=True, pre_process=pre_process, post_process=post_process)
    return model


def get_batch(data_iterator):
    """Generate a batch."""
    args = get_args()
    tokenizer = get_tokenizer()
    keys = ["text"]
    data = next(data_iterator) if data_iterator is not None else None
    data_b = tensor_parallel.broadcast_data(keys, data, torch.int64)
    tokens_ = data_b["text"].long()
    labels = tokens_[:, 1:].contiguous()
    tokens = tokens_[:, :-1].contiguous()
    attention_mask, loss_mask, position_ids = get_ltor_masks_and_position_ids(
        tokens, tokenizer.eod, args.reset_position_ids, args.reset_attention_mask, args.eod_mask_loss)
    return tokens, labels, loss_mask, attention_mask, position_ids


def loss_func(loss_mask, output_tensor):
    losses = output_tensor.float()
    loss_mask = loss_mask.view(-1).float()
    loss = torch.sum(losses.view(-1) * loss_mask) / loss_mask.sum()
    averaged_loss = average_losses_across_data_parallel_group([loss])
    return loss, {"lm loss": averaged_loss[0]}


def forward_step(data_iterator, model):
    """Forward step."""
    timers = get_timers()
    timers("batch-generator", log_level=2).start()
    tokens, labels, loss_mask, attention_mask, position_ids = get_batch(data_iterator)
    timers("batch-generator").stop()
    output_tensor = model(tokens, position_ids, attention_mask, labels=labels)
    return output_tensor, partial(loss_func, loss_mask)


def train_valid_test_datasets_provider(train_val_test_num_samples):
    """Build train, valid, and test datasets."""
    args = get_args()
    print_rank_0("> building train, validation, and test datasets for GPT ...")
    train_ds, valid_ds, test_ds = build_train_valid_test_datasets(
        data_prefix=args.data_path,
        data_impl=args.data_impl,
        splits_string=args.split,
        train_valid_test_num_samples=train_val_test_num_samples,
        seq_length=args.seq_length,
        seed=args.seed,
        skip_warmup=(not args.mmap_warmup),
    )
    print_rank_0("> finished creating GPT datasets ...")
    return train_ds, valid_ds, test_ds


if __name__ == "__main__":
    train_valid_test_datasets_provider.is_distributed = True
    pretrain(train_valid_test_datasets_provider, model_provider, ModelType.encoder_or_decoder, forward_step,
             args_defaults={"tokenizer_type": "GPT2BPETokenizer"})
'''

MEGATRON_ARGS = '''"""Megatron arguments (excerpt): defaults apply only when the launch script does not set a flag."""

import argparse


def _add_training_args(parser):
    group = parser.add_argument_group(title="training")
    group.add_argument("--micro-batch-size", type=int, default=None, help="Batch size per model instance (local batch size).")
    group.add_argument("--global-batch-size", type=int, default=None, help="Training batch size across all data-parallel ranks.")
    group.add_argument("--train-iters", type=int, default=None, help="Total number of iterations to train over all training runs.")
    group.add_argument("--train-samples", type=int, default=None, help="Total number of samples to train over all training runs.")
    group.add_argument("--log-interval", type=int, default=100, help="Report loss and timing interval.")
    group.add_argument("--exit-interval", type=int, default=None, help="Exit the program after the iteration is divisible by this value.")
    group.add_argument("--bf16", action="store_true", help="Run model in bfloat16 mode.")
    return parser


def _add_learning_rate_args(parser):
    group = parser.add_argument_group(title="learning rate")
    group.add_argument("--lr", type=float, default=None, help="Initial learning rate.")
    group.add_argument("--lr-decay-style", type=str, default="linear", choices=["constant", "linear", "cosine"])
    group.add_argument("--lr-decay-iters", type=int, default=None)
    group.add_argument("--lr-warmup-iters", type=int, default=0)
    group.add_argument("--min-lr", type=float, default=0.0)
    return parser


def _add_data_args(parser):
    group = parser.add_argument_group(title="data and dataloader")
    group.add_argument("--data-path", nargs="*", default=None, help="Path to the training dataset prefix.")
    group.add_argument("--split", type=str, default="969, 30, 1")
    group.add_argument("--seq-length", type=int, default=None)
    group.add_argument("--num-workers", type=int, default=2, help="Dataloader number of workers.")
    group.add_argument("--data-impl", type=str, default="infer", choices=["mmap", "infer"])
    return parser


def parse_args(extra_args_provider=None, ignore_unknown_args=False):
    parser = argparse.ArgumentParser(description="Megatron-LM Arguments", allow_abbrev=False)
    for add in (_add_training_args, _add_learning_rate_args, _add_data_args):
        parser = add(parser)
    return parser.parse_args()
'''


def render_megatron(ctx: Ctx) -> Entry:
    cfg = ctx.cfg
    v = cfg.variant
    dims = v.dims
    tp, pp, micro = cfg.extra.get("tp", 1), cfg.extra.get("pp", 1), cfg.extra.get("micro_batch", 1)
    size_tag = v.name.split("-", 1)[1]  # 1.3b
    data_prefix = cfg.dataset_spec.path
    ctx.files["pretrain_gpt.py"] = PRETRAIN_GPT
    ctx.files["megatron/__init__.py"] = ('from .global_vars import get_args, get_timers, get_tokenizer\n'
                                         'from .utils import print_rank_0\n')
    ctx.files["megatron/global_vars.py"] = ('"""Global state (args, timers, tokenizer)."""\n\n_GLOBAL_ARGS = None\n\n\n'
                                            'def get_args():\n    return _GLOBAL_ARGS\n\n\ndef get_timers():\n    return None\n\n\n'
                                            'def get_tokenizer():\n    return None\n')
    ctx.files["megatron/utils.py"] = ('"""Utilities."""\n\nimport torch\n\n\ndef print_rank_0(message):\n'
                                      '    if not torch.distributed.is_initialized() or torch.distributed.get_rank() == 0:\n'
                                      '        print(message, flush=True)\n')
    ctx.files["megatron/arguments.py"] = MEGATRON_ARGS
    name_tag = f"gpt3-{size_tag}-{cfg.dataset}"
    lr = fmt_float(cfg.learning_rate)
    workers_line = f"    --num-workers {cfg.num_workers}\n" if cfg.num_workers != 2 or ctx.chance(0.5) else ""
    if not workers_line:
        ctx.evidence["num_workers"] = ("megatron/arguments.py", '"--num-workers", type=int, default=2', "2")
        ctx.trap("library_default")
    script_path = f"examples/pretrain_gpt_{size_tag}.sh"
    script = fill('''
        #!/bin/bash
        # GPT-3 §size (§layers layers, hidden §hidden, §heads heads) on §ds, seq §seq.
        set -euo pipefail

        GPUS_PER_NODE=8
        NNODES=${SLURM_NNODES:-§nodes}
        NODE_RANK=${SLURM_NODEID:-0}
        MASTER_ADDR=${MASTER_ADDR:-$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)}
        MASTER_PORT=6000

        CHECKPOINT_PATH=/mnt/ckpt/§tag
        VOCAB_FILE=/mnt/tokenizers/gpt2-vocab.json
        MERGE_FILE=/mnt/tokenizers/gpt2-merges.txt
        DATA_PATH=§data

        DISTRIBUTED_ARGS="--nproc_per_node $GPUS_PER_NODE --nnodes $NNODES --node_rank $NODE_RANK --master_addr $MASTER_ADDR --master_port $MASTER_PORT"

        GPT_ARGS="
            --tensor-model-parallel-size §tp \\
            --pipeline-model-parallel-size §pp \\
            --num-layers §layers \\
            --hidden-size §hidden \\
            --num-attention-heads §heads \\
            --seq-length §seq \\
            --max-position-embeddings §seq \\
            --micro-batch-size §micro \\
            --global-batch-size §gbs \\
            --lr §lr \\
            --train-iters §iters \\
            --lr-decay-iters §decay \\
            --lr-decay-style cosine \\
            --min-lr §minlr \\
            --weight-decay 0.1 \\
            --lr-warmup-iters §warm \\
            --clip-grad 1.0 \\
            --use-flash-attn \\
            --use-distributed-optimizer \\
            --bf16
        "

        DATA_ARGS="
            --data-path $DATA_PATH \\
            --vocab-file $VOCAB_FILE \\
            --merge-file $MERGE_FILE \\
            --split 949,50,1
        §workers"

        OUTPUT_ARGS="
            --log-interval §log \\
            --save-interval 2000 \\
            --eval-interval 1000 \\
            --eval-iters 10 \\
            --wandb-exp-name §tag
        "

        torchrun $DISTRIBUTED_ARGS pretrain_gpt.py \\
            $GPT_ARGS \\
            $DATA_ARGS \\
            $OUTPUT_ARGS \\
            --distributed-backend nccl \\
            --save $CHECKPOINT_PATH \\
            --load $CHECKPOINT_PATH
        ''', size=v.name.split("-", 1)[1].upper(), layers=dims["layers"], hidden=dims["hidden"], heads=dims["heads"],
        ds=cfg.dataset, seq=cfg.seq_len, nodes=cfg.nodes, tag=name_tag, data=data_prefix, tp=tp, pp=pp, micro=micro,
        gbs=cfg.batch_size, lr=lr, iters=cfg.iterations, decay=int(cfg.iterations * 0.9), minlr=fmt_float(cfg.learning_rate / 10),
        warm=max(100, cfg.iterations // 50), workers=workers_line, log=_pick(ctx, (1, 10, 100)))
    ctx.files[script_path] = script
    ev = {"batch_size": f"--global-batch-size {cfg.batch_size}", "learning_rate": f"--lr {lr}",
          "iterations": f"--train-iters {cfg.iterations}", "model_name": f"--wandb-exp-name {name_tag}",
          "dataset": f"DATA_PATH={data_prefix}"}
    lits = {"batch_size": str(cfg.batch_size), "learning_rate": lr, "iterations": str(cfg.iterations),
            "model_name": f"gpt3-{size_tag}", "dataset": data_prefix}
    if workers_line:
        ev["num_workers"] = f"--num-workers {cfg.num_workers}"
        lits["num_workers"] = str(cfg.num_workers)
    for k, snippet in ev.items():
        ctx.evidence[k] = (script_path, snippet, lits[k])
    if ctx.chance(0.6):
        # an older run script for a smaller model, still in the repo
        ctx.trap("dead_config")
        other = "1.3b" if size_tag != "1.3b" else "6.7b"
        ctx.files[f"examples/pretrain_gpt_{other}_old.sh"] = (
            f"#!/bin/bash\n# first attempt ({other}), superseded\nGPT_ARGS=\"--num-layers 24 --hidden-size 2048 "
            f"--num-attention-heads 16 --seq-length 1024 --micro-batch-size 8 --global-batch-size 128 --lr 6.0e-4 "
            f"--train-iters 500000\"\ntorchrun --nproc_per_node 8 pretrain_gpt.py $GPT_ARGS --data-path "
            f"/datasets/openwebtext/owt_text_document\n")
    return Entry(script_path, [], {}, ["torch>=2.1", "apex", "flash-attn>=2.4", "sentencepiece", "wandb", "pybind11"],
                 summary=f"Megatron-LM GPT-3 {size_tag.upper()} pre-training on {cfg.dataset}")


PROGRAMS = {
    "vision_cls": render_vision_cls, "segmentation": render_segmentation, "contrastive": render_contrastive,
    "recsys": render_recsys, "causal_sft": render_causal_sft, "qa": render_qa, "seq2seq": render_seq2seq,
    "diffusion": render_diffusion, "detection": render_detection, "megatron": render_megatron,
}


def render_program(ctx: Ctx) -> Entry:
    return PROGRAMS[ctx.cfg.family_spec.program](ctx)
