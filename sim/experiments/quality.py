"""How good the advisor's duration estimates were, printed beside every case study's JCT figures.

A JCT gain bought with near-oracle estimates says nothing about a real cluster (issue 22), so
each case study reports, for the jobs its SchedMate arm advised: the share that got an estimate
(`matched_share`), and over those, the median |ln(estimate / actual run time)| and the share
within 2x, separately for jobs that completed and jobs that ended early (a failed or cancelled
job ran less than it planned: no advisor can know that at submit time).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from schedmate.schedulers.job import FinalStatus, JobSpec

__all__ = ["GROUPS", "estimate_quality", "merge_quality", "quality_line", "without_errors"]

GROUPS = ("completed", "early_ended", "all")


def _group(spec: JobSpec) -> str:
    return "completed" if spec.status is FinalStatus.COMPLETED else "early_ended"


def _stats(asked: int, errors: Sequence[float]) -> dict[str, Any]:
    e = np.abs(np.asarray(errors, dtype=float))
    return {"jobs": asked, "estimated": len(errors),
            "matched_share": round(len(errors) / asked, 4) if asked else None,
            "median_abs_log_ratio": round(float(np.median(e)), 4) if len(e) else None,
            "within_2x": round(float(np.mean(e <= math.log(2.0))), 4) if len(e) else None,
            "log_errors": [round(float(x), 5) for x in errors]}


def estimate_quality(estimates: Mapping[str, float | None], jobs: Sequence[JobSpec]) -> dict[str, dict[str, Any]]:
    """Quality of `estimates` (job id -> seconds, None = no estimate) against the jobs' actual run
    times (`jobs`: the world's specs). Only jobs that were asked count."""
    by_id = {s.job_id: s for s in jobs}
    asked: dict[str, int] = dict.fromkeys(GROUPS, 0)
    errors: dict[str, list[float]] = {g: [] for g in GROUPS}
    for jid, est in estimates.items():
        spec = by_id.get(jid)
        if spec is None or spec.duration <= 0:
            continue
        g = _group(spec)
        for key in (g, "all"):
            asked[key] += 1
            if est is not None and est > 0 and math.isfinite(est):
                errors[key].append(math.log(est / spec.duration))
    return {g: _stats(asked[g], errors[g]) for g in GROUPS}


def merge_quality(parts: Iterable[Mapping[str, Mapping[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Pool several runs' `estimate_quality` (e.g. seeds): medians over all their jobs."""
    asked: dict[str, int] = dict.fromkeys(GROUPS, 0)
    errors: dict[str, list[float]] = {g: [] for g in GROUPS}
    for part in parts:
        for g in GROUPS:
            asked[g] += int(part[g]["jobs"])
            errors[g].extend(part[g]["log_errors"])
    return {g: _stats(asked[g], errors[g]) for g in GROUPS}


def quality_line(q: Mapping[str, Mapping[str, Any]]) -> str:
    """One line for summaries: median |ln(est/actual)|, within 2x and matched, per group."""
    def part(g: str, label: str) -> str:
        s = q[g]
        if not s["jobs"]:
            return f"{label}: no jobs"
        if s["median_abs_log_ratio"] is None:
            return f"{label}: no estimate for {s['jobs']} jobs"
        return (f"{label} median |ln(est/actual)| {s['median_abs_log_ratio']:.2f}, {100 * s['within_2x']:.0f}% within 2x, "
                f"{100 * s['matched_share']:.0f}% estimated")

    return "advisor estimates: " + "; ".join((part("completed", "completed"), part("early_ended", "early-ended")))


def without_errors(q: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """`q` without the per-job error lists (for compact JSON summaries)."""
    return {g: {k: v for k, v in s.items() if k != "log_errors"} for g, s in q.items()}
