"""Standalone SchedMate: SJF and SRPT on the advisor's top-3 estimate, the LAS/Gittins fallback, the Failure Handler."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from schedmate.adapters.insights import AdvisorInsight, FailureInsight, InsightSource
from schedmate.adapters.standalone import GittinsFallback, SchedMateSRPT, StandaloneConfig, StandaloneSchedMate
from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.decisions import Cordon, Decision
from schedmate.schedulers.engine import SimConfig, SimResult
from schedmate.schedulers.job import JobSpec, JobState, Phase
from schedmate.schedulers.policies import Tiresias
from schedmate.schedulers.policy import ClusterView, Policy
from schedmate.sim.failures import FAILURE_KEY, CauseDiagnosis, FailureModel, FailureSimulator, FailureWorld

RESTART = 40.0  # the engine's default restart cost for small jobs


class TableInsights(InsightSource):
    """A hand-written source: fixed top-3 estimates and diagnoses per job id; records calls."""

    def __init__(
        self,
        estimates: dict[str, float | None] | None = None,
        diagnoses: dict[str, str | None] | None = None,
        latency_s: float = 0.0,
    ) -> None:
        self.estimates = estimates or {}
        self.diagnoses = diagnoses or {}
        self.latency_s = latency_s
        self.diagnosed: list[tuple[str, int]] = []
        self.recorded: list[tuple[str, bool]] = []

    def advise(self, job: JobState) -> AdvisorInsight | None:
        est = self.estimates.get(job.job_id)
        if est is None:
            return None
        return AdvisorInsight(("h1", "h2", "h3"), est, est, 50.0, latency_s=self.latency_s)

    def diagnose(self, job: JobState, *, attempt: int) -> FailureInsight | None:
        self.diagnosed.append((job.job_id, attempt))
        category = self.diagnoses.get(job.job_id)
        if category is None:
            return None
        return FailureInsight(category == "infrastructure", category, "table", latency_s=10.0)

    def record(self, job: JobState, *, finished: bool) -> None:
        self.recorded.append((job.job_id, finished))

    def stats(self) -> dict[str, Any]:
        return {"source": "table"}


class Spy(StandaloneSchedMate):
    """Keeps every decision with its time, and the order jobs started in."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.log: list[tuple[float, Decision]] = []
        self.starts: list[tuple[float, str]] = []

    def schedule(self, view: ClusterView) -> Sequence[Decision]:
        decisions = super().schedule(view)
        self.log += [(view.now, d) for d in decisions]
        return decisions

    def on_start(self, job: JobState, view: ClusterView) -> None:
        super().on_start(job, view)
        self.starts.append((view.now, job.job_id))


def job(job_id: str, submit: float, duration: float, *, gpus: int = 1, vc: str = "a", **kw: Any) -> JobSpec:
    return JobSpec(job_id, submit, gpus, duration, vc=vc, **kw)


def app_error(job_id: str, submit: float, work: float, at: float, category: str = "script") -> JobSpec:
    """A job whose user bug strikes at `at` seconds of its run, as `inject_failures` writes it."""
    return job(job_id, submit, work, attributes={FAILURE_KEY: {"category": category, "reason": "KeyError", "at": at / work}})


def run(specs: list[JobSpec], policy: Policy, nodes: int = 1, *, gpus_per_node: int = 1,
        infra: dict[str, list[float]] | None = None) -> dict[str, JobState]:
    """Plain engine; with `infra` (job -> GPU-seconds held at each transient infrastructure
    failure), the failure world with those failures only (healthy nodes back after a 1 h check)."""
    config = SimConfig(checkpoint_interval=1800.0, resubmit_delay=3600.0)
    cluster = ClusterSpec.homogeneous(nodes, gpus_per_node)
    world = FailureWorld(FailureModel(hardware_share=0.0, check_s=3600.0), seed=0, hazard_per_gpu_s=1.0)
    for spec in specs:
        world.thresholds[spec.job_id] = [*(infra or {}).get(spec.job_id, []), 1e18]
    if isinstance(policy, (StandaloneSchedMate, SchedMateSRPT)) and not isinstance(policy.source, CauseDiagnosis):
        policy.source = CauseDiagnosis(policy.source, world)
    result: SimResult = FailureSimulator(specs, cluster, policy, config, world=world).run()
    return {j.job_id: j for j in result.jobs}


def start_order(policy: Spy) -> list[str]:
    return [job_id for _, job_id in policy.starts]


# ------------------------------------------------------------------------------- scheduling


