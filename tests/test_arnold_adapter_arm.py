"""Arnold in the generic adapter arm: `adapters.arnold.ADAPTER` names a failure world on the simulator side
(`sim.experiments.arnold.failure_world`): the realistic world's jobs with the case study's failures, an Arnold
cluster of the arm's GPUs, `FailureSimulator` on a fresh `FailureWorld` per run, and the adapter's source
wrapped in `CauseDiagnosis` for that run. The adapter decides on the diagnosis only."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from schedmate.adapters.arnold import ArnoldRestart, ArnoldSchedMate
from schedmate.adapters.insights import FailureInsight, InsightSource
from schedmate.adapters.registry import PolicyWorld, adapter_for
from schedmate.schedulers.arnold.topology import arnold_cluster
from schedmate.schedulers.engine import SimConfig, SimResult
from schedmate.schedulers.job import JobSpec, JobState
from schedmate.schedulers.policy import Policy
from schedmate.sim.experiments.adapter import AdapterArmConfig, run_adapter_experiment, world_jobs
from schedmate.sim.experiments.arnold import sized_cluster
from schedmate.sim.experiments.common import NullInsights
from schedmate.sim.failures import FAILURE_KEY, CauseDiagnosis, FailureModel, inject_failures

SPEC = adapter_for("arnold")


class AlwaysInfrastructure(InsightSource):
    """A handler that blames the infrastructure for every failure, whatever the world's cause."""

    def diagnose(self, job: JobState, *, attempt: int) -> FailureInsight | None:
        return FailureInsight(infrastructure=True, category="infrastructure", reason="NCCLTimeout")


@pytest.fixture(scope="module")
def jobs() -> list[JobSpec]:
    made = world_jobs(AdapterArmConfig(policy="arnold", n_jobs=60), 0)
    assert made is not None
    return made[0]


@pytest.fixture(scope="module")
def world(jobs: list[JobSpec]) -> PolicyWorld:
    return SPEC.build_world(jobs, 0, 16)


def _run(world: PolicyWorld, policy: Policy) -> SimResult:
    return world.simulate(world.jobs, world.cluster, policy, SimConfig(seed=0, record_timeline=False))


def _outcomes(result: SimResult) -> list[tuple[Any, ...]]:
    return [(j.job_id, j.phase, j.end_time, j.failures, j.wasted_gpu_time) for j in result.jobs]


def test_arnold_is_registered_with_its_world_named_on_the_simulator_side() -> None:
    assert SPEC.policy == "arnold" and SPEC.reads == ("diagnose",)
    assert SPEC.world == "schedmate.sim.experiments.arnold:failure_world"  # named: adapters never import sim
    assert type(SPEC.build_baseline(seed=0)) is ArnoldRestart
    assert isinstance(SPEC.build_adapter(NullInsights(), seed=0), ArnoldSchedMate)


def test_the_world_is_the_jobs_with_the_case_studys_failures_on_an_arnold_cluster_of_the_arms_gpus(
        jobs: list[JobSpec], world: PolicyWorld) -> None:
    assert world.cluster == arnold_cluster(1, 2, 2)  # two 8-GPU nodes in one leaf of one minipod
    capped = [s if s.num_gpus <= 16 else replace(s, num_gpus=16) for s in jobs]
    assert world.jobs == inject_failures(capped, 0, FailureModel())
    assert any(FAILURE_KEY in s.attributes for s in world.jobs)
    assert dict(world.options) == {"seed": 0, "max_stuck": 2}
    assert [sized_cluster(g).total_gpus for g in (8, 32, 48, 2048, 2100)] == [8, 32, 48, 2048, 2048]


def test_with_no_diagnosis_the_adapter_decides_exactly_as_arnold_restart(world: PolicyWorld) -> None:
    plain = _run(world, ArnoldRestart(seed=0))
    adapter = ArnoldSchedMate(NullInsights(), seed=0)
    with_sm = _run(world, adapter)
    assert _outcomes(with_sm) == _outcomes(plain)
    assert adapter.counters.cordons == 0 and adapter.counters.diagnosed == 0
    # the world's cause reached the adapter, for its counters only: it missed an infrastructure failure
    assert isinstance(adapter.source, CauseDiagnosis) and isinstance(adapter.source.source, NullInsights)
    assert adapter.counters.missed_infra >= 1


def test_a_source_that_always_says_infrastructure_makes_the_adapter_cordon_the_failed_node(world: PolicyWorld) -> None:
    adapter = ArnoldSchedMate(AlwaysInfrastructure(), seed=0)
    result = _run(world, adapter)
    c = adapter.counters
    assert c.diagnosed == c.said_infra == adapter.restart_counters.failures > 0
    assert c.cordons > 0
    assert isinstance(adapter.source, CauseDiagnosis)
    assert adapter.source.world.counts["cordons_by_policy"] == c.cordons
    # it acts on the diagnosis, not on the world's cause: application errors blamed on a node are cordoned too
    assert c.false_positives > 0 and c.true_positives + c.false_positives == c.said_infra
    assert _outcomes(result) != _outcomes(_run(world, ArnoldRestart(seed=0)))


def test_every_run_gets_a_fresh_failure_world(world: PolicyWorld) -> None:
    first, second = ArnoldSchedMate(AlwaysInfrastructure(), seed=0), ArnoldSchedMate(AlwaysInfrastructure(), seed=0)
    assert _outcomes(_run(world, first)) == _outcomes(_run(world, second))
    assert isinstance(first.source, CauseDiagnosis) and isinstance(second.source, CauseDiagnosis)
    assert first.source.world is not second.source.world
    assert first.source.world.counts == second.source.world.counts


class AlwaysInfrastructureWithLog(AlwaysInfrastructure):
    def advice_log(self) -> dict[str, float | None]:
        return {}  # a source that keeps an advice log; Arnold's adapter never asks it for advice


def test_in_the_generic_arm_the_adapter_cordons_and_reports_no_advisor_quality_it_never_asked_for() -> None:
    result = run_adapter_experiment(None, make_source=lambda specs, seed, rate: AlwaysInfrastructureWithLog(),
                                    config=AdapterArmConfig(policy="arnold", n_jobs=60, gpus=16))
    base, sm = result.rows
    assert (base.arm, sm.arm) == ("arnold", "arnold+sm")
    assert "schedmate" not in base.extra["policy"] and sm.extra["policy"]["schedmate"]["cordons"] > 0
    assert "advisor_quality" not in sm.extra and "advisor estimates" not in result.summary


def test_the_arm_reports_the_worlds_own_counters_for_both_arms() -> None:
    result = run_adapter_experiment(None, make_source=lambda specs, seed, rate: AlwaysInfrastructure(),
                                    config=AdapterArmConfig(policy="arnold", n_jobs=60, gpus=16))
    base, sm = result.rows
    assert set(SPEC.counters) == {"faulty_failures", "ops_cordons", "cordons_of_healthy_nodes"}
    for row in (base, sm):
        assert all(isinstance(row.extra[f"world.{k}"], float) for k in SPEC.counters)
    # blaming every failure on its node cordons healthy nodes; Arnold alone never cordons a node
    assert base.extra["world.cordons_of_healthy_nodes"] == 0 < sm.extra["world.cordons_of_healthy_nodes"]
    assert "cordons_of_healthy_nodes 0.0 -> " in result.summary

