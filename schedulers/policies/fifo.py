"""FIFO: first submitted, first served."""

from __future__ import annotations

from ..job import JobState
from ..policy import ClusterView
from .ordered import OrderedPolicy


class FIFO(OrderedPolicy):
    name = "fifo"

    def priority(self, job: JobState, view: ClusterView) -> object:
        return (job.spec.submit_time, job.job_id)
