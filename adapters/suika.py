"""Suika+SchedMate (issue 12, item 5): a measured correction for a new job's iteration-time model.

Suika plans every expansion with its analytic iteration-time model (`suika.model`): compute
`k_comp` from the model's shape at an assumed MFU, communication from bandwidths. A job's real
code rarely runs at the assumed MFU, and the error changes which expansions pay (the split
between compute and communication sets the marginal benefit B of added GPUs).
`SuikaSchedMate(source)` asks the Scheduling Advisor at arrival (`InsightSource.advise`); when the
advisor's similar jobs include finished jobs of this run that declared the same model (catalogue
name: what the user submits, never an outcome) and whose iteration time the adapter measured,
the new job's `k_comp` is the prior's times the geometric mean of their corrections. Otherwise
(None, no match, nothing measured) the prior stands, so with a source that knows nothing the run
is Suika's, decision for decision.

**Measurement.** When a job finishes, its iteration time on the plan it ran is what its log
shows (`_true_time`, times a per-job tracker noise `tracker_sigma`); the correction is the factor
s on the prior's `k_comp` that reproduces it (bisection: iteration time grows with `k_comp`). It
enters the policy only for later jobs the advisor matched.

**Truth stays put.** `ElasticPolicy._true_time` reads the simulator's truth from `book.coeffs`,
which is also the belief. The adapter changes the belief only, so it hands `_true_time` the prior
coefficients (a world that defines its own truth, as the experiment's does, overrides
`_true_time` before this class and never reads `book.coeffs`). Suika would need truth and belief
separated in `schedulers/suika` (a `true_coeffs` hook) to drop this shim.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from schedmate.adapters.insights import AdvisorInsight, InsightSource
from schedmate.adapters.registry import PolicyAdapter, PolicyWorld, homogeneous_world
from schedmate.schedulers.job import JobSpec, JobState, Phase
from schedmate.schedulers.policy import ClusterView, Policy
from schedmate.schedulers.suika.config import SUIKA, ElasticConfig
from schedmate.schedulers.suika.model import Coeffs, Hardware, Plan, iteration_time, layout_plan, throughput
from schedmate.schedulers.suika.policy import ElasticPolicy, SuikaJob

if TYPE_CHECKING:
    from schedmate.schedulers.cluster import ClusterSpec
    from schedmate.schedulers.engine import SimConfig, SimResult

__all__ = ["ADAPTER", "TRACKER_SIGMA", "Correction", "SuikaSMCounters", "SuikaSchedMate", "declared_models", "fit_kcomp"]

TRACKER_SIGMA = 0.03


@dataclass(frozen=True)
class Correction:
    """A finished job's measured correction of `k_comp`, and the model it declared."""

    model: str
    factor: float


@dataclass(frozen=True)
class _Prior:
    """What `ElasticPolicy._true_time` reads of a book: its id and (prior) coefficients."""

    job_id: str
    coeffs: Coeffs


@dataclass
class SuikaSMCounters:
    arrivals: int = 0
    advised: int = 0
    matched: int = 0
    measured_matches: int = 0  # matches with a measurement of the same declared model
    corrected: int = 0  # the job's model starts from the measured correction
    fallback: int = 0  # the prior stands
    measured: int = 0  # finished jobs whose correction was recorded
    advisor_seconds: float = 0.0


def fit_kcomp(plan: Plan, prior: Coeffs, hw: Hardware, measured_s: float) -> float:
    """The factor s with iteration_time(plan, prior with k_comp·s) = measured_s (in [1/16, 16])."""
    lo, hi = math.log(1 / 16), math.log(16)
    for _ in range(40):
        mid = (lo + hi) / 2
        t = iteration_time(plan, replace(prior, k_comp=prior.k_comp * math.exp(mid)), hw)
        lo, hi = (mid, hi) if t < measured_s else (lo, mid)
    return math.exp((lo + hi) / 2)


