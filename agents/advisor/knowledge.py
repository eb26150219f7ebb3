"""What the static extractor knows about training code in general (not about any corpus).

Written from public knowledge of model families, tasks and datasets; nothing here is read from a
corpus generator (agents never import `schedmate.synthetic`):

* `FIELD_KEYS`: configuration key names per metadata field, with a specificity;
* `LIBRARY_DEFAULTS`: defaults of frameworks, for values a repository never states;
* `MODEL_FAMILIES` / `find_model` / `canonical_model`: how names of model families look
  (`Qwen2.5-14B`, `vit_large_patch16_224`, `yolov8m.pt`), matched word-bounded so
  `clip_grad_norm` or `--clip` never reads as CLIP and `opt` only counts with a size;
* sizes: `size_from_name` ('7b', '125M', '8x7B'), `size_from_dims` (~12*L*h^2 + vocab*h) and
  `NAMED_SIZES_B` for sizes written as words (bert-base, resnet-50, yolov8m);
* `DATASET_PATTERNS` / `canonical_dataset`: spellings of public datasets;
* `TASK_CUES`: weighted cues (regexes, case-sensitive unless they say `(?i)`) that indicate a task.
"""

from __future__ import annotations

import re
from collections import deque

from schedmate.workload import normalize_dataset, normalize_model_name

__all__ = [
    "DATASET_PATTERNS", "FIELD_KEYS", "LIBRARY_DEFAULTS", "MODEL_FAMILIES", "NAMED_SIZES_B", "PER_DEVICE_BATCH",
    "HF_TRAINING_ARGS", "TASK_ALIASES", "TASK_CUES", "TOTAL_BATCH",
    "DATASET_TRAIN_SIZES", "WORD_VOCAB", "canonical_dataset", "canonical_model", "find_model", "is_model_name",
    "model_size_b",
    "recurrent_lm_size", "size_from_dims", "llama_ffn", "checkpoint_size_b", "CHECKPOINT_SIZES_B",
    "size_from_name",
]

# leaf key -> specificity (higher = more specific); matched on the normalised leaf name
FIELD_KEYS: dict[str, dict[str, int]] = {
    # the batch as one device sees it wins over a total stated beside it (Megatron --micro-batch-size over
    # --global-batch-size, DeepSpeed train_micro_batch_size_per_gpu over train_batch_size, litgpt/Composer
    # micro batch over the global one); a total counts only where it is the only batch stated
    "batch_size": {
        "per_device_train_batch_size": 10, "per_device_batch_size": 10, "train_micro_batch_size_per_gpu": 10,
        "micro_batch_size": 10, "device_train_microbatch_size": 10, "micro_batch": 9, "micro_bs": 9,
        "device_train_batch_size": 9, "batch_size_per_gpu": 9, "per_gpu_train_batch_size": 9,
        "per_gpu_batch_size": 9, "batch_size_per_device": 9, "train_batch_size": 8, "batch_size": 7, "bs": 6,
        "batch": 5, "train_bs": 6, "ims_per_batch": 8, "mini_batch_size": 6, "imgs_per_gpu": 4,
        "samples_per_gpu": 4, "global_batch_size": 4, "global_train_batch_size": 4, "global_batch": 4,
        "total_batch_size": 3, "effective_batch_size": 3, "max_sentences": 7,
    },
    "learning_rate": {
        "learning_rate": 9, "lr": 8, "base_lr": 8, "lr0": 8, "max_lr": 6, "peak_lr": 6, "blr": 5, "init_lr": 6,
        "initial_lr": 6,
    },
    "steps": {
        "max_steps": 9, "max_train_steps": 9, "train_iters": 9, "total_steps": 8, "train_steps": 8, "max_iters": 8,
        "max_iter": 7, "num_steps": 7, "total_iters": 7, "num_iterations": 7, "iterations": 6, "num_train_steps": 8,
        "n_steps": 6, "steps": 4, "iters": 4, "training_steps": 7, "num_training_steps": 7, "total_train_steps": 8,
        "max_num_steps": 7, "num_updates": 5, "max_update": 7, "total_num_steps": 7,
        "max_duration": 8,
    },
    "epochs": {
        "num_train_epochs": 9, "epochs": 8, "num_epochs": 8, "max_epochs": 8, "n_epochs": 7, "total_epochs": 7,
        "epoch": 4, "max_epoch": 7, "train_epochs": 7, "nepochs": 6, "training_epochs": 7, "max_duration": 8,
    },
    "num_workers": {
        "dataloader_num_workers": 9, "num_workers": 8, "workers": 8, "dataloader_workers": 8, "n_workers": 7,
        "data_workers": 7, "loader_workers": 7, "num_data_workers": 7,
        "workers_per_gpu": 7,
    },
    "model_name": {
        "model_name_or_path": 9, "pretrained_model_name_or_path": 9, "model_name": 9, "pretrained_model": 8,
        "model_id": 8, "base_model": 8, "arch": 8, "model": 7, "backbone": 6, "architecture": 7, "network": 5,
        "net": 4, "model_type": 3, "model_path": 6, "pretrained": 3, "weights": 4, "model_cfg": 4, "hf_model": 7,
        "base_model_name_or_path": 9, "model_arch": 8, "checkpoint_dir": 5, "init_from": 3, "model_config": 4,
        "model_class": 1,
    },
    "dataset": {
        "dataset_name": 9, "dataset": 9, "train_dataset": 9, "train_data": 8, "train_data_dir": 8,
        "train_file": 7, "data_path": 7, "data_dir": 6, "data_root": 6, "dataset_dir": 7, "dataset_path": 7,
        "data": 5, "data_prefix": 6, "train_data_path": 8, "data_set": 4, "train_path": 6, "root": 2,
        "train_dir": 6, "processed_data_dir": 6, "raw_data_file": 5, "train_split": 2, "dataset_root": 6,
        "data_files": 5, "train_shards": 6, "source": 1, "dataset_config_name": 8, "datasets": 6,
        "processed_data_file": 5, "raw_data_path": 5,
    },
    "valid_dataset": {
        "valid_dataset": 9, "val_dataset": 9, "eval_dataset": 9, "validation_dataset": 9, "val_data": 8,
        "valid_data": 8, "eval_data": 8, "validation_file": 8, "val_dir": 6, "val_data_dir": 7, "eval_file": 6,
        "val_path": 6, "valid_path": 6, "val_data_path": 7, "validation_data": 8,
    },
    "task_type": {"task_type": 9, "task": 8, "task_name": 6, "stage": 3},
    # tokens per training sample (the rate estimator scales a step's work by it); not a scored field
    "seq_len": {"max_seq_length": 9, "max_seq_len": 9, "seq_len": 9, "seq_length": 9, "sequence_length": 9,
                "encoder_seq_length": 9, "model_max_length": 8, "cutoff_len": 8, "context_length": 8,
                "block_size": 7, "max_length": 6, "max_source_length": 5, "max_len": 5},
    "model_size": {"model_size": 9, "num_params": 8, "n_params": 8, "params": 4, "model_size_b": 9},
    # architecture dimensions (model size from ~12*L*h^2 + vocab*h)
    "n_layer": {"n_layer": 9, "num_layers": 9, "num_hidden_layers": 9, "n_layers": 9, "layers": 4, "depth": 3},
    "d_model": {"n_embd": 9, "hidden_size": 9, "d_model": 9, "dim": 5, "emb_dim": 7, "embed_dim": 7,
                "hidden_dim": 6, "n_embed": 9},
    "vocab": {"vocab_size": 9, "padded_vocab_size": 9, "n_vocab": 9},
}

