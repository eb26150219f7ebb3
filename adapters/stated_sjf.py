"""Stated SJF + SchedMate: the advisor's length for jobs whose user states none.

`StatedSJF` orders jobs by the length their user states and serves the others last, in submit
order. `StatedSJFSchedMate(source)` asks the Scheduling Advisor at arrival for each job without a
statement; a match with a duration orders the job by it. No insight (None, no match, no duration):
the job stays unknown, so with a source that knows nothing the run is `StatedSJF`'s, decision for
decision. The source is told about each job at arrival (after advising) and when it has ended.

The worked example of adding a policy with its adapter (docs/architecture.md, "Adding a policy"):
this file, the policy (`schedulers/policies/stated_sjf.py`), its line in `schedulers/registry.py`
and `tests/test_stated_sjf.py`; `schedmate experiment adapter --policy stated-sjf` then runs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from schedmate.adapters.insights import InsightSource
from schedmate.adapters.registry import PolicyAdapter, PolicyWorld, stated_plans_world
from schedmate.schedulers.job import JobSpec, JobState
from schedmate.schedulers.policies.stated_sjf import STATED_KEY, StatedSJF, stated_length
from schedmate.schedulers.policy import ClusterView

__all__ = ["ADAPTER", "STATED_SHARE", "StatedSJFSchedMate", "stated_plans"]

STATED_SHARE = 0.3  # share of users who state a length


class StatedSJFSchedMate(StatedSJF):
    """Stated SJF with the advisor's duration where the user states none (module docstring)."""

    name = "stated-sjf+sm"

    def __init__(self, source: InsightSource) -> None:
        super().__init__()
        self.source = source
        self.advised: dict[str, float] = {}
        self._seen: set[str] = set()
        self.counters = {"arrivals": 0, "stated": 0, "advised": 0, "estimated": 0}

    def on_arrival(self, job: JobState, view: ClusterView) -> None:
        if job.job_id not in self._seen:  # first submission only
            self._seen.add(job.job_id)
            self.counters["arrivals"] += 1
            if stated_length(job) is None:
                insight = self.source.advise(job)
                self.counters["advised"] += insight is not None
                if insight is not None and insight.matched and insight.duration_s and insight.duration_s > 0:
                    self.advised[job.job_id] = float(insight.duration_s)
                    self.counters["estimated"] += 1
            else:
                self.counters["stated"] += 1
            self.source.record(job, finished=False)
        super().on_arrival(job, view)

    def length(self, job: JobState, view: ClusterView) -> float | None:
        stated = stated_length(job)
        return stated if stated is not None else self.advised.get(job.job_id)

    def on_finish(self, job: JobState, view: ClusterView) -> None:
        super().on_finish(job, view)
        if job.end_time is not None:
            self.source.record(job, finished=True)

    def run_stats(self) -> dict[str, Any]:
        return {**super().run_stats(), "schedmate": dict(self.counters)}


def stated_plans(jobs: Sequence[JobSpec], seed: int, gpus: int, *, share: float = STATED_SHARE) -> PolicyWorld:
    """The policy's world attribute: a `share` of users (a draw per seed and job) state what their
    code runs at nominal speed (`stated_plans_world`: no outcome) as the job's length; the others none."""
    return stated_plans_world(jobs, seed, gpus, key=STATED_KEY, share=share, salt="stated-length")


ADAPTER = PolicyAdapter(policy="stated-sjf", adapter=StatedSJFSchedMate, world=stated_plans)
