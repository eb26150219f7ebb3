"""Workload families (Table 2 of the paper plus Megatron-style LLM pre-training) and their truth.

A `WorkloadFamily` is what a kind of training job *is*: model(s), task, datasets, the ranges of
hyper-parameters people actually use, the code programs that implement it, and a small
performance model (`Perf`) from which `history` derives durations, SM utilisation and memory.
`sample_config` draws one concrete `WorkloadConfig` (every value the generated code will state,
plus the layout choices of its repository); `WorkloadConfig.truth()` is the label.

Performance numbers are order-of-magnitude figures for A800/A100-80GB with mixed precision (LLM
costs from 6 x params x tokens at a typical MFU; vision/NLP costs from public throughput reports);
they make durations plausible and, above all, a deterministic function of the workload, so that
similar jobs get similar outcomes. They are not measurements.
"""

from __future__ import annotations

import math
import random
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from schedmate.workload import WorkloadMetadata

__all__ = [
    "FAMILIES",
    "FAMILY_KEYS",
    "DatasetSpec",
    "ModelVariant",
    "Perf",
    "SizeClass",
    "WorkloadConfig",
    "WorkloadFamily",
    "families_in_class",
    "get_family",
    "sample_config",
]

SizeClass = Literal["large", "medium", "small"]
GPUS_PER_NODE = 8
PEAK_FLOPS = 312e12  # A800 / A100 dense bf16


@dataclass(frozen=True)
class ModelVariant:
    name: str  # canonical (aliases.MODEL_ALIASES)
    size_b: float
    hub_id: str  # how code usually names it (HF id, timm name, yaml, ...)
    dims: dict[str, int] = field(default_factory=dict)  # layers/hidden/heads for transformer LMs


@dataclass(frozen=True)
class DatasetSpec:
    name: str  # canonical
    samples: int  # training samples (or sequences / 2D slices) per epoch
    valid: str | None
    hub_id: str  # HF id or usual folder name
    path: str  # typical mount path on the cluster
    weight: float = 1.0


@dataclass(frozen=True)
class Perf:
    """Performance model at the family's reference variant, length and mixed precision."""

    sample_s: float  # GPU-seconds per training sample at ref_len, for the family's first variant
    ref_len: int | None = None  # sequence length or image side the cost refers to
    len_exp: float = 1.0  # cost ~ (len / ref_len) ** len_exp
    step_overhead_s: float = 0.02  # optimizer step, logging, sync fixed cost
    comm: float = 0.03  # slowdown per doubling of GPUs inside a node
    internode: float = 0.10  # extra slowdown once the job spans nodes
    startup_s: float = 90.0  # launch, model load, dataset indexing
    eval_frac: float = 0.02  # validation cost per epoch, as a fraction of an epoch
    util_max: float = 90.0  # SM utilisation (%) with a large per-device batch
    util_half_batch: float = 8.0  # per-device batch at which util reaches half of util_max
    bytes_per_param: float = 16.0  # weights + grads + Adam states, mixed precision
    shard_states: bool = False  # ZeRO-3 / FSDP / distributed optimizer: states split over GPUs
    act_gb: float = 0.1  # activation memory per sample at ref_len
    workers_needed: int = 0  # dataloader workers per GPU below which the GPU starves


@dataclass(frozen=True)
class WorkloadFamily:
    key: str
    title: str
    scale: SizeClass
    task_type: str
    program: str  # codegen program that implements it
    variants: tuple[ModelVariant, ...]
    datasets: tuple[DatasetSpec, ...]
    batch_choices: tuple[int, ...]
    lr_choices: tuple[float, ...]
    epoch_choices: tuple[int, ...]
    step_range: tuple[int, int]
    epoch_share: float  # probability that a config counts epochs rather than steps
    workers_choices: tuple[int, ...]
    gpu_choices: tuple[tuple[int, float], ...]
    styles: tuple[str, ...]  # config styles its program supports
    perf: Perf
    length_choices: tuple[int, ...] = ()  # seq_len or image size
    precision_choices: tuple[str, ...] = ("bf16", "fp16")
    accum_choices: tuple[int, ...] = (1,)
    lora_lr_choices: tuple[float, ...] = ()  # non-empty: LoRA is an option, with these lrs
    batch_is_global: bool = False  # the stated batch size is the global one (Megatron, YOLO)

    @property
    def model_names(self) -> tuple[str, ...]:
        return tuple(v.name for v in self.variants)


