"""What the chat's tools return: plain, frozen facts the answer is built from.

The tools hand back facts, never prose, so the deterministic phrasing, the LLM prompt and the web
page all read the same values, and a model's sentence can be checked against them.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from schedmate.agents.advisor.wire import Estimate
from schedmate.agents.failure.similar import SimilarFailure
from schedmate.agents.failure.wire import Diagnosis
from schedmate.agents.tracker.wire import Metric, TrackResult
from schedmate.errors import BadInput, DependencyUnavailable

__all__ = [
    "ChatInputError", "ChatUnavailable", "Citation", "DiagnosisFacts", "EstimateFacts", "JobFacts", "LogLine",
    "MetricFacts", "MetricsFacts", "SimilarCase", "SESSION_ID", "clean_text",
]

SESSION_ID = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"  # the service's job-id alphabet
MAX_QUOTE_CHARS = 400  # a quoted log line is cut here (tqdm and JSON lines can be megabytes)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x1b]")


class ChatInputError(BadInput):
    """The user named something that cannot be used (missing log, bad session id, unknown job)."""


class ChatUnavailable(DependencyUnavailable):
    """A dependency a tool needs (Redis, the models) is down; the answer says so and goes on."""


def clean_text(text: str | bytes, limit: int = MAX_QUOTE_CHARS) -> str:
    """One log line as it may be quoted: decoded, control characters and ANSI escapes removed, cut."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    text = _CONTROL.sub(" ", text.rstrip("\r\n"))
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LogLine(_Frozen):
    """A line of the log: its 1-based number (as an editor shows it) and its text."""

    number: int = Field(ge=1)
    text: str


class Citation(LogLine):
    """A quoted log line and why it is quoted."""

    role: str = "context"  # root-cause | context | metric


class SimilarCase(_Frozen):
    """A past failure whose root-cause line looked like this one, and how it ended."""

    job_id: str
    score: float
    category: str | None = None
    reason: str | None = None
    final_status: str | None = None
    duration_s: float | None = None
    resolution: str | None = None  # how it was resolved (`schedmate history resolve`), when recorded

    @classmethod
    def of(cls, s: SimilarFailure) -> SimilarCase:
        """A similar failure of a `Diagnosis` as the chat's similar-failures tool lists it."""
        return cls(job_id=s.job_id, score=s.score, category=s.category, reason=s.reason, final_status=s.final_status,
                   duration_s=s.duration, resolution=s.resolution)


# The Failure Handler's answer for one log is its wire model, unchanged (1-based lines, the dry-run
# plan, similar failures, remediation): the chat reads what the CLI, the service and the daemon give.
DiagnosisFacts = Diagnosis


# The Metric Tracker's reading is its wire model, unchanged (agents/tracker/wire.py; 1-based lines).
MetricFacts = Metric
MetricsFacts = TrackResult


# The Scheduling Advisor's estimate is its wire model, unchanged (agents/advisor/wire.py).
EstimateFacts = Estimate


class JobFacts(_Frozen):
    """A job in the history: where its log is, how it ended, what the advisor estimates for it."""

    job_id: str
    log: str | None = None
    final_status: str | None = None
    duration_s: float | None = None
    sm_util: float | None = None
    gpu_memory_gb: float | None = None
    failure_category: str | None = None
    failure_reason: str | None = None
    estimate: EstimateFacts | None = None
    note: str = ""
