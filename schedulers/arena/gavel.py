"""Gavel's max-sum-throughput admission (arena.md §5.1): an ILP over GPU types, counts fixed.

The spec's Gavel "maximises the sum of throughput with an ILP; GPU type changes, GPU count stays
fixed". The artifact (`baselines/gavel_sched.py`, after Gavel's `max_sum_throughput.py`) solves it
at each admission over every admitted job plus the new one: one type per job, the GPUs of each type
within its capacity, and at most `MAX_MOVES` running jobs changing type per admission; a job that
the solution or its placement cannot fit waits. Throughputs are what the baseline believes (DP).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp

MAX_MOVES = 3  # type changes of running jobs per admission [A: MAX_MGRT_JOB_NUM]


@dataclass(frozen=True, slots=True)
class GavelJob:
    """One job in the ILP: its GPU count, current type (None: the job being admitted) and the
    believed throughput on each type it may run on (> 0 only)."""

    job_id: str
    gpus: int
    current: str | None
    thr: Mapping[str, float]


def assign_types(jobs: Sequence[GavelJob], capacity: Mapping[str, int], max_moves: int = MAX_MOVES) -> dict[str, str] | None:
    """The type of every job maximising Σ throughput, or None if no assignment fits.

    Each job gets exactly one of its types; Σ gpus per type ≤ capacity; at most `max_moves` jobs
    with a current type leave it. A job whose current type is not among its types must move."""
    cols = [(i, t) for i, j in enumerate(jobs) for t in sorted(j.thr) if t in capacity]
    if not cols or any(not any(i == k for k, _ in cols) for i in range(len(jobs))):
        return None
    n = len(cols)
    scale = max(v for j in jobs for v in j.thr.values()) or 1.0
    c = -np.array([jobs[i].thr[t] / scale for i, t in cols])
    rows, lo, hi = [], [], []
    for i in range(len(jobs)):  # one type per job
        rows.append([1.0 if k == i else 0.0 for k, _ in cols])
        lo.append(1.0)
        hi.append(1.0)
    for g in sorted(capacity):  # capacity per type
        rows.append([float(jobs[i].gpus) if t == g else 0.0 for i, t in cols])
        lo.append(-np.inf)
        hi.append(float(capacity[g]))
    running = [i for i, j in enumerate(jobs) if j.current is not None]
    if running:  # at most max_moves running jobs change type
        rows.append([1.0 if jobs[i].current == t else 0.0 for i, t in cols])
        lo.append(float(len(running) - max_moves))
        hi.append(np.inf)
    res = milp(c, integrality=np.ones(n), bounds=Bounds(0, 1),
               constraints=LinearConstraint(np.array(rows), lo, hi))
    if res.status != 0 or res.x is None:
        return None
    return {jobs[i].job_id: t for (i, t), x in zip(cols, res.x, strict=True) if x > 0.5}


__all__ = ["MAX_MOVES", "GavelJob", "assign_types"]
