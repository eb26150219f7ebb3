"""The two search paths behind `JobStore.search`, and the Redis key layout they share.

* `ServerSearch`: KNN inside Redis (RediSearch >= 2.4, Redis Stack, Redis 8) over the job hashes.
* `ExactSearch`: for a plain Redis. Each process mirrors the vectors in an `ExactIndex` and keeps it
  current by replaying the store's change stream. Every write (a batch of puts, or a delete) does,
  in one MULTI/EXEC, its hash changes, one XADD (`op`, `ids` as a JSON list) and INCR of the version
  counter, so `version` always equals the number of entries ever appended. A process that has applied
  `v` entries up to stream id `s` reads `version` and the entries after `s` in one transaction;
  fewer entries than `version - v` means the stream was trimmed past `s` and it reloads in full.
  A changed `epoch` token (FLUSHALL, a recreated store) forces a reload too.

Both return (job_id, cosine score) pairs, best first; this module raises redis errors untouched
(`JobStore` turns connection failures into `StoreUnavailable`).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Literal

import numpy as np
import redis
from redis.commands.search.field import VectorField
from redis.commands.search.index_definition import IndexDefinition, IndexType
from redis.commands.search.query import Query

from schedmate.embeddings.vector_index import ExactIndex, Vector, top_k

SYNC_PAGE = 5000
FETCH_CHUNK = 2000
MIN_SEARCH_VERSION = 20400  # RediSearch 2.4 introduced VECTOR fields
SEARCH_MODULE_NAMES = {"search", "ft", "searchlight"}

Hit = tuple[str, float]


@dataclass(frozen=True, slots=True)
class StoreKeys:
    """Every key of one store lives under `prefix:` so several stores can share a server."""

    prefix: str

    def job(self, job_id: str) -> str:
        return f"{self.prefix}:job:{job_id}"

    @property
    def job_prefix(self) -> str:
        return f"{self.prefix}:job:"

    @property
    def ids(self) -> str:
        return f"{self.prefix}:ids"

    @property
    def version(self) -> str:
        return f"{self.prefix}:version"

    @property
    def epoch(self) -> str:
        return f"{self.prefix}:epoch"

    @property
    def stream(self) -> str:
        return f"{self.prefix}:changes"

    @property
    def meta(self) -> str:
        return f"{self.prefix}:meta"

    @property
    def index(self) -> str:
        return f"{self.prefix}:vector-idx"


def vector_to_bytes(unit_vector: Vector) -> bytes:
    """Little-endian float32, the layout RediSearch's FLOAT32 vectors expect."""
    return np.asarray(unit_vector, dtype="<f4").tobytes()


def vector_from_bytes(raw: bytes, dim: int) -> Vector | None:
    """None when `raw` is not a `dim`-vector (never written by this module; skipped, not fatal)."""
    if len(raw) != 4 * dim:
        return None
    return np.frombuffer(raw, dtype="<f4")


def has_vector_search(client: redis.Redis) -> bool:
    """Whether the server runs a search module with vector fields (FT._LIST answers, version >= 2.4)."""
    try:
        client.execute_command("FT._LIST")
    except redis.ResponseError:
        return False
    try:
        modules = client.module_list()
    except redis.ResponseError:
        return True  # MODULE LIST disabled: trust FT._LIST
    for module in modules:
        name = _text(module.get(b"name", module.get("name", b""))).lower()
        if name in SEARCH_MODULE_NAMES:
            return int(module.get(b"ver", module.get("ver", 0))) >= MIN_SEARCH_VERSION
    return True  # built in (Redis 8) rather than loaded as a module


class ServerSearch:
    """KNN by the server's search module (FLAT is exact, HNSW approximate and faster at scale)."""

    name: Literal["exact", "server"] = "server"

    def __init__(self, client: redis.Redis, keys: StoreKeys, dim: int, algorithm: str = "HNSW") -> None:
        self._client = client
        self._keys = keys
        self._dim = dim
        self._algorithm = algorithm.upper()
        self.ensure_index()

    def ensure_index(self) -> None:
        """Create the vector index over `prefix:job:*` hashes unless it exists (idempotent across processes)."""
        ft = self._client.ft(self._keys.index)
        try:
            ft.info()
            return
        except redis.ResponseError:
            pass
        field = VectorField(
            "vector", self._algorithm, {"TYPE": "FLOAT32", "DIM": self._dim, "DISTANCE_METRIC": "COSINE"}
        )
        definition = IndexDefinition(prefix=[self._keys.job_prefix], index_type=IndexType.HASH)
        try:
            ft.create_index([field], definition=definition)
        except redis.ResponseError as exc:
            if "already exists" not in str(exc).lower():
                raise

    def search(self, unit_query: Vector, k: int, threshold: float | None) -> tuple[list[Hit], int]:
        size = int(self._client.scard(self._keys.ids))
        if k <= 0 or size == 0:
            return [], size
        query = (
            Query(f"*=>[KNN {k} @vector $vec AS dist]")
            .sort_by("dist")
            .return_fields("dist")
            .paging(0, k)
            .dialect(2)
        )
        params: dict[str, str | int | float | bytes] = {"vec": vector_to_bytes(unit_query)}
        try:
            result = self._client.ft(self._keys.index).search(query, query_params=params)
        except redis.ResponseError as exc:  # index dropped by FLUSHALL: recreate once
            if "no such index" not in str(exc).lower() and "unknown index" not in str(exc).lower():
                raise
            self.ensure_index()
            result = self._client.ft(self._keys.index).search(query, query_params=params)
        cut = len(self._keys.job_prefix)
        ids = [_text(doc.id)[cut:] for doc in result.docs]
        scores = np.array([1.0 - float(doc.dist) for doc in result.docs], dtype=np.float32)
        return top_k(scores, ids, k, threshold), size


