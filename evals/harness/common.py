"""Helpers shared by the two suites: corpus loading, the shared line classifier, small statistics."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from schedmate.errors import BadInput
from schedmate.loglabels import LABELS_FILE, LogLabels

Progress = Callable[[int, int], None]


class CorpusError(BadInput):
    """A corpus the harness cannot score: the message names the file, the line and what was expected."""


def load_corpus(data_dir: str | Path, limit: int | None = None, *, check_logs: bool = True) -> list[LogLabels]:
    """The labels of a corpus directory (first `limit` logs in labels.jsonl order).

    Everything is checked before any scoring starts (a bad line 900 used to surface after minutes of
    work): a line that is not a label object raises `CorpusError` naming `labels.jsonl:<line>`, and,
    with `check_logs`, so does a label whose log file is missing or not a regular file."""
    from pydantic import ValidationError

    labels_file = Path(data_dir) / LABELS_FILE
    out: list[LogLabels] = []
    try:
        with open(labels_file, encoding="utf-8") as f:
            for no, line in enumerate(f, start=1):
                if limit is not None and len(out) >= limit:
                    break
                if not line.strip():
                    continue
                try:
                    row = json.loads(line.rstrip("\r\n"))
                except json.JSONDecodeError as exc:
                    raise CorpusError(f"{labels_file}:{no}: expected one JSON label object per line; not JSON "
                                      f"({exc.msg} at column {exc.colno})") from None
                try:
                    out.append(LogLabels.model_validate(row))
                except ValidationError as exc:
                    e = exc.errors()[0]
                    field = ".".join(map(str, e["loc"]))
                    what = f"field `{field}`: {e['msg']}" if field else e["msg"]
                    raise CorpusError(f"{labels_file}:{no}: expected one JSON label object per line "
                                      f"(as `schedmate corpus generate` writes); {what}") from None
    except UnicodeDecodeError as exc:
        raise CorpusError(f"{labels_file}: not UTF-8 text (byte {exc.start})") from None
    if check_logs:
        missing = [f"{Path(data_dir) / lab.path if lab.path else '(no path)'} (label {lab.id})" for lab in out
                   if lab.path is None or not log_path(data_dir, lab).is_file()]
        if missing:
            more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
            raise CorpusError(f"{len(missing)} log file(s) named in {labels_file} are missing or not regular files: "
                              f"{', '.join(missing[:3])}{more}; nothing was scored")
    return out


def log_path(data_dir: str | Path, lab: LogLabels) -> Path:
    if lab.path is None:
        raise CorpusError(f"log {lab.id} has no path in {LABELS_FILE}")
    p = Path(lab.path)
    return p if p.is_absolute() else Path(data_dir) / p


def default_classifier():
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
