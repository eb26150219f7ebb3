"""Decision time per scheduling round of the four topology/elasticity-aware reference policies
(Ares, Arnold, Arena, Suika) at 64, 1,024 and 4,096 simulated GPUs, with Tiresias' scheduling pass on
the same machine as the baseline (its LAS pass over a trace scaled the same way). Target (issue 26):
Arena and Suika under 1 s per round at 1,024 GPUs.

Each policy is timed by its own module's measurement (what one round means differs: an Ares
allocation pass, an Arnold placement round, an Arena 5-minute Δ round, one Suika SCHEDULE call),
on a workload scaled with the cluster as its spec describes. Wall and CPU seconds are both kept:
on a shared 2-core machine wall time mostly measures the neighbours.

    python bench/bench_policy_rounds.py [--gpus 64,1024,4096] [--policies ares,arnold,arena,suika,tiresias]

Arena's rows carry `decisions_sha256` (every decision of the timed run, with its time);
`--policies arena,arena-scan` times the indexed search beside the reference scan in the same run,
and the two digests must match.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np


def _ares(gpus: int) -> dict[str, Any]:
    from schedmate.schedulers.ares.bench import bench_decisions

    r = bench_decisions(gpus)
    return {"round_s_median": None, "round_s_mean": r["mean_decision_ms"] / 1e3, "round_s_max": r["max_decision_ms"] / 1e3,
            "what": "allocation pass", "jobs": r["jobs"], "max_active_jobs": r["max_active_jobs"]}


def _arnold(gpus: int) -> dict[str, Any]:
    from schedmate.schedulers.arnold.timing import decision_time

    d = decision_time(gpus)
    return {"round_s_median": d.median_s, "round_s_max": d.max_s, "what": "placement round",
            "planning_round_s": d.planning_round_s, "rounds": d.rounds, "max_waiting_jobs": d.waiting_jobs_max}


def _arena(gpus: int, incremental: bool = True, hours: float = 2.0) -> dict[str, Any]:
    from schedmate.schedulers.arena.experiment import decision_time

    d = decision_time(gpus, incremental=incremental, horizon_s=hours * 3600.0)
    what = "5-minute round" if incremental else "5-minute round, reference search (every running job scanned per node)"
    return {"round_s_median": d["median_round_s"], "round_s_max": d["max_round_s"], "what": what,
            "round_cpu_s_median": d["median_round_cpu_s"], "round_cpu_s_max": d["max_round_cpu_s"],
            "jobs": d["jobs"], "rounds": d["rounds_timed"], "hours": hours, "rounds_total": d["rounds_total"],
            "all_rounds_cpu_s_p90": d["all_rounds_cpu_p90_s"], "all_rounds_cpu_s_max": d["all_rounds_cpu_max_s"],
            "decisions": d["decisions"], "decisions_sha256": d["decisions_sha256"]}


def _suika(gpus: int) -> dict[str, Any]:
    from schedmate.schedulers.suika.timing import decision_time

    d = decision_time(gpus)
    return {"round_s_median": d.median_s, "round_s_max": d.max_s, "what": "SCHEDULE call (cold caches)",
            "round_cpu_s_median": d.median_cpu_s,
            "running_jobs": d.running_jobs, "idle_gpus": d.idle_gpus, "rounds": d.rounds}


def _tiresias(gpus: int) -> dict[str, Any]:
    """Baseline: Tiresias on a loaded cluster of the same size (2.5 jobs per GPU)."""
    from schedmate.schedulers.cluster import ClusterSpec
    from schedmate.schedulers.engine import SimConfig, Simulator
    from schedmate.schedulers.policies.tiresias import Tiresias
    from schedmate.schedulers.traces import generate_trace

    jobs = generate_trace(int(2.5 * gpus), 0, cluster_gpus=gpus, max_gpus=min(64, gpus)).jobs
    policy = Tiresias()
    times: list[float] = []
    inner = policy.schedule

    def timed(view):
        t0 = time.perf_counter()
        out = inner(view)
        times.append(time.perf_counter() - t0)
        return out

    policy.schedule = timed
    Simulator(jobs, ClusterSpec.homogeneous(gpus // 8, 8), policy, SimConfig(seed=0, max_time=6 * 3600.0)).run()
    arr = np.array(times or [float("nan")])
    return {"round_s_median": float(np.median(arr)), "round_s_max": float(arr.max()), "what": "LAS scheduling pass",
            "rounds": len(times), "jobs": len(jobs)}


def _suika_replay(gpus: int) -> dict[str, Any]:
    """Suika's SCHEDULE calls in a 2-hour replay (warm state between calls; opt-in: ~10 min at 1,024)."""
    from schedmate.schedulers.suika.timing import replay_decisions

    r = replay_decisions(gpus)
    return {"round_s_median": r.cpu_p50_s, "round_cpu_s_median": r.cpu_p50_s, "round_cpu_s_p90": r.cpu_p90_s,
            "round_cpu_s_p99": r.cpu_p99_s, "round_cpu_s_max": r.cpu_max_s, "what": "SCHEDULE calls in a replay (CPU)",
            "jobs": r.jobs, "rounds": r.calls}


def _arena_scan(gpus: int) -> dict[str, Any]:
    """Arena with the reference search: its decisions_sha256 must equal arena's (same decisions)."""
    return _arena(gpus, incremental=False)


POLICIES: dict[str, Callable[[int], dict[str, Any]]] = {
    "tiresias": _tiresias, "ares": _ares, "arnold": _arnold, "arena": _arena, "arena-scan": _arena_scan,
    "suika": _suika, "suika-replay": _suika_replay}
DEFAULT_POLICIES = ("tiresias", "ares", "arnold", "arena", "suika")  # suika-replay: opt-in (slow)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", default="64,1024,4096")
    ap.add_argument("--policies", default=",".join(DEFAULT_POLICIES), help=f"any of {', '.join(POLICIES)}")
    ap.add_argument("--out", type=Path, default=Path("bench/results/policy_rounds.json"))
    ap.add_argument("--arena-hours", type=float, default=2.0,
                    help="Arena: simulated hours (rounds timed: the last 5; all_rounds_*: every round; 6 = the arrival window)")
    args = ap.parse_args()
    runners = {**POLICIES, "arena": partial(_arena, hours=args.arena_hours),
               "arena-scan": partial(_arena, incremental=False, hours=args.arena_hours)}
    sizes = [int(g) for g in args.gpus.split(",") if g.strip()]
    rows = []
    for name in [p.strip() for p in args.policies.split(",") if p.strip()]:
        for g in sizes:
            w0, c0 = time.perf_counter(), time.process_time()
            row = {"policy": name, "gpus": g, **runners[name](g)}
            row["bench_wall_s"], row["bench_cpu_s"] = time.perf_counter() - w0, time.process_time() - c0
            rows.append(row)
            print(json.dumps(row, default=float))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": platform.node(), "rows": rows}, indent=2, default=float))

    def fmt(r: dict[str, Any]) -> str:
        v = r.get("round_s_median") if r.get("round_s_median") is not None else r.get("round_s_mean")
        cpu = r.get("round_cpu_s_median")
        return f"{r['policy']}@{r['gpus']} {1e3 * v:.3g} ms" + (f" ({1e3 * cpu:.3g} ms CPU)" if cpu is not None else "")

    print("policy rounds (median or mean per round): " + ", ".join(fmt(r) for r in rows) + f" -> {args.out}")


if __name__ == "__main__":
    main()
