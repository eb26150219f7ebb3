"""Ares (elastic fair queuing) on the engine, and the allocator-driven policy it shares with its
comparison baselines (spec §3.3–§3.5, §8).

`AllocationPolicy` turns "how many GPUs each active job should hold" into engine decisions: every
`round_s` seconds (60 s, the paper's setting for Ares) it recomputes the allocation only if a job
arrived or finished since the last one (`every_round` policies such as SRTF recompute at every
round), then preempts, shrinks, and finally grows or starts jobs in ascending order of size (§3.6).
An unchanged count costs nothing; any other change pays the engine's restart cost (`Resize`
keeps progress, a preempted job resumes from it). GPUs freed inside a round stay idle until the
next boundary, as in the artifact; `round_s = 0` reacts at the event instead.

A job's true speed comes from its `ScalingCurve` in `spec.attributes[CURVE_KEY]` (fixed global
batch: the work left does not change on a resize, only the speed, `curve.speed(n, d)`); a job
without one is rigid (no speed-up beyond its demand). What Ares *knows* goes through two hooks an
adapter may override: `scaling_profile` (default: the same curve, as the paper profiles every job)
and `estimate_gpu_time` (default `spec.attributes["est_gpu_time"]`, else the trace's GPU-time,
the paper's accurate-estimate assumption).

Departures from the spec, both from the engine: the restart cost is not charged on a job's first
start (§7.11 charges it); placement uses the engine's placer (Consolidate: best-fit node, else the
fewest nodes) rather than §3.6's "most free node first", which matters only for topology-aware
speed models.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..decisions import Decision
from ..job import JobState, Phase, Placement
from ..policy import ClusterView, Plan, Policy
from .baselines import efs_allocate, fifo_allocate, las_allocate, optimus_allocate, srtf_allocate
from .config import DEFAULT_ALPHA, DEFAULT_ROUND_S, AresConfig
from .elastic import Contender, ares_allocate, fill_target, scale_cap
from .fairness import FluidJob, ScalingGps
from .scaling import ScalingCurve, linear_curve
from .virtual_time import VirtualClock

__all__ = [
    "CURVE_KEY",
    "EST_KEY",
    "AllocationPolicy",
    "Ares",
    "AresJob",
    "EfsInt",
    "FifoRigid",
    "LasRigid",
    "OptimusLike",
    "SrtfRigid",
    "job_curve",
]

CURVE_KEY = "scaling_curve"  # spec.attributes: the job's ScalingCurve (trace/profile input)
EST_KEY = "est_gpu_time"  # spec.attributes: estimated GPU·s at the demanded DoP

Allocator = Callable[[Sequence[Contender], int], dict[str, int]]


def job_curve(job: JobState) -> ScalingCurve:
    """The job's scaling curve from its spec; rigid (flat beyond the demand) when absent."""
    curve = job.spec.attributes.get(CURVE_KEY)
    return curve if isinstance(curve, ScalingCurve) else linear_curve(job.spec.num_gpus)


@dataclass(slots=True)
class AresJob:
    """What the policy keeps per job (typed, inside the policy)."""

    curve: ScalingCurve
    vft: float = 0.0
    cap: int = 1
    fill_target: int = 1
    size: float = 0.0  # GPU·s used by the clock
    unknown_size: bool = False


@dataclass
class AllocationStats:
    decisions: int = 0  # allocation passes computed
    rounds: int = 0  # rounds seen (computed or cached)
    decision_seconds: float = 0.0
    max_decision_seconds: float = 0.0
    changes: int = 0  # allocation changes applied (starts, resizes, preemptions)
    unplaced: int = 0  # changes the placer could not satisfy this round
    per_decision: list[tuple[int, float]] = field(default_factory=list)  # (active jobs, seconds)


