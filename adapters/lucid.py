"""Lucid+SchedMate (spec §5.1): three enhancements on the unmodified Lucid policy.

`LucidSchedMate` subclasses `schedulers.lucid.Lucid` and only overrides its extension points;
every insight comes from an `InsightSource`, and an answer of None keeps Lucid's own behaviour,
so with a source that knows nothing the run is plain Lucid, decision for decision.

1. **Bypass profiling** (`should_profile`, `known_metrics`): when the advisor matched (k' > 0)
   and its mean historical metrics make a complete profile, the job skips the profiler and is
   scored on those metrics (steady-state ones: no warm-up bias). Otherwise it is profiled.
2. **Advisor duration** (`estimate_duration`): the matches' mean duration replaces the EBM.
3. **Packing cancellation** (`on_packed`, `schedule`): when B is packed onto A, a check is
   scheduled (a policy wake-up) once A has run `min_steps` steps and `min_seconds` since
   packing, after both jobs' restart warm-up. The check asks the tracker for A's throughput
   before and after packing (one `track` call: the log lines before packing are still there).
   If after / before < θ, B is evicted (its progress is lost, it re-enters the queue) and never
   packed again. A is never evicted and each pair is decided at most once. A source cannot say
   "too early" apart from "never" (both are None; `SimulationInsights` needs a few log lines
   after the event), so a check without a complete reading is retried `retries` times at
   doubling delays; then the pair is kept and counted untracked (no reading, or no "before") or
   `no_reading_after` (a "before" but no "after"). First, when the source reads fail-slow
   signals (`InsightSource.failslow`), a sustained slowdown of A that began after packing, with
   a ratio beyond 1/θ, evicts B without waiting for the before/after reading.

The adapter never reads a speed from the engine: the check asks the source for A's throughput
around the packing time, and the source reads A's log (in simulation, written by the simulator
from A's simulated speed history, whatever interference model the run uses).
The advisor's latency delays the job's entry into Lucid's queues (`arrival_delay`) when
`flags.advisor_latency` is on; the wait counts in the job's JCT.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from schedmate.adapters.insights import AdvisorInsight, InsightSource
from schedmate.adapters.registry import PolicyAdapter
from schedmate.schedulers.decisions import Decision, Evict, Preempt
from schedmate.schedulers.job import JobState, Phase
from schedmate.schedulers.lucid import Lucid, Metrics
from schedmate.schedulers.policy import ClusterView

__all__ = ["ADAPTER", "AdapterStats", "Cancellation", "Flags", "LucidSchedMate", "metrics_from_advice"]

# Names a source may use for each of Lucid's four profile metrics (first found wins).
METRIC_ALIASES: Mapping[str, tuple[str, ...]] = {
    "speed": ("speed", "throughput", "steps_per_s"),
    "gpu_util": ("gpu_util", "sm_util"),
    "gmem_util": ("gmem_util", "mem_util", "gpu_mem_util"),
    "gmem": ("gmem", "gmem_mb", "gpu_mem_mb"),
}


_MIN_RATIOS = 10  # matched jobs seen before the fallback calibration applies


def _size_class(gpus: int) -> str:
    return "1" if gpus <= 1 else "2-4" if gpus <= 4 else "5-8" if gpus <= 8 else ">8"


@dataclass(frozen=True)
class Flags:
    """Which enhancements run; each can run alone (the experiment's ablation arms)."""

    bypass_profiling: bool = True
    advisor_duration: bool = True
    packing_cancellation: bool = True
    advisor_latency: bool = True  # charge AdvisorInsight.latency_s before a job enters the queues
    # put the EBM's estimates of unmatched jobs on the advisor's scale (median advisor/EBM ratio
    # over recent matched jobs): mixing two differently biased estimators in one priority queue
    # otherwise reorders jobs by which estimator saw them, not by length
    calibrate_fallback: bool = True
    # ... per GPU size class (1, 2-4, 5-8, >8 GPUs; the global factor until a class has
    # `_MIN_RATIOS` matched jobs): the EBM's bias grows with job size (on Philly it puts the
    # largest 8-GPU jobs, hundreds of hours long, at minutes to hours), so one factor for all
    # lets unmatched large jobs jump ahead of accurately estimated ones (issue 22)
    fallback_by_class: bool = True

    @property
    def uses_advisor(self) -> bool:
        return self.bypass_profiling or self.advisor_duration

    @classmethod
    def only(cls, name: str) -> Flags:
        """One enhancement alone: `bypass_profiling`, `advisor_duration` or `packing_cancellation`."""
        names = ("bypass_profiling", "advisor_duration", "packing_cancellation")
        if name not in names:
            raise ValueError(f"unknown enhancement {name!r}; choose from {', '.join(names)}")
        return cls(**{n: n == name for n in names})


@dataclass(frozen=True)
class Cancellation:
    """Packing-cancellation parameters (spec §5.1, §9.4-6)."""

    theta: float = 0.5  # evict when TP_after / TP_before < theta (0.65: the "35% slowdown" reading)
    min_steps: int = 50  # S_min: steps A must run after packing before the check
    min_seconds: float = 60.0  # ... and at least this long
    warmup_s: float = 0.0  # extra wait after a restart's overhead ends
    retries: int = 3  # re-checks (at 2x, 4x, 8x the first delay) while the reading is incomplete
    discard_progress: bool = True  # B's progress is lost on eviction (False: the engine's Evict keeps it)
    use_failslow: bool = True  # a fail-slow signal on A since packing (ratio > 1/theta) evicts B at once


@dataclass
class AdapterStats:
    """Counters for reports (`LucidSchedMate.info()["schedmate"]`)."""

    advised: int = 0  # advisor calls
    matched: int = 0  # k' > 0
    bypassed: int = 0  # profiler skipped thanks to a complete advised profile
    fallback_scale: float = 1.0  # last factor applied to the EBM's estimates (calibrate_fallback)
    kept_short_in_profiler: int = 0  # matched, but predicted to finish within T_prof: profiled as usual
    profiler_gpu_s_saved: float = 0.0  # GPU-s Lucid's profiler would have spent on bypassed jobs
    advisor_estimated: int = 0  # jobs whose priority used the advisor's duration
    advisor_delay_s: float = 0.0  # total advisor latency charged
    packs: int = 0  # packings seen
    untracked: int = 0  # no throughput (or none before packing) by the last retry: pair kept
    checks: int = 0  # pairs whose ratio was measured
    retried: int = 0  # checks postponed for want of a complete reading
    no_reading_after: int = 0  # a "before" but no "after" by the last retry: pair kept
    ended_before_check: int = 0  # pair split (a job ended) before its check
    evictions: int = 0
    failslow_evictions: int = 0  # evictions decided on the fail-slow detector's signal
    eviction_wasted_gpu_s: float = 0.0  # lost progress × GPUs of evicted jobs
    ratios: list[float] = field(default_factory=list)  # measured after/before, in check order

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("ratios")
        out: dict[str, Any] = {k: round(v, 1) if isinstance(v, float) else v for k, v in d.items()}
        out["min_ratio"] = round(min(self.ratios), 4) if self.ratios else None
        out["ratios_below_0.65"] = sum(r < 0.65 for r in self.ratios)
        return out


@dataclass(frozen=True, order=True)
class _Check:
    due: float
    job_id: str  # B, the newcomer
    host_id: str = field(compare=False)  # A, measured
    packed_at: float = field(compare=False)
    attempt: int = field(default=0, compare=False)


def metrics_from_advice(advice: AdvisorInsight | None) -> Metrics | None:
    """Lucid's four profile metrics from the matches' means, or None when any is missing.

    `sm_util` stands in for `gpu_util` and `gpu_mem_gb` for `gmem` when the metrics lack them.
    A partial profile is not used: Lucid's analyzer needs all four features.
    """
    if advice is None or not advice.matched:
        return None
    found: dict[str, float] = {}
    for name, aliases in METRIC_ALIASES.items():
        value = next((advice.metrics[a] for a in aliases if advice.metrics.get(a) is not None), None)
        if value is None and name == "gpu_util":
            value = advice.sm_util
        if value is None and name == "gmem" and advice.gpu_mem_gb is not None:
            value = advice.gpu_mem_gb * 1024.0
        if value is None:
            return None
        found[name] = float(value)
    return Metrics(**found)


class LucidSchedMate(Lucid):
    """Lucid with SchedMate's insights; `lucid_options` go to `Lucid` unchanged."""

    name = "lucid+sm"

    def __init__(
        self,
        source: InsightSource,
        *,
        flags: Flags = Flags(),
        cancellation: Cancellation = Cancellation(),
        **lucid_options: Any,
    ) -> None:
        super().__init__(**lucid_options)
        self.source = source
        self.flags = flags
        self.cancellation = cancellation
        self.sm = AdapterStats()
        self._advice: dict[str, AdvisorInsight | None] = {}
        self._profiles: dict[str, Metrics] = {}  # bypassed jobs' advised profiles
        self._estimated: set[str] = set()
        self._checks: list[_Check] = []
        self._log_ratios: deque[float] = deque(maxlen=200)  # log(advisor / EBM) of recent matched jobs
        self._class_ratios: dict[str, deque[float]] = {}  # the same, per GPU size class
        self.evicted: set[str] = set()  # jobs this adapter evicted (Lucid then never packs them again)

    # ================================================================ enhancements 1 and 2
    def on_arrival(self, job: JobState, view: ClusterView) -> None:
        if self.flags.uses_advisor:
            advice = self.source.advise(job)
            self.sm.advised += 1
            self.sm.matched += int(advice is not None and advice.matched)
            self._advice[job.job_id] = advice
        self.source.record(job, finished=False)  # after advising: a job never matches itself
        super().on_arrival(job, view)

    def arrival_delay(self, job: JobState, view: ClusterView) -> float:
        advice = self._advice.get(job.job_id)
        delay = advice.latency_s if advice is not None and self.flags.advisor_latency else 0.0
        self.sm.advisor_delay_s += max(0.0, delay)
        return delay

    def should_profile(self, job: JobState, view: ClusterView) -> bool:
        lucid_would = super().should_profile(job, view)
        advice = self._advice.get(job.job_id)
        profile = metrics_from_advice(advice) if self.flags.bypass_profiling else None
        if profile is None:
            return lucid_would
        if lucid_would and advice is not None and advice.duration_s is not None and advice.duration_s <= self.profiler.t_prof:
            # predicted to end within T_prof: it would finish in the profiling pool (Lucid's fast
            # lane for short jobs), so profiling costs it nothing and skipping would queue it
            self.sm.kept_short_in_profiler += 1
            return True
        self._profiles[job.job_id] = profile
        self.sm.bypassed += 1
        if lucid_would:
            self.sm.profiler_gpu_s_saved += min(self.profiler.t_prof, job.spec.duration) * job.spec.num_gpus
        return False

    def known_metrics(self, job: JobState) -> Metrics | None:
        return self._profiles.get(job.job_id) or super().known_metrics(job)

    def estimate_duration(self, job: JobState, view: ClusterView) -> float | None:
        if not self.flags.advisor_duration:
            return None
        advice = self._advice.get(job.job_id)
        if advice is None or not advice.matched or advice.duration_s is None:
            return None
        if job.job_id not in self._estimated:
            self._estimated.add(job.job_id)
            self.sm.advisor_estimated += 1
            features = self.job_state(job.job_id).features
            if self.flags.calibrate_fallback and features is not None:
                (ebm,) = self.estimator.predict_many([features])
                r = math.log(max(1.0, float(advice.duration_s)) / max(1.0, ebm))
                self._log_ratios.append(r)
                self._class_ratios.setdefault(_size_class(job.spec.num_gpus), deque(maxlen=200)).append(r)
        return max(1.0, float(advice.duration_s))

    def adjust_estimates(self, estimated: list[JobState], view: ClusterView) -> None:
        if not (self.flags.calibrate_fallback and len(self._log_ratios) >= _MIN_RATIOS):
            return
        factor = math.exp(float(np.median(self._log_ratios)))
        self.sm.fallback_scale = factor
        for job in estimated:
            f = factor
            if self.flags.fallback_by_class:
                own = self._class_ratios.get(_size_class(job.spec.num_gpus))
                if own is not None and len(own) >= _MIN_RATIOS:
                    f = math.exp(float(np.median(own)))
            state = self.job_state(job.job_id)
            if state.estimate is not None:
                state.estimate = state.estimate * f

    # ================================================================ enhancement 3
    def schedule(self, view: ClusterView) -> Sequence[Decision]:
        evictions = self._run_checks(view) if self._checks else []
        return [*evictions, *super().schedule(view)]

    def on_packed(self, job: JobState, host: JobState, view: ClusterView) -> None:
        if not self.flags.packing_cancellation:
            return
        self.sm.packs += 1
        due = self._check_time(job, host, view)
        heapq.heappush(self._checks, _Check(due, job.job_id, host.job_id, view.now))
        view.wake_at(due)

    def _check_time(self, job: JobState, host: JobState, view: ClusterView) -> float:
        """When A could have run S_min steps (at its profiled solo speed: the slowdown is what
        the check is for, so it is not known here) and `min_seconds` since packing, both past
        warm-up. A slowed host has run fewer steps by then; the tracker says whether it saw
        enough, and a check without a reading is retried later."""
        c = self.cancellation
        metrics = self.known_metrics(host)
        steps_per_s = metrics.speed if metrics is not None and metrics.speed > 0 else 0.0
        run_s = max(c.min_seconds, c.min_steps / steps_per_s if steps_per_s > 0 else 0.0)
        measuring_from = max(view.now, job.overhead_until, host.overhead_until) + c.warmup_s
        return measuring_from + run_s

    def _run_checks(self, view: ClusterView) -> list[Decision]:
        out: list[Decision] = []
        while self._checks and self._checks[0].due <= view.now + 1e-9:
            check = heapq.heappop(self._checks)
            decision = self._check(check, view)
            if decision is not None:
                out.append(decision)
        return out

    def _check(self, check: _Check, view: ClusterView) -> Decision | None:
        job, host = view.job(check.job_id), view.job(check.host_id)
        if job.phase is not Phase.RUNNING or job.colocated_with != host.job_id:
            self.sm.ended_before_check += 1
            return None
        if self.cancellation.use_failslow:
            signal = self.source.failslow(host, now=view.now, since=check.packed_at)
            if signal.detected and signal.ratio is not None and signal.ratio * self.cancellation.theta > 1.0:
                self.sm.checks += 1
                self.sm.ratios.append(1.0 / signal.ratio)
                self.sm.failslow_evictions += 1
                return self._evict(job, view)
        reading = self.source.track(host, event_at=check.packed_at, now=view.now)
        ratio = reading.ratio if reading is not None else None
        if ratio is None:
            if check.attempt < self.cancellation.retries:
                self.sm.retried += 1
                due = check.packed_at + 2.0 * (check.due - check.packed_at)
                heapq.heappush(self._checks, dataclasses.replace(check, due=due, attempt=check.attempt + 1))
                view.wake_at(due)
            elif reading is None or reading.before is None or reading.before <= 0:
                self.sm.untracked += 1
            else:
                self.sm.no_reading_after += 1
            return None
        self.sm.checks += 1
        self.sm.ratios.append(ratio)
        if ratio >= self.cancellation.theta:
            return None
        return self._evict(job, view)

    def _evict(self, job: JobState, view: ClusterView) -> Decision:
        self.job_state(job.job_id).no_pack = True  # Lucid's own flag: never packed again
        self.evicted.add(job.job_id)
        self.sm.evictions += 1
        if not self.cancellation.discard_progress:
            return Evict(job.job_id)
        self.sm.eviction_wasted_gpu_s += view.progress(job) * job.spec.num_gpus
        return Preempt(job.job_id, discard_progress=True)

    # ================================================================ bookkeeping
    def on_start(self, job: JobState, view: ClusterView) -> None:
        super().on_start(job, view)

    def on_finish(self, job: JobState, view: ClusterView) -> None:
        self.source.record(job, finished=True)
        super().on_finish(job, view)
        self._advice.pop(job.job_id, None)
        self._profiles.pop(job.job_id, None)

    def info(self) -> dict[str, Any]:
        return {
            **super().info(),
            "schedmate": self.sm.as_dict(),
            "flags": asdict(self.flags),
            "cancellation": asdict(self.cancellation),
            "source": self.source.stats(),
        }


# ================================================================ the generic adapter arm


# Lucid's world is its case study's (artefact workloads, profiling bias, pair interference): only the
# simulator builds it, so the adapter names it rather than importing the simulator.
ADAPTER = PolicyAdapter(policy="lucid", adapter=LucidSchedMate, baseline=Lucid,
                        world="schedmate.sim.experiments.lucid:artefact_world")
