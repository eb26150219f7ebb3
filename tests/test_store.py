"""The job store, against a real redis-server: records, cosine search, cross-process sync, durability."""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import redis
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from schedmate.embeddings import redis_server, vector_index
from schedmate.embeddings.store import JobOutcome, JobRecord, JobStore, StoreError, StoreUnavailable
from schedmate.embeddings.store_search import has_vector_search
from schedmate.schedulers.job import FinalStatus
from schedmate.tests.conftest import has_aof, require_redis_server

DIM = 16


def unit(vec: np.ndarray) -> np.ndarray:
    return (vec / np.linalg.norm(vec)).astype(np.float32)


def random_records(n: int, dim: int = DIM, seed: int = 0, prefix: str = "job") -> list[JobRecord]:
    rng = np.random.default_rng(seed)
    return [JobRecord(job_id=f"{prefix}-{i}", vector=rng.normal(size=dim)) for i in range(n)]


def with_cosine(c: float, dim: int = DIM) -> np.ndarray:
    """A vector whose cosine with e0 is exactly `c` (the rest of its length along e1)."""
    vec = np.zeros(dim)
    vec[0], vec[1] = c, np.sqrt(max(0.0, 1.0 - c * c))
    return vec


E0 = with_cosine(1.0)


@pytest.fixture
def store(redis_url: str) -> Iterator[JobStore]:
    with JobStore.connect(redis_url, dim=DIM) as s:
        yield s


# --- records -----------------------------------------------------------------------------------


def test_put_get_round_trip_keeps_every_field_and_normalises_the_vector(store: JobStore) -> None:
    record = JobRecord(
        job_id="train-llama-42",
        vector=np.arange(1, DIM + 1, dtype=np.float64),
        submitted={"user": "alice", "gpus": 8, "name": "llama-ft", "tags": ["nlp"]},
        workload={"framework": "pytorch", "model": {"family": "llama", "params_b": 7}},
        outcome=JobOutcome(
            duration=3600.5,
            gpu_util=87.5,
            sm_util=61.0,
            gpu_memory=71.2,
            final_status=FinalStatus.FAILED,
            failure_category="oom",
            failure_reason="CUDA out of memory at step 1200",
            throughput_model={"kind": "amdahl", "serial_fraction": 0.08},
        ),
    )
    store.put(record)

    got = store.get("train-llama-42")
    assert got is not None
    assert got.model_dump(exclude={"vector"}) == record.model_dump(exclude={"vector"})
    np.testing.assert_allclose(got.vector, unit(record.vector), rtol=1e-6)
    assert got.vector.dtype == np.float32
    assert store.get("no-such-job") is None


def test_put_replaces_delete_removes_and_count_follows(store: JobStore) -> None:
    store.put_many(random_records(5))
    assert store.count() == 5
    store.put(JobRecord(job_id="job-0", vector=E0, submitted={"user": "bob"}))
    assert store.count() == 5
    assert store.get("job-0").submitted == {"user": "bob"}  # type: ignore[union-attr]
    assert store.delete("job-0") is True
    assert store.delete("job-0") is False
    assert store.get("job-0") is None
    assert store.count() == 4
    assert "job-0" not in {m.job_id for m in store.search(E0, k=10)}


def test_bad_vectors_are_rejected_and_nothing_is_written(store: JobStore, redis_url: str) -> None:
    good = JobRecord(job_id="ok", vector=E0)
    wrong_dim = JobRecord(job_id="short", vector=np.ones(DIM - 1))
    with pytest.raises(ValueError, match="shape"):
        store.put_many([good, wrong_dim])  # validated before any write: no partial batch
    assert store.count() == 0
    with pytest.raises(ValueError, match="NaN"):
        JobRecord(job_id="nan", vector=[np.nan] * DIM)
    with pytest.raises(ValueError, match="zero norm"):
        store.put(JobRecord(job_id="zero", vector=np.zeros(DIM)))
    with pytest.raises(ValueError, match="shape"):
        store.search(np.ones(DIM + 1))
    with pytest.raises(ValueError, match="NaN"):
        store.search(np.full(DIM, np.nan))
    with pytest.raises(ValueError, match="dim"):
        JobStore.connect(redis_url, dim=DIM * 2)  # this prefix already holds DIM vectors


# --- search semantics --------------------------------------------------------------------------


def test_search_returns_top_k_best_first_and_applies_threshold_inclusively(store: JobStore) -> None:
    cosines = {"same": 1.0, "close": 0.9, "half": 0.5, "far": 0.1, "opposite": -0.5}
    store.put_many(JobRecord(job_id=job_id, vector=with_cosine(c)) for job_id, c in cosines.items())

    top3 = store.search(E0, k=3)
    assert [m.job_id for m in top3] == ["same", "close", "half"]
    np.testing.assert_allclose([m.score for m in top3], [1.0, 0.9, 0.5], atol=1e-6)

    assert [m.job_id for m in store.search(E0, k=10, threshold=0.5 - 1e-6)] == ["same", "close", "half"]
    assert [m.job_id for m in store.search(E0, k=10, threshold=0.95)] == ["same"]
    assert [m.job_id for m in store.search(E0, k=1, threshold=0.0)] == ["same"]
    assert len(store.search(E0, k=10)) == 5  # no threshold: everything, down to negative cosines
    assert store.search(E0, k=0) == []
    assert store.search(-E0, k=10, threshold=0.99) == []


