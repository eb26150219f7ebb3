"""EASY backfilling with time limits (Slurm's `sched/backfill` shape), and its conservative variant.

Jobs are served first come, first served. When the first waiting job (the head) does not fit, it
gets a reservation: the *shadow time*, when enough GPUs are free for it if every running job runs
to its time limit (start + limit), and the *extra* GPUs still free then beyond what it needs. A
later job starts now only if it fits now and either ends (by its own limit) before the shadow time
or uses only extra GPUs: it can never delay the head (Lifka 1995; Mu'alem & Feitelson, IEEE TPDS
12(6), 2001). `conservative=True` gives every waiting job a reservation in order, and a job
backfills only if it delays none of them.

A running job is killed when its limit expires (Slurm's TIMEOUT): its GPUs are freed, its progress
is lost (no checkpoint assumed: the cost's upper bound), and the user resubmits it after
`LimitRule.resubmit_s` with the limit `LimitRule.after_kill` gives. When that is no longer than the
expired one (a job longer than the partition's maximum), the user resumes it from a checkpoint
instead: its progress is kept, so every job ends. Before a limit expires the
rule may extend it (`LimitRule.extend`, asked `LimitRule.check_before_s` ahead), as SchedMate's
progress-aware extension does with `scontrol update`.

Where limits come from is the rule's business (`LimitRule`): the users' requests, the partition
default, SchedMate's estimate, the oracle. Reservations count GPUs, not nodes: a head job that a
fragmented cluster cannot place at its shadow time waits for the next pass (as Slurm re-plans).
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..decisions import Decision
from ..job import JobState
from ..policy import ClusterView, Plan, Policy

__all__ = ["DEFAULT_LIMIT_S", "ConservativeBackfill", "EasyBackfill", "FixedLimits", "Kill", "LimitRule", "LIMIT_KEY"]

DEFAULT_LIMIT_S = 7 * 86_400.0  # a partition MaxTime of 7 days (Slurm uses MaxTime when DefaultTime is unset)
LIMIT_KEY = "time_limit_s"  # JobSpec.attributes: a job's requested limit, read by `FixedLimits`
_EPS = 1e-6


class LimitRule(Protocol):
    """Where each job's time limit comes from, and what happens at and before its expiry."""

    check_before_s: float  # ask `extend` this long before a limit expires (0: never ask)
    check_every_s: float  # then again this often until it expires (0: once per limit)
    resubmit_s: float  # a killed job is resubmitted this long after its kill

    def initial(self, job: JobState, view: ClusterView) -> tuple[float, str]:
        """(limit in seconds, who set it: e.g. "user", "default", "schedmate", "oracle") at submission."""
        ...

    def after_kill(self, job: JobState, view: ClusterView, limit: float) -> tuple[float, str]:
        """The limit the user resubmits a job killed at `limit` with. One no longer than `limit`
        (the partition's maximum) means the user resumes from a checkpoint: the progress is kept."""
        ...

    def extend(self, job: JobState, view: ClusterView, limit: float, source: str) -> float | None:
        """A longer limit for a running job, or None to leave it (asked from `check_before_s`
        before the limit, every `check_every_s`, as a live extender polls)."""
        ...


@dataclass
class FixedLimits:
    """Each job's `attributes[LIMIT_KEY]`, else `default_s`; a killed job comes back with `max_s`."""

    default_s: float = DEFAULT_LIMIT_S
    max_s: float = DEFAULT_LIMIT_S
    resubmit_s: float = 0.0
    check_before_s: float = 0.0
    check_every_s: float = 0.0

    def initial(self, job: JobState, view: ClusterView) -> tuple[float, str]:
        own = job.spec.attributes.get(LIMIT_KEY)
        return (float(own), "user") if own is not None else (self.default_s, "default")

    def after_kill(self, job: JobState, view: ClusterView, limit: float) -> tuple[float, str]:
        return self.max_s, "user"

    def extend(self, job: JobState, view: ClusterView, limit: float, source: str) -> float | None:
        return None


@dataclass(frozen=True)
class Kill:
    """One job killed at its limit: who set the limit, and the GPU time the attempt used."""

    job_id: str
    source: str
    limit_s: float
    gpus: int
    run_s: float
    at: float


@dataclass
class _Job:
    limit: float
    source: str
    started: float | None = None
    next_check: float = -math.inf  # when to ask `extend` next (inf: not again for this limit)
    hold_until: float = 0.0  # a killed job waits for its user's resubmission
    extensions: list[float] = field(default_factory=list)


