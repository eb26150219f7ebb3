"""`LogDaemon`: a reader thread polls the log directory into a bounded queue; the processor feeds
the Metric Tracker, commits each batch with its offset to Redis, and handles job ends.

Backpressure: the queue holds at most `queue_batches` batches (each about `batch_bytes`), so
when logs grow faster than the tracker and Redis keep up, the reader blocks on the full queue and
stops reading: unread bytes wait on disk, not in memory, and show as `lag_bytes` in `stats()`
(per job in `lag_by_job`). Reads are fair: at most `file_budget` bytes per file per poll.

Redis down: the processor cannot commit, so it stops the reader, waits (backing off) until Redis
answers, and rebuilds everything from the committed state: the restart path, in process.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import redis

from schedmate.agents.stack import AgentStack, AgentStackConfig
from schedmate.agents.tracker.tracker import MetricTracker
from schedmate.deploy.daemon.follower import FollowConfig, Follower
from schedmate.deploy.daemon.jobs import JobBook, JobConfig
from schedmate.deploy.daemon.model import Batch, JobStatus
from schedmate.deploy.daemon.state import DaemonState, Sink
from schedmate.embeddings.lazy_classifier import LazyClassifier

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DaemonConfig:
    interval_s: float = 1.0
    queue_batches: int = 32
    follow: FollowConfig = field(default_factory=FollowConfig)
    jobs: JobConfig = field(default_factory=JobConfig)
    agents: AgentStackConfig = field(default_factory=AgentStackConfig)  # the deployed defaults (agents.stack)
    failure_method: str | None = None  # overrides agents.failure_method ("learned" | "rules" | "llm")

    @property
    def stack_config(self) -> AgentStackConfig:
        if self.failure_method is None:
            return self.agents
        return replace(self.agents, failure_method=self.failure_method)  # type: ignore[arg-type]  # a config string; AgentStackConfig validates it


@dataclass(frozen=True, slots=True)
class _Tick:
    lag_by_job: dict[str, int]


def default_handler_factory(classifier: Any, config: AgentStackConfig | str) -> Callable[[], Any]:
    """Builds the agent stack's Failure Handler when the first job fails (`config`: the stack's
    config, or just a failure method over the deployed defaults)."""
    cfg = config if isinstance(config, AgentStackConfig) else AgentStackConfig(failure_method=config)  # type: ignore[arg-type]  # a config string; AgentStackConfig validates it

    def build() -> Any:
        clf = classifier.get() if isinstance(classifier, LazyClassifier) else classifier
        return AgentStack(cfg, classifier=clf).handler(prepare=True)

    return build


class LogDaemon:
    """Follows `logs_dir`; per-job results and offsets in `state` (see the module docstring)."""

    def __init__(
        self,
        logs_dir: str | Path,
        state: DaemonState,
        *,
        config: DaemonConfig | None = None,
        tracker: MetricTracker | None = None,
        handler_factory: Callable[[], Any] | None = None,
        classifier: Any = None,
        sink: Sink | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.logs_dir = Path(logs_dir)
        if not self.logs_dir.is_dir():
            raise NotADirectoryError(f"--logs {self.logs_dir}: not a directory")
        self.state = state
        self.config = config or DaemonConfig()
        clf = classifier if classifier is not None else LazyClassifier()
        self.agents = AgentStack(self.config.stack_config, classifier=clf)  # no LLM: the daemon reads logs alone
        self.tracker = tracker or self.agents.tracker()
        self.handler_factory = handler_factory or default_handler_factory(clf, self.config.stack_config)
        self.sink = sink
        self.clock = clock
        self._queue: queue.Queue[Batch | _Tick] = queue.Queue(maxsize=self.config.queue_batches)
        self._changed: dict[str, JobStatus] = {}
        self._t0 = time.monotonic()
        self.redis_errors = 0
        self.reader_errors = 0
        self.batch_errors = 0
        self._queued_bytes = 0  # read into the queue, not yet committed: part of the lag
        self._queued_lock = threading.Lock()
        self._build()

    def _build(self) -> None:
        """Follower and job book from the committed state (start, restart, Redis back)."""
        self.follower = Follower(self.logs_dir, self.config.follow, clock=self.clock)
        self.follower.restore(self.state.files())
        self.jobs = JobBook(self.state, self.tracker, self.handler_factory, self.config.jobs, sink=self.sink,
                            clock=self.clock)  # fmt: skip

    # -- one pass (tests, `--once`, cron) ---------------------------------------------------

    def run_once(self, *, max_polls: int = 1000) -> list[JobStatus]:
        """Read everything there is now (poll until a poll reads nothing), then handle ends and
        idleness. Returns the jobs that changed."""
        for _ in range(max_polls):
            got = 0
            for batch in self.follower.poll():
                got += batch.nbytes + len(batch.events)
                self._apply(batch)
            if got == 0:
                break
        self._tick(_Tick(dict(self.follower.stats.lag_by_job)))
        return self.take_changed()

    # -- the service loop -------------------------------------------------------------------

    def run(self, stop: threading.Event, on_tick: Callable[[list[JobStatus]], None] | None = None) -> None:
        """Follow until `stop` is set. `on_tick` gets the jobs changed since the last tick."""
        while not stop.is_set():
            reader_stop = threading.Event()
            reader = threading.Thread(target=self._read_loop, args=(stop, reader_stop), name="daemon-reader", daemon=True)
            reader.start()
            try:
                self._process_loop(stop, on_tick)
            except redis.RedisError as exc:
                self.redis_errors += 1
                log.warning("redis unavailable (%s): pausing, will resume from the committed state", exc)
            reader_stop.set()
            reader.join()  # first stop the reader, then empty the queue: no stale batch survives
            self._drain_queue()
            if not stop.is_set():
                self._rebuild(stop)
        self.follower.close()

    def _read_loop(self, stop: threading.Event, reader_stop: threading.Event) -> None:
        interval = self.config.interval_s
        while not (stop.is_set() or reader_stop.is_set()):
            t0 = time.monotonic()
            read = 0
            try:
                for batch in self.follower.poll():
                    read += batch.nbytes
                    if not self._put(batch, stop, reader_stop):
                        return
            except Exception as exc:  # noqa: BLE001 -- a vanished folder, EIO, a bug: log it, poll again
                self.reader_errors += 1
                log.warning("poll failed: %s", exc)
            if not self._put(_Tick(dict(self.follower.stats.lag_by_job)), stop, reader_stop):
                return
            if read < self.config.follow.poll_budget:  # caught up: wait; else read on at once
                reader_stop.wait(max(0.0, interval - (time.monotonic() - t0)))

    def _put(self, item: Batch | _Tick, stop: threading.Event, reader_stop: threading.Event) -> bool:
        while not (stop.is_set() or reader_stop.is_set()):
            try:
                self._queue.put(item, timeout=0.1)  # blocks while the queue is full: backpressure
                if isinstance(item, Batch):
                    with self._queued_lock:
                        self._queued_bytes += item.nbytes
                return True
            except queue.Full:
                continue
        return False

    def _process_loop(self, stop: threading.Event, on_tick: Callable[[list[JobStatus]], None] | None) -> None:
        while not stop.is_set():
            try:
                item = self._queue.get(timeout=0.1)
            except queue.Empty:
                continue
            if isinstance(item, _Tick):
                self._tick(item)
                if on_tick is not None:
                    on_tick(self.take_changed())
            else:
                self._apply(item)
                with self._queued_lock:
                    self._queued_bytes -= item.nbytes

    def _drain_queue(self) -> None:
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                with self._queued_lock:
                    self._queued_bytes = 0
                return

    def _rebuild(self, stop: threading.Event) -> None:
        """Wait (backing off) until Redis answers, then start over from the committed state."""
        delay = 0.1
        self.follower.close()
        while not stop.is_set():
            try:
                self.state.client.ping()
                self._build()
                return
            except redis.RedisError:
                stop.wait(delay)
                delay = min(5.0, delay * 2)

    # -- shared -----------------------------------------------------------------------------

    def _apply(self, batch: Batch) -> None:
        try:
            status = self.jobs.apply(batch)
        except redis.RedisError:
            raise
        except Exception as exc:  # noqa: BLE001 -- one bad batch must not stop the daemon
            self.batch_errors += 1
            log.warning("batch from %s failed (%s: %s); its lines are skipped", batch.file and batch.file.path,
                        type(exc).__name__, exc)  # fmt: skip
            self.state.commit(batch)  # keep offsets consistent: the lines count as read
            return
        if status is not None and (batch.lines or batch.events):
            self._changed[status.job_id] = status

    def _tick(self, tick: _Tick) -> None:
        for st in self.jobs.tick(tick.lag_by_job):
            self._changed[st.job_id] = st
        self.state.put_stats(self.stats())

    def take_changed(self) -> list[JobStatus]:
        out, self._changed = list(self._changed.values()), {}
        return out

    def stats(self) -> dict[str, Any]:
        """Counters for operators (and the telemetry exporter): plain numbers, no Prometheus here."""
        fs = self.follower.stats
        up = max(1e-9, time.monotonic() - self._t0)
        return {
            "files": fs.files, "jobs": len(self.jobs.statuses()), "polls": fs.polls, "lines": fs.lines,
            "bytes_read": fs.bytes_read, "lines_per_s": round(fs.lines / up, 1),
            "lag_bytes": fs.lag_bytes + self._queued_bytes, "unread_bytes": fs.lag_bytes, "queued_bytes": self._queued_bytes,
            "queue_depth": self._queue.qsize(), "queue_max": self.config.queue_batches,
            "rotations": fs.rotations, "truncations": fs.truncations, "deletions": fs.deletions,
            "copies": fs.copies, "shadows": fs.shadows, "diagnoses": self.jobs.diagnoses, "redis_errors": self.redis_errors,
            "reader_errors": self.reader_errors, "batch_errors": self.batch_errors, "at": self.clock(),
        }  # fmt: skip

    def close(self) -> None:
        self.follower.close()
