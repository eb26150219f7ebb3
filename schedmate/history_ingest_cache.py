"""The embedder's LRU cache during `history ingest`, with its older rows in Redis (issue 27).

Why: `FlagEmbedder` caches up to 20,000 rows (384 float32 each, ~36 MB with their keys and
array headers). An export whose fingerprints all differ fills it within its first 20,000 rows,
and that is per-row state the ingest must not hold. A smaller cache would not do: a text evicted
earlier is embedded again in another batch, and the forward pass of a text is not bit-identical
across batch compositions (batch size 16 instead of 64 changed some rows' bits here), so stored
vectors would change. This cache keeps exactly the `EmbeddingCache` semantics (one LRU of `capacity`
rows, the same hits and evictions) but holds only the `hot` most recent rows in memory; the
vectors of the others live in one Redis hash (their 16-byte keys and order stay here, ~3 MB at
20,000). The hash expires after a day if the process dies; `close` deletes it.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from typing import Any

import numpy as np

from schedmate.embeddings.embedder import CacheStats, EmbeddingCache

__all__ = ["HOT_ROWS", "SpillingEmbeddingCache"]

HOT_ROWS = 1024
_TTL_S = 86_400
_FETCH = 1000  # rows per HMGET when the cache is handed back


class SpillingEmbeddingCache(EmbeddingCache):
    """An `EmbeddingCache` of `capacity` rows whose least recent rows (all but `hot`) are in Redis.

    The LRU order is the cold keys (oldest first) followed by the hot rows (oldest first): a hit
    or a new row goes to the hot end, the oldest hot row moves to the cold end, and beyond
    `capacity` the oldest cold row is evicted, as `EmbeddingCache` evicts its oldest."""

    def __init__(self, capacity: int, client: Any, hot: int = HOT_ROWS) -> None:
        super().__init__(capacity)
        self.hot = max(0, min(hot, capacity))
        self._cold: OrderedDict[bytes, None] = OrderedDict()
        self._client = client
        self.redis_key = f"schedmate:ingest:embedding-cache:{uuid.uuid4().hex}"

    @classmethod
    def taking_over(cls, cache: EmbeddingCache, client: Any, hot: int = HOT_ROWS) -> SpillingEmbeddingCache:
        """A spilling cache that starts with `cache`'s rows, order and counts."""
        spill = cls(cache.capacity, client, hot)
        spill.hits, spill.misses = cache.hits, cache.misses
        for key, row in cache._rows.items():
            spill.put(key, row)
        return spill

    def get(self, key: bytes) -> np.ndarray | None:
        row = self._rows.get(key)
        if row is not None:
            self._rows.move_to_end(key)
            return row
        if key not in self._cold:
            return None
        del self._cold[key]
        pipe = self._client.pipeline(transaction=False)
        pipe.hget(self.redis_key, key)
        pipe.hdel(self.redis_key, key)
        raw, _ = pipe.execute()
        if raw is None:  # the hash expired or was flushed: a miss, embedded again
            return None
        row = np.frombuffer(raw, dtype=np.float32)
        self._rows[key] = row
        self._spill()
        return row

    def put(self, key: bytes, row: np.ndarray) -> None:
        if self.capacity <= 0:
            return
        if key in self._cold:  # embedded again although cached (get found its copy gone): one entry
            del self._cold[key]
            self._client.hdel(self.redis_key, key)
        self._rows[key] = row
        self._rows.move_to_end(key)
        self._spill()

    def _spill(self) -> None:
        pipe = None
        while len(self._rows) > self.hot:
            key, row = self._rows.popitem(last=False)
            self._cold[key] = None
            pipe = pipe or self._client.pipeline(transaction=False)
            pipe.hset(self.redis_key, key, np.ascontiguousarray(row, dtype=np.float32).tobytes())
        while len(self._cold) + len(self._rows) > self.capacity:
            key, _ = self._cold.popitem(last=False)
            pipe = pipe or self._client.pipeline(transaction=False)
            pipe.hdel(self.redis_key, key)
        if pipe is not None:
            pipe.expire(self.redis_key, _TTL_S)
            pipe.execute()

    def stats(self) -> CacheStats:
        return CacheStats(self.hits, self.misses, len(self._cold) + len(self._rows), self.capacity)

    def hand_back(self, cache: EmbeddingCache) -> None:
        """Leave `cache` as this one is (its rows in LRU order, its counts) and delete the hash:
        an embedder shared with other work keeps what a plain cache would have kept."""
        cache._rows.clear()
        cold = list(self._cold)
        for start in range(0, len(cold), _FETCH):
            keys = cold[start : start + _FETCH]
            for key, raw in zip(keys, self._client.hmget(self.redis_key, keys), strict=True):
                if raw is not None:
                    cache._rows[key] = np.frombuffer(raw, dtype=np.float32)
        cache._rows.update(self._rows)
        cache.hits, cache.misses = self.hits, self.misses
        self.close()

    def close(self) -> None:
        self._client.delete(self.redis_key)
        self._cold.clear()
        self._rows.clear()
