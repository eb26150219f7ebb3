"""Failures as clusters see them (spec §8.3, revised): the world side of the standalone study.

Three causes, and what each does to a job:

- **Application errors** (script / framework: the user's bug). `inject_failures` marks
  `app_rate` of the jobs (the trace's failure rate × the non-infrastructure share: Philly
  0.305 × 0.89) with one error at U(0, 1) of their planned work, category by Acme's counts
  (framework 404 : script 1,890), reason by Acme's per-reason counts. The error ends the job as
  FAILED (the trace's failed jobs; a fixed script is a new job). A restart hits the same bug at
  once (the Failure Handler's false positives).
- **Infrastructure hazard**: a job fails each time the GPU time it has held crosses the next
  point of a Poisson process of rate λ per GPU-second (drawn per job from (seed, job id), so the
  same job meets the same exposure thresholds in every arm): wide and long jobs fail more, and
  may fail several times. A share `hardware_share` of these (Acme's NVLink, CUDA, ECC and
  NodeFailure counts: 103 of 281 infrastructure failures) leaves the struck node **faulty**;
  the rest (network, connection, storage, NCCL) are transient.
- **Faulty nodes** fail every job placed on them after Exp(`faulty_mttf_s`) of run, with the
  node's own fault, until the node is cordoned: by the Failure Handler at its first diagnosed
  infrastructure failure, otherwise by the operators once it has failed `ops_failures` jobs.
  A cordoned node comes back healthy after `repair_s` (faulty), or after `check_s` (300 s) when
  it was healthy: the handler's recovery plan (`agents/failure/recovery.py`) runs diagnostics
  (DCGM, NCCL tests, ...) on the suspect node and keeps it cordoned only if one fails, so a
  healthy node is out only while they run (inside the job's 300 s recovery).

λ is calibrated per trace (`calibrate_hazard`) so that infrastructure failures are
`infra_share` (Acme ≈ 11%) of all failure events in the no-handler world, counting the
expected follow-up failures of faulty nodes; the achieved count share and the infrastructure
share of failed-attempt GPU time (Acme ≈ 82%) are measured and reported (`FailureWorld.stats`).

The world runs in `FailureSimulator`, an engine subclass that strikes failures at their times.
On a failure the attempt's progress goes back to the last checkpoint and the policy's
`on_failure` is asked. The world does not tell the policy the culprit: `job.failed_node` is
the job's node only when it ran on one node (the scheduler knows where a one-node job ran),
else None, until a diagnosis names a node. `CauseDiagnosis` writes the failed log with the
job's host names (`simlogs.node_hostname`; NCCL, torchrun and Slurm lines name hosts and ranks
as real logs do, the root cause on the culprit's host) and sets `job.failed_node` to the node
read from the lines the handler located (`simlogs.node_named`), never from the cause: a
wrong or missing node is a wrong or missing cordon. Cordons are counted by what they hit
(`policy_cordons_of_faulty_nodes` / `cordons_of_healthy_nodes`) and diagnoses by whether the named
node is the culprit (`CauseDiagnosis.stats`: `fh_node_on_culprit`, `fh_node_on_other`,
`fh_node_missing`, and how it was found, `fh_node_by_*`). If the policy does not resume the job: an application
error ends it as FAILED; an infrastructure failure ends the attempt and the user resubmits the
job `resubmit_delay` (D) later as a new arrival; JCT counts from the first submit.
The causes stay in the world: a policy sees a diagnosis only through `CauseDiagnosis`, which
writes the failed log of the true cause and gives it to the real Failure Handler.
"""

from __future__ import annotations

import heapq
import math
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import numpy as np

from schedmate.adapters.insights import AdvisorInsight, FailureInsight, InsightSource, SimulatedWorld, TrackerReading
from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.decisions import Cordon, Uncordon
from schedmate.schedulers.engine import _RESUBMIT, SimConfig, Simulator
from schedmate.schedulers.job import FinalStatus, JobSpec, JobState, Phase, Placement
from schedmate.schedulers.policy import Policy
from schedmate.sim.artefacts import unit_hash
from schedmate.sim.simlogs import (
    FAILED_LOGS_KEY,
    HOSTED_LOGS_KEY,
    host_nodes,
    node_named,
    split_lines,
    write_failed_log,
)
from schedmate.sim.world import WORLD_KEY, EarlyStops
from schedmate.taxonomy import REASONS as REASON_INFO
from schedmate.taxonomy import Component, FailureReason, reasons_in
from schedmate.taxonomy import FailureCategory as TaxCategory

