"""Event-driven cluster simulator: time jumps to the next event, never ticks.

Events are job arrivals (a sorted list), job ends (a heap with versioned entries: a job whose
speed changes gets a new entry and the old one is dropped as stale), policy wake-ups, periodic
optimisation rounds and progress reports. After each batch of simultaneous events the policy's
`schedule` runs once; its decisions are validated and applied in order. Everything is
deterministic: ties break on a sequence number, and the only randomness is `rng`, seeded.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time as wallclock
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .cluster import ClusterSpec
from .decisions import (
    Colocate,
    Cordon,
    Decision,
    Evict,
    InvalidDecision,
    Migrate,
    Preempt,
    Refresh,
    Resize,
    Start,
    Uncordon,
)
from .interference import ConstantInterference, InterferenceModel
from .job import FinalStatus, JobSpec, JobState, ParallelPlan, Phase, Placement
from .placement import Consolidate, Placer
from .policy import ClusterView, Policy

_END, _WAKE, _ROUND, _PROGRESS, _RESUBMIT = 0, 1, 2, 3, 4
REJECTED = "rejected by the policy at admission"
_EPS = 1e-6

Scaling = Callable[[JobSpec, int], float]
"""Relative speed of a job on n GPUs (1.0 at its requested count)."""

Throughput = Callable[[JobState, ClusterSpec], float]
"""Speed of a job on its current placement, in work-seconds per second (1.0 = the trace's pace).

A caller's override of the policy's own model (`Policy.throughput`), e.g. to replay every policy
under one true speed model. Co-location factors still apply on top.
"""


def linear_scaling(spec: JobSpec, n: int) -> float:
    return n / spec.num_gpus


@dataclass(frozen=True)
class SimConfig:
    """Engine settings. Restart cost applies to every restart (preemption, resize, migration,
    resubmission after failure): the policy's `Policy.restart_cost`, else the job's
    `attributes["restart_cost"]`, else 40 s for jobs up to `large_job_gpus` GPUs, 60 s above.
    `charge_first_launch` charges it on a job's first launch too (a policy whose launch costs a
    plan search or a checkpoint load, as Arena's and Ares'); off, a first launch is free."""

    seed: int = 0
    restart_cost: float = 40.0
    restart_cost_large: float = 60.0
    large_job_gpus: int = 8
    charge_first_launch: bool = False
    checkpoint_interval: float | None = None  # periodic checkpoints (work-seconds); None: only on preemption
    # A failed job its policy does not resume: None ends it as failed; a delay D means the user
    # resubmits it D seconds later from its last checkpoint, as a new arrival (the policy sees
    # `on_finish` for the failed attempt, phase FAILED, then `on_arrival` again; JCT counts from
    # the first submit).
    resubmit_delay: float | None = None
    max_time: float | None = None
    record_timeline: bool = True


class SimulationStalled(RuntimeError):
    """Jobs wait, nothing runs and no event is pending: the policy will never start them."""


@dataclass
class SimResult:
    policy: str
    jobs: list[JobState]
    cluster: ClusterSpec
    end_time: float
    events: int
    wall_seconds: float
    timeline: np.ndarray  # rows: time, busy GPUs, running jobs, waiting jobs
    active_integral: np.ndarray  # rows: time, ∫ active jobs dt (for finish-time fairness)
    busy_gpu_seconds: float
    # counters of the world the run happened in, where it keeps any (a failure world's faults and
    # cordons: `sim.failures`); empty for the plain engine
    world_stats: dict[str, float] = field(default_factory=dict)


class Simulator:
    def __init__(
        self,
        jobs: Iterable[JobSpec],
        cluster: ClusterSpec,
        policy: Policy,
        config: SimConfig | None = None,
        *,
        placer: Placer | None = None,
        interference: InterferenceModel | None = None,
        scaling: Scaling = linear_scaling,
        throughput: Throughput | None = None,
        report: Callable[[int, int], None] | None = None,
    ) -> None:
        self.cluster = cluster
        self.policy = policy
        self.config = config or SimConfig()
        self.placer = placer or Consolidate()
        self.interference = interference or ConstantInterference()
        self.scaling = scaling
        # Speeds come from the policy's declared model (`Policy.throughput`) unless overridden here.
        self.throughput = throughput
        # Shortcut, same numbers: a policy that keeps the default model skips two calls per speed.
        self._default_speed = type(policy).throughput is Policy.throughput
        self._default_cost = type(policy).restart_cost is Policy.restart_cost
        self._report = report  # called as (jobs ended, jobs total) every 1% of jobs
        specs = sorted(jobs, key=lambda s: (s.submit_time, s.job_id))
        self.jobs: dict[str, JobState] = {}
        for spec in specs:
            if spec.job_id in self.jobs:
                raise ValueError(f"duplicate job id {spec.job_id!r}")
            self.jobs[spec.job_id] = JobState(spec)
        self._arrivals = list(self.jobs.values())
        self.free = cluster.capacity().copy()
        self.free_total = int(self.free.sum())
        self.cordoned = np.zeros(len(cluster.nodes), dtype=bool)
        self.waiting: dict[str, JobState] = {}
        self.running: dict[str, JobState] = {}
        self.now = 0.0
        self.rng = np.random.default_rng(self.config.seed)
        self.view = ClusterView(self)
        self._heap: list[tuple[float, int, int, str | None, int]] = []
        self._seq = itertools.count()
        self._coloc: dict[str, float] = {}
        self._eligible_gpus: dict[tuple[tuple[str, ...] | None, str | None], int] = {}  # per (gpu types, vc)
        self._round_pending = False
        self._progress_pending = False
        self._wake_times: set[float] = set()
        self._done = 0
        self.events = 0
        self._timeline: list[tuple[float, int, int, int]] = []
        self._active_int: list[tuple[float, float]] = [(0.0, 0.0)]
        self._busy_gpu_seconds = 0.0
        self._active_acc = 0.0
        self._last_clock = 0.0

    # ---------------------------------------------------------------- public
    def request_wakeup(self, t: float) -> None:
        t = max(t, self.now)
        if t not in self._wake_times:
            self._wake_times.add(t)
            heapq.heappush(self._heap, (t, _WAKE, next(self._seq), None, 0))

    def run(self) -> SimResult:
        started = wallclock.perf_counter()
        arrivals, n_jobs = self._arrivals, len(self._arrivals)
        ai = 0
        heap = self._heap
        max_time = self.config.max_time
        while self._done < n_jobs:
            t_arr = arrivals[ai].spec.submit_time if ai < n_jobs else math.inf
            t_evt = heap[0][0] if heap else math.inf
            t = min(t_arr, t_evt)
            if t == math.inf:
                self._stalled()
            if max_time is not None and t > max_time:
                self._clock(max_time)
                break
            self._clock(t)
            changed = False
            do_round = False
            while heap and heap[0][0] <= t and heap[0][1] == _END:
                _, _, _, job_id, version = heapq.heappop(heap)
                assert job_id is not None  # an end event names its job
                changed |= self._on_end(self.jobs[job_id], version)
            while ai < n_jobs and arrivals[ai].spec.submit_time <= t:
                self._on_arrival(arrivals[ai])
                ai += 1
                changed = True
            while heap and heap[0][0] <= t and heap[0][1] != _END:
                _, kind, _, job_id, _ = heapq.heappop(heap)
                self.events += 1
                if kind == _RESUBMIT:
                    assert job_id is not None  # a resubmission names its job
                    self._on_resubmit(self.jobs[job_id])
                    changed = True
                elif kind == _WAKE:
                    self._wake_times.discard(t)
                    changed = True
                elif kind == _ROUND:
                    self._round_pending = False
                    do_round = bool(self.running or self.waiting)  # rounds run only while jobs are active
                elif kind == _PROGRESS:
                    self._progress_pending = False
                    for job in list(self.running.values()):
                        self.policy.on_progress(job, self.view)
                    changed = True
            applied = 0
            if do_round:
                applied += self._apply(self.policy.optimize(self.view))
            if changed or do_round:
                applied += self._apply(self.policy.schedule(self.view))
            if do_round and not applied and self._idle_forever(ai == n_jobs):
                self._stalled()  # every later round would see this same state: it would loop forever
            self._arm_periodic()
            self._record()
        return SimResult(
            policy=self.policy.name,
            jobs=list(self.jobs.values()),
            cluster=self.cluster,
            end_time=self.now,
            events=self.events,
            wall_seconds=wallclock.perf_counter() - started,
            timeline=np.array(self._timeline, dtype=float).reshape(-1, 4),
            active_integral=np.array(self._active_int, dtype=float).reshape(-1, 2),
            busy_gpu_seconds=self._busy_gpu_seconds,
        )

    # ---------------------------------------------------------------- clock and records
    def _clock(self, t: float) -> None:
        dt = t - self._last_clock
        if dt > 0:
            self._busy_gpu_seconds += (self.cluster.total_gpus - self.free_total) * dt
            self._active_acc += (len(self.running) + len(self.waiting)) * dt
            self._active_int.append((t, self._active_acc))
            self._last_clock = t
        self.now = t

    def _record(self) -> None:
        if self.config.record_timeline:
            point = (self.now, self.cluster.total_gpus - self.free_total, len(self.running), len(self.waiting))
            if self._timeline and self._timeline[-1][0] == self.now:
                self._timeline[-1] = point
            else:
                self._timeline.append(point)

    def _arm_periodic(self) -> None:
        active = bool(self.running or self.waiting)
        if not active:
            return
        ri = self.policy.round_interval
        if ri and not self._round_pending:
            nxt = (math.floor(self.now / ri) + 1) * ri
            heapq.heappush(self._heap, (nxt, _ROUND, next(self._seq), None, 0))
            self._round_pending = True
        pi = self.policy.progress_interval
        if pi and self.running and not self._progress_pending:
            heapq.heappush(self._heap, (self.now + pi, _PROGRESS, next(self._seq), None, 0))
            self._progress_pending = True

    def _idle_forever(self, no_arrivals: bool) -> bool:
        """Jobs wait, none runs, none will arrive and no wake-up is pending: only rounds remain."""
        return (
            no_arrivals
            and bool(self.waiting)
            and not self.running
            and not any(kind in (_WAKE, _RESUBMIT) for _, kind, _, _, _ in self._heap)
        )

    def _stalled(self) -> None:
        stuck = list(self.waiting)[:5]
        raise SimulationStalled(
            f"policy {self.policy.name!r} left {len(self.waiting)} job(s) waiting with free GPUs "
            f"{self.free_total} and nothing running or pending (first: {stuck})"
        )

    # ---------------------------------------------------------------- job progress
    def _advance(self, job: JobState) -> None:
        now = self.now
        dt = now - job.last_update
        if dt > 0:
            begin = job.last_update if job.last_update > job.overhead_until else job.overhead_until
            if now > begin:
                job.progress += job.speed * (now - begin)
            job.run_time += dt
            job.attained_gpu_time += job.num_gpus * dt
            job.last_update = now

    def base_speed(self, spec: JobSpec, placement: Placement) -> float:
        """Placement-blind speed: `scaling` at the GPU count times the slowest GPU type's speed."""
        type_speed = min(self.cluster.speed_of(self.cluster.nodes[n].gpu_type) for n, _ in placement)
        return self.scaling(spec, sum(k for _, k in placement)) * type_speed

    def _speed(self, job: JobState) -> float:
        if self.throughput is not None:
            speed = self.throughput(job, self.cluster)
        elif self._default_speed:
            speed = self.base_speed(job.spec, job.placement)
        else:
            speed = self.policy.throughput(job, job.placement, self.view)
        return speed * self._coloc.get(job.spec.job_id, 1.0)

    def _schedule_end(self, job: JobState) -> None:
        job.version += 1
        if job.speed <= 0:
            return
        begin = max(self.now, job.overhead_until)
        t_end = begin + job.remaining / job.speed
        heapq.heappush(self._heap, (t_end, _END, next(self._seq), job.job_id, job.version))

    def _respeed(self, job: JobState) -> None:
        self._advance(job)
        job.speed = self._speed(job)
        self._note_speed(job, max(self.now, job.overhead_until))
        self._schedule_end(job)

    @staticmethod
    def _note_speed(job: JobState, t: float) -> None:
        """Append to the job's speed history (what a log written by the job would show)."""
        log = job.speed_log
        if log and log[-1][1] == job.speed:
            return
        if log and t < log[-1][0]:  # a change during restart cost: applies once it is over
            log[-1] = (log[-1][0], job.speed, log[-1][2])
            return
        log.append((t, job.speed, job.progress))

    def _restart_cost(self, job: JobState, num_gpus: int) -> float:
        """The policy's cost (`Policy.restart_cost`), else the engine's default below."""
        if not self._default_cost:
            cost = self.policy.restart_cost(job, num_gpus, self.view)
            if cost is not None:
                if not cost >= 0.0:  # also rejects NaN
                    raise ValueError(f"policy {self.policy.name!r}: restart cost {cost} for {job.job_id}")
                return float(cost)
        own = job.spec.attributes.get("restart_cost")  # measured per application (Sia's artifact)
        if own is not None:
            return float(own)
        c = self.config
        return c.restart_cost_large if num_gpus > c.large_job_gpus else c.restart_cost

    # ---------------------------------------------------------------- events
    def _on_arrival(self, job: JobState) -> None:
        self.events += 1
        job.last_update = self.now
        capacity = self._eligible_capacity(job.spec)
        if job.spec.num_gpus > capacity:
            job.cancel_reason = f"asks {job.spec.num_gpus} GPUs; eligible capacity {capacity}"
            self._terminate(job, Phase.CANCELLED)  # after the note, so on_finish sees why
            return
        if not self.policy.admit(job, self.view):
            job.cancel_reason = REJECTED
            self._terminate(job, Phase.CANCELLED)
            return
        job.phase = Phase.QUEUED
        self.waiting[job.job_id] = job
        self.policy.on_arrival(job, self.view)

    def _eligible_capacity(self, spec: JobSpec) -> int:
        """GPUs on the nodes `spec` may use (cordoned ones included), once per (types, VC)."""
        key = (spec.gpu_types, spec.vc)
        capacity = self._eligible_gpus.get(key)
        if capacity is None:
            mask = self.cluster.eligible_mask(spec.gpu_types, spec.vc)
            capacity = self._eligible_gpus[key] = int(self.cluster.capacity()[mask].sum()) if mask.any() else 0
        return capacity

    def _on_end(self, job: JobState, version: int) -> bool:
        if version != job.version or job.phase not in (Phase.RUNNING, Phase.PROFILING):
            return False  # stale entry: the job's speed or placement changed since
        self.events += 1
        self._advance(job)
        if job.remaining > _EPS * max(1.0, job.spec.total_work):
            self._schedule_end(job)  # float drift: not quite done yet
            return False
        job.progress = job.progress + job.remaining  # land exactly on the target
        status = FinalStatus.COMPLETED if job.failed_once else job.spec.status
        if status is FinalStatus.FAILED:
            return self._on_failure(job)
        self._release(job)
        self._terminate(job, Phase.CANCELLED if status is FinalStatus.CANCELLED else Phase.COMPLETED)
        return True

    def _on_failure(self, job: JobState) -> bool:
        job.failures += 1
        job.failed_once = True
        ci = self.config.checkpoint_interval
        saved = max(job.checkpoint, math.floor(job.progress / ci) * ci if ci else 0.0)
        resubmit = self.policy.on_failure(job, self.view)
        self._release(job)
        delay = self.config.resubmit_delay
        if resubmit or delay is not None:
            job.wasted_gpu_time += (job.progress - saved) * job.spec.num_gpus
            job.progress = job.checkpoint = saved
        if resubmit:
            job.phase = Phase.QUEUED
            self.waiting[job.job_id] = job
            self.policy.on_requeue(job, self.view)
        elif delay is not None:
            job.phase = Phase.FAILED  # this attempt ended; the scheduler sees it finish
            self.policy.on_finish(job, self.view)
            job.phase = Phase.PENDING  # until the user resubmits it
            heapq.heappush(self._heap, (self.now + delay, _RESUBMIT, next(self._seq), job.job_id, job.version))
        else:
            job.wasted_gpu_time = job.attained_gpu_time
            self._terminate(job, Phase.FAILED)
        return True

    def _on_resubmit(self, job: JobState) -> None:
        """The user resubmits a failed job (`SimConfig.resubmit_delay`): a new arrival."""
        job.phase = Phase.QUEUED
        job.last_update = self.now
        self.waiting[job.job_id] = job
        self.policy.on_arrival(job, self.view)

    def _terminate(self, job: JobState, phase: Phase) -> None:
        job.phase = phase
        job.end_time = self.now
        self.waiting.pop(job.job_id, None)
        self._done += 1
        self.policy.on_finish(job, self.view)
        if self._report is not None and self._done % max(1, len(self.jobs) // 100) == 0:
            self._report(self._done, len(self.jobs))

    # ---------------------------------------------------------------- GPU bookkeeping
    def _take(self, placement: Placement) -> None:
        for node, k in placement:
            self.free[node] -= k
            self.free_total -= k

    def _give(self, placement: Placement) -> None:
        for node, k in placement:
            self.free[node] += k
            self.free_total += k

    def _release(self, job: JobState) -> None:
        """Take `job` off its GPUs; a co-located partner keeps them and runs solo again."""
        self._advance(job)
        self.running.pop(job.job_id, None)
        partner_id = job.colocated_with
        if partner_id is not None:
            partner = self.jobs[partner_id]
            partner.colocated_with = None
            job.colocated_with = None
            self._coloc.pop(partner_id, None)
            self._coloc.pop(job.job_id, None)
            self._respeed(partner)
        else:
            self._give(job.placement)
        job.placement = ()
        job.num_gpus = 0
        job.speed = 0.0
        self._note_speed(job, self.now)
        job.version += 1

    def _plan_for(self, d: Start | Resize, job: JobState, placement: Placement) -> ParallelPlan | None:
        """The plan a start/resize runs with: the decision's, else the job's scaled in `dp`."""
        n = sum(k for _, k in placement)
        if d.plan is not None:
            if d.plan.gpus != n:
                raise self._bad(d, f"plan {d.plan} needs {d.plan.gpus} GPUs, placement has {n}")
            return d.plan
        base = job.plan or job.spec.plan
        if base is None:
            return None
        if n % base.model_parallel:
            raise self._bad(d, f"{n} GPUs do not hold whole replicas of {base}; give a plan")
        return base.with_gpus(n)

    def _launch(self, job: JobState, placement: Placement, phase: Phase) -> None:
        """Put `job` on `placement` (callers set `job.plan` first: speed models may read it).

        The restart cost is asked with the job already placed; `job.first_start` is still None
        on a first launch (charged only with `SimConfig.charge_first_launch`, not a restart)."""
        restarting = job.first_start is not None  # launched before (run_time may still be 0)
        job.placement = placement
        job.num_gpus = sum(k for _, k in placement)
        job.phase = phase
        job.last_update = self.now
        job.overhead_until = self.now
        if restarting:
            job.restarts += 1
            job.overhead_until = self.now + self._restart_cost(job, job.num_gpus)
        elif self.config.charge_first_launch:
            job.overhead_until = self.now + self._restart_cost(job, job.num_gpus)
        if job.first_start is None:
            job.first_start = self.now
        self.waiting.pop(job.job_id, None)
        self.running[job.job_id] = job
        job.speed = self._speed(job)
        job.speed_log.append((job.overhead_until, job.speed, job.progress))
        self._schedule_end(job)
        self.policy.on_start(job, self.view)

    # ---------------------------------------------------------------- decisions
    def _apply(self, decisions: Sequence[Decision] | None) -> int:
        """Validate and apply decisions in order; returns how many were applied."""
        applied = 0
        for d in decisions or ():
            handler = _HANDLERS.get(type(d))
            if handler is None:
                raise InvalidDecision(self.policy.name, d, "not a decision type")
            handler(self, d)
            applied += 1
        return applied

    def _bad(self, d: Decision, reason: str) -> InvalidDecision:
        return InvalidDecision(self.policy.name, d, reason)

    def _job(self, d: Decision, job_id: str) -> JobState:
        job = self.jobs.get(job_id)
        if job is None:
            raise self._bad(d, f"unknown job {job_id!r}")
        return job

    def _check_placement(self, d: Decision, job: JobState, placement: Placement, extra: Placement = ()) -> None:
        if not placement:
            raise self._bad(d, "empty placement")
        nodes = [n for n, _ in placement]
        if len(set(nodes)) != len(nodes):
            raise self._bad(d, "a node appears twice in the placement")
        mask = self.cluster.eligible_mask(job.spec.gpu_types, job.spec.vc)
        returned = dict(extra)
        for node, k in placement:
            if not 0 <= node < len(self.cluster.nodes):
                raise self._bad(d, f"no node {node}")
            if k < 1:
                raise self._bad(d, f"non-positive GPU count on node {node}")
            if self.cordoned[node]:
                raise self._bad(d, f"node {node} is cordoned")
            if not mask[node]:
                raise self._bad(d, f"node {node} ({self.cluster.nodes[node].gpu_type}) is not allowed for this job")
            if k > self.free[node] + returned.get(node, 0):
                raise self._bad(d, f"over-commit: node {node} has {self.free[node]} free GPUs, asked {k}")

    def _do_start(self, d: Start) -> None:
        job = self._job(d, d.job_id)
        if not job.phase.is_waiting:
            raise self._bad(d, f"job is {job.phase.value}, not waiting (double start?)")
        self._check_placement(d, job, d.placement)
        plan = self._plan_for(d, job, d.placement)
        self._take(d.placement)
        job.plan = plan
        self._launch(job, d.placement, Phase.PROFILING if d.profiling else Phase.RUNNING)

    def _do_preempt(self, d: Preempt | Evict) -> None:
        job = self._job(d, d.job_id)
        if job.phase not in (Phase.RUNNING, Phase.PROFILING):
            raise self._bad(d, f"job is {job.phase.value}, not running")
        if isinstance(d, Evict):
            if job.colocated_with is None:
                raise self._bad(d, "job is not co-located")
            job.evictions += 1
        self._release(job)
        if isinstance(d, Preempt) and d.discard_progress:
            job.wasted_gpu_time += job.progress * job.spec.num_gpus
            job.progress = 0.0
        job.checkpoint = job.progress
        job.phase = Phase.PREEMPTED
        self.waiting[job.job_id] = job
        self.policy.on_requeue(job, self.view)

    def _do_move(self, d: Resize | Migrate) -> None:
        job = self._job(d, d.job_id)
        if job.phase not in (Phase.RUNNING, Phase.PROFILING):
            raise self._bad(d, f"job is {job.phase.value}, not running")
        if job.colocated_with is not None:
            raise self._bad(d, "a co-located job cannot be moved; evict it first")
        new_n = sum(k for _, k in d.placement)
        if isinstance(d, Migrate) and new_n != job.num_gpus:
            raise self._bad(d, f"migration changes the GPU count {job.num_gpus}→{new_n}; use Resize")
        self._check_placement(d, job, d.placement, extra=job.placement)
        plan = self._plan_for(d, job, d.placement) if isinstance(d, Resize) else job.plan
        phase = job.phase
        self._release(job)
        job.checkpoint = job.progress  # progress carries over: only the restart cost is paid
        if isinstance(d, Resize):
            job.resizes += 1
        self._take(d.placement)
        job.plan = plan
        self._launch(job, d.placement, phase)

    def _do_colocate(self, d: Colocate) -> None:
        job, host = self._job(d, d.job_id), self._job(d, d.host_id)
        if not job.phase.is_waiting:
            raise self._bad(d, f"job is {job.phase.value}, not waiting")
        if host.phase is not Phase.RUNNING:
            raise self._bad(d, f"host is {host.phase.value}, not running")
        if host.colocated_with is not None:
            raise self._bad(d, "host already shares its GPUs")
        if job.spec.num_gpus != host.num_gpus:
            raise self._bad(d, f"GPU counts differ ({job.spec.num_gpus} vs host {host.num_gpus})")
        mask = self.cluster.eligible_mask(job.spec.gpu_types, job.spec.vc)
        if not all(mask[n] for n, _ in host.placement):
            raise self._bad(d, "host GPUs are of a type this job may not use")
        s_host, s_job = self.interference.speeds(host.spec, job.spec)
        host.colocated_with, job.colocated_with = job.job_id, host.job_id
        self._coloc[host.job_id], self._coloc[job.job_id] = s_host, s_job
        self._respeed(host)
        job.plan = job.spec.plan  # same GPU count as asked
        self._launch(job, host.placement, Phase.RUNNING)

    def _do_refresh(self, d: Refresh) -> None:
        job = self._job(d, d.job_id)
        if job.phase not in (Phase.RUNNING, Phase.PROFILING):
            raise self._bad(d, f"job is {job.phase.value}, not running")
        self._respeed(job)

    def _do_cordon(self, d: Cordon | Uncordon) -> None:
        if not 0 <= d.node < len(self.cluster.nodes):
            raise self._bad(d, f"no node {d.node}")
        self.cordoned[d.node] = isinstance(d, Cordon)


# each handler takes its own decision type (the dict is keyed by it)
_HANDLERS: dict[type, Callable[[Simulator, Any], None]] = {
    Start: Simulator._do_start,
    Preempt: Simulator._do_preempt,
    Evict: Simulator._do_preempt,
    Resize: Simulator._do_move,
    Migrate: Simulator._do_move,
    Colocate: Simulator._do_colocate,
    Refresh: Simulator._do_refresh,
    Cordon: Simulator._do_cordon,
    Uncordon: Simulator._do_cordon,
}


def simulate(
    jobs: Iterable[JobSpec], cluster: ClusterSpec, policy: Policy, config: SimConfig | None = None, **kwargs: Any
) -> SimResult:
    """Run one simulation to the end (convenience wrapper)."""
    return Simulator(jobs, cluster, policy, config, **kwargs).run()