# batch keys that name the batch one device sees, and totals over devices / accumulation steps
PER_DEVICE_BATCH = frozenset(k for k, v in FIELD_KEYS["batch_size"].items() if v >= 9)
TOTAL_BATCH = frozenset({"global_batch_size", "global_train_batch_size", "global_batch", "total_batch_size",
                         "effective_batch_size"})

# framework -> {key: default}
LIBRARY_DEFAULTS: dict[str, dict[str, object]] = {
    "transformers.TrainingArguments": {
        "num_train_epochs": 3.0, "max_steps": -1, "per_device_train_batch_size": 8, "learning_rate": 5e-5,
        "dataloader_num_workers": 0,
    },
    # a `torch.utils.data.DataLoader(...)` built without num_workers loads in the main process
    "torch.utils.data.DataLoader": {"num_workers": 0},
    # Megatron-LM's argument parser (megatron/training/arguments.py): --num-workers 2
    "megatron": {"num_workers": 2},
    # torchtune's recipes build their DataLoader without workers
    "torchtune": {"num_workers": 0},
    # CLIs that build `transformers.TrainingArguments` from a YAML (LLaMA-Factory's HfArgumentParser, axolotl):
    # `dataloader_num_workers` unset is the Trainer's 0 (their `preprocessing_num_workers` tokenise, not load)
    "hf_trainer_cli": {"dataloader_num_workers": 0},
    # torchtitan's ParallelAwareDataloader is a StatefulDataLoader built without num_workers
    "torchtitan": {"num_workers": 0},
    # detectron2/config/defaults.py: _C.DATALOADER.NUM_WORKERS = 4
    "detectron2": {"DATALOADER.NUM_WORKERS": 4},
    # ultralytics/cfg/default.yaml (the `yolo` CLI and `YOLO(...).train()`)
    "ultralytics": {"epochs": 100, "batch": 16, "lr0": 0.01, "workers": 8},
    # fairseq's option defaults: `--task translation`, `--num-workers 1`, `--lr 0.25`; `--max-epoch 0` / `--max-update 0`
    # mean "no limit"
    "fairseq": {"task": "translation", "num_workers": 1, "lr": 0.25},
}

# trainer configuration classes that extend `transformers.TrainingArguments` (and take its defaults)
HF_TRAINING_ARGS = re.compile(r"\b(?:Seq2Seq)?TrainingArguments\b|\b(?:SFT|DPO|ORPO|KTO|CPO|GRPO|PPO|Reward|GKD)Config\b")

# ----------------------------------------------------------------------------------------- models

_SIZE = r"\d+(?:\.\d+)?[bm]"
_VARIANT = r"(?:-(?:v\d+(?:\.\d+)?|instruct|chat|it|base|deduped|coder|math|preview))*"
# family -> pattern on a token in the generic normal form (lowercase, '-' separators). Anchored at the
# token start; ambiguous short words need more than the bare word (a size, a variant, a version).
MODEL_FAMILIES: dict[str, str] = {
    # a variant may come before the size as well (Qwen2.5-Coder-7B, CodeLlama-Python-7b)
    "llama": rf"(?:code-?|tiny-?)?llama(?:-?\d(?:\.\d)?)?{_VARIANT}(?:-{_SIZE}|-\d+x\d+b)?{_VARIANT}",
    "mistral": rf"mi[sx]tral{_VARIANT}(?:-\d+x\d+b|-{_SIZE})?{_VARIANT}",
    "qwen": rf"qwen(?:-?\d(?:\.\d)?)?{_VARIANT}(?:-{_SIZE})?{_VARIANT}",
    "gemma": rf"(?:code)?gemma(?:-?\d)?{_VARIANT}(?:-{_SIZE})?{_VARIANT}",
    "phi": r"phi-\d(?:\.\d)?(?:-mini|-small|-medium)?",
    "falcon": rf"falcon-{_SIZE}{_VARIANT}",
    "gpt2": r"(?:distil-?)?gpt-?2(?:-medium|-large|-xl|-small)?",
    "gpt3": rf"gpt-?3(?:-{_SIZE})?|gpt-{_SIZE}",  # Megatron-style 'gpt-6.7b'
    "gpt-neox": rf"gpt-?neox(?:-{_SIZE})?",
    "gpt-j": rf"gpt-?j(?:-{_SIZE})?",
    "pythia": rf"pythia-{_SIZE}{_VARIANT}",
    "gpt-neo": rf"gpt-?neo-{_SIZE}",
    "smollm": rf"smol-?lm-?\d?-{_SIZE}{_VARIANT}",
    "olmo": rf"olmo(?:-?\d)?-{_SIZE}{_VARIANT}",
    "deepseek": rf"deepseek(?:-llm|-coder|-math)?(?:-v\d(?:\.\d)?)?(?:-lite)?-{_SIZE}{_VARIANT}",
    "stablelm": rf"stablelm(?:-\d|-zephyr|-base-alpha|-tuned-alpha)*-{_SIZE}{_VARIANT}",
    "opt": rf"opt-{_SIZE}{_VARIANT}",
    "bloom": rf"bloomz?(?:-{_SIZE})?{_VARIANT}",
    "starcoder": rf"starcoder(?:-?\d)?(?:-{_SIZE})?",
    "t5": rf"(?:flan-)?t5(?:-v1[.-]1)?-(?:small|base|large|xl|xxl|{_SIZE})|(?:mt5|byt5)-(?:small|base|large|xl|xxl)",
    "bert": r"(?:distil)?bert-(?:base|large|tiny|mini|small|medium)(?:-uncased|-cased)?|distilbert",
    "roberta": r"(?:xlm-)?roberta-(?:base|large)",
    "deberta": r"deberta(?:-v\d)?-(?:xsmall|small|base|large|xlarge)",
    "electra": r"electra-(?:small|base|large)",
    "vit": r"vit-(?:tiny|small|base|large|huge|ti|s|b|l|h|g)(?:-patch\d+|-p\d+|-\d+)?(?:-\d+)?",
    "deit": r"deit-?3?-(?:tiny|small|base|large|huge)",
    "dinov2": r"dino-?v2-(?:small|base|large|giant|vit[sblg]\d+)",
    "swin-like": r"(?:pvt|cait|beit|eva|regnet[xy]?)-?(?:v2)?-(?:tiny|small|base|large|\d+\w*)",
    "resnet": r"resnet-?\d{2,3}[a-z]?|resnext-?\d+|wide-resnet-?\d+|se-?resnet-?\d+",
    "convnext": r"convnext(?:-?v2)?-(?:atto|femto|pico|nano|tiny|small|base|large|xlarge|t|s|b|l)",
    "efficientnet": r"(?:tf-)?efficient-?net(?:-?v2)?-?(?:b\d|s|m|l)",
    # classic torchvision CNNs
    "cnn-classic": r"densenet-?\d{3}|vgg-?\d{2}(?:-?bn)?|inception-?v[34]|googlenet|alexnet|squeezenet-?1[._-]?[01]|"
                   r"shufflenet-?v2(?:-x\d[._-]\d)?|mnasnet-?\d[._-]\d|regnet-?[xy]-?\d+(?:mf|gf|[._-]\d+gf)",
    "mobilenet": r"mobilenet-?v\d(?:-large|-small)?(?:-\d+)?",
    "swin": r"swin(?:v2)?-(?:tiny|small|base|large|t|s|b|l)",
    "yolo": r"yolo-?v?\d+[nsmlxtcbe]?(?:-seg|-pose|-cls|-obb|-world)?|yolox(?:-[nsmlx])?",
    # diffusion / flow transformers named by size and patch (DiT-XL/2, SiT-B/4)
    "dit": r"(?:dit|sit)-(?:s|b|l|xl)(?:-\d+)?",
    "bart": r"m?bart-(?:base|large)(?:-cnn|-xsum|-cc25|-50)?",
    # fairseq / tensor2tensor architecture identifiers (transformer_wmt_en_de_big, transformer_iwslt_de_en)
    "fairseq-transformer": r"transformer-(?:vaswani-)?(?:wmt|iwslt)-[a-z]{2}-[a-z]{2}(?:-big)?(?:-t2t)?",
    "detr": r"(?:deformable-|conditional-|dab-|dino-)?detr(?:-r(?:esnet-?)?\d+)?",
    "rcnn": r"(?:mask|faster|cascade)-?r-?cnn(?:-r-?\d+)?(?:-fpn)?",
    "retinanet": r"retinanet(?:-r-?\d+)?(?:-fpn)?",
    "monai": r"segresnet(?:-?vae|-?ds)?|swin-?unetr(?:-?v2)?|unetr|dynunet|vnet",
    "unet": r"(?:3d-|2d-)?u-?net(?:-?[23]d)?(?:-\d+)?|nnu-?net",
    "stable-diffusion": r"stable-diffusion(?:-v?\d(?:[.-]\d)?)?(?:-xl)?|sd-?v?\d[.-]?\d|sdxl",
    "whisper": r"whisper-(?:tiny|base|small|medium|large)(?:-v\d)?",
    "wav2vec2": r"wav2vec-?2(?:\.0)?(?:-base|-large)?",
    "hubert": r"hubert-(?:base|large|xlarge)",
    "clip": r"(?:openai-)?clip-vit-[a-z]+(?:-patch)?-?\d+|clip-rn\d+",
    "dlrm": r"dlrm",
    # graph neural networks, named by their layer type
    "gnn": r"gcn(?:-?ii)?|gat(?:v2)?|graph-?sage|gin(?:-?e)?|appnp|sgc|r-?gcn|graphormer|pna|gated-?gcn",
    "segformer": r"segformer(?:-b\d)?",
    # OpenMMLab-style segmentors / detectors, named with an optional backbone (pspnet-r50-d8, fcos-r50)
    "segmentor": r"(?:pspnet|upernet|ocrnet|danet|ccnet|apcnet|dnlnet|gcnet|knet|mask2former|maskformer|setr)"
                 r"(?:-r(?:esnet)?-?\d+(?:-d\d+)?)?",
    "rtdetr": r"rt-?detr(?:-?v2)?-(?:r\d+(?:vd)?|[lx])",
    "detector": r"(?:fcos|atss|rtmdet(?:-[tsmlx])?|htc|solov?2?|yolof|tood|gfl|paa|centernet)(?:-r(?:esnet)?-?\d+)?",
    "deeplab": r"deeplab-?v3(?:\+|plus|p)?(?:-r(?:esnet)?-?\d+(?:-d\d+)?)?",
    "mae": r"mae-vit-(?:base|large|huge|b|l|h)(?:-patch\d+|-\d+)?",
    "mpt": rf"mpt-{_SIZE}(?:-\d+k)?{_VARIANT}",
    "dino": r"dino-?v?2?-vit[a-z]*-?\d+",
}
_FAMILY_RX = [(fam, re.compile(rf"^(?:{rx})$")) for fam, rx in MODEL_FAMILIES.items()]
# names written in prose or code with capitals that mean the model, matched case-sensitively
_PROSE_MODELS = re.compile(r"\b(?:CLIP|DLRM|YOLO(?:v\d+[nsmlx]?)?|DETR|U-?Net|UNet2D(?:Condition)?Model|Stable Diffusion)\b")

