"""Lucid's non-intrusive profiler: a reserved pool, Least-GPU-First order, a time limit T_prof.

Lucid runs every new job briefly on a dedicated profiling VC before it enters the cluster:

- **Pool**: `scale` whole nodes the main scheduler never uses (here the first `scale` nodes of the
  cluster; Lucid took 2 nodes for Venus and for Philly, the default here). A job too big for the
  main pool alone (it needs more GPUs than the main pool has) may use the pool's nodes too, or
  it could never run. Lucid's Venus-only auto-scaling of the pool (borrow a node while more
  than 10 jobs wait) is not modelled: on a small cluster the pool size matters (on the first
  500 jobs of the 64-GPU synthetic trace, jobs waited ~2.4 h on average to be profiled with a
  1-node pool, ~2 min with 2 nodes).
- **Who is profiled**: jobs asking for at most `scale × factor` GPUs (Venus: 2 × 4 = 8; Philly:
  2 × 2 = 4) that fit the pool; larger ones skip profiling and go straight to the main queue.
- **Order**: Least-GPU-First (ascending GPUs, then arrival), strictly: the first job that does
  not fit stops the pass, as in Lucid's `LeastGPUFirstProfiler`.
- **Time limit**: a job runs at most `t_prof` seconds there (Venus 200 s, Philly 80 s). A job
  whose run ends within it finishes in the profiler and never enters the main cluster; a
  longer one is stopped at T_prof and joins the main queue.
- **Measurement**: a profiling run records the job's single-job metrics (speed, GPU util,
  GPU-memory util, GPU memory). In simulation they are looked up in Lucid's table by the job's
  workload attributes (model, dataset, batch size, AMP); a job without them, or with a workload
  the table lacks, yields no metrics, hence no sharing score, and is never packed.

**Profiling progress is not kept** (Lucid's simulator treats profiling as measurement: a job that
leaves the profiler later runs its whole duration). Lucid's simulator ran the profiler as a
separate pre-pass over the trace, so a profiled job still entered the main cluster at its
original submit time, as if profiling took no time. Here it is one simulation: the job joins
the main queue only when its profiling run ends. The profiling run is a real cost here: the
GPU time spent on runs cut at T_prof is thrown away (`lost_gpu_seconds`, and the engine's
`wasted_gpu_time` with the discard-progress engine patch), the job waits in the profiling queue
(counted in its JCT), and its relaunch in the main pool pays the engine's restart cost (40 s for
≤ 8 GPUs), which Lucid's simulator did not charge. `keep_progress=True` keeps the progress
instead (profiling as the first T_prof seconds of training). Until the engine can discard
progress (`Plan.preempt(..., discard_progress=True)`), progress is kept either way.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sortedcontainers import SortedList

from ..cluster import ClusterSpec
from ..job import JobState, Placement
from ..placement import Placer
from ..policy import ClusterView, Plan
from .data import Metrics, WorkloadTable

ENGINE_CAN_DISCARD = "discard_progress" in inspect.signature(Plan.preempt).parameters
"""Whether this engine's `Plan.preempt` can drop a job's progress (the proposed engine patch)."""


class MaskedPlacer:
    """A placer restricted to some nodes (the profiling pool, or the main pool)."""

    def __init__(self, base: Placer, mask: np.ndarray) -> None:
        self.base = base
        self.mask = mask
        self.name = f"{base.name}[masked]"

    def place(
        self, job: JobState, free: np.ndarray, eligible: np.ndarray, n: int, cluster: ClusterSpec
    ) -> Placement | None:
        return self.base.place(job, free, eligible & self.mask, n, cluster)


@dataclass
class ProfilerStats:
    profiled: int = 0
    finished_in_profiler: int = 0
    moved_on: int = 0  # cut at T_prof, sent to the main queue
    skipped: int = 0  # never profiled (too large, does not fit the pool, or an adapter said so)
    measured: int = 0  # profiling runs that yielded metrics
    gpu_seconds: float = 0.0  # all GPU time spent in the profiler
    lost_gpu_seconds: float = 0.0  # GPU time of runs cut at T_prof (discarded progress)
    queue_seconds: float = 0.0  # total wait in the profiling queue

    def as_dict(self) -> dict[str, float]:
        return {k: round(v, 1) if isinstance(v, float) else v for k, v in self.__dict__.items()}


@dataclass(slots=True)
class ProfileRun:
    """The profiler's state of one job: its queue key while queued, and its last run's start."""

    key: tuple[int, int, str] | None = None  # (GPUs, arrival sequence, job id): Least-GPU-First
    started: float | None = None


@dataclass
class Profiler:
    t_prof: float = 200.0
    scale: int = 2  # pool nodes (Lucid: 2 for Venus and Philly); at most all nodes but one
    factor: float = 4.0
    table: WorkloadTable | None = None
    keep_progress: bool = False
    stats: ProfilerStats = field(default_factory=ProfilerStats)
    pool: np.ndarray | None = None  # bool mask of pool nodes, set by `setup`
    gpu_limit: int = 0
    _queue: SortedList = field(default_factory=SortedList)  # (gpus, seq, job_id): LGF
    _deadlines: dict[str, float] = field(default_factory=dict)  # profiling job → end of its slot
    _runs: dict[str, ProfileRun] = field(default_factory=dict)
    # what profiling runs measured, by job id; kept after a job moves on (Lucid scores and
    # estimates with it); a plain dict because the binder reads it for every candidate host
    metrics: dict[str, Metrics] = field(default_factory=dict)
    _seq: int = 0

    @property
    def discards(self) -> bool:
        """Whether runs cut at T_prof lose their progress (needs the engine patch)."""
        return not self.keep_progress and ENGINE_CAN_DISCARD

    def setup(self, cluster: ClusterSpec) -> None:
        scale = max(0, min(self.scale, len(cluster.nodes) - 1))
        self.pool = np.zeros(len(cluster.nodes), dtype=bool)
        self.pool[:scale] = True
        self.pool.setflags(write=False)
        self.scale = scale
        self.gpu_limit = int(scale * self.factor)

    def can_profile(self, job: JobState, cluster: ClusterSpec) -> bool:
        """Lucid's rule: at most scale × factor GPUs, and the job must fit the pool."""
        n = job.spec.num_gpus
        if self.pool is None or not self.pool.any() or n > self.gpu_limit:
            return False
        eligible = cluster.eligible_mask(job.spec.gpu_types, job.spec.vc) & self.pool
        return int(cluster.capacity()[eligible].sum()) >= n

    # -------------------------------------------------------------------- per-job state
    def run_of(self, job_id: str) -> ProfileRun | None:
        """The profiler's state of a job it has queued (None for one it never saw)."""
        return self._runs.get(job_id)

    def measured(self, job_id: str) -> Metrics | None:
        """What the job's profiling run measured, or None (never profiled, or nothing measured)."""
        return self.metrics.get(job_id)

    def _unqueue(self, job: JobState) -> None:
        run = self._runs.get(job.job_id)
        if run is not None and run.key is not None:
            self._queue.discard(run.key)
            run.key = None

    # -------------------------------------------------------------------- queue
    def enqueue(self, job: JobState) -> None:
        self._seq += 1
        key = (job.spec.num_gpus, self._seq, job.job_id)
        self._runs.setdefault(job.job_id, ProfileRun()).key = key
        self._queue.add(key)

    def __len__(self) -> int:
        return len(self._queue)

    def running(self) -> int:
        return len(self._deadlines)

    def on_start(self, job: JobState, view: ClusterView) -> None:
        self._unqueue(job)
        deadline = view.now + self.t_prof
        self._deadlines[job.job_id] = deadline
        run = self._runs.setdefault(job.job_id, ProfileRun())
        run.started = view.now
        self.stats.profiled += 1
        self.stats.queue_seconds += view.now - job.spec.submit_time
        metrics = self.measure(job)
        if metrics is not None:
            self.metrics[job.job_id] = metrics
            self.stats.measured += 1
        view.wake_at(deadline)

    def measure(self, job: JobState) -> Metrics | None:
        """What a profiling run of `job` records (looked up by its workload attributes)."""
        return self.table.lookup(job.spec.attributes) if self.table is not None else None

    def on_leave(self, job: JobState, view: ClusterView, finished: bool) -> None:
        """A profiling run ended: the job finished there, or was cut at T_prof."""
        if self._deadlines.pop(job.job_id, None) is None:
            return
        run = self._runs.get(job.job_id)
        started = run.started if run is not None and run.started is not None else view.now
        spent = (view.now - started) * job.spec.num_gpus
        self.stats.gpu_seconds += spent
        if finished:
            self.stats.finished_in_profiler += 1
        else:
            self.stats.moved_on += 1
            self.stats.lost_gpu_seconds += spent if self.discards else 0.0

    def drop(self, job: JobState) -> None:
        self._unqueue(job)

    # -------------------------------------------------------------------- one pass
    def step(self, view: ClusterView, plan: Plan, base: Placer, admit_new: bool = True) -> None:
        """Stop runs whose slot is over, then start queued jobs Least-GPU-First in the pool."""
        now = view.now
        for job_id, deadline in list(self._deadlines.items()):
            if deadline <= now + 1e-9:
                job = view.job(job_id)
                if job.phase.is_terminal or job.job_id in plan.preempted:
                    continue
                if self.discards:
                    plan.preempt(job, discard_progress=True)
                else:
                    plan.preempt(job)
        if not admit_new or not self._queue or self.pool is None:
            return
        placer = MaskedPlacer(base, self.pool)
        for _, _, job_id in self._queue:
            job = view.job(job_id)
            if not job.phase.is_waiting:
                continue
            if not plan.try_start(job, placer=placer, profiling=True):
                break  # strict Least-GPU-First, as Lucid's profiler

    def deadlines(self) -> Mapping[str, float]:
        return self._deadlines

    def info(self) -> dict[str, Any]:
        return {"t_prof": self.t_prof, "scale": self.scale, "gpu_limit": self.gpu_limit, **self.stats.as_dict()}