def _ds(name: str, samples: int, valid: str | None, hub: str, path: str, weight: float = 1.0) -> DatasetSpec:
    return DatasetSpec(name, samples, valid, hub, path, weight)


_IMAGENET = _ds("imagenet-1k", 1_281_167, "imagenet-1k-val", "ILSVRC/imagenet-1k", "/datasets/imagenet")
_LARGE = ((8, 0.55), (16, 0.28), (32, 0.12), (64, 0.05))
_MEDIUM = ((4, 0.55), (8, 0.25), (2, 0.15), (6, 0.05))
_SMALL = ((1, 0.5), (2, 0.3), (4, 0.2))
_CV_STYLES = ("argparse", "yaml", "hydra", "constants")


def _llm_sample_s(size_b: float, seq: int, mfu: float) -> float:
    return 6.0 * size_b * 1e9 * seq / (PEAK_FLOPS * mfu)


def _vision(
    key: str, title: str, scale: SizeClass, variant: ModelVariant, *, sample_s: float, img: int,
    batches: tuple[int, ...], lrs: tuple[float, ...], epochs: tuple[int, ...], util: float, half: float,
    act: float, gpus: tuple[tuple[int, float], ...], imgs: tuple[int, ...] | None = None,
) -> WorkloadFamily:
    return WorkloadFamily(
        key=key, title=title, scale=scale, task_type="image-classification", program="vision_cls",
        variants=(variant,), datasets=(_IMAGENET,), batch_choices=batches, lr_choices=lrs,
        epoch_choices=epochs, step_range=(5_000, 60_000), epoch_share=0.85,
        workers_choices=(4, 6, 8, 8, 10, 12, 16), gpu_choices=gpus, styles=_CV_STYLES,
        length_choices=imgs or (img,), precision_choices=("fp16", "bf16", "fp16", "fp32"),
        perf=Perf(sample_s=sample_s, ref_len=img, len_exp=2.0, step_overhead_s=0.015, comm=0.035,
                  internode=0.12, startup_s=75.0, eval_frac=0.04, util_max=util, util_half_batch=half,
                  act_gb=act, workers_needed=8),
    )


FAMILIES: dict[str, WorkloadFamily] = {}


def _register(*fams: WorkloadFamily) -> None:
    for fam in fams:
        FAMILIES[fam.key] = fam


_ALPACA = (
    _ds("alpaca", 52_002, None, "tatsu-lab/alpaca", "/datasets/alpaca/alpaca_data.json", 0.8),
    _ds("alpaca-cleaned", 51_760, None, "yahma/alpaca-cleaned", "/datasets/alpaca/alpaca_data_cleaned.json", 0.2),
)
_SQUAD = (
    _ds("squad-v1.1", 88_524, "squad-v1.1-dev", "rajpurkar/squad", "/datasets/squad", 0.85),
    _ds("squad-v2", 131_754, "squad-v2-dev", "rajpurkar/squad_v2", "/datasets/squad_v2", 0.15),
)

