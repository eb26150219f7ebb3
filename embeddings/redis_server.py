"""Lifecycle of a local `redis-server` that holds the job store.

SchedMate runs its own Redis on loopback so the job history survives restarts (AOF + RDB in a data
directory) without asking users to administer a database. The server runs in the foreground of its
own session (`daemonize no`, `start_new_session`), so `schedmate redis start` can exit and leave it
running; `server.json` in the data directory records its pid and port for `stop` and `status`.

The record is a convenience, not the truth: a server whose record was lost (deleted data files, a
crashed CLI) is still found, by the pid file the server writes itself and by its working directory
(Redis chdirs into `--dir`), so `status` sees it and `start` never launches a second server on the
same data. Starts are serialised by an advisory lock on the data directory.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import redis

from schedmate.config import data_dir
from schedmate.errors import DependencyUnavailable

HOST = "127.0.0.1"
STATE_FILE = "server.json"
LOG_FILE = "redis.log"
PID_FILE = "redis.pid"  # written (and removed at shutdown) by redis-server itself
LOCK_FILE = ".start.lock"
SAVE_POINTS = ((3600, 1), (300, 100), (60, 10000))  # Redis' defaults: (seconds, changes) RDB snapshots


class RedisServerError(DependencyUnavailable):
    """The server could not be started, stopped or reached."""


class RedisNotInstalled(RedisServerError):
    """`redis-server` is not on PATH."""


@dataclass(frozen=True, slots=True)
class RedisServerInfo:
    """A server started by `start` (what `server.json` records)."""

    pid: int
    port: int
    data_dir: Path
    host: str = HOST

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"


@dataclass(frozen=True, slots=True)
class RedisServerStatus:
    """What `status` found: `running` is true only when the recorded pid is alive and answers PING."""

    running: bool
    data_dir: Path
    detail: str
    info: RedisServerInfo | None = None

    @property
    def url(self) -> str | None:
        return self.info.url if self.info else None


def default_data_dir() -> Path:
    """Where `schedmate redis start` keeps the server's data: `<SchedMate data dir>/redis`."""
    return data_dir() / "redis"


def redis_server_binary() -> str:
    """Path of `redis-server`, or `RedisNotInstalled` saying how to get it."""
    path = shutil.which("redis-server")
    if path is None:
        raise RedisNotInstalled(
            "redis-server is not installed (not found on PATH); "
            "install it with `apt-get install redis-server` (Debian/Ubuntu) or your OS's package"
        )
    return path


def start(data_dir: Path | str, port: int | None = None, *, timeout_s: float = 15.0) -> RedisServerInfo:
    """Start redis-server for `data_dir` on loopback and wait until it answers PING.

    Idempotent: if a server for this data dir is already running it is returned (a different
    explicit `port` is an error). With `port=None` a free port is picked; a lost race for it is
    retried.
    """
    data_dir = Path(data_dir).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    binary = redis_server_binary()
    with _start_lock(data_dir):
        current = status(data_dir)
        if current.info is not None and (current.running or _serves_dir(current.info)):
            if port is not None and port != current.info.port:
                raise RedisServerError(
                    f"a redis-server for {data_dir} already runs on port {current.info.port}, not {port}"
                )
            if current.running:
                _write_state(current.info)  # re-records a server whose record was lost
                return current.info
            raise RedisServerError(
                f"a redis-server (pid {current.info.pid}) already uses {data_dir} but does not answer "
                f"PING on port {current.info.port}; stop it first (`schedmate redis stop`)"
            )
        return _start_new(binary, data_dir, port, timeout_s)


def _start_new(binary: str, data_dir: Path, port: int | None, timeout_s: float) -> RedisServerInfo:
    attempts = 1 if port is not None else 3
    last_error: RedisServerError | None = None
    for _ in range(attempts):
        try:
            info = _launch(binary, data_dir, port or _free_port(), timeout_s)
        except RedisServerError as exc:  # e.g. the free port was taken meanwhile
            last_error = exc
            continue
        _write_state(info)
        return info
    assert last_error is not None
    raise last_error


