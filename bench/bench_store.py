"""Benchmark of the job store on its own redis-server: insert rate, KNN latency, recall@10.

Run: `.venv/bin/python bench/bench_store.py` (a few minutes at most). Writes
`bench/results/store.json` and prints one summary line. The goal is p99 < 20 ms at 100k jobs of
dim 384 with recall@10 == 1.0 on the exact path (the only path a plain redis-server offers).
Latency is end to end through `JobStore.search`: change-stream check round trip + scoring + top-k.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import redis

from schedmate.embeddings import redis_server
from schedmate.embeddings.store import JobRecord, JobStore

RESULTS = Path(__file__).resolve().parent / "results" / "store.json"
P99_GOAL_MS = 20.0


def clustered_vectors(rng: np.random.Generator, n: int, centres: np.ndarray, noise: float) -> np.ndarray:
    """Jobs come in families (same code, new hyper-parameters): centre + noise, like real embeddings."""
    picks = rng.integers(0, len(centres), size=n)
    return (centres[picks] + noise * rng.normal(size=(n, centres.shape[1]))).astype(np.float32)


def records(ids: range, vectors: np.ndarray) -> Iterator[JobRecord]:
    for i, vec in zip(ids, vectors, strict=True):
        yield JobRecord(
            job_id=f"job-{i:07d}",
            vector=vec,
            submitted={"user": f"user{i % 97}", "gpus": int(2 ** (i % 4)), "name": f"train-{i % 1000}"},
            workload={"framework": "pytorch", "family": f"f{i % 50}"},
            outcome={"duration": float(i % 7200), "gpu_util": 80.0, "final_status": "completed"},
        )


def percentiles_ms(seconds: list[float]) -> dict[str, float]:
    arr = np.asarray(seconds) * 1e3
    return {
        "p50_ms": round(float(np.percentile(arr, 50)), 3),
        "p99_ms": round(float(np.percentile(arr, 99)), 3),
        "mean_ms": round(float(arr.mean()), 3),
    }


def recall_at_10(store: JobStore, unit_matrix: np.ndarray, queries: np.ndarray) -> float:
    """Mean overlap of the store's top-10 with brute-force float64 cosine top-10."""
    hits = 0
    for query in queries:
        q = query.astype(np.float64) / np.linalg.norm(query)
        truth = {f"job-{i:07d}" for i in np.argsort(-(unit_matrix @ q))[:10]}
        hits += len(truth & {m.job_id for m in store.search(query, k=10)})
    return hits / (10 * len(queries))


def measure(store: JobStore, queries: np.ndarray) -> list[float]:
    for query in queries[:20]:  # warm-up
        store.search(query, k=10)
    times = []
    for query in queries:
        start = time.perf_counter()
        store.search(query, k=10)
        times.append(time.perf_counter() - start)
    return times


def run(sizes: list[int], dim: int, n_queries: int, n_recall: int, batch: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(max(sizes) // 100, dim))
    data = clustered_vectors(rng, max(sizes), centres, noise=0.6)
    unit = data.astype(np.float64) / np.linalg.norm(data.astype(np.float64), axis=1, keepdims=True)
    queries = clustered_vectors(rng, n_queries, centres, noise=0.6)
    result: dict = {
        "dim": dim,
        "k": 10,
        "batch_size": batch,
        "cpu_count": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)),
        "load_avg_1m_at_start": round(os.getloadavg()[0], 2),
        "blas_threads_env": os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS"),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "p99_goal_ms": P99_GOAL_MS,
        "sizes": [],
    }
    with tempfile.TemporaryDirectory(prefix="schedmate-bench-") as tmp, redis_server.running_server(tmp) as info:
        result["redis_version"] = redis.Redis.from_url(info.url).info("server")["redis_version"]
        writer = JobStore.connect(info.url, dim=dim)
        result["path"] = writer.path
        inserted, insert_s = 0, 0.0
        for size in sorted(sizes):
            todo = list(records(range(inserted, size), data[inserted:size]))
            start = time.perf_counter()
            writer.put_many(todo, batch_size=batch)
            insert_s += time.perf_counter() - start
            inserted = size

            reader = JobStore.connect(info.url, dim=dim)  # a fresh process's view: cold full load
            start = time.perf_counter()
            reader.search(queries[0], k=10)
            cold_load_s = time.perf_counter() - start
            times = measure(reader, queries)
            entry = {
                "n": size,
                "cold_load_s": round(cold_load_s, 3),
                **percentiles_ms(times),
                "recall_at_10": recall_at_10(reader, unit[:size], queries[:n_recall]),
            }
            result["sizes"].append(entry)
            reader.close()
        result["insert_records_per_s"] = round(inserted / insert_s)
        result["inserted"] = inserted
        writer.close()
    biggest = result["sizes"][-1]
    result["p99_goal_met"] = biggest["p99_ms"] < P99_GOAL_MS
    return result


def summary(result: dict) -> str:
    parts = [
        f"store bench ({result['path']} path, dim {result['dim']}, {result['usable_cpus']} CPUs, "
        f"load {result['load_avg_1m_at_start']})"
    ]
    parts.append(f"insert {result['insert_records_per_s']:,} rec/s")
    for s in result["sizes"]:
        parts.append(
            f"{s['n'] // 1000}k: p50 {s['p50_ms']:.1f} ms p99 {s['p99_ms']:.1f} ms recall@10 {s['recall_at_10']:.3f}"
        )
    goal = "met" if result["p99_goal_met"] else "MISSED"
    return "; ".join(parts) + f" (p99 < {P99_GOAL_MS:.0f} ms goal {goal})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--recall-queries", type=int, default=100)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    result = run(args.sizes, args.dim, args.queries, args.recall_queries, args.batch, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{summary(result)} -> {args.out}")


if __name__ == "__main__":
    main()