_register(
    WorkloadFamily(
        key="llama3-8b-sft", title="LLaMA-3-8B instruction fine-tuning", scale="large",
        task_type="instruction-finetuning", program="causal_sft",
        variants=(ModelVariant("llama-3-8b", 8.03, "meta-llama/Meta-Llama-3-8B",
                               {"layers": 32, "hidden": 4096, "heads": 32}),),
        datasets=_ALPACA, batch_choices=(1, 2, 4), lr_choices=(1e-5, 2e-5, 5e-5),
        epoch_choices=(1, 2, 3, 3, 5), step_range=(200, 3_000), epoch_share=0.7,
        workers_choices=(0, 2, 4, 8), gpu_choices=_LARGE, styles=("hf_args", "hf_args", "yaml", "constants"),
        length_choices=(512, 1024, 2048), precision_choices=("bf16",), accum_choices=(1, 2, 4, 8),
        lora_lr_choices=(1e-4, 2e-4, 3e-4),
        perf=Perf(sample_s=_llm_sample_s(8.03, 1024, 0.38), ref_len=1024, step_overhead_s=0.35, comm=0.05,
                  internode=0.18, startup_s=300.0, eval_frac=0.0, util_max=93.0, util_half_batch=0.4,
                  bytes_per_param=16.0, shard_states=True, act_gb=1.6),
    ),
    WorkloadFamily(
        key="qwen2.5-14b-sft", title="Qwen-2.5-14B instruction fine-tuning", scale="large",
        task_type="instruction-finetuning", program="causal_sft",
        variants=(ModelVariant("qwen-2.5-14b", 14.7, "Qwen/Qwen2.5-14B",
                               {"layers": 48, "hidden": 5120, "heads": 40}),),
        datasets=_ALPACA, batch_choices=(1, 2, 4), lr_choices=(1e-5, 2e-5),
        epoch_choices=(1, 2, 3, 3), step_range=(200, 2_500), epoch_share=0.7,
        workers_choices=(0, 2, 4, 8), gpu_choices=((8, 0.5), (16, 0.3), (32, 0.15), (64, 0.05)),
        styles=("hf_args", "hf_args", "yaml", "constants"),
        length_choices=(512, 1024, 2048), precision_choices=("bf16",), accum_choices=(1, 2, 4, 8),
        lora_lr_choices=(1e-4, 2e-4),
        perf=Perf(sample_s=_llm_sample_s(14.7, 1024, 0.36), ref_len=1024, step_overhead_s=0.5, comm=0.05,
                  internode=0.2, startup_s=420.0, eval_frac=0.0, util_max=94.0, util_half_batch=0.35,
                  bytes_per_param=16.0, shard_states=True, act_gb=2.2),
    ),
    WorkloadFamily(
        key="gpt-pretrain", title="GPT LLM pre-training (Megatron-LM)", scale="large",
        task_type="lm-pretraining", program="megatron",
        variants=(
            ModelVariant("gpt-1.3b", 1.3, "gpt3-1.3b", {"layers": 24, "hidden": 2048, "heads": 16}),
            ModelVariant("gpt-2.7b", 2.7, "gpt3-2.7b", {"layers": 32, "hidden": 2560, "heads": 32}),
            ModelVariant("gpt-6.7b", 6.7, "gpt3-6.7b", {"layers": 32, "hidden": 4096, "heads": 32}),
            ModelVariant("gpt-13b", 13.0, "gpt3-13b", {"layers": 40, "hidden": 5120, "heads": 40}),
        ),
        datasets=(
            _ds("pile", 0, "pile-val", "EleutherAI/pile", "/datasets/pile/pile_text_document", 0.65),
            _ds("slimpajama", 0, "slimpajama-val", "cerebras/SlimPajama-627B",
                "/datasets/slimpajama/slimpajama_text_document", 0.35),
        ),
        batch_choices=(256, 512, 512, 1024), lr_choices=(1.5e-4, 2e-4, 3e-4),
        epoch_choices=(), step_range=(1_000, 25_000), epoch_share=0.0, workers_choices=(2, 2, 4, 8),
        gpu_choices=((16, 0.3), (32, 0.3), (64, 0.25), (128, 0.15)), styles=("megatron",),
        length_choices=(2048, 2048, 4096), precision_choices=("bf16",), batch_is_global=True,
        perf=Perf(sample_s=_llm_sample_s(1.3, 2048, 0.42), ref_len=2048, step_overhead_s=0.05, comm=0.02,
                  internode=0.08, startup_s=420.0, eval_frac=0.0, util_max=96.0, util_half_batch=0.25,
                  bytes_per_param=18.0, shard_states=True, act_gb=3.0),
    ),
    _vision("vit-l16-in1k", "ViT-L/16 on ImageNet-1k", "medium",
            ModelVariant("vit-l-16", 0.307, "vit_large_patch16_224"), sample_s=0.0040, img=224,
            batches=(16, 32, 64), lrs=(3e-4, 5e-4, 1e-3), epochs=(10, 20, 30, 50, 90), util=95.0, half=6.0,
            act=0.33, gpus=_MEDIUM),
    WorkloadFamily(
        key="bert-base-squad", title="BERT-base fine-tuning on SQuAD", scale="medium", task_type="qa",
        program="qa", variants=(ModelVariant("bert-base", 0.110, "bert-base-uncased"),),
        datasets=_SQUAD, batch_choices=(16, 24, 32, 48, 64), lr_choices=(2e-5, 3e-5, 5e-5),
        epoch_choices=(2, 2, 3, 4), step_range=(2_000, 20_000), epoch_share=0.85,
        workers_choices=(0, 2, 4, 8), gpu_choices=_MEDIUM, styles=("hf_args", "argparse", "yaml"),
        length_choices=(384, 384, 512), precision_choices=("fp16", "bf16", "fp32"),
        perf=Perf(sample_s=0.0035, ref_len=384, step_overhead_s=0.02, comm=0.04, startup_s=150.0,
                  eval_frac=0.15, util_max=98.0, util_half_batch=5.0, act_gb=0.2, workers_needed=1),
    ),
    WorkloadFamily(
        key="deberta-large-squad", title="DeBERTa-large fine-tuning on SQuAD", scale="medium", task_type="qa",
        program="qa", variants=(ModelVariant("deberta-large", 0.406, "microsoft/deberta-large"),),
        datasets=_SQUAD, batch_choices=(16, 24, 32), lr_choices=(6e-6, 1e-5, 2e-5),
        epoch_choices=(2, 3, 3, 5), step_range=(2_000, 15_000), epoch_share=0.85,
        workers_choices=(0, 2, 4, 8), gpu_choices=_MEDIUM, styles=("hf_args", "argparse", "yaml"),
        length_choices=(384, 512), precision_choices=("fp16", "bf16"),
        perf=Perf(sample_s=0.020, ref_len=384, step_overhead_s=0.04, comm=0.05, startup_s=180.0,
                  eval_frac=0.15, util_max=97.0, util_half_batch=4.0, act_gb=0.75, workers_needed=1),
    ),
    WorkloadFamily(
        key="sd-laion", title="Stable Diffusion fine-tuning on LAION", scale="medium", task_type="text-to-image",
        program="diffusion", variants=(ModelVariant("stable-diffusion-v1-5", 0.86, "runwayml/stable-diffusion-v1-5"),),
        datasets=(_ds("laion", 0, None, "laion/laion2B-en-aesthetic", "/datasets/laion-aesthetics-6plus"),),
        batch_choices=(1, 2, 4, 8), lr_choices=(1e-5, 5e-6, 2e-6), epoch_choices=(),
        step_range=(2_000, 30_000), epoch_share=0.0, workers_choices=(0, 4, 8),
        gpu_choices=_MEDIUM, styles=("argparse", "yaml"), length_choices=(512, 512, 768),
        precision_choices=("fp16", "bf16"), accum_choices=(1, 1, 2, 4),
        perf=Perf(sample_s=0.16, ref_len=512, len_exp=2.0, step_overhead_s=0.05, comm=0.03, startup_s=240.0,
                  util_max=96.0, util_half_batch=0.8, act_gb=3.0, workers_needed=2),
    ),
    WorkloadFamily(
        key="clip-vitl14-wit", title="CLIP ViT-L/14 contrastive pre-training on WIT", scale="medium",
        task_type="contrastive-pretraining", program="contrastive",
        variants=(ModelVariant("clip-vit-l-14", 0.428, "ViT-L-14"),),
        datasets=(_ds("wit", 0, "wit-val", "google/wit", "/datasets/wit/shards"),),
        batch_choices=(16, 32, 64), lr_choices=(1e-4, 3e-4, 5e-4), epoch_choices=(),
        step_range=(5_000, 80_000), epoch_share=0.0, workers_choices=(4, 6, 8, 12),
        gpu_choices=_MEDIUM, styles=("argparse", "yaml", "hydra"), length_choices=(224,),
        perf=Perf(sample_s=0.011, ref_len=224, len_exp=2.0, step_overhead_s=0.03, comm=0.05, startup_s=150.0,
                  util_max=93.0, util_half_batch=8.0, act_gb=0.30, workers_needed=6),
    ),
    WorkloadFamily(
        key="dlrm-criteo", title="DLRM on Criteo Terabyte", scale="medium", task_type="recommendation",
        program="recsys", variants=(ModelVariant("dlrm", 0.18, "dlrm"),),
        datasets=(
            _ds("criteo-tb", 4_373_472_329, "criteo-tb-day23", "criteo/terabyte", "/datasets/criteo_terabyte", 0.8),
            _ds("criteo-kaggle", 45_840_617, "criteo-kaggle-val", "criteo/kaggle", "/datasets/criteo_kaggle", 0.2),
        ),
        batch_choices=(512, 1024, 2048), lr_choices=(0.1, 0.5, 1.0), epoch_choices=(1,),
        step_range=(10_000, 200_000), epoch_share=0.2, workers_choices=(0, 4, 8),
        gpu_choices=_MEDIUM, styles=("argparse", "yaml", "constants"), precision_choices=("fp32", "fp16"),
        perf=Perf(sample_s=2.0e-5, step_overhead_s=0.004, comm=0.08, internode=0.25, startup_s=180.0,
                  util_max=48.0, util_half_batch=256.0, bytes_per_param=12.0, act_gb=2e-5, workers_needed=1),
    ),
    _vision("resnet50-in1k", "ResNet-50 on ImageNet-1k", "medium",
            ModelVariant("resnet-50", 0.0256, "resnet50"), sample_s=0.0010, img=224,
            batches=(32, 64, 128), lrs=(0.05, 0.1, 0.2, 0.4), epochs=(10, 30, 50, 90, 90), util=90.0, half=16.0,
            act=0.09, gpus=_MEDIUM),
    WorkloadFamily(
        key="unet2d-brats", title="UNet2D brain-tumour segmentation on BraTS", scale="small",
        task_type="segmentation", program="segmentation", variants=(ModelVariant("unet2d", 0.030, "unet2d"),),
        datasets=(_ds("brats", 120_000, "brats-val", "BraTS2021", "/datasets/BraTS2021_Training_Data"),),
        batch_choices=(8, 16, 32, 64), lr_choices=(1e-4, 3e-4, 1e-3), epoch_choices=(20, 50, 100, 150),
        step_range=(5_000, 50_000), epoch_share=0.85, workers_choices=(2, 4, 8, 12), gpu_choices=_SMALL,
        styles=_CV_STYLES, length_choices=(240, 192), precision_choices=("fp16", "fp32", "bf16"),
        perf=Perf(sample_s=0.0020, ref_len=240, len_exp=2.0, step_overhead_s=0.01, comm=0.04, startup_s=120.0,
                  eval_frac=0.05, util_max=82.0, util_half_batch=8.0, act_gb=0.16, workers_needed=6),
    ),
    _vision("efficientnet-b4-in1k", "EfficientNet-B4 on ImageNet-1k", "small",
            ModelVariant("efficientnet-b4", 0.019, "efficientnet_b4"), sample_s=0.0030, img=380,
            batches=(32, 64, 128), lrs=(0.05, 0.1, 0.2), epochs=(10, 30, 50, 90), util=85.0, half=12.0,
            act=0.24, gpus=_SMALL, imgs=(320, 380)),
    _vision("convnext-base-in1k", "ConvNeXt-Base on ImageNet-1k", "small",
            ModelVariant("convnext-base", 0.088, "convnext_base"), sample_s=0.0022, img=224,
            batches=(32, 64, 128), lrs=(5e-4, 1e-3, 4e-3), epochs=(10, 30, 50, 100), util=92.0, half=12.0,
            act=0.18, gpus=_SMALL),
    _vision("mobilenetv2-in1k", "MobileNetV2 on ImageNet-1k", "small",
            ModelVariant("mobilenetv2", 0.0035, "mobilenet_v2"), sample_s=0.00045, img=224,
            batches=(32, 64, 128), lrs=(0.045, 0.05, 0.1), epochs=(10, 30, 50, 100, 150), util=80.0, half=48.0,
            act=0.06, gpus=_SMALL),
    WorkloadFamily(
        key="yolov8m-coco", title="YOLOv8m object detection on COCO", scale="small", task_type="object-detection",
        program="detection", variants=(ModelVariant("yolov8m", 0.0259, "yolov8m"),),
        datasets=(_ds("coco", 118_287, "coco-val2017", "coco.yaml", "/datasets/coco"),),
        batch_choices=(16, 32, 64), lr_choices=(0.01, 0.005, 0.001), epoch_choices=(10, 30, 50, 100),
        step_range=(5_000, 50_000), epoch_share=1.0, workers_choices=(4, 8, 8, 16), gpu_choices=_SMALL,
        styles=("ultralytics",), length_choices=(640, 640, 512), precision_choices=("fp16",),
        batch_is_global=True,
        perf=Perf(sample_s=0.008, ref_len=640, len_exp=2.0, step_overhead_s=0.02, comm=0.05, startup_s=150.0,
                  eval_frac=0.06, util_max=78.0, util_half_batch=8.0, act_gb=0.35, workers_needed=6),
    ),
    WorkloadFamily(
        key="t5-small-c4", title="T5-small span-corruption training on C4", scale="small",
        task_type="text-generation", program="seq2seq", variants=(ModelVariant("t5-small", 0.060, "t5-small"),),
        datasets=(_ds("c4", 0, "c4-validation", "allenai/c4", "/datasets/c4/en"),),
        batch_choices=(1, 2, 4, 8), lr_choices=(1e-4, 3e-4, 1e-3), epoch_choices=(),
        step_range=(10_000, 150_000), epoch_share=0.0, workers_choices=(0, 2, 4), gpu_choices=_SMALL,
        styles=("hf_args", "argparse", "yaml"), length_choices=(512, 512, 1024),
        precision_choices=("bf16", "fp32"), accum_choices=(1, 2, 4),
        perf=Perf(sample_s=0.0025, ref_len=512, step_overhead_s=0.03, comm=0.05, startup_s=150.0,
                  util_max=75.0, util_half_batch=4.0, act_gb=0.12, workers_needed=1),
    ),
)

