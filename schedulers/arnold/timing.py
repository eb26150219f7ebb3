"""Decision time of one Arnold scheduling round at a given cluster size (for `bench/`).

A cluster of `gpus` GPUs (8-GPU nodes, minipods of up to 32 nodes) runs the Experiment-C workload
scaled to it (90% offered load, an LPJ of ~60% of the nodes announced 1 h ahead); every round's
wall time is recorded, and the median over the rounds in the reservation window is reported
with the planning round (the one that solves the LPJ's placement) and the slowest round.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..engine import SimConfig, Simulator
from .policy import ArnoldPolicy
from .topology import arnold_cluster
from .trace import HOUR, ReservationWorkload, reservation_trace

__all__ = ["DecisionTime", "decision_time", "decision_times"]


@dataclass(frozen=True)
class DecisionTime:
    gpus: int
    rounds: int
    median_s: float
    max_s: float
    planning_round_s: float
    waiting_jobs_max: int


def _workload(gpus: int) -> ReservationWorkload:
    nodes = gpus // 8
    per_mp = min(32, max(2, nodes // 2))
    minipods = max(1, nodes // per_mp)
    dp = max(2, (nodes * 5 // 8) // 8) if nodes >= 16 else 2
    pp = 8 if nodes >= 16 else 2
    sizes = tuple(s for s in (1, 2, 4, 8, 16) if s <= max(1, nodes // 4))
    probs = np.array([0.45, 0.25, 0.15, 0.10, 0.05][: len(sizes)])
    return ReservationWorkload(
        minipods=minipods, nodes_per_minipod=per_mp, sizes=sizes, probs=tuple(probs / probs.sum()),
        announce_s=3 * HOUR, start_s=4 * HOUR, lpj=(dp, 8, pp), lpj_duration_s=HOUR,
    )


def decision_time(gpus: int, *, seed: int = 0) -> DecisionTime:
    w = _workload(gpus)
    cluster = arnold_cluster(w.minipods, w.nodes_per_minipod, nodes_per_leaf=min(4, w.nodes_per_minipod))
    if cluster.total_gpus != gpus:
        raise ValueError(f"cannot build a {gpus}-GPU Arnold cluster (got {cluster.total_gpus})")
    policy = ArnoldPolicy(seed=seed)
    sim = Simulator(reservation_trace(w, seed), cluster, policy, SimConfig(seed=seed, max_time=w.start_s + 600))
    result = sim.run()
    times = policy.stats.round_times
    window = [dt for t, dt in times if w.announce_s <= t < w.start_s] or [dt for _, dt in times]
    planning = next((dt for t, dt in times if t >= w.announce_s), float("nan"))
    return DecisionTime(
        gpus, len(window), float(np.median(window)), float(max(window)), planning,
        int(result.timeline[:, 3].max()) if result.timeline.size else 0,
    )


def decision_times(sizes: Sequence[int] = (64, 1024), *, seed: int = 0) -> list[DecisionTime]:
    """Decision time per round at each cluster size (default 64 and 1,024 simulated GPUs)."""
    return [decision_time(g, seed=seed) for g in sizes]