class EasyBackfill(Policy):
    name = "easy"

    def __init__(self, *, rule: LimitRule | None = None, conservative: bool = False, window: int = 256) -> None:
        self.rule: LimitRule = rule or FixedLimits()
        self.conservative = conservative
        self.window = window
        if conservative:
            self.name = "easy-conservative"
        self._jobs: dict[str, _Job] = {}
        self._heap: list[tuple[float, int, str]] = []  # (queue entry time, seq, job id)
        self._queued: set[str] = set()
        self._seq = 0
        self.kills: list[Kill] = []
        self.counts: Counter[str] = Counter()

    # ------------------------------------------------------------------ hooks
    def on_arrival(self, job: JobState, view: ClusterView) -> None:
        limit, source = self.rule.initial(job, view)
        self._jobs[job.job_id] = _Job(_positive(limit), source)
        self.counts[f"limit_{source}"] += 1
        self._enqueue(job.job_id, view.now)

    def on_start(self, job: JobState, view: ClusterView) -> None:
        state = self._jobs[job.job_id]
        state.started = view.now
        self._arm(job.job_id, view)

    def on_requeue(self, job: JobState, view: ClusterView) -> None:
        if job.job_id not in self._queued:
            self._enqueue(job.job_id, self._jobs[job.job_id].hold_until)

    def run_stats(self) -> dict[str, Any]:
        by_source: Counter[str] = Counter(k.source for k in self.kills)
        lost: dict[str, float] = {}
        for k in self.kills:
            lost[k.source] = lost.get(k.source, 0.0) + k.gpus * k.run_s
        return {"counts": dict(self.counts), "kills": dict(by_source), "killed_gpu_s": dict(lost),
                "extended_jobs": sum(1 for s in self._jobs.values() if s.extensions),
                "extensions": sum(len(s.extensions) for s in self._jobs.values())}

    # ------------------------------------------------------------------ schedule
    def schedule(self, view: ClusterView) -> Sequence[Decision]:
        plan = view.plan()
        self._expire(view, plan)
        if self._heap and plan.free_total > 0:
            if self.conservative:
                self._conservative(view, plan)
            else:
                self._easy(view, plan)
        return plan.decisions

    def _expire(self, view: ClusterView, plan: Plan) -> None:
        """Kill running jobs whose limit is up; ask the rule about limits that expire soon."""
        now = view.now
        for job in list(view.running()):
            state = self._jobs.get(job.job_id)
            if state is None or state.started is None:
                continue
            end = state.started + state.limit
            if now >= end - _EPS:
                self.kills.append(Kill(job.job_id, state.source, state.limit, job.num_gpus, now - state.started, now))
                self.counts[f"killed_{state.source}"] += 1
                limit, source = self.rule.after_kill(job, view, state.limit)
                resume = _positive(limit) <= state.limit + _EPS  # no longer limit to ask: resume from a checkpoint
                self.counts["resumed_after_kill"] += resume
                plan.preempt(job, discard_progress=not resume)
                state.started = None
                state.next_check = -math.inf
                state.hold_until = now + self.rule.resubmit_s
                state.limit, state.source = float(limit), source
                view.wake_at(state.hold_until)  # back in the queue after this pass's decisions apply
                continue
            check_at = max(end - self.rule.check_before_s, state.next_check)
            if self.rule.check_before_s > 0 and now >= check_at - _EPS:
                longer = self.rule.extend(job, view, state.limit, state.source)
                every = self.rule.check_every_s
                state.next_check = now + every if every > 0 else math.inf
                if longer is not None and longer > state.limit + _EPS:
                    state.extensions.append(longer - state.limit)
                    state.limit = longer
                    state.next_check = -math.inf
                    self.counts[f"extended_{state.source}"] += 1
                self._arm(job.job_id, view)

    def _arm(self, job_id: str, view: ClusterView) -> None:
        state = self._jobs[job_id]
        if state.started is None:
            return
        end = state.started + state.limit
        view.wake_at(end)
        check_at = max(end - self.rule.check_before_s, state.next_check)
        if self.rule.check_before_s > 0 and check_at < end - _EPS:
            view.wake_at(max(view.now, check_at))

    def _waiting(self, view: ClusterView) -> list[JobState]:
        """Waiting jobs in queue order (held resubmissions left out), at most `window` of them."""
        out: list[JobState] = []
        for _, _, jid in sorted(self._heap):
            job = view.job(jid)
            if not job.phase.is_waiting:
                continue
            if self._jobs[jid].hold_until > view.now + _EPS:
                continue
            out.append(job)
            if len(out) >= self.window:
                break
        return out

    def _ends(self, view: ClusterView, plan: Plan) -> list[tuple[float, int]]:
        """(time its limit expires, GPUs) of every job running after this pass's decisions."""
        ends = []
        for job in view.running():
            if job.job_id in plan.preempted:
                continue
            state = self._jobs.get(job.job_id)
            if state is not None and state.started is not None:
                ends.append((max(view.now, state.started + state.limit), job.num_gpus))
        return ends

    def _start(self, job: JobState, view: ClusterView, plan: Plan, ends: list[tuple[float, int]]) -> bool:
        if not plan.try_start(job):
            return False
        self._drop(job.job_id)
        ends.append((view.now + self._jobs[job.job_id].limit, job.spec.num_gpus))
        return True

    def _easy(self, view: ClusterView, plan: Plan) -> None:
        ends = self._ends(view, plan)
        shadow, extra = math.inf, 0
        blocked = False
        for job in self._waiting(view):
            n, limit = job.spec.num_gpus, self._jobs[job.job_id].limit
            if not blocked:
                if self._start(job, view, plan, ends):
                    continue
                blocked = True
                shadow, extra = _shadow(ends, plan.free_total, n, view.now)
                continue
            if n > plan.free_total:
                continue
            if view.now + limit <= shadow + _EPS:
                if self._start(job, view, plan, ends):
                    self.counts["backfilled"] += 1
            elif n <= extra and self._start(job, view, plan, ends):
                extra -= n
                self.counts["backfilled"] += 1
            if plan.free_total <= 0:
                break

    def _conservative(self, view: ClusterView, plan: Plan) -> None:
        """Every waiting job reserves the earliest slot its limit fits in; only those at `now` start."""
        now = view.now
        profile = _Profile(now, plan.free_total, self._ends(view, plan))
        for job in self._waiting(view):
            n, limit = job.spec.num_gpus, self._jobs[job.job_id].limit
            t = profile.earliest(n, limit)
            if t <= now + _EPS and n <= plan.free_total and plan.try_start(job):
                self._drop(job.job_id)
            profile.reserve(max(t, now), limit, n)

    # ------------------------------------------------------------------ queue
    def _enqueue(self, job_id: str, at: float) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (at, self._seq, job_id))
        self._queued.add(job_id)

    def _drop(self, job_id: str) -> None:
        self._queued.discard(job_id)
        self._heap = [e for e in self._heap if e[2] != job_id]
        heapq.heapify(self._heap)


