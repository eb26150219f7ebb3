"""Names as the extractor reads them: a model or public dataset named in a value, path or text.

Built on the extractor's own vocabulary (`knowledge`); generic words ('scratch', 'ImageClassifier')
never count as names.
"""

from __future__ import annotations

import re

from schedmate.agents.advisor.knowledge import canonical_dataset, find_model
from schedmate.workload import normalize_dataset

__all__ = ["dataset_name", "find_known_model", "generic_name", "known_dataset"]


_SUBSET = re.compile(r"^\d+(?:\.\d+)?[kmb]$")


def _windows(text: str, max_len: int = 4) -> list[str]:
    words = [w for w in re.split(r"[^A-Za-z0-9.]+", text) if w]
    out = []
    for i in range(len(words)):
        for j in range(i + 1, min(len(words), i + max_len) + 1):
            out.append("-".join(words[i:j]).strip("."))
    return out


def find_known_model(text: str) -> tuple[str, str] | None:
    """(canonical, as written) of the first model of a known family named in `text` (`knowledge.find_model`).
    A point release written with an underscore, as torchtune and torchtitan name builders and folders
    (`lora_llama3_1_8b`, `qwen2_5_7b`, `llama3_2_vision`), is read as the dotted version."""
    hit = find_model(text)
    dotted = _UNDERSCORE_VERSION.sub(r"\1\2.\3", text)
    if dotted != text:
        better = find_model(dotted)
        if better is not None and (hit is None or len(better[0]) > len(hit[0])):
            return better[0], hit[1] if hit is not None else better[1]
    return hit


_UNDERSCORE_VERSION = re.compile(r"(?i)\b((?:\w*_)?(?:llama|qwen|gemma|phi|olmo|smollm|granite|mistral)[-_]?)(\d)_(\d)(?=_|\b|$)")


def known_dataset(value: str) -> str | None:
    """Canonical public dataset named by a value or any component of a path ('/datasets/imagenet/train',
    'coco_2017_train', 'torchtune.datasets.alpaca_cleaned_dataset')."""
    text = value.strip()
    if not text:
        return None
    cands = [text]
    parts = [p for p in re.split(r"[/\\]", text) if p]
    for p in reversed(parts):
        stem = re.sub(r"\.(json|jsonl|yaml|yml|csv|parquet|arrow|txt|tar|gz|bin|npz|npy|pkl|h5|tfrecords?)$", "", p,
                      flags=re.I)
        cands += [p, stem]
        if "." in stem and not re.search(r"\d\.\d", stem):  # python paths: pkg.datasets.alpaca
            cands.append(stem.rsplit(".", 1)[-1])
    for c in cands:
        canon = canonical_dataset(c)
        if canon:
            return canon
    for c in cands[1:]:
        words = {w.lower() for w in re.split(r"[^A-Za-z0-9.]+", c) if w}
        for w in _windows(c, 3):
            canon = canonical_dataset(w)
            if canon and not any(_SUBSET.match(x) for x in words - set(w.lower().split("-"))):
                return canon  # 'alpaca_2k_test' is a 2k-sample subset, not Alpaca: it keeps its own name
    return None


def dataset_name(value: str) -> str:
    known = known_dataset(value)
    if known:
        return known
    parts = [p for p in re.split(r"[/\\]", value.strip()) if p and p not in (".", "..")]
    generic = {"train", "training", "data", "datasets", "dataset", "mnt", "home", "shards", "raw", "processed"}
    for p in reversed(parts):
        stem = re.sub(r"\.(json|jsonl|yaml|yml|csv|parquet|arrow|txt)$", "", p, flags=re.I)
        if stem.lower() not in generic:
            return normalize_dataset(stem)
    return normalize_dataset(value)


_GENERIC_NAMES = {
    "scratch", "resume", "default", "custom", "none", "model", "models", "base", "main", "net", "network", "local",
    "pretrained", "true", "false", "auto", "checkpoint", "checkpoints", "ckpt", "output", "out", "train", "data",
}


def generic_name(value: str) -> bool:
    """A word that names no particular model or dataset ('scratch', 'ImageClassifier', 'EncoderDecoder')."""
    norm = normalize_dataset(value)
    return norm in _GENERIC_NAMES or re.search(
        r"(?:^|-)(?:image-?)?(?:classifier|detector|segmentor|encoder-?decoder|generalized-?rcnn|wrapper)$",
        re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", value).lower()) is not None
