"""What the static extractor knows about training code in general (not about any corpus).

* `FIELD_KEYS`: configuration key names per metadata field, most specific first;
* `LIBRARY_DEFAULTS`: defaults of frameworks, for values a repository never states
  (HF `TrainingArguments`);
* `MODEL_SIZES_B`: public parameter counts of well-known models (model cards / papers), used
  only when the repository names the model but not its size;
* `TASK_CUES`: words and API names that indicate a task, scored over code and README.
"""

from __future__ import annotations

import re

from schedmate.workload import MODEL_ALIASES, TASK_ALIASES

__all__ = ["FIELD_KEYS", "LIBRARY_DEFAULTS", "MODEL_SIZES_B", "TASK_CUES", "size_from_name"]

# leaf key -> specificity (higher = more specific); matched on the normalised leaf name
FIELD_KEYS: dict[str, dict[str, int]] = {
    "batch_size": {
        "global_batch_size": 9, "per_device_train_batch_size": 9, "train_batch_size": 8, "batch_size_per_gpu": 8,
        "per_gpu_train_batch_size": 8, "batch_size": 7, "bs": 6, "batch": 5, "train_bs": 6,
        "micro_batch_size": 3, "mini_batch_size": 6, "train_micro_batch_size_per_gpu": 2, "imgs_per_gpu": 4, "samples_per_gpu": 4,
    },
    "learning_rate": {
        "learning_rate": 9, "lr": 8, "base_lr": 8, "lr0": 8, "max_lr": 6, "peak_lr": 6, "blr": 5, "init_lr": 6,
        "initial_lr": 6,
    },
    "steps": {
        "max_steps": 9, "max_train_steps": 9, "train_iters": 9, "total_steps": 8, "train_steps": 8, "max_iters": 8,
        "max_iter": 7, "num_steps": 7, "total_iters": 7, "num_iterations": 7, "iterations": 6, "num_train_steps": 8,
        "n_steps": 6, "steps": 4, "iters": 4, "training_steps": 7, "num_training_steps": 7, "total_train_steps": 8,
        "max_num_steps": 7, "num_updates": 5, "num_batches": 6, "max_update": 7, "total_num_steps": 7,
    },
    "epochs": {
        "num_train_epochs": 9, "epochs": 8, "num_epochs": 8, "max_epochs": 8, "n_epochs": 7, "total_epochs": 7,
        "epoch": 4, "max_epoch": 7, "train_epochs": 7, "nepochs": 6, "training_epochs": 7,
    },
    "num_workers": {
        "dataloader_num_workers": 9, "num_workers": 8, "workers": 8, "dataloader_workers": 8, "n_workers": 7,
        "data_workers": 7, "loader_workers": 7, "num_data_workers": 7, "preprocessing_num_workers": 2,
    },
    "model_name": {
        "model_name_or_path": 9, "pretrained_model_name_or_path": 9, "model_name": 9, "pretrained_model": 8,
        "model_id": 8, "base_model": 8, "arch": 8, "model": 7, "backbone": 6, "architecture": 7, "network": 5,
        "net": 4, "model_type": 3, "model_path": 6, "pretrained": 3, "weights": 4, "model_cfg": 4, "hf_model": 7,
        "base_model_name_or_path": 9, "model_arch": 8,
    },
    "dataset": {
        "dataset_name": 9, "dataset": 9, "train_dataset": 9, "train_data": 8, "train_data_dir": 8,
        "train_file": 7, "data_path": 7, "data_dir": 6, "data_root": 6, "dataset_dir": 7, "dataset_path": 7,
        "data": 5, "data_prefix": 6, "train_data_path": 8, "data_set": 4, "train_path": 6, "root": 2,
        "train_dir": 6, "processed_data_dir": 6, "raw_data_file": 5, "train_split": 2, "dataset_root": 6, "data_files": 5, "train_shards": 6,
    },
    "valid_dataset": {
        "valid_dataset": 9, "val_dataset": 9, "eval_dataset": 9, "validation_dataset": 9, "val_data": 8,
        "valid_data": 8, "eval_data": 8, "validation_file": 8, "val_dir": 6, "val_data_dir": 7, "eval_file": 6,
        "val_path": 6, "valid_path": 6, "val_data_path": 7, "validation_data": 8,
    },
    "task_type": {"task_type": 9, "task": 8, "task_name": 6},
    "model_size": {"model_size": 9, "num_params": 8, "n_params": 8, "params": 4, "model_size_b": 9},
}