_VIT_SIZES = {"tiny": "ti", "small": "s", "base": "b", "large": "l", "huge": "h", "giant": "g"}


def canonical_model(raw: str) -> str:
    """A model name in the core's generic form, with family spellings unified:
    'vit_large_patch16_224' / 'ViT-L/16' -> 'vit-l-16', 'openai/clip-vit-large-patch14' -> 'clip-vit-l-14',
    'yolov8m.pt' -> 'yolov8m', 'mobilenet_v2' -> 'mobilenetv2', 'resnet50.a1_in1k' -> 'resnet-50'."""
    name = normalize_model_name(raw)
    name = re.sub(r"\.(?:[a-z]+\d*_)?in(?:1k|21k|22k)\S*$|\.(?:tv|fb|a\d|ra|augreg)\S*$", "", name)
    m = re.match(r"^(clip-|mae-)?vit-(tiny|small|base|large|huge|giant|ti|s|b|l|h|g)-?(?:patch-?|p)?(\d+)(?:-\d+)?$",
                 name)
    if m:
        size = _VIT_SIZES.get(m.group(2), m.group(2))
        return f"{m.group(1) or ''}vit-{size}-{m.group(3)}"
    name = re.sub(r"^mobilenet-v(\d)", r"mobilenetv\1", name)
    name = re.sub(r"^resnet(\d)", r"resnet-\1", name)
    name = re.sub(r"^yolo-v?(\d)", r"yolov\1", name)
    name = re.sub(r"^(mask|faster|cascade)-?r-?cnn", r"\1-rcnn", name)
    name = re.sub(r"^((?:mask|faster|cascade)-rcnn|retinanet|deeplabv3(?:plus)?)-r-(\d+)", r"\1-r\2", name)
    name = re.sub(r"^(?:tf-)(efficientnet|mixnet|mobilenet)", r"\1", name)  # timm's TF-ported weights, same net
    name = re.sub(r"^swin-?unetr", "swin-unetr", name)
    return name


def is_model_name(token: str) -> bool:
    """Does `token` (as written) name a model of a known family?"""
    norm = normalize_model_name(token)
    return any(rx.match(norm) for _, rx in _FAMILY_RX)


_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/\-]*[A-Za-z0-9]")


def _family_window(norm: str) -> str | None:
    """The longest run of '-'-separated parts of `norm` that names a model of a known family
    ('train-gpt3-175b-distributed' -> 'gpt3-175b')."""
    parts = norm.split("-")
    best: str | None = None
    for i in range(len(parts)):
        for j in range(len(parts), i, -1):
            cand = "-".join(parts[i:j])
            if best is not None and len(cand) <= len(best):
                break
            if any(rx.match(cand) for _, rx in _FAMILY_RX):
                best = cand
                break
    return best


_CKPT_EXT = re.compile(r"\.(?:nemo|pt|pth|ckpt|bin|safetensors|gguf|h5|pkl|onnx|tar|msgpack)$", re.I)
_SIZE_WORD = re.compile(r"^\d+(?:\.\d+)?[bBmM]$")


