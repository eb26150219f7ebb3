"""Decisions a policy returns. The engine validates each one and applies it, in order."""

from __future__ import annotations

from dataclasses import dataclass

from .job import ParallelPlan, Placement


@dataclass(frozen=True, slots=True)
class Start:
    """Run a waiting job on `placement` (its GPU count may differ from the request: elastic).

    `plan` is the parallelism to run with; None keeps the job's plan, scaled in `dp` to the GPU
    count (a plain data-parallel job keeps none)."""

    job_id: str
    placement: Placement
    profiling: bool = False
    plan: ParallelPlan | None = None


@dataclass(frozen=True, slots=True)
class Preempt:
    """Stop a running job, checkpoint it and put it back in the queue.

    With `discard_progress` the run was a measurement, not training (e.g. a profiling run): the
    job goes back with no progress, and the GPU time it received counts as wasted.
    """

    job_id: str
    discard_progress: bool = False


@dataclass(frozen=True, slots=True)
class Resize:
    """Elastic resize: move a running job to a placement with another GPU count (or another
    `plan`, e.g. more pipeline stages). It keeps its progress and pays the restart cost."""

    job_id: str
    placement: Placement
    plan: ParallelPlan | None = None


@dataclass(frozen=True, slots=True)
class Migrate:
    """Move a running job to other GPUs of the same count (pays the restart cost)."""

    job_id: str
    placement: Placement


@dataclass(frozen=True, slots=True)
class Colocate:
    """Start a waiting job on the GPUs of a running job, sharing them (speeds from interference)."""

    job_id: str
    host_id: str


@dataclass(frozen=True, slots=True)
class Evict:
    """Remove a co-located job from shared GPUs and requeue it."""

    job_id: str


@dataclass(frozen=True, slots=True)
class Refresh:
    """Re-evaluate a running job's speed (its throughput model changed: batch size, efficiency)."""

    job_id: str


@dataclass(frozen=True, slots=True)
class Cordon:
    """Take a node out of placement (e.g. after an infrastructure failure); running jobs stay."""

    node: int


@dataclass(frozen=True, slots=True)
class Uncordon:
    node: int


Decision = Start | Preempt | Resize | Migrate | Colocate | Evict | Refresh | Cordon | Uncordon


class InvalidDecision(Exception):
    """A policy asked for something impossible; the message names the policy and the decision."""

    def __init__(self, policy: str, decision: object, reason: str) -> None:
        super().__init__(f"policy {policy!r} made an invalid decision {decision!r}: {reason}")
        self.policy = policy
        self.decision = decision
        self.reason = reason
