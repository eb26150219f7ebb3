"""What the SchedMate agents tell a scheduler adapter about one job, and where it comes from.

Adapters (`adapters.lucid`, `adapters.sia`, `adapters.standalone`, ...) never call the agents
themselves: they ask an `InsightSource`. In simulation the source is `sim.semantic.SimulationInsights`
(real advisor / tracker / failure handler over generated code and logs, cached by content hash,
thinned by a detection rate, or replayed from a precomputed JSON file); live, it is
`deploy.service.live_source.LiveInsights` over the running service. `InsightSource` is a base
class whose every answer defaults to "SchedMate does not know"; the adapter then keeps the
reference scheduler's own behaviour. Hooks that only a simulated world can answer (the true
cause of a failure, how the world writes a failed log) live on `SimulatedWorld`, apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from schedmate.schedulers.job import JobState

if TYPE_CHECKING:
    from schedmate.agents.tracker.failslow import FailSlowAlert

__all__ = ["NO_FAILSLOW", "NO_SLOWDOWN", "AdvisorInsight", "FailSlowSignal", "FailedLogStyle", "FailureInsight", "InsightSource",
           "SimulatedWorld", "TrackerReading"]


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

    @classmethod
    def of(cls, alert: FailSlowAlert | None) -> FailSlowSignal:
        """The detector's alert as the scheduler's signal, the one conversion every source uses;
        None (the log was read and shows no sustained slowdown) is `NO_SLOWDOWN`."""
        if alert is None:
            return NO_SLOWDOWN
        return cls(detected=True, ratio=alert.ratio, confidence=alert.confidence, since_line=alert.since_line,
                   since_step=alert.since_step, scope=alert.scope, rank=alert.rank, host=alert.host,
                   reason=alert.describe())


NO_FAILSLOW = FailSlowSignal(detected=False, reason="no signal")
NO_SLOWDOWN = FailSlowSignal(detected=False, reason="no sustained slowdown in the log")


class InsightSource:
    """Where an adapter gets SchedMate's answers about one job.

    Every answer has a default that means "SchedMate does not know" (None, `NO_FAILSLOW`, no
    counters), so a source overrides only what it reads; the adapter then keeps the reference
    scheduler's own behaviour for the rest. Callers ask every source the same way: no answer is
    looked up by name."""

    def advise(self, job: JobState) -> AdvisorInsight | None:
        """At submission; None when the job has no artefact or was not detected."""
        return None

    def track(self, job: JobState, *, event_at: float, now: float) -> TrackerReading | None:
        """Throughput of running `job` before and after `event_at` (an event the scheduler itself
        caused, e.g. packing a newcomer onto its GPUs), read from the job's log as written by
        `now`; None: no reading (too few lines yet, no progress lines, no log). The call carries
        no speed or slowdown: whatever changed must show in the log."""
        return None

    def failslow(self, job: JobState, *, now: float, since: float | None = None) -> FailSlowSignal:
        """Whether `job` runs slower than it did, from its log as written by `now`; with `since`,
        only a slowdown that began after that time (e.g. when the scheduler packed a job onto it)."""
        return NO_FAILSLOW

    def diagnose(self, job: JobState, *, attempt: int) -> FailureInsight | None:
        """Diagnosis of the job's failed attempt; None when its log was not diagnosed."""
        return None

    def record(self, job: JobState, *, finished: bool) -> None:
        """Tell the source about a job of this run: at arrival (`finished=False`, its fingerprint
        becomes history that later jobs can match) and at its end (`finished=True`, with the
        outcome the simulator measured). Sources with a fixed history ignore it (the default)."""
        return None

    def stats(self) -> dict[str, Any]:
        """Counters for reports: calls, cache hits, LLM calls, detections (default: none)."""
        return {}

    def advice_log(self) -> dict[str, float | None] | None:
        """The duration each advised job was given (None inside: no estimate), for estimate
        quality; None (the default): this source keeps no log, so no quality is reported."""
        return None

    def close(self) -> None:
        """Release what the source holds (stores, work folders); the default holds nothing."""
        return None


@dataclass(frozen=True)
class FailedLogStyle:
    """How the simulated world writes a failed attempt's log so that a source can read it:
    the job's artefact (None: the source knows no artefact for this job, so no log is written
    and no diagnosis made) and the source's log settings."""

    artefact: Any
    seed: int
    variants: int
    n_lines: int


class SimulatedWorld(InsightSource):
    """An insight source that runs inside the simulator, with hooks only a simulated world can
    answer. The world (`sim.failures.CauseDiagnosis`) and counters use them; no scheduling
    decision reads them, and no live source has them. Defaults: not known / not offered."""

    def failure_truth(self, job: JobState, attempt: int) -> bool | None:
        """Whether the attempt's true cause was an infrastructure failure (counters only: true
        and false positives); None when the source does not know the world's cause."""
        return None

    def diagnose_cause(self, job: JobState, *, attempt: int, cause: Any) -> FailureInsight | None:
        """The diagnosis of a failed attempt whose true cause (`sim.failures.Cause`) the world
        knows. Default: `diagnose`, which reads the log the world wrote (`failed_log_style`);
        sensitivity sources draw their answer from `cause` and read no log."""
        return self.diagnose(job, attempt=attempt)

    def failed_log_style(self, job_id: str) -> FailedLogStyle | None:
        """How the world writes this job's failed logs for the source to read; None (the
        default): the source reads no written logs."""
        return None

    def locate_failure(self, path: str) -> tuple[int | None, int | None] | None:
        """(root-cause line, block line), 0-based, that the source's Failure Handler locates in
        the log at `path` ((None, None): none located); None (the default): no handler."""
        return None

