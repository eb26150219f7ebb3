"""Warnings for traces that load cleanly but cannot mean what they say (issue 16, item 4).

A row dated 2099 in a 2017 trace makes the makespan 712,288 h and the utilisation 0.0 %; a 64-GPU
job on an 8-GPU cluster is cancelled on arrival and would otherwise be counted as an ordinary job.
Both are legal rows, so they are not load errors: they are counted and listed here, and the CLI
prints them before simulating (and the summary table counts the cancelled jobs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..cluster import ClusterSpec
from ..job import JobSpec

__all__ = ["OUTLIER_FACTOR", "TraceWarnings", "check_plausibility"]

OUTLIER_FACTOR = 20.0
"""A submit time more than this many interquartile spans beyond the middle half is "far outside"."""
MIN_SPREAD_S = 86_400.0
"""The interquartile span never counts as less than a day (a burst of arrivals at t=0 has none)."""
LISTED = 5


@dataclass(frozen=True)
class TraceWarnings:
    """Implausible jobs of one trace on one cluster: ids with the reason, first `LISTED` spelled out."""

    time_outliers: tuple[tuple[str, float], ...] = ()  # (job id, submit time s) far outside the span
    oversized: tuple[tuple[str, int, int], ...] = ()  # (job id, GPUs asked, eligible capacity)
    core_span_s: float = 0.0  # submit-time span of the trace without the outliers

    def __bool__(self) -> bool:
        return bool(self.time_outliers or self.oversized)

    def lines(self) -> list[str]:
        """One line per kind of problem, naming the count and the first few jobs."""
        out: list[str] = []
        if self.time_outliers:
            shown = ", ".join(f"{j} at +{t / 3600:,.0f} h" for j, t in self.time_outliers[:LISTED])
            more = f" and {len(self.time_outliers) - LISTED} more" if len(self.time_outliers) > LISTED else ""
            out.append(
                f"{len(self.time_outliers)} job(s) submit far outside the trace's span (the rest spans "
                f"{self.core_span_s / 3600:,.1f} h): {shown}{more}; makespan and GPU utilisation are dominated "
                "by them (check their timestamps)"
            )
        if self.oversized:
            shown = ", ".join(f"{j} ({g} GPUs > {c})" for j, g, c in self.oversized[:LISTED])
            more = f" and {len(self.oversized) - LISTED} more" if len(self.oversized) > LISTED else ""
            out.append(
                f"{len(self.oversized)} job(s) ask more GPUs than the cluster can give them and will be "
                f"cancelled on arrival: {shown}{more}"
            )
        return out

    def as_dict(self) -> dict[str, object]:
        return {
            "time_outliers": [{"job_id": j, "submit_time_s": t} for j, t in self.time_outliers],
            "oversized": [{"job_id": j, "gpus": g, "capacity": c} for j, g, c in self.oversized],
            "core_span_s": self.core_span_s,
        }


def check_plausibility(jobs: Sequence[JobSpec], cluster: ClusterSpec | None = None) -> TraceWarnings:
    """Jobs whose submit time lies far outside the others' span, and (given a cluster) jobs larger
    than the capacity the engine would let them use (the same eligibility test as on arrival)."""
    outliers: list[tuple[str, float]] = []
    core_span = 0.0
    if len(jobs) >= 4:
        t = np.fromiter((j.submit_time for j in jobs), dtype=float, count=len(jobs))
        q1, q3 = np.percentile(t, [25, 75])
        spread = OUTLIER_FACTOR * max(float(q3 - q1), MIN_SPREAD_S)
        far = (t < q1 - spread) | (t > q3 + spread)
        outliers = [(jobs[int(i)].job_id, float(t[i])) for i in np.flatnonzero(far)]
        kept = t[~far]
        core_span = float(kept.max() - kept.min()) if kept.size else 0.0
    oversized: list[tuple[str, int, int]] = []
    if cluster is not None:
        capacity = cluster.capacity()
        memo: dict[tuple[object, object], int] = {}
        for job in jobs:
            key = (job.gpu_types, job.vc)
            if key not in memo:
                mask = cluster.eligible_mask(job.gpu_types, job.vc)
                memo[key] = int(capacity[mask].sum()) if mask.any() else 0
            if job.num_gpus > memo[key]:
                oversized.append((job.job_id, job.num_gpus, memo[key]))
    return TraceWarnings(tuple(outliers), tuple(oversized), core_span)
