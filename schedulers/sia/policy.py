"""The Sia policy (SOSP'23) on our engine: a goodput-normalised ILP over (type, nodes, GPUs).

Every `round_interval` (60 s) `optimize`:
1. profile-as-you-go: every running job reports its step time and gradient statistics for its
   current allocation (`SiaThroughput.observe`); its model adds the point and refits;
2. builds, for every active job and candidate configuration (`configs.py`), the job's estimated
   goodput with the best batch size; configurations are limited to `scale_factor` × the most
   replicas the job has measured (Pollux's exploration bound, shared across types as in the
   artifact's experiments, `share_max_replicas`; a job that never ran has no gradient statistics
   yet and is offered 1 GPU of each type); on a type the job has not run on, its curve is the
   run-on type's curve times the ratio of 1-GPU throughputs (`project_throughputs`, also the
   artifact's experiment setting); each row is normalised by its
   smallest non-zero entry, and every configuration other than a running job's current one is
   multiplied by the reallocation factor max(age − restarts·penalty, 0)/(age + penalty)
   (1 while age < penalty; penalty per application: imagenet 250 s, bert 120, yolov3 45,
   cifar10 30, deepspeech2 25);
3. solves the ILP (`ilp.py`, p = −0.5, λ_n = 1.1, per-type capacity, HiGHS with a time limit);
   jobs still in checkpoint-restore keep their configuration (`pin_restarting`, the artifact's
   `preserve_ckpt_allocs`). The artifact's λ_a (allocation-change penalty) is configured there
   but never enters its objective, so it is left out here too;
4. turns the solution into decisions: jobs whose configuration is unchanged keep their GPUs
   (and get a Refresh, since batch size and epoch move their speed); the others are packed per
   type — whole free nodes for multi-node configurations, the fullest node that fits for smaller
   ones, a job's previous nodes first — and become Preempt / Resize / Migrate / Start, ordered so
   each decision is valid when the engine applies it.

Bootstrapping is a hook: `bootstrap(job, view)` returns the job's initial `SiaJobModel` (default:
1-GPU seed measurements on every GPU type, as Sia's seeding) and `profiling_seconds(job, model)`
how long the job must first profile (default `profile_seconds`, 0 like Sia's simulator). A
profiling job holds one GPU of each type and makes no progress, then re-queues for the ILP.
With `reserve_profiling` each round leaves one GPU of each type free per job waiting to profile
(otherwise such jobs wait until GPUs of every type happen to be free). `delay_seconds(job, model)`
(default 0) keeps a new job out of profiling and the ILP, holding no GPUs, for that long.
A SchedMate adapter overrides `bootstrap` to copy a similar historical job's model (and returns 0
profiling seconds for matched jobs, its advisor's latency as delay); `model_of(job_id)` gives a
job's current model once it has measurements.

The engine asks the policy for speeds (`Policy.throughput`, answered from the true model
`speed_model` at the batch size Sia chose): `Simulator(jobs, cluster, policy)` or `simulate_sia`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..decisions import Decision, Migrate, Preempt, Refresh, Resize, Start
from ..job import JobSpec, JobState, Phase, Placement
from ..policy import ClusterView, Policy
from .configs import Config, TypeInfo, candidate_configs, cluster_types, config_arrays
from .ilp import ZERO_ALLOC_GAIN, solve_allocation
from .jobs import Batch, SiaJobModel, SiaThroughput, as_sia_jobs, job_application, seed_model
from .profiles import APP_CONSTANTS, DEFAULT_CONSTANTS, load_app


@dataclass
class SiaStats:
    rounds: int = 0
    ilp_seconds: float = 0.0
    round_seconds: float = 0.0
    max_round_seconds: float = 0.0
    statuses: dict[str, int] = field(default_factory=dict)
    refits: int = 0
    repacks: int = 0
    profiled_jobs: int = 0
    profiling_gpu_seconds: float = 0.0  # GPUs held by profiling jobs × profiling seconds


def restart_penalty(app: str) -> float:
    return APP_CONSTANTS.get(app, DEFAULT_CONSTANTS).restart_penalty


def realloc_factor(age: float, restarts: int, penalty: float) -> float:
    """Pollux/Sia reallocation factor: the share of the job's life not lost to restarts."""
    if age < penalty:
        return 1.0
    return max(age - restarts * penalty, 0.0) / (age + penalty)


