"""Suika alone vs Suika+SchedMate: iteration-time models corrected from similar finished jobs.

    schedmate experiment suika-adapter --out OUT_DIR [--quick] [--seeds 3]
        [--misfit-sigma 0.4] [--detection-rate 1] [--no-precomputed]

**The world.** Suika's analytic model assumes every model's code reaches MFU 0.45; here each
catalogue model's real compute coefficient is the prior's × e^{N(0, σ)} (σ = `misfit_sigma`, one
draw per (seed, model name): the code of a model, not a job, sets it). `MisfitWorld` makes that
the simulator's truth for every arm (Suika's `_true_time` hook); beliefs stay the policies' own.
Without such a misfit the prior *is* the truth and there is nothing to correct, so the result
depends on σ: it is a sensitivity parameter, not a calibrated figure.

Workload: Suika's §5.2 trace as its reference experiment draws it (`schedulers.suika.experiment.
section52_trace`: 64 H100 GPUs in one rack, submission times from the busiest 8 h of Philly when the
shared trace is present, else Poisson; 120 jobs at offered load 0.9, S:M:L = 3:1:1; quick: the
busiest 4 h, 60 jobs).
Arms, same jobs, cluster and seed: `suika` (prior model), `suika+sm` (`SuikaSchedMate`: the
measured correction of finished jobs the advisor matched, same declared model), and
`suika-exact` (reference: the true coefficients). Per run: the engine's summary plus
`corrected_share` and the model's error against the truth on each job's default plan
(`est_err_time`: |T_belief/T_true − 1|) and on the speedup of doubling its data parallelism
(`est_err_speedup`), over all jobs and over the corrected ones (`*_corrected`, with the prior's
error on the same jobs, `*_prior_same_jobs`). Reported runs use `SemanticSources`;
`--source declared-model` uses the reference `DeclaredModelMatches` (an upper bound).
Writes `suika-adapter.json`/`.csv`.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from schedmate.adapters.suika import SuikaSchedMate
from schedmate.errors import BadInput
from schedmate.schedulers.engine import SimConfig, SimResult, simulate
from schedmate.schedulers.metrics import summarize
from schedmate.schedulers.suika.config import SUIKA
from schedmate.schedulers.suika.experiment import section52_trace
from schedmate.schedulers.suika.model import Coeffs, Hardware, Plan, coeffs_for, iteration_time, layout_plan
from schedmate.schedulers.suika.policy import ElasticPolicy, SuikaJob
from schedmate.schedulers.suika.timing import cluster_for
from schedmate.schedulers.suika.workload import TraceConfig, generate_trace
from schedmate.sim.experiments.common import (
    ExperimentResult,
    MakeSource,
    RunRow,
    aggregate,
    compare_arms,
    mean_of,
    write_experiment,
)

__all__ = ["ARMS", "Misfit", "MisfitWorld", "SuikaAdapterConfig", "run_suika_adapter_experiment"]

ALONE, SM, EXACT = "suika", "suika+sm", "suika-exact"
ARMS = (ALONE, SM, EXACT)
H = 3600.0


@dataclass(frozen=True)
class Misfit:
    """Per catalogue model, the true k_comp / the prior's: e^{N(0, sigma)}, drawn per (seed, name)."""

    sigma: float = 0.4
    seed: int = 0

    def factor(self, model: str) -> float:
        if self.sigma <= 0:
            return 1.0
        rng = np.random.default_rng([self.seed, 0x5F1C, zlib.crc32(model.encode())])
        return float(np.exp(self.sigma * rng.standard_normal()))

    def true_coeffs(self, book: SuikaJob, hw: Hardware) -> Coeffs:
        prior = coeffs_for(book.jm.model, hw)
        return replace(prior, k_comp=prior.k_comp * self.factor(book.jm.model.name))


@dataclass(frozen=True)
class _Truth:
    """What `ElasticPolicy._true_time` reads of a book."""

    job_id: str
    coeffs: Coeffs


@dataclass(frozen=True)
class Estimate:
    """A job's model error at admission: belief and prior vs truth (time, doubling speedup)."""

    err_time: float
    err_speedup: float | None
    prior_err_time: float
    prior_err_speedup: float | None


