"""Ares+SchedMate (issue 12, item 5): job lengths from the Scheduling Advisor.

Ares orders jobs by a virtual finish time F_j = V(a_j) + L̂_j that needs each job's length L̂_j
(GPU·s at the demanded degree of parallelism). Its hook `Ares.estimate_gpu_time` defaults to the
trace's GPU-time (the paper's accurate-estimate assumption); a live cluster only knows what a
user states. Two policies here, both plain `Ares` apart from that hook:

- `AresUserLengths`: Ares as deployed without SchedMate. A job with a user-given length
  (`spec.attributes[EST_KEY]`) uses it; any other job's length is unknown (None), so Ares serves
  it after every known job (F = ∞).
- `AresSchedMate(source)`: the same, except that a job without a user-given length asks the
  advisor at arrival (`InsightSource.advise`); a match with a duration gives
  L̂_j = predicted duration × the job's GPUs. No insight (None, no match, no duration): the base
  policy's own answer stands (here: unknown), so with a source that knows nothing the run is
  `AresUserLengths`, decision for decision.

The adapter never reads a simulated outcome: it passes Ares the user's statement or the
advisor's answer, nothing from `spec.duration` or the job's final state. It tells the source
about each job at arrival (after advising, so a job never matches itself) and at its end.

Not charged: the advisor's latency. Ares's virtual clock admits jobs at their submit time and
cannot go back, so holding a job out for a few seconds needs an arrival-delay hook in
`AllocationPolicy` (the total is reported in `info()["advisor_seconds"]`; rounds are 60 s).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from statistics import median
from typing import Any

from schedmate.adapters.insights import AdvisorInsight, InsightSource
from schedmate.adapters.registry import PolicyAdapter, PolicyWorld, stated_plans_world
from schedmate.schedulers.ares.policy import EST_KEY, Ares
from schedmate.schedulers.job import JobSpec, JobState
from schedmate.schedulers.policy import ClusterView

__all__ = ["ADAPTER", "AresHistoryMedian", "AresSMCounters", "AresSchedMate", "AresUserLengths", "advised_gpu_time", "stated_lengths",
           "user_gpu_time"]


def user_gpu_time(job: JobState) -> float | None:
    """The length the job's user stated (GPU·s at the demanded DoP), or None."""
    est = job.spec.attributes.get(EST_KEY)
    return float(est) if est is not None and float(est) > 0 else None


def advised_gpu_time(insight: AdvisorInsight | None, gpus: int) -> float | None:
    """L̂ from the advisor: mean duration of the matches × the job's GPUs; None without a match."""
    if insight is None or not insight.matched or insight.duration_s is None or not insight.duration_s > 0:
        return None
    return float(insight.duration_s) * max(1, gpus)


class AresUserLengths(Ares):
    """Ares knowing only the lengths users state; any other job's length is unknown."""

    name = "ares"

    def estimate_gpu_time(self, job: JobState, view: ClusterView) -> float | None:
        return user_gpu_time(job)


class AresHistoryMedian(AresUserLengths):
    """Ares without SchedMate, with the cheapest guess a platform team could deploy: a job whose
    user states no length gets the median GPU-time of past jobs with its GPU count (all past
    jobs when none has it), learned from `history` and from every job that finishes. No code,
    no logs: the baseline the advisor's reading of a job's code has to beat."""

    name = "ares+median"

    def __init__(self, history: Sequence[JobSpec] = (), **ares_options: Any) -> None:
        super().__init__(**ares_options)
        self._past: dict[int, list[float]] = {}
        for s in history:
            self._learn(s.num_gpus, s.num_gpus * s.duration)

    def _learn(self, gpus: int, gpu_time: float) -> None:
        if gpu_time > 0:
            self._past.setdefault(gpus, []).append(gpu_time)

    def estimate_gpu_time(self, job: JobState, view: ClusterView) -> float | None:
        user = user_gpu_time(job)
        if user is not None:
            return user
        same = self._past.get(job.spec.num_gpus) or [x for xs in self._past.values() for x in xs]
        return float(median(same)) if same else None

    def on_finish(self, job: JobState, view: ClusterView) -> None:
        super().on_finish(job, view)
        if job.end_time is not None:  # really over: the GPU-time it received is known now
            self._learn(job.spec.num_gpus, job.attained_gpu_time)


@dataclass
class AresSMCounters:
    """What the adapter did, one count per arriving job."""

    arrivals: int = 0
    user_given: int = 0  # the user stated a length: the advisor is not asked
    advised: int = 0  # the source answered
    matched: int = 0  # ... with similar jobs
    advisor_estimated: int = 0  # ... and a duration: Ares used the advisor's length
    fallback: int = 0  # no usable insight: the base policy's answer stood
    advisor_seconds: float = 0.0  # latency the advisor reported (not charged, see module docstring)


class AresSchedMate(AresUserLengths):
    """Ares with the advisor's lengths for jobs whose user gave none (module docstring)."""

    name = "ares+sm"

    def __init__(self, source: InsightSource, **ares_options: Any) -> None:
        super().__init__(**ares_options)
        self.source = source
        self.counters = AresSMCounters()
        self._advice: dict[str, AdvisorInsight | None] = {}

    def on_arrival(self, job: JobState, view: ClusterView) -> None:
        if job.job_id not in self._advice and job.job_id not in self.jobs:  # first submission only
            c = self.counters
            c.arrivals += 1
            insight = None
            if user_gpu_time(job) is None:
                insight = self.source.advise(job)
                c.advised += insight is not None
                c.matched += insight is not None and insight.matched
                c.advisor_seconds += insight.latency_s if insight is not None else 0.0
            else:
                c.user_given += 1
            self._advice[job.job_id] = insight
            self.source.record(job, finished=False)
        super().on_arrival(job, view)

    def estimate_gpu_time(self, job: JobState, view: ClusterView) -> float | None:
        user = user_gpu_time(job)
        if user is not None:
            return user
        advised = advised_gpu_time(self._advice.get(job.job_id), job.spec.num_gpus)
        if advised is not None:
            self.counters.advisor_estimated += 1
            return advised
        self.counters.fallback += 1
        return super().estimate_gpu_time(job, view)

    def on_finish(self, job: JobState, view: ClusterView) -> None:
        super().on_finish(job, view)
        if job.end_time is not None:  # really over, not a failed attempt awaiting resubmission
            self.source.record(job, finished=True)
            self._advice.pop(job.job_id, None)

    def info(self) -> dict[str, Any]:
        """The adapter's counters and the source's."""
        c = self.counters
        unknown = c.arrivals - c.user_given
        return {
            **asdict(c),
            "advisor_share": c.advisor_estimated / unknown if unknown else 0.0,
            "source": self.source.stats(),
        }

    def run_stats(self) -> dict[str, Any]:
        return {**super().run_stats(), "schedmate": {k: v for k, v in asdict(self.counters).items()}}


# ------------------------------------------------------------------ the generic adapter arm

USER_SHARE = 0.3  # share of jobs whose user states a length (as the Ares case study's default)


def stated_lengths(jobs: Sequence[JobSpec], seed: int, gpus: int, *, share: float = USER_SHARE) -> PolicyWorld:
    """Ares's world attribute: a `share` of users (a draw per seed and job) state their job's length
    as what its code runs at nominal speed (`stated_plans_world`: no outcome) x its GPUs (`EST_KEY`);
    the others none."""
    return stated_plans_world(jobs, seed, gpus, key=EST_KEY, share=share, salt="user-length", times_gpus=True)


ADAPTER = PolicyAdapter(policy="ares", adapter=AresSchedMate, baseline=AresUserLengths, world=stated_lengths)
