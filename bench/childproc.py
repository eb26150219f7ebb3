"""Run one command as a child process and measure it: the benchmarks' shared runner.

Peak RSS is the child's own high-water mark (`VmHWM`), polled from /proc while it runs: `wait4`'s
`ru_maxrss` also counts the parent's pages the child held between fork and exec, which inflates a
small child forked from a big benchmark. `ru_maxrss` is used only for a child that ended before
the first poll. A child still running after `timeout` seconds is killed and reported as hung.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ChildRun:
    """What one child did: exit code, wall time, whether it hung, its peak RSS and its output."""

    rc: int
    wall_s: float
    hung: bool
    peak_rss_mb: float
    stdout: str
    stderr: str
    watched_s: float | None = None  # seconds until `watch` first appeared on stderr (None: never)

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.stderr or "Fatal Python error" in self.stderr


def _hwm_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return next((int(ln.split()[1]) for ln in fh if ln.startswith("VmHWM:")), 0)
    except (OSError, ValueError, IndexError):
        return 0


def run_child(argv: Sequence[str], timeout: float, *, cwd: Path | None = None,
              env: Mapping[str, str] | None = None, poll_s: float = 0.02, watch: str | None = None) -> ChildRun:
    """Run `argv` to its end (or kill it after `timeout` s), polling its memory every `poll_s` s."""
    t0 = time.perf_counter()
    watched: float | None = None
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(list(argv), stdout=out, stderr=err, text=True, cwd=cwd,
                                env=dict(env) if env is not None else None)
        hung, peak_kb = False, 0
        while True:
            peak_kb = max(peak_kb, _hwm_kb(proc.pid))
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if watch is not None and watched is None:
                err.seek(0)
                if watch in err.read():
                    watched = round(time.perf_counter() - t0, 2)
            if time.perf_counter() - t0 > timeout:
                hung = True
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(poll_s)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    return ChildRun(rc=os.waitstatus_to_exitcode(status), wall_s=round(wall, 2), hung=hung,
                    peak_rss_mb=round((peak_kb or usage.ru_maxrss) / 1024, 1), stdout=stdout, stderr=stderr,
                    watched_s=watched)
