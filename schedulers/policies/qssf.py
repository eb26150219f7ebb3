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

from ..decisions import Decision
from ..job import JobState, Phase
from ..policy import ClusterView
from ..predictor import OnlineDurationModel
from .ordered import OrderedPolicy


class QSSF(OrderedPolicy):
    name = "qssf"

    def __init__(self, *, model: OnlineDurationModel | None = None, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.model = model or OnlineDurationModel()
        self._fits_seen = 0

    def priority(self, job: JobState, view: ClusterView) -> object:
        if "qssf_features" not in job.info:
            job.info["qssf_features"] = self.model.features(job.spec)
            job.info["predicted_duration"] = self.model.predict(job.spec, job.info["qssf_features"])
        return self._key(job)

    @staticmethod
    def _key(job: JobState) -> object:
        return (job.info["predicted_duration"] * job.spec.num_gpus, job.spec.submit_time, job.job_id)

    def schedule(self, view: ClusterView) -> Sequence[Decision]:
        if self.model.fits != self._fits_seen:
            self._fits_seen = self.model.fits
            self._requeue_all(view)
        return super().schedule(view)

    def _requeue_all(self, view: ClusterView) -> None:
        jobs = [j for j in view.waiting() if j.job_id in self._queued]
        for job, pred in zip(jobs, self.model.predict_many([j.spec for j in jobs]), strict=True):
            job.info["predicted_duration"] = pred
        self._heap = [(self._key(j), i, j.job_id) for i, j in enumerate(jobs)]
        heapq.heapify(self._heap)
        self._seq = len(jobs)

    def on_finish(self, job: JobState, view: ClusterView) -> None:
        if job.phase is not Phase.CANCELLED or job.run_time > 0:
            self.model.observe(job.spec, job.spec.duration, job.info.get("qssf_features"))
