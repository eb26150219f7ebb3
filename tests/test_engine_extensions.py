"""Engine extensions for placement-aware policies, written as a specification.

The placer sees the job (its plan); speed is the policy's declared `throughput` model (default:
the engine's scaling, so existing policies run unchanged); an elastic resize keeps progress, pays
the restart cost and rescales the plan; policies keep typed state; engine facts are typed fields;
a policy may price its own restarts (`Policy.restart_cost`), also on a first launch when asked.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.decisions import Decision, Evict, InvalidDecision, Start
from schedmate.schedulers.engine import SimConfig, simulate
from schedmate.schedulers.job import JobSpec, JobState, ParallelPlan, Phase, Placement, per_gpu_batch
from schedmate.schedulers.metrics import job_records
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
    result = simulate(jobs, ClusterSpec.parse("1x8"), NoBob())
    by = {j.job_id: j for j in result.jobs}
    assert by["big"].phase is Phase.CANCELLED and "eligible capacity 8" in (by["big"].cancel_reason or "")
    assert by["b"].cancel_reason and "rejected" in by["b"].cancel_reason
    assert by["ok"].cancel_reason is None and by["ok"].evictions == 0 and by["ok"].failed_node is None
    assert all(j.info == {} for j in result.jobs)  # no string-keyed copies of the typed facts
    notes = {r.job_id: r.note for r in job_records(result)}  # the reports read the typed fields
    assert notes == {"big": "asks 64 GPUs; eligible capacity 8", "b": "rejected", "ok": ""}


def test_an_eviction_is_counted_in_the_typed_field_only():
    class ShareThenEvict(Policy):
        """a runs alone; b shares its GPU at t=0; b is evicted at t=10 and reruns after a."""

        name = "share-evict"

        def schedule(self, view: ClusterView) -> Sequence[Decision]:
            plan = view.plan()
            a, b = view.job("a"), view.job("b")
            if a.phase is Phase.QUEUED:
                plan.try_start(a)
                view.wake_at(0.0)
            elif b.phase is Phase.QUEUED and b.evictions == 0:
                plan.colocate(b, a)
                view.wake_at(10.0)
            elif view.now == 10.0 and b.colocated_with == "a":
                return [Evict("b")]
            elif b.phase is Phase.PREEMPTED and a.phase.is_terminal:
                plan.try_start(b)
            return plan.decisions

    jobs = [JobSpec("a", 0, 1, 100), JobSpec("b", 0, 1, 100)]
    by = {j.job_id: j for j in simulate(jobs, ClusterSpec.parse("1x1"), ShareThenEvict()).jobs}
    assert by["b"].evictions == 1 and by["a"].evictions == 0 and by["b"].restarts == 1
    assert by["a"].info == {} and by["b"].info == {}


# ---------------------------------------------------------------- restart cost: a policy capability


class PreemptOnce(FIFO):
    """FIFO that preempts every running job at t=100 once (it restarts at once), with a launch
    cost of `per_gpu` seconds per GPU, or the engine's default where `per_gpu` is None."""

    name = "preempt-once"

    def __init__(self, per_gpu: float | None) -> None:
        super().__init__()
        self.per_gpu = per_gpu
        self.asked: list[tuple[str, int, bool, Phase, int]] = []  # (job, n, first launch?, phase, GPUs held)
        self.preempted = False

    def restart_cost(self, job: JobState, n_gpus: int, view: ClusterView) -> float | None:
        self.asked.append((job.job_id, n_gpus, job.first_start is None, job.phase, job.num_gpus))
        return None if self.per_gpu is None else self.per_gpu * n_gpus

    def schedule(self, view: ClusterView) -> Sequence[Decision]:
        if view.now == 100.0 and not self.preempted:
            self.preempted = True
            plan = view.plan()
            for job in list(view.running()):
                plan.preempt(job)
            return plan.decisions
        if view.now < 100.0:
            view.wake_at(100.0)
        return super().schedule(view)

    def on_requeue(self, job: JobState, view: ClusterView) -> None:
        view.wake_at(view.now)


