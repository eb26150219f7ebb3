"""The daemon's boundary types: what is persisted per file, what one read hands on, and what the
scheduler reads per job (`JobStatus`, JSON in Redis)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from schedmate.agents.failure.wire import Diagnosis
from schedmate.agents.tracker.lines import Line
from schedmate.deploy.daemon.identity import Anchor

FileStatus = Literal["active", "shadow", "ghost"]
Event = Literal["new", "copy", "renamed", "truncated", "deleted", "shadow", "forget", "unreadable"]
JobPhase = Literal["running", "idle", "ended", "failed"]


@dataclass(frozen=True, slots=True)
class FileState:
    """One file as persisted: identity, job, the consumed prefix (`anchor.offset` = bytes of
    complete lines consumed), its generation (bumped on truncation) and status. A `ghost` is a
    retired prefix (truncated, deleted, or missing after a restart) kept so a copy of it can
    resume where reading stopped; a `shadow` is a copy of a live file, read only once it retires."""

    key: str
    dev: int
    ino: int
    path: str
    job_id: str
    anchor: Anchor
    generation: int = 0
    status: FileStatus = "active"
    shadow_of: str | None = None
    retired_at: float | None = None

    def to_json(self) -> dict[str, Any]:
        a = self.anchor
        return {"dev": self.dev, "ino": self.ino, "path": self.path, "job": self.job_id, "gen": self.generation,
                "status": self.status, "shadow_of": self.shadow_of, "retired_at": self.retired_at,
                "head": a.head, "head_len": a.head_len, "mark": a.mark, "offset": a.offset}  # fmt: skip

    @classmethod
    def from_json(cls, key: str, d: dict[str, Any]) -> FileState:
        anchor = Anchor(str(d["head"]), int(d["head_len"]), str(d["mark"]), int(d["offset"]))
        return cls(key, int(d["dev"]), int(d["ino"]), str(d["path"]), str(d["job"]), anchor, int(d["gen"]),
                   d["status"], d.get("shadow_of"), d.get("retired_at"))  # fmt: skip


@dataclass(frozen=True, slots=True)
class Batch:
    """Complete lines read from one file, and the file's state once they are consumed.

    The processor commits `file` (and `forget`: ghost keys used up or expired) in the same Redis
    transaction as what it made of `lines`, so a crash either keeps both or neither."""

    file: FileState | None
    lines: list[Line] = field(default_factory=list)
    events: tuple[Event, ...] = ()
    forget: tuple[str, ...] = ()
    retired: tuple[FileState, ...] = ()
    nbytes: int = 0
    unreadable: str | None = None  # `unreadable: <why>`: the file is not text (never read as lines)

    @property
    def job_id(self) -> str | None:
        return self.file.job_id if self.file else None


class Diagnosed(Diagnosis):
    """The Failure Handler's `Diagnosis` of a job that ended badly (the wire model of
    agents/failure/wire.py, unchanged), with why and when the daemon diagnosed it. The daemon reads
    the job's tail: its line numbers are the log's only when that is known (`JobBook._diagnose`)."""

    trigger: str = ""  # why the daemon diagnosed: "idle+signature" or "end:<status>"
    at: float = 0.0


class JobStatus(BaseModel):
    """What the daemon knows about one job; `DaemonState.job(job_id)` returns it from Redis."""

    model_config = ConfigDict(extra="ignore")

    job_id: str
    phase: JobPhase = "running"
    lines: int = 0
    bytes: int = 0
    binary_lines: int = 0
    cut_lines: int = 0
    parsed_lines: int = 0  # lines the tracker parsed (the newest of each batch, see `jobs._feed`)
    progress_lines: int = 0
    files: list[str] = []
    rotations: int = 0
    truncations: int = 0
    step_time_s: float | None = None  # steady estimate (newest regime, outliers dropped)
    last_step_time_s: float | None = None
    baseline_step_time_s: float | None = None  # the fastest steady estimate seen for this job
    slowdown: float | None = None  # step_time_s / baseline_step_time_s (>1 is slower)
    loss: float | None = None
    throughput: float | None = None
    throughput_unit: str | None = None
    confidence: float | None = None
    method: str | None = None
    signal: str | None = None  # why there is no estimate (the tracker's NoSignal reason)
    last_line_at: float | None = None
    updated_at: float | None = None
    end_status: str | None = None
    unreadable: str | None = None  # `unreadable: <why>` for a log of this job that is not text
    diagnosis: Diagnosed | None = None

    def line(self) -> str:
        """One status line for the CLI stream."""
        parts = [f"{self.job_id}", self.phase, f"lines={self.lines}"]
        if self.step_time_s is not None:
            parts.append(f"step={self.step_time_s:.4g}s")
        if self.slowdown is not None:
            parts.append(f"slowdown={self.slowdown:.2f}x")
        if self.loss is not None:
            parts.append(f"loss={self.loss:.4g}")
        if self.binary_lines:
            parts.append(f"binary={self.binary_lines}")
        if self.unreadable:
            parts.append(self.unreadable)
        if self.rotations or self.truncations:
            parts.append(f"rot={self.rotations} trunc={self.truncations}")
        if self.diagnosis is not None:
            d = self.diagnosis
            parts.append(f"diagnosis={d.category or d.status}/{d.reason_code or '-'}")
        return " ".join(parts)
