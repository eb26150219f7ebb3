"""Preemptive reallocation shared by SRTF and Tiresias: serve jobs in priority order, greedily.

Walk candidates (running and waiting) best first, keep the ones whose GPUs fit the capacity, then
preempt running jobs that were not kept and start waiting ones that were. A job that does not fit
is skipped (at most `window` skips), so a large job cannot block smaller ones behind it.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..decisions import Decision
from ..job import JobState, Phase
from ..policy import ClusterView


def capacity(view: ClusterView) -> int:
    cap = view.cluster.capacity()
    return int(cap[~view.cordoned].sum())


def reallocate(view: ClusterView, ordered: Iterable[JobState], window: int = 256) -> list[Decision]:
    cap = capacity(view)
    kept: list[JobState] = []
    kept_ids: set[str] = set()
    used = skips = 0
    for job in ordered:
        running = job.phase in (Phase.RUNNING, Phase.PROFILING)
        n = job.num_gpus if running else job.spec.num_gpus
        if running and job.colocated_with is not None:
            n = 0 if job.colocated_with in kept_ids else n  # shared GPUs count once
        if used + n <= cap:
            kept.append(job)
            kept_ids.add(job.job_id)
            used += n
        else:
            skips += 1
        if used >= cap or skips > window:
            break
    plan = view.plan()
    for job in list(view.running()):
        if job.job_id not in kept_ids:
            plan.preempt(job)
    for job in kept:
        if job.phase.is_waiting:
            plan.try_start(job)
    return plan.decisions
