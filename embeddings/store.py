"""Job history in Redis: records of past jobs, searchable by embedding similarity.

A new job is matched against historical jobs by cosine similarity of their embeddings; the matches'
outcomes (duration, utilisation, failures) become scheduling signals. Each job is one Redis hash
(`vector`: unit float32 bytes, `record`: the rest as JSON), written together with its change-stream
entry in one MULTI/EXEC so readers never see a partial record. Search runs inside Redis when the
server has the search module, else on an exact in-process mirror (see `store_search`).

    store = JobStore.connect("redis://127.0.0.1:6379/0", dim=384)
    store.put(JobRecord(job_id="j1", vector=vec, submitted={"user": "alice", "gpus": 8}))
    store.search(query_vec, k=10, threshold=0.8)  # -> [Match(job_id="j1", score=0.93), ...]
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Literal, cast

import numpy as np
import redis
from opentelemetry.trace import Span, Tracer
from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from schedmate.embeddings.store_search import ExactSearch, ServerSearch, StoreKeys, has_vector_search, vector_to_bytes
from schedmate.embeddings.vector_index import Vector, normalise, normalise_many
from schedmate.errors import DependencyUnavailable
from schedmate.schedulers.job import FinalStatus
from schedmate.tracing import get_tracer

SearchPath = Literal["auto", "exact", "server"]
DEFAULT_PREFIX = "schedmate"


class StoreError(DependencyUnavailable):
    """The job store cannot do what was asked (configuration or server capability)."""


class StoreUnavailable(StoreError):
    """Redis could not be reached after bounded retries; the message names host:port."""


class JobOutcome(BaseModel):
    """What happened when the job ran; every field is optional until the job has finished."""

    model_config = ConfigDict(extra="forbid")

    duration: float | None = Field(None, ge=0, description="run time, seconds")
    gpu_util: float | None = Field(None, ge=0, le=100, description="mean GPU utilisation, %")
    sm_util: float | None = Field(None, ge=0, le=100, description="mean SM activity, %")
    gpu_memory: float | None = Field(None, ge=0, description="peak GPU memory per GPU, GiB")
    final_status: FinalStatus | None = None
    failure_category: str | None = None
    failure_reason: str | None = None
    throughput_model: str | dict[str, Any] | None = Field(
        None, description="reference to (or parameters of) the job's fitted throughput model"
    )
    # measured from the run's own logs (progress tracker); optional, so older records still load
    startup_s: float | None = Field(None, ge=0, description="launch to first training step, seconds")
    step_time_s: float | None = Field(None, gt=0, description="wall seconds per optimizer step, evaluation included")
    steps_done: int | None = Field(None, ge=0, description="optimizer steps completed")
    steps_total: int | None = Field(None, ge=0, description="optimizer steps the run planned, as its logs announce")
    steps_per_epoch: int | None = Field(None, gt=0, description="optimizer steps per epoch, when logged")


class JobRecord(BaseModel):
    """One historical job: what was submitted, what was extracted from it, its embedding, its outcome."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    job_id: str = Field(min_length=1)
    vector: Vector
    submitted: dict[str, Any] = Field(default_factory=dict, description="user, gpus, name, ... as submitted")
    workload: dict[str, Any] = Field(default_factory=dict, description="extracted workload metadata")
    outcome: JobOutcome = Field(default_factory=JobOutcome)

    @field_validator("vector", mode="before")
    @classmethod
    def _as_float32(cls, value: Any) -> Vector:
        arr = np.asarray(value, dtype=np.float32)
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError(f"vector must be a non-empty 1-D array, got shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError("vector contains NaN or infinite values")
        return arr

    @field_serializer("vector")
    def _vector_as_list(self, value: Vector) -> list[float]:
        return [float(x) for x in value]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, JobRecord):
            return NotImplemented
        return self.model_dump(exclude={"vector"}) == other.model_dump(exclude={"vector"}) and bool(
            np.array_equal(self.vector, other.vector)
        )

    __hash__ = None  # type: ignore[assignment]  # mutable model, like the pydantic default


