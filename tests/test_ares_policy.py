"""Ares on the engine: the spec's worked examples end to end (§3.8, o_j = 0) and engine invariants."""

from __future__ import annotations

import pytest

from schedmate.schedulers.ares.config import AresConfig
from schedmate.schedulers.ares.policy import CURVE_KEY, Ares, EfsInt, FifoRigid, LasRigid, OptimusLike, SrtfRigid
from schedmate.schedulers.ares.scaling import ScalingCurve, linear_curve, table_curve
from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.engine import SimConfig, simulate
from schedmate.schedulers.job import JobSpec

H = 3600.0
FREE_RESTARTS = SimConfig(restart_cost=0.0, restart_cost_large=0.0)


def _job(job_id: str, at_h: float, gpus: int, gpu_hours: float, curve: ScalingCurve) -> JobSpec:
    """A job of `gpu_hours` GPU·h at its demand: it runs gpu_hours/gpus hours there."""
    return JobSpec(job_id, at_h * H, gpus, gpu_hours / gpus * H, attributes={CURVE_KEY: curve, "restart_cost": 0.0})


def _finishes(jobs: list[JobSpec], gpus: int, policy: Ares) -> dict[str, float]:
    result = simulate(jobs, ClusterSpec.homogeneous(gpus // 4, 4), policy, FREE_RESTARTS)
    return {j.job_id: j.end_time / H for j in result.jobs}  # type: ignore[operator]


@pytest.mark.parametrize("round_s", [0.0, 60.0])
def test_example_1_runs_one_job_at_a_time(round_s: float) -> None:
    """Ex. 1: M = 8, d = 1, linear → finishes 1.8, 4.2, 7.8 h (avg 4.6 h vs GPS 6.6 h)."""
    curve = linear_curve(8)
    jobs = [_job("j1", 0, 1, 14.4, curve), _job("j2", 0, 1, 19.2, curve), _job("j3", 0, 1, 28.8, curve)]
    done = _finishes(jobs, 8, Ares(round_s=round_s))
    assert done == pytest.approx({"j1": 1.8, "j2": 4.2, "j3": 7.8})
    assert sum(done.values()) / 3 == pytest.approx(4.6)


@pytest.mark.parametrize("round_s", [0.0, 60.0])
def test_example_2_preemption_and_caps(round_s: float) -> None:
    """Ex. 2: M = 8, d = 2 → job1 3.0 h, job2 5.5 h, job3 4.5 h (GPS: 3.5, 5.5, 5.0)."""
    capped = table_curve({1: 1.0, 2: 2.0, 4: 4.0, 8: 4.4}, 8)  # linear to 4, e(8) < α
    jobs = [_job("job1", 0, 2, 12, capped), _job("job2", 0, 2, 22, linear_curve(8)), _job("job3", 2, 2, 10, capped)]
    policy = Ares(round_s=round_s)
    done = _finishes(jobs, 8, policy)
    assert done == pytest.approx({"job1": 3.0, "job2": 5.5, "job3": 4.5})
    # job2: start on 4, preempted at 2 h, back on 4 at 3 h, grown to 8 at 4.5 h
    assert policy.run_stats()["changes"] == 3 + 3


def test_example_2_without_shrink_waits_rigidly() -> None:
    """allow_shrink=False: job2 (cap 8) cannot shrink to the 4 free GPUs, so it runs rigid at d = 2."""
    capped = table_curve({1: 1.0, 2: 2.0, 4: 4.0, 8: 4.4}, 8)
    jobs = [_job("job1", 0, 2, 12, capped), _job("job2", 0, 2, 22, linear_curve(8))]
    done = _finishes(jobs, 8, Ares(AresConfig(round_s=0, allow_shrink=False)))
    assert done["job1"] == pytest.approx(3.0)
    assert done["job2"] == pytest.approx(3.0 + (22 - 2 * 3) / 8)


def test_rounds_hold_freed_gpus_until_the_boundary() -> None:
    """A completion inside a round frees GPUs that stay idle until the next 60 s boundary (§3.5)."""
    curve = linear_curve(4)
    jobs = [
        JobSpec("a", 0.0, 4, 90.0, attributes={CURVE_KEY: curve, "restart_cost": 0.0}),
        JobSpec("b", 0.0, 4, 600.0, attributes={CURVE_KEY: curve, "restart_cost": 0.0}),
    ]
    result = simulate(jobs, ClusterSpec.homogeneous(1, 4), Ares(round_s=60.0), FREE_RESTARTS)
    ends = {j.job_id: j.end_time for j in result.jobs}
    assert ends["a"] == pytest.approx(90.0)
    assert ends["b"] == pytest.approx(120.0 + 600.0)  # starts at the 120 s boundary, not at 90 s


def test_preemption_pays_restart_cost_and_keeps_progress() -> None:
    curve = linear_curve(8)
    jobs = [
        JobSpec("a", 0.0, 4, 3600.0, attributes={CURVE_KEY: curve, "restart_cost": 30.0}),
        JobSpec("b", 600.0, 4, 60.0, attributes={CURVE_KEY: curve, "restart_cost": 30.0}),
    ]
    result = simulate(jobs, ClusterSpec.homogeneous(2, 4), Ares(round_s=60.0))
    a = next(j for j in result.jobs if j.job_id == "a")
    # a runs on 8 GPUs (speed 2). b arrives at 600 s with F_b = V(600) + 240 = 5040 < F_a = 14400
    # and takes all 8 GPUs (its cap): a is preempted with 1200 s of work done. b ends at 630 s;
    # a resumes at the 660 s boundary, pays 30 s, and finishes the 2400 s left at speed 2.
    flat = [x for point in a.speed_log for x in point]
    assert flat == pytest.approx([0.0, 2.0, 0.0, 600.0, 0.0, 1200.0, 690.0, 2.0, 1200.0, 1890.0, 0.0, 3600.0])
    assert a.restarts == 1


ARTIFACT = {"priority_reference": "scaling_gps", "efficiency_baseline": "one_gpu", "size_basis": "one_gpu"}


@pytest.mark.parametrize(
    "factory",
    [Ares, lambda: Ares(fill_leftover=True), lambda: Ares(**ARTIFACT), EfsInt, OptimusLike, FifoRigid, SrtfRigid, LasRigid],
)
def test_every_arm_finishes_a_random_mix(factory) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    rng = np.random.default_rng(3)
    jobs = []
    for i in range(40):
        d = int(rng.choice([1, 2, 4]))
        curve = table_curve({1: 1.0, 2: 1.9, 4: 3.5, 8: 6.0, 16: 9.0}, 16)
        at, duration = float(rng.uniform(0, 4 * H)), float(rng.uniform(300, 3 * H))
        jobs.append(JobSpec(f"j{i}", at, d, duration, attributes={CURVE_KEY: curve}))
    result = simulate(jobs, ClusterSpec.homogeneous(4, 4), factory())
    assert all(j.end_time is not None and j.phase.value == "completed" for j in result.jobs)
    assert result.busy_gpu_seconds <= 16 * result.end_time + 1e-6


@pytest.mark.parametrize("resubmit", [False, True])
@pytest.mark.parametrize("factory", [Ares, lambda: Ares(fill_leftover=True, round_s=0.0), EfsInt, OptimusLike, SrtfRigid])
def test_engine_invariants_hold(factory, resubmit: bool) -> None:  # type: ignore[no-untyped-def]
    """The shipped invariant wrapper on a random trace (failures included, requeued or not)."""
    from schedmate.schedulers.testing import check_policy

    check_policy(factory, resubmit=resubmit, num_jobs=40)


def test_example_2_is_fair_against_gps() -> None:
    """Ex. 2: FTF ≤ 1 for every job against GPS (R-lin): 3/3.5, 5.5/5.5, 2.5/3."""
    from schedmate.schedulers.ares.metrics import ftf_metrics

    capped = table_curve({1: 1.0, 2: 2.0, 4: 4.0, 8: 4.4}, 8)
    jobs = [_job("job1", 0, 2, 12, capped), _job("job2", 0, 2, 22, linear_curve(8)), _job("job3", 2, 2, 10, capped)]
    result = simulate(jobs, ClusterSpec.homogeneous(2, 4), Ares(), FREE_RESTARTS)
    report = ftf_metrics(result, "lin")
    assert report.ftf == pytest.approx({"job1": 3 / 3.5, "job2": 1.0, "job3": 2.5 / 3.0})
    assert report.unfair_fraction == 0.0


def test_unknown_size_is_served_after_known_jobs() -> None:
    """§7.14: a job without a size estimate gets no virtual finish time and waits for known jobs."""

    class NoEstimateForX(Ares):
        def estimate_gpu_time(self, job, view):  # type: ignore[no-untyped-def]
            return None if job.job_id == "x" else super().estimate_gpu_time(job, view)

    curve = linear_curve(4)
    jobs = [_job("x", 0, 4, 0.4, curve), _job("y", 0, 4, 4.0, curve)]
    policy = NoEstimateForX(round_s=0.0)
    done = _finishes(jobs, 4, policy)
    assert done == pytest.approx({"y": 1.0, "x": 1.1})  # x is tiny but runs second
    assert policy.run_stats()["unknown_size"] == 1


def test_estimate_drives_the_order_not_the_execution() -> None:
    """The clock uses L̂ (spec attribute), execution the true work: a job claiming to be small runs first."""
    curve = linear_curve(4)
    small_claim = JobSpec("liar", 0.0, 4, 2 * H, attributes={CURVE_KEY: curve, "restart_cost": 0.0, "est_gpu_time": 60.0})
    honest = JobSpec("honest", 0.0, 4, 1 * H, attributes={CURVE_KEY: curve, "restart_cost": 0.0})
    done = _finishes([small_claim, honest], 4, Ares(round_s=0.0))
    assert done == pytest.approx({"liar": 2.0, "honest": 3.0})


def test_cap_respects_the_gpu_types_a_job_may_use() -> None:
    """A job allowed only on the 4 A100s of an 8-GPU cluster scales to 4, never asks for 8."""
    from schedmate.schedulers.cluster import NodeSpec

    cluster = ClusterSpec((NodeSpec("a", 4, "A100"), NodeSpec("v", 4, "V100")))
    job = JobSpec("j", 0.0, 1, 4 * H, gpu_types=("A100",), attributes={CURVE_KEY: linear_curve(8), "restart_cost": 0.0})
    result = simulate([job], cluster, Ares(round_s=0.0), FREE_RESTARTS)
    (state,) = result.jobs
    assert state.end_time == pytest.approx(1 * H)


def test_parallel_plan_jobs_resize_in_whole_replicas() -> None:
    """A TP2×DP2 job (cap 8) facing 7 free GPUs shrinks to 6, a whole number of TP pairs (the
    engine would reject 7), then grows to 8 when the rigid 1-GPU head job leaves."""
    from schedmate.schedulers.job import ParallelPlan
    from schedmate.schedulers.testing import check_policy

    head = JobSpec("head", 0.0, 1, 600.0, attributes={CURVE_KEY: ScalingCurve((1.0,)), "restart_cost": 0.0})
    attrs = {CURVE_KEY: linear_curve(8), "restart_cost": 0.0}
    tp = JobSpec("tp", 0.0, 4, 3600.0, plan=ParallelPlan(tp=2, dp=2), attributes=attrs)
    check = check_policy(lambda: Ares(round_s=0.0), jobs=[head, tp], cluster=ClusterSpec.homogeneous(2, 4))
    runs = {j.job_id: j for j in check.result.jobs}
    assert [speed for _, speed, _ in runs["tp"].speed_log] == pytest.approx([1.5, 0.0, 2.0, 0.0])  # 0: the resize
    assert runs["tp"].end_time == pytest.approx(600.0 + (3600.0 - 900.0) / 2.0)
