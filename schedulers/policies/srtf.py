"""SRTF with an oracle: preemptive, the job with the least remaining work runs first."""

from __future__ import annotations

from collections.abc import Sequence

from ..decisions import Decision
from ..policy import ClusterView, Policy
from .realloc import reallocate


class SRTF(Policy):
    name = "srtf"

    def __init__(self, *, window: int = 256) -> None:
        self.window = window

    def schedule(self, view: ClusterView) -> Sequence[Decision]:
        if view.num_waiting() == 0:
            return ()
        waiting = list(view.waiting())
        running = list(view.running())
        shortest_waiting = min(view.remaining(j) for j in waiting)
        if view.free_gpus() == 0 and all(view.remaining(j) <= shortest_waiting for j in running):
            return ()  # nobody waiting beats anybody running: no preemption can help
        key = lambda j: (view.remaining(j), j.spec.submit_time, j.job_id)  # noqa: E731
        return reallocate(view, sorted(running + waiting, key=key), self.window)