__all__ = [
    "APPLICATION",
    "CATEGORIES",
    "FAILURE_KEY",
    "Cause",
    "CauseDiagnosis",
    "FailureModel",
    "FailureSimulator",
    "FailureWorld",
    "InjectedFailure",
    "calibrate_hazard",
    "failure_of",
    "inject_failures",
    "is_infrastructure",
]

FAILURE_KEY = "failure"
INFRASTRUCTURE, FRAMEWORK, SCRIPT = "infrastructure", "framework", "script"
CATEGORIES = (INFRASTRUCTURE, FRAMEWORK, SCRIPT)
APPLICATION = (FRAMEWORK, SCRIPT)
_EPS = 1e-6

# Acme reasons with their failure counts (logs spec §2.1), read from the taxonomy, by kind of cause:
# an infrastructure reason whose component is a device (GPU, NVLink, node) leaves the node faulty.
# CalledProcessError and ArgumentError (7 script failures of 1,890) have never been injected here
# (an oversight of issue 6: `framework_share` counts them); they stay out so that the standalone
# figures stay bit-identical. Dropping `_NOT_INJECTED` changes them (rerun README's standalone rows).
_NOT_INJECTED = frozenset({FailureReason.CALLED_PROCESS_ERROR, FailureReason.ARGUMENT_ERROR})
_DEVICES = frozenset({Component.GPU, Component.NVLINK, Component.NODE})


def _counts(category: TaxCategory, *, hardware: bool | None = None) -> dict[str, int]:
    return {r.value: REASON_INFO[r].acme_count for r in reasons_in(category, acme_only=True)
            if r not in _NOT_INJECTED and (hardware is None or (REASON_INFO[r].component in _DEVICES) == hardware)}


HARDWARE: Mapping[str, int] = _counts(TaxCategory.INFRASTRUCTURE, hardware=True)
TRANSIENT: Mapping[str, int] = _counts(TaxCategory.INFRASTRUCTURE, hardware=False)
REASONS: Mapping[str, Mapping[str, int]] = {
    INFRASTRUCTURE: {**HARDWARE, **TRANSIENT},
    FRAMEWORK: _counts(TaxCategory.FRAMEWORK),
    SCRIPT: _counts(TaxCategory.SCRIPT),
}


def _seconds_counter() -> dict[str, float]:
    """A Counter (a missing key reads 0) of GPU-seconds; typeshed types a Counter's counts as int."""
    return cast(dict[str, float], Counter())


@dataclass(frozen=True)
class FailureModel:
    """Knobs of the world; defaults are spec §8.3's readings (see the module docstring)."""

    fail_rate: float = 0.305  # the trace's share of GPU jobs that fail (Philly)
    infra_share: float = 0.11  # Acme: infrastructure share of failures (count)
    framework_share: float = 404 / (404 + 1890)  # of application errors
    hardware_share: float = sum(HARDWARE.values()) / (sum(HARDWARE.values()) + sum(TRANSIENT.values()))
    faulty_mttf_s: float = 1800.0  # a job on a faulty node fails after Exp(mean) of run
    ops_failures: int = 3  # without the handler, operators cordon a faulty node after this many failures
    repair_s: float = 4 * 3600.0  # cordoned faulty node -> healthy
    check_s: float = 300.0  # cordoned healthy node -> back once its diagnostics pass
    hazard_per_gpu_s: float | None = None  # None: `calibrate_hazard` on the trace

    def __post_init__(self) -> None:
        for name in ("fail_rate", "infra_share", "framework_share", "hardware_share"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value}")
        if self.infra_share >= 1.0:
            raise ValueError("infra_share must be < 1")

    @property
    def app_rate(self) -> float:
        """Share of jobs with an application error: the non-infrastructure part of the failures."""
        return self.fail_rate * (1.0 - self.infra_share)


