"""Suika's SCHEDULE on the engine: invariants, basic-first admission, the tau grant rule, redeployment timing."""

from __future__ import annotations

import pytest

from schedmate.schedulers.engine import SimConfig, Simulator, simulate
from schedmate.schedulers.job import JobSpec, ParallelPlan
from schedmate.schedulers.registry import make_policy
from schedmate.schedulers.suika.config import ARMS, QueueOrder, ULoad
from schedmate.schedulers.suika.model import throughput
from schedmate.schedulers.suika.planner import benefit, best_expansions
from schedmate.schedulers.suika.policy import (
    ElasticPolicy,
    NonElasticFIFO,
    RubickProxy,
    SiaProxy,
    Suika,
    SuikaDP,
    engine_plan,
)
from schedmate.schedulers.suika.timing import cluster_for, decision_time
from schedmate.schedulers.suika.workload import MODEL_KEY, TraceConfig, assign_model, generate_trace
from schedmate.schedulers.testing import check_policy

NO_RESTART = SimConfig(restart_cost=0.0, restart_cost_large=0.0)


def _job(job_id: str, submit: float, model: str, gpus: int, plan: ParallelPlan, duration: float = 20_000.0) -> JobSpec:
    return JobSpec(job_id, submit, gpus, duration, attributes={MODEL_KEY: model}, plan=plan)


@pytest.mark.parametrize("cls", [Suika, SuikaDP, NonElasticFIFO, SiaProxy, RubickProxy])
def test_every_arm_passes_the_invariant_checks(cls):
    check = check_policy(cls, num_jobs=30)
    assert all(j.phase.is_terminal for j in check.result.jobs)


@pytest.mark.parametrize(
    "options",
    [{"order": QueueOrder.SJF}, {"u_load": ULoad.RUNNING_AND_QUEUED}, {"lazy_grants": False}, {"sigma_err": 0.2}],
)
def test_options_pass_the_invariant_checks(options):
    check = check_policy(lambda: Suika(**options), num_jobs=20, seed=2)
    assert all(j.phase.is_terminal for j in check.result.jobs)


def test_registered_and_elastic_on_a_random_trace():
    policy = make_policy("suika")
    assert policy.name == "suika"
    check = check_policy(lambda: make_policy("suika"), num_jobs=30, seed=3)
    assert check.checked.inner.run_stats()["grants"] > 0


def test_basic_demand_beats_expansions():
    """A 4-GPU job expands onto the idle half of a node; a newcomer reclaims it at once."""
    plan = ParallelPlan(1, 1, 4)
    jobs = [_job("a", 0.0, "GPT2-1.3B", 4, plan), _job("b", 600.0, "GPT2-1.3B", 4, plan, 3_000.0)]
    policy = Suika()
    result = simulate(jobs, cluster_for(8), policy, NO_RESTART)
    a, b = (next(j for j in result.jobs if j.job_id == k) for k in "ab")
    assert a.resizes >= 2  # grown, then shrunk back for b
    assert b.first_start == pytest.approx(600.0)  # admitted at arrival...
    assert b.speed_log[0][1] == 0.0  # ...and runs once a's device-to-device shrink is done
    ready = next(t for t, s, _ in b.speed_log if s > 0)
    assert 600.0 < ready <= 600.0 + 30.0 + 30.0


def _grants(lambda_tau: float) -> tuple[int, float, float]:
    jobs = [_job("a", 0.0, "GPT2-1.3B", 4, ParallelPlan(1, 1, 4))]
    policy = ElasticPolicy(ARMS["suika"], lambda_tau=lambda_tau)
    sim = Simulator(jobs, cluster_for(8), policy, SimConfig(restart_cost=0.0, restart_cost_large=0.0, max_time=45.0))
    sim.run()
    book = policy.jobs["a"]
    base = book.history[0].before if book.history else book.plan
    cands = best_expansions(base, range(4, 8), book.coeffs, policy._hw, book.cap)
    b = max(benefit(4, len(x.added), throughput(base, book.coeffs, policy._hw), x.throughput) for x in cands)
    return len(book.history), b, (4 / 8) ** lambda_tau


@pytest.mark.parametrize("lambda_tau", [0.01, 1.0, 4.0])
def test_grant_follows_tau(lambda_tau):
    granted, b, tau = _grants(lambda_tau)
    assert (granted > 0) == (b >= tau)


def test_tau_separates_the_settings():
    _, b, _ = _grants(1.0)
    assert 0.5**4 < b < 0.5**0.01  # so lambda 0.01 (tau 0.993) refuses what lambda 4 (tau 0.06) grants
    assert _grants(0.01)[0] == 0 and _grants(4.0)[0] > 0


def test_checkpoint_baselines_stall_longer():
    jobs = generate_trace(TraceConfig(hours=1.0, num_jobs=12), seed=1)
    stalls = {}
    for cls in (Suika, SiaProxy, RubickProxy):
        policy = cls()
        simulate(jobs, cluster_for(64), policy, NO_RESTART)
        stalls[policy.name] = policy.run_stats()["mean_stall_seconds"]
    assert stalls["suika"] > 0
    assert stalls["sia-proxy"] > 2 * stalls["suika"] and stalls["rubick-proxy"] > 2 * stalls["suika"]


def test_model_assignment():
    jm = assign_model(2)
    assert jm.gpus == 2 and jm.model.gpus == 1 and jm.dp == 2  # a 1-GPU default, data-parallel widened
    assert assign_model(16).model.size_class == "L"


def test_engine_plan_is_exact_for_symmetric_plans():
    jobs = [_job("a", 0.0, "LLaMA2-13B", 16, ParallelPlan(4, 1, 4))]
    policy = Suika()
    Simulator(jobs, cluster_for(64), policy, SimConfig(max_time=1.0)).run()
    plan = policy.jobs["a"].plan
    assert engine_plan(plan) == ParallelPlan(4, 1, 4)


def test_decision_time_is_measured():
    t = decision_time(64, rounds=1)
    assert t.running_jobs > 0 and t.idle_gpus > 0 and t.median_s > 0
