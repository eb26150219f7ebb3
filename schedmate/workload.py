"""Workload metadata: the fingerprint the Metadata Extractor produces and the corpus labels use.

`WorkloadMetadata` holds the paper's mandatory fields (model name, task type, train dataset,
iterations and their type) and the optional ones we score (model size, batch size, learning rate,
dataloader workers, validation set). Extra keys (d_model, n_layer, ...) are allowed and kept.

Names are free-form where they come from code ('meta-llama/Meta-Llama-3-8B', 'llama3_8b'), so
every name field is normalised on the way in: lowercase, organisation prefix dropped, then looked
up in an alias table keyed by a compact form (separators removed). Unknown names stay as written,
lowercased, with spaces and underscores turned into dashes; they are never guessed.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "DATASET_ALIASES",
    "IterationType",
    "MODEL_ALIASES",
    "TASK_ALIASES",
    "WorkloadMetadata",
    "normalize_dataset",
    "normalize_iteration_type",
    "normalize_model_name",
    "normalize_task_type",
    "parse_model_size_b",
]

IterationType = Literal["steps", "epochs"]

# canonical name -> aliases (as they appear in code, model hubs, papers). The canonical name
# itself is always an alias of itself.
MODEL_ALIASES: dict[str, tuple[str, ...]] = {
    "llama-3-8b": (
        "meta-llama/Meta-Llama-3-8B", "Meta-Llama-3-8B", "llama3-8b", "llama3_8b", "LLaMA-3 8B",
        "llama-3-8b-hf", "Llama3-8B-base",
    ),
    "qwen-2.5-14b": (
        "Qwen/Qwen2.5-14B", "qwen2.5-14b", "qwen2_5-14b", "qwen2_5_14b", "Qwen2.5 14B",
        "qwen25-14b", "Qwen-2.5-14B-base",
    ),
    "gpt-1.3b": ("gpt3-1.3b", "gpt-3 1.3b", "gpt3_1.3B", "gpt-xl-1.3b", "megatron-gpt-1.3b"),
    "gpt-2.7b": ("gpt3-2.7b", "gpt-3 2.7b", "gpt3_2.7B", "megatron-gpt-2.7b"),
    "gpt-6.7b": ("gpt3-6.7b", "gpt-3 6.7b", "gpt3_6.7B", "gpt-7b", "gpt3-7b", "megatron-gpt-6.7b"),
    "gpt-13b": ("gpt3-13b", "gpt-3 13b", "gpt3_13B", "megatron-gpt-13b"),
    "vit-l-16": (
        "ViT-L/16", "vit_large_patch16_224", "vit-large-patch16-224", "google/vit-large-patch16-224",
        "vit_l_16", "vit-large", "vit_large_patch16_224.augreg_in21k", "ViT-Large/16",
    ),
    "bert-base": ("bert-base-uncased", "bert-base-cased", "bert_base", "BERT-Base", "bert_base_uncased"),
    "deberta-large": (
        "microsoft/deberta-large", "microsoft/deberta-v3-large", "deberta-v3-large", "deberta_large",
        "DeBERTa-Large", "deberta-v1-large",
    ),
    "stable-diffusion-v1-5": (
        "runwayml/stable-diffusion-v1-5", "stable-diffusion-v1.5", "sd-v1-5", "sd1.5", "sd15",
        "Stable Diffusion 1.5", "stable diffusion", "stable-diffusion", "CompVis/stable-diffusion-v1-4",
        "stable-diffusion-v1-4", "sd-v1-4",
    ),
    "clip-vit-l-14": (
        "openai/clip-vit-large-patch14", "ViT-L-14", "ViT-L/14", "clip-vit-large-patch14", "clip_vit_l_14",
        "CLIP ViT-L/14", "clip-vitl14",
    ),
    "dlrm": ("DLRM", "dlrm-criteo", "dlrm_net", "DLRM_Net", "dlrm-v1", "torchrec-dlrm"),
    "resnet-50": (
        "resnet50", "ResNet50", "ResNet-50", "microsoft/resnet-50", "resnet50.a1_in1k", "resnet_50",
        "torchvision.models.resnet50", "resnet50.tv_in1k",
    ),
    "unet2d": ("UNet2D", "unet-2d", "2d-unet", "unet_2d", "UNet2DModel", "2D U-Net", "unet2d-brats"),
    "efficientnet-b4": ("efficientnet_b4", "EfficientNet-B4", "tf_efficientnet_b4", "efficientnetb4", "tf_efficientnet_b4.ns_jft_in1k"),
    "convnext-base": ("convnext_base", "ConvNeXt-Base", "facebook/convnext-base-224", "convnext_base.fb_in1k", "convnext-b"),
    "mobilenetv2": ("mobilenet_v2", "MobileNetV2", "mobilenet-v2", "mobilenetv2_100", "MobileNet-V2", "mobilenetv2_100.ra_in1k"),
    "yolov8m": ("YOLOv8m", "yolov8m.pt", "yolov8m.yaml", "yolov8-m", "YOLOv8-medium", "ultralytics/yolov8m"),
    "t5-small": ("google-t5/t5-small", "t5_small", "T5-Small", "google/t5-v1_1-small", "t5-v1_1-small"),
}

DATASET_ALIASES: dict[str, tuple[str, ...]] = {
    "alpaca": ("tatsu-lab/alpaca", "alpaca_data", "alpaca_data.json", "alpaca-52k", "stanford-alpaca", "Alpaca"),
    "alpaca-cleaned": ("yahma/alpaca-cleaned", "alpaca_data_cleaned", "alpaca_data_cleaned.json"),
    "imagenet-1k": (
        "imagenet", "ImageNet-1k", "imagenet1k", "imagenet_1k", "ILSVRC2012", "ILSVRC-2012", "ilsvrc",
        "in1k", "imagenet-2012", "ImageNet", "imagenet-1k-train",
    ),
    "squad-v1.1": ("squad", "SQuAD v1.1", "squad1.1", "squad_v1.1", "rajpurkar/squad", "squad-v1", "squad_v1", "SQuAD"),
    "squad-v2": ("squad_v2", "rajpurkar/squad_v2", "SQuAD 2.0", "squad2.0", "squad-2.0"),
    "laion": (
        "LAION", "laion-2b", "laion2B-en", "laion2b-en", "laion-aesthetics", "laion-aesthetics-v2-6plus",
        "laion/laion2B-en-aesthetic", "laion2B-en-aesthetic", "laion-5b", "laion-400m", "laion_aesthetics_6plus",
        "laion-aesthetics-6plus", "improved_aesthetics_6plus",
    ),
    "wit": ("WIT", "google/wit", "wikipedia-image-text", "wit-base", "wikimedia/wit_base"),
    "criteo-tb": ("criteo terabyte", "criteo_1tb", "criteo-1tb", "Criteo TB", "criteo_terabyte", "criteo-terabyte"),
    "criteo-kaggle": ("criteo kaggle", "criteo_kaggle", "criteo-display-ad-challenge", "dac"),
    "brats": ("BraTS", "BraTS2021", "brats2021", "brats-2021", "BraTS21", "brats_2021", "RSNA-ASNR-MICCAI BraTS 2021"),
    "coco": ("COCO", "coco2017", "ms-coco", "MS COCO", "coco-2017", "coco.yaml", "COCO2017"),
    "coco128": ("coco128.yaml",),
    "c4": ("allenai/c4", "c4-en", "C4", "colossal-clean-crawled-corpus"),
    "pile": ("the-pile", "the pile", "EleutherAI/pile", "pile_text_document", "monology/pile-uncopyrighted", "Pile"),
    "slimpajama": ("cerebras/SlimPajama-627B", "slimpajama-627b", "SlimPajama", "slim_pajama", "slimpajama_text_document"),
    "cifar-10": ("cifar10", "CIFAR-10", "cifar_10", "uoft-cs/cifar10"),
}

TASK_ALIASES: dict[str, tuple[str, ...]] = {
    "instruction-finetuning": (
        "instruction fine-tuning", "instruction tuning", "instruction-tuning", "sft", "supervised fine-tuning",
        "supervised-finetuning", "instruct-tuning", "chat fine-tuning",
    ),
    "image-classification": ("image classification", "classification", "img-cls", "imagenet classification"),
    "object-detection": ("object detection", "detection", "det"),
    "text-to-image": ("text to image", "t2i", "text-to-image generation", "image generation", "diffusion"),
    "masked-lm-pretraining": ("masked language modeling", "mlm", "masked-lm", "mlm-pretraining"),
    "qa": (
        "question answering", "question-answering", "extractive qa", "extractive-question-answering",
        "reading comprehension", "squad fine-tuning",
    ),
    "recommendation": ("recsys", "ctr prediction", "click-through rate prediction", "ctr", "recommender"),
    "segmentation": ("image segmentation", "semantic segmentation", "medical image segmentation", "tumor segmentation"),
    "lm-pretraining": (
        "language model pretraining", "llm pretraining", "pretraining", "causal-lm pretraining",
        "causal language modeling", "causal-lm", "gpt pretraining",
    ),
    "contrastive-pretraining": (
        "contrastive", "contrastive learning", "image-text contrastive", "clip pretraining",
        "contrastive language-image pretraining",
    ),
    "text-generation": ("text generation", "seq2seq", "span corruption", "t5 pretraining", "text2text"),
}

_ITER_ALIASES = {
    "steps": ("step", "steps", "iter", "iters", "iteration", "iterations", "updates", "batches", "train_iters"),
    "epochs": ("epoch", "epochs", "ep", "passes"),
}

_ORG_PREFIX = re.compile(r"^[A-Za-z0-9_.-]+/")


def _compact(text: str) -> str:
    """Lowercase, keep letters, digits and dots (so '1.3b' and '13b' stay apart)."""
    return re.sub(r"[^a-z0-9.]", "", text.lower())


def _table(aliases: dict[str, tuple[str, ...]]) -> dict[str, str]:
    table: dict[str, str] = {}
    for canonical, names in aliases.items():
        for name in (canonical, *names):
            key = _compact(name)
            if table.get(key, canonical) != canonical:
                raise ValueError(f"alias {name!r} maps to both {table[key]!r} and {canonical!r}")
            table[key] = canonical
    return table


_MODEL_TABLE = _table(MODEL_ALIASES)
_DATASET_TABLE = _table(DATASET_ALIASES)
_TASK_TABLE = _table(TASK_ALIASES)


def _fallback(text: str) -> str:
    return re.sub(r"[\s_]+", "-", text.strip().lower())


def _lookup(text: str, table: dict[str, str], *, drop_org: bool, strip_prefixes: tuple[str, ...] = ()) -> str:
    raw = text.strip()
    candidates = [raw]
    if drop_org:
        candidates.append(_ORG_PREFIX.sub("", raw))
    for cand in list(candidates):
        low = cand.lower()
        for prefix in strip_prefixes:
            if low.startswith(prefix):
                candidates.append(cand[len(prefix):])
    for cand in candidates:
        key = _compact(cand)
        if key in table:
            return table[key]
    return _fallback(candidates[1] if drop_org and len(candidates) > 1 else raw)


def normalize_model_name(name: str) -> str:
    """Canonical model name: 'Llama-3-8B', 'meta-llama/Meta-Llama-3-8B', 'llama3-8b' -> 'llama-3-8b'.

    Local paths ('/mnt/models/Meta-Llama-3-8B/') are reduced to their last component.
    """
    text = name.strip().rstrip("/")
    if text.startswith(("/", "./", "~")):
        text = text.rsplit("/", 1)[-1]
    return _lookup(text, _MODEL_TABLE, drop_org=True, strip_prefixes=("meta-", "hf-", "models--"))


def normalize_dataset(name: str) -> str:
    """Canonical dataset name: 'ILSVRC2012', 'imagenet_1k', 'ImageNet' -> 'imagenet-1k'."""
    text = name.strip().rstrip("/")
    if "/" in text and text.startswith(("/", "./", "~")):
        text = text.rsplit("/", 1)[-1]
    return _lookup(text, _DATASET_TABLE, drop_org=True)


def normalize_task_type(name: str) -> str:
    """Canonical task type: 'SFT', 'instruction tuning' -> 'instruction-finetuning'."""
    return _lookup(name.replace("_", " "), _TASK_TABLE, drop_org=False)


def normalize_iteration_type(name: str) -> str:
    """'step', 'iters', 'Iterations' -> 'steps'; 'epoch' -> 'epochs'. Anything else raises."""
    low = name.strip().lower()
    for canonical, names in _ITER_ALIASES.items():
        if low in names:
            return canonical
    raise ValueError(f"iteration type must be steps or epochs, got {name!r}")


_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([kmbt]?)\s*(?:params?|parameters)?\s*$", re.IGNORECASE)
_SIZE_UNIT = {"": 1e-9, "k": 1e-6, "m": 1e-3, "b": 1.0, "t": 1e3}


def parse_model_size_b(value: Any) -> float | None:
    """Model size in billions of parameters: 8, '8B', '307M', '25.6m', 3.5e6 (raw counts) -> float.

    A bare number >= 1e5 is read as a raw parameter count; smaller bare numbers as billions.
    """
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError("model size cannot be a boolean")
    if isinstance(value, (int, float)):
        num = float(value)
        return num * 1e-9 if num >= 1e5 else num
    match = _SIZE.match(str(value))
    if not match:
        raise ValueError(f"cannot read a model size from {value!r}")
    num, unit = float(match.group(1)), match.group(2).lower()
    if not unit:
        return num * 1e-9 if num >= 1e5 else num
    return num * _SIZE_UNIT[unit]


_SUFFIX = {"k": 1_000, "m": 1_000_000}
_UNKNOWN = {"", "none", "null", "unknown", "n/a", "na", "auto", "-", "?", "not specified", "unspecified"}


def _unknown_to_none(value: Any) -> Any:
    """Optional fields: 'unknown', 'auto', 'N/A', '' -> None (kept null, never invented)."""
    if isinstance(value, str) and value.strip().lower() in _UNKNOWN:
        return None
    return value


def _parse_count(value: Any) -> Any:
    """'80k' -> 80000, '1,000' -> 1000, '2e4' -> 20000; other values pass through."""
    if isinstance(value, str):
        text = value.strip().lower().replace(",", "").replace("_", "")
        if text and text[-1] in _SUFFIX:
            return int(round(float(text[:-1]) * _SUFFIX[text[-1]]))
        try:
            num = float(text)
        except ValueError:
            return value
        if num.is_integer():
            return int(num)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


class WorkloadMetadata(BaseModel):
    """A job's workload fingerprint. Mandatory: model, task, dataset, iterations and their type."""

    model_config = ConfigDict(extra="allow", str_strip_whitespace=True)

    model_name: str = Field(min_length=1, description="canonical model name, e.g. llama-3-8b, resnet-50")
    task_type: str = Field(min_length=1, description="canonical task, e.g. instruction-finetuning, image-classification")
    dataset: str = Field(min_length=1, description="training dataset, canonical name, e.g. imagenet-1k, alpaca")
    iterations: int = Field(gt=0, description="training length in units of iteration_type")
    iteration_type: IterationType = Field(description="steps or epochs")
    model_size_b: float | None = Field(default=None, ge=0, description="parameters, in billions")
    batch_size: int | None = Field(default=None, gt=0, description="batch size as the training config states it")
    learning_rate: float | None = Field(default=None, gt=0)
    num_workers: int | None = Field(default=None, ge=0, description="dataloader workers per process")
    valid_dataset: str | None = Field(default=None, description="validation set, if named")

    @field_validator("model_name", mode="before")
    @classmethod
    def _model(cls, v: Any) -> Any:
        return normalize_model_name(v) if isinstance(v, str) else v

    @field_validator("dataset", mode="before")
    @classmethod
    def _dataset(cls, v: Any) -> Any:
        return normalize_dataset(v) if isinstance(v, str) and v.strip() else v

    @field_validator("valid_dataset", mode="before")
    @classmethod
    def _valid_dataset(cls, v: Any) -> Any:
        v = _unknown_to_none(v)
        return normalize_dataset(v) if isinstance(v, str) else v

    @field_validator("task_type", mode="before")
    @classmethod
    def _task(cls, v: Any) -> Any:
        return normalize_task_type(v) if isinstance(v, str) else v

    @field_validator("iteration_type", mode="before")
    @classmethod
    def _iter_type(cls, v: Any) -> Any:
        return normalize_iteration_type(v) if isinstance(v, str) else v

    @field_validator("model_size_b", mode="before")
    @classmethod
    def _size(cls, v: Any) -> Any:
        return parse_model_size_b(_unknown_to_none(v))

    @field_validator("iterations", mode="before")
    @classmethod
    def _iterations(cls, v: Any) -> Any:
        return _parse_count(v)

    @field_validator("batch_size", "num_workers", mode="before")
    @classmethod
    def _counts(cls, v: Any) -> Any:
        return _parse_count(_unknown_to_none(v))

    @field_validator("learning_rate", mode="before")
    @classmethod
    def _lr(cls, v: Any) -> Any:
        v = _unknown_to_none(v)
        if isinstance(v, str):
            v = float(v.strip())
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError("learning rate must be finite")
        return v

    def canonical_json(self) -> str:
        """Sorted-key JSON of all set fields (nulls dropped): the text to embed."""
        data = {k: v for k, v in self.model_dump().items() if v is not None}
        return json.dumps(data, sort_keys=True, separators=(",", ":"))
