"""A real single-node Slurm (munged, slurmctld, slurmd) in one folder, on free loopback ports.

For tests and for trying the integration on a laptop: everything (munge key and socket, state,
spool, logs, pid files, slurm.conf, gres.conf with dummy GPU device files) lives in `root`, so
nothing touches /etc and two clusters can run side by side. Needs root (slurmd) and Debian's
`slurm-wlm` and `munge`. `stop()` ends the three daemons by their pid files.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schedmate.errors import DependencyUnavailable

__all__ = ["BINARIES", "LocalSlurm", "SlurmStartError", "missing_binaries", "running_cluster"]

BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "scontrol", "sinfo")


class SlurmStartError(DependencyUnavailable):
    """A daemon did not start or the node did not become idle (the message quotes its log)."""


def missing_binaries() -> list[str]:
    return [b for b in BINARIES if shutil.which(b) is None]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LocalSlurm:
    """One cluster in `root`: node `hostname -s` at 127.0.0.1 with `gpus` GPUs as gres."""

    root: Path
    gpus: int = 8
    cpus: int = 2
    extra_conf: list[str] = field(default_factory=list)  # e.g. config.slurm_conf_lines(...)
    host: str = field(default_factory=lambda: socket.gethostname().split(".")[0])

    @property
    def conf_dir(self) -> Path:
        return self.root / "etc"

    @property
    def conf(self) -> Path:
        return self.conf_dir / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        """The environment Slurm's client commands need to reach this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def _pid_files(self) -> list[Path]:
        return [self.root / "slurmd.pid", self.root / "slurmctld.pid", self.root / "munge" / "munged.pid"]

    def write_config(self) -> None:
        r = self.root
        for d in ("etc", "state", "spool", "log", "dev", "munge"):
            (r / d).mkdir(parents=True, exist_ok=True)
        r.chmod(0o755)  # munged wants the socket's folder reachable, not writable by others
        (r / "munge").chmod(0o700)
        key = r / "munge" / "munge.key"
        if not key.exists():
            key.write_bytes(os.urandom(1024))
            key.chmod(0o400)
        for i in range(self.gpus):
            (r / "dev" / f"gpu{i}").touch()
        ctl_port, d_port = _free_port(), _free_port()
        lines = [
            "ClusterName=schedmate", f"SlurmctldHost={self.host}(127.0.0.1)", "SlurmUser=root",
            f"SlurmctldPort={ctl_port}", f"SlurmdPort={d_port}", "AuthType=auth/munge", "CredType=cred/munge",
            f"AuthInfo=socket={r / 'munge' / 'munge.sock'}", f"StateSaveLocation={r / 'state'}",
            f"SlurmdSpoolDir={r / 'spool'}", f"SlurmctldPidFile={r / 'slurmctld.pid'}",
            f"SlurmdPidFile={r / 'slurmd.pid'}", f"SlurmctldLogFile={r / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={r / 'log' / 'slurmd.log'}", "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "SchedulerType=sched/backfill", "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core",
            "GresTypes=gpu", "ReturnToService=2", "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none", "JobAcctGatherType=jobacct_gather/none", "MpiDefault=none",
            "MinJobAge=600", *self.extra_conf,
            f"NodeName={self.host} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory=8000 Gres=gpu:{self.gpus} "
            "State=UNKNOWN",
            f"PartitionName=main Nodes={self.host} Default=YES MaxTime=INFINITE State=UP",
        ]
        self.conf.write_text("\n".join(lines) + "\n")
        last = f"[0-{self.gpus - 1}]" if self.gpus > 1 else "0"
        (self.conf_dir / "gres.conf").write_text(f"NodeName={self.host} Name=gpu File={r / 'dev'}/gpu{last}\n")

    def start(self, timeout_s: float = 30.0) -> None:
        """Start munged, slurmctld, slurmd; return once the node is idle."""
        if missing := missing_binaries():
            raise SlurmStartError(f"not installed: {', '.join(missing)} (apt-get install slurm-wlm munge)")
        if not self.conf.exists():
            self.write_config()
        m = self.root / "munge"
        self._run(["munged", "--force", f"--socket={m / 'munge.sock'}", f"--key-file={m / 'munge.key'}",
                   f"--pid-file={m / 'munged.pid'}", f"--log-file={m / 'munged.log'}", f"--seed-file={m / 'seed'}"])
        self._run(["slurmctld", "-f", str(self.conf)])
        self._run(["slurmd", "-f", str(self.conf)])
        deadline = time.monotonic() + timeout_s
        resumed = False
        while time.monotonic() < deadline:
            state = subprocess.run(["sinfo", "-h", "-N", "-o", "%t"], env=self.env, capture_output=True, text=True,
                                   timeout=10).stdout.strip()
            if state in ("idle", "mix", "alloc"):
                return
            if state.rstrip("*") in ("down", "drain", "inval") and not resumed:
                subprocess.run(["scontrol", "update", f"nodename={self.host}", "state=resume"], env=self.env,
                               capture_output=True, timeout=10)
                resumed = True
            time.sleep(0.3)
        raise SlurmStartError(f"node not idle after {timeout_s:g} s (state {state!r}); slurmctld log:\n"
                              + self.log_tail("slurmctld.log") + "\nslurmd log:\n" + self.log_tail("slurmd.log"))

    def _run(self, cmd: list[str]) -> None:
        done = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            raise SlurmStartError(f"{cmd[0]} exited {done.returncode}: {(done.stderr or done.stdout).strip()[-800:]}")

    def log_tail(self, name: str, lines: int = 20) -> str:
        path = self.root / "log" / name
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else "(no log)"

    def stop(self, timeout_s: float = 15.0) -> None:
        """SIGTERM each daemon by its pid file, then SIGKILL whatever is left after `timeout_s`."""
        pids = []
        for pid_file in self._pid_files():
            try:
                pid = int(pid_file.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
            try:
                os.kill(pid, signal.SIGTERM)
                pids.append(pid)
            except ProcessLookupError:
                pass
            if pid_file.name == "slurmctld.pid":
                _wait_gone([pid], timeout_s)  # munged last: the daemons talk through it while stopping
        if not _wait_gone(pids, timeout_s):
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def sbatch(self, script: Path, *args: str) -> str:
        """Submit `script` (run in its folder); returns the job id."""
        done = subprocess.run(["sbatch", "--parsable", *args, str(script)], cwd=script.parent, env=self.env,
                              capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            raise SlurmStartError(f"sbatch failed: {done.stderr.strip()}")
        return done.stdout.strip().split(";")[0]

    def wait_state(self, job_id: str, states: tuple[str, ...] = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"),
                   timeout_s: float = 60.0) -> str:
        """Poll `scontrol show job` until the job reaches one of `states`; returns it."""
        deadline = time.monotonic() + timeout_s
        state = "?"
        while time.monotonic() < deadline:
            out = subprocess.run(["scontrol", "show", "job", job_id], env=self.env, capture_output=True, text=True,
                                 timeout=10).stdout
            for tok in out.split():
                if tok.startswith("JobState="):
                    state = tok.split("=", 1)[1]
            if state in states:
                return state
            time.sleep(0.3)
        raise SlurmStartError(f"job {job_id} still {state} after {timeout_s:g} s")


def _wait_gone(pids: list[int], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        alive = []
        for pid in pids:
            try:
                os.kill(pid, 0)
                alive.append(pid)
            except ProcessLookupError:
                pass
        if not alive:
            return True
        time.sleep(0.1)
    return False


@contextmanager
def running_cluster(root: Path, **kwargs: Any) -> Iterator[LocalSlurm]:
    """A started cluster in `root`, stopped (by pid files) however the block ends."""
    cluster = LocalSlurm(root, **kwargs)
    cluster.write_config()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
