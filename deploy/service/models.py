"""The wire format of API v1 (pydantic at the boundary; every answer names its fallback).

Every answer carries `fallback`: None when SchedMate answered, `"scheduler-default"` when it could
not (a dependency down, a timeout, a full queue) and the scheduler should keep its own default;
`reason` then says why. Error bodies (429/503/504) use the same two fields (`ErrorBody`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from schedmate.agents.advisor.wire import Advice, Estimate, Match
from schedmate.agents.failure.wire import Diagnosis
from schedmate.agents.tracker.wire import Metric, TrackResult

__all__ = [
    "AdviseRequest", "AdviseResponse", "DiagnoseRequest", "DiagnoseResponse", "ErrorBody", "EstimateOut",
    "FailureReportRequest", "JobAck", "JobEndRequest", "JobRegisterRequest", "MatchOut", "SimilarFailuresRequest",
    "SimilarFailuresResponse", "TrackRequest", "TrackResponse",
]

Fallback = Literal["scheduler-default"] | None
SCHEDULER_DEFAULT: Literal["scheduler-default"] = "scheduler-default"
_JOB_ID = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Out(BaseModel):
    fallback: Fallback = None
    reason: str | None = None
    degraded: list[str] = Field(default_factory=list, description="parts answered without a dependency, and why")
    latency_s: float = 0.0


class ErrorBody(BaseModel):
    """Body of 4xx/5xx answers: the scheduler-default signal plus the reason (no traceback)."""

    fallback: Fallback = SCHEDULER_DEFAULT
    reason: str
    retry_after_s: float | None = None


# ------------------------------------------------------------------------------------ advise


class AdviseRequest(_In):
    repo: str = Field(max_length=4096, description="absolute path of the job's code, under an allowed root")
    command: str = Field(max_length=8192, description="the launch command line")
    gpus: int | None = Field(None, ge=1, le=1_000_000)
    nodes: int | None = Field(None, ge=1, le=100_000)
    job_id: str | None = Field(None, pattern=_JOB_ID)
    user: str | None = Field(None, max_length=256)


MatchOut = Match  # the advisor's wire models (agents/advisor/wire.py)
EstimateOut = Estimate


class AdviseResponse(_Out, Advice):
    """The Scheduling Advisor's `Advice` (agents/advisor/wire.py, as the chat reads its estimate)
    inside the service's envelope (`fallback`, `reason`, `degraded`, `latency_s`)."""

    model_config = ConfigDict(frozen=False)


# ------------------------------------------------------------------------------------- track


class TrackRequest(_In):
    log: str = Field(max_length=4096)
    job_id: str | None = Field(None, pattern=_JOB_ID, description="keeps the log tailed between calls")
    split_at: float | None = Field(None, description="POSIX time: also compare throughput before/after it")
    min_after_lines: int = Field(3, ge=1, le=1000)


MetricOut = Metric  # the tracker's wire `Metric` (agents/tracker/wire.py): value, unit, last, 1-based lines


class TrackResponse(_Out, TrackResult):
    """The Metric Tracker's `TrackResult` (agents/tracker/wire.py, as the chat reads it) inside the
    service's envelope (`fallback`, `reason`, `degraded`, `latency_s`)."""

    model_config = ConfigDict(frozen=False)


# ---------------------------------------------------------------------------------- diagnose


class DiagnoseRequest(_In):
    log: str = Field(max_length=4096)
    job_id: str = Field("adhoc", pattern=_JOB_ID)
    nodes: list[str] = Field(default_factory=list, max_length=4096)
    num_gpus: int | None = Field(None, ge=1)


class DiagnoseResponse(_Out, Diagnosis):
    """The Failure Handler's `Diagnosis` (agents/failure/wire.py: the same fields the CLI's `--json`
    and the daemon give, 1-based lines) inside the service's envelope (`fallback`, `reason`,
    `degraded`, `latency_s`). The failure's reason is `reason_code`: `reason` is the envelope's."""

    model_config = ConfigDict(frozen=False)


# -------------------------------------------------------------------------------------- jobs


class JobRegisterRequest(_In):
    job_id: str = Field(pattern=_JOB_ID)
    repo: str = Field(max_length=4096)
    command: str = Field(max_length=8192)
    gpus: int | None = Field(None, ge=1, le=1_000_000)
    nodes: int | None = Field(None, ge=1, le=100_000)
    user: str | None = Field(None, max_length=256)
    log: str | None = Field(None, max_length=4096)


class JobEndRequest(_In):
    job_id: str = Field(pattern=_JOB_ID)
    status: Literal["completed", "failed", "cancelled"] = "completed"
    duration_s: float | None = Field(None, ge=0)
    sm_util: float | None = Field(None, ge=0, le=100)
    gpu_util: float | None = Field(None, ge=0, le=100)
    gpu_memory_gb: float | None = Field(None, ge=0)
    log: str | None = Field(None, max_length=4096, description="failed jobs: diagnosed and kept as failure history")


class JobAck(_Out):
    job_id: str
    stored: bool = False
    records: int | None = None  # job records in the store after this call
    diagnosis: DiagnoseResponse | None = None


class FailureReportRequest(DiagnoseRequest):
    job_id: str = Field(pattern=_JOB_ID)


class ResolveFailureRequest(_In):
    """How a recorded failure was resolved: kept with it, shown beside similar failures later."""

    job_id: str = Field(pattern=_JOB_ID)
    note: str = Field(min_length=1, max_length=2000)


class ResolveFailureResponse(_Out):
    job_id: str
    resolution: str
    resolved_at: str | None = None
    reason: str | None = None  # the failure's recorded reason


class SimilarFailuresRequest(_In):
    line: str | None = Field(None, max_length=8192, description="a root-cause line")
    log: str | None = Field(None, max_length=4096, description="or a log: its located root-cause line is used")
    k: int = Field(3, ge=1, le=50)


class SimilarFailuresResponse(_Out):
    query: str | None = None
    similar: list[dict[str, Any]] = Field(default_factory=list)
