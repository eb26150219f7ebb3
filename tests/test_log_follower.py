"""Spec for the one log follower of the tracker and the daemon (issue 25 item 1, issue 27 item 3):
one line reader (`agents/tracker/lines.py`) with one long-line rule, and logs read as they come
(UTF-16/32, gzip/bz2/xz) or said `unreadable: <why>`, never read as an empty or healthy log."""

from __future__ import annotations

import bz2
import gzip
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from schedmate.agents.tracker.lines import DEFAULT_MAX_LINE_BYTES, LineCutter
from schedmate.agents.tracker.tail import LogTail
from schedmate.deploy.daemon import DaemonConfig, DaemonState, FollowConfig, LogDaemon
from schedmate.deploy.daemon.follower import Follower
from schedmate.deploy.daemon.model import FileState
from schedmate.logfile import StreamDecoder

TEXT = "".join(f"iteration {n}/100 | loss {1 / (n + 1):.4f} | elapsed time per iteration (ms): 512.3\n"
               for n in range(40))
LINES = TEXT.splitlines()


def lines_of(tail: LogTail) -> list[str]:
    return [ln.raw.decode() for ln in tail.read().lines]


# --- one long-line rule ----------------------------------------------------------------------


def test_a_short_line_is_whole_with_its_redraws_even_across_chunks() -> None:
    cut = LineCutter(max_line_bytes=20)
    assert cut.feed(b"step 1\rstep") == []
    assert [(ln.raw, ln.cut) for ln in cut.feed(b" 2\n")] == [(b"step 1\rstep 2", False)]


def test_a_long_line_keeps_its_last_redraw_capped_and_says_it_was_cut() -> None:
    cut = LineCutter(max_line_bytes=10)
    got = cut.feed(b"bar " + b"#" * 50 + b"\r{'loss': 0.5}\n" + b"y" * 30 + b"\nok\n")
    assert [(ln.offset, ln.raw, ln.cut) for ln in got] == [
        (0, b"{'loss': 0", True), (69, b"y" * 10, True), (100, b"ok", False)]


@pytest.mark.parametrize("chunk", [7, 4096])
def test_the_tracker_and_the_daemon_cut_the_same_lines_the_same_way(tmp_path: Path, chunk: int) -> None:
    body = (b"short\n" + b"a" * 20_000 + b"\rlast redraw\n" + b"b" * (DEFAULT_MAX_LINE_BYTES + 5) + b"\n"
            + b"c" * DEFAULT_MAX_LINE_BYTES + b"\nend\n")
    (tmp_path / "job-1.log").write_bytes(body)
    with LogTail(tmp_path / "job-1.log", chunk_bytes=chunk) as tail:
        tracker = [(ln.raw, ln.truncated) for ln in tail.read().lines]
    f = Follower(tmp_path, FollowConfig(chunk_bytes=chunk))
    daemon = [(ln.raw, ln.cut) for _ in range(3) for b in f.poll() for ln in b.lines]
    f.close()
    assert tracker == daemon
    assert [c for _, c in tracker] == [False, True, True, False, False]
    assert tracker[1][0] == b"last redraw" and len(tracker[2][0]) == DEFAULT_MAX_LINE_BYTES


# --- logs as they come: the tracker's tail -----------------------------------------------------


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32", "utf-32-be"])
def test_the_tail_reads_a_growing_utf16_or_utf32_log(tmp_path: Path, encoding: str) -> None:
    path = tmp_path / "win.log"
    path.write_bytes(("\n".join(LINES[:20]) + "\n").encode(encoding))
    with LogTail(path) as tail:
        assert lines_of(tail) == LINES[:20]
        assert tail.decoded == f"decoded from {encoding}"
        more = ("\n".join(LINES[20:]) + "\n").encode(encoding)
        if encoding in ("utf-16", "utf-32"):
            more = more[4 if encoding == "utf-32" else 2 :]  # the BOM is written once, at the start
        with open(path, "ab") as fh:
            fh.write(more[:5])  # half a line, and half a character
            fh.flush()
            assert lines_of(tail) == []
            fh.write(more[5:])
        assert lines_of(tail) == LINES[20:]