# ============================================================================ placement


def _place_one(free: np.ndarray, info: TypeInfo, cfg: Config, prev: Placement) -> Placement | None:
    k = info.gpus_per_node
    prev_nodes = [n for n, _ in prev if n in info.nodes]
    if cfg.gpus >= k:
        need = cfg.nodes
        whole = [n for n in info.nodes if free[n] >= k]
        order = [n for n in prev_nodes if n in whole] + [n for n in whole if n not in prev_nodes]
        if len(order) < need:
            return None
        chosen = sorted(order[:need])
        return tuple((n, k) for n in chosen)
    fits = [n for n in info.nodes if free[n] >= cfg.gpus]
    if not fits:
        return None
    pref = [n for n in prev_nodes if n in fits and len(prev) == 1]
    node = pref[0] if pref else min(fits, key=lambda n: (free[n], n))  # fullest node that fits
    return ((node, cfg.gpus),)


def pack_type(
    free: np.ndarray, info: TypeInfo, requests: Sequence[tuple[str, Config, Placement]]
) -> dict[str, Placement] | None:
    """Place (job, config, previous placement) requests on one type's free GPUs, largest first."""
    left = free.copy()
    out: dict[str, Placement] = {}
    for job_id, cfg, prev in sorted(requests, key=lambda r: (-r[1].gpus, r[0])):
        pl = _place_one(left, info, cfg, prev)
        if pl is None:
            return None
        for n, g in pl:
            left[n] -= g
        out[job_id] = pl
    return out


def _spread(free: np.ndarray, info: TypeInfo, gpus: int) -> Placement | None:
    """Last resort: any free GPUs of the type, fewest nodes first."""
    nodes = sorted(info.nodes, key=lambda n: (-free[n], n))
    taken, left = [], gpus
    for n in nodes:
        g = min(int(free[n]), left)
        if g > 0:
            taken.append((n, g))
            left -= g
        if left == 0:
            return tuple(sorted(taken))
    return None


# ============================================================================ policy


