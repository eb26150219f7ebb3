"""Experiment C of the reproduction check (spec §6.3): reservation and queueing around an LPJ.

Arms differ only in ArnoldConfig: JCT prediction noisy with a 30-min margin (Arnold), oracle,
noisy without margin (paper-literal), none; best-effort reserve-and-pack (zones open to every
job); no reservation (planned at the LPJ's start). Background waits are measured for jobs
submitted in the window [announce, start): `wait_window` counts only the wait inside the window
(censored at the LPJ's start, what the reservation policy decides), `wait` the whole wait.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..engine import SimConfig, SimResult, Simulator
from .policy import ArnoldPolicy
from .topology import arnold_cluster
from .trace import ReservationWorkload, reservation_trace

__all__ = ["ARMS", "ReservationRow", "reservation_rows", "time_average"]

ARMS: dict[str, dict[str, Any]] = {
    "arnold": {},
    "arnold-oracle": {"jct_mode": "oracle"},
    "arnold-no-margin": {"jct_margin_s": 0.0},
    "arnold-no-jct": {"jct_mode": "none"},
    "reserve-and-pack": {"borrow": "always"},
    "no-reservation": {"reserve": False},
}


@dataclass(frozen=True)
class ReservationRow:
    experiment: str
    arm: str
    seed: int
    retention: float
    free_at_arrival: int
    idle_reserved_node_h: float
    preempted: int
    wait_window_mean_min: float
    wait_window_p95_min: float
    wait_mean_min: float
    wait_p95_min: float
    alloc_window: float
    alloc_at_announce: float
    alloc_before_start: float
    lpj_start_delay_s: float
    lpj_s_dp: int
    lpj_s_pp: int
    mean_jct: float
    mean_queueing: float
    p99_jct: float
    makespan: float
    wall_seconds: float

    def flat(self) -> dict[str, object]:
        return dict(self.__dict__)


def time_average(times: np.ndarray, values: np.ndarray, a: float, b: float) -> float:
    """Mean over [a, b] of a step function that takes values[i] from times[i] to times[i+1]."""
    if b <= a or times.size == 0:
        return float("nan")
    edges = np.clip(np.append(times, max(b, times[-1])), a, b)
    return float(np.dot(values, np.diff(edges)) / (b - a))


def _row(arm: str, seed: int, result: SimResult, policy: ArnoldPolicy, w: ReservationWorkload) -> ReservationRow:
    stats = policy.run_stats()["lpj/lpj"]
    a, b = w.announce_s, w.start_s
    bg = [j for j in result.jobs if j.job_id != "lpj" and a <= j.spec.submit_time < b]
    starts = np.array([j.first_start if j.first_start is not None else np.inf for j in bg])
    submits = np.array([j.spec.submit_time for j in bg])
    censored = np.minimum(starts, b) - submits
    full = starts - submits
    tl = result.timeline
    alloc = tl[:, 1] / result.cluster.total_gpus
    jobs = [j for j in result.jobs if j.end_time is not None and j.first_start is not None]
    jct = np.array([j.end_time - j.spec.submit_time for j in jobs if j.end_time is not None])  # all of them
    queue = np.array([j.first_start - j.spec.submit_time for j in jobs if j.first_start is not None])  # all of them
    lpj = policy.lpjs["lpj"]
    return ReservationRow(
        "C", arm, seed,
        retention=float(stats["retention"]) if stats["retention"] is not None else float("nan"),
        free_at_arrival=int(stats["free_at_arrival"] or 0),
        idle_reserved_node_h=float(stats["idle_reserved_node_h"]),
        preempted=int(stats["preempted"]),
        wait_window_mean_min=float(censored.mean() / 60),
        wait_window_p95_min=float(np.percentile(censored, 95) / 60),
        wait_mean_min=float(full.mean() / 60),
        wait_p95_min=float(np.percentile(full, 95) / 60),
        alloc_window=time_average(tl[:, 0], alloc, a, b),
        alloc_at_announce=time_average(tl[:, 0], alloc, a - 600, a),
        alloc_before_start=time_average(tl[:, 0], alloc, b - 600, b),
        lpj_start_delay_s=float((lpj.started_at if lpj.started_at is not None else np.inf) - lpj.t_arrive),
        lpj_s_dp=stats["s_dp"] or 0,
        lpj_s_pp=stats["s_pp"] or 0,
        mean_jct=float(jct.mean()),
        mean_queueing=float(queue.mean()),
        p99_jct=float(np.percentile(jct, 99)),
        makespan=float(result.end_time - min(j.spec.submit_time for j in result.jobs)),
        wall_seconds=result.wall_seconds,
    )


def reservation_rows(
    seeds: Iterable[int], *, workload: ReservationWorkload | None = None, arms: Mapping[str, dict[str, Any]] = ARMS
) -> tuple[list[ReservationRow], dict[str, SimResult]]:
    """One row per (arm, seed); also seed-0 results per arm (for the allocation plot)."""
    w = workload or ReservationWorkload()
    cluster = arnold_cluster(w.minipods, w.nodes_per_minipod)
    rows: list[ReservationRow] = []
    first: dict[str, SimResult] = {}
    for seed in seeds:
        jobs = reservation_trace(w, seed)
        for arm, options in arms.items():
            policy = ArnoldPolicy(seed=seed, **options)
            result = Simulator(jobs, cluster, policy, SimConfig(seed=seed)).run()
            rows.append(_row(arm, seed, result, policy, w))
            first.setdefault(arm, result)
    return rows, first
