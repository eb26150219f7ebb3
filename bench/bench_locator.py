"""Failure Locator benchmark: binary search vs linear scan vs "last 500 lines", same judge, same run.

    .venv/bin/python bench/bench_locator.py [--lines 1000000] [--logs 200] [--corpus both] [--chunk 256]

1. One generated failed log of `--lines` lines (written to a temp file, memory-mapped): index
   time, locate time with a cold classifier (new templates embedded during the search) and warm,
   classifier calls against 2·log2(lines/chunk), lines classified; the linear baseline on the
   same file (cold classifier too) and the tail baseline.
2. `--logs` failed logs per corpus, every Acme reason in turn, 1.5k-40k lines: share located
   within ±5 lines of the truth (the line holding the root-cause signature), per
   method, with calls and time; and, as a rules-only analogue of the paper's "with / without
   Locator" (Table 4), how often the signature rules classify the located window right.

Corpora, both from the one generator `synthetic.logs`: `plain` (dev-pool error texts, the
launcher's usual short teardown: the root cause is near the end) and `hard` (the benchmark's
`HARD_MIX` of hangs, floods, restarts, decoys, ...; both text pools). Writes
bench/results/locator.json, prints one line.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from schedmate.agents.failure.locator import FailureLocator, Located, LogIndex
from schedmate.agents.failure.rules import RulesClassifier
from schedmate.embeddings.classifier import LineClassifier
from schedmate.embeddings.embedder import EmbeddingCache, FlagEmbedder, make_embedder
from schedmate.synthetic.logs import HARD_MIX, LogSpec, LogStatus, generate_log
from schedmate.taxonomy import ACME_REASONS, FailureReason, category_of

RESULTS = Path(__file__).resolve().parent / "results" / "locator.json"
TOLERANCE = 5
METHODS = ("binary", "linear", "tail")


def fresh_locator(embedder: FlagEmbedder, chunk: int) -> FailureLocator:
    """A locator whose classifier and embedding cache are both cold."""
    embedder.cache = EmbeddingCache(embedder.cache.capacity)
    return FailureLocator(LineClassifier(embedder), chunk=chunk)


def timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


@dataclass
class Case:
    """One failed log and where its root cause is: `block` (first line of the root-cause block,
    e.g. the traceback header) and `first` (the line holding the signature)."""

    index: LogIndex
    reason: FailureReason
    block: int
    first: int
    ranks: int | None = None

    def error(self, found: Located | None) -> int | None:
        """Lines between the located root-cause line and the true one (the signature line)."""
        if found is None:
            return None
        return abs(found.line_no - self.first)


def generated_case(n: int, seed: int, reason: FailureReason | None, source: str, path: Path | None = None) -> Case:
    """A failed log of the `plain` or `hard` corpus."""
    spec = LogSpec(n_lines=n, status=LogStatus.FAILED, failure_reason=reason)
    hard = source == "hard"
    out, labels = generate_log(spec, seed, out=path, hard_mix=HARD_MIX if hard else None, heldout_share=0.5 if hard else 0.0)
    index = LogIndex.open(out) if path is not None else LogIndex.from_lines(str(out).split("\n")[:-1])
    f = labels.failure
    assert f is not None
    return Case(index, f.reason, f.block_start, f.first_line, labels.spec.visible_ranks)


def summary(case: Case, found: Located | None, seconds: float) -> dict:
    err = case.error(found)
    return {
        "line_no": found.line_no if found else None,
        "error_lines": err,
        "within_tolerance": err is not None and err <= TOLERANCE,
        "calls": found.calls if found else None,
        "lines_classified": found.lines_classified if found else None,
        "seconds": round(seconds, 3),
    }


def big_log(embedder: FlagEmbedder, n: int, chunk: int, seed: int, source: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "failed.log"
        start = time.perf_counter()
        case = generated_case(n, seed, FailureReason.NVLINK_ERROR, source, path)
        gen_s = time.perf_counter() - start
        case.index.close()
        size = path.stat().st_size
        index, index_s = timed(LogIndex.open, path)
        case.index = index
        n_lines = len(index)
        bound = 2 * math.log2(math.ceil(n_lines / chunk))
        loc = fresh_locator(embedder, chunk)
        cold, cold_s = timed(loc.locate, index)
        cold_templates = loc.judge.classifier.stats.templates_embedded
        warm, warm_s = timed(loc.locate, index)
        tail, tail_s = timed(loc.locate_tail, index)
        lin_loc = fresh_locator(embedder, chunk)
        linear, linear_s = timed(lin_loc.locate_linear, index)
        index.close()
    return {
        "source": source,
        "lines": n_lines,
        "bytes": size,
        "root_block_line": case.block,
        "root_signature_line": case.first,
        "generation_seconds": round(gen_s, 1),
        "index_seconds": round(index_s, 3),
        "calls_bound_2log2": round(bound, 1),
        "binary_cold": summary(case, cold, cold_s) | {"templates_embedded": cold_templates},
        "binary_warm": summary(case, warm, warm_s),
        "linear_cold": summary(case, linear, linear_s)
        | {"templates_embedded": lin_loc.judge.classifier.stats.templates_embedded},
        "tail_500": summary(case, tail, tail_s),
    }


def corpus(embedder: FlagEmbedder, n_logs: int, chunk: int, seed: int, source: str) -> dict:
    rng = random.Random(seed)
    reasons = list(ACME_REASONS)
    rules = RulesClassifier()
    loc = fresh_locator(embedder, chunk)  # one warm classifier across the corpus, as one worker would be
    rows = []
    for i in range(n_logs):
        reason = reasons[i % len(reasons)]
        n = int(math.exp(rng.uniform(math.log(1_500), math.log(40_000))))
        case = generated_case(n, seed * 100_000 + i, reason, source)
        index = case.index
        row = {"reason": reason.value, "category": category_of(reason).value, "lines": len(index),
               "root_block_line": case.block, "root_signature_line": case.first, "ranks": case.ranks,
               "lines_after_root": len(index) - case.block}  # fmt: skip
        for method in METHODS:
            fn = {"binary": loc.locate, "linear": loc.locate_linear, "tail": loc.locate_tail}[method]
            found, secs = timed(fn, index)
            row[method] = summary(case, found, secs)
            if found is not None:  # rules-only classification of the located window
                lo = max(0, found.block - 100)
                verdict = rules.classify(index.lines(lo, found.block + 100), found.block - lo)
                row[method]["rules_reason_ok"] = bool(verdict and verdict.reason is reason)
                row[method]["rules_category_ok"] = bool(verdict and verdict.category is category_of(reason))
            else:
                row[method]["rules_reason_ok"] = row[method]["rules_category_ok"] = False
        rows.append(row)
    agg: dict[str, dict] = {}
    for method in METHODS:
        rs = [r[method] for r in rows]
        errors = [r["error_lines"] for r in rs if r["error_lines"] is not None]
        agg[method] = {
            "within_5_lines": round(sum(r["within_tolerance"] for r in rs) / len(rs), 4),
            "not_found": sum(r["line_no"] is None for r in rs),
            "median_error_lines": statistics.median(errors) if errors else None,
            "mean_calls": round(statistics.mean(r["calls"] or 0 for r in rs), 2),
            "mean_lines_classified": round(statistics.mean(r["lines_classified"] or 0 for r in rs)),
            "mean_seconds": round(statistics.mean(r["seconds"] for r in rs), 4),
            "rules_reason_accuracy": round(sum(r["rules_reason_ok"] for r in rs) / len(rs), 4),
            "rules_category_accuracy": round(sum(r["rules_category_ok"] for r in rs) / len(rs), 4),
        }
    per_category: dict[str, dict[str, float]] = defaultdict(dict)
    for cat in sorted({r["category"] for r in rows}):
        sub = [r for r in rows if r["category"] == cat]
        for method in METHODS:
            per_category[cat][method] = round(sum(r[method]["within_tolerance"] for r in sub) / len(sub), 4)
    misses = Counter(r["reason"] for r in rows if not r["binary"]["within_tolerance"])
    return {
        "source": source,
        "logs": len(rows),
        "mean_lines": round(statistics.mean(r["lines"] for r in rows)),
        "mean_lines_after_root": round(statistics.mean(r["lines_after_root"] for r in rows)),
        "share_root_before_last_500": round(sum(r["lines_after_root"] > 500 for r in rows) / len(rows), 4),
        "methods": agg,
        "within_5_by_category": dict(per_category),
        "binary_misses_by_reason": dict(misses),
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--logs", type=int, default=200)
    parser.add_argument("--chunk", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--corpus", choices=("plain", "hard", "both"), default="both",
                        help="log generator(s) for the accuracy corpus (and the big log: the first one)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    import torch

    sources = ["plain", "hard"] if args.corpus == "both" else [args.corpus]
    load_before = os.getloadavg()
    embedder = make_embedder()
    result = {
        "machine": {"cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                    "loadavg_before": [round(x, 2) for x in load_before]},  # fmt: skip
        "chunk": args.chunk,
        "tolerance_lines": TOLERANCE,
        "tolerance_rule": "|located root-cause line - labelled signature line| within the tolerance",
        "big_log": big_log(embedder, args.lines, args.chunk, args.seed, sources[0]),
        "corpora": {src: corpus(embedder, args.logs, args.chunk, args.seed, src) for src in sources},
    }
    result["machine"]["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    b = result["big_log"]
    parts = []
    for src, c in result["corpora"].items():
        m = c["methods"]
        parts.append(
            f"{src} {c['logs']} logs within ±{TOLERANCE}: binary {m['binary']['within_5_lines']:.3f} "
            f"({m['binary']['mean_calls']} calls), linear {m['linear']['within_5_lines']:.3f} "
            f"({m['linear']['mean_calls']} calls), last-500 {m['tail']['within_5_lines']:.3f}; rules category acc "
            f"binary {m['binary']['rules_category_accuracy']:.3f} vs last-500 {m['tail']['rules_category_accuracy']:.3f}"
        )
    print(
        f"bench_locator: {b['source']} {b['lines']} lines ({b['bytes'] / 1e6:.0f} MB): index {b['index_seconds']}s, "
        f"binary {b['binary_cold']['seconds']}s cold / {b['binary_warm']['seconds']}s warm, "
        f"{b['binary_cold']['calls']} calls (2·log2 = {b['calls_bound_2log2']}), "
        f"{b['binary_cold']['lines_classified']} lines classified, err {b['binary_cold']['error_lines']}; "
        f"linear {b['linear_cold']['seconds']}s/{b['linear_cold']['calls']} calls "
        f"({b['linear_cold']['seconds'] / max(b['binary_cold']['seconds'], 1e-9):.0f}x slower); "
        f"tail-500 err {b['tail_500']['error_lines']} | " + " | ".join(parts)
    )


if __name__ == "__main__":
    main()