def stop(data_dir: Path | str, *, timeout_s: float = 15.0) -> bool:
    """Stop the server for `data_dir` after saving its data; False if none was running.

    Asks for `SHUTDOWN SAVE` first (flushes AOF and writes an RDB), falls back to SIGTERM (which
    Redis also handles by saving), and to SIGKILL only if the process outlives `timeout_s`.
    """
    data_dir = Path(data_dir).resolve()
    info = _read_state(data_dir)
    if info is None or not _serves_dir(info):
        info = _find_unrecorded(data_dir) or info
    if info is None:
        return False
    state_file = data_dir / STATE_FILE
    if not _pid_alive(info.pid) or not _is_redis_process(info.pid):
        state_file.unlink(missing_ok=True)
        return False
    try:
        _client(info, timeout_s=2.0).shutdown(save=True)
    except redis.RedisError:
        _signal(info.pid, signal.SIGTERM)
    if not _wait_exit(info.pid, timeout_s):
        _signal(info.pid, signal.SIGTERM)
        if not _wait_exit(info.pid, timeout_s / 2):
            _signal(info.pid, signal.SIGKILL)
            _wait_exit(info.pid, 5.0)
    state_file.unlink(missing_ok=True)
    return True


def status(data_dir: Path | str) -> RedisServerStatus:
    """Whether the server recorded in `data_dir` is alive and answers PING."""
    data_dir = Path(data_dir).resolve()
    info = _read_state(data_dir)
    note = ""
    if info is None or not _pid_alive(info.pid) or not _is_redis_process(info.pid):
        found = _find_unrecorded(data_dir)
        if found is not None:
            why = "missing" if info is None else f"stale (pid {info.pid})"
            info, note = found, f" (its record {STATE_FILE} was {why}; found by its pid file / working directory)"
    if info is None:
        return RedisServerStatus(False, data_dir, f"no server recorded in {data_dir / STATE_FILE}")
    if not _pid_alive(info.pid) or not _is_redis_process(info.pid):
        return RedisServerStatus(False, data_dir, f"recorded pid {info.pid} is not running", info)
    if not _ping(info, timeout_s=1.0):
        return RedisServerStatus(
            False, data_dir, f"pid {info.pid} alive but {info.host}:{info.port} does not answer PING", info
        )
    return RedisServerStatus(True, data_dir, f"running, pid {info.pid}, {info.url}{note}", info)


@contextmanager
def running_server(data_dir: Path | str, port: int | None = None) -> Iterator[RedisServerInfo]:
    """A server for the duration of a `with` block (tests, benchmarks); stopped with a save."""
    info = start(data_dir, port)
    try:
        yield info
    finally:
        stop(data_dir)


def server_args(data_dir: Path, port: int) -> list[str]:
    """Command-line configuration: loopback only, protected mode, AOF and RDB in `data_dir`.

    `appendfsync always`, not `everysec`: under `everysec` a busy disk lets Redis postpone the AOF
    write by up to 2 s while it already answers OK, so a killed server lost the last acknowledged
    records (`tests/test_fuzz_faults.py`, under parallel tests). `always` writes and fsyncs before it
    answers: on the 2-core VM 2,700 single writes/s and 24,000 pipelined rows/s, against ~10,000 and
    72,000, far above what embedding lets an ingest write (tens of rows/s)."""
    return [
        "--bind", HOST,
        "--port", str(port),
        "--protected-mode", "yes",
        "--daemonize", "no",
        "--dir", str(data_dir),
        "--appendonly", "yes",
        "--appendfsync", "always",
        *(arg for seconds, changes in SAVE_POINTS for arg in ("--save", f"{seconds} {changes}")),
        "--dbfilename", "dump.rdb",
        "--pidfile", str(data_dir / PID_FILE),
        "--logfile", str(data_dir / LOG_FILE),
    ]  # fmt: skip