@pytest.mark.parametrize(("suffix", "compress"), [(".gz", gzip.compress), (".bz2", bz2.compress)])
def test_the_tail_reads_a_compressed_log(tmp_path: Path, suffix: str, compress: Callable[[bytes], bytes]) -> None:
    path = tmp_path / f"job.log{suffix}"
    path.write_bytes(compress(TEXT.encode()))
    with LogTail(path, start="end") as tail:  # a compressed log is read from its start
        read = tail.read()
    assert [ln.raw.decode() for ln in read.lines] == LINES and read.error is None


def test_the_tail_says_a_binary_file_is_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "core.log"
    path.write_bytes(bytes(range(256)) * 64)
    with LogTail(path) as tail:
        read = tail.read()
    assert read.lines == [] and (read.error or "").startswith("unreadable: encoding (binary data")


def test_stream_decoder_decides_like_readable_log() -> None:
    assert not StreamDecoder.sniff(b"plain text\n").transforms
    assert StreamDecoder.sniff("x\n".encode("utf-16")).encoding == "utf-16"
    assert (StreamDecoder.sniff(b"\x28\xb5\x2f\xfd rest").unreadable or "").startswith("compression (zstd")


# --- logs as they come: the daemon ---------------------------------------------------------------


def test_the_daemon_reads_utf16_and_gzip_logs_and_says_what_it_cannot_read(tmp_path: Path, redis_url: str) -> None:
    (tmp_path / "win.log").write_bytes(TEXT.encode("utf-16"))
    (tmp_path / "packed.log.gz").write_bytes(gzip.compress(TEXT.encode()))
    (tmp_path / "blob.log").write_bytes(os.urandom(4096).replace(b"\n", b"x"))
    state = DaemonState.connect(redis_url)
    config = DaemonConfig(follow=FollowConfig())
    LogDaemon(tmp_path, state, config=config, handler_factory=lambda: None).run_once()
    jobs = state.jobs()
    assert {j: s.lines for j, s in jobs.items()} == {"win": 40, "packed": 40, "blob": 0}
    assert jobs["win"].step_time_s is not None  # the tracker read the decoded lines
    assert (jobs["blob"].unreadable or "").startswith("unreadable: encoding")
    assert jobs["win"].unreadable is None and jobs["packed"].unreadable is None


def test_a_compressed_rotation_of_a_followed_log_is_not_read_twice(tmp_path: Path) -> None:
    log = tmp_path / "job-7.log"
    log.write_text(TEXT)
    f = Follower(tmp_path)
    first = [ln.raw for _ in range(3) for b in f.poll() for ln in b.lines]
    (tmp_path / "job-7.log.1.gz").write_bytes(gzip.compress(log.read_bytes()))  # logrotate's compress
    log.unlink()
    again = [ln.raw for _ in range(3) for b in f.poll() for ln in b.lines]
    f.close()
    assert len(first) == 40 and again == [] and f.stats.copies == 1


def test_the_daemon_resumes_a_utf16_log_after_a_restart_without_repeats(tmp_path: Path) -> None:
    log = tmp_path / "win.log"
    log.write_bytes(("\n".join(LINES[:25]) + "\n").encode("utf-16"))
    f = Follower(tmp_path)
    states: list[FileState] = []
    first: list[bytes] = []
    for _ in range(3):
        for b in f.poll():
            first.extend(ln.raw for ln in b.lines)
            if b.file is not None:
                states = [b.file]
    f.close()
    with open(log, "ab") as fh:
        fh.write(("\n".join(LINES[25:]) + "\n").encode("utf-16")[2:])
    g = Follower(tmp_path)  # a restart: committed states only
    g.restore(states)
    rest = [ln.raw for _ in range(3) for b in g.poll() for ln in b.lines]
    g.close()
    assert [x.decode() for x in first + rest] == LINES


def test_the_registry_says_why_a_tracked_log_has_no_signal(tmp_path: Path) -> None:
    from typing import Any, cast

    from schedmate.agents.tracker.registry import JobLogRegistry
    from schedmate.agents.tracker.tracker import MetricTracker

    path = tmp_path / "core.log"
    path.write_bytes(bytes(range(256)) * 64)
    registry = JobLogRegistry(MetricTracker(classifier=cast(Any, None)))  # nothing is read: nothing classified
    registry.register("j1", path, start="begin")
    assert (registry.poll("j1").error or "").startswith("unreadable: encoding")
    report = registry.report("j1")
    assert not report and report.reason.startswith("unreadable: encoding (binary data")
    registry.close()