def test_queue_is_served_shortest_top3_estimate_first_not_true_duration() -> None:
    specs = [job("blocker", 0, 100), job("long", 1, 10), job("short", 2, 500), job("mid", 3, 50)]
    source = TableInsights({"blocker": 1.0, "long": 300.0, "short": 100.0, "mid": 200.0})
    policy = Spy(source)
    jobs = run(specs, policy)
    assert start_order(policy) == ["blocker", "short", "mid", "long"]
    assert all(j.phase is Phase.COMPLETED for j in jobs.values())
    assert {j: f for j, f in source.recorded if f} == {"blocker": True, "long": True, "short": True, "mid": True}


def test_unmatched_job_falls_back_to_the_history_of_finished_jobs() -> None:
    # "seen" (vc a, 1 GPU) finished in 50 s: an unmatched job of vc a is then estimated at 50 s,
    # ahead of a matched 100 s estimate and behind a matched 20 s one.
    specs = [job("seen", 0, 50), job("blocker", 60, 1000), job("matched", 61, 10), job("unmatched", 62, 10), job("tiny", 63, 10)]
    policy = Spy(TableInsights({"seen": 50.0, "blocker": 1.0, "matched": 100.0, "tiny": 20.0}))
    run(specs, policy)
    assert start_order(policy) == ["seen", "blocker", "tiny", "unmatched", "matched"]
    assert policy.job_state("unmatched").source == "history" and policy.job_state("unmatched").estimate == pytest.approx(50.0)
    assert policy.job_state("matched").source == "advisor" and policy.job_state("matched").estimate == 100.0
    assert policy.estimate_source("matched") == "advisor" and policy.estimate_source("never-arrived") is None


def test_unmatched_job_without_any_history_gets_the_600s_prior() -> None:
    specs = [job("blocker", 0, 1000), job("a700", 1, 10), job("unmatched", 2, 10), job("a500", 3, 10)]
    policy = Spy(TableInsights({"blocker": 1.0, "a700": 700.0, "a500": 500.0}))
    run(specs, policy)
    assert start_order(policy) == ["blocker", "a500", "unmatched", "a700"]


def test_advisor_latency_delays_the_start() -> None:
    policy = Spy(TableInsights({"a": 10.0}, latency_s=9.0))
    jobs = run([job("a", 0, 10)], policy)
    assert policy.starts == [(9.0, "a")]
    assert jobs["a"].end_time == pytest.approx(19.0)


# ------------------------------------------------------------------------------- failure handler


def test_diagnosed_infra_failure_resumes_from_checkpoint_with_original_priority_and_cordons_node() -> None:
    """Two 1-GPU nodes. F (10,000 s) fails (infrastructure) after 5,000 s; checkpoints every
    1,800 s keep 3,600 s. The handler answers in 10 s; with 300 s recovery F is ready at 5,310
    but B holds the other node until 5,400, F's node being cordoned for its 1 h check. G, with
    the same estimate, arrived at 5,100: F keeps its original priority and goes first."""
    specs = [job("F", 0, 10_000), job("B", 0, 5400), job("G", 5100, 100)]
    source = TableInsights({"F": 1000.0, "B": 1e6, "G": 1000.0}, {"F": "infrastructure"})
    policy = Spy(source, StandaloneConfig(failure_handler=True))
    jobs = run(specs, policy, nodes=2, infra={"F": [5000.0]})

    assert source.diagnosed == [("F", 0)]
    assert [(t, j) for t, j in policy.starts if j in ("F", "G")] == [(0.0, "F"), (5400.0, "F"), (8600.0, "G")]
    assert jobs["F"].end_time == pytest.approx(5400 + RESTART + (10_000 - 3600))
    assert jobs["F"].wasted_gpu_time == pytest.approx(5000 - 3600)
    assert [(t, type(d)) for t, d in policy.log if isinstance(d, Cordon)] == [(5000.0, Cordon)]
    c = policy.counters
    assert (c.resumed, c.true_positives, c.false_positives, c.cordons) == (1, 1, 0, 1)


def test_undiagnosed_infra_failure_waits_for_the_user_and_jct_counts_from_the_first_submit() -> None:
    source = TableInsights({"F": 1000.0}, {"F": None})
    policy = Spy(source, StandaloneConfig(failure_handler=True))
    f = run([job("F", 0, 10_000)], policy, infra={"F": [5000.0]})["F"]
    assert policy.starts == [(0.0, "F"), (5000.0 + 3600, "F")]  # resubmitted 1 h later
    assert f.end_time - f.spec.submit_time == pytest.approx(5000 + 3600 + RESTART + 6400)
    assert policy.counters.missed_infra == 1 and policy.counters.resumed == 0


