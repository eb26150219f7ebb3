"""Scheduler-facing Metric Tracker API: job id → log path, tailed incrementally.

`JobLogRegistry` keeps one `LogTail` per job. Each `poll` reads only the bytes appended since the
last one (bounded per call; rotation, truncation and partial last lines handled by `tail.py`),
classifies the new lines once, and keeps the job's newest progress candidates (regex already
applied; an LLM answer, when one is needed, is cached on the line, so no line is sent twice).
Queries never reread the file.

Timestamps (needed by `throughput_before_after`): a line's own full date-time stamp when the log
prints one (`[2024-05-01 12:00:01,123]`, ISO 8601; a stamp without a zone is read in `line_tz`,
default this machine's local zone), else the registry's **observation time**, i.e. `clock()` at
the poll that first read the line. Observation times are only as fine as the polling interval,
and lines already in the file when a job is registered all get the registration poll's time
(they count as "before" any later `t`). Poll often (e.g. every scheduling round) when the log
has no stamps; `t` must be on the same clock as the stamps (POSIX seconds by default).

Throughput is `1 / step time` in steps/s when the log states a step time (spec §3.2), else
the logged rate in its own unit (samples/s, tokens/s, ...), else `1 / step time` derived from
line stamps and step counters. `throughput_before_after` compares
like with like: both sides in steps/s, or both in the same logged unit; otherwise no ratio.
"""

from __future__ import annotations

import dataclasses
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from schedmate.agents.tracker.tail import LogTail
from schedmate.agents.tracker.tracker import MetricTracker, NoSignal, TrackedLine, TrackerReport, TrackerResult

ATTR_JOB = "schedmate.tracker.job_id"
ATTR_NEW_LINES = "schedmate.tracker.new_lines"
ATTR_NEW_PROGRESS = "schedmate.tracker.new_progress_lines"
ATTR_BYTES = "schedmate.tracker.bytes_read"
ATTR_ROTATED = "schedmate.tracker.rotated"
ATTR_TRUNCATED = "schedmate.tracker.truncated"

JobId = Hashable


@dataclass(frozen=True, slots=True)
class Throughput:
    """A job's throughput from one tracker pass. `window` = (oldest, newest) timestamp used."""

    value: float
    unit: str
    step_time_s: float | None
    confidence: float
    method: str
    window: tuple[float | None, float | None]
    report: TrackerReport
    n: int = 0  # lines behind `value`


@dataclass(frozen=True, slots=True)
class ThroughputComparison:
    """Throughput of a job before and after time `t` (e.g. when another job was packed with it).

    `ratio` = after / before in a common unit (< 1 is a slowdown; spec §5.1 evicts below θ);
    None with `reason` when either side has no signal or the units differ.
    """

    t: float
    before: Throughput | None
    after: Throughput | None
    ratio: float | None
    unit: str | None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class PollResult:
    job_id: JobId
    new_lines: int
    new_progress_lines: int
    bytes_read: int
    rotated: bool = False
    truncated: bool = False
    missing: bool = False
    error: str | None = None  # the path is not a regular file (a FIFO, device, directory): not read


@dataclass(slots=True)
class _Job:
    path: Path
    tail: LogTail
    lines: deque[TrackedLine]
    total_lines: int = 0
    binary_lines: int = 0
    rotations: int = 0
    truncations: int = 0
    polls: int = 0
    last_poll: float | None = None
    partial_dropped: int = 0
    error: str | None = None  # the last poll's: not a regular file, or `unreadable: <why>`