def find_model(text: str) -> tuple[str, str] | None:
    """(canonical, as written) of the first model of a known family named in `text`; the longest
    word-bounded match wins within a token ('Llama-2-7b-hf' over 'Llama'), and a size written as the
    next word joins it ('LLaMA-3 8B')."""
    tokens = _TOKEN.findall(text)
    for k, tok in enumerate(tokens):
        nxt = tokens[k + 1] if k + 1 < len(tokens) else ""
        if _SIZE_WORD.match(nxt) and is_model_name(f"{tok}-{nxt}"):
            return canonical_model(f"{tok}-{nxt}"), f"{tok} {nxt}"
        base = tok.rsplit("/", 1)[-1]
        for cand in (tok, base, _CKPT_EXT.sub("", base)):
            if is_model_name(cand):
                return canonical_model(cand), cand
        window = _family_window(normalize_model_name(tok.rsplit("/", 1)[-1]))
        if window:
            return canonical_model(window), tok
    m = _PROSE_MODELS.search(text)
    if m:
        return canonical_model(m.group(0).replace(" ", "-")), m.group(0)
    return None


# --------------------------------------------------------------------------------------------- sizes

# public parameter counts (billions) of models whose size is written as a word, not a number
NAMED_SIZES_B: dict[str, float] = {
    "bert-base": 0.110, "bert-large": 0.340, "distilbert": 0.066, "roberta-base": 0.125, "roberta-large": 0.355,
    "deberta-base": 0.139, "deberta-large": 0.406, "deberta-v3-base": 0.184, "deberta-v3-large": 0.435,
    "electra-base": 0.110, "electra-large": 0.335,
    "t5-small": 0.060, "t5-base": 0.220, "t5-large": 0.770, "t5-xl": 2.85, "t5-3b": 2.85, "t5-11b": 11.0,
    "t5-xxl": 11.0,
    "gpt-2": 0.124, "gpt-2-medium": 0.355, "gpt-2-large": 0.774, "gpt-2-xl": 1.56, "phi-1.5": 1.4, "phi-2": 2.7,
    "vit-ti-16": 0.0057, "vit-s-16": 0.022, "vit-b-16": 0.086, "vit-b-32": 0.088, "vit-l-16": 0.304,
    "vit-l-14": 0.304, "vit-h-14": 0.632,
    "mae-vit-b-16": 0.112, "mae-vit-l-16": 0.330, "mae-vit-h-14": 0.657,  # encoder + 8-block 512-d decoder
    "clip-rn50": 0.102, "clip-rn101": 0.120, "clip-rn50x4": 0.178,
    "clip-vit-b-32": 0.151, "clip-vit-b-16": 0.150, "clip-vit-l-14": 0.428,
    "resnet-18": 0.0117, "resnet-34": 0.0218, "resnet-50": 0.0256, "resnet-101": 0.0445, "resnet-152": 0.0602,
    "convnext-tiny": 0.0286, "convnext-small": 0.0502, "convnext-base": 0.0886, "convnext-large": 0.198,
    "efficientnet-b0": 0.0053, "efficientnet-b1": 0.0078, "efficientnet-b2": 0.0091, "efficientnet-b3": 0.012,
    "efficientnet-b4": 0.019, "efficientnet-b5": 0.030, "efficientnet-b6": 0.043, "efficientnet-b7": 0.066,
    "efficientnet-v2-s": 0.0215, "efficientnet-v2-m": 0.0541, "efficientnet-v2-l": 0.1185,
    "wide-resnet50": 0.0689, "wide-resnet101": 0.1269, "distilgpt-2": 0.082, "distilgpt2": 0.082,
    "dinov2-small": 0.022, "dinov2-base": 0.086, "dinov2-large": 0.304, "dinov2-giant": 1.1,
    "deit-3-small": 0.022, "deit-3-base": 0.086, "deit-3-large": 0.304, "deit3-small": 0.022, "deit3-base": 0.086,
    "mt5-small": 0.300, "mt5-base": 0.580, "mt5-large": 1.2, "mt5-xl": 3.7, "mt5-xxl": 13.0,
    "segformer-b0": 0.0037, "segformer-b1": 0.0137, "segformer-b2": 0.0274, "segformer-b3": 0.0473,
    "segformer-b4": 0.0641, "segformer-b5": 0.0847,
    "densenet-121": 0.0080, "densenet-161": 0.0287, "densenet-169": 0.0141, "densenet-201": 0.0200,
    "vgg-11": 0.1329, "vgg-13": 0.1330, "vgg-16": 0.1384, "vgg-19": 0.1437,
    "inception-v3": 0.0272, "googlenet": 0.0066, "alexnet": 0.0611, "squeezenet-1-0": 0.00125,
    "squeezenet-1-1": 0.00124, "regnet-y-400mf": 0.0043, "regnet-y-800mf": 0.0064, "regnet-y-16gf": 0.0836, "resnext-50": 0.0250, "resnext-101": 0.0888,
    # RTMDet (mmdetection configs/rtmdet/README.md, params of the COCO detectors)
    "rtmdet-tiny": 0.0048, "rtmdet-t": 0.0048, "rtmdet-s": 0.0089, "rtmdet-m": 0.0247, "rtmdet-l": 0.0523,
    "rtmdet-x": 0.0949,
    "rtdetr-l": 0.032, "rtdetr-x": 0.067, "rtdetr-r18": 0.020, "rtdetr-r50": 0.042, "rtdetr-r101": 0.076,
    "mobilenetv2": 0.0035, "mobilenetv3-large": 0.0054, "mobilenetv3-small": 0.0025,
    "deit-tiny": 0.0057, "deit-small": 0.022, "deit-base": 0.086,
    "swin-tiny": 0.028, "swin-t": 0.028, "swin-small": 0.050, "swin-s": 0.050, "swin-base": 0.088,
    "swin-b": 0.088, "swin-large": 0.197, "swin-l": 0.197,
    "yolov8n": 0.0032, "yolov8s": 0.0112, "yolov8m": 0.0259, "yolov8l": 0.0437, "yolov8x": 0.0682,
    "yolov8n-seg": 0.0034, "yolov8s-seg": 0.0118, "yolov8m-seg": 0.0273, "yolov8l-seg": 0.0460, "yolov8x-seg": 0.0718,
    "yolov8n-cls": 0.0027, "yolov8s-cls": 0.0064, "yolov8m-cls": 0.0170, "yolov8l-cls": 0.0375, "yolov8x-cls": 0.0574,
    "yolov8n-pose": 0.0033, "yolov8s-pose": 0.0116, "yolov8m-pose": 0.0264, "yolov8l-pose": 0.0444,
    "yolov8x-pose": 0.0694,
    "yolo11n": 0.0026, "yolo11s": 0.0094, "yolo11m": 0.0201, "yolo11l": 0.0253, "yolo11x": 0.0569,
    "yolo11n-seg": 0.0029, "yolo11s-seg": 0.0101, "yolo11m-seg": 0.0224, "yolo11l-seg": 0.0276, "yolo11x-seg": 0.0621,
    "yolo11n-cls": 0.0016, "yolo11s-cls": 0.0055, "yolo11m-cls": 0.0104, "yolo11l-cls": 0.0129, "yolo11x-cls": 0.0284,
    "yolo11n-pose": 0.0029, "yolo11s-pose": 0.0099, "yolo11m-pose": 0.0209, "yolo11l-pose": 0.0262,
    "yolo11x-pose": 0.0588,
    "yolov10n": 0.0023, "yolov10s": 0.0072, "yolov10m": 0.0154, "yolov10b": 0.0191, "yolov10l": 0.0244,
    "yolov10x": 0.0295, "yolov9t": 0.0020, "yolov9s": 0.0071, "yolov9m": 0.0200, "yolov9c": 0.0253, "yolov9e": 0.0573,
    "yolo12n": 0.0026, "yolo12s": 0.0093, "yolo12m": 0.0202, "yolo12l": 0.0264, "yolo12x": 0.0591,
    "yolov5n": 0.0019, "yolov5s": 0.0072, "yolov5m": 0.0212, "yolov5l": 0.0465, "yolov5x": 0.0867,
    "whisper-tiny": 0.039, "whisper-base": 0.074, "whisper-small": 0.244, "whisper-medium": 0.769,
    "whisper-large": 1.55, "wav2vec2-base": 0.095, "wav2vec2-large": 0.317,
    # diffusion models: the UNet, which is what fine-tuning trains
    "stable-diffusion-v1-5": 0.86, "stable-diffusion-v1-4": 0.86, "stable-diffusion-2-1": 0.865, "sdxl": 2.57,
    "stable-diffusion-xl": 2.57,
    # DiT / SiT (Peebles & Xie 2023): the patch size barely changes the count
    "dit-s": 0.033, "dit-b": 0.130, "dit-l": 0.458, "dit-xl": 0.675, "sit-s": 0.033, "sit-b": 0.130,
    "sit-l": 0.458, "sit-xl": 0.675,
    "bart-base": 0.139, "bart-large": 0.406, "mbart-large": 0.611,
    # fairseq Transformer NMT with a ~32k shared BPE vocabulary (Vaswani et al. base / big)
    "transformer-wmt-en-de": 0.061, "transformer-wmt-en-de-big": 0.21, "transformer-vaswani-wmt-en-de-big": 0.21,
    "transformer-wmt-en-fr-big": 0.22, "transformer-iwslt-de-en": 0.040,
    "segresnet": 0.0047, "swin-unetr": 0.062, "unetr": 0.092,  # MONAI defaults (init_filters 16, feature_size 48)
    "detr-resnet-50": 0.041, "detr-r50": 0.041, "mask-rcnn": 0.044, "faster-rcnn": 0.042, "retinanet": 0.038,
    "faster-rcnn-r50": 0.0413, "faster-rcnn-r101": 0.0603, "mask-rcnn-r50": 0.0440, "mask-rcnn-r101": 0.0630,
    "retinanet-r50": 0.0378, "retinanet-r101": 0.0568,
}

