"""Standalone SchedMate (spec §5.3, §8.3): SJF on the advisor's estimate, plus a Failure Handler.

Scheduling. Non-preemptive shortest-job-first (optional first-fit backfilling, as `OrderedPolicy`).
A job's estimate is `AdvisorInsight.duration_top3_s` (mean duration of the 3 most similar
historical jobs) from the `InsightSource`, asked once at its first arrival; the job becomes
schedulable after the advisor's `latency_s`. A job without a match (no insight, no similar job
or no top-3 duration) falls back to a history estimate like QSSF's: an `OnlineDurationModel`
over the jobs that finished so far (running mean per VC/user × GPU count, then a regression
tree), re-estimated for every queued fallback job when the model is refitted. Ties break on
the time the job (re-)entered the queue, then the job id.

Failures (`on_failure`, after the engine ran a FAILED spec's `duration`; progress goes back to
the last checkpoint, `SimConfig.checkpoint_interval`):
- without the handler, or when the handler does not say "infrastructure" (undiagnosed or an
  application error): the no-FH path. `on_failure` returns False; with
  `SimConfig.resubmit_delay` = D the engine ends the attempt and the user resubmits the job D
  later as a new arrival (same estimate, new tie-break time); JCT counts from the first submit.
- diagnosed infrastructure: the job resumes from its checkpoint with its original priority
  after `diagnosis_s` + `recovery_s` (10 s + 300 s); the node it failed on (the first node of
  its placement) is cordoned at once and uncordoned when the recovery is over (a replaced node).
- a false positive (the ground truth says application error): the resumed job fails again as
  soon as it has restarted (after the restart overhead, when it would reach the bug). There is
  no second diagnosis (at most one retry): it is stopped and takes the no-FH path, the user
  resubmitting it `user_resubmit_s` later. Its restart GPU time is counted as lost.

The ground truth of a failure comes from the source's `failure_truth(job, attempt)` when it has
one (`FailureTruth`, the semantic simulator's, which draws its own category), else from the
injected failure recorded in `spec.attributes` by `failures_sim`. It is used only for counters
and for false positives, never for the decision itself. `attempt` passed to `diagnose` and
`failure_truth` is the 0-based index of the failed run (0 = the first), as `semantic_sim`
numbers them; the engine lets a job fail once, so the handler is asked at most once per job.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

from schedmate.integrations.failures_sim import failure_of, is_infrastructure
from schedmate.integrations.insights import InsightSource
from schedmate.schedulers.decisions import Cordon, Decision, Uncordon
from schedmate.schedulers.engine import SimResult
from schedmate.schedulers.job import JobState, Phase
from schedmate.schedulers.policy import ClusterView, Plan, Policy
from schedmate.schedulers.predictor import OnlineDurationModel

__all__ = [
    "FailureCounters",
    "FailureTruth",
    "StandaloneConfig",
    "StandaloneSchedMate",
    "gpu_hours_lost",
    "make_standalone",
    "true_infrastructure",
]

_EST, _KEY, _FEATS, _SOURCE = "sm_estimate", "sm_key", "sm_features", "sm_estimate_source"
_READY, _SEQ = "sm_ready_at", "sm_seq"
_EPS = 1e-6


@runtime_checkable
class FailureTruth(Protocol):
    """Ground truth of a failed attempt (`semantic_sim.SimulationInsights` has it): a
    `FailureInsight`, a category name ("infrastructure", "framework", "script") or a bool
    (True: infrastructure); None when unknown. `attempt` is numbered as for `diagnose`."""

    def failure_truth(self, job: JobState, attempt: int) -> object: ...


def true_infrastructure(source: object, job: JobState, attempt: int) -> bool | None:
    """Whether the failed attempt really was an infrastructure failure (None: unknown)."""
    if isinstance(source, FailureTruth):
        truth = is_infrastructure(source.failure_truth(job, attempt))
        if truth is not None:
            return truth
    return is_infrastructure(failure_of(job.spec))


@dataclass(frozen=True)
class StandaloneConfig:
    failure_handler: bool = False
    diagnosis_s: float = 10.0
    recovery_s: float = 300.0
    user_resubmit_s: float = 3600.0  # no-FH delay after a false positive's second failure
    backfill: bool = False
    window: int = 256


@dataclass
class FailureCounters:
    """What the failure handling did in one run (GPU-seconds; `gpu_hours_lost` adds the engine's)."""

    failures: int = 0  # failed attempts seen by on_failure
    diagnosed: int = 0  # the handler returned a diagnosis
    resumed: int = 0  # diagnosed infrastructure and resumed from checkpoint (incl. false positives)
    true_positives: int = 0
    false_positives: int = 0  # application errors resumed; they fail again at once
    missed_infra: int = 0  # real infrastructure failures that took the no-FH path
    user_resubmits: int = 0  # no-FH path, including false positives after their second failure
    cordoned_nodes: int = 0  # cordon events (one per resumed failure)
    uncordoned_nodes: int = 0
    false_positive_gpu_s: float = 0.0  # GPU time of false positives' doomed restarts

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class StandaloneSchedMate(Policy):
    """SJF on `duration_top3_s` with an optional Failure Handler (module docstring)."""

    def __init__(
        self,
        source: InsightSource,
        config: StandaloneConfig | None = None,
        *,
        model: OnlineDurationModel | None = None,
    ) -> None:
        self.source = source
        self.config = config or StandaloneConfig()
        self.name = "schedmate+fh" if self.config.failure_handler else "schedmate"
        if self.config.backfill:
            self.name += "+bf"
        self.model = model or OnlineDurationModel()
        self.counters = FailureCounters()
        self._fits_seen = 0
        self._seq = 0
        self._heap: list[tuple[tuple[float, float, str], int, str]] = []
        self._held: list[tuple[float, int, str]] = []  # (ready at, seq, job id)
        self._cordon_now: list[int] = []
        self._cordon_until: dict[int, float] = {}
        self._uncordon_at: list[tuple[float, int]] = []
        self._doomed: dict[str, float] = {}  # false positives: job id -> restart time, once relaunched
        self._doomed_waiting: set[str] = set()  # false positives not yet relaunched

    # ---------------------------------------------------------------- arrival and queue
    def on_arrival(self, job: JobState, view: ClusterView) -> None:
        if _EST not in job.info:  # first submission: ask the advisor, then become history
            insight = self.source.advise(job)
            self.source.record(job, finished=False)
            job.info[_FEATS] = self.model.features(job.spec)
            if insight is not None and insight.matched and insight.duration_top3_s is not None:
                job.info[_EST], job.info[_SOURCE] = float(insight.duration_top3_s), "advisor"
            else:
                job.info[_EST], job.info[_SOURCE] = self._fallback(job), "history"
            ready = view.now + (insight.latency_s if insight is not None else 0.0)
        else:  # the user resubmitted it after a failure: a new arrival with the same estimate
            ready = view.now
        job.info[_KEY] = (job.info[_EST], view.now, job.job_id)
        self._hold_or_enqueue(job, ready, view)

    def on_requeue(self, job: JobState, view: ClusterView) -> None:
        """Back from a handled failure (resume) or a false positive's second failure (resubmit)."""
        self._hold_or_enqueue(job, job.info.pop(_READY, view.now), view)

    def _fallback(self, job: JobState) -> float:
        return self.model.predict(job.spec, job.info.get(_FEATS))

    def _hold_or_enqueue(self, job: JobState, ready: float, view: ClusterView) -> None:
        self._seq += 1
        if ready > view.now + _EPS:
            heapq.heappush(self._held, (ready, self._seq, job.job_id))
            view.wake_at(ready)
        else:
            heapq.heappush(self._heap, (job.info[_KEY], self._seq, job.job_id))
            job.info[_SEQ] = self._seq  # marks the live entry; older ones are dropped as stale

    def _release_held(self, view: ClusterView) -> None:
        while self._held and self._held[0][0] <= view.now + _EPS:
            _, _, job_id = heapq.heappop(self._held)
            job = view.job(job_id)
            if job.phase.is_waiting:
                self._hold_or_enqueue(job, view.now, view)

    def _refresh_fallbacks(self, view: ClusterView) -> None:
        """After a refit, re-estimate queued jobs that had no advisor match (as QSSF does)."""
        if self.model.fits == self._fits_seen:
            return
        self._fits_seen = self.model.fits
        live = [(seq, view.job(job_id)) for _, seq, job_id in self._heap if self._live(seq, view.job(job_id))]
        fallback = [j for _, j in live if j.info.get(_SOURCE) == "history"]
        for job, est in zip(fallback, self.model.predict_many([j.spec for j in fallback]), strict=True):
            job.info[_EST] = est
            job.info[_KEY] = (est, *job.info[_KEY][1:])
        self._heap = [(j.info[_KEY], seq, j.job_id) for seq, j in live]
        heapq.heapify(self._heap)

    @staticmethod
    def _live(seq: int, job: JobState) -> bool:
        return job.phase.is_waiting and job.info.get(_SEQ) == seq

    # ---------------------------------------------------------------- scheduling
    def schedule(self, view: ClusterView) -> Sequence[Decision]:
        self._release_held(view)
        self._refresh_fallbacks(view)
        plan = view.plan()
        self._apply_cordons(plan, view)
        self._fail_doomed(plan, view)
        self._start_in_order(plan, view)
        return plan.decisions

    def _start_in_order(self, plan: Plan, view: ClusterView) -> None:
        heap, skipped = self._heap, []
        while heap and plan.free_total > 0:
            entry = heap[0]
            job = view.job(entry[2])
            if not self._live(entry[1], job):
                heapq.heappop(heap)
                continue
            if plan.try_start(job):
                heapq.heappop(heap)
                job.info.pop(_SEQ, None)
                continue
            if not self.config.backfill or len(skipped) >= self.config.window:
                break
            skipped.append(heapq.heappop(heap))
        for entry in skipped:
            heapq.heappush(heap, entry)

    def _apply_cordons(self, plan: Plan, view: ClusterView) -> None:
        """Cordon nodes of newly diagnosed failures; uncordon those whose recovery is over.

        The decisions go first and the plan's usable mask is updated, so starts stay valid."""
        while self._uncordon_at and self._uncordon_at[0][0] <= view.now + _EPS:
            _, node = heapq.heappop(self._uncordon_at)
            if self._cordon_until.get(node, 0.0) <= view.now + _EPS and node in self._cordon_until:
                del self._cordon_until[node]
                plan.usable[node] = True
                plan.decisions.append(Uncordon(node))
                self.counters.uncordoned_nodes += 1
        for node in self._cordon_now:
            plan.usable[node] = False
            plan.decisions.append(Cordon(node))
        self._cordon_now.clear()

    def _fail_doomed(self, plan: Plan, view: ClusterView) -> None:
        """False positives fail again once their restart is over: stop them, the user resubmits."""
        for job_id, restart_at in list(self._doomed.items()):
            job = view.job(job_id)
            if job.phase is not Phase.RUNNING:
                continue
            if job.overhead_until > view.now + _EPS:
                view.wake_at(job.overhead_until)
                continue
            del self._doomed[job_id]
            self.counters.false_positive_gpu_s += (view.now - restart_at) * job.num_gpus
            self.counters.user_resubmits += 1
            job.info["sm_failed_again"] = True
            ready = view.now + self.config.user_resubmit_s
            job.info[_READY] = ready
            job.info[_KEY] = (job.info[_EST], ready, job.job_id)  # a new arrival when resubmitted
            plan.preempt(job)

    # ---------------------------------------------------------------- events
    def on_start(self, job: JobState, view: ClusterView) -> None:
        if job.job_id in self._doomed_waiting:
            self._doomed_waiting.discard(job.job_id)
            self._doomed[job.job_id] = view.now
            view.wake_at(max(view.now, job.overhead_until))

    def on_failure(self, job: JobState, view: ClusterView) -> bool:
        c = self.counters
        c.failures += 1
        attempt = job.failures - 1  # 0 = the first run, as semantic_sim numbers failed attempts
        truth = true_infrastructure(self.source, job, attempt)
        insight = self.source.diagnose(job, attempt=attempt) if self.config.failure_handler else None
        c.diagnosed += insight is not None
        if insight is None or not insight.infrastructure:
            c.missed_infra += truth is True
            c.user_resubmits += 1
            return False  # no-FH path: the engine's resubmit_delay (the user) takes over
        c.resumed += 1
        if truth is False:
            c.false_positives += 1
            self._doomed_waiting.add(job.job_id)
        else:
            c.true_positives += 1
        ready = view.now + self.config.diagnosis_s + self.config.recovery_s
        if job.placement:
            node = job.placement[0][0]
            self._cordon_now.append(node)
            self._cordon_until[node] = max(self._cordon_until.get(node, 0.0), ready)
            heapq.heappush(self._uncordon_at, (ready, node))
            c.cordoned_nodes += 1
        job.info[_READY] = ready  # on_requeue holds it until then; original priority (_KEY kept)
        view.wake_at(ready)
        return True

    def on_finish(self, job: JobState, view: ClusterView) -> None:
        job.info.pop(_SEQ, None)
        if job.end_time is None:
            return  # a failed attempt the user will resubmit (engine resubmit_delay): not the end
        if _EST not in job.info:
            return  # cancelled at submission: never seen
        self.source.record(job, finished=True)
        if job.phase is Phase.COMPLETED:
            self.model.observe(job.spec, job.spec.total_work, job.info.get(_FEATS))


def gpu_hours_lost(result: SimResult, policy: Policy | None = None) -> float:
    """GPU-hours lost to failures: progress lost back to checkpoints (the engine's wasted GPU
    time) plus, for SchedMate+FH, the doomed restarts of false positives."""
    wasted = sum(j.wasted_gpu_time for j in result.jobs)
    extra = policy.counters.false_positive_gpu_s if isinstance(policy, StandaloneSchedMate) else 0.0
    return (wasted + extra) / 3600.0


def make_standalone(source: InsightSource, *, failure_handler: bool = False, **options: Any) -> StandaloneSchedMate:
    """`StandaloneSchedMate` with `StandaloneConfig(failure_handler, **options)`."""
    return StandaloneSchedMate(source, StandaloneConfig(failure_handler=failure_handler, **options))

