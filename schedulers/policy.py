"""Policy plug-in interface (after Blox and Gavel): admission, scheduling, placement, rounds, hooks.

A policy never mutates engine state. It reads a `ClusterView`, builds decisions (usually through a
`Plan`, which tracks the GPUs those decisions free and take so they are valid by construction) and
returns them; the engine validates and applies them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .cluster import ClusterSpec
from .decisions import Colocate, Decision, Preempt, Resize, Start
from .job import JobSpec, JobState, ParallelPlan, Phase, Placement
from .placement import Placer

if TYPE_CHECKING:
    from .engine import Simulator


class ClusterView:
    """Read-only window on the simulation for policies."""

    __slots__ = ("_sim",)

    def __init__(self, sim: Simulator) -> None:
        self._sim = sim

    @property
    def now(self) -> float:
        return self._sim.now

    @property
    def cluster(self) -> ClusterSpec:
        return self._sim.cluster

    @property
    def placer(self) -> Placer:
        return self._sim.placer

    @property
    def rng(self) -> np.random.Generator:
        return self._sim.rng

    @property
    def free(self) -> np.ndarray:
        view = self._sim.free.view()
        view.flags.writeable = False
        return view

    @property
    def cordoned(self) -> np.ndarray:
        view = self._sim.cordoned.view()
        view.flags.writeable = False
        return view

    def free_gpus(self) -> int:
        return self._sim.free_total

    def waiting(self) -> Iterable[JobState]:
        """Queued and preempted jobs, in the order they (re-)entered the queue."""
        return self._sim.waiting.values()

    def num_waiting(self) -> int:
        return len(self._sim.waiting)

    def running(self) -> Iterable[JobState]:
        """Running and profiling jobs, in start order."""
        return self._sim.running.values()

    def job(self, job_id: str) -> JobState:
        return self._sim.jobs[job_id]

    def progress(self, job: JobState) -> float:
        """Work done so far, including the part since the engine last updated the job."""
        return job.progress + job.speed * max(0.0, self.now - max(job.last_update, job.overhead_until))

    def attained_gpu_time(self, job: JobState) -> float:
        running = job.phase in (Phase.RUNNING, Phase.PROFILING)
        return job.attained_gpu_time + (job.num_gpus * (self.now - job.last_update) if running else 0.0)

    def remaining(self, job: JobState) -> float:
        """Oracle work left (for oracle policies such as SRTF)."""
        return max(0.0, job.remaining - (self.progress(job) - job.progress))

    def base_speed(self, job: JobState, placement: Placement) -> float:
        """The engine's placement-blind speed of `job` on `placement`: its `scaling` at that GPU
        count times the slowest GPU type's relative speed (`Policy.throughput`'s default)."""
        return self._sim.base_speed(job.spec, placement)

    def wake_at(self, time: float) -> None:
        """Ask for `schedule` to be called again at `time` even if nothing else happens."""
        self._sim.request_wakeup(time)

    def plan(self) -> Plan:
        return Plan(self)


class Plan:
    """Decisions under construction with the free GPUs they leave, so each one stays valid."""

    def __init__(self, view: ClusterView) -> None:
        self.view = view
        self.free = view._sim.free.copy()
        self.free_total = view._sim.free_total  # the engine keeps it equal to free.sum()
        self.usable = ~view._sim.cordoned
        self.decisions: list[Decision] = []
        self.preempted: set[str] = set()
        self.started: set[str] = set()

    def _eligible(self, job: JobState) -> np.ndarray:
        return self.view.cluster.eligible_mask(job.spec.gpu_types, job.spec.vc) & self.usable

    def try_start(
        self,
        job: JobState,
        num_gpus: int | None = None,
        placer: Placer | None = None,
        *,
        profiling: bool = False,
        plan: ParallelPlan | None = None,
    ) -> bool:
        """Place and start `job` if it fits now; False (and nothing recorded) otherwise.

        `plan` is the parallelism to run with (default: the job's plan scaled to `num_gpus`)."""
        n = job.spec.num_gpus if num_gpus is None else num_gpus
        if n > self.free_total or job.job_id in self.started:
            return False
        placement = (placer or self.view.placer).place(job, self.free, self._eligible(job), n, self.view.cluster)
        if placement is None:
            return False
        for node, k in placement:
            self.free[node] -= k
        self.free_total -= n
        self.started.add(job.job_id)
        self.decisions.append(Start(job.job_id, placement, profiling, plan))
        return True

    def try_resize(
        self, job: JobState, num_gpus: int, placer: Placer | None = None, *, plan: ParallelPlan | None = None
    ) -> bool:
        """Grow or shrink a running `job` to `num_gpus` (elastic scaling); False if it cannot.

        The placer sees the job's own GPUs as free, so it may keep them or move the job. The job
        keeps its progress and pays the restart cost (`Resize`); with a fixed global batch its
        per-GPU batch becomes `per_gpu_batch(global_batch, num_gpus)`."""
        if job.phase not in (Phase.RUNNING, Phase.PROFILING) or job.colocated_with is not None:
            return False
        if job.job_id in self.preempted or job.job_id in self.started or num_gpus < 1:
            return False
        free = self.free.copy()
        for node, k in job.placement:
            free[node] += k
        if num_gpus > self.free_total + job.num_gpus:
            return False
        placement = (placer or self.view.placer).place(job, free, self._eligible(job), num_gpus, self.view.cluster)
        if placement is None:
            return False
        for node, k in placement:
            free[node] -= k
        self.free = free
        self.free_total += job.num_gpus - num_gpus
        self.started.add(job.job_id)
        self.decisions.append(Resize(job.job_id, placement, plan))
        return True

    def preempt(self, job: JobState, *, discard_progress: bool = False) -> None:
        """Stop `job`; with `discard_progress` its run was a measurement and its progress is lost."""
        if job.job_id in self.preempted:
            return
        if job.colocated_with is None or job.colocated_with in self.preempted:
            for node, k in job.placement:
                self.free[node] += k
            self.free_total += job.num_gpus
        self.preempted.add(job.job_id)
        self.decisions.append(Preempt(job.job_id, discard_progress))

    def colocate(self, job: JobState, host: JobState) -> None:
        self.started.add(job.job_id)
        self.decisions.append(Colocate(job.job_id, host.job_id))


class Policy:
    """Base class: every hook is optional. Subclasses override what they need.

    - `admit`: admission control at arrival (a rejected job ends as cancelled, never runs).
    - `schedule`: called after every batch of simultaneous events that changed something.
    - `optimize`: called every `round_interval` seconds while jobs are active (Sia/Pollux rounds).
    - `on_*`: event hooks for bookkeeping; `on_failure` returns True to requeue the job from its
      last checkpoint instead of ending it; `on_requeue` follows every return to the queue.

    Capabilities are methods with defaults, never attributes found by name, so a wrapper that
    forwards every method forwards them too:
    - `throughput(job, placement, view)`: the job's speed on a placement (placement-dependent
      speed models such as topology slowdowns or goodput); default `view.base_speed`.
    - `restart_cost(job, n_gpus, view)`: seconds without progress when `job` (re)launches on
      `n_gpus`; default None, the engine's own cost (`SimConfig`).
    - `run_stats()`: counters for reports (rounds, solver time, ...); default empty.

    Per-job state a policy needs lives in the policy (e.g. `dict[str, MyJobState]`), not in
    `job.info`; engine facts are typed `JobState` fields.
    """

    name: str = "policy"
    round_interval: float | None = None
    progress_interval: float | None = None

    def admit(self, job: JobState, view: ClusterView) -> bool:
        return True

    def throughput(self, job: JobState, placement: Placement, view: ClusterView) -> float:
        """Work-seconds per wall second of `job` on `placement` (1.0 = the trace's pace).

        Called when the job starts, moves, resizes, or on `Refresh`; co-location factors apply
        on top. `job.plan` is the parallelism the job runs with there. Override to model
        placement-dependent speed; multiply `view.base_speed(job, placement)` to keep the
        engine's scaling and GPU-type speeds."""
        return view.base_speed(job, placement)

    def restart_cost(self, job: JobState, n_gpus: int, view: ClusterView) -> float | None:
        """Seconds `job` makes no progress after launching on `n_gpus` GPUs; None: the engine's
        default (the job's `attributes["restart_cost"]`, else `SimConfig`'s 40 s / 60 s).

        Asked at every restart (preemption, resize, migration, requeue), and at a first launch
        too when `SimConfig.charge_first_launch` is on: then `job.first_start` is still None.
        The job is already placed (`job.placement`, `job.plan`, `job.phase`: PROFILING for a
        profiling run), so a cost may depend on the plan, the GPU count or the phase."""
        return None

    def run_stats(self) -> dict[str, Any]:
        """Counters of this run for reports (JSON-serialisable); empty by default."""
        return {}

    @classmethod
    def prepare_jobs(cls, jobs: Sequence[JobSpec]) -> list[JobSpec]:
        """Generic trace jobs made runnable by this policy (default: unchanged).

        A policy whose speed model needs per-job artefacts (Sia: an application's measured
        profiles) fills them in, so `testing.check_policy` can run every registered policy on one
        random trace."""
        return list(jobs)

    def schedule(self, view: ClusterView) -> Sequence[Decision]:
        return ()

    def optimize(self, view: ClusterView) -> Sequence[Decision]:
        return ()

    def on_arrival(self, job: JobState, view: ClusterView) -> None: ...

    def on_start(self, job: JobState, view: ClusterView) -> None: ...

    def on_finish(self, job: JobState, view: ClusterView) -> None: ...

    def on_failure(self, job: JobState, view: ClusterView) -> bool:
        return False

    def on_requeue(self, job: JobState, view: ClusterView) -> None:
        """A running job went back to the queue (preempted, evicted or resubmitted)."""

    def on_progress(self, job: JobState, view: ClusterView) -> None: ...
