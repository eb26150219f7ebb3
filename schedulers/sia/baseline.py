"""A heterogeneity-unaware FIFO baseline on Sia's throughput model (`sia-fifo`).

What a plain cluster scheduler does with Sia's workloads: jobs run in submission order on exactly
the GPUs they asked for (`num_replicas`) at their submitted batch size (no elasticity, no batch
size tuning), never preempted. The GPU type is chosen without looking at job speed: the type with
the most free GPUs that can hold the job (spreading load), best-fit nodes within it. A job larger
than every type's capacity spans types and runs at the slowest type's pace. `backfill=True` lets
later jobs start when the head of the queue does not fit.

It owns a `SiaThroughput` like `Sia` does and answers `Policy.throughput` from it, so the engine
runs both on the same model.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..decisions import Decision, Start
from ..job import JobSpec, JobState, Placement
from ..placement import Consolidate
from ..policy import ClusterView, Policy
from .configs import cluster_types
from .jobs import SiaThroughput, as_sia_jobs


class SiaFIFO(Policy):
    name = "sia-fifo"

    def __init__(self, *, backfill: bool = False, throughput: SiaThroughput | None = None, root: Path | str | None = None) -> None:
        self.backfill = backfill
        if backfill:
            self.name = "sia-fifo+bf"
        self.speed_model = throughput or SiaThroughput(root)
        self._placer = Consolidate()

    def _place(self, view: ClusterView, job: JobState, free: np.ndarray, n: int) -> Placement | None:
        usable = ~view.cordoned
        types = cluster_types(view.cluster, usable)
        masks = []
        for info in types.values():
            mask = np.zeros(len(view.cluster.nodes), dtype=bool)
            mask[list(info.nodes)] = True
            masks.append((int(free[mask].sum()), info.capacity, mask))
        masks.sort(key=lambda m: -m[0])  # most free GPUs first: load balancing, not speed
        for avail, _cap, mask in masks:
            if avail >= n:
                pl = self._placer.place(job, free, mask, n, view.cluster)
                if pl is not None:
                    return pl
        if all(cap < n for _, cap, _ in masks):  # no single type is big enough: span types
            return self._placer.place(job, free, usable, n, view.cluster)
        return None

    def throughput(self, job: JobState, placement: Placement, view: ClusterView) -> float:
        return self.speed_model(job, view.cluster)

    @classmethod
    def prepare_jobs(cls, jobs: Sequence[JobSpec]) -> list[JobSpec]:
        return as_sia_jobs(jobs)

    def schedule(self, view: ClusterView) -> Sequence[Decision]:
        free = view.free.copy()
        out: list[Decision] = []
        for job in sorted(view.waiting(), key=lambda j: (j.spec.submit_time, j.job_id)):
            pl = self._place(view, job, free, job.spec.num_gpus)
            if pl is None:
                if self.backfill:
                    continue
                break
            for node, k in pl:
                free[node] -= k
            out.append(Start(job.job_id, pl))
        return out