FAMILY_KEYS: tuple[str, ...] = tuple(FAMILIES)


def get_family(key: str | WorkloadFamily) -> WorkloadFamily:
    if isinstance(key, WorkloadFamily):
        return key
    try:
        return FAMILIES[key]
    except KeyError:
        raise KeyError(f"unknown workload family {key!r}; known: {', '.join(FAMILY_KEYS)}") from None


def families_in_class(scale: SizeClass) -> tuple[str, ...]:
    return tuple(k for k, f in FAMILIES.items() if f.scale == scale)


@dataclass(frozen=True)
class WorkloadConfig:
    """One concrete workload: every value its code states, plus the repository layout choices.

    `batch_size` is the batch size as the training config states it: per device, except where the
    framework states a global one (Megatron's --global-batch-size, Ultralytics' batch).
    `layout_seed`, `style` and `launcher` fix the repository's shape; same config, same repo.
    """

    family: str
    model_name: str
    model_size_b: float
    task_type: str
    dataset: str
    valid_dataset: str | None
    iterations: int
    iteration_type: Literal["steps", "epochs"]
    batch_size: int
    learning_rate: float
    num_workers: int
    gpus: int
    nodes: int
    grad_accum: int = 1
    seq_len: int | None = None
    image_size: int | None = None
    precision: str = "bf16"
    finetune: str | None = None  # "full" or "lora" where fine-tuning
    style: str = "argparse"
    launcher: str = "torchrun"
    layout_seed: int = 0
    extra: dict[str, Any] = field(default_factory=dict, hash=False)  # program-specific (Megatron tp/pp/micro)

    @property
    def family_spec(self) -> WorkloadFamily:
        return FAMILIES[self.family]

    @property
    def variant(self) -> ModelVariant:
        return next(v for v in self.family_spec.variants if v.name == self.model_name)

    @property
    def dataset_spec(self) -> DatasetSpec:
        return next(d for d in self.family_spec.datasets if d.name == self.dataset)

    @property
    def per_device_batch(self) -> float:
        if self.family_spec.batch_is_global:
            return self.batch_size / self.gpus
        return float(self.batch_size)

    @property
    def global_batch(self) -> int:
        if self.family_spec.batch_is_global:
            return self.batch_size
        return self.batch_size * self.gpus * self.grad_accum

    @property
    def length(self) -> int | None:
        return self.seq_len if self.seq_len is not None else self.image_size

    def truth(self) -> WorkloadMetadata:
        return WorkloadMetadata(
            model_name=self.model_name, task_type=self.task_type, dataset=self.dataset,
            iterations=self.iterations, iteration_type=self.iteration_type, model_size_b=self.model_size_b,
            batch_size=self.batch_size, learning_rate=self.learning_rate, num_workers=self.num_workers,
            valid_dataset=self.valid_dataset,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorkloadConfig:
        return cls(**data)

    def with_changes(self, **changes: Any) -> WorkloadConfig:
        return replace(self, **changes)


def _weighted(rng: random.Random, pairs: tuple[tuple[Any, float], ...]) -> Any:
    values, weights = zip(*pairs)
    return rng.choices(values, weights=weights)[0]


def _nice_round(x: float) -> int:
    """Round to 2 significant digits (1234 -> 1200), as people write step counts."""
    if x < 100:
        return max(1, int(round(x)))
    mag = 10 ** (int(math.log10(x)) - 1)
    return int(round(x / mag) * mag)


def nodes_for(gpus: int) -> int:
    return max(1, math.ceil(gpus / GPUS_PER_NODE))


def sample_steps(fam: WorkloadFamily, rng: random.Random) -> int:
    lo, hi = fam.step_range
    return _nice_round(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def sample_config(
    family: str | WorkloadFamily,
    rng: random.Random,
    *,
    gpus: int | None = None,
    style: str | None = None,
    iteration_type: Literal["steps", "epochs"] | None = None,
) -> WorkloadConfig:
    """Draw one concrete workload of `family` (GPU count and style forced when given)."""
    fam = get_family(family)
    variant = rng.choice(fam.variants)
    dataset = _weighted(rng, tuple((d, d.weight) for d in fam.datasets))
    if gpus is None:
        gpus = _weighted(rng, fam.gpu_choices)
        if fam.program == "megatron" and variant.size_b >= 6 and gpus < 32:
            gpus = 32  # nobody pre-trains a 7B/13B model on two nodes
    if iteration_type is None:
        iteration_type = "epochs" if fam.epoch_choices and rng.random() < fam.epoch_share else "steps"
    if iteration_type == "epochs" and not fam.epoch_choices:
        iteration_type = "steps"
    iterations = rng.choice(fam.epoch_choices) if iteration_type == "epochs" else sample_steps(fam, rng)
    batch = rng.choice(fam.batch_choices)
    finetune = None
    lr = rng.choice(fam.lr_choices)
    if fam.program in ("causal_sft", "qa", "diffusion"):
        finetune = "full"
        if fam.lora_lr_choices and rng.random() < 0.35:
            finetune, lr = "lora", rng.choice(fam.lora_lr_choices)
    if fam.batch_is_global and batch % gpus:
        batch = max(gpus, batch - batch % gpus)
    length = rng.choice(fam.length_choices) if fam.length_choices else None
    is_seq = fam.program in ("causal_sft", "qa", "seq2seq", "megatron")
    style = style or rng.choice(fam.styles)
    extra: dict[str, Any] = {}
    if fam.program == "megatron":
        extra = _megatron_parallelism(variant, gpus, batch, rng)
    return WorkloadConfig(
        family=fam.key, model_name=variant.name, model_size_b=variant.size_b, task_type=fam.task_type,
        dataset=dataset.name, valid_dataset=dataset.valid, iterations=iterations,
        iteration_type=iteration_type, batch_size=batch, learning_rate=lr,
        num_workers=rng.choice(fam.workers_choices), gpus=gpus, nodes=nodes_for(gpus),
        grad_accum=rng.choice(fam.accum_choices), seq_len=length if is_seq else None,
        image_size=None if is_seq else length, precision=rng.choice(fam.precision_choices), finetune=finetune,
        style=style, launcher=_pick_launcher(fam, style, gpus, rng), layout_seed=rng.getrandbits(32), extra=extra,
    )


def _megatron_parallelism(variant: ModelVariant, gpus: int, global_batch: int, rng: random.Random) -> dict[str, int]:
    """Tensor/pipeline parallel sizes by model size, micro batch dividing the data-parallel share."""
    tp = {"gpt-1.3b": (1, 1, 2), "gpt-2.7b": (1, 2), "gpt-6.7b": (2, 4), "gpt-13b": (4, 8)}.get(variant.name, (1,))
    tp_size = rng.choice(tp)
    pp_size = 2 if variant.size_b >= 13 and gpus >= 32 and rng.random() < 0.5 else 1
    while tp_size * pp_size > gpus:
        tp_size = max(1, tp_size // 2)
    dp = max(1, gpus // (tp_size * pp_size))
    micro = rng.choice((1, 2, 4))
    while micro > 1 and global_batch % (micro * dp):
        micro //= 2
    return {"tp": tp_size, "pp": pp_size, "micro_batch": micro}


def _pick_launcher(fam: WorkloadFamily, style: str, gpus: int, rng: random.Random) -> str:
    """How the job is started: the command the scheduler receives depends on it."""
    nodes = nodes_for(gpus)
    if fam.program == "megatron":
        return rng.choice(("slurm", "script"))
    if fam.program == "detection":
        return rng.choice(("python", "yolo_cli", "script"))
    if fam.program == "diffusion":
        return rng.choice(("accelerate", "accelerate_script")) if nodes == 1 else "slurm"
    if fam.program == "causal_sft":
        options = ("deepspeed", "script", "slurm") if nodes > 1 else ("deepspeed", "torchrun", "script", "slurm")
        return rng.choice(options)
    if nodes > 1:
        return rng.choice(("slurm", "script"))
    if gpus == 1:
        return rng.choice(("python", "python", "script"))
    return rng.choice(("torchrun", "torchrun", "script", "slurm"))
