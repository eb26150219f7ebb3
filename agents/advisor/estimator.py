"""Estimates from similar historical jobs, and the explicit "no match" fallback.

The paper's rule: the estimate is the unweighted mean over the k' matched jobs of their recorded
duration (actual run time: early exits included) and SM utilisation. We add p50/p90 of the
matches so a scheduler can see the spread. When k' = 0 (nothing above the threshold), or the
extractor/store failed, the estimate says so and defers to the host scheduler's own estimator
(`FallbackEstimator`: Lucid's EBM, a history median, ...), whose name is recorded.

`estimate_rate_from_matches` is the alternative that uses the new job's own numbers: the matched
jobs' measured time per step x the job's planned iterations (`rate_estimator`), with the chance
and position of an early exit from past runs (`early_exit`); see those modules for why.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict

from schedmate.embeddings.store import Match

__all__ = ["Estimate", "FallbackEstimator", "JobQuery", "MedianFallback", "estimate_from_matches",
           "estimate_rate_from_matches"]


@dataclass(frozen=True)
class JobQuery:
    """What the scheduler knows about a job at submission (sparse metadata)."""

    job_id: str
    user: str | None = None
    gpus: int | None = None
    nodes: int | None = None
    submit_time: float | None = None  # seconds since the trace start (or epoch)
    vc: str | None = None
    name: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class FallbackEstimator(Protocol):
    """The host scheduler's own estimator, used when no similar job is found."""

    name: str

    def predict(self, job: JobQuery) -> tuple[float | None, float | None]:
        """(duration seconds, SM utilisation %) for one job; None where it has no opinion."""
        ...


class Estimate(BaseModel):
    """Duration / utilisation estimate for one job, with where it came from."""

    model_config = ConfigDict(extra="forbid")

    job_id: str
    source: Literal["history", "fallback", "none"]
    n_matches: int = 0
    match_ids: list[str] = []
    scores: list[float] = []
    duration_s: float | None = None  # mean over matches (or the fallback's value)
    duration_p50_s: float | None = None
    duration_p90_s: float | None = None
    sm_util: float | None = None  # %
    sm_util_p50: float | None = None
    sm_util_p90: float | None = None
    gpu_memory_gb: float | None = None
    fallback: str | None = None  # name of the estimator used when source == "fallback"
    note: str = ""

    @property
    def matched(self) -> bool:
        return self.source == "history"


def _stats(values: Sequence[float]) -> tuple[float | None, float | None, float | None]:
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not vals:
        return None, None, None
    arr = np.asarray(vals)
    return float(arr.mean()), float(np.percentile(arr, 50)), float(np.percentile(arr, 90))


def estimate_from_matches(
    job: JobQuery,
    matches: Sequence[Match],
    *,
    fallback: FallbackEstimator | None = None,
    reason: str | None = None,
) -> Estimate:
    """Mean / p50 / p90 of the matches' outcomes; with no usable match, the fallback (named).

    `matches` must carry their records (`store.search(..., with_records=True)`); matches without
    a recorded duration are ignored. `reason` explains an upstream failure (extractor, store).
    """
    usable = [m for m in matches if m.record is not None and m.record.outcome.duration is not None]
    if usable and reason is None:
        d = _stats([m.record.outcome.duration for m in usable])  # type: ignore[union-attr]
        u = _stats([m.record.outcome.sm_util for m in usable if m.record.outcome.sm_util is not None])  # type: ignore[union-attr]
        mem = _stats([m.record.outcome.gpu_memory for m in usable if m.record.outcome.gpu_memory is not None])  # type: ignore[union-attr]
        return Estimate(
            job_id=job.job_id, source="history", n_matches=len(usable), match_ids=[m.job_id for m in usable],
            scores=[round(m.score, 4) for m in usable], duration_s=d[0], duration_p50_s=d[1], duration_p90_s=d[2],
            sm_util=u[0], sm_util_p50=u[1], sm_util_p90=u[2], gpu_memory_gb=mem[0],
            note=f"mean of {len(usable)} similar historical job(s)",
        )
    why = reason or "no similar historical job above the similarity threshold"
    if fallback is None:
        return Estimate(job_id=job.job_id, source="none", note=f"{why}; no fallback estimator: use the scheduler's default")
    duration, util = fallback.predict(job)
    return Estimate(job_id=job.job_id, source="fallback", duration_s=duration, sm_util=util, fallback=fallback.name,
                    note=f"{why}; fell back to {fallback.name}")


def estimate_rate_from_matches(
    job: JobQuery,
    fields: dict[str, Any],
    pool: Sequence[Match],
    *,
    exits: Any = None,
    point: Literal["plan", "p50", "mean"] = "plan",
    fallback: FallbackEstimator | None = None,
) -> Estimate:
    """Rate x plan over a retrieved `pool` (records attached; a wide top-k, no threshold needed:
    the tiers match on fields), combined with an `early_exit.EarlyExitModel` when given.

    `duration_s` is the chosen point (full run, forecast median or mean); p50 / p90 are the
    forecast's. Without a usable similar job, the fallback as in `estimate_from_matches`.
    """
    from schedmate.agents.advisor.early_exit import ExitPositions, forecast
    from schedmate.agents.advisor.rate_estimator import Plan, RateSample, estimate_rate_plan

    samples = [RateSample.from_record(m.record) for m in pool if m.record is not None]
    est = estimate_rate_plan(Plan.from_fields(fields, job.gpus), samples)
    if est is None:
        return estimate_from_matches(job, [], fallback=fallback,
                                     reason="no similar job with a measured speed, or no planned iterations")
    if exits is not None:
        fc = forecast(est.startup_s, est.train_s, est.spread, exits.p_exit(job.user, job.name), exits.positions(job.user))
    else:
        fc = forecast(est.startup_s, est.train_s, est.spread, 0.0, ExitPositions(0.0, (), ()))
    value = {"plan": fc.plan_s, "p50": fc.p50_s, "mean": fc.expected_s}[point]
    return Estimate(job_id=job.job_id, source="history", n_matches=len(est.sample_ids), match_ids=est.sample_ids,
                    duration_s=value, duration_p50_s=fc.p50_s, duration_p90_s=fc.p90_s, sm_util=est.sm_util,
                    note=f"rate x plan over {len(est.sample_ids)} job(s) ({est.tier}); exit probability {fc.p_exit:.2f}")


class MedianFallback:
    """The standalone SJF's default: median duration / utilisation of all history."""

    name = "history-median"

    def __init__(self, durations: Sequence[float], utils: Sequence[float] = ()) -> None:
        self.duration = float(np.median(durations)) if len(durations) else None
        self.util = float(np.median(utils)) if len(utils) else None

    def predict(self, job: JobQuery) -> tuple[float | None, float | None]:
        return self.duration, self.util
