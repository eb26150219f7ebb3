"""Arnold+SchedMate: cordon on a diagnosed infrastructure failure, re-place; nothing from the world's truth."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

from schedmate.adapters.arnold import ArnoldRestart, ArnoldSchedMate
from schedmate.adapters.insights import FailureInsight, SimulatedWorld
from schedmate.schedulers.arnold.topology import arnold_cluster
from schedmate.schedulers.engine import SimConfig
from schedmate.schedulers.job import FinalStatus, JobSpec, JobState
from schedmate.sim.experiments.arnold import (
    ArnoldAdapterConfig,
    FailureWorkload,
    failure_trace,
    run_arnold_adapter_experiment,
)
from schedmate.sim.experiments.common import NullInsights
from schedmate.sim.experiments.standalone import calibrated_source
from schedmate.sim.failures import FailureModel, FailureSimulator, FailureWorld, inject_failures

SMALL = FailureWorkload(minipods=2, nodes_per_minipod=32, span_h=8.0, lpjs=3, lpj_dps=(4,), lpj_hours=(3.0, 6.0))
MANY_FAULTS = FailureModel(infra_share=0.5)  # enough hardware faults in a small trace to measure


@dataclass
class InfraSays(SimulatedWorld):
    """A handler that calls every failure infrastructure, and a world truth that disagrees at will:
    decisions may follow the first, never the second."""

    truth: bool = True
    calls: list[tuple[str, int]] = field(default_factory=list)

    def diagnose(self, job: JobState, *, attempt: int) -> FailureInsight | None:
        self.calls.append((job.job_id, attempt))
        return FailureInsight(True, "infrastructure", "NVLinkError", latency_s=5.0)

    def failure_truth(self, job: JobState, attempt: int) -> bool:
        return self.truth

    def stats(self) -> dict[str, Any]:
        return {"source": "test"}


def _failed(job_id: str, duration: float, status: FinalStatus, node: int) -> JobState:
    job = JobState(JobSpec(job_id, 0.0, 8, duration, status=status))
    job.failures, job.failed_node = 1, node
    return job


def _reaction(policy: ArnoldSchedMate, jobs: list[JobState]) -> tuple[list[bool], list[int]]:
    view = SimpleNamespace(cordoned=np.zeros(8, dtype=bool))
    restarts = [policy.on_failure(j, view) for j in jobs]  # type: ignore[arg-type]
    return restarts, list(policy._cordon_now)


def test_swapping_two_jobs_outcomes_or_the_truth_does_not_change_what_the_adapter_passes() -> None:
    a = [_failed("a", 100.0, FinalStatus.COMPLETED, 3), _failed("b", 9000.0, FinalStatus.FAILED, 5)]
    b = [_failed("a", 9000.0, FinalStatus.FAILED, 3), _failed("b", 100.0, FinalStatus.COMPLETED, 5)]
    first = _reaction(ArnoldSchedMate(InfraSays(truth=True)), a)
    assert first == _reaction(ArnoldSchedMate(InfraSays(truth=False)), b)
    assert first == ([True, True], [3, 5])


def _world_run(policy: Any, seed: int = 0) -> tuple[dict[str, float | None], FailureWorld]:
    jobs = inject_failures(failure_trace(SMALL, seed), seed, MANY_FAULTS)
    world = FailureWorld.for_trace(jobs, seed, MANY_FAULTS)
    if isinstance(policy, type):
        policy = policy(seed=seed)
    cfg = SimConfig(seed=seed, checkpoint_interval=1800.0, resubmit_delay=3600.0, record_timeline=False)
    result = FailureSimulator(jobs, arnold_cluster(SMALL.minipods, SMALL.nodes_per_minipod), policy, cfg, world=world).run()
    return {j.job_id: j.end_time for j in result.jobs}, world


def test_without_a_diagnosis_the_adapter_is_arnold_restarting_decision_for_decision() -> None:
    alone, w_alone = _world_run(ArnoldRestart)
    sm = ArnoldSchedMate(NullInsights(), seed=0)
    with_null, w_null = _world_run(sm)
    assert with_null == alone
    assert sm.counters.cordons == 0 and sm.restart_counters.failures > 0
    assert w_alone.stats()["failure_events"] == w_null.stats()["failure_events"]


def test_the_adapter_cordons_the_failed_node_the_handler_blames() -> None:
    source = InfraSays()
    sm = ArnoldSchedMate(source, seed=0)
    _, world = _world_run(sm)
    assert source.calls and sm.counters.cordons > 0
    assert world.counts["cordons_by_policy"] == sm.counters.cordons


def test_cordoning_on_diagnoses_cuts_repeated_failures_on_faulty_nodes() -> None:
    cfg = ArnoldAdapterConfig(seeds=(0, 1, 2), workload=SMALL, failures=MANY_FAULTS, plots=False)
    # sensitivity knobs: a handler that is always right (the mechanism, not SchedMate's accuracy)
    result = run_arnold_adapter_experiment(None, make_source=calibrated_source(recall=1.0, precision=1.0), config=cfg)
    by = {(r.arm, r.seed): r.extra for r in result.rows}
    faulty = {arm: sum(by[(arm, s)]["repeated_faulty_failures"] for s in cfg.seeds) for arm in ("arnold", "arnold+sm")}
    assert faulty["arnold"] > 0
    assert faulty["arnold+sm"] < faulty["arnold"]
    wasted = {arm: sum(by[(arm, s)]["wasted_gpu_hours"] for s in cfg.seeds) for arm in ("arnold", "arnold+sm")}
    assert wasted["arnold+sm"] < wasted["arnold"]


def test_a_restarted_bug_is_given_up_after_max_stuck_failures_without_progress() -> None:
    policy = ArnoldRestart(max_stuck=2)
    job = _failed("bug", 3600.0, FinalStatus.FAILED, 0)
    cluster = arnold_cluster(1, 8)
    view = SimpleNamespace(cordoned=np.zeros(8, dtype=bool), cluster=cluster, now=0.0, free=cluster.capacity())
    assert policy.on_failure(job, view)  # type: ignore[arg-type]
    policy.on_requeue(job, view)  # type: ignore[arg-type]
    assert policy.on_failure(job, view)  # type: ignore[arg-type]  # no progress: stuck once
    policy.on_requeue(job, view)  # type: ignore[arg-type]
    assert not policy.on_failure(job, view)  # type: ignore[arg-type]  # stuck twice: the world's path
    assert policy.restart_counters.gave_up == 1


def test_lpjs_never_take_turns_preempting_each_other() -> None:
    # two 16-node LPJs on 32 nodes (seed 1): plain Arnold plans one onto the other's started zone
    # and they preempt each other every round (hundreds of restarts); the restart policy must not
    two_big = FailureWorkload(minipods=2, nodes_per_minipod=16, span_h=8.0, lpjs=2, lpj_hours=(3.0, 6.0))
    seed = 1
    jobs = inject_failures(failure_trace(two_big, seed), seed, MANY_FAULTS)
    world = FailureWorld.for_trace(jobs, seed, MANY_FAULTS)
    cfg = SimConfig(seed=seed, checkpoint_interval=1800.0, resubmit_delay=3600.0, record_timeline=False)
    result = FailureSimulator(jobs, arnold_cluster(2, 16), ArnoldRestart(seed=seed), cfg, world=world).run()
    lpjs = [j for j in result.jobs if j.spec.plan is not None]
    assert len(lpjs) == 2 and all(j.restarts <= j.failures + 10 for j in lpjs)