class MisfitWorld(ElasticPolicy):
    """Mixin (first in the MRO): the simulator's truth uses `misfit`'s coefficients, and each job's
    model error is noted when its book is made (for reports only; no policy reads it)."""

    def __init__(self, *args: Any, misfit: Misfit, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.misfit = misfit
        self.estimates: dict[str, Estimate] = {}

    def _true_time(self, book: Any, plan: Plan, hw: Hardware) -> float:
        return ElasticPolicy._true_time(self, _Truth(book.job_id, self.misfit.true_coeffs(book, hw)), plan, hw)

    def _book(self, job: Any, hw: Hardware) -> SuikaJob:
        new = job.job_id not in self.jobs
        book = super()._book(job, hw)
        if new and job.job_id not in self.estimates:
            self.estimates[job.job_id] = self._estimate(book, hw)
        return book

    def _estimate(self, book: SuikaJob, hw: Hardware) -> Estimate:
        jm, prior, truth = book.jm, coeffs_for(book.jm.model, hw), self.misfit.true_coeffs(book, hw)
        one = layout_plan(list(range(jm.gpus)), jm.pp, jm.dp, jm.tp, prior, hw)
        two = layout_plan(list(range(2 * jm.gpus)), jm.pp, 2 * jm.dp, jm.tp, prior, hw)
        assert one is not None

        def errs(c: Coeffs) -> tuple[float, float | None]:
            t1, t1_true = iteration_time(one, c, hw), iteration_time(one, truth, hw)
            if two is None:
                return abs(t1 / t1_true - 1), None
            s, s_true = t1 / iteration_time(two, c, hw), t1_true / iteration_time(two, truth, hw)
            return abs(t1 / t1_true - 1), abs(s / s_true - 1)

        return Estimate(*errs(book.coeffs), *errs(prior))


class SuikaWorld(MisfitWorld):
    """Suika alone in the misfit world."""


class SuikaExactWorld(MisfitWorld):
    """Reference: Suika that knows the true coefficients from the start."""

    def _book(self, job: Any, hw: Hardware) -> SuikaJob:
        new = job.job_id not in self.jobs
        book = ElasticPolicy._book(self, job, hw)
        if new:
            book.coeffs = self.misfit.true_coeffs(book, hw)
            if job.job_id not in self.estimates:
                self.estimates[job.job_id] = self._estimate(book, hw)
        return book


class SuikaSMWorld(MisfitWorld, SuikaSchedMate):
    """Suika+SchedMate in the misfit world."""


@dataclass(frozen=True)
class SuikaAdapterConfig:
    seeds: tuple[int, ...] = (0, 1, 2)
    arms: tuple[str, ...] = ARMS
    trace: TraceConfig = field(default_factory=section52_trace)  # the reference experiment's trace
    misfit_sigma: float = 0.4
    detection_rate: float = 1.0
    plots: bool = True

    @classmethod
    def quick(cls) -> SuikaAdapterConfig:
        return cls(trace=section52_trace(half=True), plots=False)


def _policy(arm: str, misfit: Misfit, source: Callable[[], Any]) -> MisfitWorld:
    if arm == ALONE:
        return SuikaWorld(SUIKA, misfit=misfit)
    if arm == SM:
        return SuikaSMWorld(source(), SUIKA, misfit=misfit)
    if arm == EXACT:
        policy = SuikaExactWorld(SUIKA, misfit=misfit)
        policy.name = EXACT
        return policy
    raise BadInput(f"unknown arm {arm!r}; choose from {', '.join(ARMS)}")


def _extra(policy: MisfitWorld) -> dict[str, Any]:
    est = policy.estimates
    out: dict[str, Any] = {
        "est_err_time": mean_of([e.err_time for e in est.values()]),
        "est_err_speedup": mean_of([e.err_speedup for e in est.values()]),
        "corrected_share": 0.0,
        "redeploys": policy.run_stats()["redeploys"],
    }
    if isinstance(policy, SuikaSchedMate):
        mine = [est[j] for j in sorted(policy.corrections) if j in est]
        c = policy.counters
        out.update(
            corrected_share=c.corrected / max(1, c.arrivals),
            est_err_time_corrected=mean_of([e.err_time for e in mine]),
            est_err_time_prior_same_jobs=mean_of([e.prior_err_time for e in mine]),
            est_err_speedup_corrected=mean_of([e.err_speedup for e in mine]),
            est_err_speedup_prior_same_jobs=mean_of([e.prior_err_speedup for e in mine]),
            sm=asdict(c),
            source={k: v for k, v in policy.source.stats().items() if isinstance(v, (int, float, str, bool))},
        )
    return out


def run_suika_adapter_experiment(
    out_dir: Path | None,
    *,
    make_source: MakeSource,
    config: SuikaAdapterConfig = SuikaAdapterConfig(),
    progress: Callable[[str], None] | None = None,
) -> ExperimentResult:
    """Every (seed, arm); writes `suika-adapter.json`/`.csv` (and plots) to `out_dir`."""
    cfg = config
    cluster = cluster_for(cfg.trace.num_gpus)
    rows: list[RunRow] = []
    results: dict[str, dict[str, SimResult]] = {}
    trace = f"{cfg.trace.num_jobs}jobs"
    for seed in cfg.seeds:
        specs = generate_trace(cfg.trace, seed)
        misfit = Misfit(cfg.misfit_sigma, seed)
        for arm in cfg.arms:
            def source(specs: Any = specs, seed: int = seed) -> Any:  # this iteration's trace and seed
                return make_source(specs, seed, cfg.detection_rate)

            policy = _policy(arm, misfit, source)
            result = simulate(specs, cluster, policy, SimConfig(seed=seed, restart_cost=0.0, restart_cost_large=0.0))
            summary = summarize(result)
            extra = _extra(policy)
            rows.append(RunRow(trace, arm, seed, cluster.total_gpus, summary, extra))
            if cfg.plots:
                results.setdefault(f"{trace}/seed{seed}", {})[arm] = result
            if progress is not None:
                progress(f"seed {seed} {arm:12s} mean JCT {summary.mean_jct / 3600:6.3f} h  "
                         f"corrected {extra['corrected_share']:.2f}  err_time {extra['est_err_time']:.3f}  "
                         f"err_speedup {extra['est_err_speedup']:.3f}")
    comparison = compare(rows, ALONE, SM)
    line = summary_line(comparison, cfg)
    details = {"suika_vs_suika_sm": comparison, "suika_vs_exact": compare(rows, ALONE, EXACT), "summary": line}
    files: list[Path] = []
    if out_dir is not None:
        files = write_experiment(out_dir, "suika-adapter", rows, config=asdict(cfg), details=details,
                                 results=results or None)
    return ExperimentResult("suika-adapter", out_dir, rows, aggregate(rows), files, line, details)


def compare(rows: Sequence[RunRow], base: str, arm: str) -> dict[str, dict[str, float]]:
    """Seed means of JCT (both arms, change) and of the model errors."""
    return compare_arms(rows, base, arm, both=("est_err_time", "est_err_speedup"),
                        arm_only=("corrected_share", "est_err_time_corrected", "est_err_time_prior_same_jobs",
                                  "est_err_speedup_corrected", "est_err_speedup_prior_same_jobs"))



def summary_line(comparison: dict[str, dict[str, float]], cfg: SuikaAdapterConfig) -> str:
    parts = [f"{t}: mean JCT {c[f'{ALONE}_mean_jct_h']:.3f} h -> {c[f'{SM}_mean_jct_h']:.3f} h "
             f"({100 * c['jct_change']:+.1f}%, better on {c['seeds_better']:.0f}/{c['seeds']:.0f} seeds), "
             f"corrected {100 * c['corrected_share']:.0f}% of jobs; on those, iteration-time error "
             f"{c['est_err_time_prior_same_jobs']:.3f} (prior) -> {c['est_err_time_corrected']:.3f}, "
             f"doubling-speedup error {c['est_err_speedup_prior_same_jobs']:.3f} -> {c['est_err_speedup_corrected']:.3f}"
             for t, c in comparison.items()]
    return (f"Suika+SM vs Suika ({len(cfg.seeds)} seeds, model misfit sigma {cfg.misfit_sigma:g}): " + "; ".join(parts))
