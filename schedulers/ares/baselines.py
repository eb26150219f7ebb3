"""The spec's comparison policies (§6.1) as allocators over the same `Contender` snapshots.

Each maps the active jobs and the GPU count to {job id: GPUs}; `AllocationPolicy` runs any of
them on the engine, so every arm pays the same rounds and restart costs. What each stands in for:

- `fifo_allocate`: rigid d_j, strict head-of-line, never preempts;
- `srtf_allocate`: rigid, preemptive, oracle remaining time at d_j, skip-fill;
- `las_allocate`: Tiresias-LAS, rigid, preemptive, two queues split at `threshold` GPU·s of
  attained service, FIFO within a queue, skip-fill;
- `efs_allocate`: Pollux stand-in, elastic instantaneous fair share in whole GPUs: one GPU at a
  time to the job holding fewest, up to its α-cap;
- `optimus_allocate`: the first GPU to every job, then each next GPU to the job whose remaining
  time drops most.

The fluid MaxMin baseline (Gavel max-min / Themis stand-in) has no integer allocation; it is
computed by `maxmin_finish_times`.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

from .elastic import Contender
from .fairness import FluidJob, fluid_finish_times, waterfill

__all__ = [
    "LAS_THRESHOLD_GPU_S",
    "efs_allocate",
    "fifo_allocate",
    "las_allocate",
    "maxmin_finish_times",
    "optimus_allocate",
    "srtf_allocate",
]

LAS_THRESHOLD_GPU_S = 3600.0  # 1 GPU·h of attained service (spec §6.1)


def _by_arrival(jobs: Sequence[Contender]) -> list[Contender]:
    return sorted(jobs, key=lambda j: (j.arrival, j.job_id))


def _skip_fill(order: Sequence[Contender], gpus: int) -> dict[str, int]:
    free, alloc = gpus, {}
    for j in order:
        n = j.demand if j.demand <= free else 0
        alloc[j.job_id] = n
        free -= n
    return alloc


def fifo_allocate(jobs: Sequence[Contender], gpus: int) -> dict[str, int]:
    free, alloc, blocked = gpus, {}, False
    for j in _by_arrival(jobs):
        if j.current > 0:  # never preempted (it started before anything now waiting)
            alloc[j.job_id] = j.current
            free -= j.current
    for j in _by_arrival(jobs):
        if j.current > 0:
            continue
        fits = not blocked and j.demand <= free
        alloc[j.job_id] = j.demand if fits else 0
        free -= alloc[j.job_id]
        blocked = blocked or not fits
    return alloc


def srtf_allocate(jobs: Sequence[Contender], gpus: int) -> dict[str, int]:
    return _skip_fill(sorted(jobs, key=lambda j: (j.remaining, j.arrival, j.job_id)), gpus)


def las_allocate(jobs: Sequence[Contender], gpus: int, threshold: float = LAS_THRESHOLD_GPU_S) -> dict[str, int]:
    return _skip_fill(sorted(jobs, key=lambda j: (j.attained >= threshold, j.arrival, j.job_id)), gpus)


def efs_allocate(jobs: Sequence[Contender], gpus: int) -> dict[str, int]:
    alloc = {j.job_id: 0 for j in jobs}
    heap = [(0, j.arrival, j.job_id, j.cap) for j in jobs]
    heapq.heapify(heap)
    free = gpus
    while free > 0 and heap:
        n, arrival, job_id, cap = heapq.heappop(heap)
        alloc[job_id] = n + 1
        free -= 1
        if n + 1 < cap:
            heapq.heappush(heap, (n + 1, arrival, job_id, cap))
    return alloc


def optimus_allocate(jobs: Sequence[Contender], gpus: int) -> dict[str, int]:
    alloc = {j.job_id: 0 for j in jobs}
    free = gpus
    heap: list[tuple[float, float, str]] = []
    by_id = {j.job_id: j for j in jobs}
    for j in _by_arrival(jobs):
        if free == 0:
            break
        alloc[j.job_id] = 1
        free -= 1
        _push_gain(heap, j, 1, gpus)
    while free > 0 and heap:
        _, _, job_id = heapq.heappop(heap)
        alloc[job_id] += 1
        free -= 1
        _push_gain(heap, by_id[job_id], alloc[job_id], gpus)
    return alloc


def _push_gain(heap: list[tuple[float, float, str]], j: Contender, n: int, gpus: int) -> None:
    if n + 1 > min(gpus, j.curve.max_gpus):
        return
    gain = j.time_left(n) - j.time_left(n + 1)
    if gain > 0 and math.isfinite(gain):
        heapq.heappush(heap, (-gain, j.arrival, j.job_id))


def maxmin_finish_times(jobs: Sequence[FluidJob], gpus: int, round_s: float = 60.0) -> dict[str, float]:
    """Fluid max-min time-slicing: water-filling capped at d_j, rate (x/d_j)·thr(d_j), no restart cost.

    A job enters at the first round boundary after it arrives, like every round-based arm.
    """
    entries = {j.job_id: (math.ceil(j.arrival / round_s - 1e-9) * round_s if round_s > 0 else j.arrival) for j in jobs}

    def rates(present: Sequence[FluidJob]) -> list[float]:
        shares = waterfill([j.demand for j in present], gpus)
        return [x / j.demand for x, j in zip(shares, present)]

    return fluid_finish_times(jobs, entries, rates)
