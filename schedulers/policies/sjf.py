"""SJF with an oracle: the shortest true duration first (a lower bound for estimate-based SJF)."""

from __future__ import annotations

from ..job import JobState
from ..policy import ClusterView
from .ordered import OrderedPolicy


class SJF(OrderedPolicy):
    name = "sjf"

    def priority(self, job: JobState, view: ClusterView) -> object:
        return (view.remaining(job), job.spec.submit_time, job.job_id)