def test_equal_scores_are_ordered_by_job_id(store: JobStore) -> None:
    store.put_many(JobRecord(job_id=job_id, vector=with_cosine(0.7)) for job_id in ("b", "c", "a"))
    store.put(JobRecord(job_id="best", vector=E0))
    assert [m.job_id for m in store.search(E0, k=3)] == ["best", "a", "b"]


def test_search_scales_the_query_and_can_return_records(store: JobStore) -> None:
    store.put(JobRecord(job_id="a", vector=E0, submitted={"user": "alice"}))
    (match,) = store.search(E0 * 123.0, k=1, with_records=True)
    assert match.job_id == "a" and match.score == pytest.approx(1.0)
    assert match.record is not None and match.record.submitted == {"user": "alice"}
    assert store.search(E0, k=1)[0].record is None


def test_empty_store_finds_nothing(store: JobStore) -> None:
    assert store.search(E0, k=10) == []


@pytest.mark.parametrize("kernel", ["numpy loop", "BLAS"])
def test_exact_path_equals_brute_force_numpy(redis_url: str, kernel: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if kernel == "BLAS":  # the kernel used for large indexes, forced here on a small one
        monkeypatch.setattr(vector_index, "BLAS_MIN_ROWS", 0)
    store = JobStore.connect(redis_url, dim=64, path="exact")
    records = random_records(3000, dim=64, seed=1)
    store.put_many(records)
    ids = np.array([r.job_id for r in records])
    matrix = np.stack([r.vector for r in records]).astype(np.float64)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)

    for query in np.random.default_rng(2).normal(size=(25, 64)):
        cos = matrix @ (query / np.linalg.norm(query))
        expected = ids[np.argsort(-cos)[:10]]
        got = store.search(query, k=10)
        assert [m.job_id for m in got] == list(expected)  # recall@10 == 1.0, same order
        np.testing.assert_allclose([m.score for m in got], np.sort(cos)[::-1][:10], atol=1e-5)


# --- several processes -------------------------------------------------------------------------


def _writer(url: str, new: int, delete: list[str]) -> None:
    """Process A: adds `new` records and deletes some, through its own connection."""
    store = JobStore.connect(url, dim=DIM)
    store.put_many(random_records(new, seed=7, prefix="from-a"))
    for job_id in delete:
        store.delete(job_id)


def run_in_other_process(url: str, new: int, delete: list[str]) -> None:
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=_writer, args=(url, new, delete))
    proc.start()
    proc.join(30)
    assert proc.exitcode == 0


def test_another_processes_writes_and_deletes_reach_this_processes_index(redis_url: str) -> None:
    reader = JobStore.connect(redis_url, dim=DIM, path="exact")
    reader.put_many(random_records(20))
    assert len(reader.search(E0, k=100)) == 20  # index loaded

    run_in_other_process(redis_url, new=30, delete=["job-0", "job-1"])

    seen = {m.job_id for m in reader.search(E0, k=100)}
    assert len(seen) == 48
    assert {"job-0", "job-1"}.isdisjoint(seen)
    assert {f"from-a-{i}" for i in range(30)} <= seen
    assert reader._search.reloads == 1  # type: ignore[union-attr]  # caught up incrementally


def test_index_reloads_when_the_change_stream_was_trimmed_past_it(redis_url: str) -> None:
    reader = JobStore.connect(redis_url, dim=DIM, path="exact", stream_maxlen=10)
    writer = JobStore.connect(redis_url, dim=DIM, stream_maxlen=10)
    writer.put_many(random_records(5))
    assert len(reader.search(E0, k=1000)) == 5
    for record in random_records(300, seed=3, prefix="later"):  # far more entries than the stream keeps
        writer.put(record)
    writer.delete("job-0")
    assert redis.Redis.from_url(redis_url).xlen(writer.keys.stream) < 300  # trimmed past the reader

    assert len(reader.search(E0, k=1000)) == 304
    assert reader._search.reloads == 2  # type: ignore[union-attr]


def test_index_reloads_after_the_server_was_flushed(redis_url: str) -> None:
    store = JobStore.connect(redis_url, dim=DIM)
    store.put_many(random_records(10))
    assert len(store.search(E0, k=100)) == 10
    redis.Redis.from_url(redis_url).flushall()
    assert store.search(E0, k=100) == []
    store.put(JobRecord(job_id="again", vector=E0))
    assert [m.job_id for m in store.search(E0, k=100)] == ["again"]