@pytest.mark.parametrize(("per_gpu", "gpus", "end"), [(2.0, 4, 1008.0), (3.0, 16, 1048.0), (None, 4, 1040.0), (None, 16, 1060.0)])
def test_the_policys_restart_cost_replaces_the_engines_and_none_keeps_it(per_gpu, gpus, end):
    # Preempted at 100 with 100 s done; relaunched at once: cost + 900 s. None: 40 s / 60 s above 8 GPUs.
    policy = PreemptOnce(per_gpu)
    (job,) = simulate([JobSpec("j", 0, gpus, 1000)], ClusterSpec.parse("2x8"), policy).jobs
    assert job.end_time == pytest.approx(end) and job.restarts == 1
    assert policy.asked == [("j", gpus, False, Phase.RUNNING, gpus)]  # a restart only: the first launch is free


def test_none_also_keeps_the_jobs_own_restart_cost_attribute():
    (job,) = simulate([JobSpec("j", 0, 4, 1000, attributes={"restart_cost": 5.0})], ClusterSpec.parse("1x8"),
                      PreemptOnce(None)).jobs
    assert job.end_time == pytest.approx(1005.0)


@pytest.mark.parametrize(("per_gpu", "first"), [(2.0, 8.0), (None, 40.0)])
def test_charge_first_launch_charges_the_same_cost_on_a_first_launch(per_gpu, first):
    policy = PreemptOnce(per_gpu)
    config = SimConfig(charge_first_launch=True)
    (job,) = simulate([JobSpec("j", 0, 4, 1000)], ClusterSpec.parse("1x8"), policy, config).jobs
    # no progress before `first`; 100 - first done at the preemption; relaunch pays again
    assert job.speed_log[0] == (first, 1.0, 0.0)
    assert job.end_time == pytest.approx(100 + first + 1000 - (100 - first)) and job.restarts == 1
    assert [first_launch for _, _, first_launch, _, _ in policy.asked] == [True, False]


def test_a_first_launch_cost_can_depend_on_the_phase_and_a_negative_cost_is_refused():
    class ProfiledFree(Policy):
        """Profiles j on 1 GPU for 10 s (free), stops it, then runs it on 4 (30 s: a restart)."""

        name = "profiled-free"

        def restart_cost(self, job, n_gpus, view):
            return 0.0 if job.phase is Phase.PROFILING else 7.5 * n_gpus

        def schedule(self, view):
            plan = view.plan()
            job = view.job("j")
            if job.phase is Phase.QUEUED:
                plan.try_start(job, 1, profiling=True)
                view.wake_at(10.0)
            elif job.phase is Phase.PROFILING and view.now == 10.0:
                plan.preempt(job)
            elif job.phase is Phase.PREEMPTED:
                plan.try_start(job)
            return plan.decisions

        def on_requeue(self, job, view):
            view.wake_at(view.now)

    config = SimConfig(charge_first_launch=True)
    (job,) = simulate([JobSpec("j", 0, 4, 400)], ClusterSpec.parse("1x4"), ProfiledFree(), config).jobs
    # 10 s on 1 GPU = 2.5 s of 4-GPU work; then 30 s restart on 4 GPUs; 397.5 s left
    assert job.first_start == 0.0 and job.end_time == pytest.approx(10 + 30 + 397.5)

    class Negative(FIFO):
        def restart_cost(self, job, n_gpus, view):
            return -1.0

    with pytest.raises(ValueError, match="restart cost"):
        simulate([JobSpec("j", 0, 1, 10)], ClusterSpec.parse("1x1"), Negative(), config)


def test_run_stats_is_a_method_with_an_empty_default():
    assert FIFO().run_stats() == {}
    assert Policy.prepare_jobs([PRETRAIN]) == [PRETRAIN]