class Match(BaseModel):
    """A search hit: cosine similarity in [-1, 1], and the record when asked for."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    score: float
    record: JobRecord | None = None


def _record_json(record: JobRecord) -> bytes:
    return record.model_dump_json(exclude={"vector"}).encode()


def _record_from(raw: dict[bytes, bytes]) -> JobRecord:
    data = json.loads(raw[b"record"])
    data["vector"] = np.frombuffer(raw[b"vector"], dtype="<f4").astype(np.float32)
    return JobRecord.model_validate(data)


class JobStore:
    """Job records in Redis with cosine top-k search; build it with `JobStore.connect`."""

    def __init__(
        self,
        client: redis.Redis,
        dim: int,
        *,
        prefix: str = DEFAULT_PREFIX,
        path: SearchPath = "auto",
        algorithm: str = "HNSW",
        stream_maxlen: int = 10_000,
        tracer: Tracer | None = None,
    ) -> None:
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        self._client = client
        self.dim = dim
        self.keys = StoreKeys(prefix)
        self.stream_maxlen = stream_maxlen
        self._tracer = get_tracer(tracer)
        kwargs = client.connection_pool.connection_kwargs
        self.address = kwargs.get("path") or f"{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}"
        with self._translate_errors():
            client.ping()
            self._check_dim()
            client.set(self.keys.epoch, uuid.uuid4().hex, nx=True)
            server_ok = has_vector_search(client)
            if path == "server" and not server_ok:
                raise StoreError(f"Redis at {self.address} has no vector search module (need RediSearch >= 2.4)")
            use_server = path == "server" or (path == "auto" and server_ok)
            self._search: ExactSearch | ServerSearch = (
                ServerSearch(client, self.keys, dim, algorithm) if use_server else ExactSearch(client, self.keys, dim)
            )

    @classmethod
    def connect(
        cls,
        url: str,
        dim: int,
        *,
        prefix: str = DEFAULT_PREFIX,
        path: SearchPath = "auto",
        algorithm: str = "HNSW",
        stream_maxlen: int = 10_000,
        retries: int = 3,
        timeout_s: float = 2.0,
        tracer: Tracer | None = None,
    ) -> JobStore:
        """Connect (reconnecting with exponential backoff, `retries` times) and pick the search path.

        `path="auto"` uses server-side KNN when the server supports it, else the exact mirror.
        Raises `StoreUnavailable` when Redis cannot be reached, `ValueError` when the store at
        `prefix` already holds vectors of another dimension.
        """
        retry = Retry(ExponentialBackoff(cap=1.0, base=0.05), retries)
        client = redis.Redis.from_url(
            url,
            retry=retry,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            health_check_interval=30,
            protocol=2,
        )
        return cls(
            client, dim, prefix=prefix, path=path, algorithm=algorithm, stream_maxlen=stream_maxlen, tracer=tracer
        )

    @property
    def path(self) -> Literal["exact", "server"]:
        """Which search path this store uses."""
        return self._search.name

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> JobStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def put(self, record: JobRecord) -> None:
        """Insert or replace one record (atomically with its change-stream entry)."""
        self.put_many([record])

    def put_many(self, records: Iterable[JobRecord], batch_size: int = 1000) -> int:
        """Insert or replace records; each batch of `batch_size` is one MULTI/EXEC. Returns the count.

        Every vector is validated (dimension, NaN, zero) before anything is written.
        """
        records = list(records)
        unit = normalise_many([r.vector for r in records], self.dim)
        with self._span("store.put", {"store.records": len(records)}), self._translate_errors():
            for start in range(0, len(records), batch_size):
                batch = records[start : start + batch_size]
                pipe = self._client.pipeline(transaction=True)
                for record, vec in zip(batch, unit[start : start + batch_size], strict=True):
                    pipe.hset(self.keys.job(record.job_id),
                              mapping={b"vector": vector_to_bytes(vec), b"record": _record_json(record)})
                ids = [r.job_id for r in batch]
                pipe.sadd(self.keys.ids, *ids)
                self._log_change(pipe, "put", ids)
                pipe.execute()
        return len(records)

    def get(self, job_id: str) -> JobRecord | None:
        """The stored record (its vector is the normalised one), or None."""
        with self._span("store.get", {"store.job_id": job_id}), self._translate_errors():
            raw = self._client.hgetall(self.keys.job(job_id))
        return _record_from(cast(dict[bytes, bytes], raw)) if raw else None  # bytes: no decode_responses

    def get_many(self, job_ids: list[str]) -> list[JobRecord | None]:
        with self._span("store.get", {"store.records": len(job_ids)}), self._translate_errors():
            pipe = self._client.pipeline(transaction=False)
            for job_id in job_ids:
                pipe.hgetall(self.keys.job(job_id))
            raws = pipe.execute()
        return [_record_from(raw) if raw else None for raw in raws]

    def delete(self, job_id: str) -> bool:
        """Remove a record; True if it existed."""
        with self._span("store.delete", {"store.job_id": job_id}), self._translate_errors():
            pipe = self._client.pipeline(transaction=True)
            pipe.delete(self.keys.job(job_id))
            pipe.srem(self.keys.ids, job_id)
            self._log_change(pipe, "del", [job_id])
            deleted, *_ = pipe.execute()
        return bool(deleted)

    def count(self) -> int:
        with self._translate_errors():
            return int(self._client.scard(self.keys.ids))

    def search(
        self, vector: Any, k: int = 10, threshold: float | None = None, *, with_records: bool = False
    ) -> list[Match]:
        """The `k` most similar jobs with cosine >= `threshold` (None: no threshold), best first.

        Ties are broken by job id. Raises ValueError for a wrong-dimension, NaN or zero vector.
        """
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        query = normalise(vector, self.dim)
        attrs: dict[str, Any] = {"store.path": self.path, "store.k": k}
        if threshold is not None:
            attrs["store.threshold"] = float(threshold)
        with self._span("store.search", attrs) as span, self._translate_errors():
            hits, size = self._search.search(query, k, threshold)
            records = self.get_many([job_id for job_id, _ in hits]) if with_records and hits else None
            span.set_attribute("store.results", len(hits))
            span.set_attribute("store.index_size", size)
        if records is None:
            return [Match(job_id=job_id, score=score) for job_id, score in hits]
        return [
            Match(job_id=job_id, score=score, record=rec)
            for (job_id, score), rec in zip(hits, records, strict=True)
            if rec is not None  # deleted between search and fetch
        ]

    def _log_change(self, pipe: redis.client.Pipeline, op: str, job_ids: list[str]) -> None:
        """One change-stream entry and one version step, inside the caller's MULTI (see store_search)."""
        pipe.xadd(self.keys.stream, {b"op": op, b"ids": json.dumps(job_ids)}, maxlen=self.stream_maxlen, approximate=True)
        pipe.incr(self.keys.version)
        # after a FLUSHALL the first write restores these; a fresh epoch tells mirrors to reload
        pipe.set(self.keys.epoch, uuid.uuid4().hex, nx=True)
        pipe.hsetnx(self.keys.meta, "dim", self.dim)

    def _check_dim(self) -> None:
        self._client.hsetnx(self.keys.meta, "dim", self.dim)
        stored = int(self._client.hget(self.keys.meta, "dim") or self.dim)
        if stored != self.dim:
            raise ValueError(f"store {self.keys.prefix!r} at {self.address} holds dim {stored} vectors, not {self.dim}")

    @contextmanager
    def _span(self, name: str, attrs: dict[str, Any]) -> Iterator[Span]:
        base = {"db.system.name": "redis", "server.address": self.address, "store.path": self.path}
        with self._tracer.start_as_current_span(name, attributes=base | attrs) as span:
            yield span

    @contextmanager
    def _translate_errors(self) -> Iterator[None]:
        try:
            yield
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise StoreUnavailable(
                f"Redis at {self.address} is unavailable ({type(exc).__name__}: {exc}); "
                "is it running? (`schedmate redis start`)"
            ) from exc
