"""Standalone SchedMate (spec §5.3, §8.3): two readings of "SJF on the advisor", plus a Failure Handler.

**SchedMate-SJF** (`StandaloneSchedMate`, the paper's words): non-preemptive shortest-job-first
on the advisor's `duration_top3_s` (mean duration of the 3 most similar historical jobs), asked
at the job's first arrival; the job is schedulable after the advisor's measured `latency_s`.
Unmatched jobs fall back to a QSSF-like history model of finished jobs (`OnlineDurationModel`),
re-estimated on every refit. First-fit backfilling optional.

**SchedMate-SRPT** (`SchedMateSRPT`): preemptive shortest remaining *predicted GPU-time*, in
60 s rounds with the engine's restart cost (40 s / 60 s, the same as Tiresias). A matched job's
key is estimate × GPUs − attained GPU-time. Waiting jobs that have never run are re-asked for
advice whenever the history of finished jobs has grown by 10% (≥ 20 jobs) since their last
answer. **Fallback rule** (unmatched jobs, and jobs whose attained service exceeds their
estimate): the job's key is its **Gittins index** in remaining-service units,
    key(a) = min_Δ E[min(S − a, Δ) | S > a] / P(S − a ≤ Δ | S > a),
over the empirical distribution S of the GPU-time service that finished jobs received (a:
the job's attained GPU-time). This is the index that minimises mean response time when sizes are
unknown (Gittins; Scully & Harchol-Balter's SOAP), it equals the remaining service for a job of
known size (so both kinds compare on one scale, with no tuned weight), and wherever the service
distribution has a decreasing hazard (the heavy tail of GPU clusters) it increases with
attained service, i.e. it is least-attained-service ordering among unknown jobs (where the
hazard rises, e.g. the body of a log-normal, it lets a job that has started finish first).
Before 20 jobs have finished, the predicted GPU-times of the jobs matched so far stand in for
the distribution; until five sizes are known, and beyond the largest one, the index is the
attained service itself (pure LAS). The index is taken at the start of the job's service class
[2^k, 2^(k+1)) GPU-seconds (doubling classes, as multi-level feedback queues discretise LAS), so a
job's key changes at most log2(size) times and equal jobs do not swap GPUs every round.

**Failure Handler** (`failure_handler`): on a failed attempt the handler is asked for a
diagnosis (`InsightSource.diagnose`; `failures_sim.CauseDiagnosis` gives it the log of the
attempt's true cause), thinned by `detection_rate` (a hash draw per job and attempt). A diagnosed
infrastructure failure resumes the job from its last checkpoint with its original priority after
the diagnosis's measured `latency_s` + `recovery_s` (300 s), and cordons the failed node (the
host whose task died, `job.failed_node`); the world repairs and returns the node. A job
that fails again with no progress since its last resume (a restarted application error) is not
resumed a second time. Everything else takes the world's no-handler path (`failures_sim`).

Per-job state is the policy's own (`SchedMateJob`, `job_state(job_id)`), never `job.info`; it
stays after a job ends, so reports can read where each estimate came from.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

from schedmate.adapters.insights import InsightSource, SimulatedWorld
from schedmate.adapters.registry import detected
from schedmate.schedulers.decisions import Cordon, Decision, Uncordon
from schedmate.schedulers.engine import SimResult
from schedmate.schedulers.job import JobState, Phase
from schedmate.schedulers.policies.realloc import reallocate
from schedmate.schedulers.policy import ClusterView, Plan, Policy
from schedmate.schedulers.predictor import OnlineDurationModel

__all__ = [
    "FailureCounters",
    "GittinsFallback",
    "SchedMateJob",
    "SchedMateSRPT",
    "StandaloneConfig",
    "StandaloneSchedMate",
    "gpu_hours_lost",
    "make_standalone",
]

_EPS = 1e-6
SJFKey = tuple[float, float, str]  # (estimate, queued at, job id)


@dataclass(slots=True)
class SchedMateJob:
    """SchedMate's state of one job, from its first arrival on."""

    estimate: float | None = None  # predicted duration (s); SRPT leaves an unmatched job's None
    source: Literal["advisor", "history"] = "history"  # where `estimate` came from
    features: list[float] = field(default_factory=list)  # the history model's features at arrival
    key: SJFKey | None = None  # SJF: queue key (original priority, kept across a handled failure)
    seq: int | None = None  # SJF: the live heap entry; older entries are stale
    ready_at: float | None = None  # resumed after a handled failure: held until then
    gittins: tuple[float, float, int, float] | None = None  # SRPT: frozen fallback (index, until, fit size, class)


