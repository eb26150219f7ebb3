"""Test doubles shipped with the engine: an invariant-checking policy wrapper and `check_policy`.

`CheckedPolicy` sits between the engine and any policy and checks the cluster's books at every hook
the engine calls (after every applied decision and every event): no over-commit, GPUs in use equal
the running jobs' placements (a co-located pair counted once), no start before submission, the
clock never goes back, a running job's plan matches its GPU count. It forwards every `Policy`
method, capabilities included, so the wrapped policy runs exactly as it would alone.

`check_policy(factory)` runs a policy under the wrapper on a small random trace (or the jobs given)
and checks the end state: every job ends exactly once, books empty, restarts counted. Use it in a
new policy's tests; `tests/test_registry.py` runs it over every registered policy.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .cluster import ClusterSpec
from .decisions import Decision
from .engine import SimConfig, SimResult, Simulator
from .job import FinalStatus, JobSpec, JobState, Phase, Placement
from .placement import Placer
from .policy import ClusterView, Policy

RUNNING = (Phase.RUNNING, Phase.PROFILING)


class InvariantViolation(AssertionError):
    """The engine's books or a policy's hooks broke an invariant (an `AssertionError` for pytest)."""


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise InvariantViolation(message)


class CheckedPolicy(Policy):
    """Wraps a policy; checks the engine's books at every hook; counts what happened to each job.

    `resubmit=True` answers on_failure with True (resume from checkpoint) to exercise requeues.
    """

    def __init__(self, inner: Policy, *, resubmit: bool = False) -> None:
        self.inner = inner
        self.name = inner.name
        self.round_interval = inner.round_interval
        self.progress_interval = inner.progress_interval
        self.resubmit = resubmit
        self.finished: Counter[str] = Counter()
        self.started: Counter[str] = Counter()
        self.checks = 0
        self.last_now = -math.inf

    def check(self, view: ClusterView) -> None:
        self.checks += 1
        _require(view.now >= self.last_now, f"time went back from {self.last_now} to {view.now}")
        self.last_now = view.now
        capacity, free = view.cluster.capacity(), view.free
        _require(bool((free >= 0).all()), f"over-committed: free {free}")
        _require(view.free_gpus() == int(free.sum()), "free_gpus() disagrees with the free vector")
        used = np.zeros_like(capacity)
        counted: set[str] = set()
        for job in view.running():
            _require(job.phase in RUNNING, f"{job.job_id} listed as running but is {job.phase.value}")
            _require(job.spec.submit_time <= view.now, f"{job.job_id} runs before its submission")
            _require(job.num_gpus == sum(k for _, k in job.placement) >= 1, f"{job.job_id}: GPU count != placement")
            if job.plan is not None:
                _require(job.plan.gpus == job.num_gpus, f"{job.job_id}: plan {job.plan} on {job.num_gpus} GPUs")
            partner = job.colocated_with
            if partner is not None:
                other = view.job(partner)
                _require(
                    other.colocated_with == job.job_id and other.placement == job.placement,
                    f"{job.job_id} and {partner} disagree about sharing GPUs",
                )
                if partner in counted:
                    continue  # shared GPUs count once
            counted.add(job.job_id)
            for node, k in job.placement:
                used[node] += k
        _require(bool(np.array_equal(used, capacity - free)), f"used {used} != capacity {capacity} - free {free}")
        for job in view.waiting():
            _require(job.phase.is_waiting and job.num_gpus == 0 and job.placement == (), f"{job.job_id} waits holding GPUs")
            _require(job.spec.submit_time <= view.now, f"{job.job_id} waits before its submission")

    # capabilities: forwarded unchanged
    def throughput(self, job: JobState, placement: Placement, view: ClusterView) -> float:
        return self.inner.throughput(job, placement, view)

    def run_stats(self) -> dict[str, Any]:
        return self.inner.run_stats()

    def restart_cost(self, job: JobState, n_gpus: int, view: ClusterView) -> float | None:
        return self.inner.restart_cost(job, n_gpus, view)

    # hooks: check, then delegate
    def admit(self, job: JobState, view: ClusterView) -> bool:
        return self.inner.admit(job, view)

    def schedule(self, view: ClusterView) -> Sequence[Decision]:
        self.check(view)
        return self.inner.schedule(view)

    def optimize(self, view: ClusterView) -> Sequence[Decision]:
        self.check(view)
        return self.inner.optimize(view)

    def on_arrival(self, job: JobState, view: ClusterView) -> None:
        _require(job.phase is Phase.QUEUED, f"{job.job_id} arrives {job.phase.value}")
        self.check(view)
        self.inner.on_arrival(job, view)

    def on_start(self, job: JobState, view: ClusterView) -> None:
        _require(view.now >= job.spec.submit_time, f"{job.job_id} started before its submission")
        self.started[job.job_id] += 1
        self.check(view)
        self.inner.on_start(job, view)

    def on_finish(self, job: JobState, view: ClusterView) -> None:
        if job.phase.is_terminal and job.end_time is not None:  # not a failed attempt to resubmit
            _require(job.end_time == view.now, f"{job.job_id} ends at {job.end_time}, now is {view.now}")
            self.finished[job.job_id] += 1
        self.check(view)
        self.inner.on_finish(job, view)

    def on_failure(self, job: JobState, view: ClusterView) -> bool:
        self.check(view)
        return self.inner.on_failure(job, view) or self.resubmit

    def on_requeue(self, job: JobState, view: ClusterView) -> None:
        self.check(view)
        self.inner.on_requeue(job, view)

    def on_progress(self, job: JobState, view: ClusterView) -> None:
        self.inner.on_progress(job, view)


def random_trace(
    num_jobs: int = 30, *, seed: int = 0, max_gpus: int = 8, horizon: float = 3600.0, failures: bool = True
) -> list[JobSpec]:
    """A small contended trace: Poisson-ish arrivals, mostly small jobs, some failing or cancelled."""
    rng = np.random.default_rng(seed)
    statuses = [FinalStatus.COMPLETED] * 8 + ([FinalStatus.FAILED, FinalStatus.CANCELLED] if failures else [])
    sizes = [g for g in (1, 1, 1, 2, 2, 4, 8, 16) if g <= max_gpus]
    return [
        JobSpec(
            job_id=f"r{i}",
            submit_time=float(np.round(rng.uniform(0, horizon))),
            num_gpus=int(rng.choice(sizes)),
            duration=float(np.round(rng.lognormal(6.0, 1.2), 1)),
            status=statuses[int(rng.integers(len(statuses)))],
            user=f"u{int(rng.integers(3))}",
        )
        for i in range(num_jobs)
    ]


@dataclass(frozen=True)
class PolicyCheck:
    """What `check_policy` ran and saw."""

    result: SimResult
    checked: CheckedPolicy


def check_policy(
    factory: Callable[[], Policy],
    jobs: Sequence[JobSpec] | None = None,
    cluster: ClusterSpec | None = None,
    *,
    config: SimConfig | None = None,
    placer: Placer | None = None,
    resubmit: bool = False,
    seed: int = 0,
    num_jobs: int = 30,
) -> PolicyCheck:
    """Run a fresh policy under `CheckedPolicy` and check the end state; raises `InvariantViolation`.

    Default workload: `random_trace(num_jobs, seed=seed)` made runnable by the policy
    (`Policy.prepare_jobs`) on a 2×8-GPU cluster; the books are checked at every hook on the way."""
    policy = factory()
    jobs = list(jobs) if jobs is not None else type(policy).prepare_jobs(random_trace(num_jobs, seed=seed))
    cluster = cluster or ClusterSpec.parse("2x8")
    checked = CheckedPolicy(policy, resubmit=resubmit)
    result = Simulator(jobs, cluster, checked, config or SimConfig(seed=seed), placer=placer).run()
    _require(len(result.jobs) == len(jobs), "the result lost jobs")
    for job in result.jobs:
        spec = job.spec
        _require(checked.finished[job.job_id] == 1, f"{job.job_id} ended {checked.finished[job.job_id]} times")
        _require(job.phase.is_terminal and job.end_time is not None, f"{job.job_id} did not end")
        assert job.end_time is not None
        _require(spec.submit_time <= job.end_time <= result.end_time, f"{job.job_id} ends outside the run")
        _require(job.num_gpus == 0 and job.placement == () and job.colocated_with is None, f"{job.job_id} kept GPUs")
        if job.first_start is not None:
            _require(spec.submit_time <= job.first_start <= job.end_time, f"{job.job_id} started out of order")
        _require(job.restarts == max(0, checked.started[job.job_id] - 1), f"{job.job_id}: restarts miscounted")
        if job.phase is Phase.COMPLETED:
            target = spec.total_work if job.failed_once else spec.duration
            _require(abs(job.progress - target) <= 1e-3 * max(1.0, target), f"{job.job_id} completed short of its work")
    _require(int(result.cluster.capacity().sum()) >= 0 and result.busy_gpu_seconds >= 0, "negative busy time")
    return PolicyCheck(result, checked)
