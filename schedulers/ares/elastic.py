"""Bounded elastic scale-out at a fixed global batch (spec §3.2) and the allocation pass (§3.3).

Both are pure functions of per-job facts fixed at arrival (virtual finish time, cap, fill
target) and the active set, so Ares needs to recompute only when that set changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .config import EfficiencyBaseline
from .scaling import ScalingCurve

__all__ = ["Contender", "ares_allocate", "fill_target", "scale_cap"]


def scale_cap(
    curve: ScalingCurve, demand: int, alpha: float, gpus: int, baseline: EfficiencyBaseline = "demand"
) -> int:
    """cap_j: double from the start DoP while per-GPU efficiency stays ≥ alpha (spec §3.2).

    "demand" (paper): start at d_j, efficiency relative to d_j; the cap is a power-of-two
    multiple of d_j and never below min(d_j, limit). "one_gpu" (artifact, §7.1): start at 1,
    efficiency relative to 1 GPU, the demand ignored. Doubling stops at the largest power-of-two
    step ≤ min(M, G_j) (§7.2); never clamped to a non-power-of-two M.
    """
    limit = min(gpus, curve.max_gpus)
    start = min(demand, limit) if baseline == "demand" else 1
    n = max(1, start)
    while 2 * n <= limit and curve.efficiency(2 * n, start) >= alpha:
        n *= 2
    return n


def fill_target(curve: ScalingCurve, cap: int, gpus: int) -> int:
    """How far the artifact's leftover pass may grow a job: doublings while speedup still grows."""
    limit = min(gpus, curve.max_gpus)
    n = cap
    while 2 * n <= limit and curve.thr(2 * n) > curve.thr(n):
        n *= 2
    return n


@dataclass(frozen=True, slots=True)
class Contender:
    """What an allocator sees of one active job (a snapshot; the engine owns the live state).

    `remaining` is work left in seconds at the demanded DoP (the engine's unit); `attained` the
    GPU·s received so far; `current` the GPUs held now (0 when waiting); `unit` the GPUs of one
    model replica (tp·pp): an elastic job grows and shrinks in whole replicas.
    """

    job_id: str
    arrival: float
    demand: int
    curve: ScalingCurve
    vft: float = 0.0
    cap: int = 1
    fill_target: int = 1
    remaining: float = 0.0
    attained: float = 0.0
    current: int = 0
    unit: int = 1

    def time_left(self, n: float) -> float:
        """Seconds to finish on `n` GPUs (∞ on none)."""
        speed = self.curve.speed(n, self.demand)
        return self.remaining / speed if speed > 0 else float("inf")


def ares_allocate(
    jobs: Sequence[Contender], gpus: int, *, allow_shrink: bool = True, fill_leftover: bool = False
) -> dict[str, int]:
    """Earliest-virtual-finish-first greedy pass (spec §3.3): {job id: GPUs}, every job listed.

    A job with a smaller F is served first and takes up to its cap; later jobs shrink (possibly
    to 0: a full preemption keeping progress). Jobs with larger F never take GPUs from smaller
    F. GPUs left over stay idle unless `fill_leftover` (the artifact's second pass).
    """
    order = sorted(jobs, key=lambda j: (j.vft, j.arrival, j.job_id))
    free = gpus
    alloc: dict[str, int] = {}
    for j in order:
        if free <= 0:
            alloc[j.job_id] = 0
            continue
        if j.cap <= free:
            n = j.cap
        elif allow_shrink:
            n = free - free % j.unit  # whole replicas only (any count for a plain DP job)
        else:
            n = j.demand if j.demand <= free else 0  # rigid fallback; lower jobs may backfill
        alloc[j.job_id] = n
        free -= n
    if fill_leftover and free > 0:
        for j in order:
            extra = min(j.fill_target - alloc[j.job_id], free)
            extra -= extra % j.unit
            if extra > 0:
                alloc[j.job_id] += extra
                free -= extra
            if free == 0:
                break
    return alloc
