"""Lucid against FIFO, QSSF and Tiresias: mean JCT, queueing, Lucid's profiler/packing counters.

Two workloads, both on a 64-GPU cluster (8 nodes x 8):
- `synthetic`: the calibrated generator (`--jobs`, load 1.2), each job given a workload from
  Lucid's `single_data.csv` (so it can be profiled and packed), co-location speeds from Lucid's
  `colocate_info.csv` with Lucid's lookup rules (`LucidInterference`);
- `philly`: the first `--philly-limit` jobs of the Philly trace (no workload attributes: the
  profiler measures nothing and Lucid never packs; it is then QSSF-with-an-EBM plus profiling).
  Lucid runs with its Venus profiler settings (T_prof 200 s, 2 nodes, factor 4) and, on Philly,
  also with its Philly settings (T_prof 80 s, factor 2). On the synthetic trace Lucid also runs
  with packing off (the ablation that isolates the binder).

`mean_queueing_s` is the engine's first start − submit: for Lucid that is the wait for the
profiler (or for the main pool, for jobs that skip profiling), not the later main-queue wait.

    python bench/bench_lucid.py [--jobs 2000] [--philly-limit 5000] [--fast-ebm] [--out bench/results/lucid.json]

Needs ../shared/data (exits with a message without it).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from schedmate.config import shared_data_dir
from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.engine import SimConfig, Simulator
from schedmate.schedulers.lucid import (
    ENGINE_CAN_DISCARD,
    EBMConfig,
    Lucid,
    LucidInterference,
    assign_workloads,
    load_default_table,
)
from schedmate.schedulers.metrics import summarize
from schedmate.schedulers.policies import make_policy
from schedmate.schedulers.traces import generate_trace, load_trace


def run(name: str, jobs, cluster, policy, interference) -> dict:
    started = time.perf_counter()
    result = Simulator(jobs, cluster, policy, SimConfig(record_timeline=False), interference=interference).run()
    s = summarize(result)
    row = {
        "policy": name,
        "mean_jct_s": round(s.mean_jct, 1),
        "median_jct_s": round(s.median_jct, 1),
        "p99_jct_s": round(s.p99_jct, 1),
        "mean_queueing_s": round(s.mean_queueing, 1),
        "gpu_util": round(s.gpu_utilisation, 3),
        "wasted_gpu_h": round(s.wasted_gpu_time / 3600, 1),
        "wall_s": round(time.perf_counter() - started, 1),
    }
    if isinstance(policy, Lucid):
        row["lucid"] = policy.info()
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--philly-limit", type=int, default=5000)
    ap.add_argument("--fast-ebm", action="store_true", help="EBMConfig.fast() instead of the default")
    ap.add_argument("--skip", default="", help="comma-separated workloads to skip (synthetic,philly)")
    ap.add_argument("--out", type=Path, default=Path("bench/results/lucid.json"))
    args = ap.parse_args()
    data = shared_data_dir()
    table = load_default_table()
    if data is None or table is None:
        print("needs ../shared/data (Lucid's tables and the Philly trace); set SCHEDMATE_SHARED_DATA", file=sys.stderr)
        return 2
    ebm = EBMConfig.fast() if args.fast_ebm else EBMConfig()
    cluster = ClusterSpec.parse("64")
    interference = LucidInterference.from_shared_data()
    workloads = {}
    skip = set(filter(None, args.skip.split(",")))
    if "synthetic" not in skip:
        syn = generate_trace(args.jobs, seed=0, cluster_gpus=cluster.total_gpus, load=1.2).jobs
        workloads["synthetic"] = (assign_workloads(syn, table, seed=0), [("lucid", {}), ("lucid-no-packing", {"packing": False})])
    if "philly" not in skip:
        philly = load_trace(data / "sia/traces/philly.csv", None, limit=args.philly_limit).jobs
        workloads["philly"] = (philly, [("lucid", {}), ("lucid-philly-cfg", {"t_prof": 80.0, "prof_factor": 2.0})])
    out = {"engine_discards_profiling_progress": ENGINE_CAN_DISCARD, "ebm": ebm.__dict__, "cluster_gpus": 64, "rows": {}}
    for wname, (jobs, variants) in workloads.items():
        rows = []
        for name in ("fifo", "qssf", "tiresias"):
            rows.append(run(name, jobs, cluster, make_policy(name), interference))
            print(wname, rows[-1], file=sys.stderr)
        for name, kw in variants:
            rows.append(run(name, jobs, cluster, Lucid(table=table, ebm=ebm, **kw), interference))
            print(wname, rows[-1], file=sys.stderr)
        out["rows"][wname] = {"jobs": len(jobs), "results": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2))
    for wname, block in out["rows"].items():
        print(f"{wname} ({block['jobs']} jobs, 64 GPUs)")
        for r in block["results"]:
            print(f"  {r['policy']:17s} mean JCT {r['mean_jct_s']:>10.0f} s  queue {r['mean_queueing_s']:>10.0f} s  "
                  f"p99 {r['p99_jct_s']:>10.0f} s  util {r['gpu_util']:.3f}  wall {r['wall_s']} s")
    print(f"-> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
