"""Ares reproduction check (spec §6): Ares against the spec's baselines on the synthetic trace.

    schedmate experiment ares --out OUT_DIR [--quick] [--seeds 3] [--jobs 160] [--gpus 64]

For each offered load ρ ∈ {0.5, 1, 2} and seed, one §6.1 trace (160 jobs, 64 GPUs in 16 × 4,
60 s rounds, per-model restart costs) is replayed under every arm on the engine, with the same true
scaling curves: Ares (paper mode), Ares+fill (artifact mode), FIFO, SRTF and Tiresias-LAS (rigid),
EFS-int (Pollux stand-in), Optimus-like, the α ablation (Ares at α = 0.9 and 1.0) and, for
information, every artifact option at once (`ares-artifact`: fill, 1-GPU efficiency baseline and
size basis, scaling-aware GPS priority). MaxMin
(Gavel max-min / Themis stand-in) is fluid time-slicing, so it is computed analytically
(`maxmin_finish_times`) rather than on the engine. Fairness is measured against R-scal with
alignment, computed once per trace (§6.4), with R-lin as a secondary column.

Writes `ares.json` (config, rows, an `aggregate` list per (ρ, arm) with `<metric>_mean`, `_std`
and `_median` over seeds, and `criteria`: each §6.3 criterion with its measured value and `pass`),
`ares.csv` (rows) and one JCT CDF per ρ (first seed). The criteria use medians over seeds, as the
spec does; the spec's prototype used 8 seeds, this uses 3 by default. The whole check runs in about
30 s on one core, so `--quick` only skips the plots; `--jobs/--gpus` change the trace size (at 80
jobs on 32 GPUs Ares's worst FTF at ρ = 1 exceeded the rigid baselines': a max over few jobs).
"""

from __future__ import annotations

import csv
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..cluster import ClusterSpec
from ..engine import SimResult, simulate
from ..policy import Policy
from .baselines import maxmin_finish_times
from .config import AresConfig, FtfReference
from .examples import check_examples
from .fairness import fairness_report, reference_finish_times
from .policy import Ares, EfsInt, FifoRigid, LasRigid, OptimusLike, SrtfRigid
from .workload import AresWorkload, generate_workload

__all__ = ["ARMS", "AresExperimentConfig", "evaluate_criteria", "run_ares_experiment"]

H = 3600.0
ARES, FILL, EFS, OPTIMUS = "ares", "ares+fill", "efs-int", "optimus"
FIFO, SRTF, LAS, MAXMIN = "fifo", "srtf", "tiresias-las", "maxmin"
A90, A100, ARTIFACT = "ares@a0.9", "ares@a1.0", "ares-artifact"
RIGID = (FIFO, SRTF, LAS, MAXMIN)

ARMS: dict[str, Callable[[], Policy]] = {
    ARES: Ares,
    FILL: lambda: Ares(fill_leftover=True),
    FIFO: FifoRigid,
    SRTF: SrtfRigid,
    LAS: LasRigid,
    EFS: EfsInt,
    OPTIMUS: OptimusLike,
    A90: lambda: Ares(alpha=0.9),
    A100: lambda: Ares(alpha=1.0),
    ARTIFACT: lambda: Ares(
        fill_leftover=True, efficiency_baseline="one_gpu", size_basis="one_gpu", priority_reference="scaling_gps"
    ),
}
"""Engine arms (MaxMin is fluid and computed apart)."""


@dataclass(frozen=True)
class AresExperimentConfig:
    seeds: tuple[int, ...] = (0, 1, 2)
    rhos: tuple[float, ...] = (0.5, 1.0, 2.0)
    n_jobs: int = 160
    gpus: int = 64
    gpus_per_node: int = 4
    round_s: float = 60.0
    ftf_reference: FtfReference = AresConfig.ftf_reference  # headline FTF reference (R-lin also reported)
    plots: bool = True

    @classmethod
    def quick(cls) -> AresExperimentConfig:
        """The same traces, seeds and arms without plots: the full check already takes ~30 s."""
        return cls(plots=False)