@dataclass(frozen=True)
class InjectedFailure:
    """A job's application error (`at`: fraction of its planned work when it strikes)."""

    category: str
    reason: str
    at: float

    @property
    def infrastructure(self) -> bool:
        return self.category == INFRASTRUCTURE


@dataclass(frozen=True)
class Cause:
    """Why one attempt failed (world truth: never shown to a policy or an agent)."""

    category: str
    reason: str
    kind: str  # "app" | "transient" | "hardware" (a node turned faulty) | "faulty" (on a faulty node)
    node: int | None
    at: float
    gpu_s: float  # GPU time of the failed run (launch to failure)

    @property
    def infrastructure(self) -> bool:
        return self.category == INFRASTRUCTURE


def is_infrastructure(truth: object) -> bool | None:
    """Normalise a ground-truth answer: a bool, a category name, or anything with an
    `infrastructure` attribute (`Cause`, `InjectedFailure`, `FailureInsight`); None when unknown."""
    if truth is None:
        return None
    if isinstance(truth, bool):
        return truth
    flag = getattr(truth, "infrastructure", None)
    if isinstance(flag, bool):
        return flag
    return str(truth).strip().lower() in (INFRASTRUCTURE, "infra")


def failure_of(spec: JobSpec) -> InjectedFailure | None:
    """The injected application error of `spec`, or None."""
    raw = spec.attributes.get(FAILURE_KEY)
    if not isinstance(raw, Mapping):
        return None
    return InjectedFailure(str(raw["category"]), str(raw.get("reason", "")), float(raw.get("at", 0.0)))


def inject_failures(specs: Sequence[JobSpec], seed: int, model: FailureModel = FailureModel()) -> list[JobSpec]:
    """The same jobs (same order) as completing after their full work, `model.app_rate` of them
    carrying an application error; deterministic by `seed`. Infrastructure failures are not
    injected here: they depend on placement and happen in `FailureSimulator`."""
    rng = np.random.default_rng([seed, 0x5EED_FA11])
    work = np.array([s.total_work for s in specs], dtype=float)
    eligible = np.flatnonzero(work > 0)
    n_fail = min(len(eligible), int(round(model.app_rate * len(specs))))
    failing = np.sort(rng.choice(eligible, size=n_fail, replace=False)) if n_fail else np.zeros(0, dtype=int)
    at = rng.uniform(0.0, 1.0, size=n_fail)
    app_u = rng.uniform(size=n_fail)
    reason_u = rng.uniform(size=n_fail)
    # stop point (sim.world.EarlyStops): a share of application errors strike within the
    # first minutes (Acme: most script failures happen within minutes of starting), at start-up
    # + Exp(mean); the rest at U(0, 1) of the work
    stops = EarlyStops()
    quick = rng.uniform(size=n_fail) < stops.quick_share
    quick_s = rng.exponential(stops.quick_mean_s, size=n_fail)
    for i, idx in enumerate(failing.tolist()):
        if quick[i]:
            startup = float((specs[idx].attributes.get(WORLD_KEY) or {}).get("startup_s", 60.0))
            at[i] = min(1.0, (startup + quick_s[i]) / work[idx])
    out = [_completed(s) for s in specs]
    for i, idx in enumerate(failing.tolist()):
        category = FRAMEWORK if app_u[i] < model.framework_share else SCRIPT
        failure = {"category": category, "reason": _pick(REASONS[category], reason_u[i]), "at": float(at[i])}
        out[idx] = replace(out[idx], attributes={**out[idx].attributes, FAILURE_KEY: failure})
    return out


