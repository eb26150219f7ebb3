"""The event-driven simulator, written as a specification.

Part one: properties over random small traces, random (also heterogeneous) clusters, every
baseline policy with and without backfilling and every placer. A `Checked` wrapper
(`schedulers.testing.CheckedPolicy`) sits between engine and policy and checks the cluster's books
at every hook the engine calls, i.e. after every applied decision and every event. Part two: small scenarios whose numbers are worked out by hand.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.decisions import (
    Colocate,
    Cordon,
    Decision,
    Evict,
    InvalidDecision,
    Migrate,
    Preempt,
    Resize,
    Start,
    Uncordon,
)
from schedmate.schedulers.engine import REJECTED, SimConfig, SimResult, SimulationStalled, Simulator, simulate
from schedmate.schedulers.interference import ConstantInterference, MeasuredInterference
from schedmate.schedulers.job import FinalStatus, JobSpec, JobState, Phase
from schedmate.schedulers.placement import Consolidate, Spread, TopologyAware
from schedmate.schedulers.policies import FIFO, make_policy
from schedmate.schedulers.policy import ClusterView, Policy
from schedmate.schedulers.testing import CheckedPolicy

RUNNING = (Phase.RUNNING, Phase.PROFILING)
BASELINES = ["fifo", "fifo+bf", "sjf", "sjf+bf", "srtf", "qssf", "qssf+bf", "tiresias"]


# ======================================================================== instrumentation


Checked = CheckedPolicy  # the invariant-checking wrapper ships with the library (schedulers.testing)


class Scripted(Policy):
    """Replays decisions at given times. A step is a list of decisions or a function of the view."""

    name = "scripted"

    def __init__(self, script: dict[float, Sequence[Decision] | Callable[[ClusterView], Sequence[Decision]]]):
        self.script = dict(script)
        self.armed = False

    def schedule(self, view: ClusterView) -> Sequence[Decision]:
        if not self.armed:
            self.armed = True
            for t in self.script:
                view.wake_at(t)
        step = self.script.pop(view.now, ())
        return step(view) if callable(step) else step


# ======================================================================== random worlds

GPU_TYPES = ["V100", "T4", "A100"]


@st.composite
def clusters(draw) -> ClusterSpec:
    if draw(st.booleans()):
        return ClusterSpec.homogeneous(
            draw(st.integers(1, 4)),
            draw(st.sampled_from([1, 2, 4, 8])),
            nodes_per_switch=draw(st.sampled_from([None, 1, 2])),
            switches_per_pod=2,
        )
    parts = draw(
        st.lists(
            st.tuples(st.integers(1, 3), st.sampled_from([1, 2, 4, 8]), st.sampled_from(GPU_TYPES)),
            min_size=1,
            max_size=3,
        )
    )
    spec = ClusterSpec.parse(",".join(f"{n}x{g}:{t}" for n, g, t in parts))
    if draw(st.booleans()):  # heterogeneous speeds too
        spec = replace(spec, gpu_speed={"T4": 0.5, "A100": 2.0})
    return spec


# Biased toward contention: ties and round boundaries, mostly small jobs, some that can never fit.
TIMES = st.one_of(st.sampled_from([0.0, 30.0, 60.0, 120.0]), st.floats(0, 600, allow_nan=False).map(round))
DURATIONS = st.one_of(st.just(0.0), st.integers(1, 3000).map(float), st.floats(0, 500, allow_nan=False))
GPUS = st.one_of(st.sampled_from([1, 1, 2, 4]), st.integers(1, 16))
ALLOWED_TYPES = st.one_of(st.none(), st.none(), st.none(), st.sampled_from([("A100",), ("T4", "V100"), ("H100",)]))


@st.composite
def traces(draw, max_jobs: int = 12) -> list[JobSpec]:
    n = draw(st.integers(2, max_jobs))
    jobs = []
    for i in range(n):
        jobs.append(
            JobSpec(
                job_id=f"j{i}",
                submit_time=draw(TIMES),
                num_gpus=draw(GPUS),
                duration=draw(DURATIONS),
                status=draw(st.sampled_from(list(FinalStatus))),
                user=draw(st.sampled_from(["ann", "bob", "cy"])),
                gpu_types=draw(ALLOWED_TYPES),
            )
        )
    return jobs


def build_policy(name: str, threshold: float) -> Policy:
    return make_policy(name, threshold=threshold) if name == "tiresias" else make_policy(name)


@st.composite
def busy_worlds(draw) -> tuple[list[JobSpec], ClusterSpec]:
    """A queue that never empties: many 1-2 GPU jobs on 1-4 GPUs (preemption and demotion galore)."""
    n = draw(st.integers(3, 12))
    jobs = [
        JobSpec(f"b{i}", draw(TIMES), draw(st.integers(1, 2)), draw(st.integers(20, 1500).map(float)),
                status=draw(st.sampled_from(list(FinalStatus))))
        for i in range(n)
    ]
    return jobs, ClusterSpec.homogeneous(draw(st.integers(1, 2)), draw(st.integers(1, 2)))


@st.composite
def worlds(draw):
    jobs, cluster = draw(busy_worlds()) if draw(st.booleans()) else (draw(traces()), draw(clusters()))
    return dict(
        jobs=jobs,
        cluster=cluster,
        policy=draw(st.sampled_from(BASELINES)),
        threshold=draw(st.sampled_from([50.0, 400.0, 3600.0])),  # Tiresias demotes (and preempts) often
        placer=draw(st.sampled_from([Consolidate, Spread, TopologyAware])),
        resubmit=draw(st.booleans()),
        config=SimConfig(
            seed=draw(st.integers(0, 3)),
            checkpoint_interval=draw(st.sampled_from([None, 100.0, 250.0])),
        ),
    )


def run_world(world) -> tuple[Checked, SimResult]:
    checked = Checked(build_policy(world["policy"], world["threshold"]), resubmit=world["resubmit"])
    result = simulate(world["jobs"], world["cluster"], checked, world["config"], placer=world["placer"]())
    return checked, result


def eligible_capacity(spec: JobSpec, cluster: ClusterSpec) -> int:
    return int(cluster.capacity()[cluster.eligible_mask(spec.gpu_types, spec.vc)].sum())


PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ======================================================================== properties


@PROPERTY
@given(worlds())
def test_books_balance_and_every_job_ends_exactly_once(world):
    """GPUs are never over-committed, no job starts before it is submitted, every job ends once.

    (The per-event checks live in `Checked.check`; this test checks the end state.)
    """
    checked, result = run_world(world)
    assert len(result.jobs) == len(world["jobs"])
    for job in result.jobs:
        spec = job.spec
        assert checked.finished[job.job_id] == 1, f"{job.job_id} ended {checked.finished[job.job_id]} times"
        assert job.phase.is_terminal and job.end_time is not None
        assert spec.submit_time <= job.end_time <= result.end_time
        assert job.num_gpus == 0 and job.placement == () and job.colocated_with is None
        if job.first_start is not None:
            assert spec.submit_time <= job.first_start <= job.end_time
        assert job.restarts == max(0, checked.started[job.job_id] - 1)  # every launch after the first
    assert result.end_time == max(j.end_time for j in result.jobs)
    assert result.busy_gpu_seconds >= 0
    times = result.timeline[:, 0]
    assert (np.diff(times) > 0).all(), "the recorded clock only moves forward"


@PROPERTY
@given(worlds())
def test_each_job_ends_the_way_its_trace_says_unless_it_can_never_fit(world):
    checked, result = run_world(world)
    for job in result.jobs:
        spec = job.spec
        if spec.num_gpus > eligible_capacity(spec, world["cluster"]):
            assert job.phase is Phase.CANCELLED
            assert job.cancel_reason is not None and "eligible capacity" in job.cancel_reason
            assert job.first_start is None and job.run_time == 0
            assert job.end_time == spec.submit_time
            continue
        assert job.cancel_reason is None
        assert job.first_start is not None
        if spec.status is FinalStatus.FAILED and world["resubmit"]:
            assert job.phase is Phase.COMPLETED and job.failures == 1  # resumed from its checkpoint
        else:
            assert job.phase.value == spec.status.value
        target = spec.total_work if job.failed_once else spec.duration
        assert job.progress == pytest.approx(target, abs=1e-3)
        # it cannot finish faster than its work at its best speed allows
        best = max(world["cluster"].speed_of(t) for t in world["cluster"].gpu_types)
        assert job.end_time - job.first_start >= (spec.duration / best) - 1e-3


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_same_seed_same_results(world):
    def outcome():
        _, result = run_world(world)
        return [(j.job_id, j.phase, j.first_start, j.end_time, j.restarts, j.progress) for j in result.jobs]

    assert outcome() == outcome()


# ======================================================================== invalid decisions

ONE_NODE = ClusterSpec.homogeneous(1, 4)
TWO_NODES = ClusterSpec.homogeneous(2, 4)


def two_jobs(gpus_a: int = 2, gpus_b: int = 2) -> list[JobSpec]:
    return [JobSpec("a", 0, gpus_a, 100), JobSpec("b", 0, gpus_b, 100)]


@pytest.mark.parametrize(
    ("cluster", "jobs", "script", "reason"),
    [
        pytest.param(ONE_NODE, two_jobs(2, 3), {0: [Start("a", ((0, 2),)), Start("b", ((0, 3),))]},
                     "over-commit: node 0 has 2 free GPUs, asked 3", id="over-commit"),
        pytest.param(ONE_NODE, two_jobs(), {0: [Start("a", ((0, 5),))]}, "over-commit", id="more-than-node"),
        pytest.param(ONE_NODE, two_jobs(), {0: [Preempt("ghost")]}, "unknown job 'ghost'", id="unknown-job"),
        pytest.param(ONE_NODE, two_jobs(), {0: [Start("a", ((0, 2),)), Start("a", ((0, 1),))]},
                     "job is running, not waiting (double start?)", id="double-start"),
        pytest.param(ONE_NODE, [JobSpec("a", 0, 1, 100), JobSpec("late", 50, 1, 100)],
                     {0: [Start("late", ((0, 1),))]}, "job is pending, not waiting", id="start-before-submit"),
        pytest.param(ONE_NODE, two_jobs(), {0: [Preempt("a")]}, "job is queued, not running", id="preempt-queued"),
        pytest.param(ONE_NODE, two_jobs(), {0: [Start("a", ((0, 2),)), Evict("a")]}, "not co-located",
                     id="evict-solo"),
        pytest.param(ONE_NODE, [*two_jobs(), JobSpec("c", 0, 2, 100)],
                     {0: [Start("a", ((0, 2),)), Colocate("b", "a"), Colocate("c", "a")]},
                     "host already shares its GPUs", id="colocate-busy-host"),
        pytest.param(ONE_NODE, two_jobs(), {0: [Colocate("b", "a")]}, "host is queued, not running",
                     id="colocate-idle-host"),
        pytest.param(ONE_NODE, two_jobs(2, 1), {0: [Start("a", ((0, 2),)), Colocate("b", "a")]},
                     "GPU counts differ", id="colocate-other-size"),
        pytest.param(TWO_NODES, two_jobs(), {0: [Start("a", ((0, 2),)), Migrate("a", ((1, 3),))]},
                     "migration changes the GPU count 2→3; use Resize", id="migrate-resizes"),
        pytest.param(TWO_NODES, two_jobs(), {0: [Cordon(1), Start("a", ((1, 2),))]}, "node 1 is cordoned",
                     id="cordoned"),
        pytest.param(TWO_NODES, two_jobs(), {0: [Start("a", ((0, 1), (0, 1)))]}, "a node appears twice",
                     id="node-twice"),
        pytest.param(TWO_NODES, two_jobs(), {0: [Start("a", ((7, 2),))]}, "no node 7", id="no-such-node"),
        pytest.param(TWO_NODES, two_jobs(), {0: [Cordon(9)]}, "no node 9", id="cordon-no-node"),
        pytest.param(ClusterSpec.parse("1x4:T4,1x4:A100"), [JobSpec("a", 0, 2, 100, gpu_types=("A100",))],
                     {0: [Start("a", ((0, 2),))]}, "node 0 (T4) is not allowed for this job", id="wrong-gpu-type"),
        pytest.param(ONE_NODE, two_jobs(), {0: ["start a"]}, "not a decision type", id="not-a-decision"),
    ],
)
def test_invalid_decisions_are_rejected_naming_the_policy_and_the_decision(cluster, jobs, script, reason):
    bad = script[0][-1]
    with pytest.raises(InvalidDecision) as caught:
        simulate(jobs, cluster, Scripted(script))
    err = caught.value
    assert err.policy == "scripted" and err.decision == bad
    assert reason in err.reason
    assert str(err).startswith(f"policy 'scripted' made an invalid decision {bad!r}: ")


def test_a_rejected_decision_leaves_earlier_decisions_applied_and_the_books_intact():
    sim = Simulator(two_jobs(2, 3), ONE_NODE, Scripted({0: [Start("a", ((0, 2),)), Start("b", ((0, 3),))]}))
    with pytest.raises(InvalidDecision):
        sim.run()
    assert sim.free.tolist() == [2] and sim.jobs["a"].phase is Phase.RUNNING
    assert sim.jobs["b"].phase is Phase.QUEUED


# ======================================================================== restart cost


@pytest.mark.parametrize(("gpus", "cost"), [(1, 40.0), (8, 40.0), (9, 60.0), (16, 60.0)])
def test_a_preempted_job_pays_the_restart_cost_when_it_restarts(gpus, cost):
    # 1000 s of work: runs 0-100 (100 done), waits 100-200, restarts at 200, pays `cost`
    # seconds without progress, then does the remaining 900: ends at 200 + cost + 900.
    cluster = ClusterSpec.homogeneous(2, 8)
    spread = tuple((n, k) for n, k in ((0, min(gpus, 8)), (1, gpus - min(gpus, 8))) if k)
    script = {0: [Start("a", spread)], 100: [Preempt("a")], 200: [Start("a", spread)]}
    result = simulate([JobSpec("a", 0, gpus, 1000)], cluster, Scripted(script))
    (job,) = result.jobs
    assert job.end_time == pytest.approx(200 + cost + 900)
    assert job.restarts == 1
    assert job.run_time == pytest.approx(100 + cost + 900)  # overhead counts as run time


def test_the_first_start_is_free_and_the_restart_cost_is_configurable():
    script = {0: [Start("a", ((0, 1),))], 100: [Preempt("a")], 100.5: [Start("a", ((0, 1),))]}
    config = SimConfig(restart_cost=5.0)
    (job,) = simulate([JobSpec("a", 0, 1, 1000)], ONE_NODE, Scripted(script), config).jobs
    assert job.end_time == pytest.approx(100.5 + 5 + 900)


# ======================================================================== failure and resume


class ResumeFIFO(FIFO):
    name = "fifo-resume"

    def on_failure(self, job: JobState, view: ClusterView) -> bool:
        return True


@pytest.mark.parametrize(
    ("work", "end"),
    [
        (None, 1000 + 40 + 100),  # total work = duration 1000: redo 1000 - 900 = 100
        (1500.0, 1000 + 40 + 600),  # the trace knows the job needed 1500: 1500 - 900 = 600 left
    ],
)
def test_a_resubmitted_failed_job_resumes_from_its_last_checkpoint(work, end):
    # 2 GPUs, fails after 1000 s of work. Checkpoints every 300 s of work: the last at 900, so
    # the failure loses 100 s of work = 200 GPU-seconds. It requeues, restarts at once (paying
    # 40 s), and then completes.
    job_spec = JobSpec("f", 0, 2, 1000, status=FinalStatus.FAILED, work=work)
    result = simulate([job_spec], ONE_NODE, ResumeFIFO(), SimConfig(checkpoint_interval=300))
    (job,) = result.jobs
    assert job.phase is Phase.COMPLETED
    assert job.failures == 1 and job.restarts == 1
    assert job.wasted_gpu_time == pytest.approx(100 * 2)
    assert job.end_time == pytest.approx(end)


def test_without_checkpoints_a_resubmitted_failed_job_starts_over():
    job_spec = JobSpec("f", 0, 1, 1000, status=FinalStatus.FAILED)
    (job,) = simulate([job_spec], ONE_NODE, ResumeFIFO()).jobs
    assert job.wasted_gpu_time == pytest.approx(1000)
    assert job.end_time == pytest.approx(1000 + 40 + 1000)


def test_a_failed_job_that_is_not_resubmitted_ends_failed_and_wastes_all_its_gpu_time():
    finished: list[str] = []

    class Counting(FIFO):
        def on_finish(self, job, view):
            finished.append(job.job_id)

    job_spec = JobSpec("f", 0, 2, 1000, status=FinalStatus.FAILED)
    (job,) = simulate([job_spec], ONE_NODE, Counting(), SimConfig(checkpoint_interval=300)).jobs
    assert job.phase is Phase.FAILED and job.end_time == 1000
    assert job.wasted_gpu_time == pytest.approx(2000)
    assert finished == ["f"]


def test_preemption_checkpoints_so_a_later_failure_loses_only_work_since_then():
    # runs 0-700, preempted at 700 (checkpoint 700), restarts at 800 (+40 s), fails at
    # 1000 s of work = 800 + 40 + 300 = 1140; loses 300 s of work, resumes (+40 s), 300 s to redo.
    script = {0: [Start("f", ((0, 1),))], 700: [Preempt("f")], 800: [Start("f", ((0, 1),))]}

    class ScriptedResume(Scripted):
        def on_failure(self, job, view):
            view.wake_at(view.now)
            self.script[view.now] = [Start("f", ((0, 1),))]
            return True

    job_spec = JobSpec("f", 0, 1, 1000, status=FinalStatus.FAILED)
    (job,) = simulate([job_spec], ONE_NODE, ScriptedResume(script)).jobs
    assert job.wasted_gpu_time == pytest.approx(300)
    assert job.end_time == pytest.approx(1140 + 40 + 300)
    assert job.restarts == 2 and job.phase is Phase.COMPLETED


# ======================================================================== co-location
# (Checked verifies that a co-located pair's shared GPUs are counted once in the books.)


def test_colocated_jobs_run_at_the_interference_speeds_and_the_survivor_speeds_back_up():
    # Both at 0.5 from t=0: b (300 s of work) ends at 600; by then a has done 300 of its 1000;
    # alone again at full speed, a needs 700 more: ends at 1300.
    script = {0: [Start("a", ((0, 1),)), Colocate("b", "a")]}
    jobs = [JobSpec("a", 0, 1, 1000), JobSpec("b", 0, 1, 300)]
    result = simulate(jobs, ONE_NODE, Checked(Scripted(script)), interference=ConstantInterference(0.5))
    ends = {j.job_id: j.end_time for j in result.jobs}
    assert ends == {"a": pytest.approx(1300), "b": pytest.approx(600)}
    assert all(j.restarts == 0 for j in result.jobs)
    assert result.busy_gpu_seconds == pytest.approx(1 * 1300)  # shared GPUs count once


def write_colocation_csv(path: Path) -> Path:
    header = "model1,dataset1,gpu_num1,batchsize1,amp1,model2,dataset2,gpu_num2,batchsize2,amp2,speed1,speed2"
    path.write_text(f"{header}\nbert,squad,1,32,1,resnet50,imagenet,1,64,0,0.8,0.4\n")
    return path


RESNET = {"model": "resnet50", "dataset": "imagenet", "batch_size": 64, "amp": 0}
BERT = {"model": "bert", "dataset": "squad", "batch_size": 32, "amp": 1}


def test_colocation_uses_measured_pair_speeds_looked_up_in_either_order(tmp_path):
    # The CSV lists (bert, resnet) -> (0.8, 0.4); the host is resnet, so it gets 0.4, bert 0.8.
    # bert's 400 s of work end at 500; resnet has 0.4 * 500 = 200 done, 800 left alone: ends 1300.
    model = MeasuredInterference.from_csv(write_colocation_csv(tmp_path / "colocate_info.csv"))
    jobs = [
        JobSpec("resnet", 0, 1, 1000, attributes=RESNET),
        JobSpec("bert", 0, 1, 400, attributes=BERT),
    ]
    script = {0: [Start("resnet", ((0, 1),)), Colocate("bert", "resnet")]}
    result = simulate(jobs, ONE_NODE, Checked(Scripted(script)), interference=model)
    ends = {j.job_id: j.end_time for j in result.jobs}
    assert ends == {"resnet": pytest.approx(1300), "bert": pytest.approx(500)}


def test_an_unmeasured_pair_falls_back_to_the_default_factor(tmp_path):
    # 0.25 both ways: c's 100 s of work take 400 s; a has 100 done, 900 left: ends 1300.
    model = MeasuredInterference.from_csv(write_colocation_csv(tmp_path / "c.csv"), default_factor=0.25)
    jobs = [JobSpec("a", 0, 1, 1000, attributes=RESNET), JobSpec("c", 0, 1, 100, attributes={"model": "gpt2"})]
    policy = Checked(Scripted({0: [Start("a", ((0, 1),)), Colocate("c", "a")]}))
    result = simulate(jobs, ONE_NODE, policy, interference=model)
    assert {j.job_id: j.end_time for j in result.jobs} == {"a": pytest.approx(1300), "c": pytest.approx(400)}


def test_evicting_a_colocated_job_requeues_it_and_restores_its_partner():
    # Shared at 0.5 for 0-200: a does 100, b does 100. b is evicted at 200; a alone, 900 left:
    # ends 1100. b restarts at 1100 on the freed GPU (+40 s), 200 left: ends 1340.
    script = {
        0: [Start("a", ((0, 1),)), Colocate("b", "a")],
        200: [Evict("b")],
        1100: [Start("b", ((0, 1),))],
    }
    jobs = [JobSpec("a", 0, 1, 1000), JobSpec("b", 0, 1, 300)]
    policy = Checked(Scripted(script))
    result = simulate(jobs, ClusterSpec.homogeneous(1, 1), policy, interference=ConstantInterference(0.5))
    by_id = {j.job_id: j for j in result.jobs}
    assert by_id["a"].end_time == pytest.approx(1100)
    assert by_id["b"].end_time == pytest.approx(1340) and by_id["b"].evictions == 1


# ======================================================================== resize and migrate


@pytest.mark.parametrize(
    ("new_placement", "end"),
    [
        (((0, 4),), 140 + 900 / 2),  # 4 of 2 requested GPUs: twice as fast
        (((0, 1),), 140 + 900 / 0.5),  # 1 of 2: half as fast
        (((0, 2), (1, 2)), 140 + 900 / 2),  # across nodes too
    ],
)
def test_resize_changes_speed_under_linear_scaling_and_pays_the_restart_cost(new_placement, end):
    # 1000 s of work on 2 GPUs; at 100 (100 done) resized: +40 s, then 900 at the new speed.
    script = {0: [Start("a", ((0, 2),))], 100: [Resize("a", new_placement)]}
    (job,) = simulate([JobSpec("a", 0, 2, 1000)], TWO_NODES, Scripted(script)).jobs
    assert job.end_time == pytest.approx(end)
    assert job.restarts == 1


def test_migration_keeps_the_speed_and_pays_the_restart_cost():
    script = {0: [Start("a", ((0, 2),))], 100: [Migrate("a", ((1, 2),))]}
    (job,) = simulate([JobSpec("a", 0, 2, 1000)], TWO_NODES, Scripted(script)).jobs
    assert job.end_time == pytest.approx(100 + 40 + 900)


def test_a_resize_may_reuse_the_gpus_the_job_already_holds():
    # The node has 4 GPUs, a holds 3: growing to 4 on the same node is no over-commit.
    script = {0: [Start("a", ((0, 3),))], 10: [Resize("a", ((0, 4),))]}
    (job,) = simulate([JobSpec("a", 0, 2, 1000)], ONE_NODE, Scripted(script)).jobs
    assert job.phase is Phase.COMPLETED


def test_a_slower_gpu_type_slows_the_job_down():
    cluster = replace(ClusterSpec.parse("1x2:T4"), gpu_speed={"T4": 0.5})
    (job,) = simulate([JobSpec("a", 0, 2, 100)], cluster, make_policy("fifo")).jobs
    assert job.end_time == pytest.approx(200)


# ======================================================================== cordon


def test_a_cordoned_node_keeps_its_running_jobs_and_takes_no_new_ones_until_uncordoned():
    def start_b(view: ClusterView) -> list[Decision]:
        plan = view.plan()  # a plan never places on a cordoned node
        return plan.decisions if plan.try_start(view.job("b")) else []

    script = {0: [Start("a", ((0, 2),)), Cordon(0)], 5: start_b, 10: [Uncordon(0)], 20: start_b}
    result = simulate(two_jobs(), ONE_NODE, Scripted(script))
    assert {j.job_id: (j.first_start, j.end_time) for j in result.jobs} == {"a": (0, 100), "b": (20, 120)}


# ======================================================================== time: rounds, wake-ups, stalls


class RoundRecorder(Policy):
    """Starts what fits on every schedule call; records when `optimize` runs."""

    name = "round-recorder"

    def __init__(self, interval: float) -> None:
        self.round_interval = interval
        self.rounds: list[float] = []

    def optimize(self, view: ClusterView) -> Sequence[Decision]:
        assert view.num_waiting() or any(True for _ in view.running())
        self.rounds.append(view.now)
        return ()

    def schedule(self, view: ClusterView) -> Sequence[Decision]:
        plan = view.plan()
        for job in list(view.waiting()):
            plan.try_start(job)
        return plan.decisions


def test_optimize_rounds_fall_on_multiples_of_the_round_interval_while_jobs_are_active():
    # a: active 7-237 -> rounds at 50, 100, 150, 200; idle 237-1000 -> none (not even at 250);
    # b: active 1000-1060 -> a round at 1050.
    policy = RoundRecorder(50.0)
    simulate([JobSpec("a", 7, 1, 230), JobSpec("b", 1000, 1, 60)], ONE_NODE, policy)
    assert policy.rounds == [50, 100, 150, 200, 1050]


class StartAt(Policy):
    """Starts every waiting job, but not before `when`; asks to be woken then."""

    name = "start-at"

    def __init__(self, when: float) -> None:
        self.when = when
        self.calls: list[float] = []

    def schedule(self, view: ClusterView) -> Sequence[Decision]:
        self.calls.append(view.now)
        if view.now < self.when:
            view.wake_at(self.when)
            return ()
        plan = view.plan()
        for job in list(view.waiting()):
            plan.try_start(job)
        return plan.decisions


def test_wake_at_calls_schedule_at_that_time_even_if_nothing_else_happens():
    policy = StartAt(500.0)
    (job,) = simulate([JobSpec("a", 10, 1, 100)], ONE_NODE, policy).jobs
    assert job.first_start == 500 and job.end_time == 600
    assert policy.calls == [10, 500, 600]


def test_a_wake_up_in_the_past_fires_now_not_back_in_time():
    policy = StartAt(-5.0)
    (job,) = simulate([JobSpec("a", 10, 1, 100)], ONE_NODE, policy).jobs
    assert job.first_start == 10


class Idle(Policy):
    name = "idle"


class IdleWithRounds(Idle):
    name = "idle-rounds"
    round_interval = 60.0


@pytest.mark.parametrize("policy", [Idle(), IdleWithRounds()], ids=lambda p: p.name)
def test_a_policy_that_never_starts_a_job_stalls_the_simulation(policy):
    # (max_time only keeps a broken engine from looping forever: it must raise well before.)
    with pytest.raises(SimulationStalled, match=f"policy '{policy.name}' left 1 job"):
        simulate([JobSpec("a", 0, 1, 10), JobSpec("b", 5, 9, 10)], ClusterSpec.homogeneous(1, 8), policy,
                 SimConfig(max_time=1e6))


def test_a_round_policy_that_starts_jobs_only_in_optimize_does_not_stall():
    class RoundOnly(RoundRecorder):
        def optimize(self, view):
            return RoundRecorder.schedule(self, view)

        def schedule(self, view):
            return ()

    (job,) = simulate([JobSpec("a", 7, 1, 100)], ONE_NODE, RoundOnly(60.0)).jobs
    assert job.first_start == 60 and job.end_time == 160


@pytest.mark.parametrize("name", BASELINES)
def test_time_jumps_to_the_next_event_instead_of_ticking(name):
    # Two jobs 10^7 s apart: a handful of events (arrivals, ends, a wake-up or two), not 10^7.
    jobs = [JobSpec("a", 0, 2, 100), JobSpec("b", 1e7, 2, 100)]
    result = simulate(jobs, ONE_NODE, make_policy(name))
    assert result.end_time == 1e7 + 100
    assert result.events <= 8


def test_max_time_stops_the_clock_with_jobs_unfinished():
    result = simulate([JobSpec("a", 0, 1, 100), JobSpec("b", 500, 1, 100)], ONE_NODE, make_policy("fifo"),
                      SimConfig(max_time=300))
    assert result.end_time == 300
    assert [j.phase for j in result.jobs] == [Phase.COMPLETED, Phase.PENDING]


# ======================================================================== arrivals


def test_a_job_that_can_never_fit_is_cancelled_at_submission_and_says_why():
    seen: dict[str, dict] = {}

    class Watch(FIFO):
        def on_finish(self, job, view):
            seen[job.job_id] = job.cancel_reason  # the reason is there when the hook runs

    jobs = [
        JobSpec("big", 5, 16, 100),  # 16 GPUs on an 8-GPU cluster
        JobSpec("h100", 6, 1, 100, gpu_types=("H100",)),  # a GPU type the cluster lacks
        JobSpec("ok", 7, 8, 100),
    ]
    result = simulate(jobs, ClusterSpec.homogeneous(1, 8), Watch())
    by_id = {j.job_id: j for j in result.jobs}
    for job_id, capacity in (("big", 8), ("h100", 0)):
        job = by_id[job_id]
        assert job.phase is Phase.CANCELLED and job.end_time == job.spec.submit_time
        assert job.first_start is None
        assert job.cancel_reason.endswith(f"eligible capacity {capacity}")
        assert seen[job_id] == job.cancel_reason
    assert by_id["ok"].phase is Phase.COMPLETED and by_id["ok"].cancel_reason is None


def test_admission_control_can_reject_a_job():
    class NoBob(FIFO):
        def admit(self, job, view):
            return job.spec.user != "bob"

    jobs = [JobSpec("a", 0, 1, 10, user="ann"), JobSpec("b", 0, 1, 10, user="bob")]
    by_id = {j.job_id: j for j in simulate(jobs, ONE_NODE, NoBob()).jobs}
    assert by_id["a"].phase is Phase.COMPLETED
    assert by_id["b"].phase is Phase.CANCELLED and by_id["b"].cancel_reason == REJECTED and by_id["b"].run_time == 0


def test_duplicate_job_ids_are_refused():
    with pytest.raises(ValueError, match="duplicate job id 'a'"):
        Simulator([JobSpec("a", 0, 1, 10), JobSpec("a", 5, 1, 10)], ONE_NODE, Idle())


def test_zero_length_jobs_complete_at_once():
    jobs = [JobSpec("z", 3, 4, 0.0), JobSpec("y", 3, 4, 0.0, status=FinalStatus.CANCELLED)]
    result = simulate(jobs, ONE_NODE, make_policy("fifo"))
    assert [(j.phase, j.first_start, j.end_time) for j in result.jobs] == [
        (Phase.CANCELLED, 3, 3),
        (Phase.COMPLETED, 3, 3),
    ]


def test_a_throughput_model_sets_speed_and_refresh_re_evaluates_it():
    # The model says the job runs at half pace until the policy bumps its batch size, then full pace.
    from schedmate.schedulers.decisions import Refresh

    pace = {"j": 0.5}

    class Bumper(Policy):
        name = "bumper"

        def schedule(self, view):
            plan = view.plan()
            for job in list(view.waiting()):
                plan.try_start(job)
            if view.now == 50.0:
                pace["j"] = 1.0
                return [*plan.decisions, Refresh("j")]
            if view.now == 0.0:
                view.wake_at(50.0)
            return plan.decisions

    result = simulate(
        [JobSpec("j", 0, 1, 100)], ClusterSpec.parse("1x1"), Bumper(), throughput=lambda job, cluster: pace[job.job_id]
    )
    # 0-50 s at 0.5 → 25 s of work; the remaining 75 s at full pace → ends at 125 s.
    assert result.jobs[0].end_time == pytest.approx(125.0)
