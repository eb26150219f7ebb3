"""Agreement of the line classifier with Loghub alert labels (BGL, Thunderbird 2k samples).

    .venv/bin/python bench/bench_loghub.py

Loghub's `*_2k.log_structured.csv` has a Label column: '-' is a normal message, anything else an
alert tag. A line counts as a predicted alert when the classifier says `error` (variant
`error+warning`: either). A keyword regex is reported beside it as the trivial baseline.
The classifier was tuned on deep-learning training logs, not on these system logs: this measures
transfer, and nothing here was tuned on Loghub. Writes bench/results/bench_loghub.json and prints
one summary line; skips with a message when the Loghub folder is absent.
"""

from __future__ import annotations

import csv
import json
import re
import sys
import time
from pathlib import Path

from schedmate.config import shared_data_dir
from schedmate.embeddings.classifier import Category, LineClassifier
from schedmate.embeddings.embedder import make_embedder

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results"
DATASETS = ("BGL", "Thunderbird")
KEYWORDS = re.compile(
    r"\b(?:error|errors|fail(?:ed|ure|ing)?|fatal|critical|panic|exception|abort(?:ed)?|timeout|timed out"
    r"|interrupt|corrupt(?:ed)?|denied|refused|unable|cannot|can't|killed|segfault|warn(?:ing)?)\b",
    re.IGNORECASE,
)


def scores(pred: list[bool], truth: list[bool]) -> dict:
    tp = sum(p and t for p, t in zip(pred, truth))
    fp = sum(p and not t for p, t in zip(pred, truth))
    fn = sum(t and not p for p, t in zip(pred, truth))
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    f1 = 2 * precision * recall / (precision + recall) if precision and recall else None
    negatives = sum(not t for t in truth)
    return {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": None if precision is None else round(precision, 3),
        "recall": None if recall is None else round(recall, 3),
        "f1": None if f1 is None else round(f1, 3),
        "false_positive_rate": round(fp / negatives, 4) if negatives else None,
    }


def evaluate(path: Path, embedder) -> dict:
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    contents = [row["Content"] for row in rows]
    truth = [row["Label"] != "-" for row in rows]
    classifier = LineClassifier(embedder)
    start = time.perf_counter()
    labels = classifier.classify_lines(contents)
    seconds = time.perf_counter() - start
    is_error = [label.category is Category.ERROR for label in labels]
    is_warning = [label.category is Category.WARNING for label in labels]
    return {
        "lines": len(rows),
        "alerts": sum(truth),
        "templates_embedded": classifier.stats.templates_embedded,
        "seconds": round(seconds, 2),
        "classifier_error": scores(is_error, truth),
        "classifier_error_or_warning": scores([e or w for e, w in zip(is_error, is_warning)], truth),
        "keyword_baseline": scores([bool(KEYWORDS.search(c)) for c in contents], truth),
        "predicted_categories": {c.value: sum(label.category is c for label in labels) for c in Category},
    }


def main() -> int:
    data = shared_data_dir()
    root = data / "loghub" if data else None
    files = [root / name / f"{name}_2k.log_structured.csv" for name in DATASETS] if root else []
    files = [f for f in files if f.is_file()]
    if not files:
        print(f"bench_loghub: skipped, no Loghub *_2k.log_structured.csv under {root or '<no shared data dir>'}")
        return 0
    embedder = make_embedder()
    result = {f.parent.name: evaluate(f, embedder) for f in files}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "bench_loghub.json").write_text(json.dumps(result, indent=2))

    def fmt(s: dict) -> str:
        return f"P={s['precision']} R={s['recall']} F1={s['f1']} FPR={s['false_positive_rate']}"

    parts = [
        f"{name} ({r['alerts']}/{r['lines']} alerts): classifier {fmt(r['classifier_error'])}, "
        f"+warning {fmt(r['classifier_error_or_warning'])}, keywords {fmt(r['keyword_baseline'])}"
        for name, r in result.items()
    ]
    print("bench_loghub: " + "; ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
