"""Arnold (topology-aligned placement for LLM pre-training, spec §3.5) on the engine.

Every `sched_interval_s` (60 s) `optimize` runs Algorithm 1:

1. An LPJ (large pre-training job: `is_lpj`) not yet planned is planned now: capacity per minipod is
   the nodes not reserved by another LPJ and predicted LPJ-free by its start (`t_arrive`, from
   `spec.attributes["t_arrive"]`; its submit time when unannounced), else every node not reserved;
   the unit MIP picks node counts per minipod (`planner.plan_lpj`), the nodes predicted to free up
   earliest form its reserved zone, and ranks are handed out per §3.3.
2. Waiting jobs, by (priority desc, submit asc): an LPJ whose start has come starts on its zone,
   preempting leftover occupants (`arrival_mode="preempt"`) or waiting for them ("wait");
   an unannounced LPJ always waits for its zone to drain; a preemptible job goes anywhere; another job goes outside every zone when it fits, else into
   zones whose LPJ starts after now + predicted JCT + margin (`borrow="predicted"`; "always" is
   best-effort reserve-and-pack, "never" disables borrowing), else waits for the next interval.

An LPJ's speed is the engine's base speed divided by `SlowdownModel.slowdown` of its spreads
(declared through `Policy.throughput`); other jobs run at base speed. Per-LPJ state is typed
(`LpjState`); the reservation books (retention at start, idle reserved node-seconds) are in
`run_stats()`.

Engine gap worked around here: the engine has no "announce" event, so an LPJ is submitted at its
announcement with `attributes["t_arrive"]` (planned start) and waits in the queue until then.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..cluster import ClusterSpec
from ..decisions import Decision
from ..job import JobState, Phase, Placement
from ..policy import ClusterView, Plan, Policy
from .affinity import Affinity, affinity_for
from .config import ArnoldConfig
from .groups import CommMatrix, Spreads, matrix_spreads, row_major
from .jct import JctPredictor
from .packing import FixedPlacer, PackPlacer
from .planner import LpjPlacement, plan_lpj
from .slowdown import SlowdownModel
from .topology import DataCentre

__all__ = ["ArnoldPolicy", "LpjState", "is_lpj"]

_RUNNING = (Phase.RUNNING, Phase.PROFILING)


def is_lpj(job: JobState, config: ArnoldConfig, gpus_per_node: int) -> CommMatrix | None:
    """The job's communication matrix if it is an LPJ (trace flag `lpj`, else a TP/PP plan with
    at least `lpj_min_gpus` GPUs) of a valid shape; None otherwise (placed by the packer)."""
    spec = job.spec
    flag = spec.attributes.get("lpj")
    if spec.plan is None or flag is False:
        return None
    if flag is None and spec.num_gpus < config.lpj_min_gpus:
        return None
    return CommMatrix.of_plan(spec.plan, gpus_per_node)


@dataclass
class LpjState:
    """What Arnold keeps about one LPJ."""

    job_id: str
    matrix: CommMatrix
    t_arrive: float
    affinity: Affinity
    placement: LpjPlacement | None = None
    zone: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    planned_at: float | None = None
    started_at: float | None = None
    retention: float | None = None  # share of zone nodes held by other jobs at t_arrive
    free_at_arrival: int | None = None  # LPJ-free nodes in the whole cluster at t_arrive
    idle_reserved_node_s: float = 0.0  # zone node-seconds idle between planning and start
    preempted: int = 0
    announced: bool = True  # False: submitted without `t_arrive`; waits for its zone to drain

    @property
    def spreads(self) -> Spreads | None:
        return self.placement.spreads if self.placement else None


@dataclass
class ArnoldStats:
    rounds: int = 0
    round_seconds: float = 0.0
    max_round_seconds: float = 0.0
    mip_seconds: float = 0.0
    borrowed_starts: int = 0
    round_times: list[tuple[float, float]] = field(default_factory=list)  # (sim time, wall s) per round


class ArnoldPolicy(Policy):
    """Arnold's interval loop with reservations; see the module docstring."""

    name = "arnold"

    def __init__(
        self, config: ArnoldConfig | None = None, *, seed: int = 0, slowdown: SlowdownModel | None = None, **options: Any
    ) -> None:
        self.config = replace(config or ArnoldConfig(), **options)
        self.round_interval = self.config.sched_interval_s
        self.slowdown_model = slowdown or SlowdownModel(iota=self.config.iota, comm_scale=self.config.comm_scale)
        self.predictor = JctPredictor(self.config.jct_mode, self.config.jct_bin_s, self.config.jct_rmse_bins, seed)
        self.lpjs: dict[str, LpjState] = {}
        self.stats = ArnoldStats()
        self._dc: DataCentre | None = None
        self._cluster: ClusterSpec | None = None
        self._reserved = np.zeros(0, dtype=np.int64)  # per node: index into _order + 1, 0 = none
        self._idle = np.zeros(0, dtype=bool)  # per node: all its GPUs free (set with the data centre)
        self._order: list[str] = []
        self._pred_end: dict[str, float] = {}
        self._last_t = 0.0

    # ------------------------------------------------------------------ capabilities
    def throughput(self, job: JobState, placement: Placement, view: ClusterView) -> float:
        base = view.base_speed(job, placement)
        lpj = self.lpjs.get(job.job_id)
        if lpj is None:
            return base
        nodes = self._mapping(lpj, placement)
        s = matrix_spreads(self._datacentre(view.cluster).minipod[nodes], "minipods")
        busy = 1.0 - view.free_gpus() / view.cluster.total_gpus  # co-runners, for the optional iota term
        return base / self.slowdown_model.slowdown(s.dp, s.pp, lpj.affinity.e_dp, lpj.affinity.e_pp, busy)

    def run_stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rounds": self.stats.rounds,
            "round_seconds": self.stats.round_seconds,
            "max_round_seconds": self.stats.max_round_seconds,
            "mip_seconds": self.stats.mip_seconds,
            "borrowed_starts": self.stats.borrowed_starts,
        }
        for lpj in self.lpjs.values():
            s = lpj.spreads
            out[f"lpj/{lpj.job_id}"] = {
                "alpha": lpj.affinity.alpha,
                "s_dp": s.dp if s else None,
                "s_pp": s.pp if s else None,
                "planned_at": lpj.planned_at,
                "started_at": lpj.started_at,
                "retention": lpj.retention,
                "free_at_arrival": lpj.free_at_arrival,
                "idle_reserved_node_h": lpj.idle_reserved_node_s / 3600.0,
                "preempted": lpj.preempted,
            }
        return out

    # ------------------------------------------------------------------ hooks
    def on_arrival(self, job: JobState, view: ClusterView) -> None:
        self._account(view)
        matrix = is_lpj(job, self.config, view.cluster.max_node_gpus)
        if matrix is None:
            return
        announced = "t_arrive" in job.spec.attributes
        t_arrive = float(job.spec.attributes.get("t_arrive", job.spec.submit_time))
        gpu = view.cluster.nodes[0].gpu_type
        aff = affinity_for(job.spec.attributes, gpu, self.config.default_alpha)
        old = self.lpjs.get(job.job_id)
        if old is not None:  # resubmitted after a failure: plan afresh
            self._unreserve(old)
        self.lpjs[job.job_id] = LpjState(job.job_id, matrix, max(t_arrive, view.now), aff, announced=announced)
        view.wake_at(max(t_arrive, view.now))

    def on_start(self, job: JobState, view: ClusterView) -> None:
        self._account(view)
        pred = self.predictor.predict(job.job_id, job.spec.duration)
        self._pred_end[job.job_id] = view.now + max(0.0, pred - job.progress) if pred is not None else float("inf")

    def on_finish(self, job: JobState, view: ClusterView) -> None:
        self._account(view)
        self._pred_end.pop(job.job_id, None)
        lpj = self.lpjs.get(job.job_id)
        if lpj is not None and lpj.started_at is None:
            self._unreserve(lpj)

    def on_requeue(self, job: JobState, view: ClusterView) -> None:
        self._account(view)
        self._pred_end.pop(job.job_id, None)

    # ------------------------------------------------------------------ the round
    def optimize(self, view: ClusterView) -> Sequence[Decision]:
        t0 = time.perf_counter()
        self._account(view)
        plan = view.plan()
        for lpj in self.lpjs.values():
            if lpj.planned_at is not None and lpj.started_at is None and view.cordoned[lpj.zone].any():
                self._unreserve(lpj)  # a zone node was cordoned (infrastructure fault): plan again
                lpj.planned_at, lpj.placement = None, None
            due = lpj.t_arrive if not self.config.reserve else view.now
            if lpj.planned_at is None and lpj.started_at is None and view.now >= due:
                self._plan(lpj, view)
        queue = sorted(
            view.waiting(), key=lambda j: (-float(j.spec.attributes.get("priority", 0)), j.spec.submit_time, j.job_id)
        )
        for job in queue:
            held = self.lpjs.get(job.job_id)
            if held is not None:
                if view.now >= held.t_arrive and held.placement is not None:
                    self._try_start_lpj(held, job, plan, view)
                continue
            if plan.free_total < job.spec.num_gpus:
                continue
            self._place_job(job, plan, view)
        self.stats.rounds += 1
        dt = time.perf_counter() - t0
        self.stats.round_seconds += dt
        self.stats.round_times.append((view.now, dt))
        self.stats.max_round_seconds = max(self.stats.max_round_seconds, dt)
        return plan.decisions

    def _place_job(self, job: JobState, plan: Plan, view: ClusterView) -> bool:
        dc = self._datacentre(view.cluster)
        if job.spec.attributes.get("preemptible"):
            return plan.try_start(job, placer=PackPlacer(dc))
        outside = self._reserved == 0
        if plan.try_start(job, placer=PackPlacer(dc, outside)):
            return True
        borrow = self.config.borrow
        if borrow == "never" or not self.lpjs or (borrow == "predicted" and self.config.jct_mode == "none"):
            return False
        open_zones = np.zeros(len(self._order) + 1, dtype=bool)
        open_zones[0] = True
        finish = view.now
        if borrow == "predicted":
            pred = self.predictor.predict(job.job_id, job.spec.duration)
            if pred is None:
                return False
            finish = view.now + max(0.0, pred - job.progress) + self.config.jct_margin_s
        for i, jid in enumerate(self._order, start=1):
            lpj = self.lpjs.get(jid)
            if lpj is None or lpj.started_at is not None:
                continue
            open_zones[i] = lpj.t_arrive > view.now and (borrow == "always" or finish <= lpj.t_arrive)
        allowed = open_zones[self._reserved]
        if plan.try_start(job, placer=PackPlacer(dc, allowed, prefer=outside)):
            self.stats.borrowed_starts += 1
            return True
        return False

    # ------------------------------------------------------------------ LPJs
    def _plan(self, lpj: LpjState, view: ClusterView) -> None:
        dc = self._datacentre(view.cluster)
        cap = view.cluster.capacity()
        lpj_free = (view.free == cap) & ~view.cordoned
        usable = (self._reserved == 0) & ~view.cordoned
        pred_free = self._predicted_free_times(view)
        candidates = usable & (lpj_free | (pred_free <= lpj.t_arrive))
        if int(candidates.sum()) < lpj.matrix.nodes:
            candidates = usable
        if int(candidates.sum()) < lpj.matrix.nodes:
            return  # cannot be planned now; tried again next round
        nodes = np.flatnonzero(candidates)
        by_mp: list[list[int]] = [[] for _ in range(dc.num_minipods)]
        for n in sorted(nodes, key=lambda i: (pred_free[i], dc.leaf[i], i)):
            by_mp[int(dc.minipod[n])].append(int(n))
        found = plan_lpj(
            lpj.matrix, by_mp, dc.minipod, lpj.affinity.alpha,
            unit=self.config.unit, metric=self.config.metric,
            time_limit=self.config.mip_time_limit_s, node_limit=self.config.mip_node_limit,
            form=self.config.mip_form,
        )
        if found is None:
            return
        self.stats.mip_seconds += found.seconds
        # Zone = the earliest-free nodes chosen; ranks then go out in (leaf, node) order (§3.3).
        zone = np.sort(found.nodes.ravel())
        counts = np.bincount(dc.minipod[zone], minlength=dc.num_minipods)
        ordered = dc.nodes_by_minipod(zone)
        assert all(len(ordered[j]) == counts[j] for j in range(dc.num_minipods))
        found = self._rematerialize(found, ordered, dc)
        lpj.placement, lpj.zone, lpj.planned_at = found, zone, view.now
        self._order.append(lpj.job_id)
        self._reserved[zone] = len(self._order)

    @staticmethod
    def _rematerialize(found: LpjPlacement, ordered: list[list[int]], dc: DataCentre) -> LpjPlacement:
        """Same counts per unit and minipod, ranks re-handed in (leaf, node) order."""
        from .planner import materialize

        unit_nodes = found.nodes if found.unit == "pp" else found.nodes.T
        counts = np.zeros((unit_nodes.shape[0], dc.num_minipods), dtype=np.int64)
        for i, row in enumerate(unit_nodes):
            for n in row:
                counts[i, dc.minipod[n]] += 1
        nodes = materialize(counts, ordered, found.unit)
        return replace(found, nodes=nodes)

    def _try_start_lpj(self, lpj: LpjState, job: JobState, plan: Plan, view: ClusterView) -> None:
        cap = view.cluster.capacity()
        zone = lpj.zone
        busy = plan.free[zone] < cap[zone]
        if lpj.retention is None:
            lpj.retention = float(busy.mean())
            lpj.free_at_arrival = int(((view.free == cap) & ~view.cordoned).sum())
        if busy.any():
            if self.config.arrival_mode != "preempt" or not lpj.announced:
                return  # an unannounced LPJ starts once its zone drains (§3.5)
            zone_set = set(int(n) for n in zone[busy])
            for other in list(view.running()):
                if other.job_id in plan.preempted or other.job_id == job.job_id:
                    continue
                if any(n in zone_set for n, _ in other.placement):
                    plan.preempt(other)
                    lpj.preempted += 1
        per = int(cap.max())
        placement = tuple((int(n), per) for n in zone)
        if plan.try_start(job, placer=FixedPlacer(placement)):
            lpj.started_at = view.now
            self._unreserve(lpj)

    def _unreserve(self, lpj: LpjState) -> None:
        if lpj.job_id in self._order:
            idx = self._order.index(lpj.job_id) + 1
            self._reserved[self._reserved == idx] = 0
            self._order[idx - 1] = ""  # keep the other LPJs' indices

    def _mapping(self, lpj: LpjState, placement: Placement) -> np.ndarray:
        """The LPJ's node matrix; a row-major fill when it runs somewhere Arnold did not plan."""
        nodes = sorted(n for n, _ in placement)
        if lpj.placement is not None and sorted(lpj.placement.nodes.ravel().tolist()) == nodes:
            return lpj.placement.nodes
        if len(nodes) == lpj.matrix.nodes:
            return row_major(nodes, lpj.matrix.rows, lpj.matrix.cols)
        return np.array([nodes], dtype=np.int64)

    def _predicted_free_times(self, view: ClusterView) -> np.ndarray:
        """Per node, when its current occupants are predicted to finish (now if free, inf if unknown)."""
        out = np.full(len(view.cluster.nodes), view.now)
        for job in view.running():
            end = self._pred_end.get(job.job_id, float("inf"))
            for n, _ in job.placement:
                out[n] = max(out[n], end)
        return out

    def _account(self, view: ClusterView) -> None:
        """Integrate idle reserved node-seconds up to now (zones of LPJs not started yet)."""
        self._datacentre(view.cluster)
        dt = view.now - self._last_t
        if dt > 0 and self._order:
            for jid in self._order:
                lpj = self.lpjs.get(jid)
                if lpj is None or lpj.started_at is not None or lpj.zone.size == 0:
                    continue
                lpj.idle_reserved_node_s += dt * int((self._idle[lpj.zone]).sum())
        self._last_t = view.now
        self._idle = view.free == view.cluster.capacity()

    def _datacentre(self, cluster: ClusterSpec) -> DataCentre:
        if self._dc is None or self._cluster is not cluster:
            self._dc = DataCentre.from_cluster(cluster)
            self._cluster = cluster
            self._reserved = np.zeros(len(cluster.nodes), dtype=np.int64)
            self._idle = cluster.capacity() == cluster.capacity()
        return self._dc
