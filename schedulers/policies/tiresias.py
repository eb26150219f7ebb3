"""Tiresias (NSDI'19) discretised 2D-LAS: two queues on attained GPU-time, FIFO inside each.

A job is in queue 0 until it has received `threshold` GPU-seconds, then in queue 1. Preemption
happens only at round boundaries (`round_seconds`, 60 s by default); between rounds, arrivals and
departures start waiting jobs in free GPUs without preempting anyone. Rounds are not ticked: the
policy asks to be woken at the next boundary only when a round could change something (a waiting
job outranks a running one, or a running job is about to be demoted).
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from sortedcontainers import SortedList

from ..decisions import Decision
from ..job import JobState
from ..policy import ClusterView, Policy
from .realloc import reallocate

Key = tuple[int, float, str]


@dataclass(slots=True)
class TiresiasJob:
    """Per-job state: the job's queue key, and the demotion time of its current run (if in queue 0)."""

    key: Key
    due: float | None = None  # marks this run's demotion entry; entries of earlier runs are stale


class Tiresias(Policy):
    name = "tiresias"

    def __init__(self, *, threshold: float = 3600.0, round_seconds: float = 60.0, window: int = 256) -> None:
        self.threshold = threshold
        self.round = round_seconds
        self.window = window
        self._waiting: SortedList = SortedList()
        self._running: SortedList = SortedList()
        self._demotions: list[tuple[float, str]] = []
        self._sizes: Counter[int] = Counter()  # GPU requests of waiting jobs: skip hopeless scans
        self._jobs: dict[str, TiresiasJob] = {}  # jobs queued or running here
        # A round repeats the last one's answer unless a job arrived, ended, was requeued or was
        # demoted since; skipping such rounds keeps contended periods from ticking every 60 s.
        self._changed = True

    def _key(self, job: JobState, view: ClusterView) -> Key:
        queue = 0 if view.attained_gpu_time(job) < self.threshold - 1e-9 else 1
        return (queue, job.spec.submit_time, job.job_id)

    # -- bookkeeping -------------------------------------------------------------------------------
    def _to_waiting(self, job: JobState, view: ClusterView) -> None:
        key = self._key(job, view)
        state = self._jobs.get(job.job_id)
        if state is None:
            self._jobs[job.job_id] = TiresiasJob(key)
        else:
            state.key = key
        self._waiting.add(key)
        self._sizes[job.spec.num_gpus] += 1

    def on_arrival(self, job: JobState, view: ClusterView) -> None:
        self._changed = True
        self._to_waiting(job, view)

    def on_requeue(self, job: JobState, view: ClusterView) -> None:
        self._changed = True
        state = self._jobs.get(job.job_id)
        self._running.discard(state.key if state else None)
        self._to_waiting(job, view)
        self._arm(view)  # decisions apply after `schedule` returned: arm for the state they leave

    def on_start(self, job: JobState, view: ClusterView) -> None:
        state = self._jobs[job.job_id]
        key = state.key
        self._unwait(key, job)
        self._running.add(key)
        state.due = None
        if key[0] == 0:
            due = view.now + (self.threshold - view.attained_gpu_time(job)) / max(1, job.num_gpus)
            state.due = due
            heapq.heappush(self._demotions, (due, job.job_id))
        self._arm(view)

    def on_finish(self, job: JobState, view: ClusterView) -> None:
        state = self._jobs.pop(job.job_id, None)
        if state is None:
            return  # cancelled at submission (unschedulable or not admitted): never queued here
        key = state.key
        self._changed = True
        self._running.discard(key)
        self._unwait(key, job)

    def _unwait(self, key: Key | None, job: JobState) -> None:
        if key in self._waiting:
            self._waiting.remove(key)
            self._sizes[job.spec.num_gpus] -= 1
            if not self._sizes[job.spec.num_gpus]:
                del self._sizes[job.spec.num_gpus]

    def _pending(self, entry: tuple[float, str], view: ClusterView) -> bool:
        """A demotion entry still matters: its job runs, in queue 0, in the run that pushed it."""
        due, job_id = entry
        state = self._jobs.get(job_id)
        return state is not None and state.due == due and state.key in self._running

    def _demote_due(self, view: ClusterView) -> None:
        early: list[tuple[float, str]] = []
        while self._demotions and self._demotions[0][0] <= view.now + 1e-6:
            entry = heapq.heappop(self._demotions)
            if not self._pending(entry, view):
                continue
            job, state = view.job(entry[1]), self._jobs[entry[1]]
            old = state.key
            new = self._key(job, view)
            if new == old:
                early.append(entry)  # a hair short of the threshold (float): retry at the next round
                continue
            self._changed = True
            self._running.remove(old)
            self._running.add(new)
            state.key, state.due = new, None
        for entry in early:
            heapq.heappush(self._demotions, entry)

    # -- scheduling --------------------------------------------------------------------------------
    def _contended(self) -> bool:
        return bool(self._waiting) and bool(self._running) and self._waiting[0] < self._running[-1]

    def schedule(self, view: ClusterView) -> Sequence[Decision]:
        self._demote_due(view)
        at_round = abs(view.now / self.round - round(view.now / self.round)) < 1e-9
        if at_round and self._changed and self._contended():
            self._changed = False
            ordered = heapq.merge(self._running, self._waiting)
            decisions = reallocate(view, (view.job(k[2]) for k in ordered), self.window)
        elif self._sizes and view.free_gpus() >= min(self._sizes):
            plan = view.plan()
            skips = 0
            for key in self._waiting:
                if plan.free_total == 0 or skips > self.window:
                    break
                if not plan.try_start(view.job(key[2])):
                    skips += 1
            decisions = plan.decisions
        else:
            decisions = []
        self._arm(view)
        return decisions

    def _arm(self, view: ClusterView) -> None:
        def boundary(t: float) -> float:
            return math.ceil(t / self.round - 1e-9) * self.round

        if self._changed and self._contended():
            view.wake_at(boundary(view.now + 1e-6))
        while self._demotions and not self._pending(self._demotions[0], view):
            heapq.heappop(self._demotions)  # the job stopped or restarted since; this entry is stale
        if self._demotions:
            view.wake_at(boundary(max(self._demotions[0][0], view.now + 1e-6)))