class Sia(Policy):
    name = "sia"
    round_interval = 60.0

    def __init__(
        self,
        *,
        p: float = -0.5,
        lambda_n: float = 1.1,
        scale_factor: int = 2,
        max_replicas: int = 64,
        time_limit: float = 10.0,
        mip_rel_gap: float = 1e-4,
        profile_seconds: float = 0.0,
        tune_batch_size: bool = True,
        share_max_replicas: bool = True,
        project_throughputs: bool = True,
        pin_restarting: bool = True,
        reserve_profiling: bool = False,
        throughput: SiaThroughput | None = None,
        root: Path | str | None = None,
        round_interval: float | None = None,
    ) -> None:
        if p == 0:
            raise ValueError("p must be non-zero")
        if np.sign(lambda_n) == np.sign(p) or abs(lambda_n) <= 1:
            raise ValueError("Sia needs sign(lambda_n) != sign(p) and |lambda_n| > 1")
        self.p = p
        self.lambda_n = lambda_n
        self.scale_factor = scale_factor
        self.max_replicas = max_replicas
        self.time_limit = time_limit
        self.mip_rel_gap = mip_rel_gap
        self.profile_seconds = profile_seconds
        self.tune_batch_size = tune_batch_size
        self.share_max_replicas = share_max_replicas
        self.project_throughputs = project_throughputs
        self.pin_restarting = pin_restarting
        self.reserve_profiling = reserve_profiling
        self.speed_model = throughput or SiaThroughput(root)
        self.batches: dict[str, Batch] = {}  # job -> batch chosen for its current allocation
        if round_interval is not None:
            self.round_interval = round_interval
        self.models: dict[str, SiaJobModel] = {}
        self.history: dict[str, SiaJobModel] = {}  # finished jobs' final models
        self.assigned: dict[str, Config] = {}
        self.stats = SiaStats()
        self._profile_wait: dict[str, float] = {}  # job -> profiling seconds still to do
        self._profile_end: dict[str, float] = {}  # profiling job -> end time
        self._ready_at: dict[str, float] = {}  # job -> time it may first profile or be scheduled
        self._relaunching: set[str] = set()  # stopped by a cyclic move, restarted in the same batch
        self._configs_key: tuple | None = None
        self._configs: list[Config] = []

    # ------------------------------------------------------------------ bootstrapping hooks
    def gpu_profiles(self, view: ClusterView) -> list[str]:
        return sorted({self.speed_model.profile(t) for t in view.cluster.gpu_types})

    def bootstrap(self, job: JobState, view: ClusterView) -> SiaJobModel:
        """Initial throughput model of a new job (override to supply one from history)."""
        app = load_app(job_application(job.spec), self.speed_model.root)
        return seed_model(app, self.gpu_profiles(view))

    def profiling_seconds(self, job: JobState, model: SiaJobModel) -> float:
        """Seconds the job profiles (1 GPU of each type, no progress) before it is scheduled."""
        return self.profile_seconds

    def delay_seconds(self, job: JobState, model: SiaJobModel) -> float:
        """Seconds a new job waits, holding no GPUs, before it profiles or enters the ILP
        (default 0; a SchedMate adapter charges its advisor's latency here)."""
        return 0.0

    def model_of(self, job_id: str) -> SiaJobModel | None:
        """A job's current model (live while it is active, final once it ended); None while the
        job still waits for or does its profiling (its model holds no measurements yet)."""
        if job_id in self._profile_wait or job_id in self._profile_end:
            return None
        return self.models.get(job_id) or self.history.get(job_id)

    def _ready(self, job_id: str, now: float) -> bool:
        t = self._ready_at.get(job_id)
        if t is None:
            return True
        if t <= now + 1e-9:
            del self._ready_at[job_id]
            return True
        return False

    # ------------------------------------------------------------------ capabilities
    def throughput(self, job: JobState, placement: Placement, view: ClusterView) -> float:
        """True goodput on the job's current allocation at the batch Sia chose (no speed-up
        from `scaling`): what the job would measure."""
        return self.speed_model(job, view.cluster, self.batches.get(job.job_id))

    def run_stats(self) -> dict[str, Any]:
        return asdict(self.stats)

    @classmethod
    def prepare_jobs(cls, jobs: Sequence[JobSpec]) -> list[JobSpec]:
        return as_sia_jobs(jobs)

    # ------------------------------------------------------------------ hooks
    def on_arrival(self, job: JobState, view: ClusterView) -> None:
        model = self.bootstrap(job, view)
        model.project = self.project_throughputs
        self.models[job.job_id] = model
        t = float(self.profiling_seconds(job, model))
        if t > 0:
            self._profile_wait[job.job_id] = t
        delay = float(self.delay_seconds(job, model))
        if delay > 0:
            self._ready_at[job.job_id] = view.now + delay
            view.wake_at(view.now + delay)

    def on_finish(self, job: JobState, view: ClusterView) -> None:
        model = self.models.pop(job.job_id, None)
        if model is not None:
            self.history[job.job_id] = model
        self.assigned.pop(job.job_id, None)
        self._profile_wait.pop(job.job_id, None)
        self._profile_end.pop(job.job_id, None)
        self._ready_at.pop(job.job_id, None)

    def on_requeue(self, job: JobState, view: ClusterView) -> None:
        if job.job_id in self._relaunching:  # our own stop-then-start: it keeps its new configuration
            self._relaunching.discard(job.job_id)
            return
        self.assigned.pop(job.job_id, None)

    # ------------------------------------------------------------------ profiling (optional)
    def schedule(self, view: ClusterView) -> Sequence[Decision]:
        if not self._profile_wait and not self._profile_end:
            return ()
        out: list[Decision] = []
        now = view.now
        for job_id, end in list(self._profile_end.items()):
            if end <= now + 1e-9:
                job = view.job(job_id)
                del self._profile_end[job_id]
                if job.phase is Phase.PROFILING:
                    out.append(Preempt(job_id))
        if self._profile_wait:
            free = view.free.copy()
            for d in out:  # only the preemptions above so far
                if isinstance(d, Preempt):
                    for n, g in view.job(d.job_id).placement:
                        free[n] += g
            usable = ~view.cordoned
            types = cluster_types(view.cluster, usable)
            for job in list(view.waiting()):
                t = self._profile_wait.get(job.job_id)
                if t is None or not self._ready(job.job_id, now):
                    continue
                placement: list[tuple[int, int]] = []
                for info in types.values():
                    fits = [n for n in info.nodes if free[n] >= 1]
                    if not fits:
                        placement = []
                        break
                    placement.append((min(fits, key=lambda n: (free[n], n)), 1))
                if not placement:
                    break  # FIFO: later jobs wait behind this one
                for n, _ in placement:
                    free[n] -= 1
                out.append(Start(job.job_id, tuple(sorted(placement)), profiling=True))
                del self._profile_wait[job.job_id]
                self._profile_end[job.job_id] = now + t
                view.wake_at(now + t)
                self.stats.profiled_jobs += 1
                self.stats.profiling_gpu_seconds += t * len(placement)
        return out

    # ------------------------------------------------------------------ the round
    def _candidates(self, types: dict[str, TypeInfo]) -> list[Config]:
        key = tuple((t, i.nodes, i.gpus_per_node) for t, i in types.items())
        if key != self._configs_key:
            self._configs_key = key
            self._configs = candidate_configs(types, self.max_replicas)
        return self._configs

    def _speedup_row(
        self, job: JobState, model: SiaJobModel, configs: list[Config], profiles: dict[str, str], now: float
    ) -> np.ndarray:
        app = model.app
        row = np.full(len(configs), np.nan)
        unknown: list[int] = []
        by_type: dict[str, list[int]] = {}
        for i, c in enumerate(configs):
            by_type.setdefault(c.gpu_type, []).append(i)
        # Exploration bound (Pollux): at most scale_factor × the replicas measured so far, on that
        # type or (share_max_replicas, the artifact's experiment setting) on any type.
        explore = {
            t: max(self.scale_factor * model.max_profiled_replicas(profiles[t]), 1) for t in by_type
        }
        shared_explore = max(explore.values(), default=1)
        for t, idx in by_type.items():
            prof = profiles[t]
            if prof not in app.tables:
                continue  # the application cannot run on this type
            lo, _ = app.local_bsz_range(prof)
            cap = min(self.max_replicas, max(app.max_batch_size // max(lo, 1), 1))
            if model.grad is None:
                cap = 1  # never ran: no gradient statistics, offered one GPU of each type
            else:
                cap = min(cap, shared_explore if self.share_max_replicas else explore[t])
            keep = [i for i in idx if configs[i].gpus <= cap]
            if not keep:
                continue
            if not model.knows(prof):
                unknown.extend(i for i in keep if configs[i].gpus == 1)
                continue
            nodes = np.array([configs[i].nodes for i in keep], dtype=float)
            gpus = np.array([configs[i].gpus for i in keep], dtype=float)
            row[keep] = model.goodputs(prof, nodes, gpus)
        prev = self.assigned.get(job.job_id)
        prev_i = configs.index(prev) if prev is not None and prev in configs else None
        if prev is not None and prev_i is not None and not (np.isfinite(row[prev_i]) and row[prev_i] > 0):
            prof = profiles[prev.gpu_type]
            if model.knows(prof):
                row[prev_i] = model.goodputs(prof, np.array([prev.nodes], float), np.array([prev.gpus], float))[0]
            else:
                unknown.append(prev_i)
        valid = np.isfinite(row) & (row > 0)
        base = float(row[valid].min()) if valid.any() else 1.0
        row = row / base
        row[unknown] = 1.0  # Sia: a type without a model is offered its smallest config at speedup 1
        row[~(np.isfinite(row))] = np.nan
        row[row <= ZERO_ALLOC_GAIN] = np.nan
        if prev_i is not None and job.phase is Phase.RUNNING:
            age = now - job.spec.submit_time
            f = realloc_factor(age, job.restarts, restart_penalty(app.name))
            keep_val = row[prev_i]
            row *= f
            row[prev_i] = keep_val
        return row

    def optimize(self, view: ClusterView) -> Sequence[Decision]:
        started = time.perf_counter()
        now = view.now
        cluster = view.cluster
        tp = self.speed_model
        usable = ~view.cordoned
        types = cluster_types(cluster, usable)
        profiles = {t: tp.profile(t) for t in types}

        # 1. profile-as-you-go
        running = [j for j in view.running() if j.phase is Phase.RUNNING and j.job_id in self.models]
        for job in running:
            obs = tp.observe(job, cluster, self.batches.get(job.job_id))
            if obs is not None and self.models[job.job_id].update(obs):
                self.stats.refits += 1

        # 2. active jobs and the goodput matrix
        waiting = [
            j
            for j in view.waiting()
            if j.job_id in self.models
            and j.job_id not in self._profile_wait
            and j.job_id not in self._profile_end
            and self._ready(j.job_id, now)
        ]
        active = running + waiting
        if not active:
            return ()
        configs = self._candidates(types)
        type_order = list(types)
        cfg_gpus, cfg_type = config_arrays(configs, type_order)
        # Capacity: usable GPUs of each type minus those held by jobs outside the ILP (profiling).
        capacity = np.array([types[t].capacity for t in type_order], dtype=float)
        active_ids = {j.job_id for j in active}
        node_type = {n: i for i, t in enumerate(type_order) for n in types[t].nodes}
        for j in view.running():
            if j.job_id not in active_ids:
                for n, g in j.placement:
                    if n in node_type:
                        capacity[node_type[n]] -= g
        if self.reserve_profiling:  # leave one GPU of each type free per job ready to profile
            capacity -= sum(
                1 for j in view.waiting() if j.job_id in self._profile_wait and self._ready(j.job_id, now)
            )
        capacity = np.maximum(capacity, 0)
        speed = np.vstack([self._speedup_row(j, self.models[j.job_id], configs, profiles, now) for j in active])
        pinned: dict[int, int] = {}
        if self.pin_restarting:
            for i, j in enumerate(active):
                prev = self.assigned.get(j.job_id)
                if j.phase is Phase.RUNNING and prev in configs and now < j.overhead_until:
                    pinned[i] = configs.index(prev)

        # 3. the ILP
        res = solve_allocation(
            speed,
            cfg_gpus,
            cfg_type,
            capacity,
            p=self.p,
            lambda_n=self.lambda_n,
            pinned=pinned,
            time_limit=self.time_limit,
            mip_rel_gap=self.mip_rel_gap,
        )
        self.stats.ilp_seconds += res.seconds
        self.stats.statuses[res.status] = self.stats.statuses.get(res.status, 0) + 1
        choice = {j.job_id: (configs[c] if c >= 0 else None) for j, c in zip(active, res.choice)}

        # 4. decisions
        decisions = self._decide(view, active, choice, types)
        self.stats.rounds += 1
        dt = time.perf_counter() - started
        self.stats.round_seconds += dt
        self.stats.max_round_seconds = max(self.stats.max_round_seconds, dt)
        return decisions

    # ------------------------------------------------------------------ solution → decisions
    def _config_of(self, job: JobState) -> Config | None:
        return self.assigned.get(job.job_id) if job.phase is Phase.RUNNING else None

    def _decide(
        self, view: ClusterView, active: list[JobState], choice: dict[str, Config | None], types: dict[str, TypeInfo]
    ) -> list[Decision]:
        free = view.free.copy()
        kept: dict[str, Placement] = {}
        moving: list[JobState] = []
        for job in active:
            new = choice[job.job_id]
            old = self._config_of(job)
            if job.phase is Phase.RUNNING and new is not None and new == old and self._on_type(job, view, new, types):
                kept[job.job_id] = job.placement
            else:
                if job.phase is Phase.RUNNING:
                    for n, g in job.placement:
                        free[n] += g  # its GPUs are released before anything is placed
                if new is not None:
                    moving.append(job)
        # Pack per type; if kept jobs fragment a type, re-pack it from scratch.
        placements: dict[str, Placement] = {}
        for t, info in types.items():
            req = [(j.job_id, c, j.placement) for j in moving if (c := choice[j.job_id]) is not None and c.gpu_type == t]
            if not req:
                continue
            packed = pack_type(free, info, req)
            if packed is None:
                self.stats.repacks += 1
                mine = [jid for jid in kept if self._type_of(kept[jid], view) == t]
                all_free = free.copy()
                for jid in mine:
                    for n, g in kept[jid]:
                        all_free[n] += g
                full_req = req + [(jid, self.assigned[jid], kept[jid]) for jid in mine]
                packed = pack_type(all_free, info, full_req)
                if packed is None:  # cannot happen for Sia's sizes; spread as a last resort
                    packed = {}
                    left = all_free.copy()
                    for jid, cfg, _prev in sorted(full_req, key=lambda r: -r[1].gpus):
                        pl = _spread(left, info, cfg.gpus)
                        if pl is None:
                            continue
                        for n, g in pl:
                            left[n] -= g
                        packed[jid] = pl
                for jid in mine:  # kept jobs of this type are placed again (most stay put)
                    del kept[jid]
                    for n, g in view.job(jid).placement:
                        free[n] += g
                    if jid not in packed:
                        choice[jid] = None  # only after a failed spread: it is preempted
            for jid, pl in packed.items():
                placements[jid] = pl
                for n, g in pl:
                    free[n] -= g

        # Batch sizes for every job that will run; bookkeeping of configurations.
        for jid, pl in list(placements.items()) + list(kept.items()):
            job = view.job(jid)
            conf = choice[jid]
            assert conf is not None  # placed and kept jobs all have a configuration
            prof = self.speed_model.profile(conf.gpu_type)
            model = self.models[jid]
            n_nodes, n_gpus = len(pl), sum(g for _, g in pl)
            if self.tune_batch_size:
                self.batches[jid] = model.choose_batch(prof, n_nodes, n_gpus)
            else:
                self.batches.pop(jid, None)
            self.assigned[jid] = conf

        return self._sequence(view, active, kept, placements)

    def _type_of(self, placement: Placement, view: ClusterView) -> str | None:
        if not placement:
            return None
        return view.cluster.nodes[placement[0][0]].gpu_type

    def _on_type(self, job: JobState, view: ClusterView, cfg: Config, types: dict[str, TypeInfo]) -> bool:
        info = types.get(cfg.gpu_type)
        return info is not None and all(n in info.nodes for n, _ in job.placement)

    def _sequence(
        self, view: ClusterView, active: list[JobState], kept: dict[str, Placement], placements: dict[str, Placement]
    ) -> list[Decision]:
        """Order decisions so each is valid when applied: preempt, then moves/starts that fit."""
        free = view.free.copy()
        out: list[Decision] = []
        pending: list[tuple[JobState, Placement]] = []
        for job in active:
            jid = job.job_id
            if jid in kept:
                continue
            new = placements.get(jid)
            if job.phase is Phase.RUNNING:
                if new is None:
                    out.append(Preempt(jid))
                    self.assigned.pop(jid, None)
                    for n, g in job.placement:
                        free[n] += g
                elif tuple(sorted(new)) == tuple(sorted(job.placement)):
                    kept[jid] = job.placement  # same GPUs after all: nothing to do
                else:
                    pending.append((job, new))
            elif new is not None:
                pending.append((job, new))

        def fits(job: JobState, pl: Placement) -> bool:
            own = dict(job.placement) if job.phase is Phase.RUNNING else {}
            return all(free[n] + own.get(n, 0) >= g for n, g in pl)

        def take(job: JobState, pl: Placement) -> None:
            if job.phase is Phase.RUNNING:
                for n, g in job.placement:
                    free[n] += g
            for n, g in pl:
                free[n] -= g

        progress = True
        while pending and progress:
            progress = False
            rest = []
            for job, pl in pending:
                if fits(job, pl):
                    take(job, pl)
                    out.append(self._move(job, pl))
                    progress = True
                else:
                    rest.append((job, pl))
            pending = rest
        if pending:  # cyclic moves: stop them all, then start them on their new GPUs
            for job, _ in pending:
                if job.phase is Phase.RUNNING:
                    out.append(Preempt(job.job_id))
                    # Without this the requeue would forget the configuration and the next round
                    # would see neither pin nor reallocation factor (two jobs could swap forever).
                    self._relaunching.add(job.job_id)
                    for n, g in job.placement:
                        free[n] += g
            for job, pl in pending:
                for n, g in pl:
                    free[n] -= g
                out.append(Start(job.job_id, pl))
        for jid in kept:
            out.append(Refresh(jid))
        return out

    @staticmethod
    def _move(job: JobState, pl: Placement) -> Decision:
        if job.phase is not Phase.RUNNING:
            return Start(job.job_id, pl)
        if sum(g for _, g in pl) != job.num_gpus:
            return Resize(job.job_id, pl)
        return Migrate(job.job_id, pl)


def simulate_sia(jobs: Iterable, cluster, policy: Policy, config=None, **kwargs):
    """Run the engine with the policy's own throughput model (Sia and the Sia baselines)."""
    from ..engine import Simulator

    return Simulator(jobs, cluster, policy, config, **kwargs).run()