@pytest.mark.parametrize(("diagnosis", "handler"), [("script", True), (None, True), ("script", False)])
def test_an_application_error_ends_the_job_whatever_the_handler_says_if_not_infrastructure(
        diagnosis: str | None, handler: bool) -> None:
    source = TableInsights({"F": 1000.0}, {"F": diagnosis})
    policy = Spy(source, StandaloneConfig(failure_handler=handler))
    f = run([app_error("F", 0, 10_000, 5000)], policy)["F"]
    assert f.phase is Phase.FAILED and f.end_time == pytest.approx(5000.0)
    assert source.diagnosed == ([("F", 0)] if handler else [])
    assert not any(isinstance(d, Cordon) for _, d in policy.log)


def test_false_positive_is_resumed_fails_again_at_once_and_is_not_retried() -> None:
    source = TableInsights({"F": 1000.0}, {"F": "infrastructure"})  # wrong: it is the user's bug
    policy = Spy(source, StandaloneConfig(failure_handler=True))
    f = run([app_error("F", 0, 10_000, 5000, "framework")], policy, nodes=2)["F"]
    resume = 5000 + 10 + 300
    assert policy.starts == [(0.0, "F"), (resume, "F")]
    assert f.phase is Phase.FAILED and f.end_time == pytest.approx(resume + RESTART)  # the bug, at once
    assert source.diagnosed == [("F", 0)]  # the second failure is not resumed, so not diagnosed
    c = policy.counters
    assert (c.resumed, c.false_positives, c.not_retried, c.cordons) == (1, 1, 1, 1)


def test_detection_rate_zero_means_the_handler_never_sees_a_failure() -> None:
    source = TableInsights({"F": 1000.0}, {"F": "infrastructure"})
    policy = Spy(source, StandaloneConfig(failure_handler=True, detection_rate=0.0))
    run([job("F", 0, 10_000)], policy, infra={"F": [5000.0]})
    assert source.diagnosed == [] and policy.counters.undetected == 1 and policy.counters.missed_infra == 1


def test_policy_satisfies_the_insight_interface_it_is_tested_with() -> None:
    assert isinstance(TableInsights(), InsightSource)


# ------------------------------------------------------------------------------- SRPT


def srpt(estimates: dict[str, float | None], **cfg: Any) -> SchedMateSRPT:
    return SchedMateSRPT(TableInsights(estimates), StandaloneConfig(**cfg))


@pytest.mark.parametrize(("gpus", "restart"), [(1, 40.0), (16, 60.0)])
def test_srpt_preempts_at_the_round_and_pays_the_same_restart_cost_as_tiresias(gpus: int, restart: float) -> None:
    """A (1,000 s) runs; B (200 s) arrives at 220 s. Both policies preempt A at the 240 s round
    (SRPT: B's 200 predicted s × GPUs < A's 760 left; Tiresias: A passed its 200 s × GPUs queue
    threshold), B ends at 440 and A resumes then, paying the engine's restart cost: 40 s, or
    60 s above 8 GPUs."""
    specs = [job("A", 0, 1000, gpus=gpus), job("B", 220, 200, gpus=gpus)]
    nodes, per_node = (1, 1) if gpus == 1 else (2, 8)
    for policy in (srpt({"A": 1000.0, "B": 200.0}), Tiresias(threshold=200.0 * gpus, round_seconds=60.0)):
        jobs = run(specs, policy, nodes=nodes, gpus_per_node=per_node)
        assert jobs["B"].first_start == pytest.approx(240.0), policy.name
        assert jobs["B"].end_time == pytest.approx(440.0), policy.name
        assert jobs["A"].end_time == pytest.approx(440.0 + restart + 760.0), policy.name
        assert jobs["A"].restarts == 1


def test_srpt_ranks_by_remaining_predicted_gpu_time_not_duration() -> None:
    """On 2 GPUs after a blocker: W (100 s × 2 GPUs = 200 GPU-s) before N (150 s × 1 GPU)?
    No: N's 150 GPU-s are less, so N goes first, then W once both GPUs are free."""
    specs = [job("blocker", 0, 300, gpus=2), job("W", 10, 100, gpus=2), job("N", 20, 150)]
    policy = srpt({"blocker": 1.0, "W": 100.0, "N": 150.0})
    jobs = run(specs, policy, nodes=1, gpus_per_node=2)
    assert jobs["N"].first_start < jobs["W"].first_start


