"""Preemptive reallocation shared by SRTF and Tiresias: serve jobs in priority order, greedily.

Walk candidates (running and waiting) best first, keep the ones whose GPUs fit the capacity, then
preempt running jobs that were not kept and start waiting ones that were. A job that does not fit
is skipped (at most `window` skips), so a large job cannot block smaller ones behind it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..decisions import Decision
from ..job import JobState, Phase
from ..policy import ClusterView


def capacity(view: ClusterView) -> int:
    cap = view.cluster.capacity()
    return int(cap[~view.cordoned].sum())


def reallocate(view: ClusterView, ordered: Iterable[JobState], window: int = 256) -> list[Decision]:
    """Keep the best jobs that fit by GPU count; preempt the other running ones, start the rest.

    Counting GPUs ignores where a job may run (GPU types, cordons): a kept waiting job can still
    fail to place. Then the selection is redone without it, so that nobody is preempted on behalf
    of a job that would not start (each pass drops at least one job, and such jobs are rare).
    """
    source = iter(ordered)
    walked: list[JobState] = []  # the part of `ordered` read so far, so a redo can re-read it

    def candidates() -> Iterator[JobState]:
        i = 0
        while True:
            if i == len(walked):
                job = next(source, None)
                if job is None:
                    return
                walked.append(job)
            yield walked[i]
            i += 1

    unplaceable: set[str] = set()
    while True:
        kept = _select(view, candidates(), window, unplaceable)
        kept_ids = {job.job_id for job in kept}
        plan = view.plan()
        for job in list(view.running()):
            if job.job_id not in kept_ids:
                plan.preempt(job)
        failed = [job.job_id for job in kept if job.phase.is_waiting and not plan.try_start(job)]
        if not failed:
            return plan.decisions
        unplaceable.update(failed)


def _select(view: ClusterView, ordered: Iterable[JobState], window: int, excluded: set[str]) -> list[JobState]:
    cap = capacity(view)
    kept: list[JobState] = []
    kept_ids: set[str] = set()
    used = skips = 0
    for job in ordered:
        if job.job_id in excluded:
            continue
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
    return kept
