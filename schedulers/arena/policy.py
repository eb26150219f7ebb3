"""Arena (EuroSys '26) on our engine: grids + analytic AP model, priority queues with backfill,
bounded-depth shrink/retype search and greedy scale-up every Δ = 5 min (arena.md §3.5).

`Arena(variant=...)` also builds the §5.1 baselines ("fcfs", "gavel", "ef-ls", "sia") and the §6
ablations; they share this round driver and differ only in their `ArenaConfig` (what they
believe a job's throughput is, which mechanisms they may use, their overheads). Gavel solves its
type ILP at each launch (`gavel.py`), EF-LS re-plans its type by ElasticFlow's progressive filling
(`elasticflow.py`); Sia is a heuristic on this driver, not Sia's ILP (README). Launches and resizes happen only at Δ ticks,
profiling starts on any event.

Per-job state is the policy's (`JobInfo`); the job's model and request travel in
`JobSpec.attributes["arena"]` (`LMJob`). Speeds reach the engine through `throughput` (true AP
throughput × exec factor × locality penalty, relative to the request); restart and search
downtime through `downtime`, which `arena.sim.CostedSimulator` charges (see there for why).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..decisions import Decision, Preempt, Resize, Start
from ..job import JobSpec, JobState, ParallelPlan, Phase, Placement
from ..policy import ClusterView, Policy
from .config import ABLATIONS, BASELINES, SENSITIVITY, ArenaConfig, Profiling
from .elasticflow import EFJob, progressive_filling
from .gavel import GavelJob, assign_types
from .hardware import GpuType, gpu_types_of
from .model import COUNTS, PerfTable, make_model, perf_table
from .search import Alloc, LaunchPlan, Layout, SearchSpec, Snapshot, halvings_of, launch_search, place, scale_up
from .views import decision_view, job_rng

ATTR = "arena"
Config = tuple[str, int]
MIN_SPEED = 1e-3  # never 0 on a placement the policy did not choose (the job would never end)


@dataclass(frozen=True, slots=True)
class LMJob:
    """What the trace generator says about an LM job (§2.1)."""

    family: str
    billions: float
    batch: int
    req_type: str | None
    req_gpus: int
    n_iters: int
    priority: int = 1


@dataclass
class JobInfo:
    """The policy's own state of one job."""

    lm: LMJob
    table: PerfTable
    allowed: dict[Config, float]  # believed samples/s on configurations this arm may use
    request: Config
    norm: float  # true Thr_AP on the request: speed 1.0 in the engine's units
    priority: int
    enqueued: float
    ready_at: float | None  # launchable from then (None: still to profile)
    profile_s: float
    promoted_at: float = 0.0
    launched: bool = False
    first_launch: float | None = None
    opportunistic: bool = False
    blocker: bool = False  # failed to launch while heading its queue: may revoke backfilled jobs
    tried: bool = False  # a launch attempt failed (block_per_type: it now blocks its requested type)
    reschedules: int = 0
    suspensions: int = 0


@dataclass
class ArenaStats:
    rounds: int = 0
    round_seconds: float = 0.0
    max_round_seconds: float = 0.0
    searches: int = 0
    launches: int = 0
    reschedules: int = 0
    suspensions: int = 0
    unordered: int = 0  # decisions dropped because no valid order existed (cyclic moves)


def default_lm(spec: JobSpec, gpus: dict[str, GpuType]) -> LMJob:
    """A generic trace job as a small GPT (so `check_policy` can run Arena on any trace)."""
    n = max(c for c in COUNTS if c <= max(1, spec.num_gpus))
    return LMJob("gpt", 0.76, 128, None, n, 1000)


