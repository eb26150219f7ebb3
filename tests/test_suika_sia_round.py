"""Sia's whole-cluster re-solve on Suika's job model (issue 26): configurations, the ILP's
reallocation of running jobs, checkpoint-restart charging and the engine invariants."""

from __future__ import annotations

import pytest

from schedmate.schedulers.engine import SimConfig, Simulator, simulate
from schedmate.schedulers.job import JobSpec, ParallelPlan
from schedmate.schedulers.suika.arms import make_arm
from schedmate.schedulers.suika.config import ARMS, SIA
from schedmate.schedulers.suika.model import Hardware
from schedmate.schedulers.suika.policy import ElasticPolicy
from schedmate.schedulers.suika.redeploy import checkpoint_stall
from schedmate.schedulers.suika.sia_round import SiaParams, SiaRound, _pack, sia_sizes
from schedmate.schedulers.suika.timing import cluster_for
from schedmate.schedulers.suika.workload import MODEL_KEY, TraceConfig, generate_trace
from schedmate.schedulers.testing import check_policy

NO_RESTART = SimConfig(restart_cost=0.0, restart_cost_large=0.0)


def _job(job_id: str, submit: float, model: str, gpus: int, plan: ParallelPlan, duration: float = 20_000.0) -> JobSpec:
    return JobSpec(job_id, submit, gpus, duration, attributes={MODEL_KEY: model}, plan=plan)


def test_sizes_are_sias_configurations():
    assert sia_sizes(8, 3) == [1, 2, 4, 8, 16, 24]


@pytest.mark.parametrize("params", [SiaParams(), SiaParams(at_least_basic=True)])
def test_passes_the_invariant_checks(params):
    check = check_policy(lambda: SiaRound(SIA, params), num_jobs=30, seed=1)
    assert all(j.phase.is_terminal for j in check.result.jobs)


def test_the_arm_factory_and_the_guard():
    assert isinstance(make_arm(ARMS["sia"]), SiaRound)
    assert type(make_arm(ARMS["sia-proxy"])) is ElasticPolicy
    with pytest.raises(ValueError):
        ElasticPolicy(ARMS["sia"])


def test_a_lone_job_scales_out_and_pays_one_checkpoint_per_change():
    """One 4-GPU job on an idle 16-GPU cluster: the ILP gives it more than its default at once
    (it is waiting, no reallocation factor), and every later change costs a checkpoint stall."""
    jobs = [_job("a", 0.0, "GPT2-1.3B", 4, ParallelPlan(1, 1, 4))]
    policy = SiaRound()
    sim = Simulator(jobs, cluster_for(16), policy, SimConfig(restart_cost=0.0, restart_cost_large=0.0, max_time=200.0))
    sim.run()
    book = policy.jobs["a"]
    assert book.plan is not None and book.plan.num_gpus > 4
    stall = checkpoint_stall(book.jm.model.params_b)
    assert book.stall == pytest.approx(book.redeploys * stall)


def test_running_jobs_give_gpus_back_to_a_newcomer():
    """Unlike the proxy, which only hands out idle GPUs, Sia's re-solve shrinks a running job
    to admit another; the shrunk job stalls for a checkpoint, the newcomer waits for its GPUs."""
    plan = ParallelPlan(1, 1, 4)
    jobs = [_job("a", 0.0, "GPT2-1.3B", 4, plan), _job("b", 600.0, "GPT2-1.3B", 4, plan, 3_000.0)]
    policy = SiaRound()
    result = simulate(jobs, cluster_for(8), policy, NO_RESTART)
    a, b = (next(j for j in result.jobs if j.job_id == k) for k in "ab")
    assert a.resizes >= 2  # grown to the node, then shrunk for b
    assert 600.0 <= b.first_start <= 660.0 + 1e-6  # the next 60 s round
    ready = next(t for t, s, _ in b.speed_log if s > 0)
    assert ready >= b.first_start + checkpoint_stall(1.3) - 1e-6


def test_replays_the_quick_trace_deterministically():
    jobs = generate_trace(TraceConfig(hours=1.0, num_jobs=12), seed=3)
    ends = []
    for _ in range(2):
        res = simulate(jobs, cluster_for(64), SiaRound(), NO_RESTART)
        ends.append([j.end_time for j in res.jobs])
    assert ends[0] == ends[1] and all(e is not None for e in ends[0])


def test_packing_keeps_previous_gpus_and_whole_nodes():
    hw = Hardware()
    free = set(range(24))  # three 8-GPU nodes
    placed = _pack([("big", 16, frozenset(range(8, 16))), ("small", 2, frozenset({21, 22}))], free, hw)
    assert placed is not None
    assert len({g // 8 for g in placed["big"]}) == 2  # whole nodes
    assert set(range(8, 16)) <= set(placed["big"])  # its previous node is kept
    assert placed["small"] == (21, 22)  # its previous GPUs
    assert _pack([("a", 16, frozenset()), ("b", 16, frozenset())], free, hw) is None  # only 3 nodes