class AllocationPolicy(Policy):
    """Run an allocator (active jobs → GPU counts) on the engine, in rounds."""

    name = "allocation"
    every_round = False  # recompute at every round, not only when the active set changed

    def __init__(self, allocator: Allocator | None = None, *, round_s: float = DEFAULT_ROUND_S, name: str | None = None):
        if round_s < 0:
            raise ValueError(f"round_s must be >= 0, got {round_s}")
        self._allocator = allocator
        self.round_s = round_s
        self.round_interval = round_s if round_s > 0 else None
        if name is not None:
            self.name = name
        self.jobs: dict[str, AresJob] = {}
        self.stats = AllocationStats()
        self._dirty = False
        self._own_stops: set[str] = set()  # jobs this round's decisions preempt (their requeue is planned)

    # ------------------------------------------------------------------ capabilities
    def throughput(self, job: JobState, placement: Placement, view: ClusterView) -> float:
        """True speed at a fixed global batch: the curve's speed-up over the demand, on the
        slowest GPU type of the placement (the engine's own speed for a job without a curve)."""
        if not isinstance(job.spec.attributes.get(CURVE_KEY), ScalingCurve):
            return view.base_speed(job, placement)
        n = sum(k for _, k in placement)
        cluster = view.cluster
        type_speed = min(cluster.speed_of(cluster.nodes[i].gpu_type) for i, _ in placement)
        return job_curve(job).speed(n, job.spec.num_gpus) * type_speed

    def run_stats(self) -> dict[str, Any]:
        s = self.stats
        return {
            "decisions": s.decisions,
            "rounds": s.rounds,
            "decision_seconds": s.decision_seconds,
            "max_decision_seconds": s.max_decision_seconds,
            "mean_decision_seconds": s.decision_seconds / s.decisions if s.decisions else 0.0,
            "changes": s.changes,
            "unplaced": s.unplaced,
        }

    # ------------------------------------------------------------------ hooks
    def admit_job(self, job: JobState, view: ClusterView) -> AresJob:
        """Per-job state at arrival (Ares adds its virtual finish time and caps)."""
        curve = job_curve(job)
        return AresJob(curve, cap=job.spec.num_gpus, fill_target=job.spec.num_gpus)

    def allocate(self, jobs: Sequence[Contender], gpus: int) -> dict[str, int]:
        if self._allocator is None:
            raise NotImplementedError(f"{type(self).__name__} needs an allocator")
        return self._allocator(jobs, gpus)

    def on_arrival(self, job: JobState, view: ClusterView) -> None:
        if job.job_id not in self.jobs:  # a resubmitted job keeps its state (and Ares its F)
            self.jobs[job.job_id] = self.admit_job(job, view)
        self._dirty = True

    def on_finish(self, job: JobState, view: ClusterView) -> None:
        if job.end_time is not None:  # really over (a failed attempt awaiting resubmission is not)
            self.jobs.pop(job.job_id, None)
        self._dirty = True

    def on_requeue(self, job: JobState, view: ClusterView) -> None:
        if job.job_id not in self._own_stops:  # a failure or eviction freed GPUs the pass did not plan
            self._dirty = True

    def optimize(self, view: ClusterView) -> Sequence[Decision]:
        self.stats.rounds += 1
        return self._decide(view)

    def schedule(self, view: ClusterView) -> Sequence[Decision]:
        # Event-driven without rounds; with rounds, only an arrival that lands exactly on a boundary
        # while no round was pending (an idle cluster, e.g. t = 0) is decided here.
        if self.round_interval and not _on_boundary(view.now, self.round_interval):
            return ()
        return self._decide(view)

    # ------------------------------------------------------------------ decisions
    def _decide(self, view: ClusterView) -> Sequence[Decision]:
        if not (self._dirty or self.every_round):
            return ()
        self._dirty = False
        started = time.perf_counter()
        active = [*view.running(), *view.waiting()]
        contenders = [self._contender(j, view) for j in active if j.job_id in self.jobs]
        usable = int(view.cluster.capacity()[~view.cordoned].sum())
        alloc = self.allocate(contenders, usable)
        decisions = self._apply(view, active, alloc)
        spent = time.perf_counter() - started
        s = self.stats
        s.decisions += 1
        s.decision_seconds += spent
        s.max_decision_seconds = max(s.max_decision_seconds, spent)
        s.per_decision.append((len(contenders), spent))
        return decisions

    def _contender(self, job: JobState, view: ClusterView) -> Contender:
        st = self.jobs[job.job_id]
        running = job.phase in (Phase.RUNNING, Phase.PROFILING)
        return Contender(
            job_id=job.job_id,
            arrival=job.spec.submit_time,
            demand=job.spec.num_gpus,
            curve=st.curve,
            vft=st.vft,
            cap=st.cap,
            fill_target=st.fill_target,
            remaining=view.remaining(job),
            attained=view.attained_gpu_time(job),
            current=job.num_gpus if running else 0,
            unit=job.spec.plan.model_parallel if job.spec.plan is not None else 1,
        )

    def _apply(self, view: ClusterView, active: Sequence[JobState], alloc: dict[str, int]) -> list[Decision]:
        plan = view.plan()
        now = {j.job_id: (j.num_gpus if j.phase in (Phase.RUNNING, Phase.PROFILING) else 0) for j in active}
        stops = [j for j in active if now[j.job_id] > 0 and alloc.get(j.job_id, 0) == 0]
        shrinks = [j for j in active if 0 < alloc.get(j.job_id, 0) < now[j.job_id]]
        grows = sorted(
            (j for j in active if alloc.get(j.job_id, 0) > now[j.job_id]),
            key=lambda j: (alloc[j.job_id], j.job_id),
        )
        self._own_stops = {j.job_id for j in stops}
        for j in stops:
            plan.preempt(j)
        for j in [*shrinks, *grows]:
            n = alloc[j.job_id]
            if not self._place(plan, j, n, now[j.job_id]):
                self.stats.unplaced += 1
        self.stats.changes += len(plan.decisions)
        return plan.decisions

    @staticmethod
    def _place(plan: Plan, job: JobState, n: int, held: int) -> bool:
        """Start or resize to `n`; if the job's eligible GPUs cannot hold `n`, to as many as they can."""
        if (plan.try_resize(job, n) if held else plan.try_start(job, n)):
            return True
        mask = plan.view.cluster.eligible_mask(job.spec.gpu_types, job.spec.vc) & plan.usable
        unit = job.spec.plan.model_parallel if job.spec.plan is not None else 1
        fit = min(n, int(plan.free[mask].sum()) + held)
        fit -= fit % unit
        if fit < 1 or fit == held or fit >= n:
            return False
        return plan.try_resize(job, fit) if held else plan.try_start(job, fit)