def calibrate_hazard(specs: Sequence[JobSpec], model: FailureModel) -> float:
    """λ per GPU-second: infrastructure failures = `infra_share` of all failure events.

    Expected events: application errors n·app_rate; infrastructure λ·W (W = total GPU work) of
    which `hardware_share` leave a faulty node that fails `ops_failures` − 1 more jobs before the
    operators cordon it. Solve λ·W·(1 + h·(k − 1)) = n_app · s / (1 − s)."""
    if model.hazard_per_gpu_s is not None:
        return model.hazard_per_gpu_s
    gpu_work = sum(s.total_work * s.num_gpus for s in specs)
    n_app = model.app_rate * len(specs)
    target = n_app * model.infra_share / (1.0 - model.infra_share)
    per_hazard = 1.0 + model.hardware_share * max(0, model.ops_failures - 1)
    return target / (gpu_work * per_hazard) if gpu_work > 0 else 0.0


# ================================================================================= the world


@dataclass
class _NodeState:
    faulty: bool = False
    reason: str = ""
    failures: int = 0  # failures caused since it turned faulty
    repair_at: float | None = None
    cordoned_by: str = ""  # "ops" | "policy"


@dataclass
class FailureWorld:
    """Failure state of one simulation: hazards, faulty nodes, repairs, the cause of every
    failed attempt (`causes[job_id][attempt]`) and counters."""

    model: FailureModel
    seed: int
    hazard_per_gpu_s: float
    causes: dict[str, list[Cause]] = field(default_factory=dict)
    nodes: dict[int, _NodeState] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)
    gpu_s: dict[str, float] = field(default_factory=_seconds_counter)
    # exposure points (GPU-seconds held) per job, drawn lazily; may be preset (tests, scripted worlds)
    thresholds: dict[str, list[float]] = field(default_factory=dict)

    @classmethod
    def for_trace(cls, specs: Sequence[JobSpec], seed: int, model: FailureModel = FailureModel()) -> FailureWorld:
        return cls(model=model, seed=seed, hazard_per_gpu_s=calibrate_hazard(specs, model))

    def node(self, n: int) -> _NodeState:
        return self.nodes.setdefault(n, _NodeState())

    def cause(self, job_id: str, attempt: int) -> Cause | None:
        causes = self.causes.get(job_id, [])
        return causes[attempt] if 0 <= attempt < len(causes) else None

    def next_threshold(self, job_id: str, attained_gpu_s: float) -> float:
        """The first point of the job's hazard process beyond `attained_gpu_s` (GPU-seconds)."""
        if self.hazard_per_gpu_s <= 0:
            return math.inf
        points = self.thresholds.setdefault(job_id, [])
        rng = None
        while not points or points[-1] <= attained_gpu_s + _EPS:
            if rng is None:  # a stream per (seed, job, how many drawn): same thresholds in every arm
                rng = np.random.default_rng([self.seed, _stable(job_id), len(points), 0x4A2A])
            last = points[-1] if points else 0.0
            points.append(last + float(rng.exponential(1.0 / self.hazard_per_gpu_s)))
        return next(p for p in points if p > attained_gpu_s + _EPS)

    def note(self, cause: Cause) -> None:
        self.counts[f"{cause.kind}_failures"] += 1
        self.counts[f"{cause.category}_failures"] += 1
        self.gpu_s[cause.category] += cause.gpu_s

    def stats(self) -> dict[str, Any]:
        """Achieved shares (to compare with the targets) and node counters."""
        infra = self.counts[f"{INFRASTRUCTURE}_failures"]
        total = infra + self.counts[f"{FRAMEWORK}_failures"] + self.counts[f"{SCRIPT}_failures"]
        gpu_total = sum(self.gpu_s.values())
        jobs = len(self.causes)
        return {
            "hazard_per_gpu_hour": self.hazard_per_gpu_s * 3600.0,
            "failure_events": total,
            "jobs_with_failures": jobs,
            "infra_share": infra / total if total else 0.0,
            "infra_gpu_share": self.gpu_s[INFRASTRUCTURE] / gpu_total if gpu_total else 0.0,
            "target_infra_share": self.model.infra_share,
            "target_infra_gpu_share": 0.82,
            "gpu_hours_failed_attempts": gpu_total / 3600.0,
            **{k: v for k, v in sorted(self.counts.items())},
        }


