"""Seeded synthetic workloads of the spec's reproduction check.

- `table1_instance`: free nodes per minipod of a Table-1 setting (spec §6.1 generator).
- `reservation_trace`: Experiment C (§6.3): whole-node background jobs at a target offered load
  plus one announced LPJ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..job import JobSpec, ParallelPlan
from .config import GPUS_PER_NODE

__all__ = ["SETTINGS", "ReservationWorkload", "Setting", "reservation_trace", "table1_instance"]

HOUR = 3600.0


@dataclass(frozen=True)
class Setting:
    """A Table-1 benchmark setting: minipods, total free nodes, job (DP, TP, PP)."""

    name: str
    minipods: int
    free_nodes: int
    dp: int
    tp: int
    pp: int

    @property
    def gpus(self) -> int:
        return self.dp * self.tp * self.pp


SETTINGS = (
    Setting("i", 3, 18, 12, 4, 2),
    Setting("ii", 5, 438, 24, 4, 8),
    Setting("iii", 11, 1019, 46, 8, 8),
)


def table1_instance(setting: Setting, seed: int) -> list[int]:
    """Free nodes per minipod: (i) seed 0 is the symmetric [6, 6, 6]; otherwise
    round(total/k·(1+U(-w, w))) with w = 0.34 for (i), 0.15 for (ii)/(iii), remainder to the largest."""
    k, total = setting.minipods, setting.free_nodes
    if setting.name == "i" and seed == 0:
        return [total // k] * k
    rng = np.random.default_rng(seed)
    w = 0.34 if setting.name == "i" else 0.15
    free = [max(1, round(total / k * (1 + rng.uniform(-w, w)))) for _ in range(k)]
    if setting.name != "i":
        big = int(np.argmax(free))
        free[big] = max(1, free[big] + total - sum(free))
    return free


@dataclass(frozen=True)
class ReservationWorkload:
    """Experiment C: 8 minipods × 32 nodes, 90% offered load, a 160-node MoE LPJ announced at 12 h
    for 16 h. Background arrivals stop at the LPJ's start (the metrics cover the window before)."""

    minipods: int = 8
    nodes_per_minipod: int = 32
    sizes: tuple[int, ...] = (1, 2, 4, 8, 16)
    probs: tuple[float, ...] = (0.45, 0.25, 0.15, 0.10, 0.05)
    median_s: float = 1800.0
    sigma: float = 1.0
    cap_s: float = 24 * HOUR
    load: float = 0.9
    announce_s: float = 12 * HOUR
    start_s: float = 16 * HOUR
    lpj: tuple[int, int, int] = (20, 8, 8)  # DP, TP, PP
    lpj_profile: str = "moe_24b"
    lpj_duration_s: float = 2 * HOUR  # not in the spec; only its start matters for the metrics

    @property
    def nodes(self) -> int:
        return self.minipods * self.nodes_per_minipod


def reservation_trace(w: ReservationWorkload, seed: int) -> list[JobSpec]:
    """Poisson arrivals of whole-node jobs at `load`, then the LPJ (job id "lpj")."""
    rng = np.random.default_rng(seed)
    mean_nodes = float(np.dot(w.sizes, w.probs))
    mean_dur = w.median_s * math.exp(w.sigma**2 / 2)
    rate = w.load * w.nodes / (mean_nodes * mean_dur)  # jobs per second
    jobs: list[JobSpec] = []
    t = 0.0
    while True:
        t += float(rng.exponential(1.0 / rate))
        if t >= w.start_s:
            break
        nodes = int(rng.choice(w.sizes, p=w.probs))
        dur = float(min(w.cap_s, rng.lognormal(math.log(w.median_s), w.sigma)))
        jobs.append(JobSpec(f"bg{len(jobs)}", round(t, 1), nodes * GPUS_PER_NODE, round(dur, 1)))
    dp, tp, pp = w.lpj
    plan = ParallelPlan(tp=tp, pp=pp, dp=dp)
    jobs.append(
        JobSpec(
            "lpj", w.announce_s, plan.gpus, w.lpj_duration_s, plan=plan,
            attributes={"lpj": True, "t_arrive": w.start_s, "profile": w.lpj_profile},
        )
    )
    return jobs