def _launch(binary: str, data_dir: Path, port: int, timeout_s: float) -> RedisServerInfo:
    log_path = data_dir / LOG_FILE
    log_offset = log_path.stat().st_size if log_path.exists() else 0
    proc = subprocess.Popen(
        [binary, *server_args(data_dir, port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # survives the CLI that started it and its Ctrl-C
        close_fds=True,
    )
    info = RedisServerInfo(pid=proc.pid, port=port, data_dir=data_dir)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RedisServerError(
                f"redis-server exited with code {proc.returncode} on port {port}: "
                f"{_log_tail(log_path, log_offset)}"
            )
        if _ping(info, timeout_s=0.5):
            return info
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    raise RedisServerError(
        f"redis-server on port {port} did not answer PING within {timeout_s:.0f}s: "
        f"{_log_tail(log_path, log_offset)}"
    )


@contextmanager
def _start_lock(data_dir: Path) -> Iterator[None]:
    """Serialise `start` calls on one data directory (two CLIs at once must not launch two servers)."""
    with (data_dir / LOCK_FILE).open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _serves_dir(info: RedisServerInfo) -> bool:
    """The pid is a live redis-server working in `info.data_dir`."""
    return _pid_alive(info.pid) and _is_redis_process(info.pid) and _proc_cwd(info.pid) in (info.data_dir, None)


def _proc_cwd(pid: int) -> Path | None:
    try:
        return Path(os.readlink(f"/proc/{pid}/cwd")).resolve()
    except OSError:
        return None


def _proc_port(pid: int) -> int | None:
    """Redis sets its process title to `redis-server HOST:PORT`."""
    try:
        title = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
    except OSError:
        return None
    _, _, port = title.rpartition(":")
    return int(port) if port.isdigit() else None


def _find_unrecorded(data_dir: Path) -> RedisServerInfo | None:
    """A live redis-server using `data_dir` that `server.json` does not (correctly) record."""
    candidates: list[int] = []
    try:
        candidates.append(int((data_dir / PID_FILE).read_text().strip()))
    except (OSError, ValueError):
        pass
    proc = Path("/proc")
    if proc.is_dir():
        candidates += [int(p.name) for p in proc.iterdir() if p.name.isdigit()]
    for pid in dict.fromkeys(candidates):
        if pid == os.getpid() or not _pid_alive(pid) or not _is_redis_process(pid):
            continue
        if _proc_cwd(pid) != data_dir:
            continue
        port = _proc_port(pid)
        if port is not None:
            return RedisServerInfo(pid=pid, port=port, data_dir=data_dir)
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _client(info: RedisServerInfo, timeout_s: float) -> redis.Redis:
    return redis.Redis(
        host=info.host,
        port=info.port,
        socket_timeout=timeout_s,
        socket_connect_timeout=timeout_s,
        retry=None,  # type: ignore[arg-type]  # None: no retries (redis-py accepts it; its stub does not)
        protocol=2,
    )


def _ping(info: RedisServerInfo, timeout_s: float) -> bool:
    client = _client(info, timeout_s)
    try:
        return bool(client.ping())
    except redis.RedisError:  # refused, loading the AOF (BusyLoadingError), timeout
        return False
    finally:
        client.close()


def _pid_alive(pid: int) -> bool:
    try:  # reap it first if it is our own exited child, else a zombie looks alive
        reaped, _ = os.waitpid(pid, os.WNOHANG)
        if reaped == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _is_redis_process(pid: int) -> bool:
    """Guards against a recycled pid; assumes yes where /proc is unavailable."""
    cmdline = Path(f"/proc/{pid}/cmdline")
    try:
        return b"redis-server" in cmdline.read_bytes()
    except FileNotFoundError:
        return not Path("/proc/self").exists()
    except OSError:
        return True


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _wait_exit(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not _pid_alive(pid):
            return True
        time.sleep(0.05)
    return not _pid_alive(pid)


def _write_state(info: RedisServerInfo) -> None:
    state = asdict(info) | {"data_dir": str(info.data_dir)}
    tmp = info.data_dir / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(state, indent=2))
    tmp.replace(info.data_dir / STATE_FILE)


def _read_state(data_dir: Path) -> RedisServerInfo | None:
    try:
        state = json.loads((data_dir / STATE_FILE).read_text())
        return RedisServerInfo(
            pid=int(state["pid"]), port=int(state["port"]), data_dir=data_dir, host=state.get("host", HOST)
        )
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None


def _log_tail(path: Path, offset: int, max_chars: int = 800) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(offset)
            text = fh.read().decode(errors="replace").strip()
    except OSError:
        return "(no log)"
    return text[-max_chars:] or "(empty log)"
