"""Lines → per-job results: the Metric Tracker fed incrementally, and the Failure Handler when a
job ends badly.

When has a job "ended badly"? Two ways, both documented in the README:

1. **The scheduler says so** (`DaemonState.request_end(job, "failed")`, what `/v1/jobs/end`
   forwards): once the job's files are read to their end, its newest lines are diagnosed.
   Trusted input, so any failed status gets a diagnosis, signature or not.
2. **Idle + failure signature**: no new line for `idle_s` and the newest lines hold a failure
   signature (a Python traceback header, or a specific Failure-Handler rule: CUDA OOM, NCCL,
   Xid, ...). Log text is untrusted, so it only ever earns a *diagnosis* (the handler's plan is
   a dry run); a job idle without a signature is marked `idle`, never ended.

The diagnosis reads the job's last `tail_lines` lines held in memory (and in Redis, so it
survives a restart), never the whole file: a multi-GB log costs what its tail costs.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from schedmate.agents.failure.rules import RulesClassifier, clean_line, is_traceback_header
from schedmate.agents.failure.wire import diagnosis_of
from schedmate.agents.tracker.tracker import MetricTracker, NoSignal, TrackedLine, TrackerReport
from schedmate.deploy.daemon.model import Batch, Diagnosed, JobStatus
from schedmate.deploy.daemon.state import DaemonState, Sink

FAILED_STATUSES = frozenset({"failed", "timeout", "node_fail", "oom", "out_of_memory", "error"})
TAIL_LINE_BYTES = 1024  # a tail line kept for diagnosis is capped at this
MAX_FILES_LISTED = 8


@dataclass(frozen=True, slots=True)
class JobConfig:
    idle_s: float = 300.0
    tail_lines: int = 200  # the Failure Handler reads a 200-line window around the failure
    keep_progress: int = 64
    parse_window: int = 64  # lines handed to the tracker at a time, newest first (`_feed`)
    eval_every_s: float = 1.0
    signature_lines: int = 60  # the newest lines searched for a failure signature
    min_baseline_confidence: float = 0.5


@dataclass(slots=True)
class _Job:
    status: JobStatus
    progress: deque[TrackedLine]
    tail: deque[bytes]
    last_eval: float = 0.0
    dirty: bool = False
    loaded: bool = False  # progress lines and tail read back from Redis (`JobBook._loaded`)


@dataclass(slots=True)
class _Pending:
    """What one transaction will write for the jobs it touched."""

    jobs: dict[str, JobStatus] = field(default_factory=dict)
    progress: dict[str, list[tuple[float, bytes]]] = field(default_factory=dict)
    tail: dict[str, list[bytes]] = field(default_factory=dict)


class JobBook:
    """Per-job tracker state; `apply` one batch, `tick` for ends and idleness."""

    def __init__(
        self,
        state: DaemonState,
        tracker: MetricTracker,
        handler_factory: Callable[[], Any] | None,
        config: JobConfig | None = None,
        *,
        sink: Sink | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.state = state
        self.tracker = tracker
        self.handler_factory = handler_factory
        self.config = config or JobConfig()
        self.sink = sink
        self.clock = clock
        self._handler: Any = None
        self._rules = RulesClassifier()
        self._jobs: dict[str, _Job] = {}
        self.diagnoses = 0
        c = self.config
        for job_id, status in state.jobs().items():  # idle detection covers jobs seen before a restart
            self._jobs[job_id] = _Job(status, deque(maxlen=c.keep_progress), deque(maxlen=c.tail_lines))

    def job(self, job_id: str) -> JobStatus | None:
        j = self._jobs.get(job_id)
        return j.status if j else None

    def statuses(self) -> list[JobStatus]:
        return [j.status for j in self._jobs.values()]

    # -- batches ----------------------------------------------------------------------------

    def apply(self, batch: Batch) -> JobStatus | None:
        """Feed a batch's lines to its job and commit them with the file's new offset."""
        now = self.clock()
        pending = _Pending()
        job_id = batch.job_id
        if job_id is not None:
            job = self._get(job_id)
            st = job.status
            for ev in batch.events:
                if ev in ("renamed", "copy"):
                    st.rotations += 1
                elif ev == "truncated":
                    st.truncations += 1
            if batch.unreadable:
                st.unreadable = f"{batch.unreadable} ({batch.file.path if batch.file else 'a log'})"
            if batch.file is not None and batch.file.path not in st.files:
                st.files = [*st.files, batch.file.path][-MAX_FILES_LISTED:]
            if batch.lines:
                self._feed(job, batch, now, pending)
            pending.jobs[job_id] = st
        if not pending.jobs and batch.file is None and not batch.forget and not batch.retired:
            return None
        self._commit(batch, pending)
        return self._jobs[job_id].status if job_id is not None else None

    def _feed(self, job: _Job, batch: Batch, now: float, pending: _Pending) -> None:
        """Count every line; parse only the newest ones the estimate can use.

        The tracker's estimate reads the newest progress lines (`keep_progress` are kept), so a
        batch is parsed newest first in windows of `parse_window` lines until that many progress
        lines are found: a backlog of a million old lines costs a count, not a million regex
        passes (the tracker's own file pass reads newest first for the same reason)."""
        st = job.status
        lines = batch.lines
        nbytes = sum(len(ln.raw) for ln in lines) + len(lines)
        cut = sum(1 for ln in lines if ln.cut)
        joined = b"\n".join(ln.raw for ln in lines)
        if b"\x00" in joined or _undecodable(joined):  # rare: find the binary lines one by one
            lines = [ln for ln in lines if b"\x00" not in ln.raw and not _undecodable(ln.raw)]
        st.binary_lines += len(batch.lines) - len(lines)
        st.lines += len(batch.lines)
        st.bytes += nbytes
        st.cut_lines += cut
        tracked: list[TrackedLine] = []
        end, window, want = len(lines), self.config.parse_window, self.config.keep_progress
        while end > 0 and len(tracked) < want:
            rows = [(None, ln.offset, ln.raw, now) for ln in lines[max(0, end - window) : end]]
            got, binary = self.tracker.track_lines(rows)
            st.binary_lines += binary
            tracked[:0] = got
            end -= window
        st.parsed_lines += len(lines) - max(0, end)
        st.progress_lines += len(tracked)
        job.progress.extend(tracked)
        tail = [ln.raw[:TAIL_LINE_BYTES] for ln in lines[-self.config.tail_lines :]]
        job.tail.extend(tail)
        st.last_line_at = now
        if st.phase != "running" and st.end_status is None:
            st.phase = "running"  # an idle job printed again
        job.dirty = True
        pending.progress[st.job_id] = [(now, t.text.encode("utf-8", "replace")) for t in tracked[-want:]]
        pending.tail[st.job_id] = tail
        if now - job.last_eval >= self.config.eval_every_s:
            self._evaluate(job, now)

    # -- ends and idleness ------------------------------------------------------------------

    def tick(self, lag_by_job: dict[str, int]) -> list[JobStatus]:
        """Handle job-end calls whose logs are fully read, mark idle jobs, diagnose the ones that
        ended badly; refresh estimates not evaluated since their last lines. Returns changed jobs."""
        now = self.clock()
        changed: dict[str, JobStatus] = {}
        ends = self.state.pending_ends()
        done = 0
        for end in ends:
            job_id, status = str(end.get("job_id", "")), str(end.get("status", "")).lower()
            if lag_by_job.get(job_id, 0) > 0:
                break  # its log is not read to the end yet: keep this and later calls queued
            done += 1
            if not job_id:
                continue
            job = self._get(job_id)
            self._evaluate(job, now)
            job.status.end_status = status
            job.status.phase = "ended"
            if status in FAILED_STATUSES:
                job.status.phase = "failed"
                job.status.diagnosis = self._diagnose(job, f"end:{status}", now)
            changed[job_id] = job.status
        for job_id, job in self._jobs.items():
            st = job.status
            if job.dirty and now - job.last_eval >= self.config.eval_every_s:
                self._evaluate(job, now)
                changed[job_id] = st
            if st.phase != "running" or st.last_line_at is None or lag_by_job.get(job_id, 0) > 0:
                continue
            if now - st.last_line_at < self.config.idle_s:
                continue
            self._evaluate(job, now)
            if self._has_signature(job):
                st.phase = "failed"
                st.diagnosis = self._diagnose(job, "idle+signature", now)
            else:
                st.phase = "idle"
            changed[job_id] = st
        if changed or done:
            self._commit(None, _Pending(jobs=changed), ends_done=done)
        return list(changed.values())

    def _has_signature(self, job: _Job) -> bool:
        self._loaded(job)
        for raw in list(job.tail)[-self.config.signature_lines :]:
            text = clean_line(raw).text
            if is_traceback_header(text):
                return True
            rule = self._rules.match(text)
            if rule is not None and rule.specific:
                return True
        return False

    def _diagnose(self, job: _Job, trigger: str, now: float) -> Diagnosed:
        lines = list(job.tail)
        self.diagnoses += 1
        if self.handler_factory is None:
            return Diagnosed(status="skipped", message="no failure handler configured", trigger=trigger, at=now)
        try:
            if self._handler is None:
                self._handler = self.handler_factory()
            d = self._handler.diagnose_lines(lines, {"job_id": job.status.job_id}, log_path=",".join(job.status.files))
        except Exception as exc:  # noqa: BLE001 -- a diagnosis failure must not stop the daemon
            return Diagnosed(status="error", message=f"{type(exc).__name__}: {exc}"[:300], trigger=trigger, at=now)
        wire = diagnosis_of(d, first_line=_tail_start(job.status, len(lines)))
        return Diagnosed(**dict(wire), trigger=trigger, at=now)

    # -- estimates --------------------------------------------------------------------------

    def _evaluate(self, job: _Job, now: float) -> None:
        self._loaded(job)
        job.last_eval = now
        job.dirty = False
        st = job.status
        st.updated_at = now
        if not job.progress:
            st.signal = "no progress lines yet"
            return
        result = self.tracker.evaluate(reversed(job.progress), source="daemon")
        if isinstance(result, NoSignal) or not isinstance(result, TrackerReport):
            st.signal = result.reason
            return
        st.signal = None
        st.confidence, st.method = round(result.confidence, 4), result.method
        st.loss = result.loss.value if result.loss else None
        if result.throughput is not None:
            st.throughput, st.throughput_unit = result.throughput.value, result.throughput.unit
        if result.step_time is not None and result.step_time.value > 0:
            value = result.step_time.value
            st.step_time_s, st.last_step_time_s = value, result.step_time.last
            if result.confidence >= self.config.min_baseline_confidence:
                base = st.baseline_step_time_s
                st.baseline_step_time_s = value if base is None else min(base, value)
            if st.baseline_step_time_s:
                st.slowdown = round(value / st.baseline_step_time_s, 4)

    # -- plumbing ---------------------------------------------------------------------------

    def _get(self, job_id: str) -> _Job:
        job = self._jobs.get(job_id)
        if job is None:
            c = self.config
            job = self._jobs[job_id] = _Job(JobStatus(job_id=job_id), deque(maxlen=c.keep_progress),
                                            deque(maxlen=c.tail_lines))  # fmt: skip
        return self._loaded(job)

    def _loaded(self, job: _Job) -> _Job:
        """The job's progress lines and tail from Redis, on first use after a (re)start: its
        progress lines go through the tracker again (regex only, no file read), so estimates
        continue across a restart; jobs that never print again cost nothing."""
        if job.loaded:
            return job
        job.loaded = True
        job_id = job.status.job_id
        job.tail.extendleft(reversed(self.state.tail(job_id)))
        rows = [(None, None, line, ts) for ts, line in self.state.progress(job_id)]
        if rows:
            tracked, _ = self.tracker.track_lines(rows)
            job.progress.extendleft(reversed(tracked))
        return job

    def _commit(self, batch: Batch | None, pending: _Pending, *, ends_done: int = 0) -> None:
        c = self.config
        self.state.commit(batch, pending.jobs.values(), progress=pending.progress, tail=pending.tail,
                          keep_progress=c.keep_progress, keep_tail=c.tail_lines, ends_done=ends_done,
                          sink=self.sink)  # fmt: skip


def _undecodable(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _tail_start(st: JobStatus, kept: int) -> int | None:
    """The 1-based line number, in the job's log, of the first of the `kept` tail lines: known only
    while every line read was kept in order from one file (no binary line dropped, no rotation or
    truncation); None otherwise, so a diagnosis gives no line number rather than a wrong one."""
    if st.binary_lines or st.rotations or st.truncations or len(st.files) > 1:
        return None
    return st.lines - kept + 1