@dataclass(frozen=True)
class StandaloneConfig:
    failure_handler: bool = False
    recovery_s: float = 300.0
    detection_rate: float = 1.0  # share of failed attempts the handler gets to diagnose
    seed: int = 0  # for the detection draw
    backfill: bool = False
    window: int = 256
    round_s: float = 60.0  # SRPT rounds
    reestimate: bool = True  # SRPT: re-ask advice for waiting jobs as history grows
    min_history: int = 20  # SRPT: finished jobs before the fallback uses their service
    failslow: bool = False  # SJF: move a fail-slow job off its suspect node (see `_SchedMate._failslow`)
    failslow_check_s: float = 300.0  # how often running jobs' logs are checked for a slowdown
    failslow_min_ratio: float = 1.1  # act on slowdowns at least this large
    failslow_cordon_s: float = 3600.0  # a suspect node is out of placement this long, then tried again


@dataclass
class FailureCounters:
    """What the failure handling did in one run."""

    failures: int = 0  # failed attempts seen by on_failure
    undetected: int = 0  # thinned out by the detection rate
    diagnosed: int = 0  # the handler returned a diagnosis
    resumed: int = 0  # diagnosed infrastructure and resumed from checkpoint
    true_positives: int = 0
    false_positives: int = 0  # application errors resumed (the world fails them again at once)
    missed_infra: int = 0  # real infrastructure failures that took the no-handler path
    not_retried: int = 0  # failed again with no progress since a resume: not resumed twice
    cordons: int = 0
    diagnosis_latency_s: float = 0.0  # sum over diagnoses used

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class _SchedMate(Policy):
    """What both readings share: advice at arrival, the advisor's latency, the Failure Handler."""

    def __init__(self, source: InsightSource, config: StandaloneConfig | None, model: OnlineDurationModel | None) -> None:
        self.source = source
        self.config = config or StandaloneConfig()
        self.model = model or OnlineDurationModel()
        self.counters = FailureCounters()
        self._held: list[tuple[float, int, str]] = []  # (ready at, seq, job id)
        self._seq = 0
        self._cordon_now: list[int] = []
        self._resumed_at: dict[str, float] = {}  # job id -> progress when it was resumed
        self._jobs: dict[str, SchedMateJob] = {}
        self.failslow_counts: dict[str, int] = {"checks": 0, "detected": 0, "migrated": 0, "requeued": 0, "cordons": 0}
        self._fs_next = 0.0
        self._fs_cordoned: dict[int, float] = {}  # node -> until
        self._fs_acted: set[tuple[str, float]] = set()  # (job, attempt start) already moved

    # -------------------------------------------------------------- state
    def job_state(self, job_id: str) -> SchedMateJob:
        """The state of a job that has arrived (KeyError otherwise)."""
        return self._jobs[job_id]

    def estimate_source(self, job_id: str) -> str | None:
        """"advisor" or "history" for a job that arrived; None for one that never did."""
        state = self._jobs.get(job_id)
        return state.source if state is not None else None

    # -------------------------------------------------------------- advice
    def _ask(self, job: JobState) -> float:
        """Ask the advisor; sets the estimate and its source; returns the advisor's latency."""
        state = self._jobs.setdefault(job.job_id, SchedMateJob())
        insight = self.source.advise(job)
        if insight is not None and insight.matched and insight.duration_top3_s is not None:
            state.estimate, state.source = float(insight.duration_top3_s), "advisor"
        else:
            state.estimate, state.source = None, "history"
        return insight.latency_s if insight is not None else 0.0

    def _first_arrival(self, job: JobState, view: ClusterView) -> float:
        """Advice and history record at the first submission; the time the job becomes ready."""
        latency = self._ask(job)
        self.source.record(job, finished=False)
        self._jobs[job.job_id].features = self.model.features(job.spec)
        return view.now + latency

    def _hold(self, job: JobState, ready: float, view: ClusterView) -> bool:
        """Hold a job until `ready`; False when it is ready now."""
        if ready > view.now + _EPS:
            self._seq += 1
            heapq.heappush(self._held, (ready, self._seq, job.job_id))
            view.wake_at(ready)
            return True
        return False

    def _released(self, view: ClusterView) -> list[JobState]:
        out = []
        while self._held and self._held[0][0] <= view.now + _EPS:
            _, _, job_id = heapq.heappop(self._held)
            job = view.job(job_id)
            if job.phase.is_waiting:
                out.append(job)
        return out

    def _finished(self, job: JobState) -> bool:
        """Bookkeeping at a job's end; False for a failed attempt the user will resubmit."""
        state = self._jobs.get(job.job_id)
        if job.end_time is None or state is None:
            return False
        self.source.record(job, finished=True)
        if job.phase is Phase.COMPLETED:
            self.model.observe(job.spec, job.spec.total_work, state.features)
        return True

    # -------------------------------------------------------------- failure handler
    def on_failure(self, job: JobState, view: ClusterView) -> bool:
        c, cfg = self.counters, self.config
        c.failures += 1
        attempt = job.failures - 1  # 0 = the first failed run
        # the world's cause, for counters only (a live source knows none)
        truth = self.source.failure_truth(job, attempt) if isinstance(self.source, SimulatedWorld) else None
        if not cfg.failure_handler:
            return False
        if job.job_id in self._resumed_at and job.progress <= self._resumed_at[job.job_id] + _EPS:
            c.not_retried += 1  # the mitigation did not help: one retry only
            return False
        if not detected(job.job_id, cfg.seed, cfg.detection_rate, f"fh-{attempt}"):
            c.undetected += 1
            c.missed_infra += truth is True
            return False
        insight = self.source.diagnose(job, attempt=attempt)
        c.diagnosed += insight is not None
        if insight is None or not insight.infrastructure:
            c.missed_infra += truth is True
            return False
        c.resumed += 1
        c.true_positives += truth is True
        c.false_positives += truth is False
        c.diagnosis_latency_s += insight.latency_s
        node = job.failed_node
        if node is not None:
            self._cordon_now.append(int(node))
            c.cordons += 1
        ready = view.now + insight.latency_s + cfg.recovery_s
        self._jobs[job.job_id].ready_at = ready
        view.wake_at(ready)
        return True

    def _resume_at(self, job: JobState, view: ClusterView) -> float:
        """When a job back in the queue may run: after its recovery if the handler resumed it
        (noting its progress after the rollback to the checkpoint), else now."""
        state = self._jobs[job.job_id]
        if state.ready_at is None:
            return view.now
        self._resumed_at[job.job_id] = job.progress
        ready, state.ready_at = state.ready_at, None
        return ready

    def _failslow(self, plan: Plan, view: ClusterView) -> None:
        """Every `failslow_check_s`, ask the source whether each running job is fail-slow (from its
        log; `InsightSource.failslow`). A single-node job slowed by at least `failslow_min_ratio` makes
        its node a suspect: the node is cordoned for `failslow_cordon_s` and the job migrated to
        other GPUs (keeping its progress, paying the restart cost), or put back in the queue with
        its priority when nothing else fits. A multi-node job's log does not say which node, so
        it is left alone."""
        cfg = self.config
        for node, until in list(self._fs_cordoned.items()):
            if view.now >= until:
                del self._fs_cordoned[node]
                plan.usable[node] = True
                plan.decisions.append(Uncordon(node))
        running = [j for j in view.running() if j.colocated_with is None]
        if view.now < self._fs_next or not running:
            return
        self._fs_next = view.now + cfg.failslow_check_s
        view.wake_at(self._fs_next)
        for job in running:
            nodes = {n for n, _ in job.placement}
            attempt = (job.job_id, job.speed_log[-1][0] if job.speed_log else 0.0)
            if len(nodes) != 1 or job.job_id in plan.started or attempt in self._fs_acted:
                continue
            self.failslow_counts["checks"] += 1
            signal = self.source.failslow(job, now=view.now)
            if not signal.detected or (signal.ratio or 0.0) < cfg.failslow_min_ratio:
                continue
            self.failslow_counts["detected"] += 1
            self._fs_acted.add(attempt)
            (node,) = nodes
            if plan.usable[node]:
                plan.usable[node] = False
                plan.decisions.append(Cordon(node))
                self._fs_cordoned[node] = view.now + cfg.failslow_cordon_s
                self.failslow_counts["cordons"] += 1
            if plan.try_resize(job, job.num_gpus):
                self.failslow_counts["migrated"] += 1
            else:
                plan.preempt(job)
                self.failslow_counts["requeued"] += 1

    def _apply_cordons(self, plan: Plan) -> None:
        for node in dict.fromkeys(self._cordon_now):
            if plan.usable[node]:
                plan.usable[node] = False
                plan.decisions.append(Cordon(node))
        self._cordon_now.clear()


