"""Ares alone vs Ares+SchedMate: job lengths from the advisor when the user gives none.

    schedmate experiment ares-adapter --out OUT_DIR [--quick] [--seeds 3]
        [--user-share 0.3] [--rhos 1,2] [--early-stops philly] [--detection-rate 1] [--no-precomputed]

Workload: the Ares spec's §6.1 trace (`schedulers.ares.workload.generate_workload`: 160 jobs,
six models, offered load ρ, 64 GPUs in 16 × 4, 60 s rounds, per-model restart costs), run by
the simulated world (`sim.world.realise_planned`): the generator's drawn length is what each
job *sets out to do* (its plan, rendered into its code); the world runs it with its own
step-time and start-up factors and stops some jobs early (`early_stops`: Acme's rates for
Philly by default; "none" runs every plan out). So the planned offered load is ρ, and the
realised one lower by the early stops (reported as `realised_load`). The advisor's history is
an *earlier window* of the same cluster: `history_windows` further draws of the generator, run
by the same world, never an evaluated job.

A share `user_share` of the jobs (a hash draw per seed and job, default 0.3) carry a user-given
length (`EST_KEY`): their *planned* GPU-time (what their code runs at nominal speed, × exp(N(0,
`user_sigma`)) when σ > 0), never the realised one; the others carry none. Arms, on the same
jobs, cluster and engine seed:

- `ares`: `AresUserLengths`, Ares knowing the user-given lengths only (the rest: unknown, served
  after every known job, as Ares's hook defines);
- `ares+median` (the non-semantic baseline): `AresHistoryMedian`, a job without a user length
  gets the median GPU-time of past jobs with its GPU count (earlier windows, then every job
  that finishes): what a cluster could deploy with no code and no logs;
- `ares+sm`: `AresSchedMate`, the advisor's length (mean duration of the matches × GPUs) for
  jobs without a user length, Ares's own answer otherwise;
- `ares-oracle` (reference only): Ares with every job's true realised GPU-time (the paper's
  assumption).

The insight source is `make_source(specs, seed, detection_rate)`; reported runs use
`SemanticSources` (real agents over artefacts rendered from each job's plan, history from the
earlier windows, finished jobs recorded as history during the run). Metrics: the engine's
summary (mean JCT, p99, makespan) plus finish-time fairness against the spec's R-scal-aligned
reference (`unfair_fraction`, `worst_ftf`, `mean_ftf`), and the advisor's estimate quality on
the jobs it was asked about (`sim.experiments.quality`), printed beside the JCT figures. Writes
`ares-adapter.json` (`aggregate` rows with `mean_jct_mean`, `unfair_fraction_mean`, ...), CSV
and a JCT CDF per seed. `--quick`: ρ = 1 only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from schedmate.adapters.ares import AresHistoryMedian, AresSchedMate, AresUserLengths
from schedmate.errors import BadInput
from schedmate.schedulers.ares.metrics import ftf_metrics
from schedmate.schedulers.ares.policy import EST_KEY, Ares
from schedmate.schedulers.ares.workload import generate_workload
from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.engine import SimConfig, SimResult, Simulator
from schedmate.schedulers.job import JobSpec
from schedmate.schedulers.metrics import summarize
from schedmate.schedulers.policy import Policy
from schedmate.sim.artefacts import unit_hash
from schedmate.sim.experiments.common import ExperimentResult, MakeSource, RunRow, aggregate, write_experiment
from schedmate.sim.experiments.quality import estimate_quality, merge_quality, quality_line, without_errors
from schedmate.sim.experiments.sources import use_history
from schedmate.sim.world import PLANNED_RUN_KEY, EarlyStops, Histories, WorldModel, realise_planned

__all__ = ["ARMS", "EARLY_STOPS", "AresAdapterConfig", "ares_world", "give_user_lengths", "realised_load", "run_ares_adapter_experiment"]

ALONE, MEDIAN, SM, ORACLE = "ares", "ares+median", "ares+sm", "ares-oracle"
ARMS = (ALONE, MEDIAN, SM, ORACLE)


@dataclass(frozen=True)
class AresAdapterConfig:
    seeds: tuple[int, ...] = (0, 1, 2)
    rhos: tuple[float, ...] = (1.0, 2.0)
    arms: tuple[str, ...] = ARMS
    user_share: float = 0.3  # share of jobs whose user states a length
    user_sigma: float = 0.0  # log-normal noise on a user-given length (0: exact)
    detection_rate: float = 1.0
    n_jobs: int = 160
    gpus: int = 64
    gpus_per_node: int = 4
    early_stops: str = "philly"  # `EarlyStops.for_trace` name; "none": every job runs its plan out
    history_windows: int = 3  # earlier windows of the same cluster the advisor's history holds
    plots: bool = True

    @classmethod
    def quick(cls) -> AresAdapterConfig:
        return cls(rhos=(1.0,), plots=False)


EARLY_STOPS = ("none", "philly", "helios", "seren", "kalos")  # `early_stops`: Acme's clusters' rates, or none
_HISTORY_SEED = 7_919  # the earlier windows' generator seeds: seed * this + 1 .. (never an evaluated seed's draw)


def ares_world(seed: int, rho: float, cfg: AresAdapterConfig) -> tuple[list[JobSpec], list[JobSpec]]:
    """(the §6.1 trace for `seed` as the world runs it, the earlier windows as history): plans
    from the generator, outcomes from `sim.world` (see the module docstring). The history's
    windows come oldest first (each keeps its own submit times: an engine time is never
    negative), ids prefixed `hist-`."""
    if cfg.early_stops not in EARLY_STOPS:
        raise BadInput(f"unknown early stops {cfg.early_stops!r}; choose from {', '.join(EARLY_STOPS)}")
    if cfg.history_windows < 0:
        raise BadInput(f"history_windows must be >= 0, got {cfg.history_windows}")
    model = WorldModel(early=EarlyStops.for_trace(cfg.early_stops))
    evaluated = realise_planned(generate_workload(seed, rho=rho, n_jobs=cfg.n_jobs, gpus=cfg.gpus).specs, seed, model)
    history: list[JobSpec] = []
    for k in range(cfg.history_windows, 0, -1):  # oldest first
        wl = generate_workload(seed * _HISTORY_SEED + k, rho=rho, n_jobs=cfg.n_jobs, gpus=cfg.gpus)
        history += [replace(s, job_id=f"hist-{k}-{s.job_id}") for s in wl.specs]
    return evaluated, realise_planned(history, seed, model)


def realised_load(specs: Sequence[JobSpec], gpus: int) -> float:
    """Offered load of a realised window: its GPU-time over the GPUs x its arrival span."""
    if not specs:
        return 0.0
    span = max(s.submit_time for s in specs) - min(s.submit_time for s in specs)
    return sum(s.num_gpus * s.duration for s in specs) / (gpus * span) if span > 0 else math.nan


def give_user_lengths(specs: Sequence[JobSpec], seed: int, share: float, sigma: float = 0.0) -> list[JobSpec]:
    """`specs` where a `share` of jobs (hash draw per seed and job) state their planned GPU-time:
    what their code runs at the workload's nominal speed (`PLANNED_RUN_KEY`, else the plan; a generator's job that went through no world states its drawn duration, which is its
    plan) x GPUs, never how the job ended. The others state nothing (any `EST_KEY` they had is
    removed)."""
    noise = np.exp(sigma * np.random.default_rng([seed, 0x05E7]).normal(size=len(specs)))
    out = []
    for s, f in zip(specs, noise, strict=True):
        attrs = {k: v for k, v in s.attributes.items() if k != EST_KEY}
        if unit_hash("user-length", seed, s.job_id) < share:
            planned = s.attributes.get(PLANNED_RUN_KEY) or s.attributes.get("planned_work") or s.duration
            attrs[EST_KEY] = s.num_gpus * float(planned) * f
        out.append(replace(s, attributes=attrs))
    return out


def _policy(arm: str, source: Callable[[], Any], history: Sequence[JobSpec]) -> Policy:
    if arm == ALONE:
        return AresUserLengths()
    if arm == MEDIAN:
        return AresHistoryMedian(history)
    if arm == SM:
        return AresSchedMate(source())
    if arm == ORACLE:
        policy = Ares()
        policy.name = ORACLE
        return policy
    raise BadInput(f"unknown arm {arm!r}; choose from {', '.join(ARMS)}")


def _extra(result: SimResult, policy: Policy, gpus: int) -> dict[str, Any]:
    ftf = ftf_metrics(result, "scal_aligned", gpus=gpus)
    stats = policy.run_stats()
    out: dict[str, Any] = {
        "unfair_fraction": ftf.unfair_fraction,
        "worst_ftf": ftf.worst_ftf,
        "mean_ftf": ftf.mean_ftf,
        "unknown_size_jobs": stats.get("unknown_size", 0),
        "restarts_per_job": float(np.mean([j.restarts for j in result.jobs])) if result.jobs else 0.0,
    }
    if isinstance(policy, AresSchedMate):
        info = policy.info()
        out["sm"] = {k: v for k, v in info.items() if k != "source"}
        out["source"] = {k: v for k, v in info["source"].items() if isinstance(v, (int, float, str, bool))}
    return out


def run_ares_adapter_experiment(
    out_dir: Path | None,
    *,
    make_source: MakeSource,
    config: AresAdapterConfig = AresAdapterConfig(),
    progress: Callable[[str], None] | None = None,
) -> ExperimentResult:
    """Every (ρ, seed, arm) on the §6.1 trace; writes `ares-adapter.json`/`.csv`/plots to `out_dir`."""
    cfg = config
    cluster = ClusterSpec.homogeneous(cfg.gpus // cfg.gpus_per_node, cfg.gpus_per_node)
    rows: list[RunRow] = []
    results: dict[str, dict[str, SimResult]] = {}
    sources: dict[str, Any] = {}
    quality: dict[str, list[dict[str, Any]]] = {}
    loads: dict[str, list[float]] = {}
    histories = Histories()
    use_history(make_source, histories)  # history from the earlier windows, never the evaluated one
    for rho in cfg.rhos:
        trace = f"rho{rho:g}"
        for seed in cfg.seeds:
            evaluated, history = ares_world(seed, rho, cfg)
            specs = give_user_lengths(evaluated, seed, cfg.user_share, cfg.user_sigma)
            histories.add(specs, seed, history)
            loads.setdefault(trace, []).append(realised_load(specs, cfg.gpus))
            for arm in cfg.arms:
                def source(specs: Any = specs, seed: int = seed) -> Any:  # this iteration's trace and seed
                    return make_source(specs, seed, cfg.detection_rate)

                policy = _policy(arm, source, history)
                result = Simulator(specs, cluster, policy, SimConfig(seed=seed, record_timeline=False)).run()
                summary = summarize(result)
                extra = _extra(result, policy, cfg.gpus)
                rows.append(RunRow(trace, arm, seed, cfg.gpus, summary, extra))
                if cfg.plots:
                    results.setdefault(f"{trace}/seed{seed}", {})[arm] = result
                if isinstance(policy, AresSchedMate):
                    sources[f"{trace}/seed{seed}"] = extra["source"]
                    log = policy.source.advice_log()
                    if log is not None:
                        q = estimate_quality(log, specs)
                        quality.setdefault(trace, []).append(q)
                        extra["advisor_quality"] = without_errors(q)
                if progress is not None:
                    progress(f"{trace} seed {seed} {arm:12s} mean JCT {summary.mean_jct / 3600:6.3f} h  "
                             f"unfair {extra['unfair_fraction']:.3f}  unknown {extra['unknown_size_jobs']}")
    comparison = compare(rows, ALONE, SM)
    merged = {t: merge_quality(qs) for t, qs in quality.items()}
    for t, c in comparison.items():
        c["realised_load"] = float(np.mean(loads[t]))
    versus_median = compare(rows, MEDIAN, SM)
    line = summary_line(comparison, cfg, sources, merged, versus_median)
    details = {"ares_vs_ares_sm": comparison, "median_vs_ares_sm": versus_median,
               "oracle_vs_ares_sm": compare(rows, ORACLE, SM), "source_stats": sources,
               "advisor_quality": {t: without_errors(q) for t, q in merged.items()}, "summary": line}
    files: list[Path] = []
    if out_dir is not None:
        files = write_experiment(out_dir, "ares-adapter", rows, config=asdict(cfg), details=details,
                                 results=results or None)
    return ExperimentResult("ares-adapter", out_dir, rows, aggregate(rows), files, line, details)


def compare(rows: Sequence[RunRow], base: str, arm: str) -> dict[str, dict[str, float]]:
    """Per trace: seed-mean mean JCT and unfair fraction of both arms, and the JCT change."""
    out: dict[str, dict[str, float]] = {}
    for trace in dict.fromkeys(r.trace for r in rows):
        b = [r for r in rows if r.trace == trace and r.arm == base]
        a = [r for r in rows if r.trace == trace and r.arm == arm]
        if not a or not b:
            continue
        jb, ja = (float(np.mean([r.summary.mean_jct for r in x])) for x in (b, a))
        ub, ua = (float(np.mean([r.extra["unfair_fraction"] for r in x])) for x in (b, a))
        wins = sum(ra.summary.mean_jct < rb.summary.mean_jct for ra, rb in zip(a, b))
        out[trace] = {f"{base}_mean_jct_h": jb / 3600, f"{arm}_mean_jct_h": ja / 3600,
                      "jct_change": ja / jb - 1.0 if jb > 0 else math.nan,
                      f"{base}_unfair": ub, f"{arm}_unfair": ua, "seeds_better": wins, "seeds": len(a)}
    return out


def summary_line(comparison: dict[str, dict[str, float]], cfg: AresAdapterConfig, sources: dict[str, Any],
                 quality: dict[str, dict[str, Any]] | None = None,
                 baseline: dict[str, dict[str, float]] | None = None) -> str:
    """One line: per ρ, both arms' mean JCT and unfair fraction, the history-median baseline
    against Ares+SM (`baseline`: `compare(rows, MEDIAN, SM)`), and the advisor's estimate quality."""
    names = sorted({str(s.get("source", "?")) for s in sources.values()}) or ["none"]
    parts = []
    for t, c in comparison.items():
        part = (f"{t} (realised load {c.get('realised_load', math.nan):.2f}): mean JCT {c[f'{ALONE}_mean_jct_h']:.2f} h -> "
                f"{c[f'{SM}_mean_jct_h']:.2f} h ({100 * c['jct_change']:+.1f}%, better on "
                f"{c['seeds_better']:.0f}/{c['seeds']:.0f} seeds), unfair {c[f'{ALONE}_unfair']:.3f} -> {c[f'{SM}_unfair']:.3f}")
        if baseline and t in baseline:
            b = baseline[t]
            part += (f"; history-median baseline {b[f'{MEDIAN}_mean_jct_h']:.2f} h (Ares+SM {100 * b['jct_change']:+.1f}% "
                     f"vs it, better on {b['seeds_better']:.0f}/{b['seeds']:.0f})")
        if quality and t in quality:
            part += f"; {quality_line(quality[t])}"
        parts.append(part)
    return (f"Ares+SM vs Ares (user lengths for {cfg.user_share:.0%} of jobs, early stops: {cfg.early_stops}, "
            f"{len(cfg.seeds)} seeds, source: {' | '.join(names)}): " + "; ".join(parts))
