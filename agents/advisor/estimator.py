"""Estimates from similar historical jobs, and the explicit "no match" fallback.

The paper's rule: the estimate is the unweighted mean over the k' matched jobs of their recorded
duration (actual run time: early exits included) and SM utilisation. We add p50/p90 of the
matches so a scheduler can see the spread. When k' = 0 (nothing above the threshold), or the
extractor/store failed, the estimate says so and defers to the host scheduler's own estimator
(`FallbackEstimator`: Lucid's EBM, a history median, ...), whose name is recorded.

`estimate_rate_from_matches` is the alternative that uses the new job's own numbers: the matched
jobs' measured time per step x the job's planned iterations (`rate_estimator`), with the chance
and position of an early exit from past runs (`early_exit`); see those modules for why.

`estimate_from_pool` is the **deployed** estimator, the one `schedmate advise`, the service and the
simulator all answer with (`schedmate.agents.stack.estimate_job` retrieves its pool):

1. rate x plan over the retrieved pool (no similarity threshold: its tiers match on fields), with
   only *completed* past runs giving a step-time rate (a deployed system knows each past job's
   final status; a failed or cancelled run's wall time also holds how it ended); its p90 is the
   start-up at its own 90 % quantile plus the training at its (both log-normal over the matched
   jobs: a conservative upper end, and the Slurm limit's basis; when the matched jobs measured
   one start-up, its spread is measured over all retrieved completed runs instead, not taken as 0);
2. else the mean of the <= k pool jobs with cosine >= T that have a recorded duration (the
   paper's rule), leaving out those k's failed and cancelled runs whenever one of them finished
   (issue 27: an ImportError after 0 s pulled a Slurm time limit down; their wall time says
   when they stopped, not how long the work takes; a record without a status counts). When
   every similar job ended early, their mean stands (it is what such a job does; the note says
   so), and the Slurm time-limit rule refuses to set a limit from it (`deploy/service/slurm_route.py`);
3. else no estimate: the scheduler keeps its default.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict

from schedmate.embeddings.store import Match

__all__ = ["ESTIMATORS", "Estimate", "FallbackEstimator", "JobEstimate", "JobQuery", "MedianFallback",
           "estimate_from_matches", "estimate_from_pool", "estimate_rate_from_matches", "format_duration"]

ESTIMATORS = ("rate-plan", "mean")  # rate x plan with the mean-of-matches fallback | the mean alone
RATE_PLAN = "rate x plan"
MEAN_OF_MATCHES = "mean of similar jobs"
Z90 = 1.2816  # standard normal quantile of 0.9: a log-normal 10-90 % interval is median * exp(-/+ Z90 * sigma)


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
        outcomes = [m.record.outcome for m in usable if m.record is not None]  # all of them (`usable`)
        d = _stats([o.duration for o in outcomes if o.duration is not None])
        u = _stats([o.sm_util for o in outcomes if o.sm_util is not None])
        mem = _stats([o.gpu_memory for o in outcomes if o.gpu_memory is not None])
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


# ===================================================================================== deployed estimator


def format_duration(seconds: float | None) -> str:
    """Seconds as people read them ("-", "45 s", "12.5 min", "3.20 h")."""
    if seconds is None or not math.isfinite(seconds):
        return "-"
    if seconds >= 3600:
        return f"{seconds / 3600:.2f} h"
    return f"{seconds / 60:.1f} min" if seconds >= 120 else f"{seconds:.3g} s"


def _quantiles(values: Sequence[float | None]) -> tuple[float, float] | None:
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not vals:
        return None
    return float(np.percentile(vals, 10)), float(np.percentile(vals, 90))


def _mean(values: Sequence[float | None]) -> float | None:
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    return float(np.mean(vals)) if vals else None


@dataclass(frozen=True)
class JobEstimate:
    """The deployed advisor's answer for one job (`estimate_from_pool`).

    `method` is None when there is no estimate (the scheduler keeps its default; `note` says why).
    `similar` are the <= k pool jobs with cosine >= `threshold`, best first, with or without an
    outcome (what `schedmate advise` lists); `based_on` the jobs the estimate used.
    """

    method: str | None = None  # "rate x plan" | "mean of similar jobs" | None
    duration_s: float | None = None
    interval_s: tuple[float, float] | None = None
    interval: str = ""
    duration_p50_s: float | None = None  # median (rate x plan: the plan at the median rate)
    duration_p90_s: float | None = None
    sm_util: float | None = None
    sm_util_interval: tuple[float, float] | None = None
    gpu_memory_gb: float | None = None
    based_on: tuple[str, ...] = ()
    similar: tuple[Match, ...] = ()
    why: tuple[str, ...] = ()
    note: str = ""
    tier: str | None = None
    threshold: float = 0.0

    @property
    def estimated(self) -> bool:
        return self.method is not None and self.duration_s is not None

    def report(self) -> dict[str, Any] | None:
        """The estimate as `schedmate advise` prints it for people (None without an estimate); the JSON is `Advice`."""
        if not self.estimated:
            return None
        return {"method": self.method, "duration_s": self.duration_s,
                "interval_s": list(self.interval_s) if self.interval_s is not None else None,
                "interval": self.interval, "sm_util": self.sm_util,
                "sm_util_interval": self.sm_util_interval, "based_on": list(self.based_on)}

    def records(self, pool: Sequence[Match]) -> list[Any]:
        """The pool records of the jobs the estimate is based on (in `based_on` order)."""
        by_id = {m.job_id: m.record for m in pool if m.record is not None}
        return [by_id[j] for j in self.based_on if j in by_id]


def _completed(record: Any) -> bool:
    status = record.outcome.final_status
    return status is not None and getattr(status, "value", status) == "completed"


def _ended_early(record: Any) -> bool:
    """Failed or cancelled: its run time says when it stopped, not how long the work takes (an
    ImportError after 0 s is no duration), so it stays in the history but feeds no duration or
    time-limit estimate. A record without a status is kept (unknown is not a failure)."""
    status = record.outcome.final_status
    return status is not None and getattr(status, "value", status) in ("failed", "cancelled")


def estimate_from_pool(fields: Mapping[str, Any], gpus: int | None, pool: Sequence[Match], *, threshold: float,
                       top_k: int, estimator: str = "rate-plan") -> JobEstimate:
    """The deployed estimate of a job with extracted `fields` on `gpus` GPUs from `pool`: the
    retrieved past jobs (records attached, best cosine first, no threshold applied). Pure: no
    store, model or clock. See the module docstring for the rule."""
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {ESTIMATORS}, not {estimator!r}")
    from schedmate.agents.advisor.rate_estimator import Plan, RateSample, estimate_rate_plan, startup_log_spread

    similar = tuple(m for m in pool if m.score >= threshold)[:top_k]
    base: dict[str, Any] = {"similar": similar, "threshold": threshold}
    if estimator == "rate-plan":
        samples = [RateSample.from_record(m.record) for m in pool if m.record is not None and _completed(m.record)]
        rate = estimate_rate_plan(Plan.from_fields(dict(fields), gpus), samples)
        if rate is not None:
            used = set(rate.sample_ids)
            recs = [m.record for m in pool if m.record is not None and m.job_id in used]
            lo = rate.startup_s + rate.train_s * math.exp(-Z90 * rate.spread)
            # p90: start-up at its own 90 % quantile + training at its (issue 24: a job whose start-up
            # outlasts a limit set from the median start-up is killed before its first progress line).
            # The sum of two 90 % quantiles is a conservative upper end of the run's own 90 %.
            # With one measured start-up in the tier, its spread comes from the whole retrieved pool's
            # completed runs (issue 24: a single start-up taken as certain was most start-up kills).
            n_start = rate.startups_measured
            pool_spread, n_pool = startup_log_spread(samples) if n_start == 1 else (0.0, 0)
            if n_pool > 1:
                rate = replace(rate, startup_spread=pool_spread)
            hi = rate.quantile_s(Z90)
            start_why = (", no start-up measured: p90 covers training only" if n_start == 0 else
                         f" (log-spread {rate.startup_spread:.2f})" if n_start > 1 else
                         f" (one start-up in the tier; start-up spread from {n_pool} retrieved jobs: log-spread "
                         f"{rate.startup_spread:.2f})" if n_pool > 1 else
                         " (one start-up: no spread measured, in the tier or the retrieved jobs)")
            reason = (f"rate x plan ({rate.tier}): {fields.get('iterations')} {fields.get('iteration_type')} at the step "
                   f"time measured on {', '.join(rate.sample_ids)}; startup {format_duration(rate.startup_s)}"
                   + start_why
                   + f", log-spread {rate.spread:.2f}"
                   + (" (one job: no spread measured)" if len(rate.sample_ids) == 1 else ""))
            return JobEstimate(
                method=RATE_PLAN, duration_s=rate.duration_s, interval_s=(lo, hi), duration_p50_s=rate.duration_s,
                duration_p90_s=hi,
                interval="10-90 % (log-normal over the matched jobs' spread; the 90 % end adds start-up's own)", sm_util=rate.sm_util,
                sm_util_interval=_quantiles([r.outcome.sm_util for r in recs]),
                gpu_memory_gb=_mean([r.outcome.gpu_memory for r in recs]), based_on=tuple(rate.sample_ids),
                why=(reason,), note=f"rate x plan over {len(rate.sample_ids)} completed job(s) ({rate.tier})",
                tier=rate.tier, **base)
    timed = [m for m in pool if m.score >= threshold and m.record is not None
             and m.record.outcome.duration is not None][:top_k]
    finished = [m for m in timed if not _ended_early(m.record)]
    usable = finished or timed
    if usable:
        outs = [m.record.outcome for m in usable if m.record is not None]
        note = f"mean of {len(usable)} similar historical job(s)" + (
            "" if finished else ", all failed or cancelled (their run times say when they stopped)")
        _, p50, p90 = _stats([o.duration for o in outs if o.duration is not None])  # all (`usable`)
        why = (f"no measured step time to scale by the plan: {note}",) if estimator == "rate-plan" else (note,)
        return JobEstimate(
            method=MEAN_OF_MATCHES, duration_s=_mean([o.duration for o in outs]),
            interval_s=_quantiles([o.duration for o in outs]), interval="10-90 % of the similar jobs' durations",
            duration_p50_s=p50, duration_p90_s=p90,
            sm_util=_mean([o.sm_util for o in outs]), sm_util_interval=_quantiles([o.sm_util for o in outs]),
            gpu_memory_gb=_mean([o.gpu_memory for o in outs]), based_on=tuple(m.job_id for m in usable), why=why,
            note=note, **base)
    return JobEstimate(note="no similar past job with a recorded outcome and no completed one with a measured "
                            "speed for this plan: the scheduler keeps its default", **base)