class ExactSearch:
    """In-process exact index mirrored from Redis through the change stream (see module doc)."""

    name: Literal["exact", "server"] = "exact"

    def __init__(self, client: redis.Redis, keys: StoreKeys, dim: int) -> None:
        self._client = client
        self._keys = keys
        self._dim = dim
        self._index = ExactIndex(dim)
        self._epoch: bytes | None = None
        self._version = -1  # forces a full load on first use
        self._last_id = b"0-0"
        self._lock = threading.Lock()
        self.reloads = 0  # full reloads so far (observability and tests)

    def search(self, unit_query: Vector, k: int, threshold: float | None) -> tuple[list[Hit], int]:
        with self._lock:
            self._sync()
            return self._index.search(unit_query, k, threshold), len(self._index)

    def sync(self) -> int:
        """Bring the mirror up to date; returns its size."""
        with self._lock:
            self._sync()
            return len(self._index)

    def _sync(self) -> None:
        while True:
            pipe = self._client.pipeline(transaction=True)
            pipe.get(self._keys.epoch)
            pipe.get(self._keys.version)
            pipe.xrange(self._keys.stream, min=b"(" + self._last_id, max="+", count=SYNC_PAGE)
            epoch, raw_version, entries = pipe.execute()
            version = int(raw_version or 0)
            if epoch != self._epoch or version < self._version:
                self._reload()
                return
            if version == self._version:
                return
            if not entries:  # writes happened but their entries were trimmed away
                self._reload()
                return
            self._apply(entries)
            self._version += len(entries)
            self._last_id = entries[-1][0]
            if len(entries) < SYNC_PAGE:
                if self._version != version:  # a gap: entries after _last_id were trimmed
                    self._reload()
                return

    def _apply(self, entries: list[tuple[bytes, dict[bytes, bytes]]]) -> None:
        last_op: dict[str, bytes] = {}
        for _, fields in entries:
            for job_id in json.loads(fields[b"ids"]):
                last_op[job_id] = fields[b"op"]
        puts = [job_id for job_id, op in last_op.items() if op == b"put"]
        for job_id, op in last_op.items():
            if op != b"put":
                self._index.remove(job_id)
        self._load(puts)

    def _reload(self) -> None:
        pipe = self._client.pipeline(transaction=True)
        pipe.get(self._keys.epoch)
        pipe.get(self._keys.version)
        pipe.xrevrange(self._keys.stream, max="+", min="-", count=1)
        pipe.smembers(self._keys.ids)
        epoch, raw_version, last, members = pipe.execute()
        self._index.clear()
        self._load(sorted(m.decode() for m in members))
        self._epoch = epoch
        self._version = int(raw_version or 0)
        self._last_id = last[0][0] if last else b"0-0"
        self.reloads += 1

    def _load(self, job_ids: list[str]) -> None:
        """Fetch current vectors; a job deleted meanwhile is dropped (its delete entry follows)."""
        for start in range(0, len(job_ids), FETCH_CHUNK):
            chunk = job_ids[start : start + FETCH_CHUNK]
            pipe = self._client.pipeline(transaction=False)
            for job_id in chunk:
                pipe.hget(self._keys.job(job_id), b"vector")
            found: list[str] = []
            vectors: list[Vector] = []
            for job_id, raw in zip(chunk, pipe.execute(), strict=True):
                vec = vector_from_bytes(raw, self._dim) if raw is not None else None
                if vec is None:
                    self._index.remove(job_id)
                else:
                    found.append(job_id)
                    vectors.append(vec)
            if found:
                self._index.upsert_many(found, np.stack(vectors))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
