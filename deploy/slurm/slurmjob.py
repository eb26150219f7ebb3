"""What Slurm says about one job, read from `scontrol show job` and the batch script (stdlib only).

Runs inside slurmctld's hooks (the job-submit plugin's helper and EpilogSlurmctld), so it imports
nothing beyond the standard library and never raises on odd text: a field it cannot read is None.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from typing import Literal

from schedmate.errors import DependencyUnavailable

__all__ = ["MAX_COMMAND", "SlurmJob", "ScontrolError", "final_status", "gpus_requested", "launch_command",
           "parse_duration", "parse_show_job", "show_job", "batch_script"]

Status = Literal["completed", "failed", "cancelled"]
MAX_COMMAND = 8192  # the service's `command` field limit
# `scontrol show job` prints these alone on their line: their values may hold spaces and `=`
_WHOLE_LINE = ("Command", "WorkDir", "StdErr", "StdIn", "StdOut", "Comment", "AdminComment", "SystemComment",
               "Power")
_FAILED = {"FAILED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL", "DEADLINE"}
_CANCELLED = {"CANCELLED", "PREEMPTED"}
_FAIL_REASONS = {"TimeLimit", "OutOfMemory", "NonZeroExitCode", "NodeDown", "JobLaunchFailure", "BadConstraints",
                 "RaisedSignal", "DeadLine", "Prolog", "BurstBufferOperation"}
NO_VAL_MIN = 0xFFFFFFF0  # Slurm's NO_VAL / INFINITE and their neighbours: "not given"


class ScontrolError(DependencyUnavailable):
    """`scontrol` is missing, failed, or did not answer in time."""


@dataclass(frozen=True)
class SlurmJob:
    """The fields of `scontrol show job` the hooks use (None: absent or unreadable)."""

    job_id: str
    state: str | None = None
    reason: str | None = None
    exit_code: int | None = None
    signal: int | None = None
    run_time_s: float | None = None
    time_limit: str | None = None
    work_dir: str | None = None
    std_out: str | None = None
    std_err: str | None = None
    tres_per_node: str | None = None
    num_nodes: int | None = None
    user: str | None = None
    name: str | None = None
    admin_comment: str | None = None
    partition: str | None = None

    @property
    def settled(self) -> bool:
        """Whether Slurm has given the job its final state (during EpilogSlurmctld it is COMPLETING)."""
        return self.state is not None and self.state not in ("COMPLETING", "RUNNING", "PENDING", "CONFIGURING",
                                                             "SUSPENDED", "REQUEUED", "RESIZING")

    def log_for(self, status: Status) -> str | None:
        """The log to read: a failed job's separate, non-empty StdErr (its traceback), else StdOut."""
        from pathlib import Path

        if status == "failed" and self.std_err and self.std_err != self.std_out:
            err = Path(self.std_err)
            if err.is_file() and err.stat().st_size > 0:
                return self.std_err
        return self.std_out or self.std_err


def parse_duration(text: str | None) -> float | None:
    """Slurm's [D-]HH:MM:SS / MM:SS; None for UNLIMITED, N/A or anything else."""
    if not text:
        return None
    m = re.fullmatch(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)", text.strip())
    if m is None:
        return None
    days, hours, mins, secs = (int(g) if g else 0 for g in m.groups())
    return float(((days * 24 + hours) * 60 + mins) * 60 + secs)


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def parse_show_job(text: str) -> SlurmJob | None:
    """The first job in `scontrol show job` output (multi-line form); None if there is none."""
    fields: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            if fields:
                break
            continue
        key = line.split("=", 1)[0]
        if key in _WHOLE_LINE and "=" in line:
            fields.setdefault(key, line.split("=", 1)[1].rstrip())
            continue
        for pair in line.split():
            k, sep, v = pair.partition("=")
            if sep:
                fields.setdefault(k, v)
    if "JobId" not in fields:
        return None
    exit_code = signal = None
    if ":" in fields.get("ExitCode", ""):
        a, b = fields["ExitCode"].split(":", 1)
        exit_code, signal = _int(a), _int(b)
    user = fields.get("UserId")
    return SlurmJob(
        job_id=fields["JobId"], state=fields.get("JobState"), reason=_none(fields.get("Reason")),
        exit_code=exit_code, signal=signal, run_time_s=parse_duration(fields.get("RunTime")),
        time_limit=fields.get("TimeLimit"), work_dir=_none(fields.get("WorkDir")), std_out=_none(fields.get("StdOut")),
        std_err=_none(fields.get("StdErr")), tres_per_node=_none(fields.get("TresPerNode")),
        num_nodes=_int(fields.get("NumNodes", "").split("-")[0] or None), user=user.split("(")[0] if user else None,
        name=_none(fields.get("JobName")), admin_comment=_none(fields.get("AdminComment")),
        partition=_none(fields.get("Partition")))


