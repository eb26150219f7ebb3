"""The log-following daemon: real files written by a concurrent writer process, a real Redis.

Every progress line the writer prints carries a sequence number (`seq=<job>:<n>`); a sink records
each consumed line's number inside the daemon's own commit transaction, so the recorded list is
exactly what the daemon consumed: equal to what was written means nothing was lost, no repeats
means nothing was read twice, across rotation, copytruncate, deletion, binary junk and a daemon
killed with SIGKILL mid-run and restarted.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from schedmate.agents.tracker.lines import LineCutter
from schedmate.deploy.daemon import (
    DaemonConfig,
    DaemonState,
    FollowConfig,
    Follower,
    JobConfig,
    LogDaemon,
    job_id_from_name,
)

SEQ = re.compile(rb"seq=(\w+):(\d+)")
SEEN = "test:daemon:seen"
STEP_TIME = 0.25


# -- the concurrent writer (a separate process) ------------------------------------------------


def _line(job: str, n: int) -> bytes:
    return f"seq={job}:{n} step: {n} loss: {2.0 - n * 1e-4:.4f} time: {STEP_TIME:.3f}s\n".encode()


def _writer(logs: str, manifest: str, n_lines: int, phase: str) -> None:
    """Writes jobs' logs the way real jobs and logrotate do. Phase "a": job `rot` rotated by
    rename (logrotate without copytruncate), job `cpt` by copytruncate, binary junk and a
    200 KB line, lines written in two halves. Phase "b": job `del` written, then deleted once
    the daemon has opened it."""
    root = Path(logs)
    written: dict[str, list[int]] = {}
    if phase == "a":
        rot = open(root / "rot.log", "ab", buffering=0)  # noqa: SIM115
        cpt = open(root / "cpt.log", "ab", buffering=0)  # noqa: SIM115
        k_rot = k_cpt = 0
        for n in range(n_lines):
            line = _line("rot", n)
            rot.write(line[:10])  # a line caught mid-write must not be parsed early
            time.sleep(0.001)
            rot.write(line[10:])
            written.setdefault("rot", []).append(n)
            cpt.write(_line("cpt", n))
            written.setdefault("cpt", []).append(n)
            if n % 97 == 50:
                rot.write(b"\x00\x01\x02\xff\xfe garbage \x00\x00\n")  # binary junk
            if n == 700:
                cpt.write(b"x" * 200_000 + b"\n")  # a huge line: capped, never parsed
            if n % 300 == 299:  # rename rotation: the job writes on into a new file
                rot.close()
                k_rot += 1
                os.rename(root / "rot.log", root / f"rot.log.{k_rot}")
                rot = open(root / "rot.log", "ab", buffering=0)  # noqa: SIM115
            if n % 400 == 399:  # copytruncate: copy, then cut the live file to zero
                k_cpt += 1
                shutil.copyfile(root / "cpt.log", root / f"cpt.log.{k_cpt}")
                if k_cpt % 2:
                    time.sleep(0.15)  # the daemon sees the copy while the original is live: a shadow
                os.truncate(root / "cpt.log", 0)
            if n % 50 == 0:
                time.sleep(0.01)
        rot.close()
        cpt.close()
    else:
        path = root / "del.log"
        with open(path, "ab", buffering=0) as fh:
            for n in range(n_lines):
                fh.write(_line("del", n))
                written.setdefault("del", []).append(n)
        client = redis.Redis.from_url(os.environ["TEST_DAEMON_REDIS"])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # delete once the daemon holds it open (else nobody could read it)
            files = client.hgetall("schedmate:daemon:files")
            if any(json.loads(v)["path"] == str(path) for v in files.values()):
                break
            time.sleep(0.01)
        path.unlink()
    Path(manifest).write_text(json.dumps(written))


def _sink(pipe: Any, batch: Any) -> None:
    """Record each consumed progress line's sequence number in the daemon's transaction."""
    seqs = [f"{m.group(1).decode()}:{m.group(2).decode()}" for line in batch.lines if (m := SEQ.search(line.raw))]
    if seqs:
        pipe.rpush(SEEN, *seqs)


def _config(**jobs: Any) -> DaemonConfig:
    follow = FollowConfig(chunk_bytes=64 << 10, batch_bytes=64 << 10, file_budget=256 << 10, max_line_bytes=16 << 10)
    return DaemonConfig(interval_s=0.02, queue_batches=4, follow=follow, jobs=JobConfig(**jobs), failure_method="rules")


def _run_daemon(logs: str, url: str) -> None:
    """A daemon process: runs until killed (its handler is never needed: no job ends here)."""
    state = DaemonState.connect(url)
    LogDaemon(logs, state, config=_config(), sink=_sink, handler_factory=lambda: None).run(threading.Event())


def _seen(url: str) -> list[str]:
    client = redis.Redis.from_url(url)
    return [x.decode() for x in client.lrange(SEEN, 0, -1)]


# -- the specification ------------------------------------------------------------------------


def test_every_line_is_consumed_exactly_once_through_rotation_truncation_deletion_junk_and_a_crash(
    tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    monkeypatch.setenv("TEST_DAEMON_REDIS", redis_url)
    ctx = multiprocessing.get_context("fork")
    daemon = ctx.Process(target=_run_daemon, args=(str(logs), redis_url))
    daemon.start()
    writer = ctx.Process(target=_writer, args=(str(logs), str(tmp_path / "a.json"), 1600, "a"))
    writer.start()
    _wait(lambda: len(_seen(redis_url)) >= 400)
    assert writer.is_alive(), "the writer should still be writing when the daemon is killed"
    os.kill(daemon.pid, signal.SIGKILL)  # a crash: no clean shutdown, no final commit
    daemon.join()
    consumed_before_crash = len(_seen(redis_url))
    daemon = ctx.Process(target=_run_daemon, args=(str(logs), redis_url))
    daemon.start()
    writer.join(timeout=30)
    assert writer.exitcode == 0
    deleter = ctx.Process(target=_writer, args=(str(logs), str(tmp_path / "b.json"), 300, "b"))
    deleter.start()
    deleter.join(timeout=30)
    assert deleter.exitcode == 0
    # a deleted file's unread lines live only behind the daemon's open descriptor: a crash before
    # they are read loses them for good (nobody can reopen the file), so the crash comes after
    _wait(lambda: sum(s.startswith("del:") for s in _seen(redis_url)) >= 300, timeout=60)
    os.kill(daemon.pid, signal.SIGKILL)
    daemon.join()

    state = DaemonState.connect(redis_url)
    final = LogDaemon(logs, state, config=_config(), sink=_sink, handler_factory=lambda: None)
    final.run_once()  # whatever the killed daemon had not committed yet
    written = json.loads((tmp_path / "a.json").read_text()) | json.loads((tmp_path / "b.json").read_text())
    expected = sorted(f"{job}:{n}" for job, ns in written.items() for n in ns)
    seen = _seen(redis_url)
    assert 0 < consumed_before_crash < len(expected)
    assert len(seen) == len(set(seen)), f"{len(seen) - len(set(seen))} lines were read twice"
    assert sorted(seen) == expected

    rot, cpt, deleted = state.job("rot"), state.job("cpt"), state.job("del")
    assert rot is not None and cpt is not None and deleted is not None
    assert rot.rotations >= 5 and cpt.truncations >= 3 and rot.binary_lines >= 16
    assert cpt.cut_lines == 1
    assert rot.step_time_s == pytest.approx(STEP_TIME) and cpt.loss is not None
    assert deleted.lines == 300
    assert state.stats()["lag_bytes"] == 0


def test_a_restart_resumes_at_the_committed_offset_and_keeps_the_estimate(tmp_path: Path, redis_url: str) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    path = logs / "job-7.log"
    path.write_bytes(b"".join(_line("j", n) for n in range(40)) + b"seq=j:40 step: 40 lo")  # half a line
    state = DaemonState.connect(redis_url)
    first = LogDaemon(logs, state, config=_config(), sink=_sink, handler_factory=lambda: None)
    first.run_once()
    assert state.job("job-7").lines == 40  # the half line waits for its newline
    first.close()
    with open(path, "ab") as fh:
        fh.write(b"ss: 1.9 time: 0.250s\n" + b"".join(_line("j", n) for n in range(41, 60)))
    second = LogDaemon(logs, state, config=_config(), sink=_sink, handler_factory=lambda: None)
    second.run_once()
    job = state.job("job-7")
    assert job.lines == 60 and sorted(_seen(redis_url)) == sorted(f"j:{n}" for n in range(60))
    assert job.step_time_s == pytest.approx(STEP_TIME) and job.slowdown == pytest.approx(1.0)


def test_a_slowdown_is_reported_against_the_jobs_own_baseline(tmp_path: Path, redis_url: str) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    path = logs / "slow.log"
    path.write_bytes(b"".join(f"step: {n} loss: 2.0 time: 0.200s\n".encode() for n in range(30)))
    state = DaemonState.connect(redis_url)
    daemon = LogDaemon(logs, state, config=_config(eval_every_s=0.0), handler_factory=lambda: None)
    daemon.run_once()
    with open(path, "ab") as fh:
        fh.write(b"".join(f"step: {n} loss: 2.0 time: 0.500s\n".encode() for n in range(30, 60)))
    daemon.run_once()
    job = state.job("slow")
    assert job.baseline_step_time_s == pytest.approx(0.2)
    assert job.step_time_s == pytest.approx(0.5) and job.slowdown == pytest.approx(2.5)
    assert state.slowed_down(2.0) == {"slow": pytest.approx(2.5)} and state.slowed_down(3.0) == {}


def _failing_writer(logs: str) -> None:
    root = Path(logs)
    with open(root / "bad.log", "ab", buffering=0) as fh:
        for n in range(200):
            fh.write(_line("bad", n))
        fh.write(b"Traceback (most recent call last):\n  File \"train.py\", line 88, in <module>\n    loss.backward()\n"
                 b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB total capacity)\n")
    with open(root / "good.log", "ab", buffering=0) as fh:
        for n in range(200):
            fh.write(_line("good", n))
    with open(root / "told.log", "ab", buffering=0) as fh:
        for n in range(50):
            fh.write(_line("told", n))
        fh.write(b"srun: error: node-3: task 0: Exited with exit code 1\n")


def test_a_job_that_ends_badly_gets_a_diagnosis_stored(tmp_path: Path, redis_url: str, classifier: Any) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    writer = multiprocessing.get_context("fork").Process(target=_failing_writer, args=(str(logs),))
    writer.start()
    writer.join(timeout=30)
    state = DaemonState.connect(redis_url)
    clock = [time.time()]
    daemon = LogDaemon(logs, state, config=_config(idle_s=60.0), classifier=classifier, clock=lambda: clock[0])
    daemon.run_once()
    assert {j: s.phase for j, s in state.jobs().items()} == {"bad": "running", "good": "running", "told": "running"}
    state.request_end("told", "failed")  # the scheduler's word: diagnosed even without a signature
    clock[0] += 61  # all three idle now
    daemon.run_once()
    bad, good, told = state.job("bad"), state.job("good"), state.job("told")
    assert bad.phase == "failed" and bad.diagnosis is not None and bad.diagnosis.trigger == "idle+signature"
    assert bad.diagnosis.status == "failure_found" and bad.diagnosis.category == "script"  # a CUDA OOM: the owner acts (logs.md 2.1b)
    assert "out of memory" in (bad.diagnosis.root_cause or "").lower()
    assert good.phase == "idle" and good.diagnosis is None  # idle without a failure signature: not ended
    assert told.phase == "failed" and told.end_status == "failed" and told.diagnosis.trigger == "end:failed"
    assert state.pending_ends() == []


def test_a_deleted_file_is_read_before_live_ones_when_the_poll_budget_is_short(tmp_path: Path) -> None:
    """Its unread bytes exist only behind the daemon's descriptor: they go first."""
    for name in ("a-live.log", "b-gone.log", "c-live.log"):
        (tmp_path / name).write_bytes(b"".join(_line(name[0], n) for n in range(5_000)))
    budget = 32 << 10
    follower = Follower(tmp_path, FollowConfig(chunk_bytes=16 << 10, batch_bytes=16 << 10, file_budget=budget,
                                               poll_budget=budget))
    list(follower.poll())  # adopts all three, reads one of them
    (tmp_path / "b-gone.log").unlink()
    for _ in range(3):  # whichever file the round-robin would pick, the deleted one is read first
        read = [b.file.path for b in follower.poll() if b.lines and b.file is not None]
        assert read and read[0].endswith("b-gone.log")
    follower.close()


