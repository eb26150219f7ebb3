"""Outlier removal by median absolute deviation (MAD), and the robust summary of a metric series.

Spec §3.2 [I]: drop values outside median ± 3·MAD, report the mean of the rest. Here MAD is the
normal-consistent one (1.4826 × median |x − median|, so `k=3` is ≈ 3σ for Gaussian noise), with
two guards real logs need:

- a floor of `min_rel_spread` × |median| on the MAD, so a series whose values are mostly
  identical (step times printed with one decimal) does not throw away every value that differs
  in the last digit;
- fewer than `min_n` values are kept as they are (three points cannot outvote each other).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

MAD_NORMAL = 1.4826


@dataclass(frozen=True, slots=True)
class RobustSummary:
    """Mean of the kept values; `kept`/`dropped` are indices into the input sequence."""

    mean: float
    median: float
    mad: float
    kept: tuple[int, ...]
    dropped: tuple[int, ...]

    @property
    def rel_spread(self) -> float:
        """Robust coefficient of variation (scaled MAD / |median|) of the input."""
        return self.mad / abs(self.median) if self.median else 0.0


def mad_filter(
    values: Sequence[float], k: float = 3.0, *, min_n: int = 4, min_rel_spread: float = 0.005
) -> tuple[list[int], list[int]]:
    """(kept, dropped) indices: a value is kept iff |x − median| ≤ k · max(MAD, floor)."""
    if k <= 0:
        raise ValueError("k must be positive")
    n = len(values)
    if n < min_n:
        return list(range(n)), []
    med = statistics.median(values)
    mad = MAD_NORMAL * statistics.median(abs(v - med) for v in values)
    bound = k * max(mad, min_rel_spread * abs(med), 1e-12)
    kept = [i for i, v in enumerate(values) if abs(v - med) <= bound]
    dropped = [i for i, v in enumerate(values) if abs(v - med) > bound]
    return kept, dropped


def robust_mean(
    values: Sequence[float], k: float = 3.0, *, min_n: int = 4, min_rel_spread: float = 0.005
) -> RobustSummary:
    """MAD-filter `values`, then summarise; raises ValueError on an empty input."""
    if not values:
        raise ValueError("robust_mean of an empty sequence")
    kept, dropped = mad_filter(values, k, min_n=min_n, min_rel_spread=min_rel_spread)
    med = statistics.median(values)
    mad = MAD_NORMAL * statistics.median(abs(v - med) for v in values)
    mean = statistics.fmean(values[i] for i in kept)
    return RobustSummary(mean, med, mad, tuple(kept), tuple(dropped))
