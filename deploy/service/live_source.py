"""`LiveInsights`: an `InsightSource` over the SchedMate service, for a live cluster.

The Lucid, Sia and standalone adapters ask an `InsightSource`; this one forwards each question to
the service (`SchedMateClient`, over HTTP or in process through FastAPI's TestClient), so the
adapters run unchanged against real jobs. A job is mapped to what the service reads by a
resolver: by default `job.info["repo" | "command" | "log"]`, else the spec's `code_dir`,
`attributes["command"]` and `log_file`. Any service error (timeout, 429, 503, no answer) or a
`fallback` answer becomes None, "SchedMate does not know", and the adapter keeps the reference
scheduler's behaviour; the counters say how often that happened.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from schedmate.adapters.insights import (
    NO_FAILSLOW,
    AdvisorInsight,
    FailSlowSignal,
    FailureInsight,
    InsightSource,
    TrackerReading,
)
from schedmate.deploy.service.client import SchedMateClient, ServiceError
from schedmate.schedulers.job import FinalStatus, JobState, Phase

__all__ = ["JobRef", "LiveInsights", "job_ref_from_info"]

FAILED_LOGS_KEY = "failed_logs"  # as `simlogs.FAILED_LOGS_KEY`: {attempt: log path of that attempt}


@dataclass(frozen=True)
class JobRef:
    """Where a job's code, launch command and log are (paths as the service sees them)."""

    repo: str | None = None
    command: str | None = None
    log: str | None = None


Resolver = Callable[[JobState], JobRef]


def job_ref_from_info(job: JobState) -> JobRef:
    info, spec = job.info, job.spec
    return JobRef(repo=info.get("repo") or spec.code_dir, command=info.get("command") or spec.attributes.get("command"),
                  log=info.get("log") or spec.log_file)


_STATUS = {Phase.COMPLETED: FinalStatus.COMPLETED, Phase.FAILED: FinalStatus.FAILED,
           Phase.CANCELLED: FinalStatus.CANCELLED}


class LiveInsights(InsightSource):
    """`InsightSource` over a `SchedMateClient` (see the module docstring); a live source has no
    `SimulatedWorld` hooks."""

    def __init__(self, client: SchedMateClient, *, resolver: Resolver = job_ref_from_info) -> None:
        self.client = client
        self.resolver = resolver
        self._counts: Counter[str] = Counter()
        self._monitors: dict[str, Any] = {}  # job id -> FailSlowMonitor over its log

    def advise(self, job: JobState) -> AdvisorInsight | None:
        ref = self.resolver(job)
        self._counts["advise_calls"] += 1
        if not ref.repo or not ref.command:
            self._counts["no_artefact"] += 1
            return None
        t0 = time.perf_counter()
        try:
            resp = self.client.advise(ref.repo, ref.command, gpus=job.spec.num_gpus, job_id=job.job_id,
                                      user=job.spec.user)
        except ServiceError as exc:
            self._error("advise", exc)
            return None
        latency = time.perf_counter() - t0
        if not resp.matches:
            self._counts["advise_unmatched"] += 1
            return None
        est = resp.estimate
        self._counts["advise_matched" if est is not None else "advise_no_outcome"] += 1
        return AdvisorInsight(
            similar_ids=tuple(m.job_id for m in resp.matches),
            duration_s=est.duration_s if est else None, duration_top3_s=est.duration_top3_s if est else None,
            sm_util=est.sm_util if est else None, gpu_mem_gb=est.gpu_memory_gb if est else None, latency_s=latency)

    def track(self, job: JobState, *, event_at: float, now: float) -> TrackerReading | None:
        """`event_at` must be on the clock of the log's stamps (POSIX seconds for a live job)."""
        ref = self.resolver(job)
        self._counts["track_calls"] += 1
        if not ref.log:
            self._counts["track_no_log"] += 1
            return None
        try:
            resp = self.client.track(ref.log, job_id=job.job_id, split_at=event_at)
        except ServiceError as exc:
            self._error("track", exc)
            return None
        if resp.ratio is None:  # no signal on one side, too few lines after, or no common unit
            self._counts["track_no_signal"] += 1
            return None
        return TrackerReading(before=resp.before, after=resp.after)

    def failslow(self, job: JobState, *, now: float, since: float | None = None) -> FailSlowSignal:
        """The fail-slow detector over the job's log, read here (the log path must be readable by
        this process; the service has no fail-slow call yet), incrementally between calls.
        `since`: on the clock of `time.time()` (when this source first read the onset line)."""
        from schedmate.agents.tracker.failslow import FailSlowMonitor

        ref = self.resolver(job)
        self._counts["failslow_calls"] += 1
        if not ref.log:
            self._counts["failslow_no_log"] += 1
            return NO_FAILSLOW
        mon = self._monitors.get(job.job_id)
        if mon is None:
            mon = self._monitors[job.job_id] = FailSlowMonitor(ref.log)
        try:
            mon.poll()
        except OSError:
            self._counts["failslow_errors"] += 1
            return NO_FAILSLOW
        alert = mon.detector.current()
        if alert is None or (since is not None and (mon.onset_time(alert) or 0.0) < since):
            return FailSlowSignal.of(None)
        self._counts["failslow_detected"] += 1
        return FailSlowSignal.of(alert)

    def diagnose(self, job: JobState, *, attempt: int) -> FailureInsight | None:
        log = (job.info.get(FAILED_LOGS_KEY) or {}).get(attempt) or self.resolver(job).log
        self._counts["diagnose_calls"] += 1
        if not log:
            self._counts["diagnose_no_log"] += 1
            return None
        t0 = time.perf_counter()
        try:
            resp = self.client.diagnose(str(log), job_id=job.job_id, num_gpus=job.spec.num_gpus)
        except ServiceError as exc:
            self._error("diagnose", exc)
            return None
        if resp.status != "failure_found" or resp.category is None:
            self._counts["diagnose_no_failure_found"] += 1
            return None
        return FailureInsight(infrastructure=bool(resp.infrastructure), category=resp.category,
                              reason=resp.reason_code or "", component=resp.component, action=resp.action,
                              latency_s=time.perf_counter() - t0)

    def record(self, job: JobState, *, finished: bool) -> None:
        ref = self.resolver(job)
        if not ref.repo or not ref.command:
            return
        try:
            if not finished:
                self.client.register(job.job_id, ref.repo, ref.command, gpus=job.spec.num_gpus, user=job.spec.user,
                                     log=ref.log)
                self._counts["recorded_arrivals"] += 1
                return
            status = _STATUS.get(job.phase, job.spec.status)
            duration = job.run_time if job.run_time > 0 else job.spec.duration
            log = ref.log if status is FinalStatus.FAILED else None
            self.client.end(job.job_id, status=status.value, duration_s=duration, log=log)
            self._counts["recorded_finished"] += 1
        except ServiceError as exc:
            self._error("record", exc)

    def stats(self) -> dict[str, Any]:
        return {"source": "live", **dict(self._counts)}

    def _error(self, op: str, exc: ServiceError) -> None:
        self._counts[f"{op}_errors"] += 1
        self._counts[f"{op}_status_{exc.status or 'none'}"] += 1
        return None
