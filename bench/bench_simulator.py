"""Simulator benchmark: wall time and events/s on real traces under FIFO and Tiresias.

Runs the Philly-derived trace (82k jobs) and the Helios-Venus-derived trace (125k jobs), plus their
first 10k and 40k jobs to show how cost grows, on a cluster sized so that queues form (capacity =
offered GPU-time ÷ span ÷ `--load`). The baseline, measured in the same run, is a bare heapq loop
pushing and popping the same number of events: the ratio says how much the engine costs per event
beyond the event queue itself, which is steadier across noisy machines than seconds alone.

    python bench/bench_simulator.py [--quick] [--out bench/results/simulator.json]
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np

from schedmate.config import shared_data_dir
from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.engine import SimConfig, Simulator
from schedmate.schedulers.metrics import summarize
from schedmate.schedulers.policies import make_policy
from schedmate.schedulers.traces import generate_trace, load_trace

TRACES = {
    "philly": ("sia/traces/philly.csv", None),
    "helios-venus": ("helios-venus-derived/helios_trace.csv", None),
}


def size_cluster(jobs, load: float) -> ClusterSpec:
    span = max(1.0, jobs[-1].submit_time - jobs[0].submit_time)
    offered = sum(j.duration * j.num_gpus for j in jobs) / span
    nodes = max(2, math.ceil(offered / load / 8))
    nodes = max(nodes, math.ceil(max(j.num_gpus for j in jobs) / 8))
    return ClusterSpec.homogeneous(nodes, 8)


def heap_baseline(n_events: int) -> float:
    """Seconds for a bare heap loop of `n_events` pushes and pops (the floor for any DES)."""
    rng = np.random.default_rng(0).random(n_events).tolist()
    start = time.perf_counter()
    heap: list[tuple[float, int]] = []
    for i, x in enumerate(rng):
        heapq.heappush(heap, (x, i))
    while heap:
        heapq.heappop(heap)
    return time.perf_counter() - start


def run_one(name: str, jobs, policy: str, load: float) -> dict:
    cluster = size_cluster(jobs, load)
    sim = Simulator(jobs, cluster, make_policy(policy), SimConfig(record_timeline=False))
    result = sim.run()
    s = summarize(result)
    base = heap_baseline(max(1, result.events))
    return {
        "trace": name,
        "jobs": len(jobs),
        "policy": policy,
        "gpus": cluster.total_gpus,
        "wall_s": round(result.wall_seconds, 3),
        "events": result.events,
        "events_per_s": round(result.events / result.wall_seconds),
        "heap_baseline_s": round(base, 4),
        "cost_vs_heap": round(result.wall_seconds / base, 1),
        "mean_queueing_h": round(s.mean_queueing / 3600, 2),
        "mean_jct_h": round(s.mean_jct / 3600, 2),
        "gpu_util": round(s.gpu_utilisation, 3),
    }


def growth_exponent(rows: list[dict]) -> float | None:
    """Slope of log(wall) against log(n): 1.0 is linear, ~1.1 is n log n at these sizes."""
    pts = [(r["jobs"], r["wall_s"]) for r in rows if r["wall_s"] > 0]
    if len(pts) < 2:
        return None
    x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return round(float(np.polyfit(x, y, 1)[0]), 2)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="synthetic 10k/40k jobs only (no shared data needed)")
    ap.add_argument("--load", type=float, default=0.95)
    ap.add_argument("--policies", default="fifo,tiresias")
    ap.add_argument("--out", type=Path, default=Path("bench/results/simulator.json"))
    args = ap.parse_args()

    traces: dict[str, list] = {}
    data = shared_data_dir()
    if args.quick or data is None:
        if data is None:
            print("shared data not found: benchmarking the synthetic trace only", file=sys.stderr)
        traces["synthetic"] = generate_trace(40_000, seed=0, cluster_gpus=256, load=1.0).jobs
    else:
        for name, (rel, fmt) in TRACES.items():
            traces[name] = load_trace(data / rel, fmt).jobs

    rows = []
    for name, jobs in traces.items():
        for n in (10_000, 40_000, len(jobs)):
            subset = jobs[:n]
            if n > len(jobs) or (n == len(jobs) and n in (10_000, 40_000) and rows and rows[-1]["jobs"] == n):
                continue
            for policy in args.policies.split(","):
                row = run_one(name, subset, policy, args.load)
                rows.append(row)
                print(
                    f"  {name:13s} {row['jobs']:>7d} jobs {policy:9s} {row['gpus']:5d} GPUs "
                    f"{row['wall_s']:7.2f} s {row['events_per_s']:>8d} ev/s x{row['cost_vs_heap']} heap "
                    f"queue {row['mean_queueing_h']} h",
                    file=sys.stderr,
                )
    exponents = {
        f"{t}/{p}": growth_exponent([r for r in rows if r["trace"] == t and r["policy"] == p])
        for t in traces
        for p in args.policies.split(",")
    }
    out = {
        "benchmark": "simulator",
        "machine": {"python": platform.python_version(), "cpu": platform.processor() or platform.machine()},
        "load": args.load,
        "rows": rows,
        "growth_exponent": exponents,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2))
    full = [r for r in rows if r["jobs"] == len(traces.get("philly", [])) and r["policy"] == "fifo"]
    head = f"philly 82k FIFO {full[0]['wall_s']} s" if full else "synthetic only"
    print(f"simulator: {head}; growth exponents {exponents}; {len(rows)} runs -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