# tokenizer vocabularies of public model families, for sizes from layer/width flags that state no vocabulary
FAMILY_VOCAB: tuple[tuple[str, int], ...] = (
    (r"(?:distil)?gpt-?2|gpt-?neo|gpt-?j|pythia|opt-", 50257), (r"llama-?3", 128256), (r"(?:code|tiny)?llama", 32000),
    (r"mistral|mixtral", 32000), (r"qwen", 151936), (r"gemma", 256000), (r"(?:distil)?bert-", 30522),
    (r"roberta", 50265), (r"(?:flan-)?t5-", 32128),
)


def family_vocab(name: str) -> int | None:
    """The tokenizer vocabulary of a known model family (gpt-2: 50257), if public."""
    return next((v for rx, v in FAMILY_VOCAB if re.match(rx, name)), None)


_SIZE_IN_NAME = re.compile(r"(?<![a-z0-9.])(?:(\d+)x)?(\d+(?:\.\d+)?)\s*([bm])(?![a-z])", re.I)


def size_from_name(raw: str) -> float | None:
    """'Qwen2.5-14B' -> 14.0, 'gpt3-1.3b' -> 1.3, 'opt-125m' -> 0.125, 'Mixtral-8x7B' -> 56 (upper bound),
    'bert-base' -> None. The last size written in the name counts (billions)."""
    last = deque(_SIZE_IN_NAME.finditer(raw.replace("_", "-")), maxlen=1)
    m = last[0] if last else None
    if m is None:
        return None
    num = float(m.group(2)) * (int(m.group(1)) if m.group(1) else 1)
    return num if m.group(3).lower() == "b" else num / 1000.0


def size_from_dims(n_layer: int, d_model: int, vocab: int | None = None, *, ffn: int | None = None,
                   heads: int | None = None, kv_heads: int | None = None, gated: bool = False, tied: bool = True,
                   decoder_layers: int = 0) -> float:
    """Parameters (billions) of a transformer stack from its configuration (biases and norms ignored, <1%):

    * attention per layer: q and o projections h*h each, k and v h*(h*kv_heads/heads) each (grouped-query
      attention; = 4h^2 with plain multi-head attention);
    * MLP per layer: 2*h*ffn, or 3*h*ffn when gated (SwiGLU/GeGLU: Llama, Mistral, Qwen, Gemma); ffn = 4h
      when not stated (GPT-2, BERT, Megatron default) -- with neither, ~12*L*h^2 as in Kaplan et al. 2020;
    * embeddings vocab*h, twice when the output head is not tied to them (Llama-2/3 8B+, Mistral);
    * `decoder_layers` (encoder-decoder, T5/BART/Transformer NMT): each decoder layer adds cross-attention
      (another 4h^2) to a layer of the same shape; `n_layer` is then the encoder's depth.
    """
    h = d_model
    f = ffn or 4 * h
    kv = h * kv_heads / heads if heads and kv_heads and 0 < kv_heads <= heads else h
    attn = 2 * h * h + 2 * h * kv
    mlp = (3 if gated else 2) * h * f
    layer = attn + mlp
    body = n_layer * layer + decoder_layers * (layer + 4 * h * h)
    emb = (vocab or 0) * h * (1 if tied else 2)
    return (body + emb) / 1e9


def llama_ffn(d_model: int, multiple_of: int, ffn_dim_multiplier: float | None = None) -> int:
    """The hidden width Meta's Llama reference code (and torchtitan) derives when none is stated:
    int(2 * 4h / 3), times `ffn_dim_multiplier`, rounded up to `multiple_of` (Llama-3-8B: 14336)."""
    hidden = int(2 * 4 * d_model / 3)
    if ffn_dim_multiplier:
        hidden = int(ffn_dim_multiplier * hidden)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


# training examples of public datasets (standard train split), to tell which of two stated limits binds
DATASET_TRAIN_SIZES: dict[str, int] = {
    "alpaca": 52002, "alpaca-cleaned": 51760, "alpaca-gpt4": 52002, "databricks-dolly-15k": 15011,
    "gsm8k": 7473, "squad": 87599, "squad-v2": 130319, "cifar-10": 50000, "cifar-100": 50000, "mnist": 60000,
    "fashion-mnist": 60000, "imagenet-1k": 1281167, "coco": 118287, "oasst1": 84437, "imdb": 25000,
}

# word-level vocabularies of public language-modelling corpora (tokens of the standard splits), for models
# whose embedding table is sized by the data (`ntokens = len(corpus.dictionary)`)
WORD_VOCAB: dict[str, int] = {"wikitext-2": 33278, "wikitext-103": 267735, "ptb": 10000}
_RNN_GATES = {"lstm": 4, "gru": 3, "rnn": 1, "rnn-tanh": 1, "rnn-relu": 1}


def recurrent_lm_size(kind: str, vocab: int, emsize: int, nhid: int, nlayers: int, tied: bool) -> float | None:
    """Parameters (billions) of an embedding -> RNN/Transformer-encoder stack -> linear decoder word LM
    (PyTorch's word_language_model / AWD-LSTM layout). A tied decoder shares the embedding (bias only)."""
    kind = kind.lower().replace("_", "-")
    emb = vocab * emsize
    if kind in _RNN_GATES:
        g, body, d_in = _RNN_GATES[kind], 0, emsize
        for _ in range(nlayers):
            body += g * (nhid * (d_in + nhid) + 2 * nhid)
            d_in = nhid
        dec = vocab if tied else nhid * vocab + vocab
    elif kind == "transformer":  # nn.TransformerEncoderLayer(emsize, nhead, dim_feedforward=nhid)
        body = nlayers * (4 * emsize * emsize + 4 * emsize + 2 * emsize * nhid + nhid + emsize + 4 * emsize)
        dec = emsize * vocab + vocab
    else:
        return None
    return (emb + body + dec) / 1e9