# ================================================================================= one run
def _row(
    trace: str,
    arm: str,
    seed: int,
    wl: AresWorkload,
    finish: Mapping[str, float],
    refs: Mapping[str, Mapping[str, float]],
    result: SimResult | None,
    stats: Mapping[str, Any] | None,
    headline: str,
) -> dict[str, Any]:
    arrival = {j.job_id: j.arrival for j in wl.fluid}
    jct = np.array([finish[j] - arrival[j] for j in finish])
    first = min(arrival.values())
    row: dict[str, Any] = {
        "trace": trace, "arm": arm, "seed": seed, "gpus": wl.gpus, "rho": wl.rho, "jobs": len(wl.fluid),
        "finished": len(finish),
        "mean_jct": float(jct.mean()), "mean_jct_h": float(jct.mean() / H), "median_jct": float(np.median(jct)),
        "p99_jct": float(np.percentile(jct, 99)), "makespan": float(max(finish.values()) - first),
    }
    for name, ref in refs.items():
        rep = fairness_report(finish, arrival, ref)
        suffix = "" if name == headline else f"_{name}"
        row[f"unfair_fraction{suffix}"] = rep.unfair_fraction
        row[f"worst_ftf{suffix}"] = rep.worst_ftf
        row[f"mean_ftf{suffix}"] = rep.mean_ftf
    if result is not None:
        restarts = np.array([j.restarts for j in result.jobs], dtype=float)
        row["restarts_per_job"] = float(restarts.mean())
        row["changes_per_job"] = float(restarts.mean() + 1.0)  # incl. the first start (§6.2)
        row["gpu_utilisation"] = result.busy_gpu_seconds / (wl.gpus * row["makespan"]) if row["makespan"] > 0 else 0.0
        row["wall_seconds"] = result.wall_seconds
    for k, v in (stats or {}).items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            row[f"policy.{k}"] = v
    return row


def run_trace(wl: AresWorkload, trace: str, cfg: AresExperimentConfig) -> tuple[list[dict[str, Any]], dict[str, SimResult]]:
    cluster = ClusterSpec.homogeneous(wl.gpus // cfg.gpus_per_node, cfg.gpus_per_node)
    refs = {
        "scal_aligned": reference_finish_times(wl.fluid, wl.gpus, "scal_aligned", cfg.round_s),
        "lin": reference_finish_times(wl.fluid, wl.gpus, "lin", cfg.round_s),
    }
    if cfg.ftf_reference not in refs:
        refs[cfg.ftf_reference] = reference_finish_times(wl.fluid, wl.gpus, cfg.ftf_reference, cfg.round_s)
    rows, results = [], {}
    for arm, factory in ARMS.items():
        policy = factory()
        result = simulate(wl.specs, cluster, policy)
        finish = {j.job_id: j.end_time for j in result.jobs if j.end_time is not None}
        rows.append(_row(trace, arm, wl.seed, wl, finish, refs, result, policy.run_stats(), cfg.ftf_reference))
        results[arm] = result
    mm = maxmin_finish_times(wl.fluid, wl.gpus, cfg.round_s)
    rows.append(_row(trace, MAXMIN, wl.seed, wl, mm, refs, None, None, cfg.ftf_reference))
    return rows, results


# ================================================================================= aggregate + criteria
def aggregate(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean, std and median over seeds of every numeric column, per (trace, arm)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["trace"], r["arm"]), []).append(r)
    out = []
    for (trace, arm), rs in groups.items():
        entry: dict[str, Any] = {"trace": trace, "arm": arm, "seeds": len(rs)}
        for key in rs[0]:
            if key in ("seed", "gpus", "rho", "trace", "arm") or not _numeric(rs[0][key]):
                continue
            vals = np.array([r[key] for r in rs if _numeric(r.get(key))], dtype=float)
            if vals.size:
                entry[f"{key}_mean"] = float(vals.mean())
                entry[f"{key}_std"] = float(vals.std(ddof=1)) if vals.size > 1 else 0.0
                entry[f"{key}_median"] = float(np.median(vals))
        out.append(entry)
    return out


def _trace(rho: float) -> str:
    return f"rho{rho:g}"


