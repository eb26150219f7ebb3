"""Communication groups of a 3D-parallel job (spec §2.2–2.3): the DP×PP node matrix and spreads.

Row r of the R×C matrix is one PP group (stages 0..C-1); column c is one DP group (stage c).
TP groups stay inside a node, so node-level spreads equal GPU-level spreads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..job import ParallelPlan
from .config import GPUS_PER_NODE, SpreadMetric

__all__ = ["CommMatrix", "Spreads", "group_spread", "matrix_spreads", "row_major", "column_major", "weighted_score"]


@dataclass(frozen=True, slots=True)
class CommMatrix:
    """Node-level communication matrix of a job with `gpus` GPUs split TP×PP×DP."""

    gpus: int
    tp: int
    pp: int
    gpus_per_node: int = GPUS_PER_NODE

    @property
    def dp(self) -> int:
        return self.gpus // (self.tp * self.pp)

    @property
    def rows(self) -> int:
        """R: PP groups (each row = one PP group of C nodes)."""
        return self.dp // (self.gpus_per_node // self.tp)

    @property
    def cols(self) -> int:
        """C: pipeline stages (each column = one DP group of R nodes)."""
        return self.pp

    @property
    def nodes(self) -> int:
        return self.rows * self.cols

    @classmethod
    def of(cls, gpus: int, tp: int, pp: int, gpus_per_node: int = GPUS_PER_NODE) -> CommMatrix | None:
        """The matrix, or None when the job is not a valid LPJ shape (spec §2.2 validity)."""
        if gpus < 1 or tp < 1 or pp < 1 or gpus % gpus_per_node or gpus_per_node % tp:
            return None
        if gpus % (tp * pp):
            return None
        dp = gpus // (tp * pp)
        if dp % (gpus_per_node // tp):
            return None
        return cls(gpus, tp, pp, gpus_per_node)

    @classmethod
    def of_plan(cls, plan: ParallelPlan, gpus_per_node: int = GPUS_PER_NODE) -> CommMatrix | None:
        return cls.of(plan.gpus, plan.tp, plan.pp, gpus_per_node)


@dataclass(frozen=True, slots=True)
class Spreads:
    """Job-level max spreads: over DP groups (columns) and PP groups (rows)."""

    dp: int
    pp: int

    def score(self, alpha: float) -> float:
        return weighted_score(self.dp, self.pp, alpha)


def group_spread(minipods: Sequence[int] | np.ndarray, metric: SpreadMetric = "minipods") -> int:
    """|minipods| of one group; Eq. 3 ("eq3") counts 0 for a group inside one minipod."""
    k = len(set(int(m) for m in minipods))
    return 0 if metric == "eq3" and k <= 1 else k


def matrix_spreads(mp: np.ndarray, metric: SpreadMetric = "minipods") -> Spreads:
    """Spreads of an R×C matrix of minipod ids: max over columns (DP) and over rows (PP)."""
    mp = np.asarray(mp)
    s_dp = max(group_spread(mp[:, c], metric) for c in range(mp.shape[1]))
    s_pp = max(group_spread(mp[r, :], metric) for r in range(mp.shape[0]))
    return Spreads(s_dp, s_pp)


def weighted_score(s_dp: float, s_pp: float, alpha: float) -> float:
    """alpha·S_DP + (1-alpha)·S_PP: lower is better (alpha = DP affinity, spec §7.1)."""
    return alpha * s_dp + (1.0 - alpha) * s_pp


def row_major(nodes: Sequence[int], rows: int, cols: int) -> np.ndarray:
    """Fill R×C unit-major: consecutive nodes form a PP group (how baselines are mapped, §6.1)."""
    return np.asarray(nodes, dtype=np.int64).reshape(rows, cols)


def column_major(nodes: Sequence[int], rows: int, cols: int) -> np.ndarray:
    """Megatron DP-major fill: node rank k sits at (k % R, k // R) (the "naive" variant, §7.6)."""
    return np.asarray(nodes, dtype=np.int64).reshape(cols, rows).T