# exact parameter counts (billions) of public hub checkpoints whose rounded name is more than a few
# percent off (embedding-heavy small models, mixtures of experts, untied heads); read from each model card /
# `config.json` arithmetic (e.g. Gemma-7B: 28 layers, d 3072, FFN 24576 gated, vocab 256000 -> 8.54B;
# Mixtral-8x7B: experts share attention -> 46.7B, not 56B). Keys in the extractor's canonical form.
CHECKPOINT_SIZES_B: dict[str, float] = {
    "llama-7b": 6.74, "llama-13b": 13.0, "llama-2-7b": 6.74, "llama-2-13b": 13.0, "llama-2-70b": 69.0,
    "codellama-7b": 6.74, "llama-3-8b": 8.03, "llama-3-70b": 70.6, "llama-3.1-8b": 8.03, "llama-3.1-70b": 70.6,
    "llama-3.1-405b": 406.0, "llama-3.2-1b": 1.24, "llama-3.2-3b": 3.21, "llama-3.3-70b": 70.6,
    "tinyllama-1.1b": 1.10, "mistral-7b": 7.24, "mixtral-8x7b": 46.7, "mixtral-8x22b": 141.0,
    "gemma-2b": 2.51, "gemma-7b": 8.54, "gemma-2-2b": 2.61, "gemma-2-9b": 9.24, "gemma-2-27b": 27.2,
    "gemma-3-1b": 1.0, "gemma-3-4b": 4.30, "gemma-3-12b": 12.2, "gemma-3-27b": 27.4,
    "qwen-2-0.5b": 0.494, "qwen-2-1.5b": 1.54, "qwen-2-7b": 7.62, "qwen-2.5-0.5b": 0.494, "qwen-2.5-1.5b": 1.54,
    "qwen-2.5-3b": 3.09, "qwen-2.5-7b": 7.62, "qwen-2.5-14b": 14.8, "qwen-2.5-32b": 32.8, "qwen-2.5-72b": 72.7,
    "qwen-3-0.6b": 0.596, "qwen-3-1.7b": 1.72, "qwen-3-4b": 4.02, "qwen-3-8b": 8.19, "qwen-3-14b": 14.8,
    "phi-1": 1.42, "phi-1.5": 1.42, "phi-2": 2.78, "phi-3-mini": 3.82, "phi-3.5-mini": 3.82, "phi-3-small": 7.39,
    "phi-3-medium": 14.0, "phi-4": 14.7,
    "falcon-7b": 6.92, "falcon-40b": 41.8, "gpt-j-6b": 6.05, "gpt-neox-20b": 20.6, "opt-350m": 0.331,
    "bloom-560m": 0.559, "bloom-1b1": 1.07, "bloom-7b1": 7.07, "olmo-7b": 6.89, "deepseek-llm-7b": 6.91,
    "smollm-2-135m": 0.135, "smollm-2-360m": 0.362, "smollm-2-1.7b": 1.71,
}
_CKPT_SUFFIX = re.compile(r"-(?:hf|base|instruct|chat|it|v\d+(?:\.\d+)?|\d+k(?:-instruct)?|deduped|pt|sft|dpo)$")


def checkpoint_size_b(canonical: str) -> tuple[float, str] | None:
    """(exact size, key) of a public checkpoint named `canonical` ('llama-3.2-1b-instruct' -> 1.24), its
    release and fine-tune suffixes dropped; None for a name the table does not hold."""
    name = re.sub(r"^meta-", "", canonical.lower())
    name = re.sub(r"^(qwen|gemma|phi|llama)(\d)", r"\1-\2", name)  # qwen2.5-7b / qwen-2.5-7b
    for _ in range(4):
        if name in CHECKPOINT_SIZES_B:
            return CHECKPOINT_SIZES_B[name], name
        shorter = _CKPT_SUFFIX.sub("", name)
        if shorter == name:
            break
        name = shorter
    return None


def model_size_b(canonical: str, raw: str | None = None) -> tuple[float, str] | None:
    """(size, why) from a model's name: the exact count of a public checkpoint, else a number written in it,
    else the public size of a named variant."""
    exact = checkpoint_size_b(canonical)
    if exact is not None:
        return exact[0], f"size written in {canonical!r} (public count of {exact[1]}: {exact[0]}B)"
    for text in (raw, canonical):
        if text:
            v = size_from_name(text)
            if v is not None:
                return v, f"size written in {text!r}"
    base = re.sub(r"-(?:uncased|cased|instruct|chat|it)$", "", canonical)
    # release, width and fine-tune markers do not change the size class: t5-v1-1-small, flan-t5-xl,
    # mobilenetv2-100, resnet-50-a1
    plain = re.sub(r"-v\d+(?:[.-]\d+)?(?=-)", "", re.sub(r"^flan-", "", base))
    plain = re.sub(r"-(?:\d{3}|a\d|d|tv)$", "", plain)
    for key in (canonical, base, plain):
        if key in NAMED_SIZES_B:
            return NAMED_SIZES_B[key], f"public size of {key}"
    # a variant qualified further than the table knows: faster-rcnn-r101-fpn -> faster-rcnn-r101,
    # stable-diffusion-xl-base-1.0 -> stable-diffusion-xl
    parts = plain.split("-")
    for n in range(len(parts) - 1, 0, -1):
        key = "-".join(parts[:n])
        if key in NAMED_SIZES_B:
            return NAMED_SIZES_B[key], f"public size of {key}"
    return None


# ------------------------------------------------------------------------------------------- datasets