class StandaloneSchedMate(_SchedMate):
    """SchedMate-SJF: non-preemptive SJF on `duration_top3_s` (module docstring)."""

    def __init__(self, source: InsightSource, config: StandaloneConfig | None = None, *,
                 model: OnlineDurationModel | None = None) -> None:
        super().__init__(source, config, model)
        self.name = "schedmate-sjf+fh" if self.config.failure_handler else "schedmate-sjf"
        self._fits_seen = 0
        self._heap: list[tuple[tuple[float, float, str], int, str]] = []

    def on_arrival(self, job: JobState, view: ClusterView) -> None:
        if job.job_id not in self._jobs:
            ready = self._first_arrival(job, view)
            state = self._jobs[job.job_id]
            if state.estimate is None:
                state.estimate = self.model.predict(job.spec, state.features)
        else:  # the user resubmitted it after a failure: a new arrival with the same estimate
            ready = view.now
            state = self._jobs[job.job_id]
        assert state.estimate is not None  # SJF predicts every job when it arrives
        state.key = (state.estimate, view.now, job.job_id)
        if not self._hold(job, ready, view):
            self._enqueue(job)

    def on_requeue(self, job: JobState, view: ClusterView) -> None:
        """Back from a handled failure: original priority, held until the recovery is over."""
        if not self._hold(job, self._resume_at(job, view), view):
            self._enqueue(job)

    def _enqueue(self, job: JobState) -> None:
        self._seq += 1
        state = self._jobs[job.job_id]
        assert state.key is not None  # set before a job is queued
        heapq.heappush(self._heap, (state.key, self._seq, job.job_id))
        state.seq = self._seq  # marks the live entry; older ones are dropped as stale

    def _refresh_fallbacks(self, view: ClusterView) -> None:
        """After a refit, re-estimate queued jobs that had no advisor match (as QSSF does)."""
        if self.model.fits == self._fits_seen:
            return
        self._fits_seen = self.model.fits
        live = [(seq, view.job(job_id)) for _, seq, job_id in self._heap if self._live(seq, view.job(job_id))]
        fallback = [j for _, j in live if self._jobs[j.job_id].source == "history"]
        for job, est in zip(fallback, self.model.predict_many([j.spec for j in fallback]), strict=True):
            state = self._jobs[job.job_id]
            state.estimate = est
            assert state.key is not None  # a queued job has its key
            state.key = (est, state.key[1], state.key[2])
        heap: list[tuple[SJFKey, int, str]] = []
        for seq, j in live:
            key = self._jobs[j.job_id].key
            assert key is not None  # a queued job has its key
            heap.append((key, seq, j.job_id))
        self._heap = heap
        heapq.heapify(self._heap)

    def _live(self, seq: int, job: JobState) -> bool:
        return job.phase.is_waiting and self._jobs[job.job_id].seq == seq

    def schedule(self, view: ClusterView) -> Sequence[Decision]:
        for job in self._released(view):
            self._enqueue(job)
        self._refresh_fallbacks(view)
        plan = view.plan()
        self._apply_cordons(plan)
        if self.config.failslow:
            self._failslow(plan, view)
        heap = self._heap
        skipped: list[tuple[SJFKey, int, str]] = []
        while heap and plan.free_total > 0:
            entry = heap[0]
            job = view.job(entry[2])
            if not self._live(entry[1], job):
                heapq.heappop(heap)
                continue
            if plan.try_start(job):
                heapq.heappop(heap)
                self._jobs[job.job_id].seq = None
                continue
            if not self.config.backfill or len(skipped) >= self.config.window:
                break
            skipped.append(heapq.heappop(heap))
        for entry in skipped:
            heapq.heappush(heap, entry)
        return plan.decisions

    def on_finish(self, job: JobState, view: ClusterView) -> None:
        state = self._jobs.get(job.job_id)
        if state is not None:
            state.seq = None
        self._finished(job)