class FailureSimulator(Simulator):
    """The engine plus the failure world: strikes failures, keeps faulty nodes, repairs them.

    World events are kept in their own heap and applied at the start of each event time (a
    wake-up at each one makes the policy schedule right after). Every world draw is a hash of
    (seed, job, ...), so a run is deterministic.
    """

    def __init__(self, jobs: Iterable[JobSpec], cluster: ClusterSpec, policy: Policy, config: SimConfig | None = None,
                 *, world: FailureWorld, **kwargs: Any) -> None:
        super().__init__(jobs, cluster, policy, config, **kwargs)
        self.world = world
        self._events: list[tuple[float, int, str, Any, int]] = []  # (time, seq, kind, payload, version)
        self._wseq = 0
        self._fail_version: dict[str, int] = {}
        self._runs: Counter[str] = Counter()
        self._run_start: dict[str, tuple[float, float]] = {}  # job -> (launch time, attained at launch)
        self._app_struck: set[str] = set()
        self._progress_at_resume: dict[str, float] = {}

    # ------------------------------------------------------------------ hooks into the engine
    def _clock(self, t: float) -> None:
        super()._clock(t)
        while self._events and self._events[0][0] <= t + _EPS:
            _, _, kind, payload, version = heapq.heappop(self._events)
            if kind == "fail":
                job = self.jobs[payload[0]]
                if self._fail_version.get(job.job_id) == version and job.phase is Phase.RUNNING:
                    self._strike(job, payload[1])
            elif kind == "repair":
                self._repair(payload, version)

    def _launch(self, job: JobState, placement: Placement, phase: Phase) -> None:
        super()._launch(job, placement, phase)
        self._runs[job.job_id] += 1
        self._run_start[job.job_id] = (self.now, job.attained_gpu_time)
        self._plan_failure(job)

    def _apply(self, decisions: Sequence[Any] | None) -> int:
        """The engine's `_apply`, with cordons routed through the world (it repairs the node)."""
        applied = 0
        for d in decisions or ():
            if isinstance(d, (Cordon, Uncordon)):
                self._cordon(d)
                applied += 1
            else:
                applied += super()._apply([d])
        return applied

    def _cordon(self, d: Cordon | Uncordon) -> None:
        self._do_cordon(d)
        if isinstance(d, Cordon):
            self._start_repair(d.node, by="policy")
        else:  # a policy may return a node early; the world forgets its repair
            self.world.node(d.node).repair_at = None

    # ------------------------------------------------------------------ failure times
    def _push(self, t: float, kind: str, payload: Any, version: int) -> None:
        self._wseq += 1
        heapq.heappush(self._events, (t, self._wseq, kind, payload, version))
        self.request_wakeup(t)

    def _plan_failure(self, job: JobState) -> None:
        """The earliest failure of the job's current run (exact for the exponential parts:
        recomputed whenever a node it runs on changes state)."""
        version = self._fail_version[job.job_id] = self._fail_version.get(job.job_id, 0) + 1
        if job.speed <= 0:
            return
        w = self.world
        begin = max(self.now, job.overhead_until)
        candidates: list[tuple[float, tuple[str, str, str, int | None]]] = []
        app = failure_of(job.spec)
        if app is not None:
            if job.job_id in self._app_struck:  # the bug is still there: fails once restarted
                candidates.append((begin, ("app", app.category, app.reason, None)))
            else:
                point = app.at * job.spec.total_work
                if job.progress <= point + _EPS:
                    candidates.append((begin + (point - job.progress) / job.speed, ("app", app.category, app.reason, None)))
        threshold = w.next_threshold(job.job_id, job.attained_gpu_time)
        if math.isfinite(threshold) and job.num_gpus > 0:
            candidates.append((self.now + (threshold - job.attained_gpu_time) / job.num_gpus, ("hazard", INFRASTRUCTURE, "", None)))
        run = self._runs[job.job_id]
        for node, _ in job.placement:
            state = w.nodes.get(node)
            if state is not None and state.faulty:
                rng = np.random.default_rng([w.seed, _stable(job.job_id), run, node, version, 0xFA17])
                t = self.now + float(rng.exponential(w.model.faulty_mttf_s))
                candidates.append((t, ("faulty", INFRASTRUCTURE, state.reason, node)))
        if candidates:
            t, cause = min(candidates, key=lambda c: c[0])
            self._push(t, "fail", (job.job_id, cause), version)

    def _strike(self, job: JobState, planned: tuple[str, str, str, int | None]) -> None:
        kind, category, reason, node = planned
        w = self.world
        attempt = job.failures
        if kind == "hazard":
            nodes = [n for n, _ in job.placement]
            weights = np.array([k for _, k in job.placement], dtype=float)
            u_node = unit_hash("culprit", w.seed, job.job_id, attempt)
            node = nodes[min(int(np.searchsorted(np.cumsum(weights) / weights.sum(), u_node, side="right")), len(nodes) - 1)]
            hardware = unit_hash("hardware", w.seed, job.job_id, attempt) < w.model.hardware_share
            table = HARDWARE if hardware else TRANSIENT
            reason = _pick(table, unit_hash("infra-reason", w.seed, job.job_id, attempt))
            kind = "hardware" if hardware else "transient"
        if node is None and job.placement:  # an application error: the host of the first rank
            node = job.placement[0][0]
        _, attained0 = self._run_start.get(job.job_id, (self.now, job.attained_gpu_time))
        self._advance(job)
        cause = Cause(category, reason, kind, node, self.now, job.attained_gpu_time - attained0)
        w.causes.setdefault(job.job_id, []).append(cause)
        w.note(cause)
        if kind == "app":
            self._app_struck.add(job.job_id)
        if kind == "hardware" and node is not None:
            state = w.node(node)
            if not state.faulty:
                state.faulty, state.reason, state.failures = True, reason, 0
                w.counts["nodes_turned_faulty"] += 1
                self._replan_on(node, exclude=job.job_id)
        if kind in ("hardware", "faulty") and node is not None:
            state = w.node(node)
            state.failures += 1
            if state.failures >= w.model.ops_failures and not self.cordoned[node]:
                self.cordoned[node] = True
                w.counts["ops_cordons"] += 1
                self._start_repair(node, by="ops")
        # what a scheduler knows without a diagnosis: the node of a one-node job, nothing else
        held = {n for n, _ in job.placement}
        job.failed_node = next(iter(held)) if len(held) == 1 else None
        self._fail(job, cause)

    def _fail(self, job: JobState, cause: Cause) -> None:
        """The engine's failure path, with the study's endings (module docstring)."""
        job.failures += 1
        ci = self.config.checkpoint_interval
        saved = max(job.checkpoint, math.floor(job.progress / ci) * ci if ci else 0.0)
        no_progress = job.progress <= self._progress_at_resume.get(job.job_id, -1.0) + _EPS
        resume = self.policy.on_failure(job, self.view)
        self._release(job)
        job.wasted_gpu_time += max(0.0, job.progress - saved) * job.spec.num_gpus
        job.progress = job.checkpoint = saved
        if resume:
            self.world.counts["resumed"] += 1
            self.world.counts["resumed_without_progress"] += no_progress
            self._progress_at_resume[job.job_id] = saved
            job.phase = Phase.QUEUED
            self.waiting[job.job_id] = job
            self.policy.on_requeue(job, self.view)
        elif (retry := _retry_delay(self.policy, job)) is not None:
            # the policy asks for the attempt to be retried as it is, `retry` s later (a blind retry,
            # or a handled failure under a policy that cannot hold a job itself)
            self.world.counts["policy_retries"] += 1
            job.phase = Phase.FAILED
            self.policy.on_finish(job, self.view)
            job.phase = Phase.PENDING
            heapq.heappush(self._heap, (self.now + retry, _RESUBMIT, next(self._seq), job.job_id, job.version))
        elif cause.category != INFRASTRUCTURE or self.config.resubmit_delay is None:
            self._terminate(job, Phase.FAILED)  # the user's bug ends the job (the trace's failed jobs)
        else:
            self.world.counts["user_resubmits"] += 1
            job.phase = Phase.FAILED  # this attempt ended; the scheduler sees it finish
            self.policy.on_finish(job, self.view)
            job.phase = Phase.PENDING  # until the user resubmits it
            heapq.heappush(self._heap, (self.now + self.config.resubmit_delay, _RESUBMIT, next(self._seq), job.job_id, job.version))

    # ------------------------------------------------------------------ nodes
    def _start_repair(self, node: int, *, by: str) -> None:
        state = self.world.node(node)
        if state.repair_at is not None:
            return
        state.cordoned_by = by
        state.repair_at = self.now + (self.world.model.repair_s if state.faulty else self.world.model.check_s)
        self.world.counts[f"cordons_by_{by}"] += by == "policy"
        self.world.counts["cordons_of_healthy_nodes"] += not state.faulty
        self.world.counts["policy_cordons_of_faulty_nodes"] += by == "policy" and state.faulty
        self._push(state.repair_at, "repair", node, 0)

    def _repair(self, node: int, _version: int) -> None:
        state = self.world.node(node)
        if state.repair_at is None or state.repair_at > self.now + _EPS:
            return
        was_faulty = state.faulty
        self.world.nodes[node] = _NodeState()
        self.cordoned[node] = False
        self.world.counts["repairs"] += was_faulty
        self.world.counts["checks"] += not was_faulty
        if was_faulty:
            self._replan_on(node)

    def _replan_on(self, node: int, *, exclude: str | None = None) -> None:
        for job in list(self.running.values()):
            if job.job_id != exclude and any(n == node for n, _ in job.placement):
                self._advance(job)
                self._plan_failure(job)