class SuikaSchedMate(ElasticPolicy):
    """Suika (or another arm of its family) with measured corrections from similar jobs."""

    def __init__(self, source: InsightSource, config: ElasticConfig = SUIKA, *, tracker_sigma: float = TRACKER_SIGMA,
                 **overrides: Any) -> None:
        super().__init__(config, **overrides)
        self.name = f"{self.config.name}+sm"
        self.source = source
        self.tracker_sigma = tracker_sigma
        self.counters = SuikaSMCounters()
        self.history: dict[str, Correction] = {}  # finished jobs of this run, by id
        self.corrections: dict[str, float] = {}  # job id -> factor applied (bootstrapped jobs)
        self._advice: dict[str, AdvisorInsight | None] = {}
        self._prior: dict[str, Coeffs] = {}

    def on_arrival(self, job: JobState, view: ClusterView) -> None:
        if job.job_id in self._advice or job.job_id in self.jobs:
            return
        c = self.counters
        c.arrivals += 1
        insight = self.source.advise(job)
        c.advised += insight is not None
        c.matched += insight is not None and insight.matched
        c.advisor_seconds += insight.latency_s if insight is not None else 0.0
        self._advice[job.job_id] = insight
        self.source.record(job, finished=False)

    def _book(self, job: JobState, hw: Hardware) -> SuikaJob:
        new = job.job_id not in self.jobs
        book = super()._book(job, hw)
        if new:
            self._prior[job.job_id] = book.coeffs
            self._correct(book, hw)
        return book

    def _correct(self, book: SuikaJob, hw: Hardware) -> None:
        c = self.counters
        insight = self._advice.get(book.job_id)
        ids = insight.similar_ids if insight is not None else ()
        name = book.jm.model.name
        factors = [self.history[i].factor for i in ids if i in self.history and self.history[i].model == name]
        c.measured_matches += bool(factors)
        if not factors:
            c.fallback += 1
            return
        s = float(np.exp(np.mean(np.log(factors))))
        book.coeffs = replace(book.coeffs, k_comp=book.coeffs.k_comp * s)
        fresh = layout_plan(list(range(book.jm.gpus)), book.jm.pp, book.jm.dp, book.jm.tp, book.coeffs, hw)
        if fresh is not None:
            book.t_default = throughput(fresh, book.coeffs, hw)
        self.corrections[book.job_id] = s
        c.corrected += 1

    def _true_time(self, book: Any, plan: Plan, hw: Hardware) -> float:
        prior = self._prior.get(book.job_id, book.coeffs)
        return super()._true_time(_Prior(book.job_id, prior), plan, hw)

    def on_finish(self, job: JobState, view: ClusterView) -> None:
        book = self.jobs.get(job.job_id)
        prior = self._prior.get(job.job_id)
        if book is not None and book.plan is not None and prior is not None and job.phase is Phase.COMPLETED:
            hw = self._hardware(view.cluster)
            digest = hashlib.blake2b(f"tracker|{job.job_id}".encode(), digest_size=8).digest()
            noise = float(np.exp(self.tracker_sigma * np.random.default_rng(int.from_bytes(digest, "little")).standard_normal()))
            measured = self._true_time(book, book.plan, hw) * noise
            self.history[job.job_id] = Correction(book.jm.model.name, fit_kcomp(book.plan, prior, hw, measured))
            self.counters.measured += 1
        self._prior.pop(job.job_id, None)  # the base drops the book too; a resubmission rebuilds both
        super().on_finish(job, view)
        if job.end_time is not None:
            self._advice.pop(job.job_id, None)
            self.source.record(job, finished=True)

    def run_stats(self) -> dict[str, Any]:
        return {**super().run_stats(), "schedmate": asdict(self.counters)}


# ------------------------------------------------------------------ the generic adapter arm

SUIKA_GPUS = 64  # Suika's Cluster-A: one rack of 8 H100 nodes


def _simulate(specs: Sequence[JobSpec], cluster: ClusterSpec, policy: Policy, config: SimConfig) -> SimResult:
    """The engine with no restart cost of its own: Suika charges its redeployments (§3.9)."""
    from schedmate.schedulers.engine import simulate

    return simulate(specs, cluster, policy, replace(config, restart_cost=0.0, restart_cost_large=0.0))


def declared_models(jobs: Sequence[JobSpec], seed: int, gpus: int) -> PolicyWorld:
    """Suika's world attribute: each job declares the largest catalogue model whose default plan
    fits its GPU request (`schedulers.suika.workload.prepare`: its GPU count, never its outcome), on
    Suika's 64-GPU H100 rack (`gpus` is not used). Truth is the prior's model: the generic arm has
    no per-model misfit (the Suika case study's `--misfit-sigma`), so there is nothing to correct."""
    from schedmate.schedulers.suika.timing import cluster_for
    from schedmate.schedulers.suika.workload import prepare

    base = homogeneous_world(jobs, seed, SUIKA_GPUS)
    return PolicyWorld(prepare(base.jobs), cluster_for(SUIKA_GPUS), simulate=_simulate)


ADAPTER = PolicyAdapter(policy="suika", adapter=SuikaSchedMate, world=declared_models)
