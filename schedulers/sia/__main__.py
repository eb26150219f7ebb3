"""Run Sia and its baseline on Sia workload files and print mean/p99 JCT, makespan and wall time.

    python -m schedmate.schedulers.sia philly/workload-1.csv saturn/workload-1.csv \
        [--policies sia,sia-fifo] [--limit N] [--cluster 6x4:T4,2x8:A100,3x8:2080Ti] [--json OUT]

Workload paths are relative to `<shared data>/sia/workloads` unless they exist as given.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from schedmate.config import shared_data_dir

from ..cluster import ClusterSpec
from ..metrics import summarize
from .baseline import SiaFIFO
from .jobs import load_sia_jobs
from .policy import Sia, simulate_sia
from .profiles import SIA_CLUSTER


def make(name: str, profile_seconds: float = 0.0):
    name = name.strip().lower()
    if name == "sia":
        return Sia(profile_seconds=profile_seconds)
    if name in ("sia-fifo", "sia-fifo+bf"):
        return SiaFIFO(backfill=name.endswith("+bf"))
    raise SystemExit(f"unknown policy {name!r}: sia, sia-fifo, sia-fifo+bf")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m schedmate.schedulers.sia", description=__doc__.splitlines()[0])
    ap.add_argument("workloads", nargs="+")
    ap.add_argument("--policies", default="sia,sia-fifo")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--cluster", default=SIA_CLUSTER)
    ap.add_argument("--profile-seconds", type=float, default=0.0)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    cluster = ClusterSpec.parse(args.cluster)
    rows = []
    for wl in args.workloads:
        path = Path(wl)
        if not path.is_file():
            shared = shared_data_dir()
            if shared is None:
                raise SystemExit("shared data is absent and the workload path does not exist")
            path = shared / "sia" / "workloads" / wl
        jobs = load_sia_jobs(path, limit=args.limit)
        for name in args.policies.split(","):
            policy = make(name, args.profile_seconds)
            t0 = time.perf_counter()
            result = simulate_sia(jobs, cluster, policy)
            wall = time.perf_counter() - t0
            s = summarize(result)
            row = {
                "workload": wl,
                "policy": result.policy,
                "jobs": s.jobs,
                "completed": s.completed,
                "mean_jct_h": s.mean_jct / 3600,
                "p99_jct_h": s.p99_jct / 3600,
                "makespan_h": s.makespan / 3600,
                "restarts": s.restarts,
                "gpu_utilisation": s.gpu_utilisation,
                "wall_s": wall,
            }
            stats = policy.run_stats()
            if "rounds" in stats:
                row["rounds"] = stats["rounds"]
                row["ilp_s"] = stats["ilp_seconds"]
                row["max_round_s"] = stats["max_round_seconds"]
            rows.append(row)
            print(
                f"{wl:24s} {result.policy:12s} completed {s.completed}/{s.jobs}  mean JCT {row['mean_jct_h']:.3f} h  "
                f"p99 {row['p99_jct_h']:.2f} h  makespan {row['makespan_h']:.2f} h  restarts {s.restarts}  "
                f"wall {wall:.1f} s",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