def _positive(limit: float) -> float:
    if not limit > 0 or math.isnan(limit):
        raise ValueError(f"a time limit must be positive, got {limit}")
    return float(limit)


def _shadow(ends: list[tuple[float, int]], free: int, need: int, now: float) -> tuple[float, int]:
    """(when `need` GPUs are free if every running job runs to its limit, GPUs spare then)."""
    if need <= free:
        return now, free - need
    freed: Counter[float] = Counter()
    for t, n in ends:
        freed[t] += n
    avail = free
    for t in sorted(freed):
        avail += freed[t]
        if avail >= need:
            return t, avail - need
    return math.inf, 0


class _Profile:
    """Free GPUs over time as a step function: running jobs end at their limits, reservations hold."""

    def __init__(self, now: float, free: int, ends: list[tuple[float, int]]) -> None:
        self.now = now
        changes: Counter[float] = Counter()
        for t, n in ends:
            changes[max(t, now)] += n
        self.times = [now]
        self.free = [free]
        for t in sorted(changes):
            if t <= now + _EPS:
                self.free[0] += changes[t]
                continue
            self.times.append(t)
            self.free.append(self.free[-1] + changes[t])

    def earliest(self, n: int, length: float) -> float:
        """The first breakpoint from which `n` GPUs stay free for `length` seconds."""
        for i, t in enumerate(self.times):
            if self.free[i] < n:
                continue
            ok = True
            for j in range(i + 1, len(self.times)):
                if self.times[j] >= t + length - _EPS:
                    break
                if self.free[j] < n:
                    ok = False
                    break
            if ok:
                return t
        return math.inf

    def reserve(self, start: float, length: float, n: int) -> None:
        if not math.isfinite(start):
            return
        end = start + length
        for t in (start, end):
            if t not in self.times:
                i = next((k for k, x in enumerate(self.times) if x > t), len(self.times))
                self.times.insert(i, t)
                self.free.insert(i, self.free[i - 1] if i > 0 else self.free[0])
        for i, t in enumerate(self.times):
            if start - _EPS <= t < end - _EPS:
                self.free[i] -= n


class ConservativeBackfill(EasyBackfill):
    """The conservative variant: every waiting job holds a reservation (registry name
    `easy-conservative`)."""

    def __init__(self, *, rule: LimitRule | None = None, window: int = 256) -> None:
        super().__init__(rule=rule, conservative=True, window=window)
