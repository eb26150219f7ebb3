"""Outlier removal by median absolute deviation (MAD), and the robust summary of a metric series.

Spec §3.2 [I]: drop values outside median ± 3·MAD, report the mean of the rest. Here MAD is the
normal-consistent one (1.4826 × median |x − median|, so `k=3` is ≈ 3σ for Gaussian noise), with
two guards real logs need:

- a floor of `min_rel_spread` × |median| on the MAD, so a series whose values are mostly
  identical (step times printed with one decimal) does not throw away every value that differs
  in the last digit;
- fewer than `min_n` values are kept as they are (three points cannot outvote each other),
  and summarised by their median, not their mean: with no filter, one warm-up or stalled step
  among three would pull a mean by a third of its excess, a median not at all.

MAD alone would get a *level shift* backwards: when a co-located job slows a training job down
2x, the newest few step times are the truth and the older majority is history, yet MAD drops
the newest as outliers. `newest_regime` finds such a shift in a newest-first series (the split
that best explains it as two medians, if the medians differ by `min_shift` and the split halves
the absolute deviation), and only the newest regime is summarised. The same cuts off warm-up
steps at the old end of a young job's window.

A "step time" that grows in proportion to the step counter is a clock since the start
(`cumulative_slope`); its slope, not its level, is the step time.
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


def newest_regime(
    values_newest_first: Sequence[float], *, min_segment: int = 3, min_shift: float = 0.25, min_gain: float = 0.5
) -> int:
    """How many of the newest values form the current regime (all of them when no shift).

    A split at k (newest k vs the rest) is accepted when both sides have >= `min_segment`
    values, their medians differ by >= `min_shift` relative to the older median, and the summed
    absolute deviation from the two medians is <= `min_gain` x that from one median.
    """
    v = list(values_newest_first)
    n = len(v)
    if n < 2 * min_segment:
        return n

    def cost(xs: Sequence[float]) -> tuple[float, float]:
        med = statistics.median(xs)
        return sum(abs(x - med) for x in xs), med

    whole, _ = cost(v)
    best_k, best_cost, best_meds = n, whole, (0.0, 0.0)
    for k in range(min_segment, n - min_segment + 1):
        c_new, m_new = cost(v[:k])
        c_old, m_old = cost(v[k:])
        if c_new + c_old < best_cost:
            best_k, best_cost, best_meds = k, c_new + c_old, (m_new, m_old)
    m_new, m_old = best_meds
    if best_k == n or whole <= 0 or best_cost > min_gain * whole:
        return n
    if m_old == 0 or abs(m_new - m_old) / abs(m_old) < min_shift:
        return n
    return best_k


def robust_mean(
    values: Sequence[float], k: float = 3.0, *, min_n: int = 4, min_rel_spread: float = 0.005
) -> RobustSummary:
    """MAD-filter `values`, then summarise (the mean of the kept values; the median when there
    are too few to filter, see the module docstring); raises ValueError on an empty input."""
    if not values:
        raise ValueError("robust_mean of an empty sequence")
    kept, dropped = mad_filter(values, k, min_n=min_n, min_rel_spread=min_rel_spread)
    med = statistics.median(values)
    mad = MAD_NORMAL * statistics.median(abs(v - med) for v in values)
    mean = statistics.fmean(values[i] for i in kept) if len(values) >= min_n else statistics.median(values)
    return RobustSummary(mean, med, mad, tuple(kept), tuple(dropped))


def cumulative_slope(
    points_newest_first: Sequence[tuple[int | None, float]],
    *,
    min_points: int = 3,
    max_slope_ratio: float = 2.0,
    max_offset: float = 0.5,
) -> tuple[float, int] | None:
    """(value per step, points used) when a newest-first series of (step, value) is a clock
    since the start rather than a per-step time (`train_time:250140ms`, `time 3400s`), else None.

    Over the newest run whose step falls going back in time, the value must fall too, in
    proportion to the step: every slope between neighbours within `max_slope_ratio` of the
    others, and the newest value within `max_offset` of itself from slope x step. A per-step time
    that drifts up has a tiny slope and a large offset; a flat or noisy one is not monotone.
    """
    run: list[tuple[int, float]] = []
    for step, value in points_newest_first:
        if step is None or (run and (step >= run[-1][0] or value >= run[-1][1])):
            break
        run.append((step, value))
    if len(run) < min_points:
        return None
    slopes = sorted((a[1] - b[1]) / (a[0] - b[0]) for a, b in zip(run, run[1:]))
    if slopes[0] <= 0 or slopes[-1] > max_slope_ratio * slopes[0]:
        return None
    slope = slopes[len(slopes) // 2]
    step, value = run[0]
    if abs(value - slope * step) > max_offset * value:
        return None
    return slope, len(run)
