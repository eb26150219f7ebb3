"""Sia's allocation ILP, solved with `scipy.optimize.milp` (HiGHS).

Variables X[j, c] ∈ {0, 1}: job j gets configuration c. Given each job's normalised goodput
("speedup") S[j, c] ≥ 1 (already multiplied by the reallocation factor for configurations other
than the job's current one), the objective with fairness exponent p is

    minimise (p < 0) / maximise (p > 0)   Σ_jc X[j,c]·A[j,c] + λ_n·(N − Σ_jc X[j,c])
    A = min(round(S^p, 2), clip)

subject to Σ_c X[j,c] ≤ 1 (one configuration per job), Σ_{j, c of type t} gpus[c]·X[j,c] ≤
capacity[t] (per GPU type) and X[j, c] = 1 for pinned (non-preemptible) pairs. Sia's defaults
p = −0.5, λ_n = 1.1 satisfy sign(λ_n) ≠ sign(p) and |λ_n| > 1, so leaving a job out always costs
more than any allocation gains back (A ≤ 1 for S ≥ 1). Entries with S ≤ 0 or NaN are not
candidates (their variables are left out of the problem).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import csr_matrix

ZERO_ALLOC_GAIN = 1e-4
GOODPUT_CLIP = 3000.0


@dataclass(frozen=True)
class IlpResult:
    choice: np.ndarray  # config index per job, −1 = no allocation
    objective: float
    status: str  # "optimal", "time_limit" (best found), "fallback" (greedy) or "empty"
    seconds: float


def objective_matrix(speedups: np.ndarray, p: float) -> np.ndarray:
    """A = clip(round(S^p, 2)); NaN where S is not a candidate."""
    s = np.asarray(speedups, dtype=float)
    valid = np.isfinite(s) & (s > ZERO_ALLOC_GAIN)
    a = np.full(s.shape, np.nan)
    a[valid] = np.minimum(np.round(np.power(s[valid], p), 2), GOODPUT_CLIP)
    return a


def solve_allocation(
    speedups: np.ndarray,
    config_gpus: np.ndarray,
    config_type: np.ndarray,
    capacity: np.ndarray,
    *,
    p: float = -0.5,
    lambda_n: float = 1.1,
    pinned: Mapping[int, int] | None = None,
    time_limit: float = 10.0,
    mip_rel_gap: float = 1e-4,
) -> IlpResult:
    """Solve Sia's ILP. `speedups` is jobs × configs; returns one config index (or −1) per job."""
    started = time.perf_counter()
    if p == 0:
        raise ValueError("p must be non-zero")
    s = np.asarray(speedups, dtype=float)
    num_jobs = s.shape[0]
    if num_jobs == 0:
        return IlpResult(np.zeros(0, dtype=np.int64), 0.0, "empty", 0.0)
    a = objective_matrix(s, p)
    pinned = dict(pinned or {})
    for j, c in pinned.items():
        if not np.isfinite(a[j, c]):
            a[j, c] = 1.0  # a pinned pair must be a variable even without a goodput estimate
    jj, cc = np.nonzero(np.isfinite(a))
    if jj.size == 0:
        return IlpResult(np.full(num_jobs, -1, dtype=np.int64), lambda_n * num_jobs, "empty", 0.0)
    nv = jj.size
    sign = 1.0 if p < 0 else -1.0  # milp minimises
    cost = sign * (a[jj, cc] - lambda_n)
    if num_jobs == 1:  # one job: the best configuration that fits (or none), no solver needed
        fits = config_gpus[cc] <= np.asarray(capacity, dtype=float)[config_type[cc]]
        if pinned:
            fits &= cc == pinned[0]
        choice = np.full(1, -1, dtype=np.int64)
        if fits.any():
            k = np.flatnonzero(fits)[np.argmin(cost[fits])]
            if cost[k] < 0 or pinned:
                choice[0] = cc[k]
        chosen = choice >= 0
        obj = float(a[0, choice[0]]) if chosen[0] else float(lambda_n)
        return IlpResult(choice, obj, "optimal", time.perf_counter() - started)
    num_types = int(capacity.size)
    # Rows: one per job (≤ 1 config), one per type (capacity).
    rows = np.concatenate([jj, num_jobs + config_type[cc]])
    cols = np.concatenate([np.arange(nv), np.arange(nv)])
    vals = np.concatenate([np.ones(nv), config_gpus[cc].astype(float)])
    mat = csr_matrix((vals, (rows, cols)), shape=(num_jobs + num_types, nv))
    upper = np.concatenate([np.ones(num_jobs), np.asarray(capacity, dtype=float)])
    lb = np.zeros(nv)
    ub = np.ones(nv)
    for j, c in pinned.items():
        k = np.flatnonzero((jj == j) & (cc == c))
        lb[k] = 1.0
    res = milp(
        cost,
        constraints=LinearConstraint(mat, -np.inf, upper),
        integrality=np.ones(nv),
        bounds=Bounds(lb, ub),
        options={"time_limit": float(time_limit), "mip_rel_gap": mip_rel_gap, "disp": False},
    )
    choice = np.full(num_jobs, -1, dtype=np.int64)
    if res.x is not None:
        x = np.round(res.x).astype(bool)
        choice[jj[x]] = cc[x]
        status = "optimal" if res.status == 0 else "time_limit"
    else:
        choice = _greedy(a, jj, cc, config_gpus, config_type, capacity, p, lambda_n, pinned)
        status = "fallback"
    chosen = choice >= 0
    obj = float(np.sum(a[np.flatnonzero(chosen), choice[chosen]]) + lambda_n * (num_jobs - chosen.sum()))
    return IlpResult(choice, obj, status, time.perf_counter() - started)


def _greedy(a, jj, cc, config_gpus, config_type, capacity, p, lambda_n, pinned):
    """Feasible fallback: best gain per GPU first (used only if the solver returns nothing)."""
    num_jobs = a.shape[0]
    left = np.asarray(capacity, dtype=float).copy()
    choice = np.full(num_jobs, -1, dtype=np.int64)
    for j, c in pinned.items():
        choice[j] = c
        left[config_type[c]] -= config_gpus[c]
    gain = (lambda_n - a[jj, cc]) if p < 0 else (a[jj, cc] - lambda_n)
    order = np.lexsort((config_gpus[cc], -gain / config_gpus[cc]))
    for k in order:
        j, c = jj[k], cc[k]
        if choice[j] >= 0 or gain[k] <= 0:
            continue
        t = config_type[c]
        if left[t] >= config_gpus[c]:
            choice[j] = c
            left[t] -= config_gpus[c]
    return choice
