"""Job model: what a trace says about a job, and the mutable state the engine keeps for it.

A `JobSpec` is immutable input (from a trace loader or generator). The engine wraps each spec in a
`JobState`, which only the engine mutates; policies read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class FinalStatus(str, Enum):
    """How the job ended in the trace (what it will do when its run time is used up)."""

    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class Phase(str, Enum):
    """Lifecycle: queued → (profiling) → running ⇄ preempted → completed / failed / cancelled."""

    PENDING = "pending"  # not yet submitted
    QUEUED = "queued"
    PROFILING = "profiling"
    RUNNING = "running"
    PREEMPTED = "preempted"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def is_terminal(self) -> bool:
        return self in (Phase.COMPLETED, Phase.FAILED, Phase.CANCELLED)

    @property
    def is_waiting(self) -> bool:
        return self in (Phase.QUEUED, Phase.PREEMPTED)


@dataclass(frozen=True, slots=True)
class ParallelPlan:
    """3D parallelism of a job: tensor (`tp`), pipeline (`pp`) and data (`dp`) parallel degrees.

    GPUs = tp·pp·dp. Megatron's rank order is assumed (TP innermost, then DP, then PP), so a TP
    group should sit inside a node and a PP stage's DP replicas as close as the topology allows.
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1

    def __post_init__(self) -> None:
        if min(self.tp, self.pp, self.dp) < 1:
            raise ValueError(f"parallel degrees must be >= 1, got tp={self.tp} pp={self.pp} dp={self.dp}")

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def model_parallel(self) -> int:
        """GPUs holding one model replica (tp·pp): the unit an elastic job grows or shrinks by."""
        return self.tp * self.pp

    def with_gpus(self, n: int) -> ParallelPlan:
        """The same model split on `n` GPUs (only `dp` changes); `n` must be a multiple of tp·pp."""
        if n < 1 or n % self.model_parallel:
            raise ValueError(f"{n} GPUs do not hold whole replicas of tp={self.tp} x pp={self.pp}")
        return ParallelPlan(self.tp, self.pp, n // self.model_parallel)

    def __str__(self) -> str:
        return f"TP{self.tp}xPP{self.pp}xDP{self.dp}"


def per_gpu_batch(global_batch: int | float, n: int) -> float:
    """Fixed global batch on `n` data-parallel GPUs: each gets global/n samples (Ares, Arena).

    Scaling out keeps the optimisation the same (same global batch, same number of steps), so
    progress carries over a resize unchanged and only the step time changes."""
    if n < 1:
        raise ValueError("a job needs at least one GPU")
    return global_batch / n


@dataclass(frozen=True, slots=True)
class JobSpec:
    """One job as the trace describes it.

    `duration` is the run time at the requested scale, in seconds. For a failed or cancelled job it
    is the run time until the failure or cancellation (what traces record); the job then ends with
    `status` once it has run that long. `work` is the run time the job would need to complete; it
    equals `duration` unless the source knows more (a resumed failed job redoes only what it lost).
    """

    job_id: str
    submit_time: float
    num_gpus: int
    duration: float
    status: FinalStatus = FinalStatus.COMPLETED
    user: str | None = None
    vc: str | None = None
    name: str | None = None
    gpu_types: tuple[str, ...] | None = None  # allowed GPU types; None = any
    work: float | None = None
    attributes: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    code_dir: str | None = None
    log_file: str | None = None
    plan: ParallelPlan | None = None
    global_batch: int | None = None

    def __post_init__(self) -> None:
        if self.num_gpus < 1:
            raise ValueError(f"job {self.job_id}: num_gpus must be >= 1, got {self.num_gpus}")
        if self.duration < 0 or self.submit_time < 0:
            raise ValueError(f"job {self.job_id}: negative duration or submit time")
        if self.plan is not None and self.plan.gpus != self.num_gpus:
            raise ValueError(f"job {self.job_id}: plan {self.plan} has {self.plan.gpus} GPUs, asks {self.num_gpus}")
        if self.global_batch is not None and self.global_batch < 1:
            raise ValueError(f"job {self.job_id}: global_batch must be >= 1")

    @property
    def total_work(self) -> float:
        return self.duration if self.work is None else self.work

    @property
    def gpu_time(self) -> float:
        return self.duration * self.num_gpus


Placement = tuple[tuple[int, int], ...]
"""GPUs a job holds: ((node_index, gpu_count), ...), sorted by node index."""


@dataclass(slots=True)
class JobState:
    """Engine-owned state of one job. Policies read it; only the engine writes it."""

    spec: JobSpec
    phase: Phase = Phase.PENDING
    placement: Placement = ()
    num_gpus: int = 0  # GPUs currently held (0 when not running)
    colocated_with: str | None = None  # job sharing this job's GPUs
    progress: float = 0.0  # seconds of work done at the requested scale
    checkpoint: float = 0.0  # progress saved at the last checkpoint
    run_time: float = 0.0  # wall seconds spent running (incl. restart overhead)
    attained_gpu_time: float = 0.0  # GPU-seconds received (Tiresias' LAS service)
    wasted_gpu_time: float = 0.0  # GPU-seconds whose progress was lost to failures
    speed: float = 0.0  # work-seconds per wall-second now
    last_update: float = 0.0
    overhead_until: float = 0.0  # no progress before this time (restart cost)
    first_start: float | None = None
    end_time: float | None = None
    restarts: int = 0
    failures: int = 0
    failed_once: bool = False
    version: int = 0  # bumps when the job's finish time may change; stale events are dropped
    plan: ParallelPlan | None = None  # parallelism of the current (or last) run; None: plain DP
    resizes: int = 0  # Resize decisions applied (also counted in `restarts`)
    evictions: int = 0  # times evicted from shared GPUs
    cancel_reason: str | None = None  # why a job ended cancelled at submission (unschedulable / rejected)
    failed_node: int | None = None  # node of the last failure, when the failure source knows it
    # Trace metadata and annotations that integrations attach (e.g. `failed_logs`). Policies keep
    # their own per-job state in typed structures of their own, not here.
    info: dict[str, Any] = field(default_factory=dict)
    # (time, speed, progress at that time) at every change of speed: the job's simulated history,
    # from which the simulator writes what its log would say (progress only after restart cost)
    speed_log: list[tuple[float, float, float]] = field(default_factory=list)

    def progress_at(self, t: float) -> float:
        """Work done by wall time `t` (≤ the last update), from `speed_log`."""
        done = 0.0
        for t0, speed, p0 in self.speed_log:
            if t0 > t:
                break
            done = p0 + speed * (t - t0)
        return done

    @property
    def job_id(self) -> str:
        return self.spec.job_id

    @property
    def remaining(self) -> float:
        """Work left until the trace's end of this job (completion, failure or cancellation)."""
        target = self.spec.duration if not self.failed_once else self.spec.total_work
        return max(0.0, target - self.progress)
