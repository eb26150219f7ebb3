"""Classifier throughput on a generated 1M-line noisy training log, miner comparison, and accuracy
on the hand-labelled lines. Writes bench/results/bench_classifier.json, prints one summary line.

    .venv/bin/python bench/bench_classifier.py [--lines 1000000] [--uncached-sample 2000]

"With cache" is the production path (line-key cache, then template cache, then embedding of new
templates only), timed end to end from raw lines, embedding of new templates included.
"Without cache" embeds every line; it is measured on a small sample and extrapolated linearly
(embedding cost per line does not depend on log length), and the JSON says so.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from schedmate.embeddings.classifier import Category, LineClassifier, cue_category
from schedmate.embeddings.embedder import Embedder, EmbedderConfig, EmbeddingCache, FlagEmbedder, make_embedder
from schedmate.embeddings.logtext import normalise_line
from schedmate.embeddings.templates import Drain3Miner, ExactMiner, TemplateMiner, mask_variables
from schedmate.synthetic.logs import generate_training_log

ROOT = Path(__file__).resolve().parents[1]
LABELLED = ROOT / "tests" / "data" / "labelled_training_lines.tsv"
RESULTS = ROOT / "bench" / "results"


class TimedEmbedder:
    """Adds up the wall time spent embedding, to separate it from per-line overhead."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.seconds, self.texts = inner, 0.0, 0

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        start = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - start
            self.texts += len(texts)


def run_cached(embedder: FlagEmbedder, lines: list[str], miner: TemplateMiner, window: int = 100_000) -> dict:
    embedder.cache = EmbeddingCache(embedder.cache.capacity)  # cold start for every run
    timed = TimedEmbedder(embedder)
    classifier = LineClassifier(timed, miner=miner)
    setup_embed = timed.seconds
    counts: Counter[str] = Counter()
    start = time.perf_counter()
    for i in range(0, len(lines), window):
        counts.update(label.category.value for label in classifier.classify_lines(lines[i : i + window]))
    wall = time.perf_counter() - start
    embed_s = timed.seconds - setup_embed
    first = classifier.stats
    warm_n = min(len(lines), 200_000)
    warm_start = time.perf_counter()
    classifier.classify_lines(lines[:warm_n])  # steady state: every line key already seen
    warm_wall = time.perf_counter() - warm_start
    return {
        "miner": miner.name,
        "lines": len(lines),
        "seconds": round(wall, 2),
        "lines_per_s": round(len(lines) / wall),
        "embedding_seconds": round(embed_s, 2),
        "embedding_texts_per_s": round(first.templates_embedded / embed_s, 1) if embed_s else None,
        "lines_per_s_excluding_embedding": round(len(lines) / max(wall - embed_s, 1e-9)),
        "warm_lines_per_s": round(warm_n / warm_wall),
        "templates_embedded": first.templates_embedded,
        "templates_mined": len(miner),
        "line_cache_hits": first.line_cache_hits,
        "template_cache_hits": first.template_cache_hits,
        "cache_hit_rate": round(first.hit_rate, 5),
        "categories": dict(counts),
    }


def run_uncached(lines: list[str], sample: int, total: int) -> dict:
    embedder = make_embedder(EmbedderConfig(cache_size=0))
    classifier = LineClassifier(embedder, use_cache=False)
    chunk = lines[:sample]
    start = time.perf_counter()
    classifier.classify_lines(chunk)
    wall = time.perf_counter() - start
    rate = len(chunk) / wall
    return {
        "sample_lines": len(chunk),
        "seconds": round(wall, 2),
        "lines_per_s": round(rate, 1),
        "extrapolated_seconds_for_full_log": round(total / rate),
        "note": f"measured on the first {len(chunk)} lines, extrapolated linearly to {total} lines",
    }


def miner_speed(lines: list[str], n: int = 200_000) -> dict:
    """Mining alone, on masked lines (masking is shared and timed separately)."""
    texts = [normalise_line(line).text for line in lines[:n]]
    start = time.perf_counter()
    masked = [mask_variables(t) for t in texts if t]
    mask_s = time.perf_counter() - start
    out = {"lines": len(masked), "mask_lines_per_s": round(len(masked) / mask_s)}
    for miner in (ExactMiner(), Drain3Miner()):
        start = time.perf_counter()
        for text in masked:
            miner.add(text)
        out[f"{miner.name}_lines_per_s"] = round(len(masked) / (time.perf_counter() - start))
        out[f"{miner.name}_templates"] = len(miner)
    return out


def labelled_accuracy(embedder: Embedder) -> dict:
    rows = [r.split("\t") for r in LABELLED.read_text().splitlines() if r and not r.startswith("#")]
    out: dict = {}
    for split in ("dev", "test"):
        data = [(Category(c), t) for s, c, t in rows if s == split]
        texts = [t for _, t in data]
        res = {"n": len(data)}
        for name, clf in (
            ("hybrid", LineClassifier(embedder)),
            ("embedding_only", LineClassifier(embedder, cue_weight=0.0)),
        ):
            labels = [label.category for label in clf.classify_lines(texts)]
            res[name] = round(sum(p is c for p, (c, _) in zip(labels, data)) / len(data), 3)
            if name == "hybrid" and split == "test":
                res["per_category"] = per_category(labels, [c for c, _ in data])
        res["cues_only"] = round(sum(cue_category(t) is c for c, t in data) / len(data), 3)
        out[split] = res
    return out


def per_category(pred: list[Category], truth: list[Category]) -> dict:
    out = {}
    for c in Category:
        tp = sum(p is c and t is c for p, t in zip(pred, truth))
        fp = sum(p is c and t is not c for p, t in zip(pred, truth))
        fn = sum(p is not c and t is c for p, t in zip(pred, truth))
        out[c.value] = {
            "precision": round(tp / (tp + fp), 3) if tp + fp else None,
            "recall": round(tp / (tp + fn), 3) if tp + fn else None,
            "support": tp + fn,
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--uncached-sample", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch

    load_before = os.getloadavg()
    start = time.perf_counter()
    lines = generate_training_log(args.lines, seed=args.seed)
    gen_s = time.perf_counter() - start
    embedder = make_embedder()
    result = {
        "machine": {
            "cpus": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "loadavg_before": [round(x, 2) for x in load_before],
        },
        "generated_lines": len(lines),
        "generation_seconds": round(gen_s, 1),
        "cached": {m.name: run_cached(embedder, lines, m) for m in (ExactMiner(), Drain3Miner())},
        "uncached": run_uncached(lines, args.uncached_sample, len(lines)),
        "miners": miner_speed(lines),
        "labelled_accuracy": labelled_accuracy(embedder),
    }
    result["machine"]["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "bench_classifier.json").write_text(json.dumps(result, indent=2))
    c, u, acc = result["cached"]["exact"], result["uncached"], result["labelled_accuracy"]["test"]
    print(
        f"bench_classifier: {c['lines']} lines, cached {c['lines_per_s']} lines/s end-to-end "
        f"({c['lines_per_s_excluding_embedding']} excl. {c['embedding_seconds']}s embedding, "
        f"warm {c['warm_lines_per_s']}), hit rate {c['cache_hit_rate']:.4f}, "
        f"{c['templates_embedded']} templates embedded (drain3: {result['cached']['drain3']['templates_embedded']}); "
        f"uncached {u['lines_per_s']} lines/s on {u['sample_lines']} lines; "
        f"held-out accuracy {acc['hybrid']} (embedding-only {acc['embedding_only']}, cues-only {acc['cues_only']})"
    )


if __name__ == "__main__":
    main()
