"""Stated SJF: the shortest length a user states first; jobs whose user states none after, in order.

A live cluster knows a job's length only if someone says it (Slurm's `--time`, a form field): the
policy reads `spec.attributes[STATED_KEY]` (seconds), never the trace's duration. With no statement
at all it is FIFO. Non-preemptive (`OrderedPolicy`), without a backfilling variant.
"""

from __future__ import annotations

from ..job import JobState
from ..policy import ClusterView
from .ordered import OrderedPolicy

STATED_KEY = "stated_length_s"


def stated_length(job: JobState) -> float | None:
    """The length the job's user stated (seconds), or None."""
    raw = job.spec.attributes.get(STATED_KEY)
    return float(raw) if raw is not None and float(raw) > 0 else None


class StatedSJF(OrderedPolicy):
    name = "stated-sjf"

    def __init__(self) -> None:
        super().__init__()

    def length(self, job: JobState, view: ClusterView) -> float | None:
        """The length this policy orders `job` by (None: unknown, served after every known one)."""
        return stated_length(job)

    def priority(self, job: JobState, view: ClusterView) -> object:
        length = self.length(job, view)
        return (length is None, length or 0.0, job.spec.submit_time, job.job_id)
