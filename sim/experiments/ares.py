"""Ares alone vs Ares+SchedMate: job lengths from the advisor when the user gives none.

    schedmate experiment ares-adapter --out OUT_DIR [--quick] [--seeds 3]
        [--user-share 0.3] [--rhos 1,2] [--detection-rate 1] [--no-precomputed]

Workload: the Ares spec's §6.1 trace (`schedulers.ares.workload.generate_workload`: 160 jobs,
six models, offered load ρ, 64 GPUs in 16 × 4, 60 s rounds, per-model restart costs). A share
`user_share` of the jobs (a hash draw per seed and job, default 0.3) carry a user-given length
(`EST_KEY`: their GPU-time at the demanded DoP, × exp(N(0, `user_sigma`)) when σ > 0); the
others carry none. Arms, on the same jobs, cluster and engine seed:

- `ares`: `AresUserLengths`, Ares knowing the user-given lengths only (the rest: unknown, served
  after every known job, as Ares's hook defines);
- `ares+sm`: `AresSchedMate`, the advisor's length (mean duration of the matches × GPUs) for
  jobs without a user length, Ares's own answer otherwise;
- `ares-oracle` (reference only): Ares with every job's true GPU-time (the paper's assumption).

The insight source is `make_source(specs, seed, detection_rate)`; reported runs use
`SemanticSources` (real agents over artefacts planned from each job's planned work, a prior
history from `independent_history`, finished jobs recorded as history during the run). Metrics:
the engine's summary (mean JCT, p99, makespan) plus finish-time fairness against the spec's
R-scal-aligned reference (`unfair_fraction`, `worst_ftf`, `mean_ftf`). Writes `ares-adapter.json`
(`aggregate` rows with `mean_jct_mean`, `unfair_fraction_mean`, ...), CSV and a JCT CDF per seed.
`--quick`: ρ = 1 only (about a minute with a warm cache, 2 cores).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from schedmate.adapters.ares import AresSchedMate, AresUserLengths
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

__all__ = ["ARMS", "AresAdapterConfig", "give_user_lengths", "run_ares_adapter_experiment"]

ALONE, SM, ORACLE = "ares", "ares+sm", "ares-oracle"
ARMS = (ALONE, SM, ORACLE)


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
    plots: bool = True

    @classmethod
    def quick(cls) -> AresAdapterConfig:
        return cls(rhos=(1.0,), plots=False)


def give_user_lengths(specs: Sequence[JobSpec], seed: int, share: float, sigma: float = 0.0) -> list[JobSpec]:
    """`specs` where a `share` of jobs (hash draw per seed and job) state their GPU-time; the
    others state nothing (any `EST_KEY` they had is removed)."""
    noise = np.exp(sigma * np.random.default_rng([seed, 0x05E7]).normal(size=len(specs)))
    out = []
    for s, f in zip(specs, noise, strict=True):
        attrs = {k: v for k, v in s.attributes.items() if k != EST_KEY}
        if unit_hash("user-length", seed, s.job_id) < share:
            attrs[EST_KEY] = s.num_gpus * s.duration * float(f)
        out.append(replace(s, attributes=attrs))
    return out


def _policy(arm: str, source: Callable[[], Any]) -> Policy:
    if arm == ALONE:
        return AresUserLengths()
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
    for rho in cfg.rhos:
        trace = f"rho{rho:g}"
        for seed in cfg.seeds:
            wl = generate_workload(seed, rho=rho, n_jobs=cfg.n_jobs, gpus=cfg.gpus)
            specs = give_user_lengths(wl.specs, seed, cfg.user_share, cfg.user_sigma)
            for arm in cfg.arms:
                def source(specs: Any = specs, seed: int = seed) -> Any:  # this iteration's trace and seed
                    return make_source(specs, seed, cfg.detection_rate)

                policy = _policy(arm, source)
                result = Simulator(specs, cluster, policy, SimConfig(seed=seed, record_timeline=False)).run()
                summary = summarize(result)
                extra = _extra(result, policy, cfg.gpus)
                rows.append(RunRow(trace, arm, seed, cfg.gpus, summary, extra))
                if cfg.plots:
                    results.setdefault(f"{trace}/seed{seed}", {})[arm] = result
                if isinstance(policy, AresSchedMate):
                    sources[f"{trace}/seed{seed}"] = extra["source"]
                if progress is not None:
                    progress(f"{trace} seed {seed} {arm:12s} mean JCT {summary.mean_jct / 3600:6.3f} h  "
                             f"unfair {extra['unfair_fraction']:.3f}  unknown {extra['unknown_size_jobs']}")
    comparison = compare(rows, ALONE, SM)
    line = summary_line(comparison, cfg, sources)
    details = {"ares_vs_ares_sm": comparison, "oracle_vs_ares_sm": compare(rows, ORACLE, SM), "source_stats": sources,
               "summary": line}
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


def summary_line(comparison: dict[str, dict[str, float]], cfg: AresAdapterConfig, sources: dict[str, Any]) -> str:
    names = sorted({str(s.get("source", "?")) for s in sources.values()}) or ["none"]
    parts = [f"{t}: mean JCT {c[f'{ALONE}_mean_jct_h']:.2f} h -> {c[f'{SM}_mean_jct_h']:.2f} h "
             f"({100 * c['jct_change']:+.1f}%, better on {c['seeds_better']:.0f}/{c['seeds']:.0f} seeds), "
             f"unfair {c[f'{ALONE}_unfair']:.3f} -> {c[f'{SM}_unfair']:.3f}" for t, c in comparison.items()]
    return (f"Ares+SM vs Ares (user lengths for {cfg.user_share:.0%} of jobs, {len(cfg.seeds)} seeds, source: "
            f"{' | '.join(names)}): " + "; ".join(parts))