def _on_boundary(t: float, period: float) -> bool:
    k = round(t / period)
    return abs(t - k * period) <= 1e-9 * max(1.0, abs(t))


class Ares(AllocationPolicy):
    """Elastic fair queuing: earliest virtual finish first, bounded elastic scale-out (spec §3)."""

    name = "ares"

    def __init__(self, config: AresConfig | None = None, **options: Any) -> None:
        cfg = replace(config or AresConfig(), **options) if options else (config or AresConfig())
        super().__init__(round_s=cfg.round_s)
        self.config = cfg
        self._clock: VirtualClock | None = None
        self._gps: ScalingGps | None = None
        self.unknown_sizes = 0  # jobs admitted without a size estimate (served after every known job)

    # hooks an adapter may override -------------------------------------------------------
    def scaling_profile(self, job: JobState, view: ClusterView) -> ScalingCurve:
        """The curve Ares plans with (the paper profiles powers of two; here the job's own)."""
        return job_curve(job)

    def estimate_gpu_time(self, job: JobState, view: ClusterView) -> float | None:
        """L̂_j in GPU·s at the demanded DoP; None = unknown (served after every known job)."""
        est = job.spec.attributes.get(EST_KEY)
        return float(est) if est is not None else job.spec.num_gpus * job.spec.duration

    # -----------------------------------------------------------------------------------------
    def admit_job(self, job: JobState, view: ClusterView) -> AresJob:
        cfg = self.config
        gpus = view.cluster.total_gpus
        mask = view.cluster.eligible_mask(job.spec.gpu_types, job.spec.vc)
        limit = int(view.cluster.capacity()[mask].sum())  # a job restricted to some GPU types caps there
        if self._clock is None:
            self._clock = VirtualClock(gpus)
        curve = self.scaling_profile(job, view)
        d = job.spec.num_gpus
        cap = scale_cap(curve, d, cfg.alpha, limit, cfg.efficiency_baseline)
        est = self.estimate_gpu_time(job, view)
        st = AresJob(curve, cap=cap, fill_target=fill_target(curve, cap, limit))
        if est is None or not est > 0:
            st.unknown_size, st.vft = True, math.inf
            self.unknown_sizes += 1
            return st
        st.size = est if cfg.size_basis == "demand" else est / d * curve.thr(d) / curve.thr(1)
        if cfg.priority_reference == "scaling_gps":
            if self._gps is None:
                self._gps = ScalingGps(gpus)
            predicted = self._gps.arrive(FluidJob(job.job_id, job.spec.submit_time, d, est / d, curve), job.spec.submit_time)
            for job_id, f in predicted.items():  # jobs already out of the GPS keep their last F
                if job_id in self.jobs:
                    self.jobs[job_id].vft = f
            st.vft = predicted.get(job.job_id, job.spec.submit_time)
        else:
            st.vft = self._clock.arrive(job.job_id, job.spec.submit_time, st.size)
        return st

    def allocate(self, jobs: Sequence[Contender], gpus: int) -> dict[str, int]:
        return ares_allocate(jobs, gpus, allow_shrink=self.config.allow_shrink, fill_leftover=self.config.fill_leftover)

    def run_stats(self) -> dict[str, Any]:
        return {**super().run_stats(), "unknown_size": self.unknown_sizes}


class EfsInt(AllocationPolicy):
    """Pollux stand-in: elastic instantaneous fair share in whole GPUs, up to each α-cap."""

    name = "efs-int"

    def __init__(self, *, alpha: float = DEFAULT_ALPHA, round_s: float = DEFAULT_ROUND_S) -> None:
        super().__init__(efs_allocate, round_s=round_s)
        self.alpha = alpha

    def admit_job(self, job: JobState, view: ClusterView) -> AresJob:
        curve = job_curve(job)
        cap = scale_cap(curve, job.spec.num_gpus, self.alpha, view.cluster.total_gpus)
        return AresJob(curve, cap=cap, fill_target=cap)


class OptimusLike(AllocationPolicy):
    name = "optimus"
    every_round = True

    def __init__(self, *, round_s: float = DEFAULT_ROUND_S) -> None:
        super().__init__(optimus_allocate, round_s=round_s)


class FifoRigid(AllocationPolicy):
    name = "fifo-rigid"

    def __init__(self, *, round_s: float = DEFAULT_ROUND_S) -> None:
        super().__init__(fifo_allocate, round_s=round_s)


class SrtfRigid(AllocationPolicy):
    name = "srtf-rigid"
    every_round = True

    def __init__(self, *, round_s: float = DEFAULT_ROUND_S) -> None:
        super().__init__(srtf_allocate, round_s=round_s)


class LasRigid(AllocationPolicy):
    name = "las-rigid"
    every_round = True

    def __init__(self, *, round_s: float = DEFAULT_ROUND_S) -> None:
        super().__init__(las_allocate, round_s=round_s)