def _none(value: str | None) -> str | None:
    """Slurm's placeholders for "nothing" as None."""
    if value is None:
        return None
    value = value.strip()
    return None if value in ("", "(null)", "None", "N/A") else value


def final_status(job: SlurmJob) -> Status:
    """completed / failed / cancelled, from the final state; from reason and exit code while the job
    is still COMPLETING (then a scancel'd job with exit 0:0 reads as completed: see the README)."""
    if job.state in _FAILED:
        return "failed"
    if job.state in _CANCELLED:
        return "cancelled"
    if job.state == "COMPLETED":
        return "completed"
    if job.reason in _FAIL_REASONS or (job.exit_code or 0) != 0:
        return "failed"
    if (job.signal or 0) != 0:
        return "cancelled"
    return "completed"


def gpus_requested(tres: str | None, nodes: int | None = None) -> int | None:
    """GPUs in a TRES string such as `gres:gpu:2`, `gres/gpu:a100:4` or `gpu:8`, times the nodes."""
    if not tres:
        return None
    total = 0
    for item in tres.split(","):
        parts = re.split(r"[:/=]", item.strip())
        if "gpu" not in parts:
            continue
        tail = parts[parts.index("gpu") + 1:]
        count = _int(tail[-1]) if tail else 1
        total += count if count is not None else 1
    if not total:
        return None
    per_node_nodes = nodes if nodes and 0 < nodes < NO_VAL_MIN else 1
    return total * per_node_nodes


def launch_command(script: str) -> str:
    """The batch script as the advisor's `command` (it reads shell scripts, #SBATCH lines included):
    comments other than #SBATCH and blank lines dropped, then cut at the service's limit."""
    keep = [ln for ln in script.splitlines()
            if ln.strip() and (not ln.lstrip().startswith("#") or ln.lstrip().startswith("#SBATCH"))]
    text = "\n".join(keep)
    if len(text) <= MAX_COMMAND:
        return text
    return text[:MAX_COMMAND].rsplit("\n", 1)[0]


def _scontrol(args: list[str], timeout_s: float) -> str:
    try:
        done = subprocess.run(["scontrol", *args], capture_output=True, text=True, timeout=timeout_s)
    except FileNotFoundError:
        raise ScontrolError("scontrol is not on PATH") from None
    except subprocess.TimeoutExpired:
        raise ScontrolError(f"scontrol {' '.join(args)} did not answer in {timeout_s:g} s") from None
    if done.returncode != 0:  # its last line says why (earlier ones are the steps that led there)
        lines = [ln.strip() for ln in (done.stderr or done.stdout).splitlines() if ln.strip()]
        raise ScontrolError(f"scontrol {' '.join(args)}: {(lines[-1] if lines else 'failed')[:300]}")
    return done.stdout


def show_job(job_id: str, timeout_s: float = 10.0) -> SlurmJob:
    """`scontrol show job ID` parsed; `ScontrolError` when Slurm does not know the job (any more)."""
    job = parse_show_job(_scontrol(["show", "job", str(job_id)], timeout_s))
    if job is None:
        raise ScontrolError(f"scontrol knows no job {job_id}")
    return job


def batch_script(job_id: str, timeout_s: float = 10.0) -> str:
    """The job's batch script (`scontrol write batch_script ID -`)."""
    return _scontrol(["write", "batch_script", str(job_id), "-"], timeout_s)
