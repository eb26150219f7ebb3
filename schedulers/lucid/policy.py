"""Lucid (ASPLOS'23): a non-intrusive, interpretable scheduler that packs jobs under load.

The policy composes the modules of this package:

1. **Profiler** (`profiler.py`): every job small enough is first run for at most T_prof seconds
   on a reserved pool, Least-GPU-First; short jobs finish there, the others join the main queue
   with measured single-job metrics.
2. **Packing Analyze Model** (`packing.PackingAnalyzer`): metrics → sharing score 0/1/2.
3. **Workload Estimate Model** (`estimator.DurationEstimator`, EBM): priority = estimated
   duration × GPUs; the main queue is served in ascending priority (QSSF-like).
4. **Throughput-aware throttle** (`throttle.Throttle`): packing only when the forecast of
   near-future submissions exceeds 2 jobs per 10 minutes.
5. **Affine-pair binder** (`packing.BinderRules`): with packing on, each queued job of ≤ 8 GPUs
   is first offered to the running exclusive jobs (start order, first match) and shares its GPUs
   (a `Colocate` decision; speeds come from the engine's interference model); if none is affine
   it starts alone if it fits.

As in Lucid's code, the main pass differs with the throttle: with packing on, every queued job
is tried in priority order and a job that does not fit is skipped (so later jobs backfill); with
packing off, the pass stops at the first job that does not fit. The pool is never used by the
main pass, except by jobs that need more GPUs than the main pool has; while such a job heads
the main queue the profiler starts no new runs, so the pool drains within T_prof.

**Extension points** (override in a subclass; SchedMate's adapter uses them, Lucid stays
unmodified):

- `should_profile(job, view)`: profile this job? (bypass profiling when its profile is known);
- `known_metrics(job)`: the job's single-job metrics (profiled, or supplied by an adapter);
- `sharing_score(job)`: its sharing score (default: the analyzer on `known_metrics`);
- `estimate_duration(job, view)`: an estimate to use instead of the EBM, or None for the EBM
  (all None jobs are estimated in one batched EBM call);
- `adjust_estimates(jobs, view)`: rescale the EBM's estimates of those jobs before priorities;
- `can_pack(job, view)`: may this job take part in packing at all (e.g. False once evicted);
- `packing_enabled(view)`: the throttle;
- `on_packed(job, host, view)`: `job` has just started on `host`'s GPUs (after the engine
  applied the decision, so `view.now` is the packing time);
- `arrival_delay(job, view)`: seconds before an arriving job enters the profiler or the main
  queue (default 0; an adapter charges e.g. its advisor's latency); the job waits, counted in
  its JCT, and is routed at the first scheduling pass once the delay is over.

A `profiler` passed to the constructor replaces the default one (e.g. one whose measurements
carry a warm-up bias); it is used as given.

Jobs that come back to the queue (an adapter's `Evict`, a preemption) rejoin the main queue and
are re-estimated; a job whose state says `no_pack` (`job_state(job_id).no_pack = True`) is never
packed again.

Per-job state is Lucid's own (`LucidJob`, `job_state(job_id)`; the profiler's: `Profiler.run_of`,
`Profiler.measured`), never `job.info`; it stays after a job ends, for reports and tests.

**Where this differs from Lucid's simulator** (each documented in its module):

- one event-driven simulation: Lucid profiled the whole trace in a pre-pass and then let each
  profiled job enter the main cluster at its original submit time; here a job enters the main
  queue when its profiling run ends, and profiling progress is discarded (with the engine
  patch) while the relaunch pays the engine's restart cost;
- no history before the trace: the EBM and the submission forecaster learn online from jobs
  that have finished / bins that are over (Lucid: offline notebooks, Venus-only forecasts);
  the throttle threshold (2 jobs per 10 min) applies on every trace, not only Venus;
- a job without profiled metrics has no sharing score and is never packed (Lucid gave every job
  a score from the table, profiled or not); no auto-scaling of the profiling pool;
- co-location speeds come from the engine's interference model: pass `LucidInterference` for
  Lucid's lookup rules (GPU count ignored, large models treated as benign).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from sortedcontainers import SortedList

from ..decisions import Decision
from ..job import JobState, Phase
from ..policy import ClusterView, Plan, Policy
from .data import Metrics, WorkloadTable, load_default_table
from .estimator import DurationEstimator, EBMConfig, Row, job_features
from .packing import BinderRules, PackInfo, PackingAnalyzer
from .profiler import MaskedPlacer, Profiler
from .throttle import SubmissionForecaster, Throttle

_DEFAULT: Any = object()
MainKey = tuple[float, int, str]  # (priority, entry sequence, job id)
Stage = Literal["new", "held", "queued-profiling", "profiling", "queued", "running"]


@dataclass(slots=True)
class LucidJob:
    """Lucid's state of one job (the main queue's view; the profiler keeps its own)."""

    stage: Stage = "new"
    features: Row | None = None  # the EBM's input row, set at each entry to the main queue
    entry: int = 0  # main-queue entry sequence: ties go to the earlier entry
    estimate: float | None = None  # estimated duration (s): EBM, or an adapter's
    priority: float | None = None  # estimate × GPUs; None until first estimated
    key: MainKey | None = None  # live main-queue key; None while not in the main queue
    packed_with: str | None = None  # host of the last packing
    no_pack: bool = False  # never packed again (e.g. evicted by an adapter)
    oversize: bool | None = None  # needs more GPUs than the main pool has (cached)


class Lucid(Policy):
    name = "lucid"

    def __init__(
        self,
        *,
        t_prof: float = 200.0,
        prof_scale: int = 2,
        prof_factor: float = 4.0,
        keep_profiling_progress: bool = False,
        table: WorkloadTable | None = _DEFAULT,
        analyzer: PackingAnalyzer | None = None,
        estimator: DurationEstimator | None = None,
        ebm: EBMConfig | None = None,
        throttle: Throttle | None = None,
        throttle_threshold: float = 2.0,
        packing: bool = True,
        rules: BinderRules | None = None,
        seed: int = 0,
        profiler: Profiler | None = None,
    ) -> None:
        self.table = load_default_table() if table is _DEFAULT else table
        self.analyzer = analyzer if analyzer is not None else (PackingAnalyzer(self.table, seed=seed) if self.table is not None else None)
        self.profiler = profiler if profiler is not None else Profiler(t_prof, prof_scale, prof_factor, self.table, keep_profiling_progress)
        self.estimator = estimator if estimator is not None else DurationEstimator(config=ebm or EBMConfig(random_state=seed))
        self.throttle = throttle if throttle is not None else Throttle(SubmissionForecaster(seed=seed), throttle_threshold)
        self.packing = packing
        self.rules = rules or BinderRules()
        self.packed = 0  # jobs started on another job's GPUs
        self.passes = {"packing": 0, "exclusive": 0}
        self._jobs: dict[str, LucidJob] = {}
        self._groups: dict[int, SortedList] = {}  # GPUs → main-queue keys
        self._pending: list[str] = []  # entered the main queue since the last pass, not yet estimated
        self._held: list[tuple[float, str]] = []  # (release time, job id): arrival delays
        self._seq = 0
        self._fits_seen = 0
        self._ready = False
        self._main_mask: np.ndarray = np.zeros(0, dtype=bool)
        self._main_placer: MaskedPlacer | None = None

    # ======================================================================== state
    def job_state(self, job_id: str) -> LucidJob:
        """Lucid's state of a job it has seen (KeyError otherwise)."""
        return self._jobs[job_id]

    def _state(self, job: JobState) -> LucidJob:
        state = self._jobs.get(job.job_id)
        if state is None:
            state = self._jobs[job.job_id] = LucidJob()
        return state

    # ======================================================================== extension points
    def should_profile(self, job: JobState, view: ClusterView) -> bool:
        """Send `job` to the profiler first? Lucid: if it is small enough and fits the pool."""
        return self.profiler.can_profile(job, view.cluster)

    def known_metrics(self, job: JobState) -> Metrics | None:
        """The job's single-job metrics: what its profiling run measured, or None."""
        return self.profiler.metrics.get(job.spec.job_id)

    def sharing_score(self, job: JobState) -> int | None:
        metrics = self.known_metrics(job)
        if metrics is None or self.analyzer is None:
            return None
        return self.analyzer.score(metrics)

    def estimate_duration(self, job: JobState, view: ClusterView) -> float | None:
        """An estimate (seconds) to use instead of the EBM's, or None to let the EBM decide."""
        return None

    def can_pack(self, job: JobState, view: ClusterView) -> bool:
        state = self._jobs.get(job.spec.job_id)
        return state is None or not state.no_pack

    def packing_enabled(self, view: ClusterView) -> bool:
        return self.throttle.packing_enabled(view.now)

    def on_packed(self, job: JobState, host: JobState, view: ClusterView) -> None:
        """`job` now shares the GPUs of `host` (called once the engine has applied it)."""

    def adjust_estimates(self, estimated: list[JobState], view: ClusterView) -> None:
        """Called with the jobs the EBM just estimated (`job_state(id).estimate`), before their
        priorities are set; an adapter may rescale them (e.g. onto its own estimates' scale)."""

    def arrival_delay(self, job: JobState, view: ClusterView) -> float:
        """Seconds before an arriving job is routed (profiler or main queue); Lucid: none."""
        return 0.0

    # ======================================================================== engine hooks
    def _setup(self, view: ClusterView) -> None:
        if self._ready:
            return
        self._ready = True
        self.profiler.setup(view.cluster)
        assert self.profiler.pool is not None  # setup() sets the pool
        self._main_mask = ~self.profiler.pool
        self._main_mask.setflags(write=False)
        self._main_placer = MaskedPlacer(view.placer, self._main_mask)

    def on_arrival(self, job: JobState, view: ClusterView) -> None:
        self._setup(view)
        self.throttle.forecaster.observe(view.now)
        delay = self.arrival_delay(job, view)
        if delay > 0:
            self._state(job).stage = "held"
            heapq.heappush(self._held, (view.now + delay, job.job_id))
            view.wake_at(view.now + delay)
            return
        self._route(job, view)

    def _route(self, job: JobState, view: ClusterView) -> None:
        if self.should_profile(job, view):
            self._state(job).stage = "queued-profiling"
            self.profiler.enqueue(job)
        else:
            self.profiler.stats.skipped += 1
            self._to_main(job)

    def _release_held(self, view: ClusterView) -> None:
        while self._held and self._held[0][0] <= view.now + 1e-9:
            _, job_id = heapq.heappop(self._held)
            job = view.job(job_id)
            if job.phase.is_waiting:
                self._route(job, view)

    def on_start(self, job: JobState, view: ClusterView) -> None:
        state = self._state(job)
        if job.phase is Phase.PROFILING:
            state.stage = "profiling"
            self.profiler.on_start(job, view)
            return
        state.stage = "running"
        if state.key is not None:
            self._groups[job.spec.num_gpus].discard(state.key)
            state.key = None
        if job.colocated_with is not None:
            host = view.job(job.colocated_with)
            state.packed_with = host.job_id
            self.packed += 1
            self.on_packed(job, host, view)

    def on_requeue(self, job: JobState, view: ClusterView) -> None:
        if self._state(job).stage == "profiling":
            self.profiler.on_leave(job, view, finished=False)
        self._to_main(job)
        view.wake_at(view.now)  # the engine applies decisions after `schedule`: look again now

    def on_finish(self, job: JobState, view: ClusterView) -> None:
        state = self._jobs.get(job.job_id)  # None: cancelled at submission, never seen
        if state is not None and state.stage == "profiling":
            self.profiler.on_leave(job, view, finished=True)
        self.profiler.drop(job)
        if state is not None and state.key is not None:
            self._groups[job.spec.num_gpus].discard(state.key)
            state.key = None
        if job.first_start is None:
            return  # never ran (cancelled at submission): nothing to learn
        features = state.features if state is not None else None
        row = features or job_features(job.spec, self.known_metrics(job))
        self.estimator.observe(job.job_id, row, job.spec.duration, view.now)

    # ======================================================================== main queue
    def _to_main(self, job: JobState) -> None:
        self._state(job).stage = "queued"
        self._pending.append(job.job_id)

    def _insert(self, job: JobState) -> None:
        state = self._jobs[job.job_id]
        assert state.priority is not None
        state.key = (state.priority, state.entry, job.job_id)
        self._groups.setdefault(job.spec.num_gpus, SortedList()).add(state.key)

    def _estimate(self, jobs: list[JobState], view: ClusterView) -> None:
        """Set each job's priority = estimated duration × GPUs; the EBM sees all of them at once."""
        need = []
        for job in jobs:
            hint = self.estimate_duration(job, view)
            if hint is None:
                need.append(job)
            else:
                self._jobs[job.job_id].estimate = float(hint)
        preds = self.estimator.predict_many([self._jobs[j.job_id].features for j in need])  # type: ignore[misc]  # every queued job has its feature row
        for job, est in zip(need, preds, strict=True):
            self._jobs[job.job_id].estimate = est
        self.adjust_estimates(need, view)
        for job in jobs:
            state = self._jobs[job.job_id]
            assert state.estimate is not None  # set above: the adapter's hint or the EBM's
            state.priority = state.estimate * job.spec.num_gpus

    def _flush(self, view: ClusterView) -> None:
        """Estimate the jobs that entered the main queue since the last pass, in one batch; after
        a refit of the EBM, re-estimate the whole queue in the same batch."""
        fresh, seen = [], set()
        for job_id in self._pending:
            job = view.job(job_id)
            state = self._state(job)
            if job.phase.is_waiting and state.key is None and job_id not in seen:
                seen.add(job_id)
                state.features = job_features(job.spec, self.known_metrics(job))
                self._seq += 1
                state.entry = self._seq  # ties go to the earlier entry
                fresh.append(job)
        self._pending.clear()
        if self.estimator.fits != self._fits_seen:
            self._fits_seen = self.estimator.fits
            queued = [view.job(k[2]) for g in self._groups.values() for k in g]
            self._groups.clear()
            for job in queued:
                self._jobs[job.job_id].key = None
            fresh = queued + fresh
        if fresh:
            self._estimate(fresh, view)
            for job in fresh:
                self._insert(job)

    def _head(self) -> MainKey | None:
        heads = [g[0] for g in self._groups.values() if g]
        return min(heads) if heads else None

    def _main_capacity(self, job: JobState, cluster: Any) -> int:
        eligible = cluster.eligible_mask(job.spec.gpu_types, job.spec.vc) & self._main_mask
        return int(cluster.capacity()[eligible].sum())

    def _oversize(self, job: JobState, view: ClusterView) -> bool:
        """Needs more GPUs than the main pool has: may use the profiling pool too."""
        state = self._state(job)
        if state.oversize is None:
            state.oversize = job.spec.num_gpus > self._main_capacity(job, view.cluster)
        return state.oversize

    def _pack_info(self, job: JobState, priority: float | None = None) -> PackInfo | None:
        """What the binder needs, or None when the job's memory or score is unknown."""
        metrics = self.known_metrics(job)
        score = self.sharing_score(job) if metrics is not None else None
        if metrics is None or score is None:
            return None
        if priority is None:
            priority = self._jobs[job.spec.job_id].priority
        return PackInfo(job.spec.num_gpus, metrics.gmem, score, priority)  # type: ignore[arg-type]  # a queued job has its priority

    def _host_info(self, job: JobState, view: ClusterView) -> PackInfo | None:
        """Pack info of a running job that may host a partner now, else None (the hot path of
        a packing pass: one call per running job)."""
        if job.phase is not Phase.RUNNING or job.colocated_with is not None or job.num_gpus > self.rules.max_gpus:
            return None
        state = self._jobs.get(job.spec.job_id)
        if state is None or state.priority is None:
            return None
        if not (all(self._main_mask[n] for n, _ in job.placement) and self.can_pack(job, view)):
            return None
        return self._pack_info(job, state.priority)

    # ======================================================================== scheduling
    def schedule(self, view: ClusterView) -> Sequence[Decision]:
        self._setup(view)
        if self._held:
            self._release_held(view)
        self._flush(view)
        plan = view.plan()
        head = self._head()
        drain = head is not None and self._oversize(view.job(head[2]), view)
        self.profiler.step(view, plan, view.placer, admit_new=not drain)
        if any(self._groups.values()):
            packing = self.packing and self.packing_enabled(view)
            self.passes["packing" if packing else "exclusive"] += 1
            self._main_pass(view, plan, packing)
            if self.packing and not packing:
                view.wake_at(self.throttle.next_change(view.now))
        return plan.decisions

    def _try_start(self, plan: Plan, job: JobState, view: ClusterView) -> bool:
        placer = view.placer if self._oversize(job, view) else self._main_placer
        return plan.try_start(job, placer=placer)

    def _main_pass(self, view: ClusterView, plan: Plan, packing: bool) -> None:
        rules = self.rules
        hosts: dict[int, list[tuple[JobState, PackInfo]]] = {}  # GPUs → candidate hosts, start order
        if packing:
            for job in view.running():
                hinfo = self._host_info(job, view)
                if hinfo is not None:
                    hosts.setdefault(job.num_gpus, []).append((job, hinfo))
        best_host = {n: max(i.priority for _, i in hs) for n, hs in hosts.items()}
        main_free = int(plan.free[self._main_mask].sum())
        main_total = int(view.cluster.capacity()[self._main_mask].sum())

        def viable(n: int, key: MainKey) -> bool:
            """Could a job of group n with this key still start or be packed in this pass?
            (Keys grow along a group, free GPUs only shrink and a group's hosts only change
            while that group is walked, so a group found not viable stays so.)"""
            if n <= main_free or (n > main_total and n <= plan.free_total):
                return True
            return n <= rules.max_gpus and bool(hosts.get(n)) and key[0] <= rules.priority_ratio * best_host[n]

        heap = [(g[0], n, 0) for n, g in self._groups.items() if g]
        heapq.heapify(heap)
        while heap:
            key, n, i = heapq.heappop(heap)
            job = view.job(key[2])
            packed = False
            if packing and n <= rules.max_gpus and hosts.get(n) and self.can_pack(job, view):
                info = self._pack_info(job)
                host = rules.pick_partner(info, ((h, h_info) for h, h_info in hosts[n])) if info else None
                if host is not None:
                    plan.colocate(job, host)
                    hosts[n] = [(h, i) for h, i in hosts[n] if h is not host]
                    best_host[n] = max((i.priority for _, i in hosts[n]), default=0.0)
                    packed = True
            if not packed:
                if self._try_start(plan, job, view):
                    main_free = int(plan.free[self._main_mask].sum())
                    if packing and not self._oversize(job, view) and self.can_pack(job, view):
                        info = self._pack_info(job)
                        if info is not None and n <= rules.max_gpus:  # it runs alone: a host from now on
                            hosts.setdefault(n, []).append((job, info))
                            best_host[n] = max(best_host.get(n, 0.0), info.priority)
                elif not packing:
                    return  # packing off: strict priority order, as Lucid
            group = self._groups[n]
            if i + 1 < len(group):
                nxt = group[i + 1]
                if not packing or viable(n, nxt):
                    heapq.heappush(heap, (nxt, n, i + 1))

    # ======================================================================== reporting
    def run_stats(self) -> dict[str, Any]:
        return self.info()  # adapters extend `info`, so their counters come along

    def info(self) -> dict[str, Any]:
        """Counters for reports: profiler, packing, throttle and estimator costs."""
        fc = self.throttle.forecaster
        return {
            "profiler": self.profiler.info(),
            "packed": self.packed,
            "passes": dict(self.passes),
            "throttle": {"switches": self.throttle.switches, "forecaster_fits": fc.fits, "predict_calls": fc.predict_calls},
            "estimator": self.estimator.stats(),
        }
