"""Arena alone vs Arena+SchedMate: throughput models bootstrapped from similar finished jobs.

    schedmate experiment arena-adapter --out OUT_DIR [--quick] [--seeds 3]
        [--clusters R2,R1] [--jobs 240] [--load 1.3] [--detection-rate 1] [--no-precomputed]

Workload: Arena's §6 trace as its reference experiment draws it (`schedulers.arena.experiment.
section6_workload`: submission times from a 6-h Philly slice when the shared trace is present, else
Poisson; LM jobs, offered load 1.3; `details.arrivals` says which) on the spec's clusters (R2: 64
GPUs of 4 types, so profiling costs the full T_prof = 8.5 min (a delay before launch); R1: 2
types, half that). Arms, on the same jobs, cluster and seed:

- `arena`: Arena as specified (profiles each new job; believes κ·Thr_AP·(1+ε));
- `arena+sm`: `ArenaSchedMate`, which skips profiling and seeds the belief from the measured
  throughput of finished jobs the advisor matched (same declared model), Arena's own otherwise;
- `arena+sm-measured`: the same, believing measured configurations only (no extrapolation to
  unmeasured counts), which isolates the value of a more accurate model from that of a more
  optimistic one;
- `arena-exact` (reference only): Arena that knows Thr_AP exactly and never profiles.

Per run: the engine's summary (mean JCT, queueing, p99) plus `profiling_s_per_job` (GPU-seconds
of profiling), `profiling_saved_s`, `bootstrapped_share`, and the belief's error against the true
Thr_AP (mean over a job's believed configurations of |belief/true − 1|): `est_err` over all jobs,
and for `arena+sm` `est_err_bootstrapped` with `est_err_prior_same_jobs`, the error Arena's
profiled view has on the same jobs and configurations. The source is `make_source(specs, seed,
rate)`; reported runs use `SemanticSources` (real agents, prior history from
`independent_history`, finished jobs recorded during the run). Writes `arena-adapter.json`/`.csv`.
`--source declared-model` replaces the agents by `DeclaredModelMatches` (reference: an upper
bound on what matching gives, not a SchedMate result). `--quick`: R2 only, 3 seeds, no plots.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from schedmate.adapters.arena import ArenaSchedMate
from schedmate.adapters.insights import AdvisorInsight, InsightSource
from schedmate.errors import BadInput
from schedmate.schedulers.arena.config import ArenaConfig, View
from schedmate.schedulers.arena.experiment import section6_workload
from schedmate.schedulers.arena.hardware import R1, R2, build_cluster
from schedmate.schedulers.arena.policy import Arena, JobInfo
from schedmate.schedulers.arena.sim import run_costed
from schedmate.schedulers.arena.views import ap_view, job_rng
from schedmate.schedulers.arena.workload import H, generate
from schedmate.schedulers.engine import SimConfig, SimResult
from schedmate.schedulers.job import JobState
from schedmate.schedulers.metrics import summarize
from schedmate.sim.experiments.common import (
    ExperimentResult,
    MakeSource,
    RunRow,
    aggregate,
    compare_arms,
    mean_of,
    write_experiment,
)

__all__ = ["ARMS", "ArenaAdapterConfig", "DeclaredModelMatches", "belief_error", "run_arena_adapter_experiment"]

ALONE, SM, SM_MEASURED, EXACT = "arena", "arena+sm", "arena+sm-measured", "arena-exact"
ARMS = (ALONE, SM, SM_MEASURED, EXACT)
CLUSTERS = {"R2": R2, "R1": R1}
CAP_S = 48 * H


@dataclass(frozen=True)
class ArenaAdapterConfig:
    seeds: tuple[int, ...] = (0, 1, 2)
    clusters: tuple[str, ...] = ("R2", "R1")
    arms: tuple[str, ...] = ARMS
    n_jobs: int = 240
    load: float = 1.3
    detection_rate: float = 1.0
    plots: bool = True

    @classmethod
    def quick(cls) -> ArenaAdapterConfig:
        return cls(clusters=("R2",), plots=False)


class DeclaredModelMatches(InsightSource):
    """REFERENCE ONLY, not the SchedMate agents: the advisor's "similar jobs" are the (up to `k`)
    latest earlier jobs of this run that declared the same model name (`spec.name`). It bounds
    what perfect retrieval would give the adapters; it reads no outcome (the adapters only use
    measurements of matches that finished). `make` is a `MakeSource`."""

    def __init__(self, k: int = 5) -> None:
        self.k = k
        self.seen: list[tuple[str, str | None]] = []
        self.calls = {"advise": 0, "matched": 0}

    @classmethod
    def make(cls, specs: Sequence[Any], seed: int, detection_rate: float) -> DeclaredModelMatches:
        return cls()

    def advise(self, job: JobState) -> AdvisorInsight | None:
        self.calls["advise"] += 1
        ids = tuple(j for j, n in reversed(self.seen) if n == job.spec.name)[: self.k]
        self.calls["matched"] += bool(ids)
        return AdvisorInsight(ids, None, None, None)

    def record(self, job: JobState, *, finished: bool) -> None:
        if not finished:
            self.seen.append((job.job_id, job.spec.name))

    def stats(self) -> dict[str, Any]:
        return {"source": "declared-model matches (reference, not the agents)", **self.calls}


def belief_error(info: JobInfo, belief: dict[tuple[str, int], float] | None = None) -> float | None:
    """Mean |belief/Thr_AP − 1| over the configurations the policy believes (None: none)."""
    belief = info.allowed if belief is None else belief
    errs = [abs(belief[c] / info.table.ap[c] - 1.0) for c in info.allowed
            if c in belief and info.table.ap.get(c, 0.0) > 0]
    return float(np.mean(errs)) if errs else None


def _policy(arm: str, seed: int, source: Callable[[], Any]) -> Arena:
    if arm == ALONE:
        return Arena(ArenaConfig(seed=seed))
    if arm in (SM, SM_MEASURED):
        policy = ArenaSchedMate(source(), ArenaConfig(seed=seed), extrapolate=arm == SM)
        policy.name = arm
        return policy
    if arm == EXACT:
        return Arena(ArenaConfig(name=EXACT, view=View.AP_EXACT, profile_s=0.0, seed=seed))
    raise BadInput(f"unknown arm {arm!r}; choose from {', '.join(ARMS)}")


def _extra(result: SimResult, policy: Arena) -> dict[str, Any]:
    infos = [policy.info[j.job_id] for j in result.jobs]
    out: dict[str, Any] = {
        "profiling_s_per_job": float(np.mean([i.profile_s for i in infos])),
        "est_err": mean_of([belief_error(i) for i in infos]),
        "bootstrapped_share": 0.0,
        "profiling_saved_s": 0.0,
    }
    if isinstance(policy, ArenaSchedMate):
        boot = [policy.info[j] for j in sorted(policy.bootstrapped)]
        prior = [belief_error(policy.info[j], ap_view(policy.info[j].table, job_rng(policy.config.seed, j)))
                 for j in sorted(policy.bootstrapped)]
        c = policy.counters
        out.update(bootstrapped_share=c.bootstrapped / max(1, c.arrivals), profiling_saved_s=c.profiling_saved_s,
                   est_err_bootstrapped=mean_of([belief_error(i) for i in boot]), est_err_prior_same_jobs=mean_of(prior),
                   sm=asdict(c),
                   source={k: v for k, v in policy.source.stats().items() if isinstance(v, (int, float, str, bool))})
    return out


def run_arena_adapter_experiment(
    out_dir: Path | None,
    *,
    make_source: MakeSource,
    config: ArenaAdapterConfig = ArenaAdapterConfig(),
    progress: Callable[[str], None] | None = None,
) -> ExperimentResult:
    """Every (cluster, seed, arm); writes `arena-adapter.json`/`.csv` (and plots) to `out_dir`."""
    cfg = config
    rows: list[RunRow] = []
    results: dict[str, dict[str, SimResult]] = {}
    workload = replace(section6_workload(), n_jobs=cfg.n_jobs, load=cfg.load)  # the reference experiment's arrivals
    for name in cfg.clusters:
        cluster = build_cluster(CLUSTERS[name])
        for seed in cfg.seeds:
            specs = generate(cluster, seed, workload)
            for arm in cfg.arms:
                def source(specs: Any = specs, seed: int = seed) -> Any:  # this iteration's trace and seed
                    return make_source(specs, seed, cfg.detection_rate)

                policy = _policy(arm, seed, source)
                result = run_costed(specs, cluster, policy, policy.downtime, SimConfig(seed=seed, max_time=CAP_S))
                summary = summarize(result)
                extra = _extra(result, policy)
                rows.append(RunRow(name, arm, seed, cluster.total_gpus, summary, extra))
                if cfg.plots:
                    results.setdefault(f"{name}/seed{seed}", {})[arm] = result
                if progress is not None:
                    progress(f"{name} seed {seed} {arm:12s} mean JCT {summary.mean_jct / 3600:6.3f} h  "
                             f"boot {extra['bootstrapped_share']:.2f}  est_err {extra['est_err']:.3f}")
    comparisons = {arm: compare(rows, ALONE, arm) for arm in (SM, SM_MEASURED)}
    line = summary_line(comparisons, cfg)
    details = {"arrivals": workload.arrivals, "arena_vs_arena_sm": comparisons[SM], "arena_vs_arena_sm_measured": comparisons[SM_MEASURED],
               "arena_vs_exact": compare(rows, ALONE, EXACT), "summary": line}
    files: list[Path] = []
    if out_dir is not None:
        files = write_experiment(out_dir, "arena-adapter", rows, config=asdict(cfg), details=details,
                                 results=results or None)
    return ExperimentResult("arena-adapter", out_dir, rows, aggregate(rows), files, line, details)


def compare(rows: Sequence[RunRow], base: str, arm: str) -> dict[str, dict[str, float]]:
    """Per cluster, seed means: JCT of both arms and its change, profiling, estimate errors."""
    return compare_arms(rows, base, arm, both=("profiling_s_per_job", "est_err"),
                        arm_only=("profiling_saved_s", "bootstrapped_share", "est_err_bootstrapped",
                                  "est_err_prior_same_jobs"))



def summary_line(comparisons: dict[str, dict[str, dict[str, float]]], cfg: ArenaAdapterConfig) -> str:
    """One line: per SchedMate arm and cluster, JCT change, profiling saved, estimate error."""
    parts = [f"{arm} {t}: mean JCT {c[f'{ALONE}_mean_jct_h']:.2f} h -> {c[f'{arm}_mean_jct_h']:.2f} h "
             f"({100 * c['jct_change']:+.1f}%, better on {c['seeds_better']:.0f}/{c['seeds']:.0f} seeds), "
             f"bootstrapped {100 * c['bootstrapped_share']:.0f}% of jobs, profiling saved "
             f"{c['profiling_saved_s'] / 3600:.1f} GPU-h/run, estimate error on those jobs "
             f"{c['est_err_prior_same_jobs']:.3f} (profiled) -> {c['est_err_bootstrapped']:.3f} (bootstrapped)"
             for arm, comparison in comparisons.items() for t, c in comparison.items()]
    return f"vs Arena ({len(cfg.seeds)} seeds, load {cfg.load:g}, {cfg.n_jobs} jobs): " + "; ".join(parts)
