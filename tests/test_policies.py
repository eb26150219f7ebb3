"""Baseline policies on small scenarios whose job completion times are worked out by hand.

JCT = end time - submit time. Unless a test says otherwise the restart cost is 40 s (jobs of up
to 8 GPUs) or 60 s (larger), paid when a preempted job starts again; placement is best fit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.engine import simulate
from schedmate.schedulers.job import FinalStatus, JobSpec, JobState, Phase
from schedmate.schedulers.policies import FIFO, QSSF, SJF, SRTF, Tiresias, make_policy
from schedmate.schedulers.policy import Policy
from schedmate.schedulers.predictor import OnlineDurationModel


def run(policy: Policy, jobs: list[JobSpec], cluster: str = "1") -> dict[str, JobState]:
    result = simulate(jobs, ClusterSpec.parse(cluster), policy)
    return {j.job_id: j for j in result.jobs}


def jcts(jobs: dict[str, JobState]) -> dict[str, float]:
    return {job_id: j.end_time - j.spec.submit_time for job_id, j in jobs.items()}


def starts(jobs: dict[str, JobState]) -> dict[str, float | None]:
    return {job_id: j.first_start for job_id, j in jobs.items()}


# ======================================================================== registry


def test_make_policy_builds_baselines_by_name_with_an_optional_backfill_suffix():
    assert isinstance(make_policy("fifo"), FIFO) and not make_policy("fifo").backfill
    bf = make_policy(" FIFO+bf ")
    assert isinstance(bf, FIFO) and bf.backfill and bf.name == "fifo+bf"
    assert make_policy("sjf+bf").name == "sjf+bf" and make_policy("qssf+bf").name == "qssf+bf"
    assert isinstance(make_policy("tiresias", threshold=10.0), Tiresias)
    with pytest.raises(ValueError, match="unknown policy 'lifo'"):
        make_policy("lifo")
    with pytest.raises(ValueError, match="policy 'srtf' has no 'bf' variant"):
        make_policy("srtf+bf")
    with pytest.raises(ValueError, match="has no 'easy' variant"):
        make_policy("fifo+easy")


# ======================================================================== FIFO and backfilling

# One node with 4 GPUs. A (2 GPUs) runs; B needs all 4 and must wait; C (2 GPUs) would fit now.
HOL = [
    JobSpec("A", 0, 2, 100),
    JobSpec("B", 1, 4, 100),
    JobSpec("C", 2, 2, 50),
]


def test_fifo_blocks_the_line_behind_a_job_that_does_not_fit():
    # A 0-100. B waits for 4 GPUs, C waits behind B (2 GPUs idle meanwhile).
    # B 100-200, then C 200-250.
    jobs = run(FIFO(), HOL, "4")
    assert starts(jobs) == {"A": 0, "B": 100, "C": 200}
    assert jcts(jobs) == {"A": 100, "B": 200 - 1, "C": 250 - 2}


def test_fifo_with_backfill_starts_a_later_job_in_the_idle_gpus():
    # C backfills at 2 into A's idle 2 GPUs: 2-52. B still starts when A ends: 100-200.
    jobs = run(make_policy("fifo+bf"), HOL, "4")
    assert starts(jobs) == {"A": 0, "B": 100, "C": 2}
    assert jcts(jobs) == {"A": 100, "B": 200 - 1, "C": 50}


def test_backfilling_is_first_fit_without_reservations_so_it_can_delay_the_head():
    # As above but C runs 500 s: backfilled at 2, it holds 2 GPUs until 502, so B (4 GPUs)
    # starts only at 502 instead of 100. (No EASY reservation for the head of the queue.)
    jobs = run(make_policy("fifo+bf"), [*HOL[:2], JobSpec("C", 2, 2, 500)], "4")
    assert starts(jobs) == {"A": 0, "B": 502, "C": 2}


def test_fifo_serves_in_submission_order_with_ties_on_the_job_id():
    jobs = run(FIFO(), [JobSpec("b", 0, 1, 10), JobSpec("a", 0, 1, 10), JobSpec("c", 0, 1, 10)])
    assert starts(jobs) == {"a": 0, "b": 10, "c": 20}


# ======================================================================== SJF (oracle)

# One GPU. A runs alone from 0; B (300 s), C (50 s), D (200 s) queue up behind it.
QUEUE = [
    JobSpec("A", 0, 1, 100),
    JobSpec("B", 10, 1, 300),
    JobSpec("C", 20, 1, 50),
    JobSpec("D", 30, 1, 200),
]


def test_sjf_serves_the_shortest_waiting_job_first():
    # A 0-100 (not preempted: SJF is non-preemptive), then by length: C 100-150, D 150-350,
    # B 350-650.
    jobs = run(SJF(), QUEUE)
    assert starts(jobs) == {"A": 0, "B": 350, "C": 100, "D": 150}
    assert jcts(jobs) == {"A": 100, "B": 650 - 10, "C": 150 - 20, "D": 350 - 30}


def test_fifo_on_the_same_queue_for_contrast():
    # A 0-100, B 100-400, C 400-450, D 450-650: JCTs 100, 390, 430, 620, mean 385;
    # SJF's are 100, 640, 130, 320, mean 297.5.
    jobs = run(FIFO(), QUEUE)
    assert starts(jobs) == {"A": 0, "B": 100, "C": 400, "D": 450}
    assert sum(jcts(jobs).values()) / 4 == 385
    assert sum(jcts(run(SJF(), QUEUE)).values()) / 4 == 297.5


def test_sjf_with_backfill_fills_gpus_the_shortest_job_cannot_use():
    # 2 GPUs. X (2 GPUs) 0-100. Waiting at 100: S (2 GPUs, 50 s), T (1 GPU, 80 s), U (1 GPU, 300 s).
    # By length S first: 100-150. Then T and U both fit: 150-230 and 150-450.
    # At 2: nothing starts (X holds both GPUs).
    jobs = [JobSpec("X", 0, 2, 100), JobSpec("U", 1, 1, 300), JobSpec("T", 2, 1, 80), JobSpec("S", 3, 2, 50)]
    assert starts(run(make_policy("sjf+bf"), jobs, "2")) == {"X": 0, "U": 150, "T": 150, "S": 100}
    # Now S needs 2 GPUs but only 1 is free at 100 (Y holds the other until 400): T, the next
    # shortest, backfills 100-180; U waits for T: 180-480; S waits for 2 GPUs: 480-530.
    # Without backfill nothing passes S: S 400-450 once Y ends, then T 450-530 and U 450-750.
    jobs = [*jobs, JobSpec("Y", 0, 1, 400)]
    jobs[0] = JobSpec("X", 0, 1, 100)
    assert starts(run(make_policy("sjf+bf"), jobs, "2")) == {"X": 0, "Y": 0, "U": 180, "T": 100, "S": 480}
    assert starts(run(make_policy("sjf"), jobs, "2")) == {"X": 0, "Y": 0, "U": 450, "T": 450, "S": 400}


# ======================================================================== SRTF (oracle, preemptive)


def test_srtf_preempts_a_long_job_for_a_shorter_one_and_charges_the_restart():
    # L (1000 s) runs from 0. M (2000 s) arrives at 50: L has 950 left, less than M: no preemption.
    # S (50 s) arrives at 100: L has 900 left, S 50: L is preempted, S runs 100-150.
    # At 150 L (900 left) beats M (2000): L restarts, pays 40 s, ends 150 + 40 + 900 = 1090.
    # M runs 1090-3090.
    jobs = run(SRTF(), [JobSpec("L", 0, 1, 1000), JobSpec("M", 50, 1, 2000), JobSpec("S", 100, 1, 50)])
    assert jcts(jobs) == {"L": 1090, "M": 3090 - 50, "S": 50}
    assert {k: j.restarts for k, j in jobs.items()} == {"L": 1, "M": 0, "S": 0}


def test_srtf_restart_cost_is_60_seconds_above_8_gpus():
    # As above with 16-GPU jobs on 2 nodes of 8: L ends 150 + 60 + 900 = 1110.
    jobs = run(SRTF(), [JobSpec("L", 0, 16, 1000), JobSpec("S", 100, 16, 50)], "2x8")
    assert jobs["L"].end_time == 1110 and jobs["S"].end_time == 150


def test_srtf_never_preempts_a_job_for_one_that_cannot_use_its_gpus():
    # 2 T4 + 2 A100 GPUs. X (T4 only, 5000 s) takes the T4s, R (any type, 1000 s) the A100s.
    # W (A100 only, 100 s) arrives at 10: shorter than both, but X's T4s are no use to it, so
    # X must keep running: it ends at 5000 with no restart.
    cluster = "1x2:T4,1x2:A100"
    trace = [
        JobSpec("X", 0, 2, 5000, gpu_types=("T4",)),
        JobSpec("R", 1, 2, 1000),
        JobSpec("W", 10, 2, 100, gpu_types=("A100",)),
    ]
    jobs = run(SRTF(), trace, cluster)
    assert (jobs["X"].end_time, jobs["X"].restarts) == (5000, 0)
    assert jobs["W"].phase is Phase.COMPLETED


def test_srtf_fills_free_gpus_without_preempting():
    # 2 GPUs: L (1 GPU) runs; a longer M arrives and simply takes the free GPU.
    jobs = run(SRTF(), [JobSpec("L", 0, 1, 100), JobSpec("M", 10, 1, 500)], "2")
    assert starts(jobs) == {"L": 0, "M": 10} and jobs["L"].restarts == 0


# ======================================================================== Tiresias (2-queue LAS)


def test_tiresias_demotes_after_threshold_gpu_seconds_and_preempts_at_the_next_round():
    # 2 GPUs, threshold 100 GPU-seconds. A (2 GPUs, 1000 s) from 0. B (2 GPUs, 40 s) at 30:
    # both in queue 0, A submitted first, so B waits. A reaches 2 x 50 = 100 GPU-s at t=50 and is
    # demoted, but preemption waits for the round boundary at 60: A stops with 60 s done,
    # B runs 60-100 (80 GPU-s: still queue 0), A restarts at 100 (+40 s) with 940 left: ends 1080.
    jobs = run(Tiresias(threshold=100.0), [JobSpec("A", 0, 2, 1000), JobSpec("B", 30, 2, 40)], "2")
    assert starts(jobs) == {"A": 0, "B": 60}
    assert jcts(jobs) == {"A": 1080, "B": 100 - 30}
    assert jobs["A"].restarts == 1


def test_tiresias_demotes_the_newcomer_too_once_it_has_had_its_share():
    # As above but B needs 100 s = 200 GPU-s: B is demoted at 60 + 50 = 110, and at the round at
    # 120 both are in queue 1 where A came first: B stops with 60 s done, A restarts (+40) with
    # 940 left: 120-1100; B restarts (+40) with 40 left: 1100-1180.
    jobs = run(Tiresias(threshold=100.0), [JobSpec("A", 0, 2, 1000), JobSpec("B", 30, 2, 100)], "2")
    assert {k: (j.end_time, j.restarts) for k, j in jobs.items()} == {"A": (1100, 1), "B": (1180, 1)}


def test_tiresias_preempts_only_at_round_boundaries_even_when_events_happen_in_between():
    # 1 GPU, threshold 100. A (1000 s) is demoted at 100; E arrives at 105 (an event, but not a
    # round): no preemption yet. Round 120: B (queue 0, earliest) preempts A: B 120-220; E (queue
    # 0) 220-230; A restarts at 230 (+40) with 880 left: ends 1150.
    trace = [JobSpec("A", 0, 1, 1000), JobSpec("B", 30, 1, 100), JobSpec("E", 105, 1, 10)]
    jobs = run(Tiresias(threshold=100.0), trace)
    assert starts(jobs) == {"A": 0, "B": 120, "E": 220}
    assert jobs["A"].end_time == 1150


def test_tiresias_also_preempts_for_a_job_submitted_together_with_the_running_one():
    # 1 GPU, threshold 100. A and B at 0; A first (job id). A demoted at 100, preempted at the
    # round at 120: B 120-220; A restarts at 220 (+40) with 880 left: ends 1140.
    jobs = run(Tiresias(threshold=100.0), [JobSpec("A", 0, 1, 1000), JobSpec("B", 0, 1, 100)])
    assert starts(jobs) == {"A": 0, "B": 120}
    assert jobs["A"].end_time == 1140


def test_tiresias_does_not_preempt_a_job_still_in_the_first_queue():
    # threshold 3600 GPU-s: A (1000 s on 1 GPU) never leaves queue 0, so B simply waits.
    jobs = run(Tiresias(threshold=3600.0), [JobSpec("A", 0, 1, 1000), JobSpec("B", 30, 1, 100)])
    assert starts(jobs) == {"A": 0, "B": 1000} and jobs["A"].restarts == 0


def test_tiresias_is_fifo_within_the_first_queue_and_serves_it_before_the_second():
    # 1 GPU, threshold 100. A (1000 s) demoted at 100; round 120: B (earliest in queue 0) 120-170;
    # at 170 C (queue 0) goes before A (queue 1) although A was submitted first: 170-220;
    # A restarts at 220 (+40) with 880 left: ends 1140.
    jobs = run(
        Tiresias(threshold=100.0),
        [JobSpec("A", 0, 1, 1000), JobSpec("B", 10, 1, 50), JobSpec("C", 20, 1, 50)],
    )
    assert starts(jobs) == {"A": 0, "B": 120, "C": 170}
    assert jobs["A"].end_time == 1140


def test_tiresias_is_fifo_within_the_second_queue_too():
    # 1 GPU, threshold 100. A and B, 300 s each.
    #  0-120: A runs (demoted at 100); round 120: B (queue 0) preempts it. A: 120 done.
    #  120-240: B runs (no restart cost: its first start; demoted at 220). Round 240: both in
    #           queue 1, A was submitted first: A preempts B. B: 120 done.
    #  240-460: A restarts (+40) with 180 left. 460-680: B restarts (+40) with 180 left.
    jobs = run(Tiresias(threshold=100.0), [JobSpec("A", 0, 1, 300), JobSpec("B", 5, 1, 300)])
    assert {k: (j.end_time, j.restarts) for k, j in jobs.items()} == {"A": (460, 1), "B": (680, 1)}


def test_tiresias_ignores_jobs_cancelled_at_submission():
    # H asks for a GPU type the cluster lacks: cancelled at once; the others run as usual.
    trace = [JobSpec("A", 0, 1, 100), JobSpec("H", 5, 1, 100, gpu_types=("H100",)), JobSpec("B", 10, 1, 100)]
    jobs = run(Tiresias(threshold=50.0), trace)
    assert jobs["H"].phase is Phase.CANCELLED
    assert jobs["A"].phase is jobs["B"].phase is Phase.COMPLETED


# ======================================================================== QSSF (predicted service)


@dataclass
class SpyModel(OnlineDurationModel):
    """Records what the model was taught, and with which features."""

    taught: list[tuple[str, list[float] | None]] = field(default_factory=list)

    def observe(self, spec, duration, feats=None):  # type: ignore[no-untyped-def]
        self.taught.append((spec.job_id, feats))
        super().observe(spec, duration, feats)


def history(n_each: int = 25) -> list[JobSpec]:
    """alice's jobs take 60 s, bob's 6000 s; one GPU, one pair every 7000 s, never queueing.

    The model sees users (and their VCs) through their history at submission, so each pair comes
    after the previous one finished: alice-i at 7000 i (ends +60), bob-i at 7000 i + 100 (ends
    +6100). Each user has a VC of their own, so user, VC and group history agree.
    """
    jobs = []
    for i in range(n_each):
        jobs.append(JobSpec(f"alice-{i}", 7000 * i, 1, 60, user="alice", vc="vision"))
        jobs.append(JobSpec(f"bob-{i}", 7000 * i + 100, 1, 6000, user="bob", vc="nlp"))
    return jobs  # the last ends at 7000 x 24 + 6100 = 174,100


def contest(t0: float = 200_000) -> list[JobSpec]:
    """A blocker holds the GPU; bob's job L queues before alice's job S."""
    return [
        JobSpec("blocker", t0, 1, 100, user="carol", vc="infra"),
        JobSpec("L", t0 + 1, 1, 6000, user="bob", vc="nlp"),
        JobSpec("S", t0 + 2, 1, 60, user="alice", vc="vision"),
    ]


def test_qssf_learns_per_user_durations_online_and_serves_the_short_users_job_first():
    model = OnlineDurationModel(min_train=20, retrain_every=1)
    policy = QSSF(model=model)
    jobs = run(policy, history() + contest())
    assert model.fits >= 1  # a tree was trained on finished jobs
    assert policy.predicted_duration("S") < 100
    assert policy.predicted_duration("L") > 3000
    # blocker 200000-200100; then S (predicted ~60 s) before L (~6000 s) though L came first
    assert starts(jobs)["S"] == 200_100 and starts(jobs)["L"] == 200_160
    # FIFO would have served L first
    assert starts(run(FIFO(), history() + contest()))["L"] == 200_100


def test_qssf_without_history_predicts_alike_and_falls_back_to_submission_order():
    model = OnlineDurationModel(min_train=20, retrain_every=1)
    policy = QSSF(model=model)
    jobs = run(policy, contest(t0=0))
    assert model.fits == 0
    assert policy.predicted_duration("L") == policy.predicted_duration("S")
    assert starts(jobs) == {"blocker": 0, "L": 100, "S": 6100}


def test_qssf_service_is_predicted_duration_times_gpus():
    # With equal predicted durations, a 1-GPU job has less service than a 2-GPU one.
    trace = [JobSpec("blocker", 0, 2, 100), JobSpec("wide", 1, 2, 100), JobSpec("narrow", 2, 1, 100)]
    assert starts(run(QSSF(), trace, "2"))["narrow"] == 100


def test_qssf_predicts_from_submission_time_features_never_from_the_jobs_own_duration():
    # Two worlds that differ only in how long S really runs: S's prediction must be identical.
    def predicted(s_duration: float) -> tuple[float, list[float]]:
        trace = history() + [*contest()[:2], JobSpec("S", 200_002, 1, s_duration, user="alice", vc="vision")]
        policy = QSSF(model=OnlineDurationModel(min_train=20, retrain_every=1))
        run(policy, trace)
        return policy.predicted_duration("S"), policy._jobs["S"].features

    assert predicted(60.0) == predicted(60_000.0)


def test_qssf_learns_only_from_finished_jobs_with_the_features_they_had_at_submission():
    model = SpyModel(min_train=20, retrain_every=1)
    trace = history(3) + [JobSpec("never-fits", 50, 4, 100, user="alice")]
    policy = QSSF(model=model)
    jobs = run(policy, trace)
    taught = dict(model.taught)
    assert "never-fits" not in taught  # it never ran: nothing to learn
    assert set(taught) == {j for j in jobs if j != "never-fits"}
    for job_id, feats in taught.items():
        assert feats is policy._jobs[job_id].features  # the very list taken at submission
    # each job was taught when it finished, so in the order they finished
    ends = [jobs[job_id].end_time for job_id in taught]
    assert ends == sorted(ends)


def test_qssf_learns_from_failed_jobs_too():
    model = SpyModel(min_train=100)
    run(QSSF(model=model), [JobSpec("f", 0, 1, 10, status=FinalStatus.FAILED, user="u")])
    assert [job_id for job_id, _ in model.taught] == ["f"]