# (pattern on the generic normal form of a name or path part, canonical name); first match wins
DATASET_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"imagenet-?(?:21|22)k|in(?:21|22)k", "imagenet-21k"),
    (r"imagenet(?:-?1k)?(?:-?\d{4})?|ilsvrc(?:-?20\d\d)?|in1k|imagenet-train", "imagenet-1k"),
    (r"coco-?128", "coco128"),
    (r"(?:ms-?)?coco(?:-?20(?:14|17))?(?:-(?:detection|instances|captions))?", "coco"),
    (r"lvis(?:-?v\d)?", "lvis"),
    (r"(?:pascal-)?voc(?:-?20(?:07|12))?", "voc"),
    (r"ade-?20k", "ade20k"),
    (r"cityscapes", "cityscapes"),
    (r"cifar-?100", "cifar-100"),
    (r"cifar-?10", "cifar-10"),
    (r"fashion-?mnist", "fashion-mnist"),
    (r"mnist", "mnist"),
    (r"squad-?v?2(?:\.0)?", "squad-v2"),
    (r"squad(?:-?v?1(?:\.1)?)?", "squad"),
    (r"alpaca-?(?:data-?)?cleaned", "alpaca-cleaned"),
    (r"alpaca-?gpt-?4", "alpaca-gpt4"),
    (r"(?:stanford-)?alpaca(?:-data)?(?:-52k)?", "alpaca"),
    (r"(?:mosaicml-)?dolly-?hh-?rlhf", "dolly-hhrlhf"),
    (r"(?:databricks-)?dolly(?:-15k)?", "databricks-dolly-15k"),
    (r"oasst-?1|openassistant-guanaco|guanaco", "oasst1"),
    (r"ultrachat-?200k", "ultrachat-200k"),
    (r"ultrachat", "ultrachat"),
    (r"(?:the-)?pile(?:-uncopyrighted|-text-document|-deduped)?", "pile"),
    (r"slim-?pajama(?:-627b)?(?:-text-document)?", "slimpajama"),
    (r"red-?pajama(?:-data)?(?:-1t|-v2)?(?:-sample)?", "redpajama"),
    (r"fineweb-?edu(?:-\w+)?", "fineweb-edu"),
    (r"fineweb(?:-\w+)?", "fineweb"),
    (r"open-?web-?text(?:-?corpus)?", "openwebtext"),
    (r"wikitext-?103(?:-raw)?(?:-v1)?", "wikitext-103"),
    (r"wikitext-?2(?:-raw)?(?:-v1)?", "wikitext-2"),
    (r"ptb|penn-?treebank(?:-word)?", "ptb"),
    (r"(?:tiny-?)?shakespeare(?:-char)?", "shakespeare"),
    (r"lm-?1b|one-billion-word(?:-benchmark)?", "lm1b"),
    (r"c4(?:-en)?|colossal-clean-crawled-corpus", "c4"),
    (r"bookcorpus(?:open)?", "bookcorpus"),
    (r"laion-?5b", "laion-5b"),
    (r"laion-?2b(?:-en)?(?:-aesthetic)?", "laion-2b"),
    (r"laion-?400m", "laion-400m"),
    (r"laion(?:-aesthetics?)?(?:-v2)?(?:-\d+plus)?", "laion"),
    (r"cc-?3m|conceptual-captions", "cc3m"),
    (r"cc-?12m", "cc12m"),
    (r"criteo-?(?:1tb|tb|terabyte)", "criteo-tb"),
    (r"criteo-?kaggle|criteo-display-ad-challenge|kaggle-?ad-?display-?challenge(?:-processed)?", "criteo-kaggle"),
    (r"criteo", "criteo"),
    (r"movielens(?:-\w+)?|ml-(?:1m|20m|25m|100k)", "movielens"),
    (r"brats(?:-?(?:20)?\d\d)?", "brats"),
    (r"librispeech(?:-asr)?", "librispeech"),
    (r"common-?voice(?:-[\d.-]+)?", "common-voice"),
    (r"kinetics-?(?:400|600|700)?", "kinetics"),
    (r"gsm-?8k", "gsm8k"),
    (r"wmt-?(\d\d)-([a-z]{2})-?([a-z]{2})(?:-.*)?", r"wmt\1-\2-\3"),
    (r"wmt-?(\d\d)(?:-.*)?", r"wmt\1"),
    (r"ogbn-(?:arxiv|products|proteins|papers100m|mag)", ""),
    (r"ogb[gl]-[a-z0-9-]+", ""),
    (r"ultrafeedback(?:-binarized(?:-preferences)?(?:-cleaned)?)?", ""),
    (r"cnn-?dailymail|cnn-dm", "cnn-dailymail"),
    (r"xsum", "xsum"),
    (r"glue|mnli|sst-?2|qnli|qqp|cola|mrpc|rte|sts-?b", "glue"),
    (r"imdb", "imdb"),
    (r"wit(?:-base)?|wikipedia-image-text", "wit"),
)
_DATASET_RX = [(re.compile(rf"^(?:{rx})$"), canon) for rx, canon in DATASET_PATTERNS]
# a canonical form may keep parts of the name (wmt16-en-de); "" keeps the name as written (ogbn-arxiv)


def canonical_dataset(text: str) -> str | None:
    """The canonical name of a public dataset a name or path part spells, else None."""
    norm = re.sub(r"-?(?:data-?module|datasets?)$", "", normalize_dataset(text))  # CocoDataset, MNISTDataModule
    for rx, canon in _DATASET_RX:
        m = rx.match(norm)
        if m:
            return m.expand(canon) if canon else norm
    return None


# ---------------------------------------------------------------------------------------------- tasks

