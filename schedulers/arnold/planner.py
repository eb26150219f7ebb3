"""Arnold's LPJ placement: solve the unit MIP (§3.2), then hand out nodes and ranks (§3.3).

Nodes in one minipod get consecutive ranks: every unit walks the minipods in one global order, so
stage c of every split PP group tends to land in the same minipod and DP columns stay narrow.
Node (r, c) of the returned matrix has node rank r + R·c (Megatron: TP, then DP, then PP).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .config import MipForm, SpreadMetric, Unit
from .groups import CommMatrix, Spreads, matrix_spreads
from .mip import UnitProblem, solve_units

__all__ = ["LpjPlacement", "materialize", "plan_lpj"]


@dataclass(frozen=True)
class LpjPlacement:
    """An LPJ's node matrix (R×C node ids) with its spreads and how it was found."""

    nodes: np.ndarray
    spreads: Spreads
    score: float
    unit: str
    method: str
    seconds: float


def materialize(counts: np.ndarray, nodes_by_mp: Sequence[Sequence[int]], unit: str = "pp") -> np.ndarray:
    """Turn U×k node counts into a node matrix (R×C: rows are PP groups).

    `nodes_by_mp[j]` lists minipod j's candidate nodes in preference order (leaf, node id; or
    earliest predicted free time when reserving ahead); the first Σ_i n_ij of them are taken."""
    totals = counts.sum(axis=0)
    order = sorted(range(counts.shape[1]), key=lambda j: (-int(totals[j]), j))
    pick = {j: list(nodes_by_mp[j][: int(totals[j])]) for j in order}
    for j in order:
        if len(pick[j]) < totals[j]:
            raise ValueError(f"minipod {j} has {len(pick[j])} candidate nodes, the plan takes {int(totals[j])}")
    units = sorted(range(counts.shape[0]), key=lambda i: tuple(-int(counts[i, j]) for j in order))
    rows = []
    for i in units:
        cells: list[int] = []
        for j in order:
            take = int(counts[i, j])
            cells += pick[j][:take]
            del pick[j][:take]
        rows.append(cells)
    m = np.array(rows, dtype=np.int64)
    return m if unit == "pp" else m.T


def plan_lpj(
    matrix: CommMatrix,
    nodes_by_mp: Sequence[Sequence[int]],
    minipod_of: np.ndarray,
    alpha: float,
    *,
    unit: Unit = "pp",
    metric: SpreadMetric = "minipods",
    time_limit: float = 10.0,
    node_limit: int | None = None,
    form: MipForm = "direct",
) -> LpjPlacement | None:
    """Place an LPJ on the candidate nodes (None when too few); `unit="both"` keeps the better one,
    "auto" is "pp" up to alpha 0.5 and "both" above (spec §7.4)."""
    if unit == "auto":
        unit = "both" if alpha > 0.5 else "pp"
    if unit == "both":
        found = [
            p
            for u in ("pp", "dp")
            if (p := plan_lpj(matrix, nodes_by_mp, minipod_of, alpha, unit=u, metric=metric,
                              time_limit=time_limit, node_limit=node_limit, form=form)) is not None
        ]
        if not found:
            return None
        best = min(found, key=lambda p: p.score)  # "pp" first on ties
        return LpjPlacement(best.nodes, best.spreads, best.score, best.unit, best.method, sum(p.seconds for p in found))
    beta = 1.0 - alpha
    free = tuple(len(n) for n in nodes_by_mp)
    if unit == "pp":
        problem = UnitProblem(matrix.rows, matrix.cols, free, w_y=alpha, w_t=beta)
    else:
        problem = UnitProblem(matrix.cols, matrix.rows, free, w_y=beta, w_t=alpha)
    sol = solve_units(problem, time_limit=time_limit, node_limit=node_limit, form=form)
    if sol is None:
        return None
    nodes = materialize(sol.counts, nodes_by_mp, unit)
    spreads = matrix_spreads(minipod_of[nodes], metric)
    return LpjPlacement(nodes, spreads, spreads.score(alpha), unit, sol.method, sol.seconds)
