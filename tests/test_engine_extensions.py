"""Engine extensions for placement-aware policies, written as a specification.

The placer sees the job (its plan); speed is the policy's declared `throughput` model (default:
the engine's scaling, so existing policies run unchanged); an elastic resize keeps progress, pays
the restart cost and rescales the plan; policies keep typed state; engine facts are typed fields.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.decisions import Decision, InvalidDecision, Start
from schedmate.schedulers.engine import simulate
from schedmate.schedulers.job import JobSpec, JobState, ParallelPlan, Phase, Placement, per_gpu_batch
from schedmate.schedulers.placement import Consolidate
from schedmate.schedulers.policies import FIFO
from schedmate.schedulers.policy import ClusterView, Policy
from schedmate.schedulers.testing import check_policy
from schedmate.schedulers.topology import Level

PRETRAIN = JobSpec("llm", 0, 32, 1000, plan=ParallelPlan(tp=8, pp=4, dp=1), global_batch=512)


class Recording(Consolidate):
    """A placer that records what it was asked to place."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, ParallelPlan | None, int]] = []

    def place(self, job, free, eligible, n, cluster):  # type: ignore[no-untyped-def]
        self.seen.append((job.job_id, job.spec.plan, n))
        return super().place(job, free, eligible, n, cluster)


def test_the_placer_receives_the_job_with_its_parallel_plan():
    placer = Recording()
    simulate([PRETRAIN, JobSpec("sweep", 0, 8, 10)], ClusterSpec.parse("8x8"), FIFO(), placer=placer)
    assert ("llm", ParallelPlan(8, 4, 1), 32) in placer.seen and ("sweep", None, 8) in placer.seen


class TopologySlowdown(FIFO):
    """A declared placement-dependent speed: 10% slower per topology level crossed."""

    name = "topo-slow"

    def throughput(self, job: JobState, placement: Placement, view: ClusterView) -> float:
        level = view.cluster.level_of(placement)
        return view.base_speed(job, placement) * (1.0 - 0.1 * int(level))


@pytest.mark.parametrize(("gpus", "level"), [(8, Level.NODE), (16, Level.SWITCH), (64, Level.POD)])
def test_a_policy_declared_throughput_makes_speed_depend_on_placement(gpus, level):
    (job,) = simulate([JobSpec("j", 0, gpus, 900)], ClusterSpec.parse("16x8"), TopologySlowdown()).jobs
    assert job.end_time == pytest.approx(900 / (1.0 - 0.1 * int(level)))


def test_the_default_throughput_is_the_engines_scaling_times_the_slowest_gpu_type():
    seen: list[float] = []

    class Spy(FIFO):
        def throughput(self, job, placement, view):
            speed = super().throughput(job, placement, view)
            seen.append(speed)
            return speed

    cluster = ClusterSpec(ClusterSpec.parse("1x4:T4,1x4:A100").nodes, gpu_speed={"T4": 0.5, "A100": 2.0})
    (job,) = simulate([JobSpec("j", 0, 8, 100)], cluster, Spy()).jobs
    assert seen == [0.5] and job.end_time == pytest.approx(200.0)


def test_a_caller_override_still_replaces_the_policy_model():
    (job,) = simulate([JobSpec("j", 0, 1, 100)], ClusterSpec.parse("1x1"), TopologySlowdown(), throughput=lambda j, c: 0.25).jobs
    assert job.end_time == pytest.approx(400.0)


# ---------------------------------------------------------------- elastic resize


class Elastic(Policy):
    """Starts `job` on 8 GPUs, grows it to 16 at t=100 with `Plan.try_resize`, records per-GPU batch."""

    name = "elastic"

    def __init__(self, grow_to: int = 16, plan: ParallelPlan | None = None) -> None:
        self.grow_to, self.plan_to = grow_to, plan
        self.batches: dict[str, float] = {}  # typed per-job state kept by the policy
        self.resized: list[bool] = []

    def schedule(self, view: ClusterView) -> Sequence[Decision]:
        plan = view.plan()
        for job in list(view.waiting()):
            if plan.try_start(job, 8):
                view.wake_at(100.0)
        if view.now == 100.0:
            for job in list(view.running()):
                ok = plan.try_resize(job, self.grow_to, plan=self.plan_to)
                self.resized.append(ok)
        return plan.decisions

    def on_start(self, job: JobState, view: ClusterView) -> None:
        if job.spec.global_batch:
            self.batches[job.job_id] = per_gpu_batch(job.spec.global_batch, job.num_gpus)


