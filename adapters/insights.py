"""What the SchedMate agents tell a scheduler adapter about one job, and where it comes from.

Adapters (`lucid_adapter`, `sia_adapter`, `standalone`) never call the agents themselves: they
ask an `InsightSource`. In simulation the source is `semantic_sim.SimulationInsights` (real
advisor / tracker / failure handler over generated code and logs, cached by content hash,
thinned by a detection rate, or replayed from a precomputed JSON file); in a live deployment
it would wrap the running services. Every method may return None: "SchedMate does not know",
and the adapter then keeps the reference scheduler's own behaviour.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from schedmate.schedulers.job import JobState

__all__ = ["NO_FAILSLOW", "AdvisorInsight", "FailSlowSignal", "FailSlowSource", "FailureInsight", "InsightSource",
           "TrackerReading", "failslow_of"]


@dataclass(frozen=True)
class AdvisorInsight:
    """The Scheduling Advisor's answer at submission (k' = len(similar_ids) matches above T)."""

    similar_ids: tuple[str, ...]  # historical jobs, most similar first
    duration_s: float | None  # mean duration of all matches
    duration_top3_s: float | None  # mean duration of the 3 most similar (standalone SJF)
    sm_util: float | None  # mean SM utilisation of the matches, percent
    gpu_mem_gb: float | None = None
    metrics: Mapping[str, float] = field(default_factory=dict)  # mean historical single-job metrics
    latency_s: float = 0.0  # wall time the advisor took (simulated jobs wait this long)
    duration_p90_s: float | None = None  # upper end of the estimate's 10-90 % interval (Slurm's time-limit rule)

    @property
    def matched(self) -> bool:
        return len(self.similar_ids) > 0


@dataclass(frozen=True)
class TrackerReading:
    """The Metric Tracker's throughput of a running job, from its own log lines."""

    before: float | None  # steps/s before the reference time (None: no signal)
    after: float | None  # steps/s after it, once warm-up is over

    @property
    def ratio(self) -> float | None:
        if self.before is None or self.after is None or self.before <= 0:
            return None
        return self.after / self.before


@dataclass(frozen=True)
class FailureInsight:
    """The Failure Handler's diagnosis of a failed attempt."""

    infrastructure: bool
    category: str  # infrastructure / framework / script
    reason: str
    component: str | None = None
    action: str | None = None  # first allow-listed recovery action proposed (dry-run)
    latency_s: float = 0.0
    node: str | None = None  # the host the diagnosis names (when the source reads one from the log)
    line: int | None = None  # 0-based root-cause line the handler located (`Located.line_no`)
    block_line: int | None = None  # 0-based first line of its failure block (`Located.block`)


@dataclass(frozen=True)
class FailSlowSignal:
    """The fail-slow detector's verdict on a running job, from its own log (`agents.tracker.failslow`).

    `scope`: "none" (no slowdown seen), "job" (job-wide), "rank" or "host" (localised: `rank`, `host`).
    `since_line` / `since_step`: where the slowed regime began in the log; `ratio`: step time now /
    before (1.25 = 25% slower)."""

    detected: bool
    ratio: float | None = None
    confidence: float = 0.0
    since_line: int | None = None
    since_step: int | None = None
    scope: str = "none"
    rank: int | None = None
    host: str | None = None
    reason: str = ""


NO_FAILSLOW = FailSlowSignal(detected=False, reason="no signal")


@runtime_checkable
class FailSlowSource(Protocol):
    """An `InsightSource` that also reads fail-slow signals (an optional capability: sources
    without it answer "no signal" through `failslow_of`)."""

    def failslow(self, job: JobState, *, now: float, since: float | None = None) -> FailSlowSignal:
        """Whether `job` runs slower than it did, from its log as written by `now`; with `since`,
        only a slowdown that began after that time (e.g. when the scheduler packed a job onto it)."""


def failslow_of(source: object, job: JobState, *, now: float, since: float | None = None) -> FailSlowSignal:
    """`source.failslow(...)`, or `NO_FAILSLOW` for a source that does not read fail-slow signals."""
    if isinstance(source, FailSlowSource):
        return source.failslow(job, now=now, since=since)
    return NO_FAILSLOW


@runtime_checkable
class InsightSource(Protocol):
    def advise(self, job: JobState) -> AdvisorInsight | None:
        """At submission; None when the job has no artefact or was not detected."""

    def track(self, job: JobState, *, event_at: float, now: float) -> TrackerReading | None:
        """Throughput of running `job` before and after `event_at` (an event the scheduler itself
        caused, e.g. packing a newcomer onto its GPUs), read from the job's log as written by
        `now`; None: no reading (too few lines yet, no progress lines, no log). The call carries
        no speed or slowdown: whatever changed must show in the log."""

    def diagnose(self, job: JobState, *, attempt: int) -> FailureInsight | None:
        """Diagnosis of the job's failed attempt; None when its log was not diagnosed."""

    def record(self, job: JobState, *, finished: bool) -> None:
        """Tell the source about a job of this run: at arrival (`finished=False`, its fingerprint
        becomes history that later jobs can match) and at its end (`finished=True`, with the
        outcome the simulator measured). Sources with a fixed history may ignore it."""

    def stats(self) -> dict[str, Any]:
        """Counters for reports: calls, cache hits, LLM calls, detections."""
