"""Group-level bin packing (spec §3.2): how many nodes of each scheduling unit go to each minipod.

Exact integer form: n_ij nodes of unit i in minipod j, s_ij = unit i touches j, y_j = j used,
T = the most minipods one unit touches. Minimise w_y·Σy + w_t·T + EPS·(Σy + T). Units are
identical, so a symmetry cut (n_i0 non-increasing in i) removes permutations of units without
losing any optimum. Solved with HiGHS (`scipy.optimize.milp`); when no optimum comes in time the
best of the incumbent and the two greedy fallbacks (`greedy_t1`, `greedy_pack`) is returned.
`form="aggregated"` is the spec's optional exact form (whole units per minipod plus at most k-1
split-unit slots); the spec keeps the direct form as default because the aggregated one was
sometimes slower in its prototype (here it was ~10x faster on setting (iii), same optima).
Before the MIP, a greedy answer that meets a valid lower bound (`lower_bound`) is returned as
proven optimal: the common case, and what keeps a planning round in milliseconds.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix

from .config import EPS, MipForm

__all__ = ["UnitProblem", "UnitSolution", "greedy_pack", "greedy_t1", "lower_bound", "objective", "solve_units"]


@dataclass(frozen=True)
class UnitProblem:
    """`units` identical units of `size` nodes over minipods with `free` nodes each."""

    units: int
    size: int
    free: tuple[int, ...]
    w_y: float  # weight of the number of minipods used (bounds the other group type's spread)
    w_t: float  # weight of the most minipods one unit touches

    @property
    def feasible(self) -> bool:
        return self.units * self.size <= sum(self.free)


@dataclass(frozen=True)
class UnitSolution:
    """Node counts per (unit, minipod), how they were found, the objective and solve seconds."""

    counts: np.ndarray  # U × k (k = len(problem.free))
    method: str  # "mip", "mip_incumbent", "greedy_t1", "greedy_pack"
    objective: float
    seconds: float


def objective(problem: UnitProblem, counts: np.ndarray) -> float:
    """The MIP objective of a count matrix (used to compare the MIP with the fallbacks)."""
    used = int((counts.sum(axis=0) > 0).sum())
    t = int((counts > 0).sum(axis=1).max()) if counts.size else 0
    return problem.w_y * used + problem.w_t * t + EPS * (used + t)


def greedy_t1(problem: UnitProblem) -> np.ndarray | None:
    """Whole units only (T = 1), minipods by descending floor(f_j/S): fewest minipods under T = 1."""
    u, s, free = problem.units, problem.size, problem.free
    whole = [f // s for f in free]
    if sum(whole) < u:
        return None
    counts = np.zeros((u, len(free)), dtype=np.int64)
    i = 0
    for j in sorted(range(len(free)), key=lambda j: (-whole[j], j)):
        for _ in range(whole[j]):
            if i == u:
                return counts
            counts[i, j] = s
            i += 1
    return counts


def greedy_pack(problem: UnitProblem) -> np.ndarray | None:
    """Next-fit over minipods by descending f_j; a unit crossing a minipod boundary is split."""
    if not problem.feasible:
        return None
    u, s, free = problem.units, problem.size, problem.free
    counts = np.zeros((u, len(free)), dtype=np.int64)
    order = iter(sorted(range(len(free)), key=lambda j: (-free[j], j)))
    j = next(order)
    left = free[j]
    for i in range(u):
        need = s
        while need:
            while left == 0:
                j = next(order)
                left = free[j]
            take = min(need, left)
            counts[i, j] += take
            need -= take
            left -= take
    return counts


def lower_bound(problem: UnitProblem) -> float:
    """A valid lower bound on the objective: T = 1 needs at least greedy_t1's minipods (exact for
    whole units); any T needs the fewest minipods whose free nodes hold the job, and at least
    ceil(S / max f) minipods per unit."""
    need, fewest = problem.units * problem.size, 0
    for f in sorted(problem.free, reverse=True):
        if need <= 0:
            break
        need -= f
        fewest += 1
    t_min = max(1, -(-problem.size // max(problem.free)))
    bounds = []
    t1 = greedy_t1(problem)
    if t1 is not None and t_min == 1:
        used = int((t1.sum(axis=0) > 0).sum())
        bounds.append(problem.w_y * used + problem.w_t + EPS * (used + 1))
    t = max(2, t_min)
    bounds.append(problem.w_y * fewest + problem.w_t * t + EPS * (fewest + t))
    return min(bounds)


def solve_units(
    problem: UnitProblem,
    *,
    time_limit: float = 10.0,
    node_limit: int | None = None,
    use_bound: bool = True,
    form: MipForm = "direct",
) -> UnitSolution | None:
    """The best placement of units found (None when they do not fit at all).

    With `use_bound`, a greedy answer that meets `lower_bound` is optimal and the MIP is skipped.
    `form` picks the direct MIP (spec default) or the aggregated exact form."""
    if not problem.feasible:
        return None
    t0 = time.perf_counter()
    cands: list[tuple[np.ndarray, str]] = []
    for counts, name in ((greedy_t1(problem), "greedy_t1"), (greedy_pack(problem), "greedy_pack")):
        if counts is not None:
            cands.append((counts, name))
    if use_bound and cands:
        counts, name = min(cands, key=lambda c: objective(problem, c[0]))
        if objective(problem, counts) <= lower_bound(problem) + 1e-9:
            return UnitSolution(counts, name, objective(problem, counts), time.perf_counter() - t0)
    mip = (_milp if form == "direct" else _milp_aggregated)(problem, time_limit, node_limit)
    if mip is not None:
        cands.insert(0, mip)
    counts, method = min(cands, key=lambda c: objective(problem, c[0]))  # the MIP first on ties
    return UnitSolution(counts, method, objective(problem, counts), time.perf_counter() - t0)


def _milp(problem: UnitProblem, time_limit: float, node_limit: int | None) -> tuple[np.ndarray, str] | None:
    u, s = problem.units, problem.size
    cols = [j for j, f in enumerate(problem.free) if f > 0]
    k = len(cols)
    f = np.array([problem.free[j] for j in cols], dtype=float)
    cap = np.minimum(f, s)
    nv = 2 * u * k + k + 1
    n_ix = lambda i, j: i * k + j  # noqa: E731
    s_ix = lambda i, j: u * k + i * k + j  # noqa: E731
    y_ix = lambda j: 2 * u * k + j  # noqa: E731
    t_ix = nv - 1
    rows: list[int] = []
    cs: list[int] = []
    vals: list[float] = []
    lo: list[float] = []
    hi: list[float] = []

    def add(entries: Sequence[tuple[int, float]], lb: float, ub: float) -> None:
        r = len(lo)
        for c, v in entries:
            rows.append(r)
            cs.append(c)
            vals.append(v)
        lo.append(lb)
        hi.append(ub)

    for i in range(u):
        add([(n_ix(i, j), 1.0) for j in range(k)], s, s)  # every unit placed in full
        add([(s_ix(i, j), 1.0) for j in range(k)] + [(t_ix, -1.0)], -np.inf, 0)  # touches ≤ T
        for j in range(k):
            add([(n_ix(i, j), 1.0), (s_ix(i, j), -cap[j])], -np.inf, 0)  # nodes only where touched
            add([(s_ix(i, j), 1.0), (y_ix(j), -1.0)], -np.inf, 0)  # touching marks the minipod used
    for j in range(k):
        add([(n_ix(i, j), 1.0) for i in range(u)] + [(y_ix(j), -f[j])], -np.inf, 0)  # capacity
    for i in range(u - 1):
        add([(n_ix(i, 0), 1.0), (n_ix(i + 1, 0), -1.0)], 0, np.inf)  # symmetry cut
    a = coo_matrix((vals, (rows, cs)), shape=(len(lo), nv)).tocsr()
    c = np.zeros(nv)
    c[[y_ix(j) for j in range(k)]] = problem.w_y + EPS
    c[t_ix] = problem.w_t + EPS
    ub = np.concatenate([np.tile(cap, u), np.ones(u * k + k), [k]])
    lb = np.concatenate([np.zeros(2 * u * k + k), [1]])
    options: dict[str, object] = {"time_limit": time_limit, "presolve": True}
    if node_limit is not None:
        options["node_limit"] = node_limit
    res = milp(c, constraints=LinearConstraint(a, lo, hi), integrality=np.ones(nv), bounds=Bounds(lb, ub), options=options)
    if res.x is None:
        return None
    counts = np.zeros((u, len(problem.free)), dtype=np.int64)
    sub = np.rint(res.x[: u * k]).astype(np.int64).reshape(u, k)
    counts[:, cols] = sub
    if not (counts.sum(axis=1) == s).all() or (counts.sum(axis=0) > np.array(problem.free)).any():
        return None  # an infeasible incumbent (should not happen): let the fallbacks answer
    return counts, "mip" if res.status == 0 else "mip_incumbent"


def _milp_aggregated(problem: UnitProblem, time_limit: float, node_limit: int | None) -> tuple[np.ndarray, str] | None:
    """Aggregated exact form (spec §3.2, optional): whole units counted per minipod (w_j) plus at
    most k-1 split-unit slots; some optimum has at most k-1 split units (support-forest argument)."""
    u, s = problem.units, problem.size
    cols = [j for j, f in enumerate(problem.free) if f > 0]
    k = len(cols)
    f = np.array([problem.free[j] for j in cols], dtype=float)
    cap = np.minimum(f, s)
    slots = max(1, min(u, k - 1))
    w_ix = lambda j: j  # noqa: E731
    n_ix = lambda l, j: k + l * k + j  # noqa: E731, E741
    s_ix = lambda l, j: k + slots * k + l * k + j  # noqa: E731, E741
    z_ix = lambda l: k + 2 * slots * k + l  # noqa: E731, E741
    y_ix = lambda j: k + 2 * slots * k + slots + j  # noqa: E731
    t_ix = k + 2 * slots * k + slots + k
    nv = t_ix + 1
    rows: list[int] = []
    cs: list[int] = []
    vals: list[float] = []
    lo: list[float] = []
    hi: list[float] = []

    def add(entries: Sequence[tuple[int, float]], lb: float, ub: float) -> None:
        r = len(lo)
        for c, v in entries:
            rows.append(r)
            cs.append(c)
            vals.append(v)
        lo.append(lb)
        hi.append(ub)

    add([(w_ix(j), 1.0) for j in range(k)] + [(z_ix(l), 1.0) for l in range(slots)], u, u)  # noqa: E741
    for l in range(slots):  # noqa: E741
        add([(n_ix(l, j), 1.0) for j in range(k)] + [(z_ix(l), -float(s))], 0, 0)
        add([(s_ix(l, j), 1.0) for j in range(k)] + [(t_ix, -1.0)], -np.inf, 0)
        for j in range(k):
            add([(n_ix(l, j), 1.0), (s_ix(l, j), -cap[j])], -np.inf, 0)
            add([(s_ix(l, j), 1.0), (y_ix(j), -1.0)], -np.inf, 0)
        if l + 1 < slots:
            add([(z_ix(l), 1.0), (z_ix(l + 1), -1.0)], 0, np.inf)
    for j in range(k):
        add([(w_ix(j), float(s))] + [(n_ix(l, j), 1.0) for l in range(slots)] + [(y_ix(j), -f[j])], -np.inf, 0)  # noqa: E741
    a = coo_matrix((vals, (rows, cs)), shape=(len(lo), nv)).tocsr()
    c = np.zeros(nv)
    c[[y_ix(j) for j in range(k)]] = problem.w_y + EPS
    c[t_ix] = problem.w_t + EPS
    ub = np.concatenate([f // s, np.tile(cap, slots), np.ones(slots * k + slots + k), [k]])
    lb = np.concatenate([np.zeros(nv - 1), [1]])
    options: dict[str, object] = {"time_limit": time_limit, "presolve": True}
    if node_limit is not None:
        options["node_limit"] = node_limit
    res = milp(c, constraints=LinearConstraint(a, lo, hi), integrality=np.ones(nv), bounds=Bounds(lb, ub), options=options)
    if res.x is None:
        return None
    x = np.rint(res.x).astype(np.int64)
    units: list[np.ndarray] = []
    for j in range(k):
        for _ in range(int(x[w_ix(j)])):
            row = np.zeros(len(problem.free), dtype=np.int64)
            row[cols[j]] = s
            units.append(row)
    for l in range(slots):  # noqa: E741
        if x[z_ix(l)]:
            row = np.zeros(len(problem.free), dtype=np.int64)
            row[cols] = [x[n_ix(l, j)] for j in range(k)]
            units.append(row)
    counts = np.array(units, dtype=np.int64).reshape(-1, len(problem.free))
    if counts.shape[0] != u or not (counts.sum(axis=1) == s).all() or (counts.sum(axis=0) > np.array(problem.free)).any():
        return None
    return counts, "mip" if res.status == 0 else "mip_incumbent"
