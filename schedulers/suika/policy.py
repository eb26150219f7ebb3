"""Suika (EuroSys '26) as a SchedMate policy, with its ablation and the spec's baselines (§3, §5.2).

SCHEDULE (Alg. 2) plans on a virtual copy of the cluster: admit waiting jobs at their basic demand
in queue order, reclaiming expansions (lowest benefit first, per-job LIFO) when a job does not fit;
drop expansions whose benefit fell below tau = U^lambda; then hand idle GPUs, one (job, prefix) at
a time, to the largest size-weighted marginal speedup per added GPU while it is >= tau; finally
commit one redeployment per changed job. The same loop with other plan spaces, grant rules and
redeployment mechanisms gives Suika-DP, non-elastic FIFO and the Sia / Rubick proxies
(`config.ARMS`).

Departures, all forced by the engine's model of a job (see the report of issue 12):
- The engine's `ParallelPlan` is symmetric; an asymmetric plan goes to the engine as an opaque
  `ParallelPlan(1, 1, n)` and the exact plan is this policy's typed state (`SuikaJob.plan`).
- The engine charges one fixed restart cost per `Resize`; Suika's cost depends on the move, and
  the old plan keeps training during `t_init`. So the experiment runs with engine restart cost 0,
  and this policy models each redeployment as a speed timeline (old speed, 0 while stalled, new
  speed), applied through `throughput` with `wake_at` + `Refresh` at each boundary.
- The engine frees a shrunk job's GPUs at once; a job admitted on reclaimed GPUs runs at speed 0
  until the donor's redeployment ends, which is when the spec starts it.
"""

from __future__ import annotations

import hashlib
import heapq
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from schedmate.errors import InvalidValue

from ..cluster import ClusterSpec
from ..decisions import Decision, Refresh, Resize, Start
from ..job import JobSpec, JobState, ParallelPlan, Placement
from ..policy import ClusterView, Policy
from .config import ARMS, SUIKA, ElasticConfig, GrantRule, QueueOrder, Redeploy, ULoad
from .model import (
    GB,
    Coeffs,
    Hardware,
    Plan,
    coeffs_for,
    iteration_time,
    layout_plan,
    memory_cap,
    peak_memory,
    throughput,
)
from .planner import Candidate, PlanSpace, affinity_order, benefit, best_expansions, unit_size
from .redeploy import checkpoint_stall, d2d_stall
from .workload import JobModel, job_model, prepare

_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class Expansion:
    """One granted expansion: the GPUs it added, its benefit B, and the plans around it."""

    added: tuple[int, ...]
    benefit: float
    before: Plan
    after: Plan


@dataclass(slots=True)
class SuikaJob:
    """The policy's typed state of one job."""

    job_id: str
    submit: float
    work: float  # estimated work (SJF key): length at the default plan x basic demand
    jm: JobModel
    coeffs: Coeffs
    cap: float  # usable bytes per GPU (§2.4 guard)
    norm: float  # true iteration time of the default plan on a fresh node set (speed 1.0)
    t_default: float  # modelled throughput of that plan
    plan: Plan | None = None
    history: list[Expansion] = field(default_factory=list)
    ready_at: float = 0.0  # end of the last (re)deployment
    segments: list[tuple[float, float]] = field(default_factory=list)  # (from time, speed)
    boundaries: list[float] = field(default_factory=list)  # future speed changes to refresh at
    redeploys: int = 0
    stall: float = 0.0

    @property
    def basic(self) -> int:
        return self.jm.gpus


class TruthKey(Protocol):
    """What the simulator's truth reads of a job: its id (error draw) and coefficients."""

    @property
    def job_id(self) -> str: ...

    @property
    def coeffs(self) -> Coeffs: ...


@dataclass(slots=True)
class _V:
    """A job in the virtual cluster state of one SCHEDULE call."""

    book: SuikaJob
    plan: Plan
    t: float
    history: list[Expansion]
    new: bool = False
    donors: tuple[str, ...] = ()


def hardware_of(cluster: ClusterSpec) -> Hardware:
    """Suika's two network levels from the engine topology: NVLink in a node, IB within a switch
    (rack), the pod-level bandwidth across racks."""
    topo = cluster.topology
    return Hardware(
        gpus_per_node=cluster.max_node_gpus,
        nodes_per_rack=topo.nodes_per_switch,
        bw_intra=topo.bw_node * GB,
        bw_inter=topo.bw_switch * GB,
        bw_cross=topo.bw_pod * GB,
    )