# --- server-side KNN (needs RediSearch >= 2.4: Redis Stack or Redis 8) --------------------------


def _server_search_or_skip(url: str) -> None:
    if not has_vector_search(redis.Redis.from_url(url, protocol=2)):
        pytest.skip("this redis-server has no vector search module (Redis Stack / Redis 8 needed)")


def test_server_side_knn_search(redis_url: str) -> None:
    _server_search_or_skip(redis_url)
    store = JobStore.connect(redis_url, dim=DIM, path="server", algorithm="FLAT")
    assert store.path == "server"
    store.put_many(JobRecord(job_id=f"c{c}", vector=with_cosine(c)) for c in (1.0, 0.9, 0.5, 0.1))
    assert [m.job_id for m in store.search(E0, k=2)] == ["c1.0", "c0.9"]
    assert [m.job_id for m in store.search(E0, k=10, threshold=0.45)] == ["c1.0", "c0.9", "c0.5"]


def test_server_and_exact_paths_return_the_same_neighbours(redis_url: str) -> None:
    _server_search_or_skip(redis_url)
    server = JobStore.connect(redis_url, dim=DIM, path="server", algorithm="FLAT")
    exact = JobStore.connect(redis_url, dim=DIM, path="exact")
    server.put_many(random_records(500, seed=4))
    for query in np.random.default_rng(5).normal(size=(10, DIM)):
        assert [m.job_id for m in server.search(query, k=10)] == [m.job_id for m in exact.search(query, k=10)]


def test_asking_for_server_side_search_without_the_module_is_an_error(redis_url: str) -> None:
    if has_vector_search(redis.Redis.from_url(redis_url, protocol=2)):
        pytest.skip("this server has the search module")
    with pytest.raises(StoreError, match="no vector search module"):
        JobStore.connect(redis_url, dim=DIM, path="server")
    assert JobStore.connect(redis_url, dim=DIM).path == "exact"


# --- durability and availability ---------------------------------------------------------------


@pytest.mark.parametrize("how", ["shutdown", "kill -9"])
def test_records_survive_a_server_restart_on_the_same_data_dir(tmp_path: Path, how: str) -> None:
    require_redis_server()
    info = redis_server.start(tmp_path)
    try:
        JobStore.connect(info.url, dim=DIM).put_many(random_records(50))
        if how == "shutdown":
            redis_server.stop(tmp_path)
        else:  # no RDB snapshot is written: only the AOF can bring the records back
            os.kill(info.pid, signal.SIGKILL)
            wait_until(lambda: not redis_server.status(tmp_path).running)
        info = redis_server.start(tmp_path)
        store = JobStore.connect(info.url, dim=DIM)
        assert store.count() == 50
        got, written = store.get("job-49"), random_records(50)[49]
        assert got is not None
        np.testing.assert_allclose(got.vector, unit(written.vector), rtol=1e-6)
        assert len(store.search(E0, k=100)) == 50
    finally:
        redis_server.stop(tmp_path)
    assert has_aof(tmp_path)


def wait_until(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_unreachable_redis_raises_store_unavailable_naming_host_and_port_quickly() -> None:
    port = _closed_port()
    started = time.monotonic()
    with pytest.raises(StoreUnavailable, match=f"127.0.0.1:{port}"):
        JobStore.connect(f"redis://127.0.0.1:{port}/0", dim=DIM, retries=2, timeout_s=0.5)
    assert time.monotonic() - started < 5


def test_a_server_that_goes_away_turns_into_store_unavailable(tmp_path: Path) -> None:
    require_redis_server()
    info = redis_server.start(tmp_path)
    try:
        store = JobStore.connect(info.url, dim=DIM, retries=2, timeout_s=0.5)
        store.put(JobRecord(job_id="a", vector=E0))
    finally:
        redis_server.stop(tmp_path)
    started = time.monotonic()
    for call in (store.count, lambda: store.search(E0), lambda: store.put(JobRecord(job_id="b", vector=E0))):
        with pytest.raises(StoreUnavailable, match=f"127.0.0.1:{info.port}"):
            call()
    assert time.monotonic() - started < 10


# --- tracing -----------------------------------------------------------------------------------


def test_every_query_and_write_emits_a_span(redis_url: str) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    store = JobStore.connect(redis_url, dim=DIM, tracer=provider.get_tracer("test"))

    store.put_many(random_records(7))
    store.search(E0, k=3, threshold=-1.0)
    store.delete("job-0")

    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert set(spans) >= {"store.put", "store.search", "store.delete"}
    assert spans["store.put"].attributes["store.records"] == 7
    search = spans["store.search"].attributes
    assert search["store.path"] == "exact"
    assert search["store.k"] == 3
    assert search["store.threshold"] == -1.0
    assert search["store.results"] == 3
    assert search["store.index_size"] == 7
