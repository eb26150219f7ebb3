"""Workload metadata: the fingerprint the Metadata Extractor produces and the corpus labels use.

`WorkloadMetadata` holds the paper's mandatory fields (model name, task type, train dataset,
iterations and their type) and the optional ones we score (model size, batch size, learning rate,
dataloader workers, validation set). Extra keys (d_model, n_layer, ...) are allowed and kept.

Names are free-form where they come from code ('meta-llama/Meta-Llama-3-8B', 'llama3_8b'), so
every name field is normalised on the way in by *general* rules only (lowercase, organisation
prefix dropped, separators unified, 'llama3' -> 'llama-3', sizes as '8b'). There is deliberately
no table of known names here: the core must not carry any corpus generator's vocabulary
(generated corpora map names onto their own canonical names on the scoring side, in
`schedmate.synthetic.jobs.aliases`).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "IterationType",
    "WorkloadMetadata",
    "normalize_dataset",
    "normalize_iteration_type",
    "normalize_model_name",
    "normalize_task_type",
    "parse_model_size_b",
]

IterationType = Literal["steps", "epochs"]

_ITER_ALIASES = {
    "steps": ("step", "steps", "iter", "iters", "iteration", "iterations", "updates", "batches", "train_iters"),
    "epochs": ("epoch", "epochs", "ep", "passes"),
}

_ORG_PREFIX = re.compile(r"^[A-Za-z0-9_.-]+/(?=[^/]*[A-Za-z][^/]*$)")  # 'org/name'; not 'ViT-L/16'
_FILE_EXT = re.compile(r"\.(?:pt|pth|ckpt|bin|safetensors|ya?ml|json|jsonl|csv|parquet|arrow|txt|tar|gz|zip)$", re.I)
# vendor words some hubs repeat inside the model name ('meta-llama/Meta-Llama-3-8B')
_VENDOR_WORDS = ("meta-", "hf-", "models--", "google-", "facebook-", "microsoft-", "openai-")
# 'llama2' -> 'llama-2', 'qwen2.5' -> 'qwen-2.5', 'resnet50' -> 'resnet-50'; a 'v' before the digits is a
# version marker that stays attached ('yolov8m', 'mobilenetv2'), and two-letter stems stay ('t5', 'sd15')
_GLUED_VERSION = re.compile(r"(?<![a-z0-9.])([a-z]{3,}?)(?<!v)(\d+(?:\.\d+)?)(?=-|$)")
# '8 B' / '8B' / '1.3B' -> '8b' / '1.3b'; '125M' -> '125m'
_SIZE_TOKEN = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?)-?([bmk])(?![a-z0-9])")


def _dash(text: str) -> str:
    """Lowercase; whitespace, underscores and slashes become single dashes."""
    text = re.sub(r"[\s_/]+", "-", text.strip().lower())
    return re.sub(r"-{2,}", "-", text).strip("-")


def _last_path_part(text: str) -> str:
    text = text.strip().rstrip("/")
    if text.startswith(("/", "./", "~", "../")):
        text = text.rsplit("/", 1)[-1]
    return text


def normalize_model_name(name: str) -> str:
    """Generic canonical form of a model name (no table of known models).

    Lowercase; a local path reduced to its last part; organisation prefix and file extension
    dropped ('meta-llama/Meta-Llama-3-8B', '/ckpt/Llama-2-7b-hf/', 'yolov8m.pt'); vendor words and
    the '-hf' export suffix dropped; separators unified to '-'; a version glued to a family name
    split off ('llama2' -> 'llama-2', 'qwen2.5' -> 'qwen-2.5'); sizes written '8b', '1.3b', '125m'.
    Idempotent.
    """
    text = _FILE_EXT.sub("", _ORG_PREFIX.sub("", _last_path_part(name)))
    text = _dash(text)
    for word in _VENDOR_WORDS:
        if text.startswith(word) and len(text) > len(word) + 1:
            text = text[len(word):]
    text = re.sub(r"-hf$", "", text)
    head, sep, rest = text.partition("-")
    text = _GLUED_VERSION.sub(r"\1-\2", head) + sep + rest  # the family name only ('patch16' stays)
    text = _SIZE_TOKEN.sub(lambda m: f"{m.group(1)}{m.group(2)}", text)
    return text or name.strip().lower()


def normalize_dataset(name: str) -> str:
    """Generic canonical form of a dataset name: 'tatsu-lab/alpaca' -> 'alpaca', 'Criteo_1TB' -> 'criteo-1tb'.

    Lowercase, organisation prefix and file extension dropped, separators unified; a local path
    is reduced to its last part. Which name a path *means* is the extractor's business.
    """
    text = _FILE_EXT.sub("", _ORG_PREFIX.sub("", _last_path_part(name)))
    return _dash(text) or name.strip().lower()


def normalize_task_type(name: str) -> str:
    """Generic canonical form of a task: 'Question Answering' -> 'question-answering'; 'fine tuning' and
    'fine-tuning' both become 'finetuning'."""
    text = _dash(name.replace("-", " "))
    return re.sub(r"\bfine-tun", "finetun", re.sub(r"\bpre-train", "pretrain", text))


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