class Arena(Policy):
    """The Arena scheduler (or one of its baselines / ablations, by `variant` or `config`)."""

    name = "arena"

    def __init__(self, config: ArenaConfig | None = None, variant: str | None = None, *, incremental: bool = True,
                 **overrides: Any) -> None:
        if variant is not None:
            table = {**BASELINES, **ABLATIONS, **SENSITIVITY}
            if variant not in table:
                raise ValueError(f"unknown Arena variant {variant!r}; choose from {', '.join(sorted(table))}")
            config = table[variant]
        cfg = (config or ArenaConfig()).with_(**overrides) if overrides else (config or ArenaConfig())
        self.config = cfg
        self.incremental = incremental  # False: the reference search, every running job scanned at every node
        self.name = cfg.name
        self.round_interval = cfg.interval_s
        self.info: dict[str, JobInfo] = {}
        self.stats = ArenaStats()
        self._gpus: dict[str, GpuType] | None = None
        self._tables: dict[tuple[str, float, int], PerfTable] = {}
        self._profiling_until: dict[str, float] = {}
        self._ilp_infeasible: set[tuple[int, frozenset[str]]] = set()
        self.round_times: list[float] = []  # seconds per Δ round (decision-time benchmark)
        self.round_cpu_times: list[float] = []  # CPU seconds per Δ round (wall on a shared machine measures neighbours)

    # ------------------------------------------------------------------ capabilities
    def throughput(self, job: JobState, placement: Placement, view: ClusterView) -> float:
        if job.phase is Phase.PROFILING:
            return 0.0
        info = self.info[job.job_id]
        g = view.cluster.nodes[placement[0][0]].gpu_type
        n = sum(k for _, k in placement)
        ap = info.table.ap.get((g, n), 0.0)
        h = halvings_of(placement, self._gpu(view)[g].per_node)
        return max(MIN_SPEED, self.config.exec_factor * ap * self.config.locality_penalty**h / info.norm)

    def downtime(self, job: JobState, num_gpus: int) -> float:
        """Seconds without progress when `job` (re)starts on `num_gpus` (§3.7): the AP search,
        plus checkpoint-resume if it had already run."""
        info = self.info.get(job.job_id)
        if info is None or job.phase is Phase.PROFILING:
            return 0.0
        return self.config.search_cost(num_gpus) + (self.config.ckpt_s if info.launched else 0.0)

    def run_stats(self) -> dict[str, Any]:
        return dict(self.stats.__dict__)

    @classmethod
    def prepare_jobs(cls, jobs: Sequence[JobSpec]) -> list[JobSpec]:
        return list(jobs)  # generic jobs get `default_lm` at arrival

    # ------------------------------------------------------------------ setup
    def _gpu(self, view: ClusterView) -> dict[str, GpuType]:
        if self._gpus is None:
            self._gpus = gpu_types_of(view.cluster)
        return self._gpus

    def _table(self, lm: LMJob, gpus: dict[str, GpuType]) -> PerfTable:
        key = (lm.family, lm.billions, lm.batch)
        if key not in self._tables:
            self._tables[key] = perf_table(make_model(lm.family, lm.billions), lm.batch, gpus)
        return self._tables[key]

    def _profile_seconds(self, n_types: int) -> float:
        """Arena: T_prof scaled by M/4 (§3.3); baselines: prepended DP profiling per (type,
        count), or per type for Sia's 1-GPU bootstrap (§3.7)."""
        c = self.config
        if c.profile_per_config_s > 0:
            return c.profile_per_config_s * n_types * (1 if c.profile_per_type_only else len(COUNTS))
        return c.profile_s * n_types / 4

    def _allowed(self, table: PerfTable, request: Config, believed_thr: dict[Config, float]) -> dict[Config, float]:
        c = self.config
        out = {
            cfg: v for cfg, v in believed_thr.items()
            if v > 0 and table.ap.get(cfg, 0.0) > 0
            and (c.allow_type_change or cfg[0] == request[0])
            and (c.allow_count_change or cfg[1] == request[1])
        }
        if c.fcfs or not out:  # rigid: the user's request, believed at its true value
            return {request: believed_thr.get(request, 0.0) or table.ap.get(request, 0.0) or 1.0}
        return out

    def on_arrival(self, job: JobState, view: ClusterView) -> None:
        gpus = self._gpu(view)
        lm = job.spec.attributes.get(ATTR) or default_lm(job.spec, gpus)
        table = self._table(lm, gpus)
        req_type = lm.req_type if lm.req_type in gpus else sorted(gpus)[0]
        request = (req_type, lm.req_gpus)
        if table.ap.get(request, 0.0) <= 0:  # a request AP cannot run: its best feasible count
            fits = [c for c, v in table.ap.items() if v > 0 and c[0] == req_type] or [c for c, v in table.ap.items() if v > 0]
            request = min(fits, key=lambda c: (abs(c[1] - lm.req_gpus), -table.ap[c])) if fits else request
        view_thr = decision_view(table, self.config.view, request, job_rng(self.config.seed, job.job_id))
        prof = self._profile_seconds(len(gpus))
        delay = self.config.profiling is Profiling.DELAY or prof <= 0
        info = JobInfo(
            lm, table, self._allowed(table, request, view_thr), request, table.ap.get(request, 0.0) or 1.0,
            lm.priority, view.now, view.now + prof if delay else None, prof, promoted_at=view.now,
        )
        self.info[job.job_id] = info
        if delay and prof > 0:
            view.wake_at(view.now + prof)

    def on_start(self, job: JobState, view: ClusterView) -> None:
        info = self.info[job.job_id]
        if job.phase is Phase.RUNNING and not info.launched:
            info.launched = True
            info.first_launch = view.now

    def on_requeue(self, job: JobState, view: ClusterView) -> None:
        info = self.info[job.job_id]
        if self._profiling_until.pop(job.job_id, None) is not None:
            info.ready_at = view.now  # profiled: launchable from the next tick
        else:
            info.opportunistic = False
            info.suspensions += 1

    def on_finish(self, job: JobState, view: ClusterView) -> None:
        self._profiling_until.pop(job.job_id, None)

    # ------------------------------------------------------------------ event-driven: profiling
    def schedule(self, view: ClusterView) -> Sequence[Decision]:
        """Between ticks only profiling moves: finished profiles release their GPU, new jobs take
        one idle GPU (best fit) for T_prof (§3.3)."""
        profiled = [jid for jid, until in self._profiling_until.items() if until <= view.now + 1e-9]
        out: list[Decision] = [Preempt(jid) for jid in profiled]
        if self.config.profiling is not Profiling.HOLD_GPU:
            return out
        free = view.free.copy()
        free[view.cordoned] = 0
        for jid in profiled:  # the finished profiles' GPUs are free once the preempts apply
            for node, k in view.job(jid).placement:
                free[node] += k
        for job in view.waiting():
            info = self.info[job.job_id]
            if info.ready_at is not None or job.job_id in self._profiling_until:
                continue
            ok = np.flatnonzero(free > 0)
            if ok.size == 0:
                break
            node = int(ok[np.argmin(free[ok])])
            free[node] -= 1
            out.append(Start(job.job_id, ((node, 1),), profiling=True, plan=ParallelPlan()))
            self._profiling_until[job.job_id] = view.now + info.profile_s
            view.wake_at(view.now + info.profile_s)
        return out

    # ------------------------------------------------------------------ the Δ tick
    def optimize(self, view: ClusterView) -> Sequence[Decision]:
        t0, c0 = time.perf_counter(), time.process_time()
        decisions = self._round(view)
        dt = time.perf_counter() - t0
        self.round_cpu_times.append(time.process_time() - c0)
        self.stats.rounds += 1
        self.stats.round_seconds += dt
        self.stats.max_round_seconds = max(self.stats.max_round_seconds, dt)
        self.round_times.append(dt)
        return decisions

    def _thr(self, job_id: str, g: str, n: int) -> float:
        return self.info[job_id].allowed.get((g, n), 0.0)

    def _layout(self, view: ClusterView) -> Layout:
        gpus = self._gpu(view)
        usable = ~view.cordoned
        types = np.array([n.gpu_type for n in view.cluster.nodes])
        return Layout({g: np.flatnonzero((types == g) & usable) for g in gpus}, {g: t.per_node for g, t in gpus.items()})

    def _spec(self) -> SearchSpec:
        c = self.config
        return SearchSpec(c.depth, c.allow_type_change, c.allow_count_change, c.shrink_others, c.relaxed_locality,
                          c.locality_penalty, own_delta=c.own_delta)

    def _start_config(self, info: JobInfo) -> Config:
        """The request if this arm believes it runs; else the nearest count it does (more GPUs
        first), best believed throughput among those."""
        n = info.request[1]
        if info.request in info.allowed:
            return info.request
        return min(info.allowed, key=lambda c: (c[1] < n, abs(c[1] - n), c[0] != info.request[0], -info.allowed[c]))

    def _age(self, view: ClusterView) -> None:
        """λ ← λ − 1 for a job that has waited T_age since it arrived or was last promoted."""
        now = view.now
        for job in view.waiting():
            info = self.info[job.job_id]
            if info.priority > 1 and not info.launched and now - info.promoted_at >= self.config.age_s:
                info.priority -= 1
                info.promoted_at = now

    def _queue_key(self, job: JobState) -> tuple[Any, ...]:
        """Priority, then arrival (every arm: the artifact sorts each policy's jobs by submission)."""
        info = self.info[job.job_id]
        return info.priority, info.enqueued, job.job_id

    def _round(self, view: ClusterView) -> list[Decision]:
        c = self.config
        now = view.now
        self._age(view)
        layout = self._layout(view)
        gpus = self._gpu(view)
        spec = self._spec()
        free = view.free.copy()
        free[view.cordoned] = 0
        allocs: dict[str, Alloc] = {}
        for job in view.running():
            if job.phase is Phase.RUNNING:
                g = view.cluster.nodes[job.placement[0][0]].gpu_type
                allocs[job.job_id] = Alloc(g, job.num_gpus, job.placement, halvings_of(job.placement, gpus[g].per_node))
        base = dict(allocs)
        snap = Snapshot(free, allocs)
        movable = set(allocs)
        queue = sorted(
            (j for j in view.waiting() if (r := self.info[j.job_id].ready_at) is not None and r <= now + 1e-9),
            key=self._queue_key,
        )
        started: dict[str, Alloc] = {}
        revoked: list[str] = []
        blk = c.queues + 1
        blocker_seen = False
        failed: set[tuple[Any, ...]] = set()  # searches that found nothing since the last launch
        opportunistic: list[str] | None = None
        self._ilp_infeasible.clear()  # Gavel: (count, types) the type ILP could not fit since the last launch
        blocked_types: set[str] = set()  # block_per_type: GPU types whose oldest waiting job did not start
        for job in queue:
            info = self.info[job.job_id]
            if c.block_per_type and (c.block_new_jobs or info.tried) and info.request[0] in blocked_types:
                continue
            if blocker_seen and (not c.backfill or (c.strict_lower_queues and info.priority > blk)):
                break
            # Whether any plan exists depends only on the snapshot and on which configurations the
            # job may use (not on its believed values), so an identical job's failure is reused.
            key = (info.lm.family, info.lm.billions, info.lm.batch, self._start_config(info), frozenset(info.allowed))
            revoking = c.preempt_opportunistic and info.blocker
            if revoking and opportunistic is None:  # running opportunistic jobs, latest queued first (fixed while launching)
                opportunistic = sorted((j for j in movable if self.info[j].opportunistic),
                                       key=lambda j: (-self.info[j].enqueued, j))
            plan = None
            if revoking and c.revoke_all_at_once and opportunistic:
                plan, snap, gone = self._launch_revoking(snap, job.job_id, info, layout, spec, movable, opportunistic,
                                                         at_once=True)
                revoked += gone
                movable -= set(gone)
            if plan is None:
                plan = None if key in failed else self._launch(snap, job.job_id, info, layout, spec, frozenset(movable), view)
                if plan is None:
                    failed.add(key)
            if plan is None and revoking and not c.revoke_all_at_once and opportunistic:
                plan, snap, gone = self._launch_revoking(snap, job.job_id, info, layout, spec, movable, opportunistic)
                revoked += gone
                movable -= set(gone)
            if plan is None and c.block_per_type:
                blocked_types.add(info.request[0])
                info.tried = True
                continue
            if plan is None:
                if info.priority <= blk:
                    blk = info.priority
                    blocker_seen = True
                    info.blocker = True
                    continue
                break
            snap = plan.snapshot
            snap.add(job.job_id, plan.alloc)
            info.blocker = False
            failed.clear()
            self._ilp_infeasible.clear()
            started[job.job_id] = plan.alloc
            info.opportunistic = blocker_seen
        self._clear_opportunistic(view, queue, started)
        steps = 0 if c.fcfs else c.steps_up
        if steps:
            worth = self._worth(view) if c.hysteresis else None
            # the jobs launched this round grow too, before they start (§3.5 SCALE_UP over RUN; the
            # artifact's `_fit_new_jobs` runs its upgrade trial "mainly for new jobs"), unless not `grow_new_jobs`
            up = frozenset(movable | started.keys()) if c.grow_new_jobs else frozenset(movable)
            snap = scale_up(snap, self._thr, layout, spec, up, steps, worth)
            started = {j: snap.allocs[j] for j in started}
        return self._emit(view, base, snap, started, revoked)

    def _launch(self, snap: Snapshot, job_id: str, info: JobInfo, layout: Layout, spec: SearchSpec,
                movable: frozenset[str], view: ClusterView | None = None) -> LaunchPlan | None:
        self.stats.searches += 1
        if self.config.gavel_ilp and view is not None:
            return self._gavel_launch(snap, job_id, info, layout, spec, movable, view)
        if self.config.ef_filling and view is not None:
            return self._ef_launch(snap, job_id, info, layout, spec, movable, view)
        start = self._start_config(info)
        if self.config.fcfs:
            spec = SearchSpec(0, False, False, False, spec.relaxed, spec.penalty)
        return launch_search(snap, job_id, start, self._thr, layout, spec, movable if self.config.shrink_others else frozenset(),
                             self.incremental)

    def _gavel_launch(self, snap: Snapshot, job_id: str, info: JobInfo, layout: Layout, spec: SearchSpec,
                      movable: frozenset[str], view: ClusterView) -> LaunchPlan | None:
        """Gavel's admission (`gavel.assign_types`): the ILP picks the type of every running job and of
        this one (counts fixed); the jobs it moves and this job are then placed on their types (best
        locality, else relaxed). None if the ILP or a placement fails (the job waits)."""
        cap = {g: int(sum(view.cluster.nodes[int(i)].gpus for i in nodes)) for g, nodes in layout.nodes.items()}
        n = info.request[1]
        jobs = [GavelJob(job_id, n, None, {g: v for (g, c), v in info.allowed.items() if c == n and v > 0})]
        for jid in sorted(snap.allocs):
            a = snap.allocs[jid]
            thr = {g: self._thr(jid, g, a.gpus) for g in layout.types} if jid in movable else {}
            jobs.append(GavelJob(jid, a.gpus, a.gpu_type, {g: v for g, v in thr.items() if v > 0} or {a.gpu_type: 1.0}))
        memo = (n, frozenset(jobs[0].thr))  # feasibility depends on counts and types, not on throughputs
        if memo in self._ilp_infeasible:
            return None
        types = assign_types(jobs, cap)
        if types is None:
            self._ilp_infeasible.add(memo)
            return None
        trial = snap.copy()
        moved = [jid for jid in sorted(snap.allocs) if types[jid] != snap.allocs[jid].gpu_type]
        for jid in moved:
            trial.release(trial.allocs[jid])
        placed: dict[str, Alloc] = {}
        for jid, cnt in [(j, snap.allocs[j].gpus) for j in moved] + [(job_id, n)]:
            g = types[jid]
            hit = place(trial.free, layout.nodes[g], layout.per_node[g], cnt, spec.relaxed)
            if hit is None:
                return None
            placed[jid] = Alloc(g, cnt, hit[0], hit[1])
            trial.take(placed[jid])
        for jid in moved:
            trial.mark(jid, placed[jid])
        new = placed[job_id]
        return LaunchPlan(trial, new, self._thr(job_id, new.gpu_type, new.gpus))

    def _ef_launch(self, snap: Snapshot, job_id: str, info: JobInfo, layout: Layout, spec: SearchSpec,
                   movable: frozenset[str], view: ClusterView) -> LaunchPlan | None:
        """ElasticFlow's admission (`elasticflow.progressive_filling`) on the job's requested type:
        every running job of that type and this one get their minimum share, then doublings; the jobs
        whose count changes and this one are placed (largest first; a job whose count is unchanged
        keeps its GPUs unless only a full repack fits). None if the shares or the placement fail."""
        g = info.request[0]
        nodes, per_node = layout.nodes[g], layout.per_node[g]
        members = sorted(j for j, a in snap.allocs.items() if a.gpu_type == g)
        jobs = [EFJob(job_id, {c: v for (t, c), v in info.allowed.items() if t == g and v > 0})]
        for jid in members:
            a = snap.allocs[jid]
            thr = {c: self._thr(jid, g, c) for c in COUNTS} if jid in movable else {}
            jobs.append(EFJob(jid, {c: v for c, v in thr.items() if v > 0} or {a.gpus: 1.0}))
        counts = progressive_filling(jobs, int(sum(view.cluster.nodes[int(i)].gpus for i in nodes)))
        if counts is None:
            return None
        changed = [j for j in members if counts[j] != snap.allocs[j].gpus]
        full = [j for j in members if j in movable]  # the artifact clears and re-places every job of the type
        for repack in ((changed, full) if self.config.ef_keep_in_place else (full,)):
            trial = snap.copy()
            for jid in repack:
                trial.release(trial.allocs[jid])
            placed: dict[str, Alloc] = {}
            for jid in sorted([*repack, job_id], key=lambda j: (-counts[j], j)):
                hit = place(trial.free, nodes, per_node, counts[jid], spec.relaxed)
                if hit is None:
                    break
                placed[jid] = Alloc(g, counts[jid], hit[0], hit[1])
                trial.take(placed[jid])
            else:
                for jid in repack:
                    if placed[jid].placement != snap.allocs[jid].placement:
                        trial.mark(jid, placed[jid])
                    else:
                        trial.allocs[jid] = snap.allocs[jid]
                new = placed[job_id]
                return LaunchPlan(trial, new, self._thr(job_id, g, new.gpus))
        return None

    def _launch_revoking(self, snap: Snapshot, job_id: str, info: JobInfo, layout: Layout, spec: SearchSpec,
                         movable: set[str], opportunistic: list[str], at_once: bool = False,
                         ) -> tuple[LaunchPlan | None, Snapshot, list[str]]:
        """§7.1: a blocked job may suspend opportunistic jobs queued after it, latest first, as
        few as it needs. `opportunistic`: the round's opportunistic running jobs, latest queued
        first (the ones queued after this job are a prefix). `at_once`: one search with all of
        their GPUs free, then suspend those the plan overlaps (§3.5 LAUNCH read literally, the
        artifact's `_get_reserved_resources` + `_analyze_resource_contention`)."""
        later = []
        for j in opportunistic:
            if self.info[j].enqueued <= info.enqueued:
                break
            if j in movable:
                later.append(j)
        if not later:
            return None, snap, []
        trial = snap.copy()
        gone: list[str] = []
        for jid in later:
            trial.release(trial.remove(jid))
            gone.append(jid)
            if at_once and len(gone) < len(later):
                continue
            plan = self._launch(trial, job_id, info, layout, spec, frozenset(movable - set(gone)))
            if plan is not None:
                return plan, *self._unrevoke(plan, snap, gone)
        return None, snap, []

    @staticmethod
    def _unrevoke(plan: LaunchPlan, snap: Snapshot, gone: list[str]) -> tuple[Snapshot, list[str]]:
        """Keep running every revoked job whose GPUs the plan left free (suspend only as needed)."""
        kept = []
        for jid in gone:
            alloc = snap.allocs[jid]
            if all(plan.snapshot.free[node] >= k for node, k in alloc.placement):
                plan.snapshot.take(alloc)
                plan.snapshot.add(jid, alloc)
            else:
                kept.append(jid)
        return plan.snapshot, kept

    def _clear_opportunistic(self, view: ClusterView, queue: list[JobState], started: dict[str, Alloc]) -> None:
        """A running job stays opportunistic only while some job ahead of it still waits."""
        waiting = [self.info[j.job_id].enqueued for j in queue if j.job_id not in started]
        oldest = min(waiting, default=float("inf"))
        for job in view.running():
            info = self.info[job.job_id]
            if info.opportunistic and job.job_id not in started and info.enqueued < oldest:
                info.opportunistic = False

    def _worth(self, view: ClusterView) -> Callable[[str, float], bool]:
        """§7.7 hysteresis: gain × remaining time > current throughput × downtime."""
        def worth(job_id: str, gain: float) -> bool:
            job = view.job(job_id)
            cur = max(job.speed * self.info[job_id].norm, 1e-9)
            remaining_s = view.remaining(job) / max(job.speed, 1e-9)
            return gain * remaining_s > cur * (self.config.search_cost(job.num_gpus) + self.config.ckpt_s)
        return worth

    # ------------------------------------------------------------------ decisions
    def _emit(self, view: ClusterView, base: dict[str, Alloc], snap: Snapshot, started: dict[str, Alloc],
              revoked: list[str]) -> list[Decision]:
        """Preempts first, then moves and starts in an order that keeps every step valid."""
        out: list[Decision] = [Preempt(j) for j in revoked]
        free = view.free.copy()
        for j in revoked:
            for node, k in base[j].placement:
                free[node] += k
        pending: list[tuple[str, Alloc | None, Alloc]] = [(j, None, a) for j, a in started.items()]
        for j in snap.changed:
            if j in base and j in snap.allocs and snap.allocs[j].placement != base[j].placement:
                pending.append((j, base[j], snap.allocs[j]))
        while pending:
            progressed = False
            for item in list(pending):
                jid, old, new = item
                own = dict(old.placement) if old else {}
                if all(k <= free[node] + own.get(node, 0) for node, k in new.placement):
                    for node, k in own.items():
                        free[node] += k
                    for node, k in new.placement:
                        free[node] -= k
                    out.append(self._decision(jid, old, new))
                    pending.remove(item)
                    progressed = True
            if not progressed:
                self.stats.unordered += len(pending)
                break
        return out

    def _decision(self, jid: str, old: Alloc | None, new: Alloc) -> Decision:
        info = self.info[jid]
        plan = info.table.plans.get(new.config)
        if old is None:
            self.stats.launches += 1
            if info.launched:
                self.stats.reschedules += 1
                info.reschedules += 1
            return Start(jid, new.placement, plan=plan)
        self.stats.reschedules += 1
        info.reschedules += 1
        return Resize(jid, new.placement, plan)  # a type change re-plans too, so never a bare Migrate


__all__ = ["ATTR", "Arena", "ArenaStats", "JobInfo", "LMJob", "default_lm"]