# framework -> {key: default}
LIBRARY_DEFAULTS: dict[str, dict[str, object]] = {
    "transformers.TrainingArguments": {
        "num_train_epochs": 3.0, "max_steps": -1, "per_device_train_batch_size": 8, "learning_rate": 5e-5,
        "dataloader_num_workers": 0,
    },
}

# canonical name -> parameters (billions); public figures
MODEL_SIZES_B: dict[str, float] = {
    "llama-3-8b": 8.03, "qwen-2.5-14b": 14.7, "gpt-1.3b": 1.3, "gpt-2.7b": 2.7, "gpt-6.7b": 6.7, "gpt-13b": 13.0,
    "vit-l-16": 0.307, "bert-base": 0.110, "deberta-large": 0.406, "stable-diffusion-v1-5": 0.86,
    "clip-vit-l-14": 0.428, "dlrm": 0.18, "resnet-50": 0.0256, "unet2d": 0.030, "efficientnet-b4": 0.019,
    "convnext-base": 0.088, "mobilenetv2": 0.0035, "yolov8m": 0.0259, "t5-small": 0.060,
}
assert set(MODEL_SIZES_B) <= set(MODEL_ALIASES)

_SIZE_IN_NAME = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?)\s*([bm])(?![a-z])", re.I)


def size_from_name(raw: str) -> float | None:
    """'Meta-Llama-3-8B' -> 8.0, 'gpt3-1.3b' -> 1.3, 'bert-base' -> None (billions)."""
    m = None
    for m in _SIZE_IN_NAME.finditer(raw.replace("_", "-")):
        pass
    if m is None:
        return None
    num = float(m.group(1))
    return num if m.group(2).lower() == "b" else num / 1000.0


# task -> weighted cues (regex, case-insensitive) found in code / README / docstrings
TASK_CUES: dict[str, tuple[tuple[str, float], ...]] = {
    "instruction-finetuning": (
        (r"instruction[- ]?(?:fine[- ]?)?tun", 3), (r"\bsft\b", 2), (r"alpaca", 2), (r"### Instruction", 2),
        (r"AutoModelForCausalLM", 1), (r"chat[- ]?fine", 2),
    ),
    "lm-pretraining": (
        (r"pre-?train(?:ing)?[_ ]gpt|gpt[- ]?\S* pre-?training", 3), (r"megatron", 2), (r"language model pre-?train", 3),
        (r"--train-iters", 1), (r"GPTModel", 2), (r"causal[- ]lm pre-?train", 3),
    ),
    "image-classification": (
        (r"image classification", 3), (r"ImageFolder", 2), (r"top-?1", 1.5), (r"imagenet", 1.5),
        (r"CrossEntropyLoss", 0.5), (r"timm\.create_model|torchvision\.models", 1), (r"num_classes", 0.5),
    ),
    "object-detection": ((r"object detection", 3), (r"ultralytics|\bYOLO\b", 3), (r"mAP50", 2), (r"\bdetect\b", 1)),
    "text-to-image": (
        (r"text[- ]to[- ]image", 3), (r"UNet2DConditionModel|DDPMScheduler|diffusers", 3), (r"stable[- ]diffusion", 2),
    ),
    "contrastive-pretraining": (
        (r"contrastive", 3), (r"\bCLIP\b|open_clip", 2), (r"image[- ]text", 1.5), (r"logit_scale", 1),
    ),
    "recommendation": ((r"\bDLRM\b|dlrm", 3), (r"criteo", 2), (r"click[- ]?through|\bCTR\b|click logs", 2),
                       (r"recommend", 2)),
    "segmentation": ((r"segmentation", 3), (r"\bDice\b|dice_loss|DiceLoss", 2), (r"BraTS", 2), (r"\bUNet\b|unet2d", 1)),
    "qa": ((r"question[- ]answering|ForQuestionAnswering", 3), (r"squad", 2), (r"start_positions", 1)),
    "text-generation": ((r"span[- ]corruption", 3), (r"T5ForConditionalGeneration|seq2seq", 2),
                        (r"text generation|text2text", 2), (r"\bT5\b|t5-small", 1)),
    "masked-lm-pretraining": ((r"masked language model|\bMLM\b|ForMaskedLM", 3),),
}
assert set(TASK_CUES) <= set(TASK_ALIASES)