def evaluate_criteria(agg: Sequence[dict[str, Any]], rhos: Sequence[float]) -> dict[str, dict[str, Any]]:
    """Spec §6.3 on medians over seeds. Each entry: what is required, what was measured, pass."""
    med = {(a["trace"], a["arm"]): a for a in agg}

    def m(rho: float, arm: str, metric: str) -> float:
        return float(med.get((_trace(rho), arm), {}).get(f"{metric}_median", math.nan))

    def ratio(rho: float, arm: str, base: str, metric: str = "mean_jct") -> float:
        b = m(rho, base, metric)
        return m(rho, arm, metric) / b if b > 0 else math.nan

    crit: dict[str, dict[str, Any]] = {}
    r1 = {f"{_trace(r)}/{b}": ratio(r, ARES, b) for r in rhos for b in RIGID}
    crit["1_efficiency_vs_rigid"] = {
        "require": "Ares avg JCT <= 0.6 x each of FIFO, SRTF, Tiresias-LAS, MaxMin at every rho (expected 0.3-0.5x)",
        "measured": r1, "pass": _all(v <= 0.6 for v in r1.values()),
    }
    heavy = max(rhos)
    r2 = {b: ratio(heavy, ARES, b) for b in (EFS, OPTIMUS)}
    crit["2a_heavy_jct_vs_elastic"] = {
        "require": f"rho={heavy:g}: Ares avg JCT <= 0.9 x EFS-int and <= 0.9 x Optimus-like (expected ~0.8x, ~0.5x)",
        "measured": r2, "pass": _all(v <= 0.9 for v in r2.values()),
    }
    best = min((m(heavy, b, "unfair_fraction") for b in (FIFO, SRTF, LAS, EFS, OPTIMUS)), default=math.nan)
    r2b = m(heavy, ARES, "unfair_fraction") / best if best > 0 else math.nan
    crit["2b_heavy_unfair_vs_best"] = {
        "require": f"rho={heavy:g}: Ares unfair fraction <= 0.7 x the lowest of FIFO, SRTF, Tiresias, "
        "EFS-int, Optimus (expected ~0.5x)",
        "measured": {"ratio": r2b, "ares": m(heavy, ARES, "unfair_fraction"), "best_baseline": best},
        "pass": _all([r2b <= 0.7]),
    }
    r3 = {
        f"{_trace(r)}/{b}": {"unfair": (m(r, ARES, "unfair_fraction"), m(r, b, "unfair_fraction")),
                              "worst_ftf": (m(r, ARES, "worst_ftf"), m(r, b, "worst_ftf"))}
        for r in rhos for b in RIGID
    }
    crit["3_fairness_vs_rigid"] = {
        "require": "Ares unfair fraction < and worst FTF < each rigid baseline's, every rho (pairs are (Ares, baseline))",
        "measured": r3,
        "pass": _all(v["unfair"][0] < v["unfair"][1] and v["worst_ftf"][0] < v["worst_ftf"][1] for v in r3.values()),
    }
    mid = 1.0 if 1.0 in rhos else sorted(rhos)[len(rhos) // 2]
    j75, j90, j100, jsrtf = (m(mid, a, "mean_jct") for a in (ARES, A90, A100, SRTF))
    crit["4_alpha_ablation"] = {
        "require": f"rho={mid:g}: Ares(0.75) avg JCT <= 0.7 x Ares(1.0), Ares(0.9) between them "
        "(prototype 0.53/0.89/1.37 h); "
        "Ares(1.0) vs SRTF reported (expected within +-10%)",
        "measured": {
            "a0.75_h": j75 / H, "a0.9_h": j90 / H, "a1.0_h": j100 / H, "a0.75/a1.0": j75 / j100, "a1.0/srtf": j100 / jsrtf
        },
        "pass": _all([j75 <= 0.7 * j100, j75 <= j90 <= j100]),
    }
    r5 = {_trace(r): m(r, ARES, "restarts_per_job") for r in rhos}
    crit["5_stability"] = {
        "require": "Ares restarts per job (changes after the first start) < 2 at every rho", "measured": r5,
        "pass": _all(v < 2 for v in r5.values()),
    }
    light = min(rhos)
    r6 = {
        "fill/efs_jct": ratio(light, FILL, EFS), "fill/efs_unfair": ratio(light, FILL, EFS, "unfair_fraction"),
        "ares/efs_jct (info: expected tie +-10%)": ratio(light, ARES, EFS),
        "ares/optimus_jct (info: expected ~1.3)": ratio(light, ARES, OPTIMUS),
    }
    crit["6_light_fill"] = {
        "require": f"rho={light:g}: Ares+fill avg JCT <= 0.8 x EFS-int and unfair <= 0.7 x EFS-int (prototype 0.65x, 0.47x)",
        "measured": r6, "pass": _all([r6["fill/efs_jct"] <= 0.8, r6["fill/efs_unfair"] <= 0.7]),
    }
    return crit


def _all(values: Any) -> bool:
    values = list(values)
    return bool(values) and all(bool(v) for v in values)


def _numeric(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# ================================================================================= driver
@dataclass(frozen=True)
class AresExperimentResult:
    out_dir: Path
    rows: list[dict[str, Any]]
    aggregate: list[dict[str, Any]]
    criteria: dict[str, dict[str, Any]]
    files: list[Path]
    summary: str

    def __str__(self) -> str:
        return self.summary


Point = tuple[float, int, "AresExperimentConfig", bool]
MapPoints = Callable[[Callable[[Point], Any], Sequence[Point]], Any]


def _run_point(point: Point) -> tuple[list[dict[str, Any]], dict[str, SimResult] | None]:
    """One (ρ, seed): every arm on its workload; the results only where CDF plots need them.
    A top-level function of plain arguments, so a process pool or a Ray task can run it."""
    rho, seed, cfg, keep = point
    wl = generate_workload(seed, rho=rho, n_jobs=cfg.n_jobs, gpus=cfg.gpus)
    trace_rows, results = run_trace(wl, _trace(rho), cfg)
    kept = {a: results[a] for a in (ARES, FILL, FIFO, SRTF, LAS, EFS, OPTIMUS)} if keep else None
    return trace_rows, kept


def run_ares_experiment(
    out_dir: Path, config: AresExperimentConfig | None = None, *, progress: Callable[[str], None] | None = None,
    map_points: MapPoints | None = None,
) -> AresExperimentResult:
    """`map_points(fn, points)`: where the (ρ, seed) runs happen (default: here, one after another;
    `deploy.ray.sweep.RayMap()` fans them out over a Ray cluster). Runs are independent, so
    where they run cannot change the answers."""
    cfg = config or AresExperimentConfig()
    say = progress or (lambda _msg: None)
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    cdf: dict[str, dict[str, SimResult]] = {}
    points: list[Point] = [(rho, seed, cfg, seed == cfg.seeds[0]) for rho in cfg.rhos for seed in cfg.seeds]
    answers = map_points(_run_point, points) if map_points is not None else (_run_point(p) for p in points)
    for (rho, seed, _, _), (trace_rows, kept) in zip(points, answers, strict=True):
        rows += trace_rows
        if kept is not None:
            cdf[_trace(rho)] = kept
        say(f"rho={rho:g} seed={seed}: " + ", ".join(f"{r['arm']} {r['mean_jct_h']:.2f}h" for r in trace_rows))
    agg = aggregate(rows)
    crit = evaluate_criteria(agg, cfg.rhos)
    examples = check_examples()
    crit["7_worked_examples"] = {
        "require": "Ex. 1-3 (spec §3.8) give exactly the listed finish times / virtual finish times",
        "measured": {e.name: {"expected": e.expected, "measured": e.measured} for e in examples},
        "pass": all(e.ok for e in examples),
    }
    passed = sum(1 for c in crit.values() if c["pass"])
    summary = (
        f"Ares reproduction ({len(cfg.seeds)} seeds, {cfg.n_jobs} jobs, {cfg.gpus} GPUs): "
        f"{passed}/{len(crit)} spec criteria pass"
        + "".join(f"; {k} {'PASS' if c['pass'] else 'FAIL'}" for k, c in crit.items())
        + f" ({time.perf_counter() - started:.0f} s)"
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    doc = {
        "experiment": "ares",
        "config": asdict(cfg),
        "details": {
            "arms": [*ARMS, MAXMIN],
            "maxmin": "fluid water-filling capped at d_j, no restart cost, enters at the next round boundary (analytic)",
            "headline_reference": cfg.ftf_reference,
            "engine_deviation": "restart cost is not charged on a job's first start (spec §7.11 charges it)",
            "paper": "avg JCT > 20% lower than the second best (Pollux); unfairly served jobs > 40% fewer (spec §5.2)",
            "summary": summary,
        },
        "rows": rows,
        "aggregate": agg,
        "criteria": crit,
    }
    files = [out_dir / "ares.json", out_dir / "ares.csv"]
    files[0].write_text(json.dumps(_jsonable(doc), indent=2))
    cols: list[str] = []
    for r in rows:
        cols += [k for k in r if k not in cols]
    with open(files[1], "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=cols)
        writer.writeheader()
        writer.writerows(rows)
    if cfg.plots:
        files += _plots(out_dir, cdf)
    return AresExperimentResult(out_dir, rows, agg, crit, files, summary)


def _plots(out_dir: Path, cdf: Mapping[str, Mapping[str, SimResult]]) -> list[Path]:
    from ..plots import plot_jct_cdf

    return [
        plot_jct_cdf(dict(by_arm), out_dir / f"jct_cdf_{trace}.png", title=f"Ares reproduction — JCT CDF, {trace}")
        for trace, by_arm in cdf.items()
    ]


def _jsonable(v: Any) -> Any:
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, (np.floating, np.integer)):
        return _jsonable(v.item())
    if isinstance(v, np.bool_):
        return bool(v)
    return v