# ================================================================================= diagnosis


@dataclass
class CauseDiagnosis(SimulatedWorld):
    """An `InsightSource` whose `diagnose` gives the real Failure Handler the failed log of the
    attempt's true cause (the world writes the log; the handler only reads it).

    Over `SimulationInsights` the world writes the attempt's log (`simlogs.write_failed_log`:
    the job's log style, the cause's reason, a variant, the job's host names) and notes its path
    on the job; the source's `diagnose` reads that file like any job's log (measured latency,
    content-hash cache, replayed in precomputed mode). Any other source is asked as it is.

    The node: a diagnosis that says infrastructure sets `job.failed_node` to the node the log
    names at the lines the handler located (`FailureInsight.node` when the source reads a host,
    else `FailureInsight.line`/`block_line`, else the handler's own locator is run on the log
    the source read, cached per log), read from the log with the job's host names
    (`simlogs.node_named`). `hosts_for_source` False (default) gives the source the shared log
    of the same failure (the generator's host names, identical line for line), so a failure's
    diagnosis stays cached across jobs; True gives it the hosted log (one handler run per
    failure). Everything else is delegated. `failure_truth` (counters only) is the world's cause.
    """

    source: InsightSource
    world: FailureWorld
    hosts_for_source: bool = False
    calls: Counter[str] = field(default_factory=Counter)
    _log_dir: Path | None = field(default=None, repr=False)
    _located: dict[str, tuple[int | None, int | None]] = field(default_factory=dict, repr=False)

    def advise(self, job: JobState) -> AdvisorInsight | None:
        return self.source.advise(job)

    def track(self, job: JobState, *, event_at: float, now: float) -> TrackerReading | None:
        return self.source.track(job, event_at=event_at, now=now)

    def record(self, job: JobState, *, finished: bool) -> None:
        self.source.record(job, finished=finished)

    def failure_truth(self, job: JobState, attempt: int) -> bool | None:
        return is_infrastructure(self.world.cause(job.job_id, attempt))

    def diagnose(self, job: JobState, *, attempt: int) -> FailureInsight | None:
        self.calls["diagnose"] += 1
        cause = self.world.cause(job.job_id, attempt)
        source = self.source
        if cause is not None and isinstance(source, SimulatedWorld):
            style = source.failed_log_style(job.job_id)
            if style is not None:
                if style.artefact is None:
                    self.calls["no_artefact"] += 1
                    return None
                # the world writes the attempt's log; the source only reads it (never the cause)
                write_failed_log(job, attempt, style.artefact, cause.reason, self.log_dir(), seed=style.seed,
                                 variants=style.variants, n_lines=style.n_lines, culprit_node=cause.node,
                                 hosts_for_source=self.hosts_for_source)
            insight = source.diagnose_cause(job, attempt=attempt, cause=cause)  # calibrated knobs read `cause`
        else:
            insight = source.diagnose(job, attempt=attempt)
        if insight is None:
            self.calls["no_failure_found"] += 1
            return None
        self.calls["said_infra"] += insight.infrastructure
        if insight.infrastructure:
            node, how = self._node(job, attempt, insight)
            job.failed_node = node
            self.calls[f"node_by_{how}"] += 1
            if node is None:
                self.calls["node_missing"] += 1
            elif cause is not None:  # counters only
                self.calls["node_on_culprit" if node == cause.node else "node_on_other"] += 1
        return insight

    def _node(self, job: JobState, attempt: int, insight: FailureInsight) -> tuple[int | None, str]:
        """The node the diagnosis points to (class docstring), and how it was found."""
        hosts = host_nodes(job.placement)
        if insight.node is not None:
            return (hosts[insight.node], "handler") if insight.node in hosts else (None, "handler_unknown_host")
        hosted = (job.info.get(HOSTED_LOGS_KEY) or {}).get(attempt)
        if hosted is None:  # no log was written (sensitivity sources): what the scheduler knows
            nodes = set(hosts.values())
            return (nodes.pop(), "placement") if len(nodes) == 1 else (None, "none")
        line, block = insight.line, insight.block_line
        if line is None:
            line, block = self._locate((job.info.get(FAILED_LOGS_KEY) or {}).get(attempt) or hosted)
        try:
            lines = split_lines(Path(hosted).read_text(encoding="utf-8", errors="replace"))
        except OSError:
            lines = []
        return node_named(lines, line, block, hosts)

    def _locate(self, path: str) -> tuple[int | None, int | None]:
        """(root line, block line) the handler's locator finds in `path` (cached per file; the
        files are named by content). Used when the source's answer does not carry them."""
        if path in self._located:
            return self._located[path]
        out: tuple[int | None, int | None] = (None, None)
        if isinstance(self.source, SimulatedWorld):
            try:
                located = self.source.locate_failure(path)
                if located is not None:
                    out = located
                    self.calls["locator_runs"] += 1
            except Exception:  # noqa: BLE001 -- no located line is "no node", not a crash
                self.calls["locator_errors"] += 1
        self._located[path] = out
        return out

    def log_dir(self) -> Path:
        if self._log_dir is None:
            self._log_dir = Path(tempfile.mkdtemp(prefix="schedmate-failed-logs-"))
        return self._log_dir

    def stats(self) -> dict[str, Any]:
        inner = self.source.stats()
        return {**inner, **{f"fh_{k}": v for k, v in self.calls.items()}}