# task -> weighted cues found in code / README / docstrings. Case-SENSITIVE unless marked (?i):
# 'CLIP' the model is written in capitals; 'clip_grad_norm' / '--clip' are gradient clipping.
TASK_CUES: dict[str, tuple[tuple[str, float], ...]] = {
    "instruction-finetuning": (
        (r"(?i)instruction[- ]?(?:fine[- ]?)?tun", 3), (r"(?i)\bsft\b|SFTTrainer|supervised fine-?tun", 2),
        (r"(?i)\balpaca|\bdolly\b|ultrachat|oasst", 2), (r"### Instruction|### Response", 2),
        (r"(?i)\bchat[- ]?(?:fine|tun)", 2), (r"(?i)\blora\b|\bqlora\b|peft", 1),
        (r"(?i)\bfinetune\b|\bfine-?tun(?:e|ing)\b", 0.5),
    ),
    "lm-pretraining": (
        (r"(?i)(?<!masked )(?:language model|llm|gpt|causal[- ]lm)[- ]pre-?train", 3), (r"(?i)\bpre-?train(?:ing)? (?:a )?gpt", 3),
        (r"(?i)megatron", 1.5), (r"--train-iters|train_iters", 1), (r"GPTModel|GPT2LMHeadModel|class GPT\b", 1.5),
        (r"(?i)next[- ]token|causal language model", 1.5), (r"(?i)openwebtext|slimpajama|redpajama|fineweb|\bthe pile\b", 2),
        (r"(?i)(?:^|[/_-])pre-?train(?:ing)?[/_.-]", 1.5),
        (r"(?i)tokens? per (?:iter|step)|tokens_per_iter", 1.5), (r"(?i)\blanguage[_ -]model(?:ing|ling)\b", 2),
        (r"(?i)\bpre-?train(?:ing|s)? (?:\w+[- ]){0,3}(?<!encoder-)(?<!encoder )(?:decoder|LLMs?|LMs?|language models?)\b", 3),
        (r"(?i)\bc4\b|\bdolma\b|\bthe-?stack\b|\blm1b\b|one[- ]billion[- ]word", 1.5),
        (r"(?i)\b(?:transformer|causal|autoregressive|decoder-only|gpt-style) (?:LMs?|language models?)\b", 2),
    ),
    "masked-lm-pretraining": ((r"(?i)masked language model|ForMaskedLM|\bmlm\b", 3),
                              (r"(?i)masked_lm|max_predictions_per_seq|mlm_probability", 2)),
    "image-classification": (
        (r"(?i)image classification|ImageClassification", 3), (r"(?i)image classifier", 1.5),
        (r"(?i)(?:^|\s)(?:vit|deit|resnet|resnext|convnext|efficientnet|swin|mobilenetv?\d?|regnet|densenet|vgg|inception)-", 1), (r"ImageFolder", 2), (r"(?i)top-?1|acc@1", 1.5),
(r"(?i)imagenet|cifar|mnist", 1.5), (r"CrossEntropyLoss", 0.5), (r"timm\.create_model|torchvision\.models", 1),
        (r"num_classes", 0.5), (r"(?i)mixup|cutmix|label_smoothing", 0.5),
    ),
    "object-detection": (
        (r"(?i)object detection", 3), (r"ultralytics|\bYOLO", 3), (r"(?i)mAP50|bbox_mAP|box AP", 2),
        (r"(?i)\bdetr\b|faster[-_ ]?r-?cnn|retinanet|DetectionCheckpointer|detectron2|mmdet", 2),
        # single-stage detector families (as a model name or an mmdet config's `type`)
        (r"(?i)\b(?:rtmdet|fcos|atss|yolox|tood|gfl|centernet|ssd\d*|cascade[-_ ]?r-?cnn)\b(?!-?ins)", 2),
    ),
    "instance-segmentation": ((r"(?i)instance segmentation|mask[-_ ]?r-?cnn|segm_mAP", 3),
                              (r"(?i)\byolo\w*-seg\b", 4)),
    "semantic-segmentation": (
        (r"(?i)semantic segmentation|mmseg|ade20k|cityscapes|segformer|deeplab", 3), (r"(?i)\bmIoU\b", 2),
    ),
    "segmentation": (
        (r"(?i)\bsegmentation\b", 2), (r"\bDice\b|dice_loss|DiceLoss", 2), (r"(?i)brats", 2), (r"\bU-?Net\b", 1),
    ),
    "text-to-image": (
        (r"(?i)text[- ]to[- ]image", 3), (r"UNet2DConditionModel|StableDiffusion", 3), (r"(?i)stable[- ]diffusion", 2),
        (r"DDPMScheduler|diffusers", 1.5),
    ),
    "image-generation": ((r"(?i)\bdiffusion model|DDPM\b|unconditional image generation|\bGAN\b", 2),
                         (r"(?i)\b[ds]it-(?:s|b|l|xl)\b|diffusion[_ ]transformer|gaussian_diffusion|create_diffusion|"
                          r"class-conditional (?:image )?generation|latent diffusion|flow matching|rectified flow", 3),
                         (r"(?i)\bFID\b|\bddim\b|noise schedul", 1),
                         (r"(?i)score-based generative|\bncsn|\b[vs]ub?-?vp-?sde\b|\bvesde\b|\bvpsde\b", 3)),
    "contrastive-pretraining": (
        (r"(?i)contrastive", 3), (r"\bCLIP\b|open_clip", 2), (r"(?i)image[- ]text", 1.5), (r"logit_scale", 1),
    ),
    "recommendation": (
        (r"\bDLRM\b|\bdlrm", 3), (r"(?i)criteo|movielens", 2), (r"(?i)click[- ]?through|\bCTR\b|click logs", 2),
        (r"(?i)recommend", 2), (r"(?i)torchrec|EmbeddingBag", 1),
    ),
    "question-answering": ((r"(?i)question[- ]answering|ForQuestionAnswering", 3), (r"(?i)\bsquad", 2),
                           (r"start_positions", 1)),
    "text-classification": ((r"(?i)text classification|ForSequenceClassification|sentiment", 3),
                            (r"(?i)\bglue\b|\bmnli\b|\bsst-?2\b|\bimdb\b", 2)),
    "summarization": ((r"(?i)summari[sz]ation", 3), (r"(?i)cnn[_-]?daily[_-]?mail|\bxsum\b|samsum", 2)),
    "translation": ((r"(?i)machine translation|\btranslation\b", 3), (r"(?i)\bwmt\d*\b|opus", 1.5)),
    # self-distillation / joint-embedding pretraining of an image backbone (DINO, iBOT, DINOv2, BYOL, MoCo)
    "self-supervised-pretraining": ((r"(?i)self-supervised|\bdinov[23]\b|\bdino\b(?![-_ ]?detr)|\bibot\b|\bbyol\b|"
                                     r"\bmoco(?:v\d)?\b|\bsimclr|\bswav\b|\bijepa\b", 3),
                                    (r"momentum_teacher|teacher_temp|koleo", 2)),
    "masked-image-modeling": ((r"(?i)masked auto-?encoder|masked image model", 4), (r"\bmask_ratio\b", 2),
                              (r"norm_pix_loss|mae_vit|(?i:\bmae-vit)", 2)),
    "seq2seq": ((r"(?i)span[- ]corruption", 2), (r"(?i)encoder[- ]decoder", 1.5),
                (r"T5ForConditionalGeneration|Seq2SeqTrainer|AutoModelForSeq2SeqLM", 2), (r"(?i)text2text", 2)),
    "speech-recognition": ((r"(?i)speech recognition|\basr\b|ForCTC|Whisper|wav2vec", 3), (r"(?i)librispeech|common[_ ]voice", 2)),
    "preference-optimization": ((r"(?i)\bdpo\b|DPOTrainer|preference optimi[sz]ation|\brlhf\b|reward model", 3),
                                (r"(?i)\b(?:orpo|kto|simpo|ipo)\b|ORPOTrainer|KTOTrainer|chosen.{0,40}rejected", 2),
                                (r"(?i)ultrafeedback|hh-rlhf|\bpreference (?:data|pairs)", 2)),
    "node-classification": ((r"(?i)node (?:property prediction|classification)|NodePropPred|\bogbn-", 3),
                            (r"GCNConv|SAGEConv|GATConv|GINConv|torch_geometric|\bdgl\b", 1.5),
                            (r"(?i)\bcora\b|citeseer|pubmed|\breddit\b.*graph", 1)),
    "graph-classification": ((r"(?i)graph (?:property prediction|classification)|GraphPropPred|\bogbg-|TUDataset", 3),
                             (r"global_(?:mean|add|max)_pool", 1)),
    "link-prediction": ((r"(?i)link prediction|LinkPropPred|\bogbl-", 3),),
    "video-classification": ((r"(?i)video classification|action recognition|\bkinetics|something-?something|\bucf-?101", 3),),
    "depth-estimation": ((r"(?i)depth estimation|monocular depth|nyu-?depth", 3),),
    "image-captioning": ((r"(?i)image caption(?:ing)?|\bcaptioning model", 3),),
    "token-classification": ((r"(?i)named entity recognition|ForTokenClassification|token classification|\bconll-?2003", 3),
                             (r"\bNER\b", 2)),
    "text-to-speech": ((r"(?i)text[- ]to[- ]speech|\btts\b|vocoder|mel[- ]spectrogram synthesis", 3),),
    "pose-estimation": ((r"(?i)pose estimation|keypoint detection|\byolo\w*-pose\b", 3),),
}


# task identifiers frameworks use (fairseq `--task`, HF pipelines, the yolo CLI's task word) -> our task
TASK_ALIASES: dict[str, str] = {
    "language-modeling": "lm-pretraining", "causal-lm": "lm-pretraining", "causal-language-modeling": "lm-pretraining",
    "text-generation": "lm-pretraining", "pretrain": "lm-pretraining", "pretraining": "lm-pretraining",
    "masked-lm": "masked-lm-pretraining", "mlm": "masked-lm-pretraining", "fill-mask": "masked-lm-pretraining",
    "masked-language-modeling": "masked-lm-pretraining",
    "sentence-prediction": "text-classification", "sequence-classification": "text-classification",
    "translation-multi-simple-epoch": "translation", "multilingual-translation": "translation",
    "speech-to-text": "speech-recognition", "asr": "speech-recognition",
    "sft": "instruction-finetuning", "dpo": "preference-optimization", "orpo": "preference-optimization",
    "kto": "preference-optimization", "rm": "preference-optimization",
    "detect": "object-detection", "detection": "object-detection", "obb": "object-detection",
    "segment": "instance-segmentation", "classify": "image-classification", "pose": "pose-estimation",
    "node-property-prediction": "node-classification", "nodeproppred": "node-classification",
}


def task_names() -> tuple[str, ...]:
    return tuple(TASK_CUES)