class JobLogRegistry:
    """Job ids → tailed logs, and the throughput queries a scheduler asks (module docstring)."""

    def __init__(
        self,
        tracker: MetricTracker,
        *,
        clock: Callable[[], float] = time.time,
        keep_lines: int = 4096,
        attach_bytes: int | None = 8 << 20,
        max_poll_bytes: int = 64 << 20,
        max_read_bytes: int = 8 << 20,
    ) -> None:
        self.tracker = tracker
        self.clock = clock
        self.keep_lines = keep_lines
        self.attach_bytes = attach_bytes
        self.max_poll_bytes = max_poll_bytes
        self.max_read_bytes = max_read_bytes
        self._jobs: dict[JobId, _Job] = {}

    # -- membership -------------------------------------------------------------------------

    def register(
        self, job_id: JobId, path: str | Path, *, start: Literal["begin", "end"] | int | None = None
    ) -> None:
        """Track `path` for `job_id`. `start`: default the last `attach_bytes` of an existing log."""
        if job_id in self._jobs:
            self.unregister(job_id)
        begin: Literal["begin", "end"] | int = start if start is not None else (
            "begin" if self.attach_bytes is None else self.attach_bytes
        )  # fmt: skip
        tail = LogTail(path, start=begin, max_read_bytes=self.max_read_bytes)
        self._jobs[job_id] = _Job(Path(path), tail, deque(maxlen=self.keep_lines))

    def unregister(self, job_id: JobId) -> None:
        job = self._jobs.pop(job_id, None)
        if job is not None:
            job.tail.close()

    def jobs(self) -> list[JobId]:
        return list(self._jobs)

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._jobs

    def close(self) -> None:
        for job_id in list(self._jobs):
            self.unregister(job_id)

    # -- tailing ----------------------------------------------------------------------------

    def poll(self, job_id: JobId) -> PollResult:
        """Read what the job's log gained since the last poll; classify and keep its progress lines."""
        job = self._job(job_id)
        with self.tracker.tracer.start_as_current_span("metric_tracker.poll") as span:
            now = self.clock()
            new: list[tuple[int | None, int | None, bytes, float | None]] = []
            used = 0
            rotated = truncated = missing = False
            error: str | None = None
            while used < self.max_poll_bytes:
                got = job.tail.read(min(self.max_read_bytes, self.max_poll_bytes - used))
                used += got.bytes_read
                rotated |= got.rotated
                truncated |= got.truncated
                missing |= got.missing
                error = got.error or error
                job.partial_dropped += got.partial_dropped
                new.extend((ln.lineno, ln.offset, ln.raw, now) for ln in got.lines)
                if not got.more:
                    break
            tracked, binary = self.tracker.track_lines(new) if new else ([], 0)
            job.lines.extend(tracked)
            job.total_lines += len(new)
            job.binary_lines += binary
            job.rotations += rotated
            job.truncations += truncated
            job.polls += 1
            job.last_poll = now
            job.error = error
            span.set_attribute(ATTR_JOB, str(job_id))
            span.set_attribute(ATTR_NEW_LINES, len(new))
            span.set_attribute(ATTR_NEW_PROGRESS, len(tracked))
            span.set_attribute(ATTR_BYTES, used)
            span.set_attribute(ATTR_ROTATED, rotated)
            span.set_attribute(ATTR_TRUNCATED, truncated)
        return PollResult(job_id, len(new), len(tracked), used, rotated, truncated, missing, error)

    def poll_all(self) -> list[PollResult]:
        return [self.poll(job_id) for job_id in list(self._jobs)]

    # -- queries ----------------------------------------------------------------------------

    def report(
        self,
        job_id: JobId,
        *,
        before: float | None = None,
        since: float | None = None,
        max_lines: int | None = None,
        poll: bool = True,
    ) -> TrackerResult:
        """A tracker pass over the job's kept progress lines, newest first, optionally only those
        stamped before `before` / at or after `since`."""
        if poll:
            self.poll(job_id)
        job = self._job(job_id)
        result = self.tracker.evaluate(_window(job.lines, before, since), max_lines=max_lines, source="registry")
        if isinstance(result, NoSignal) and job.error:  # a log that cannot be read says why, not "no progress lines"
            return dataclasses.replace(result, reason=job.error)
        return result

    def current_throughput(self, job_id: JobId) -> Throughput | None:
        """The job's throughput now (newest lines), or None when its log does not say."""
        return _throughput(self.report(job_id))

    def throughput_before_after(
        self, job_id: JobId, t: float, *, min_after_lines: int = 3, max_lines: int | None = None
    ) -> ThroughputComparison:
        """Throughput from the newest lines stamped before `t` vs. the lines stamped at/after `t`
        (no ratio while fewer than `min_after_lines` timing lines follow `t`: spec §5.1 checks
        once A has run enough steps after packing)."""
        self.poll(job_id)
        before = _throughput(self.report(job_id, before=t, max_lines=max_lines, poll=False))
        after = _throughput(self.report(job_id, since=t, max_lines=max_lines, poll=False))
        if before is None:
            return ThroughputComparison(t, None, after, None, None, "no throughput signal before t")
        if after is None:
            return ThroughputComparison(t, before, None, None, None, "no throughput signal after t")
        if after.n < min_after_lines:
            return ThroughputComparison(
                t, before, after, None, None, f"only {after.n} line(s) after t (< {min_after_lines})"
            )
        if before.unit == after.unit:
            return ThroughputComparison(t, before, after, after.value / before.value, before.unit)
        b_rate = before.report.throughput
        a_rate = after.report.throughput
        if b_rate and a_rate and b_rate.unit == a_rate.unit and b_rate.value > 0:
            return ThroughputComparison(t, before, after, a_rate.value / b_rate.value, b_rate.unit)
        return ThroughputComparison(t, before, after, None, None, f"no common unit ({before.unit} vs {after.unit})")

    def stats(self, job_id: JobId) -> dict[str, object]:
        job = self._job(job_id)
        return {
            "path": str(job.path),
            "lines_read": job.total_lines,
            "binary_lines": job.binary_lines,
            "progress_lines_kept": len(job.lines),
            "rotations": job.rotations,
            "truncations": job.truncations,
            "partial_bytes_dropped": job.partial_dropped,
            "polls": job.polls,
            "last_poll": job.last_poll,
            "offset": job.tail.offset,
            "generation": job.tail.generation,
        }

    def _job(self, job_id: JobId) -> _Job:
        try:
            return self._jobs[job_id]
        except KeyError:
            raise KeyError(f"job {job_id!r} is not registered") from None


def _window(lines: deque[TrackedLine], before: float | None, since: float | None) -> Iterator[TrackedLine]:
    for line in reversed(lines):
        ts = line.timestamp
        if before is not None and (ts is None or ts >= before):
            continue
        if since is not None and (ts is None or ts < since):
            continue
        yield line


def _throughput(result: TrackerResult) -> Throughput | None:
    if isinstance(result, NoSignal) or not result:
        return None
    step_time = result.step_time
    if step_time is not None and (step_time.value <= 0 or (step_time.derived and result.throughput is not None)):
        step_time = None  # a logged rate is a direct measurement; a stamp-derived time is not
    used = step_time or result.throughput
    if used is None:
        return None
    stamps = [s.timestamp for s in used.lines if s.timestamp is not None]
    window = (min(stamps), max(stamps)) if stamps else (None, None)
    if step_time is not None:
        st = step_time.value
        return Throughput(1.0 / st, "steps/s", st, result.confidence, result.method, window, result, used.n)
    assert result.throughput is not None
    return Throughput(
        result.throughput.value, result.throughput.unit, None, result.confidence, result.method, window, result, used.n
    )
