"""ElasticFlow's admission and allocation on one GPU type (arena.md §5.1, EF-LS).

The spec's ElasticFlow is "elastic GPU count on one GPU type, deadline-aware"; EF-LS loosens the
deadlines. The artifact (`baselines/elasticflow_sched.py`, after ElasticFlow's paper) admits a job
only if every job of its type, the new one included, can hold its *minimum satisfactory share*
(with a loose deadline: the smallest count it believes it can run on), then hands the type's
remaining GPUs out by progressive filling: repeatedly double the job whose doubling adds the most
believed throughput, while the GPUs last. Every admission re-plans all the type's jobs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .model import COUNTS


@dataclass(frozen=True, slots=True)
class EFJob:
    """A job of the type being planned: believed throughput per count it may run on (> 0 only)."""

    job_id: str
    thr: Mapping[int, float]


def progressive_filling(jobs: Sequence[EFJob], capacity: int, max_gpus: int = COUNTS[-1]) -> dict[str, int] | None:
    """GPU count per job: minimum shares, then doublings of the largest believed gain (ties: the
    earlier job) while a doubling fits in what is left; None if the minimum shares do not fit."""
    if any(not j.thr for j in jobs):
        return None
    alloc = {j.job_id: min(j.thr) for j in jobs}
    left = capacity - sum(alloc.values())
    if left < 0:
        return None
    while True:
        best: tuple[float, str] | None = None
        for j in jobs:
            a = alloc[j.job_id]
            if 2 * a > max_gpus or 2 * a not in j.thr or a > left:
                continue
            gain = j.thr[2 * a] - j.thr[a]
            if best is None or gain > best[0]:
                best = (gain, j.job_id)
        if best is None:
            return alloc
        left -= alloc[best[1]]
        alloc[best[1]] *= 2


__all__ = ["EFJob", "progressive_filling"]
