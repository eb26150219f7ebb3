"""QSSF (Helios, SC'21): quasi-shortest-service-first on *predicted* GPU time.

Service = predicted duration × GPUs, from an online model of thin metadata trained only on jobs
that have already finished (`OnlineDurationModel`). Each retrain re-estimates the whole queue in
one batch: in an overloaded cluster most jobs arrive before the first model exists, and a
one-shot guess at arrival would freeze the queue in an uninformed order. Non-preemptive,
optional backfilling.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..decisions import Decision
from ..job import JobState, Phase
from ..policy import ClusterView
from ..predictor import OnlineDurationModel
from .ordered import OrderedPolicy


@dataclass(slots=True)
class QSSFJob:
    """Per-job state: the model's features of the job and its current predicted duration."""

    features: Any
    predicted: float


class QSSF(OrderedPolicy):
    name = "qssf"

    def __init__(self, *, model: OnlineDurationModel | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.model = model or OnlineDurationModel()
        self._fits_seen = 0
        self._jobs: dict[str, QSSFJob] = {}

    def predicted_duration(self, job_id: str) -> float | None:
        """The current prediction for a job seen here (None before it was first queued)."""
        state = self._jobs.get(job_id)
        return None if state is None else state.predicted

    def priority(self, job: JobState, view: ClusterView) -> object:
        if job.job_id not in self._jobs:
            features = self.model.features(job.spec)
            self._jobs[job.job_id] = QSSFJob(features, self.model.predict(job.spec, features))
        return self._key(job)

    def _key(self, job: JobState) -> object:
        return (self._jobs[job.job_id].predicted * job.spec.num_gpus, job.spec.submit_time, job.job_id)

    def schedule(self, view: ClusterView) -> Sequence[Decision]:
        if self.model.fits != self._fits_seen:
            self._fits_seen = self.model.fits
            self._requeue_all(view)
        return super().schedule(view)

    def _requeue_all(self, view: ClusterView) -> None:
        jobs = [j for j in view.waiting() if j.job_id in self._queued]
        for job, pred in zip(jobs, self.model.predict_many([j.spec for j in jobs]), strict=True):
            self._jobs[job.job_id].predicted = pred
        self._heap = [(self._key(j), i, j.job_id) for i, j in enumerate(jobs)]
        heapq.heapify(self._heap)
        self._seq = len(jobs)

    def on_finish(self, job: JobState, view: ClusterView) -> None:
        if job.phase is not Phase.CANCELLED or job.run_time > 0:
            state = self._jobs.get(job.job_id)
            self.model.observe(job.spec, job.spec.duration, state.features if state else None)