def engine_plan(plan: Plan) -> ParallelPlan:
    """The engine's (symmetric) description of `plan`; asymmetric plans are opaque `1 x 1 x n`."""
    if plan.is_symmetric():
        s = plan.stages[0]
        return ParallelPlan(s.tp, len(plan.stages), s.dp)
    return ParallelPlan(1, 1, plan.num_gpus)


def placement_of(gpus: Sequence[int], hw: Hardware) -> Placement:
    counts: dict[int, int] = {}
    for g in gpus:
        counts[hw.node(g)] = counts.get(hw.node(g), 0) + 1
    return tuple(sorted(counts.items()))


def place_basic(jm: JobModel, idle: set[int], hw: Hardware, coeffs: Coeffs, node_gpus: dict[int, int]) -> Plan | None:
    """PLACE_BASIC (§3.5): one node by best fit; else whole free nodes in a best-fit rack; else any
    GPUs in (rack, node, gpu) order with each node's share a multiple of TP. Default plan on them."""
    d, c_per = jm.gpus, hw.gpus_per_node
    by_node: dict[int, list[int]] = {}
    for g in sorted(idle):
        by_node.setdefault(hw.node(g), []).append(g)

    def lay(gpus: list[int]) -> Plan | None:
        return layout_plan(sorted(gpus), jm.pp, jm.dp, jm.tp, coeffs, hw)

    if d <= c_per:
        fits = [(len(v), n) for n, v in by_node.items() if len(v) >= d]
        if fits:
            _, node = min(fits)
            plan = lay(by_node[node][:d])
            if plan is not None:
                return plan
    if d % c_per == 0:
        whole = [n for n, v in by_node.items() if len(v) == node_gpus.get(n, c_per) == c_per]
        racks: dict[int, list[int]] = {}
        for n in whole:
            racks.setdefault(n // hw.nodes_per_rack, []).append(n)
        need = d // c_per
        fitting = [(len(v), r) for r, v in racks.items() if len(v) >= need]
        chosen = sorted(racks[min(fitting)[1]])[:need] if fitting else (sorted(whole)[:need] if len(whole) >= need else [])
        if chosen:
            plan = lay([g for n in chosen for g in by_node[n]])
            if plan is not None:
                return plan
    taken: list[int] = []
    for node in sorted(by_node):
        k = min(len(by_node[node]) // jm.tp * jm.tp, d - len(taken))
        taken.extend(by_node[node][:k])
        if len(taken) == d:
            return lay(taken)
    return None


class ElasticPolicy(Policy):
    """The Suika family on the engine; `config` picks the arm (`config.ARMS`)."""

    def __init__(self, config: ElasticConfig = SUIKA, **overrides: Any) -> None:
        self.config = replace(config, **overrides) if overrides else config
        if self.config.grant is GrantRule.SIA_ILP and type(self) is ElasticPolicy:
            raise InvalidValue("the Sia ILP arm is `sia_round.SiaRound` (or `arms.make_arm`)")
        self.name = self.config.name
        self.round_interval = self.config.round_interval
        self.jobs: dict[str, SuikaJob] = {}
        self._hw: Hardware | None = None
        self._all: list[int] = []
        self._node_gpus: dict[int, int] = {}
        self._cache: dict[str, tuple[tuple, list[Candidate]]] = {}
        self._memo: dict[str, dict] = {}
        self._shapes: dict = {}  # EXPAND_AND_BALANCE answers shared by all jobs (planner.shape_key)
        self.decision_seconds: list[float] = []
        self._stats = {"grants": 0, "reclaims": 0, "starts": 0, "redeploys": 0, "stall_seconds": 0.0}

    # ------------------------------------------------------------------ capabilities
    @classmethod
    def prepare_jobs(cls, jobs: Sequence[JobSpec]) -> list[JobSpec]:
        return prepare(jobs)

    def throughput(self, job: JobState, placement: Placement, view: ClusterView) -> float:
        book = self.jobs.get(job.job_id)
        if book is None or not book.segments:
            return view.base_speed(job, placement)
        speed = book.segments[0][1]
        for t, s in book.segments:
            if t > view.now + _EPS:
                break
            speed = s
        return speed

    def run_stats(self) -> dict[str, Any]:
        times = np.array(self.decision_seconds) if self.decision_seconds else np.zeros(1)
        n = max(1, int(self._stats["redeploys"]))
        return {
            **self._stats,
            "mean_stall_seconds": float(self._stats["stall_seconds"]) / n if self._stats["redeploys"] else 0.0,
            "schedule_calls": len(self.decision_seconds),
            "decision_p50_s": float(np.percentile(times, 50)),
            "decision_p90_s": float(np.percentile(times, 90)),
        }

    # ------------------------------------------------------------------ hooks
    def on_finish(self, job: JobState, view: ClusterView) -> None:
        self.jobs.pop(job.job_id, None)
        self._cache.pop(job.job_id, None)
        self._memo.pop(job.job_id, None)

    def on_requeue(self, job: JobState, view: ClusterView) -> None:
        book = self.jobs.get(job.job_id)
        if book is not None:
            book.plan, book.history, book.segments, book.boundaries = None, [], [], []

    def schedule(self, view: ClusterView) -> Sequence[Decision]:
        out: list[Decision] = self._refreshes(view)
        if self.round_interval is None:
            out += self._schedule(view)
        return out

    def optimize(self, view: ClusterView) -> Sequence[Decision]:
        return [*self._refreshes(view), *self._schedule(view)]

    # ------------------------------------------------------------------ models
    def _hardware(self, cluster: ClusterSpec) -> Hardware:
        if self._hw is None:
            self._hw = self.config.hardware or hardware_of(cluster)
            c = self._hw.gpus_per_node
            self._node_gpus = {i: n.gpus for i, n in enumerate(cluster.nodes)}
            self._all = [i * c + s for i, n in enumerate(cluster.nodes) for s in range(n.gpus)]
        return self._hw

    def _book(self, job: JobState, hw: Hardware) -> SuikaJob:
        book = self.jobs.get(job.job_id)
        if book is None:
            jm = job_model(job.spec)
            c = coeffs_for(jm.model, hw)
            fresh = layout_plan(list(range(jm.gpus)), jm.pp, jm.dp, jm.tp, c, hw)
            if fresh is None:
                raise ValueError(f"job {job.job_id}: default plan {jm} cannot be laid out")
            cap = memory_cap(c, hw, peak_memory(fresh, c), self.config.mem_reserve)
            book = SuikaJob(job.job_id, job.spec.submit_time, job.spec.duration * jm.gpus, jm, c, cap, 0.0, throughput(fresh, c, hw))
            book.norm = self._true_time(book, fresh, hw)
            self.jobs[job.job_id] = book
        return book

    def _true_time(self, book: TruthKey, plan: Plan, hw: Hardware) -> float:
        """The simulator's truth: model x (1 + e_P), e_P ~ N(0, sigma) fixed per (job, plan)."""
        t = iteration_time(plan, book.coeffs, hw)
        sigma = self.config.sigma_err
        if sigma <= 0:
            return t
        digest = hashlib.blake2b(repr((book.job_id, plan.signature)).encode(), digest_size=8).digest()
        e = float(np.random.default_rng(int.from_bytes(digest, "little")).standard_normal())
        return t * max(0.05, 1 + sigma * e)

    def _speed(self, book: SuikaJob, plan: Plan, hw: Hardware) -> float:
        return book.norm / self._true_time(book, plan, hw)

    # ------------------------------------------------------------------ SCHEDULE (Alg. 2)
    def _refreshes(self, view: ClusterView) -> list[Decision]:
        out: list[Decision] = []
        running = {j.job_id for j in view.running()}
        for book in self.jobs.values():
            due = False
            while book.boundaries and book.boundaries[0] <= view.now + _EPS:
                book.boundaries.pop(0)
                due = True
            if due and book.job_id in running:
                out.append(Refresh(book.job_id))
        return out

    def _schedule(self, view: ClusterView) -> list[Decision]:
        started = time.perf_counter()
        hw = self._hardware(view.cluster)
        now, cfg = view.now, self.config
        v: dict[str, _V] = {}
        held: set[int] = set()
        for job in view.running():
            book = self._book(job, hw)
            if book.plan is None:
                raise RuntimeError(f"{self.name}: running job {job.job_id} has no plan")
            v[job.job_id] = _V(book, book.plan, throughput(book.plan, book.coeffs, hw), list(book.history))
            held.update(book.plan.gpus)
        usable = ~np.asarray(view.cordoned)
        idle = {g for g in self._all if usable[hw.node(g)] and g not in held}
        before = set(idle)
        waiting = [j for j in view.waiting()]
        key = (lambda j: (j.spec.submit_time, j.job_id)) if cfg.order is QueueOrder.FIFO else (
            lambda j: (self._book(j, hw).work, j.spec.submit_time, j.job_id)
        )
        waiting.sort(key=key)
        queued = self._admit(v, idle, waiting, view, hw)
        total = sum(self._node_gpus[n] for n in self._node_gpus if usable[n]) or 1
        load = sum(x.book.basic for x in v.values()) + (queued if cfg.u_load is ULoad.RUNNING_AND_QUEUED else 0)
        tau = (load / total) ** cfg.lambda_tau if load > 0 else 0.0
        if cfg.grant is GrantRule.TAU and cfg.reclaim_below_tau:
            while True:
                rec = self._lowest_top(v, now)
                if rec is None or rec[1].benefit >= tau:
                    break
                self._pop(v[rec[0]], idle, hw)
        if cfg.space is not PlanSpace.NONE:
            self._grant(v, idle, tau, view, hw)
        out = self._commit(v, before, view, hw)
        self.decision_seconds.append(time.perf_counter() - started)
        return out

    def _reclaimable(self, x: _V, now: float) -> bool:
        return not x.new and bool(x.history) and now >= x.book.ready_at - _EPS

    def _lowest_top(self, v: dict[str, _V], now: float) -> tuple[str, Expansion] | None:
        tops = [(x.history[-1].benefit, x.book.submit, jid) for jid, x in v.items() if self._reclaimable(x, now)]
        if not tops:
            return None
        _, _, jid = min(tops)
        return jid, v[jid].history[-1]

    def _pop(self, x: _V, idle: set[int], hw: Hardware) -> Expansion:
        rec = x.history.pop()
        idle.update(set(rec.after.gpus) - set(rec.before.gpus))
        x.plan = rec.before
        x.t = throughput(rec.before, x.book.coeffs, hw)
        self._stats["reclaims"] += 1
        return rec

    def _admit(self, v: dict[str, _V], idle: set[int], waiting: list[JobState], view: ClusterView, hw: Hardware) -> int:
        """ADMIT_WAITING_WITH_PREEMPT: strict queue order; returns the basic demand left queued."""
        now, cfg = view.now, self.config
        for pos, job in enumerate(waiting):
            book = self._book(job, hw)
            may_reclaim = now - job.spec.submit_time >= cfg.queue_patience - _EPS
            popped: list[tuple[str, Expansion]] = []
            plan = None
            while True:
                plan = place_basic(book.jm, idle, hw, book.coeffs, self._node_gpus)
                if plan is not None or not may_reclaim:
                    break
                rec = self._lowest_top(v, now)
                if rec is None:
                    break
                popped.append((rec[0], self._pop(v[rec[0]], idle, hw)))
            if plan is None:
                for jid, undo in reversed(popped):  # don't shrink jobs for nothing
                    x = v[jid]
                    x.history.append(undo)
                    x.plan, x.t = undo.after, throughput(undo.after, x.book.coeffs, hw)
                    idle.difference_update(set(undo.after.gpus) - set(undo.before.gpus))
                    self._stats["reclaims"] -= 1
                if not may_reclaim:
                    view.wake_at(job.spec.submit_time + cfg.queue_patience)
                return sum(self._book(j, hw).basic for j in waiting[pos:])
            idle.difference_update(plan.gpus)
            v[job.job_id] = _V(book, plan, throughput(plan, book.coeffs, hw), [], True, tuple(j for j, _ in popped))
        return 0

    def _prefix(self, x: _V, idle: set[int], hw: Hardware) -> tuple:
        """What Alg. 1's answer for `x` depends on: its plan and the idle GPUs it can reach."""
        cfg = self.config
        order = affinity_order(x.plan.gpus, idle, hw)
        if cfg.search.early_stop:
            n = x.plan.num_gpus
            extra = x.plan.stages[0].tp * len(x.plan.stages) if cfg.space is PlanSpace.DP else unit_size(n, cfg.search.unit_cap)
            order = order[: max(n, hw.gpus_per_node) + extra]
        return (x.plan.signature, tuple(order))

    def _expansions(self, jid: str, x: _V, key: tuple, hw: Hardware) -> list[Candidate]:
        hit = self._cache.get(jid)
        if hit is not None and hit[0] == key:
            return hit[1]
        memo = self._memo.setdefault(jid, {})
        if len(memo) > 50_000:
            memo.clear()
        if sum(len(v) for v in self._shapes.values()) > 200_000:
            self._shapes.clear()
        cfg = self.config
        cands = best_expansions(x.plan, key[1], x.book.coeffs, hw, x.book.cap, space=cfg.space, params=cfg.search, memo=memo,
                                shapes=self._shapes)
        self._cache[jid] = (key, cands)
        return cands

    def _best_for(self, jid: str, x: _V, key: tuple, tau: float, view: ClusterView, hw: Hardware) -> tuple | None:
        """The job's best acceptable (rank, jid, candidate, B); rank orders by B, then fewer GPUs,
        earlier submission, job id."""
        best = None
        n0 = x.plan.num_gpus
        for cand in self._expansions(jid, x, key, hw):
            b = benefit(n0, len(cand.added), x.t, cand.throughput)
            rank = (-b, len(cand.added), x.book.submit, jid)
            if (best is None or rank < best[0]) and self._accept(x, cand, b, tau, view):
                best = (rank, jid, cand, b)
        return best

    def _accept(self, x: _V, cand: Candidate, b: float, tau: float, view: ClusterView) -> bool:
        cfg = self.config
        if b <= 0:
            return False
        if cfg.grant is GrantRule.TAU:
            return b >= tau
        if cfg.grant is GrantRule.RECONFIG:
            return cand.throughput * cfg.k_reconfig > x.t
        job = view.job(x.book.job_id)  # RESTART_BENEFIT: time saved over the run > restart cost
        left = view.remaining(job) * x.book.t_default / x.t
        return left * (1 - x.t / cand.throughput) > checkpoint_stall(x.book.jm.model.params_b, cfg.costs)

    def _grant(self, v: dict[str, _V], idle: set[int], tau: float, view: ClusterView, hw: Hardware) -> None:
        """The multi-round loop of Alg. 2: the best (job, prefix) while it passes the grant rule.

        Lazy (default): each job's best is kept in a heap and recomputed only when it reaches the
        top with a stale prefix (its reachable idle GPUs changed). This equals the eager loop
        whenever a job's best benefit does not rise as others take GPUs (CELF-style); the eager
        loop (`lazy_grants=False`) recomputes every job after every grant."""
        now, cfg = view.now, self.config
        jids = [jid for jid, x in v.items() if not x.new and now >= x.book.ready_at + cfg.t_stable - _EPS]
        if not cfg.lazy_grants:
            while idle:
                found = [e for jid in jids if (e := self._best_for(jid, v[jid], self._prefix(v[jid], idle, hw), tau, view, hw))]
                if not found:
                    break
                self._apply_grant(v, idle, min(found, key=lambda e: e[0]))
            return
        heap: list[tuple] = []
        tick = 0

        def push(jid: str) -> None:
            nonlocal tick
            key = self._prefix(v[jid], idle, hw)
            e = self._best_for(jid, v[jid], key, tau, view, hw)
            if e is not None:
                heapq.heappush(heap, (e[0], tick, e, key))
                tick += 1

        for jid in jids:
            push(jid)
        while idle and heap:
            _, _, e, key = heapq.heappop(heap)
            jid = e[1]
            if self._prefix(v[jid], idle, hw) != key:
                push(jid)  # stale: recompute and compete again
                continue
            self._apply_grant(v, idle, e)
            push(jid)

    def _apply_grant(self, v: dict[str, _V], idle: set[int], e: tuple) -> None:
        _, jid, cand, b = e
        x = v[jid]
        x.history.append(Expansion(cand.added, b, x.plan, cand.plan))
        x.plan, x.t = cand.plan, cand.throughput
        idle.difference_update(cand.added)
        self._stats["grants"] += 1

    def _commit(self, v: dict[str, _V], free: set[int], view: ClusterView, hw: Hardware) -> list[Decision]:
        """One Start or Resize per changed job, ordered so each takes only GPUs already freed."""
        now, cfg = view.now, self.config
        pending = []
        for jid, x in v.items():
            old = set() if x.new else set(x.book.plan.gpus)  # type: ignore[union-attr]  # x.book is set unless x.new
            if x.new or x.plan.signature != x.book.plan.signature:  # type: ignore[union-attr]  # as above
                pending.append((jid, x, old, set(x.plan.gpus)))
            else:
                x.book.history = x.history
        free = set(free)
        emitted: list[tuple[str, _V]] = []
        progress = True
        while pending and progress:
            progress = False
            for item in list(pending):
                jid, x, old, new = item
                if (new - old) <= free:
                    free = (free - (new - old)) | (old - new)
                    emitted.append((jid, x))
                    pending.remove(item)
                    progress = True
        out: list[Decision] = []
        for _jid, x in sorted(emitted, key=lambda e: e[1].new):  # timings of resizes first (donors)
            book = x.book
            if x.new:
                ready = max([now] + [self.jobs[d].ready_at for d in x.donors if d in self.jobs])
                speed = self._speed(book, x.plan, hw)
                book.segments = [(now, 0.0), (ready, speed)] if ready > now + _EPS else [(now, speed)]
                book.plan, book.history, book.ready_at = x.plan, [], ready
                self._stats["starts"] += 1
            else:
                old_plan = book.plan
                assert old_plan is not None
                s_old, s_new = self._speed(book, old_plan, hw), self._speed(book, x.plan, hw)
                if cfg.redeploy is Redeploy.D2D:
                    stall = d2d_stall(old_plan, x.plan, book.coeffs, hw, cfg.costs)
                    t0 = now + cfg.costs.t_init
                    book.segments = [(now, s_old), (t0, 0.0), (t0 + stall, s_new)]
                else:
                    stall = checkpoint_stall(book.jm.model.params_b, cfg.costs)
                    t0 = now
                    book.segments = [(now, 0.0), (t0 + stall, s_new)]
                book.plan, book.history, book.ready_at = x.plan, x.history, t0 + stall
                book.redeploys += 1
                book.stall += stall
                self._stats["redeploys"] += 1
                self._stats["stall_seconds"] += stall
            book.boundaries = [t for t, _ in book.segments if t > now + _EPS]
            for t in book.boundaries:
                view.wake_at(t)
            if cfg.t_stable > 0 or book.ready_at > now:
                view.wake_at(book.ready_at + cfg.t_stable)
        for jid, x in emitted:
            placement = placement_of(x.plan.gpus, hw)
            if x.new:
                out.append(Start(jid, placement, False, ParallelPlan(x.book.jm.tp, x.book.jm.pp, x.book.jm.dp)))
            else:
                out.append(Resize(jid, placement, engine_plan(x.plan)))
        return out


class Suika(ElasticPolicy):
    """Suika with the spec's defaults (λ_τ = 1, FIFO, W = 8, device-to-device redeployment)."""

    def __init__(self, **overrides: Any) -> None:
        super().__init__(ARMS["suika"], **overrides)


class SuikaDP(ElasticPolicy):
    """Ablation: only whole model replicas are added (Sia's DP-only space), all else Suika's."""

    def __init__(self, **overrides: Any) -> None:
        super().__init__(ARMS["suika-dp"], **overrides)


class NonElasticFIFO(ElasticPolicy):
    """Default plans, strict FIFO, never reconfigured."""

    def __init__(self, **overrides: Any) -> None:
        super().__init__(ARMS["nonelastic-fifo"], **overrides)


class SiaProxy(ElasticPolicy):
    """§5.2 Sia-proxy: 60 s rounds, whole replicas, checkpoint-restart on every change."""

    def __init__(self, **overrides: Any) -> None:
        super().__init__(ARMS["sia-proxy"], **overrides)


class RubickProxy(ElasticPolicy):
    """§5.2 Rubick-proxy: symmetric 3D re-plans, k_reconfig 0.97, 200 s queue patience, checkpoints."""

    def __init__(self, **overrides: Any) -> None:
        super().__init__(ARMS["rubick-proxy"], **overrides)