# ---------------------------------------------------------------------------------- helpers


def _completed(spec: JobSpec) -> JobSpec:
    """The job as if it ran to completion: the trace's own failure or cancellation is dropped."""
    attributes: dict[str, Any] = {k: v for k, v in spec.attributes.items() if k != FAILURE_KEY}
    return replace(spec, status=FinalStatus.COMPLETED, duration=spec.total_work, work=None, attributes=attributes)


def _retry_delay(policy: Policy, job: JobState) -> float | None:
    """`policy.retry_delay(job)` when the policy has one: seconds until the failed attempt is
    retried from its checkpoint (None: the world's no-handler path)."""
    fn = getattr(policy, "retry_delay", None)
    return fn(job) if callable(fn) else None


def _pick(counts: Mapping[str, int], u: float) -> str:
    names = list(counts)
    cdf = np.cumsum([counts[n] for n in names], dtype=float)
    cdf /= cdf[-1]
    return names[min(int(np.searchsorted(cdf, u, side="right")), len(names) - 1)]


def _stable(text: str) -> int:
    return int(unit_hash("job", text) * 2**62)


def world_summary(world: FailureWorld) -> dict[str, Any]:
    """`FailureWorld.stats` plus the model (for outputs)."""
    return {**world.stats(), "model": asdict(world.model)}