def test_try_resize_grows_a_job_keeping_progress_and_paying_the_restart_cost():
    job_spec = JobSpec("j", 0, 8, 1000, plan=ParallelPlan(tp=4, pp=1, dp=2), global_batch=256)
    policy = Elastic()
    check = check_policy(lambda: policy, [job_spec], ClusterSpec.parse("4x8"))
    (job,) = check.result.jobs
    # 100 s of work at 8 GPUs, restart cost 60 s (16 > 8 GPUs), then 900 s of work twice as fast
    assert policy.resized == [True] and job.end_time == pytest.approx(100 + 60 + 900 / 2)
    assert job.resizes == 1 and job.restarts == 1 and job.plan == ParallelPlan(4, 1, 4)
    assert policy.batches["j"] == 256 / 16  # fixed global batch: per-GPU batch halves


def test_a_resize_may_change_the_plan_itself_and_a_plan_must_fit_the_placement():
    new = ParallelPlan(tp=4, pp=4, dp=1)
    policy = Elastic(plan=new)
    (job,) = simulate([JobSpec("j", 0, 8, 1000, plan=ParallelPlan(4, 1, 2))], ClusterSpec.parse("4x8"), policy).jobs
    assert job.plan == new
    bad = Elastic(plan=ParallelPlan(tp=8, pp=4))
    with pytest.raises(InvalidDecision, match="needs 32 GPUs, placement has 16"):
        simulate([JobSpec("j", 0, 8, 1000)], ClusterSpec.parse("4x8"), bad)


def test_a_start_on_gpus_that_do_not_hold_whole_replicas_is_refused():
    class Odd(Policy):
        name = "odd"

        def schedule(self, view):
            return [Start("llm", ((0, 8), (1, 4)))] if view.num_waiting() else []

    with pytest.raises(InvalidDecision, match="12 GPUs do not hold whole replicas of TP8xPP4xDP1"):
        simulate([PRETRAIN], ClusterSpec.parse("8x8"), Odd())


def test_try_resize_fails_cleanly_when_the_cluster_cannot_hold_the_new_size():
    policy = Elastic(grow_to=64)
    (job,) = simulate([JobSpec("j", 0, 8, 1000)], ClusterSpec.parse("4x8"), policy).jobs
    assert policy.resized == [False] and job.resizes == 0 and job.end_time == pytest.approx(1000)


def test_a_shrink_hands_gpus_back_within_the_same_plan():
    class ShrinkAndStart(Policy):
        name = "shrink"

        def schedule(self, view):
            plan = view.plan()
            if view.now == 0:
                plan.try_start(view.job("big"), 8)
                view.wake_at(50.0)
            elif view.now == 50:
                assert plan.try_resize(view.job("big"), 4)
                assert plan.try_start(view.job("small"))  # fits only in the GPUs the shrink frees
            return plan.decisions

    jobs = [JobSpec("big", 0, 8, 1000), JobSpec("small", 10, 4, 100)]
    result = check_policy(ShrinkAndStart, jobs, ClusterSpec.parse("1x8"))
    by = {j.job_id: j for j in result.result.jobs}
    assert by["small"].first_start == 50 and by["big"].resizes == 1
    assert by["big"].end_time == pytest.approx(50 + 40 + 950 / 0.5)


# ---------------------------------------------------------------- typed engine facts


def test_engine_facts_are_typed_fields():
    class NoBob(FIFO):
        def admit(self, job, view):
            return job.spec.user != "bob"

    jobs = [JobSpec("big", 0, 64, 10), JobSpec("b", 0, 1, 10, user="bob"), JobSpec("ok", 0, 1, 10)]
    by = {j.job_id: j for j in simulate(jobs, ClusterSpec.parse("1x8"), NoBob()).jobs}
    assert by["big"].phase is Phase.CANCELLED and "eligible capacity 8" in (by["big"].cancel_reason or "")
    assert by["b"].cancel_reason and "rejected" in by["b"].cancel_reason
    assert by["ok"].cancel_reason is None and by["ok"].evictions == 0 and by["ok"].failed_node is None


def test_run_stats_is_a_method_with_an_empty_default():
    assert FIFO().run_stats() == {}
    assert Policy.prepare_jobs([PRETRAIN]) == [PRETRAIN]