def test_backpressure_bounds_each_poll_and_reports_the_lag(tmp_path: Path) -> None:
    (tmp_path / "fast.log").write_bytes(b"".join(_line("f", n) for n in range(20_000)))
    size = (tmp_path / "fast.log").stat().st_size
    follower = Follower(tmp_path, FollowConfig(chunk_bytes=16 << 10, batch_bytes=16 << 10, file_budget=64 << 10))
    first = list(follower.poll())
    read = sum(b.nbytes for b in first)
    assert read == 64 << 10 and all(b.nbytes <= 16 << 10 for b in first)
    assert follower.stats.lag_bytes == pytest.approx(size - read, abs=200)  # minus a partial line
    while follower.stats.lag_bytes:
        list(follower.poll())
    assert follower.stats.lines == 20_000
    follower.close()


def test_a_bounded_queue_blocks_the_reader_instead_of_buffering(tmp_path: Path, redis_url: str) -> None:
    (tmp_path / "big.log").write_bytes(b"".join(_line("b", n) for n in range(30_000)))
    state = DaemonState.connect(redis_url)
    daemon = LogDaemon(tmp_path, state, config=_config(), handler_factory=lambda: None)
    stop, depths = threading.Event(), []
    slow_apply = daemon._apply

    def apply(batch: Any) -> None:  # a processor slower than the disk
        depths.append(daemon._queue.qsize())
        time.sleep(0.002)
        slow_apply(batch)

    daemon._apply = apply  # type: ignore[method-assign]
    runner = threading.Thread(target=daemon.run, args=(stop,))
    runner.start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (state.job("big") is None or state.job("big").lines < 30_000):
        time.sleep(0.05)
    stop.set()
    runner.join(timeout=10)
    assert state.job("big").lines == 30_000
    assert max(depths) <= 4  # never more than `queue_batches` read ahead