# ================================================================================= SRPT


class GittinsFallback:
    """Gittins index (as an effective remaining GPU-time) over a sample of job service times,
    with its optimal quantum Δ* (how much more service the index stays valid for)."""

    GRID = 96

    def __init__(self) -> None:
        self._sorted: np.ndarray = np.zeros(0)
        self._grid_a: np.ndarray = np.zeros(0)
        self._grid: list[tuple[float, float]] = []

    @property
    def size(self) -> int:
        return len(self._sorted)

    def fit(self, sample: Sequence[float]) -> None:
        s = np.sort(np.asarray([x for x in sample if x > 0], dtype=float))
        self._sorted = s
        if not len(s):
            self._grid_a, self._grid = np.zeros(0), []
            return
        self._grid_a = np.concatenate([[0.0], np.geomspace(max(1.0, s[0] / 2), s[-1], self.GRID)])
        self._grid = [self.exact(x) for x in self._grid_a]

    def exact(self, attained: float) -> tuple[float, float]:
        """(min over Δ of E[min(S − a, Δ) | S > a] / P(S − a ≤ Δ | S > a), the minimising Δ);
        (a, 0) when no sampled job ever received more than `a` (pure LAS beyond the data)."""
        s = self._sorted
        tail = s[np.searchsorted(s, attained, side="right"):] - attained
        m = len(tail)
        if m == 0:
            return float(attained), 0.0
        j = np.arange(1, m + 1)
        # m·E[min(S − a, Δ_j)] = Σ_{i≤j} tail_i + (m − j)·Δ_j and P = j / m, with Δ_j = tail_j
        ratio = (np.cumsum(tail) + (m - j) * tail) / j
        best = int(np.argmin(ratio))
        return float(ratio[best]), float(tail[best])

    def key(self, attained: float) -> tuple[float, float]:
        """(index, quantum) at `attained`, interpolated on a log grid of attained service."""
        if not len(self._grid_a) or attained >= self._grid_a[-1]:
            return float(attained), 0.0
        i = int(np.searchsorted(self._grid_a, attained, side="right")) - 1
        (k0, q0), (k1, _) = self._grid[i], self._grid[i + 1]
        a0, a1 = self._grid_a[i], self._grid_a[i + 1]
        w = (attained - a0) / (a1 - a0) if a1 > a0 else 0.0
        return float(k0 + w * (k1 - k0)), max(0.0, float(q0) - (attained - a0))