def test_unmatched_jobs_are_served_least_attained_service_first_without_history() -> None:
    """No estimates and no history: the key is the attained GPU-time's class (64 for A's 120 s,
    0 for B). B preempts A at the 120 s round, runs its 100 s, and A resumes at 220 with the
    restart cost."""
    specs = [job("A", 0, 1000), job("B", 100, 100)]
    jobs = run(specs, srpt({}))
    assert jobs["B"].first_start == pytest.approx(120.0) and jobs["B"].end_time == pytest.approx(220.0)
    assert jobs["A"].end_time == pytest.approx(220.0 + RESTART + 880.0)


def test_a_job_that_outlives_its_estimate_falls_back_to_its_attained_service() -> None:
    """A was predicted at 100 s but needs 1,000 s; B (500 s, predicted right) arrives at 200 s.
    A's key is its predicted remainder until 100 s, then its service class's lower bound (pure
    LAS in doubling classes: fewer than five sizes known): 64, 128, 256, then 512 > B's 500 once A
    has 512 s, so B takes over at the next round (540 s)."""
    specs = [job("A", 0, 1000), job("B", 200, 500)]
    jobs = run(specs, srpt({"A": 100.0, "B": 500.0}))
    assert jobs["B"].first_start == pytest.approx(540.0) and jobs["B"].end_time == pytest.approx(1040.0)
    assert jobs["A"].end_time == pytest.approx(1040.0 + RESTART + 460.0)


def test_gittins_fallback_is_the_remaining_service_rate_index_of_the_history() -> None:
    """Sizes {100, 100, 1000}: at 0 attained, serving up to 100 finishes 2/3 of jobs for a mean
    100 of service: index 100 / (2/3) = 150 (quantum 100), better than serving to the end
    (400 / 1 = 400). Past 100, only the 1000 job is left: 900 to go. Past all data: LAS."""
    g = GittinsFallback()
    g.fit([100.0, 100.0, 1000.0])
    assert g.exact(0.0) == pytest.approx((150.0, 100.0))
    assert g.exact(100.0) == pytest.approx((900.0, 900.0))
    assert g.exact(5000.0) == (5000.0, 0.0)
    assert g.key(0.0)[0] == pytest.approx(150.0)
    # increasing in attained service over a decreasing-hazard (Lomax) history: LAS order
    rng = np.random.default_rng(0)
    g.fit(list(100.0 * rng.pareto(1.2, 5000)))
    keys = [g.key(a)[0] for a in (0.0, 100.0, 1000.0, 10_000.0)]
    assert keys == sorted(keys)


def test_waiting_jobs_are_re_estimated_once_history_has_grown() -> None:
    class Changing(TableInsights):
        def advise(self, job: JobState) -> AdvisorInsight | None:
            self.estimates[job.job_id] = self.estimates.get(job.job_id, 0.0) + 100.0
            return super().advise(job)

    policy = SchedMateSRPT(Changing(), StandaloneConfig())
    waiting = JobState(job("w", 0, 10))
    policy._ask(waiting)
    policy._ready["w"] = waiting
    policy._recorded = 19
    policy._reestimate()
    assert policy.job_state("w").estimate == 100.0  # not yet: 19 finished jobs since the last ask
    policy._recorded = 20
    policy._reestimate()
    assert policy.job_state("w").estimate == 200.0 and policy.job_state("w").source == "advisor"


@pytest.mark.parametrize("cls", [SchedMateSRPT, StandaloneSchedMate])
def test_decisions_do_not_depend_on_true_durations_before_any_job_ends(cls: type) -> None:
    """No leak: with the same advice, permuting the jobs' true durations changes nothing the
    policy does until the first job ends (the first moment a duration is observable)."""

    class Recorder(cls):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.log: list[tuple[float, Decision]] = []

        def schedule(self, view: ClusterView) -> Sequence[Decision]:
            decisions = super().schedule(view)
            self.log += [(view.now, d) for d in decisions]
            return decisions

    durations = [5000.0 + 700.0 * i for i in range(12)]
    estimates = {f"j{i}": 100.0 * (i % 5 + 1) for i in range(12)}
    logs, ends = [], []
    for durs in (durations, durations[::-1]):
        specs = [job(f"j{i}", 10.0 * i, d, gpus=1 + i % 2) for i, d in enumerate(durs)]
        policy = Recorder(TableInsights(dict(estimates)), StandaloneConfig(backfill=True))
        jobs = run(specs, policy, nodes=2, gpus_per_node=2)
        ends.append(min(j.end_time for j in jobs.values() if j.end_time is not None))
        logs.append(policy.log)
    first_end = min(ends)
    before = [[(t, d) for t, d in log if t < first_end] for log in logs]
    assert before[0] == before[1] and len(before[0]) >= 3
