"""A whole-log `track` reading is kept while the log's (device, inode, size, mtime) hold, and what
the service answers from it is what a full read of the log answers at that moment: unchanged,
appended, rewritten in place, rotated, truncated."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from schedmate.agents.tracker.tail import FileState, ReadingCache

pytest.importorskip("fastapi")

from schedmate.deploy.service import ServiceConfig  # noqa: E402
from schedmate.deploy.service.core import ServiceCore  # noqa: E402
from schedmate.deploy.service.models import TrackRequest  # noqa: E402


def megatron(start: int, n: int, ms: float) -> str:
    return "".join(f"iteration {i:>8}/   10000 | consumed samples: {i * 64} | elapsed time per iteration (ms): "
                   f"{ms + i % 7:.1f} | learning rate: 1.0E-04 | lm loss: {3.0 - i * 1e-4:.4E} |\n"
                   for i in range(start, start + n))


# ------------------------------------------------------------------------------- the cache


def test_a_reading_is_computed_once_while_the_file_is_unchanged(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text("one\n")
    cache: ReadingCache[str] = ReadingCache()
    calls: list[int] = []

    def read() -> str:
        calls.append(1)
        return log.read_text()

    assert cache.get(log, read) == "one\n" and cache.get(log, read) == "one\n"
    assert len(calls) == 1 and (cache.hits, cache.misses) == (1, 1)


def test_appending_rewriting_rotating_or_truncating_computes_again(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text("one\n")
    cache: ReadingCache[str] = ReadingCache()
    assert cache.get(log, log.read_text) == "one\n"
    with open(log, "a") as fh:  # appended: the size moves
        fh.write("two\n")
    assert cache.get(log, log.read_text) == "one\ntwo\n"
    log.write_text("ONE\nTWO\n")  # same size, rewritten: the mtime moves
    st = log.stat()
    os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert cache.get(log, log.read_text) == "ONE\nTWO\n"
    (tmp_path / "new.log").write_text("three\n")  # rotated: another inode at the path
    os.replace(tmp_path / "new.log", log)
    assert cache.get(log, log.read_text) == "three\n"
    log.write_text("")  # truncated
    assert cache.get(log, log.read_text) == ""
    assert cache.hits == 0


def test_a_file_changed_while_read_or_a_refused_reading_is_not_kept(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text("one\n")
    cache: ReadingCache[str] = ReadingCache()

    def read_while_appended() -> str:
        text = log.read_text()
        with open(log, "a") as fh:
            fh.write("two\n")
        return text

    cache.get(log, read_while_appended)
    cache.get(log, log.read_text, keep=lambda _: False)
    assert len(cache) == 0 and cache.misses == 2


def test_the_least_recently_used_reading_goes_first(tmp_path: Path) -> None:
    paths = [tmp_path / f"{i}.log" for i in range(3)]
    for p in paths:
        p.write_text(p.name)
    cache: ReadingCache[str] = ReadingCache(max_entries=2)
    for p in (paths[0], paths[1], paths[0], paths[2]):
        cache.get(p, p.read_text)
    assert len(cache) == 2
    cache.get(paths[0], lambda: "recomputed")  # kept (used after paths[1])
    assert cache.get(paths[1], lambda: "recomputed") == "recomputed"  # dropped


def test_a_missing_file_has_no_state_and_is_never_kept(tmp_path: Path) -> None:
    cache: ReadingCache[str] = ReadingCache()
    assert FileState.of(tmp_path / "none.log") is None
    assert cache.get(tmp_path / "none.log", lambda: "x") == "x" and len(cache) == 0


# ------------------------------------------------------------------------------- the service


@pytest.fixture
def core(classifier: Any, tmp_path: Path) -> Any:
    c = ServiceCore(ServiceConfig(allowed_roots=(tmp_path,)), classifier=classifier)
    c.load()
    yield c
    c.close()


def full_read(core: Any, log: Path) -> dict[str, Any]:
    """What the service answers from a fresh, uncached read of the whole log."""
    return core._track_read(log, TrackRequest(log=str(log))).model_dump(exclude={"latency_s"})


def test_service_track_answers_from_the_kept_reading_exactly_what_a_full_read_gives(core: Any, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(megatron(1, 200, 500.0))
    req = TrackRequest(log=str(log))
    first = core.track(req).model_dump(exclude={"latency_s"})
    assert first["signal"] is True and first == full_read(core, log)
    again = core.track(req)
    assert again.model_dump(exclude={"latency_s"}) == first and core._readings.hits == 1
    again.step_time = None  # the answer is a copy: the kept reading is untouched
    assert core.track(req).model_dump(exclude={"latency_s"}) == first
    with open(log, "a") as fh:  # the job went on, slower: a new reading, equal to a full read
        fh.write(megatron(201, 100, 800.0))
    grown = core.track(req).model_dump(exclude={"latency_s"})
    assert grown == full_read(core, log) and grown["step_time"]["value"] > first["step_time"]["value"]
    (tmp_path / "rotated.log").write_text("no progress here\n")
    os.replace(tmp_path / "rotated.log", log)
    assert core.track(req).model_dump(exclude={"latency_s"}) == full_read(core, log)
    assert core.track(req).signal is False
