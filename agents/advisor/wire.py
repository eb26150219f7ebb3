"""The Scheduling Advisor's answer as it crosses a boundary: one `Advice` (with its `Estimate`).

The service's `/v1/advise` (`AdviseResponse` is this model plus the service's fallback envelope) and
the chat's job tool (`JobFacts.estimate`) carry it unchanged; `estimate_of` and `match_of` are the
one place the advisor's `JobEstimate` becomes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from schedmate.agents.advisor.estimator import JobEstimate
    from schedmate.embeddings.store import Match as StoreMatch

__all__ = ["Advice", "Estimate", "Match", "estimate_of", "match_of"]


class Match(BaseModel):
    """A similar past job and how it ran."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    score: float
    duration_s: float | None = None
    sm_util: float | None = None
    final_status: str | None = None


class Estimate(BaseModel):
    """Duration and utilisation of the matches: mean with a p50-p90 interval, and the top-3 mean."""

    model_config = ConfigDict(frozen=True)

    duration_s: float | None = None
    duration_p50_s: float | None = None
    duration_p90_s: float | None = None
    duration_top3_s: float | None = None
    sm_util: float | None = None
    sm_util_p50: float | None = None
    sm_util_p90: float | None = None
    gpu_memory_gb: float | None = None
    n_matches: int = 0
    note: str = ""


class Advice(BaseModel):
    """The job's extracted fingerprint, where each field came from, its matches and the estimate."""

    model_config = ConfigDict(frozen=True)

    metadata: dict[str, Any] = Field(default_factory=dict, description="extracted fingerprint (None = unknown)")
    sources: dict[str, str] = Field(default_factory=dict, description="field -> static / llm / agree / none")
    matches: list[Match] = Field(default_factory=list)
    estimate: Estimate | None = None
    llm_status: str = "disabled"


def match_of(m: StoreMatch) -> Match:
    rec = m.record
    status = rec.outcome.final_status if rec is not None else None
    return Match(job_id=m.job_id, score=round(float(m.score), 4), duration_s=rec.outcome.duration if rec else None,
                 sm_util=rec.outcome.sm_util if rec else None, final_status=status.value if status is not None else None)


def estimate_of(est: JobEstimate) -> Estimate:
    """The deployed estimate (`agents.stack.estimate_job`); `duration_top3_s`, which SJF-style
    callers read, is that same estimate, as in the simulator."""
    return Estimate(duration_s=est.duration_s, duration_p50_s=est.duration_p50_s, duration_p90_s=est.duration_p90_s,
                    duration_top3_s=est.duration_s, sm_util=est.sm_util, gpu_memory_gb=est.gpu_memory_gb,
                    n_matches=len(est.based_on), note=f"{est.method}: {est.note}")
