"""The job-corpus generator's own name vocabulary, for generating and for *scoring* only.

The generator writes each model / dataset / task under many spellings (hub ids, file names,
papers' names); these tables map every spelling onto the generator's canonical name. They belong
to the generator: the core (`schedmate.workload`) only applies general rules, and agents never
import this module (tests/test_layering.py). The evaluation uses `same_name` to decide whether an
extracted name and a true name denote the same thing: both sides go through these tables, so an
extractor is not penalised for writing 'meta-llama-3-8b' where the generator wrote 'llama-3-8b',
and nothing of this vocabulary leaks into what the extractor knows.
"""

from __future__ import annotations

import re
from typing import Any

from schedmate.workload import normalize_dataset as _generic_dataset
from schedmate.workload import normalize_model_name as _generic_model
from schedmate.workload import normalize_task_type as _generic_task

__all__ = [
    "DATASET_ALIASES", "MODEL_ALIASES", "NAME_FIELDS", "TASK_ALIASES", "canonical_name", "normalize_dataset",
    "normalize_model_name", "normalize_task_type", "same_name",
]

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
_ORG_PREFIX = re.compile(r"^[A-Za-z0-9_.-]+/")


def _lookup(text: str, table: dict[str, str], generic: Any, *, drop_org: bool,
            strip_prefixes: tuple[str, ...] = ()) -> str:
    raw = text.strip()
    candidates = [raw]
    if drop_org:
        candidates.append(_ORG_PREFIX.sub("", raw))
    for cand in list(candidates):
        low = cand.lower()
        for prefix in strip_prefixes:
            if low.startswith(prefix):
                candidates.append(cand[len(prefix):])
    candidates.append(generic(raw))
    for cand in candidates:
        key = _compact(cand)
        if key in table:
            return table[key]
    return generic(raw)


def normalize_model_name(name: str) -> str:
    """The generator's canonical model name: 'meta-llama/Meta-Llama-3-8B', 'llama3-8b' -> 'llama-3-8b';
    names it does not know get the core's generic form."""
    text = name.strip().rstrip("/")
    if text.startswith(("/", "./", "~")):
        text = text.rsplit("/", 1)[-1]
    return _lookup(text, _MODEL_TABLE, _generic_model, drop_org=True, strip_prefixes=("meta-", "hf-", "models--"))


def normalize_dataset(name: str) -> str:
    """The generator's canonical dataset name: 'ILSVRC2012', 'imagenet_1k', 'ImageNet' -> 'imagenet-1k'."""
    text = name.strip().rstrip("/")
    if "/" in text and text.startswith(("/", "./", "~")):
        text = text.rsplit("/", 1)[-1]
    return _lookup(text, _DATASET_TABLE, _generic_dataset, drop_org=True)


def normalize_task_type(name: str) -> str:
    """The generator's canonical task: 'SFT', 'instruction tuning' -> 'instruction-finetuning'."""
    return _lookup(name.replace("_", " "), _TASK_TABLE, _generic_task, drop_org=False)


NAME_FIELDS = {"model_name": normalize_model_name, "dataset": normalize_dataset, "valid_dataset": normalize_dataset,
               "task_type": normalize_task_type}


def canonical_name(field: str, value: Any) -> Any:
    """`value` mapped onto the generator's canonical name for a name field; other values unchanged."""
    fn = NAME_FIELDS.get(field)
    return fn(value) if fn is not None and isinstance(value, str) and value.strip() else value


def same_name(field: str, got: Any, truth: Any) -> bool:
    """Scoring: do an extracted and a true name denote the same thing in the generator's vocabulary?"""
    if got is None or truth is None:
        return got is truth
    return canonical_name(field, got) == canonical_name(field, truth)
