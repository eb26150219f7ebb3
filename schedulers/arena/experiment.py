"""Arena's §6 reproduction check: baselines and ablations side by side on the synthetic workload.

    python -m schedmate.schedulers.arena.experiment OUT [--quick] [--seeds 3] [--scale 1]

`run_arena_experiment(out_dir, seeds, quick)` runs, per seed, FCFS / Gavel / EF-LS / Sia / Arena on
R1 (2 types) and R2 (4 types) at offered load 1.3, the ablations (Arena-DP, -noHetero,
-noElastic, D = 1) on R2 (and R1 unless quick), and FCFS vs Arena at load 0.5; writes
`arena.json` (`config.workload.arrivals`: "philly" when the shared Philly trace is present, the
spec's first choice, else the Poisson fallback; `aggregate`: per (cluster, load, arm) rows with `mean_jct_mean` etc.; `criteria`:
each §6 expectation with `measured`, `expected`, `pass`), `arena.csv` (every run) and `arena.png`.
`decision_time(gpus)` times Arena's Δ rounds at a given cluster size (for `bench/`).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ..decisions import Decision
from ..engine import SimConfig, SimResult
from ..job import Phase
from .config import ABLATIONS, BASELINES, SENSITIVITY, ArenaConfig
from .hardware import R1, R2, build_cluster
from .philly import philly_path
from .policy import Arena
from .sim import CostedSimulator, run_costed
from .workload import PHILLY, POISSON, H, WorkloadSpec, generate

MAIN_ARMS = ("fcfs", "gavel", "ef-ls", "sia", "arena")
BASELINE_ARMS = MAIN_ARMS[:-1]
ABLATION_ARMS = ("arena-dp", "arena-nohetero", "arena-noelastic", "arena-d1")
LOW_LOAD_ARMS = ("fcfs", "arena")
SENSITIVITY_ARMS = tuple(SENSITIVITY)  # full runs only, on R2
CLUSTERS = {"R1": R1, "R2": R2}
CAP_S = 48 * H
BIN_S = 300.0

__all__ = ["decision_time", "evaluate_criteria", "run_arena_experiment", "run_one", "section6_workload", "sparse_load"]


def section6_workload() -> WorkloadSpec:
    """§6's workload: "Use a Philly slice if available; otherwise use Poisson arrivals" (README,
    reading 6). Which one ran is recorded in arena.json (`config.workload.arrivals`)."""
    return WorkloadSpec(arrivals=PHILLY if philly_path() is not None else POISSON)


def arm_config(arm: str, seed: int) -> ArenaConfig:
    return replace({**BASELINES, **ABLATIONS, **SENSITIVITY}[arm], seed=seed)


def _throughput(result: SimResult, policy: Arena, window_s: float) -> dict[str, float]:
    """Cluster throughput (Σ samples/s over running jobs): mean over the arrival window (the
    criterion: under load every arm is busy there), over the whole run (total / makespan, which
    only restates makespan), peak over 5-min bins; `_norm` divides each job's by its throughput on
    its request (§7.8)."""
    end = max(result.end_time, BIN_S)
    edges = np.arange(0.0, end + BIN_S, BIN_S)
    samples = np.zeros(edges.size)
    norm = np.zeros(edges.size)
    at_window = 0.0
    at_window_norm = 0.0
    for job in result.jobs:
        if not job.speed_log:
            continue
        scale = policy.info[job.job_id].norm
        prog = np.array([job.progress_at(t) for t in edges])
        samples += prog * scale
        norm += prog
        w = job.progress_at(window_s)
        at_window += w * scale
        at_window_norm += w
    rate = np.diff(samples) / BIN_S
    return {
        "avg_throughput": at_window / window_s,
        "avg_throughput_run": float(samples[-1]) / end,  # whole run: total samples / makespan
        "peak_throughput": float(rate.max()) if rate.size else 0.0,
        "avg_throughput_norm": at_window_norm / window_s,
    }


def run_one(cluster_name: str, arm: str, seed: int, *, load: float = 1.3, workload: WorkloadSpec | None = None, scale: int = 1,
            config: ArenaConfig | None = None) -> dict[str, Any]:
    """One (cluster, arm, seed) run; a flat row of metrics."""
    cluster = build_cluster(tuple((count * scale, g) for count, g in CLUSTERS[cluster_name]))
    w = sparse_load(workload or section6_workload(), load)
    jobs = generate(cluster, seed, w)
    policy = Arena(config or arm_config(arm, seed))
    t0 = time.perf_counter()
    result = run_costed(jobs, cluster, policy, policy.downtime, SimConfig(seed=seed, max_time=CAP_S))
    wall = time.perf_counter() - t0
    end = {j.job_id: (j.end_time if j.end_time is not None else result.end_time) for j in result.jobs}
    jct = np.array([end[j.job_id] - j.spec.submit_time for j in result.jobs])
    first = {j.job_id: policy.info[j.job_id].first_launch for j in result.jobs}
    queue = np.array([(fl if (fl := first[j.job_id]) is not None else end[j.job_id]) - j.spec.submit_time
                      for j in result.jobs])
    done = [j for j in result.jobs if j.phase is Phase.COMPLETED]
    tables = [policy.info[j.job_id] for j in result.jobs]
    row: dict[str, Any] = {
        "cluster": cluster_name, "load": load, "arm": arm, "seed": seed, "jobs": len(jobs),
        "mean_jct": float(jct.mean()), "p99_jct": float(np.percentile(jct, 99)),
        "mean_wait": float(queue.mean()), "mean_queueing": float(queue.mean()),
        "completed": len(done),
        "completed_6h": sum(1 for j in done if j.end_time is not None and j.end_time <= 6 * H),
        "completed_12h": sum(1 for j in done if j.end_time is not None and j.end_time <= 12 * H),
        "makespan": float(result.end_time),
        "reschedules_per_job": float(np.mean([i.reschedules for i in tables])),
        "suspensions_per_job": float(np.mean([i.suspensions for i in tables])),
        "dp_oom_request_share": float(np.mean([i.table.dp.get(i.request, 0.0) <= 0 for i in tables])),
        "dp_oom_any_share": float(np.mean([bool(i.table.dp_oom_where_ap_fits()) for i in tables])),
        "round_ms_mean": 1e3 * policy.stats.round_seconds / max(1, policy.stats.rounds),
        "wall_s": wall,
    }
    row.update(_throughput(result, policy, w.window_s))
    return row


def sparse_load(base: WorkloadSpec, load: float) -> WorkloadSpec:
    """`base` at offered load `load` reached by fewer arrivals (n_jobs × load / base.load) with the
    job-length distribution of `base`, not by shorter jobs (§6 "low load"; see README: at load 0.5
    with 240 jobs the median job hits the 5-min clip, below the baselines' 10-min AP search, and the
    cluster is not lightly loaded for them)."""
    if load == base.load:
        return base
    return replace(base, load=load, n_jobs=max(1, round(base.n_jobs * load / base.load)))


MapPoints = Callable[[Callable[[Any], Any], Sequence[Any]], Any]


def _run_point(point: tuple[str, str, int, float, WorkloadSpec | None, int]) -> dict[str, Any]:
    """One (cluster, arm, seed, load) run; top-level so a Ray task can run it."""
    cl, arm, seed, load, workload, scale = point
    return run_one(cl, arm, seed, load=load, workload=workload, scale=scale)


def _runs(seeds: Sequence[int], quick: bool, workload: WorkloadSpec | None,
          map_points: MapPoints | None = None, scale: int = 1) -> list[dict[str, Any]]:
    plan: list[tuple[str, str, float]] = []
    for cl in CLUSTERS:
        plan += [(cl, a, 1.3) for a in MAIN_ARMS]
        if cl == "R2" or not quick:
            plan += [(cl, a, 1.3) for a in ABLATION_ARMS]
    plan += [("R1", a, 0.5) for a in LOW_LOAD_ARMS]
    if not quick:
        plan += [("R2", a, 1.3) for a in SENSITIVITY_ARMS]
    points = [(cl, arm, s, load, workload, scale) for s in seeds for cl, arm, load in plan]
    return list(map_points(_run_point, points)) if map_points is not None else [_run_point(p) for p in points]


def aggregate(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per (cluster, load, arm): mean and sd over seeds of every numeric metric."""
    groups: dict[tuple[str, float, str], list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[(r["cluster"], r["load"], r["arm"])].append(r)
    out = []
    for (cl, load, arm), rs in groups.items():
        entry: dict[str, Any] = {"trace": f"{cl}@{load:g}", "cluster": cl, "load": load, "arm": arm, "seeds": len(rs)}
        for k, v in rs[0].items():
            if isinstance(v, int | float) and not isinstance(v, bool) and k not in ("seed", "load"):
                vals = np.array([r[k] for r in rs], dtype=float)
                entry[f"{k}_mean"] = float(vals.mean())
                entry[f"{k}_std"] = float(vals.std(ddof=1)) if vals.size > 1 else 0.0
        out.append(entry)
    return out


def evaluate_criteria(agg: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The §6 expectations. Direction decides `pass`; magnitudes are reported beside the paper's."""
    idx = {(a["cluster"], a["load"], a["arm"]): a for a in agg}

    def m(cl: str, arm: str, key: str, load: float = 1.3) -> float:
        a = idx.get((cl, load, arm))
        return float(a[f"{key}_mean"]) if a else math.nan

    def red(cl: str, base: str, key: str = "mean_jct", load: float = 1.3) -> float:
        return 1 - m(cl, "arena", key, load) / m(cl, base, key, load)

    out: dict[str, dict[str, Any]] = {}
    for cl in CLUSTERS:
        best_jct = all(m(cl, "arena", "mean_jct") < m(cl, b, "mean_jct") for b in BASELINE_ARMS)
        best_q = all(m(cl, "arena", "mean_queueing") < m(cl, b, "mean_queueing") for b in BASELINE_ARMS)
        best_thr = all(m(cl, "arena", "avg_throughput") > m(cl, b, "avg_throughput") for b in BASELINE_ARMS)
        worst = max(BASELINE_ARMS, key=lambda b: m(cl, b, "mean_jct"))
        strongest = min(BASELINE_ARMS, key=lambda b: m(cl, b, "mean_jct"))
        thr_gain = m(cl, "arena", "avg_throughput") / max(m(cl, b, "avg_throughput") for b in BASELINE_ARMS)
        out[f"1_{cl}_arena_best_jct_queue_throughput"] = {
            "measured": {"lowest_jct": best_jct, "lowest_queueing": best_q, "highest_throughput": best_thr,
                         "jct_reduction_vs_worst": red(cl, worst), "worst": worst,
                         "queueing_reduction_vs_worst": red(cl, worst, "mean_queueing"),
                         "throughput_x_vs_best_baseline": thr_gain,
                         "throughput_x_vs_worst": m(cl, "arena", "avg_throughput") / min(m(cl, b, "avg_throughput") for b in BASELINE_ARMS)},
            "expected": "Arena lowest JCT and queuing, highest throughput (R1: JCT -35..-50%, queuing -50..-70%, thr 1.2-1.5x vs worst)",
            "pass": bool(best_jct and best_q and best_thr),
        }
        out[f"1_{cl}_jct_gain_vs_strongest"] = {
            "measured": {"strongest": strongest, "jct_reduction": red(cl, strongest)},
            "expected": ">= 10% JCT gain against the strongest baseline", "pass": bool(red(cl, strongest) >= 0.10),
        }
    resched = m("R1", "arena", "reschedules_per_job")
    more = all(m(cl, "arena", f"completed_{h}") >= m(cl, b, f"completed_{h}")
               for cl in CLUSTERS for b in BASELINE_ARMS for h in ("6h", "12h"))
    out["2_completes_more_and_no_thrashing"] = {
        "measured": {"reschedules_per_job_R1": resched, "reschedules_per_job_R2": m("R2", "arena", "reschedules_per_job"),
                     "completes_at_least_as_many_by_6h_and_12h": more},
        "expected": "more jobs completed by any horizon; ~2-3 reschedules per job, > 5 = thrashing",
        "pass": bool(more and resched <= 5 and m("R2", "arena", "reschedules_per_job") <= 5),
    }
    out["3_efls_vs_gavel_by_type_count"] = {
        "measured": {"R1_efls_jct_over_gavel": m("R1", "ef-ls", "mean_jct") / m("R1", "gavel", "mean_jct"),
                     "R2_gavel_jct_over_efls": m("R2", "gavel", "mean_jct") / m("R2", "ef-ls", "mean_jct")},
        "expected": "EF-LS beats Gavel on R1 (2 types); Gavel beats EF-LS on R2 (4 types)",
        "pass": bool(m("R1", "ef-ls", "mean_jct") < m("R1", "gavel", "mean_jct")
                     and m("R2", "gavel", "mean_jct") < m("R2", "ef-ls", "mean_jct")),
    }
    dp_loss = 1 - m("R2", "arena-dp", "avg_throughput") / m("R2", "arena", "avg_throughput")
    hetero = m("R2", "arena-nohetero", "mean_jct") / m("R2", "arena", "mean_jct") - 1
    elastic = m("R2", "arena-noelastic", "mean_jct") / m("R2", "arena", "mean_jct") - 1
    out["4_ablations_dp_and_hetero"] = {
        "measured": {"R2_arena_dp_throughput_loss": dp_loss, "R2_arena_dp_jct_increase": m("R2", "arena-dp", "mean_jct") / m("R2", "arena", "mean_jct") - 1,
                     "R2_nohetero_jct_increase": hetero, "R2_noelastic_jct_increase": elastic},
        "expected": "Arena-DP loses ~10-15% throughput; on R2 noHetero hurt more than noElastic",
        "pass": bool(dp_loss > 0 and hetero > elastic),
    }
    d1 = m("R2", "arena-d1", "mean_jct") / m("R2", "arena", "mean_jct") - 1
    d1_thr = m("R2", "arena-d1", "avg_throughput") / m("R2", "arena", "avg_throughput") - 1
    out["5_depth_1_vs_3"] = {
        "measured": {"R2_d1_jct_increase": d1, "R2_d1_throughput_change": d1_thr},
        "expected": "D=1 higher JCT than D=3 (~10-15%), throughput within 2%",
        "pass": bool(d1 > 0 and abs(d1_thr) <= 0.02),
    }
    low = red("R1", "fcfs", load=0.5)
    high = red("R1", "fcfs")
    out["6_low_load_gain_shrinks"] = {
        "measured": {"R1_jct_reduction_vs_fcfs_at_0.5": low, "R1_jct_reduction_vs_fcfs_at_1.3": high},
        "expected": "at load 0.5 Arena's gain over FCFS falls to a few percent",
        "pass": bool(low < high and low < 0.15),
    }
    share = m("R1", "arena", "dp_oom_request_share")
    out["7_dp_oom_mechanism"] = {
        "measured": {"R1_jobs_request_dp_oom_share": share, "R2_jobs_request_dp_oom_share": m("R2", "arena", "dp_oom_request_share"),
                     "R1_jobs_any_config_dp_oom_share": m("R1", "arena", "dp_oom_any_share")},
        "expected": "a substantial number of jobs whose (type, count) DP judges out of memory while AP runs it",
        "pass": bool(share >= 0.2),
    }
    if idx.get(("R2", 1.3, "arena-ckpt0")) and idx.get(("R2", 1.3, "arena-ckpt300")):
        best = min(m("R2", b, "mean_jct") for b in BASELINE_ARMS)
        out["8_ckpt_sweep_keeps_the_conclusion"] = {
            "measured": {f"R2_{a}_jct_over_best_baseline": m("R2", a, "mean_jct") / best
                         for a in ("arena-ckpt0", "arena", "arena-ckpt300")}
            | {f"R2_{a}_jct_over_arena": m("R2", a, "mean_jct") / m("R2", "arena", "mean_jct")
               for a in ("arena-norevoke", "arena-profhold", "arena-d1-u10")},
            "expected": "Arena keeps the lowest JCT with T_ckpt from 0 to 300 s (§7.10)",
            "pass": bool(max(m("R2", a, "mean_jct") for a in ("arena-ckpt0", "arena-ckpt300")) < best),
        }
    return out


def run_arena_experiment(out_dir: str | Path, seeds: Sequence[int] = (0, 1, 2), quick: bool = False,
                         *, workload: WorkloadSpec | None = None, map_points: MapPoints | None = None,
                         scale: int = 1) -> dict[str, Any]:
    """Run every arm over `seeds`; write arena.json / arena.csv / arena.png; return the document.
    `map_points(fn, points)`: where the independent runs happen (default here, in order; e.g.
    `deploy.ray.sweep.RayMap()` over a Ray cluster)."""
    t0 = time.perf_counter()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    workload = workload or section6_workload()
    if scale > 1:  # every cluster × scale, the workload's jobs too (same load)
        workload = replace(workload, n_jobs=workload.n_jobs * scale)
    rows = _runs(seeds, quick, workload, map_points, scale)
    agg = aggregate(rows)
    criteria = evaluate_criteria(agg)
    doc = {
        "experiment": "arena",
        "config": {"seeds": list(seeds), "quick": quick, "scale": scale, "workload": workload.__dict__},
        "aggregate": agg,
        "criteria": criteria,
        "passed": sum(bool(c["pass"]) for c in criteria.values()),
        "total": len(criteria),
        "rows": rows,
        "wall_seconds": None,
    }
    with open(out / "arena.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    _plot(out / "arena.png", agg)
    doc["wall_seconds"] = time.perf_counter() - t0
    (out / "arena.json").write_text(json.dumps(doc, indent=2, default=str))
    return doc


def _plot(path: Path, agg: Sequence[Mapping[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = list(dict.fromkeys(a["arm"] for a in agg if a["load"] == 1.3))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    for ax, key, label in zip(axes, ("mean_jct", "mean_queueing", "avg_throughput"),
                              ("mean JCT (h)", "mean queuing (h)", "avg throughput, arrival window (samples/s)"),
                              strict=True):
        scale = 1 / H if key != "avg_throughput" else 1.0
        for i, cl in enumerate(CLUSTERS):
            rows = [a for a in agg if a["cluster"] == cl and a["load"] == 1.3]
            xs = np.array([arms.index(r["arm"]) for r in rows]) + i * 0.4
            ax.bar(xs, [r[f"{key}_mean"] * scale for r in rows], 0.4, yerr=[r[f"{key}_std"] * scale for r in rows],
                   label=cl)
        ax.set_xticks(np.arange(len(arms)) + 0.2, arms, rotation=45, ha="right")
        ax.set_ylabel(label)
    axes[0].legend()
    fig.suptitle("Arena reproduction (§6): load 1.3, mean ± sd over seeds")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def decision_time(gpus: int, *, seed: int = 0, rounds: int = 5, horizon_s: float = 2 * H,
                  config: ArenaConfig | None = None, incremental: bool = True) -> dict[str, Any]:
    """Median seconds of Arena's Δ round on a cluster of `gpus` GPUs (the R2 mix scaled: one
    quarter per type) with the §6 workload scaled to it (240 jobs per 64 GPUs over 6 h, load
    1.3), timed over the last `rounds` rounds before `horizon_s` (queue built up).
    `decisions_sha256` hashes every decision of the run with its time: `incremental=False` (the
    reference search, `Arena(incremental=False)`) must give the same digest."""
    k = max(1, gpus // 64)
    cluster = build_cluster(tuple((count * k, g) for count, g in R2))
    w = WorkloadSpec(n_jobs=240 * k)
    jobs = generate(cluster, seed, w)
    policy = Arena(config or ArenaConfig(seed=seed), incremental=incremental)
    sim = _RecordingSimulator(jobs, cluster, policy, policy.downtime, SimConfig(seed=seed, max_time=horizon_s))
    sim.run()
    times = policy.round_times[-rounds:]
    cpu = policy.round_cpu_times[-rounds:]
    return {"gpus": cluster.total_gpus, "jobs": len(jobs), "rounds_timed": len(times),
            "median_round_s": float(np.median(times)) if times else math.nan,
            "max_round_s": float(max(times)) if times else math.nan,
            "median_round_cpu_s": float(np.median(cpu)) if cpu else math.nan,
            "max_round_cpu_s": float(max(cpu)) if cpu else math.nan,
            "rounds_total": len(policy.round_times),
            "all_rounds_cpu_p90_s": float(np.percentile(policy.round_cpu_times, 90)) if policy.round_cpu_times else math.nan,
            "all_rounds_cpu_max_s": max(policy.round_cpu_times, default=math.nan),
            "decisions": sim.decisions,
            "decisions_sha256": sim.digest.hexdigest()}


class _RecordingSimulator(CostedSimulator):
    """`CostedSimulator` that hashes every decision it applies, with the time it was applied: two
    runs that decide alike have the same digest (the bench's check that a faster round decides
    exactly as the slower one did)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.digest = hashlib.sha256()
        self.decisions = 0

    def _apply(self, decisions: Sequence[Decision] | None) -> int:
        for d in decisions or ():
            self.digest.update(repr((self.now, d)).encode())
            self.decisions += 1
        return super()._apply(decisions)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--scale", type=int, default=1, help="every cluster and the job count × this (5: R2 with 80 GPUs per type)")
    args = ap.parse_args(argv)
    doc = run_arena_experiment(args.out_dir, tuple(range(args.seeds)), args.quick, scale=args.scale)
    for name, c in doc["criteria"].items():
        print(f"{'PASS' if c['pass'] else 'FAIL'}  {name}: {json.dumps(c['measured'], default=str)}")
    print(f"{doc['passed']}/{doc['total']} criteria pass; {doc['wall_seconds']:.1f} s")


if __name__ == "__main__":
    main()
