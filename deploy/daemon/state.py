"""The daemon's state in Redis, and the read API the service / an `InsightSource` uses.

Keys (prefix `schedmate` by default):

| key | type | holds |
|---|---|---|
| `{p}:daemon:files` | hash | file key → `FileState` JSON (offset, anchors, generation, status) |
| `{p}:daemon:jobs` | hash | job id → `JobStatus` JSON (step time, slowdown, loss, diagnosis, ...) |
| `{p}:daemon:progress:{job}` | list | the job's newest progress lines (`observed_at\\tline`), capped |
| `{p}:daemon:tail:{job}` | list | the job's newest lines (for a diagnosis after a restart), capped |
| `{p}:daemon:ends` | list | job-end calls from the scheduler/service, oldest first |
| `{p}:daemon:stats` | string | the running daemon's counters (JSON), refreshed every poll |

Everything a batch of lines changes is written in ONE MULTI/EXEC (`commit`): the file's new
offset together with what the lines did to the job. A crash before EXEC leaves the old offset and
the old results (the lines are read again, nothing was counted); after EXEC, both. That is what
makes a restart neither lose nor re-read a line.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from typing import Any

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from schedmate.deploy.daemon.model import Batch, FileState, JobStatus

DEFAULT_PREFIX = "schedmate"
Sink = Callable[[Any, Batch], None]  # (pipeline, batch): extra writes in the batch's transaction


class DaemonState:
    """Per-file offsets and per-job results in Redis (see the module docstring)."""

    def __init__(self, client: redis.Redis, prefix: str = DEFAULT_PREFIX) -> None:
        self.client = client
        self.prefix = f"{prefix}:daemon"

    @classmethod
    def connect(cls, url: str, *, prefix: str = DEFAULT_PREFIX, retries: int = 3, timeout_s: float = 5.0) -> DaemonState:
        """Connect with bounded retries; raises `redis.ConnectionError` (one line) when unreachable."""
        client = redis.Redis.from_url(url, retry=Retry(ExponentialBackoff(cap=1.0, base=0.05), retries),
                                      socket_timeout=timeout_s, socket_connect_timeout=timeout_s, protocol=2)  # fmt: skip
        client.ping()
        return cls(client, prefix)

    def close(self) -> None:
        self.client.close()

    # -- keys -------------------------------------------------------------------------------

    @property
    def files_key(self) -> str:
        return f"{self.prefix}:files"

    @property
    def jobs_key(self) -> str:
        return f"{self.prefix}:jobs"

    @property
    def ends_key(self) -> str:
        return f"{self.prefix}:ends"

    def progress_key(self, job_id: str) -> str:
        return f"{self.prefix}:progress:{job_id}"

    def tail_key(self, job_id: str) -> str:
        return f"{self.prefix}:tail:{job_id}"

    # -- the read API (service, InsightSource, CLI) ------------------------------------------

    def job(self, job_id: str) -> JobStatus | None:
        """What the daemon knows about `job_id` (step time, slowdown, diagnosis), or None."""
        raw = self.client.hget(self.jobs_key, job_id)
        return JobStatus.model_validate_json(raw) if raw else None

    def jobs(self) -> dict[str, JobStatus]:
        return {_text(k): JobStatus.model_validate_json(v) for k, v in self.client.hgetall(self.jobs_key).items()}

    def slowed_down(self, threshold: float = 1.2) -> dict[str, float]:
        """Running jobs whose steady step time is at least `threshold` x their own baseline
        (what a scheduler checks before packing more work next to them)."""
        return {j: s.slowdown for j, s in self.jobs().items()
                if s.phase == "running" and s.slowdown is not None and s.slowdown >= threshold}  # fmt: skip

    def request_end(self, job_id: str, status: str) -> None:
        """The scheduler's word that a job ended (`failed` gets a diagnosis once its logs are read)."""
        self.client.rpush(self.ends_key, json.dumps({"job_id": job_id, "status": status, "at": time.time()}))

    def stats(self) -> dict[str, Any]:
        raw = self.client.get(f"{self.prefix}:stats")
        return json.loads(raw) if raw else {}

    # -- the daemon's side ------------------------------------------------------------------

    def files(self) -> list[FileState]:
        return [FileState.from_json(_text(k), json.loads(v)) for k, v in self.client.hgetall(self.files_key).items()]

    def progress(self, job_id: str) -> list[tuple[float, bytes]]:
        out = []
        for item in self.client.lrange(self.progress_key(job_id), 0, -1):
            ts, _, line = _raw(item).partition(b"\t")
            out.append((float(ts), line))
        return out

    def tail(self, job_id: str) -> list[bytes]:
        return [_raw(item) for item in self.client.lrange(self.tail_key(job_id), 0, -1)]

    def pending_ends(self, limit: int = 100) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.client.lrange(self.ends_key, 0, limit - 1)]

    def put_stats(self, stats: dict[str, Any]) -> None:
        self.client.set(f"{self.prefix}:stats", json.dumps(stats))

    def commit(
        self,
        batch: Batch | None,
        jobs: Iterable[JobStatus] = (),
        *,
        progress: dict[str, list[tuple[float, bytes]]] | None = None,
        tail: dict[str, list[bytes]] | None = None,
        keep_progress: int = 256,
        keep_tail: int = 200,
        ends_done: int = 0,
        sink: Sink | None = None,
    ) -> None:
        """One transaction: the batch's file state, retired/forgotten files, job results."""
        pipe = self.client.pipeline(transaction=True)
        if batch is not None:
            for key in batch.forget:
                pipe.hdel(self.files_key, key)
            for ghost in batch.retired:
                pipe.hset(self.files_key, ghost.key, json.dumps(ghost.to_json()))
            if batch.file is not None:
                pipe.hset(self.files_key, batch.file.key, json.dumps(batch.file.to_json()))
        for job in jobs:
            pipe.hset(self.jobs_key, job.job_id, job.model_dump_json())
        for job_id, rows in (progress or {}).items():
            if rows:
                pipe.rpush(self.progress_key(job_id), *(f"{ts:.3f}".encode() + b"\t" + line for ts, line in rows))
                pipe.ltrim(self.progress_key(job_id), -keep_progress, -1)
        for job_id, lines in (tail or {}).items():
            if lines:
                pipe.rpush(self.tail_key(job_id), *lines[-keep_tail:])
                pipe.ltrim(self.tail_key(job_id), -keep_tail, -1)
        if ends_done:
            pipe.ltrim(self.ends_key, ends_done, -1)
        if sink is not None and batch is not None:
            sink(pipe, batch)
        pipe.execute()


# The client is not asked to decode replies: they are bytes (the helpers say so to the type checker).
def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _raw(value: bytes | str) -> bytes:
    return value if isinstance(value, bytes) else value.encode()
