"""Helpers shared by the two suites: corpus loading, the shared line classifier, small statistics."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from schedmate.loglabels import LogLabels, iter_labels

Progress = Callable[[int, int], None]


def load_corpus(data_dir: str | Path, limit: int | None = None) -> list[LogLabels]:
    """The labels of a corpus directory (first `limit` logs in labels.jsonl order)."""
    out: list[LogLabels] = []
    for lab in iter_labels(data_dir):
        if limit is not None and len(out) >= limit:
            break
        out.append(lab)
    return out


def log_path(data_dir: str | Path, lab: LogLabels) -> Path:
    if lab.path is None:
        raise ValueError(f"log {lab.id} has no path")
    p = Path(lab.path)
    return p if p.is_absolute() else Path(data_dir) / p


def default_classifier():  # type: ignore[no-untyped-def]
    """The core MiniLM line classifier (loaded once per run; its template caches warm up over it)."""
    from schedmate.embeddings.classifier import LineClassifier
    from schedmate.embeddings.embedder import make_embedder

    return LineClassifier(make_embedder())


def default_classifiers(names: Sequence[str]) -> dict[str, Any]:
    """One MiniLM line classifier per name, all over one loaded model but each with its own
    embedding cache and template caches: no system's latency profits from lines another system
    embedded first, and the model (seconds to load, ~100 MB) is loaded once."""
    from schedmate.embeddings.classifier import LineClassifier
    from schedmate.embeddings.embedder import EmbeddingCache, make_embedder

    model = make_embedder()
    out: dict[str, Any] = {}
    for name in names:
        embedder = copy.copy(model)  # shares the torch model, not the cache
        embedder.cache = EmbeddingCache(model.cache.capacity)
        out[name] = LineClassifier(embedder)
    return out


def latency_summary(values: Sequence[float]) -> dict[str, float | int | None]:
    """Mean / p50 / p95 / max seconds, and the total."""
    if not values:
        return {"n": 0, "mean_s": None, "p50_s": None, "p95_s": None, "max_s": None, "total_s": 0.0}
    a = np.asarray(values, dtype=float)
    return {
        "n": int(a.size),
        "mean_s": round(float(a.mean()), 5),
        "p50_s": round(float(np.percentile(a, 50)), 5),
        "p95_s": round(float(np.percentile(a, 95)), 5),
        "max_s": round(float(a.max()), 5),
        "total_s": round(float(a.sum()), 3),
    }


def ratio(num: int | float, den: int | float) -> float | None:
    return round(num / den, 4) if den else None


def rmsre(rel_errors: Iterable[float]) -> float | None:
    errs = [e for e in rel_errors if e is not None and math.isfinite(e)]
    return round(math.sqrt(sum(e * e for e in errs) / len(errs)), 4) if errs else None


def f1_scores(truth: Sequence[str], pred: Sequence[str | None], positive: str) -> dict[str, float | int | None]:
    """Binary precision / recall / F1 / accuracy for `positive` vs the rest (None = predicted negative)."""
    tp = sum(1 for t, p in zip(truth, pred, strict=True) if t == positive and p == positive)
    fp = sum(1 for t, p in zip(truth, pred, strict=True) if t != positive and p == positive)
    fn = sum(1 for t, p in zip(truth, pred, strict=True) if t == positive and p != positive)
    tn = len(truth) - tp - fp - fn
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "tp": tp, "fp": fp, "fn": fn, "tn": tn,
        "precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4),
        "accuracy": ratio(tp + tn, len(truth)),
    }  # fmt: skip


def macro_f1(truth: Sequence[str], pred: Sequence[str | None], classes: Sequence[str]) -> tuple[float, dict[str, float]]:
    """Macro-F1 over `classes` (a None or out-of-class prediction is wrong for every class)."""
    per = {c: float(f1_scores(truth, pred, c)["f1"] or 0.0) for c in classes}
    present = [c for c in classes if c in set(truth)]
    macro = sum(per[c] for c in present) / len(present) if present else 0.0
    return round(macro, 4), per
