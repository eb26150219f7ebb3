"""Non-preemptive priority scheduling with optional backfilling: the shape of FIFO, SJF and QSSF.

Jobs start in priority order while the head fits. With `backfill`, a job that does not fit is
skipped and later jobs may start in the GPUs left (first-fit backfilling, bounded by a lookahead
window like Slurm's `bf_max_job_test`, which keeps each pass O(window)).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from ..decisions import Decision
from ..job import JobState
from ..policy import ClusterView, Policy


class OrderedPolicy(Policy):
    def __init__(self, *, backfill: bool = False, window: int = 256) -> None:
        self.backfill = backfill
        self.window = window
        self._heap: list[tuple[object, int, str]] = []
        self._queued: set[str] = set()
        self._seq = 0
        if backfill:
            self.name = f"{self.name}+bf"

    def priority(self, job: JobState, view: ClusterView) -> object:
        """Smaller is served first. Called once each time the job enters the queue."""
        raise NotImplementedError

    def _enqueue(self, job: JobState, view: ClusterView) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (self.priority(job, view), self._seq, job.job_id))
        self._queued.add(job.job_id)

    def on_arrival(self, job: JobState, view: ClusterView) -> None:
        self._enqueue(job, view)

    def _resync(self, view: ClusterView) -> None:
        """Jobs that re-entered the queue (preempted by an adapter, resubmitted after failure)."""
        if view.num_waiting() != len(self._queued):
            for job in view.waiting():
                if job.job_id not in self._queued:
                    self._enqueue(job, view)

    def schedule(self, view: ClusterView) -> Sequence[Decision]:
        self._resync(view)
        if not self._heap or view.free_gpus() <= 0:
            return ()  # nothing to start: no Plan (a copy of the free-GPU array) per event
        plan = view.plan()
        heap = self._heap
        skipped: list[tuple[object, int, str]] = []
        while heap and plan.free_total > 0:
            entry = heap[0]
            job = view.job(entry[2])
            if not job.phase.is_waiting:
                heapq.heappop(heap)
                self._queued.discard(entry[2])
                continue
            if plan.try_start(job):
                heapq.heappop(heap)
                self._queued.discard(entry[2])
                continue
            if not self.backfill or len(skipped) >= self.window:
                break
            skipped.append(heapq.heappop(heap))
        for entry in skipped:
            heapq.heappush(heap, entry)
        return plan.decisions
