"""The WFQ virtual clock over the linear GPS reference R-lin (spec §3.1, paper Eq. 2–3).

V(0) = 0 and dV/dt = M / N_t, N_t being the jobs still present *in GPS* (not in the real
cluster). A job arriving at a_j gets F_j = V(a_j) + L̂_j once, and keeps it: sorting by F gives the
GPS completion order, and that order stays valid as later jobs arrive. When GPS is empty V is
frozen, never reset, so a new job can never undercut an older job that is running late.

Costs O(log N) per arrival and per GPS departure (a min-heap of (F, id)).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

__all__ = ["VirtualClock", "rlin_finish_times"]


class VirtualClock:
    """Event-driven, exact. Times and sizes in any consistent units (s and GPU·s, or h and GPU·h)."""

    def __init__(self, gpus: float) -> None:
        if gpus <= 0:
            raise ValueError(f"the clock needs a positive GPU count, got {gpus}")
        self.gpus = float(gpus)
        self.v = 0.0
        self.t = 0.0
        self._heap: list[tuple[float, str]] = []
        self.departures: dict[str, float] = {}  # job → its R-lin finish time, once V passed its F

    @property
    def present(self) -> int:
        """Jobs still in GPS (N_t)."""
        return len(self._heap)

    def advance(self, now: float) -> float:
        """Move the clock to `now` (≥ the last time), recording GPS departures on the way; V(now)."""
        if now < self.t:
            raise ValueError(f"the virtual clock cannot go back ({now} < {self.t})")
        heap = self._heap
        while heap:
            f_min, job_id = heap[0]
            t_dep = self.t + (f_min - self.v) * len(heap) / self.gpus
            if t_dep > now:
                break
            self.v, self.t = f_min, t_dep
            heapq.heappop(heap)
            self.departures[job_id] = t_dep
        if heap:
            self.v += (now - self.t) * self.gpus / len(heap)
        self.t = now  # GPS empty: V stays frozen (spec §7.7)
        return self.v

    def arrive(self, job_id: str, at: float, size: float) -> float:
        """Admit a job of GPU-time `size` at its true arrival time; returns its fixed F_j."""
        if size <= 0:
            raise ValueError(f"job {job_id}: GPU-time must be positive, got {size}")
        f = self.advance(at) + size
        heapq.heappush(self._heap, (f, job_id))
        return f

    def resize(self, now: float, gpus: float) -> None:
        """The cluster changed size (node failure, resize): settle at the old rate, then switch."""
        self.advance(now)
        if gpus <= 0:
            raise ValueError(f"the clock needs a positive GPU count, got {gpus}")
        self.gpus = float(gpus)


def rlin_finish_times(jobs: Iterable[tuple[str, float, float]], gpus: float) -> dict[str, float]:
    """R-lin finish time of every (job id, arrival, GPU-time): the trace-only linear GPS reference."""
    clock = VirtualClock(gpus)
    for job_id, at, size in sorted(jobs, key=lambda j: (j[1], j[0])):
        clock.arrive(job_id, at, size)
    if clock.present:
        clock.advance(float("inf"))
    return dict(clock.departures)
