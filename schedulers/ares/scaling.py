"""Scaling curves: throughput of one job against its GPU count at a fixed global batch.

Ares is endo-elastic (spec §2.1): the global batch B_j stays fixed, so the iterations a job needs
do not depend on its GPU count and only the throughput thr_j(n) does. A curve stores thr at
n = 1…G_j (G_j = the largest useful DoP) and answers fractional n the way the spec's fluid
references need (§2.3): linear interpolation between ⌊x⌋ and ⌈x⌉ for x ≥ 1, x·thr(1) below 1,
and no gain beyond G_j.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["ScalingCurve", "linear_curve", "log_curve", "table_curve"]


@dataclass(frozen=True, slots=True)
class ScalingCurve:
    """thr(n) for n = 1…len(points) (`points[n-1]`), in any unit of iterations per time."""

    points: tuple[float, ...]

    def __post_init__(self) -> None:
        if not self.points:
            raise ValueError("a scaling curve needs at least thr(1)")
        if any(not (p > 0 and math.isfinite(p)) for p in self.points):
            raise ValueError(f"throughputs must be positive and finite, got {self.points}")

    @property
    def max_gpus(self) -> int:
        """G_j: the largest GPU count the curve knows (more GPUs bring nothing)."""
        return len(self.points)

    def thr(self, n: float) -> float:
        """Throughput on `n` GPUs (fractional n interpolated, per spec §2.3)."""
        if n <= 0:
            return 0.0
        if n < 1:
            return n * self.points[0]
        x = min(float(n), float(self.max_gpus))
        lo = int(math.floor(x))
        if lo == x:
            return self.points[lo - 1]
        frac = x - lo
        return (1.0 - frac) * self.points[lo - 1] + frac * self.points[lo]

    def speed(self, n: float, demand: int) -> float:
        """Speed on `n` GPUs relative to the demanded DoP (1.0 at n = demand): the engine's unit."""
        return self.thr(n) / self.thr(demand)

    def efficiency(self, n: int, base: int) -> float:
        """Per-GPU throughput on `n` GPUs normalised to that on `base` GPUs (e_j of §2.1)."""
        return (self.thr(n) / n) / (self.thr(base) / base)


def log_curve(c: float, max_gpus: int) -> ScalingCurve:
    """The spec's synthetic model (§6.1): thr(n) = n / (1 + c·log2 n), thr(1) = 1."""
    return ScalingCurve(tuple(n / (1.0 + c * math.log2(n)) for n in range(1, max_gpus + 1)))


def linear_curve(max_gpus: int) -> ScalingCurve:
    """Perfect scaling up to `max_gpus`."""
    return ScalingCurve(tuple(float(n) for n in range(1, max_gpus + 1)))


def table_curve(measured: dict[int, float], max_gpus: int) -> ScalingCurve:
    """A curve from measured points (e.g. powers of two, as the paper profiles), interpolated.

    Between measured counts thr is linear; beyond the largest measured count it stays flat.
    """
    if 1 not in measured:
        raise ValueError("a measured curve needs thr(1)")
    xs = sorted(measured)
    points = []
    for n in range(1, max_gpus + 1):
        hi = next((x for x in xs if x >= n), None)
        if hi is None:
            points.append(measured[xs[-1]])
            continue
        lo = max(x for x in xs if x <= n)
        if lo == hi:
            points.append(measured[lo])
        else:
            w = (n - lo) / (hi - lo)
            points.append((1 - w) * measured[lo] + w * measured[hi])
    return ScalingCurve(tuple(points))