def test_lines_are_cut_at_newlines_only_and_capped() -> None:
    cut = LineCutter(max_line_bytes=8)
    assert [ln.raw for ln in cut.feed(b"ab\ncd", 0)] == [b"ab"]
    assert cut.start == 3
    got = cut.feed(b"ef\n" + b"x" * 20 + b"\nok\n", 5)
    assert [(ln.offset, ln.raw, ln.cut) for ln in got] == [(3, b"cdef", False), (8, b"x" * 8, True), (29, b"ok", False)]


@pytest.mark.parametrize(("name", "job"), [("job-42.log", "job-42"), ("job-42.log.3", "job-42"),
                                           ("slurm-7.out", "slurm-7"), ("train.log-20240101", "train"), ("run-9", "run-9")])
def test_rotated_names_map_to_their_job(name: str, job: str) -> None:
    assert job_id_from_name(name) == job


def test_a_directory_that_does_not_exist_is_one_clear_error(tmp_path: Path, redis_url: str) -> None:
    with pytest.raises(NotADirectoryError, match="not a directory"):
        LogDaemon(tmp_path / "nope", DaemonState.connect(redis_url))


def test_redis_going_down_pauses_the_daemon_and_it_resumes_without_loss_or_repeats(tmp_path: Path) -> None:
    from schedmate.embeddings import redis_server
    from tests.conftest import require_redis_server

    require_redis_server()
    logs = tmp_path / "logs"
    logs.mkdir()
    info = redis_server.start(tmp_path / "redis")
    try:
        state = DaemonState.connect(info.url, retries=1, timeout_s=1.0)
        daemon = LogDaemon(logs, state, config=_config(), sink=_sink, handler_factory=lambda: None)
        stop = threading.Event()
        runner = threading.Thread(target=daemon.run, args=(stop,))
        runner.start()
        path = logs / "r.log"
        path.write_bytes(b"".join(_line("r", n) for n in range(100)))
        _wait(lambda: len(_seen(info.url)) == 100)
        redis_server.stop(tmp_path / "redis")  # saved on the way down
        with open(path, "ab") as fh:
            fh.write(b"".join(_line("r", n) for n in range(100, 300)))
        time.sleep(1.0)  # the daemon reads, cannot commit, pauses
        info = redis_server.start(tmp_path / "redis", info.port)
        _wait(lambda: len(_seen(info.url)) >= 300)
        stop.set()
        runner.join(timeout=10)
        seen = _seen(info.url)
        assert sorted(seen) == sorted(f"r:{n}" for n in range(300))  # none lost, none twice
        assert daemon.redis_errors >= 1
    finally:
        redis_server.stop(tmp_path / "redis")


def _wait(cond: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if cond():
                return
        except redis.RedisError:
            pass
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_fifos_symlinks_and_folders_in_the_log_directory_are_skipped_without_blocking(tmp_path: Path, redis_url: str) -> None:
    (tmp_path / "real.log").write_bytes(b"".join(_line("x", n) for n in range(10)))
    os.mkfifo(tmp_path / "pipe.log")  # an open() of this would block until a writer appears
    (tmp_path / "link.log").symlink_to(tmp_path / "real.log")
    (tmp_path / "sub.log").mkdir()
    (tmp_path / "old.log.1.gz").write_bytes(b"\x1f\x8b\x08\x00" + os.urandom(200))
    state = DaemonState.connect(redis_url)
    LogDaemon(tmp_path, state, config=_config(), handler_factory=lambda: None).run_once()
    jobs = state.jobs()
    assert {j: s.lines for j, s in jobs.items()} == {"real": 10, "old": 0}
    assert (jobs["old"].unreadable or "").startswith("unreadable: compression (gzip stream is corrupt")  # said, not skipped