class SchedMateSRPT(_SchedMate):
    """SchedMate-SRPT: preemptive shortest remaining predicted GPU-time (module docstring).

    A fallback job's key is the Gittins index at the start of its service class [2^k, 2^(k+1))
    GPU-seconds (doubling classes, as multi-level feedback queues discretise LAS): within a
    class the key is fixed and ties go to the earlier submission, so two unknown jobs do not swap
    GPUs every round paying the restart cost each time, and a job's own service changes its key
    at most log2(its size) times."""

    def __init__(self, source: InsightSource, config: StandaloneConfig | None = None, *,
                 model: OnlineDurationModel | None = None) -> None:
        super().__init__(source, config, model)
        self.name = "schedmate-srpt+fh" if self.config.failure_handler else "schedmate-srpt"
        self._changed = True  # something happened since the last reallocation
        self._cross_at = math.inf  # earliest time a running job's key may pass the best ready one
        self._ready: dict[str, JobState] = {}  # waiting jobs past their advisor latency / recovery
        self._served: list[float] = []  # service (GPU-s) of finished jobs
        self._predicted: list[float] = []  # predicted GPU-time of matched jobs (early stand-in)
        self._fallback = GittinsFallback()
        self._fit_n = 0
        self._fit_served = False
        self._recorded = 0  # finished jobs recorded as history
        self._asked_at = 0  # history size at the last re-estimation

    # -------------------------------------------------------------- events
    def on_arrival(self, job: JobState, view: ClusterView) -> None:
        if job.job_id not in self._jobs:
            ready = self._first_arrival(job, view)
            predicted = self.predicted_gpu_s(job)
            if predicted is not None:
                self._predicted.append(predicted)
        else:  # resubmitted by its user after a failure
            ready = view.now
        self._changed = True
        if not self._hold(job, ready, view):
            self._ready[job.job_id] = job

    def on_requeue(self, job: JobState, view: ClusterView) -> None:
        self._changed = True
        if not self._hold(job, self._resume_at(job, view), view):
            self._ready[job.job_id] = job

    def on_start(self, job: JobState, view: ClusterView) -> None:
        self._ready.pop(job.job_id, None)

    def on_finish(self, job: JobState, view: ClusterView) -> None:
        self._ready.pop(job.job_id, None)
        self._changed = True
        if self._finished(job):
            self._recorded += 1
            self._served.append(job.attained_gpu_time)

    # -------------------------------------------------------------- keys
    def predicted_gpu_s(self, job: JobState) -> float | None:
        est = self._jobs[job.job_id].estimate
        return None if est is None else est * job.spec.num_gpus

    def key(self, job: JobState, view: ClusterView) -> float:
        """Remaining predicted GPU-time, or the Gittins fallback (module docstring)."""
        attained = view.attained_gpu_time(job)
        predicted = self.predicted_gpu_s(job)
        if predicted is not None and predicted - attained > 0:
            return predicted - attained
        state = self._jobs[job.job_id]
        frozen = state.gittins
        if frozen is not None and frozen[2] == self._fit_n and frozen[3] <= attained < frozen[1]:
            return frozen[0]
        low = 0.0 if attained < 1.0 else 2.0 ** math.floor(math.log2(attained))  # service class
        index = self._fallback.key(low)[0]
        state.gittins = (index, max(1.0, 2.0 * low), self._fit_n, low)
        return index

    def _refit(self) -> None:
        """Refit the fallback when its sample grew by 5% (+5 jobs) or finished jobs take over."""
        use_served = len(self._served) >= self.config.min_history
        sample = self._served if use_served else self._served + self._predicted
        if use_served == self._fit_served and len(sample) < self._fit_n * 1.05 + 5:
            return
        self._fit_served, self._fit_n = use_served, len(sample)
        self._fallback.fit(sample)
        self._changed = True

    def _reestimate(self) -> None:
        """Re-ask the advisor for ready jobs that never ran, once history has grown by 10% (≥ 20)."""
        if not self.config.reestimate or self._recorded - self._asked_at < max(20, 0.1 * self._asked_at):
            return
        self._asked_at = self._recorded
        self._changed = True
        for job in self._ready.values():
            if job.first_start is None:
                self._ask(job)

    def _order(self, jobs: list[JobState], view: ClusterView) -> list[JobState]:
        keyed = {j.job_id: (self.key(j, view), j.spec.submit_time, j.job_id) for j in jobs}
        return sorted(jobs, key=lambda j: keyed[j.job_id])

    # -------------------------------------------------------------- scheduling
    def schedule(self, view: ClusterView) -> Sequence[Decision]:
        """At a round boundary where a ready job outranks a running one: reallocate (preempt).
        Otherwise start ready jobs in key order in free GPUs (backfilling), no preemption.

        Rounds are not ticked: the policy wakes at the first boundary after the earliest time the
        order could change (a running job's key only moves when its prediction runs out or, for
        a fallback key, when its quantum is used up or, under pure LAS, when its attained
        service passes the best ready key); events (arrival, end, requeue) also wake it."""
        for job in self._released(view):
            self._ready[job.job_id] = job
            self._changed = True
        self._reestimate()
        self._refit()
        plan = view.plan()
        self._apply_cordons(plan)
        if plan.decisions:  # cordons first; the rest on the next call, over the new mask
            view.wake_at(view.now)
            return plan.decisions
        if not self._ready:
            return ()
        at_round = abs(view.now / self.config.round_s - round(view.now / self.config.round_s)) < 1e-9
        running = list(view.running())
        keys = {j.job_id: (self.key(j, view), j.spec.submit_time, j.job_id) for j in [*running, *self._ready.values()]}
        best = min(keys[j] for j in self._ready)
        contended = any(keys[j.job_id] > best for j in running)
        if at_round and contended and (self._changed or view.now + _EPS >= self._cross_at):
            self._changed = False
            order = sorted([*running, *self._ready.values()], key=lambda j: keys[j.job_id])
            decisions = reallocate(view, order, self.config.window)
        else:
            decisions = self._backfill(view, plan, keys)
        self._arm(view, running, best[0], contended)
        return decisions

    def _backfill(self, view: ClusterView, plan: Plan, keys: dict[str, tuple[float, float, str]]) -> list[Decision]:
        if plan.free_total < min(j.spec.num_gpus for j in self._ready.values()):
            return plan.decisions
        skips = 0
        for job in sorted(self._ready.values(), key=lambda j: keys[j.job_id]):
            if plan.free_total == 0 or skips > self.config.window:
                break
            if not plan.try_start(job):
                skips += 1
        return plan.decisions

    def _arm(self, view: ClusterView, running: list[JobState], best: float, contended: bool) -> None:
        """Wake at the boundary after the earliest time a running job's key can pass `best`."""
        def boundary(t: float) -> float:
            return math.ceil(t / self.config.round_s - 1e-9) * self.config.round_s

        if contended and self._changed:
            view.wake_at(boundary(view.now + _EPS))
            return
        cross = math.inf
        for job in running:
            n = max(1, job.num_gpus)
            attained = view.attained_gpu_time(job)
            predicted = self.predicted_gpu_s(job)
            if predicted is not None and predicted - attained > 0:
                cross = min(cross, view.now + (predicted - attained) / n)  # the prediction runs out
                continue
            frozen = self._jobs[job.job_id].gittins
            if frozen is not None and frozen[1] > attained:
                cross = min(cross, view.now + (frozen[1] - attained) / n)  # the quantum is used up
            else:  # pure LAS: the key is the attained service itself
                cross = min(cross, view.now + max(0.0, best - attained) / n)
        self._cross_at = cross
        if math.isfinite(cross):
            view.wake_at(boundary(max(cross, view.now + _EPS)))


# ================================================================================= helpers


def gpu_hours_lost(result: SimResult, policy: Policy | None = None) -> float:
    """GPU-hours lost to failures: progress lost back to checkpoints (the engine's wasted GPU time)."""
    return sum(j.wasted_gpu_time for j in result.jobs) / 3600.0


def make_standalone(source: InsightSource, *, failure_handler: bool = False, srpt: bool = False,
                    **options: Any) -> _SchedMate:
    """SchedMate-SJF (or -SRPT) with `StandaloneConfig(failure_handler, **options)`."""
    cls = SchedMateSRPT if srpt else StandaloneSchedMate
    return cls(source, StandaloneConfig(failure_handler=failure_handler, **options))
