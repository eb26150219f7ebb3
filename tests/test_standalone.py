"""Standalone SchedMate: SJF on the advisor's top-3 estimate, failure handling, failure injection."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from schedmate.integrations.failures_sim import (
    FAILURE_KEY,
    FailureModel,
    failure_of,
    failure_shares,
    inject_failures,
)
from schedmate.integrations.insights import AdvisorInsight, FailureInsight, InsightSource, TrackerReading
from schedmate.integrations.standalone import StandaloneConfig, StandaloneSchedMate, gpu_hours_lost
from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.decisions import Cordon, Decision, Uncordon
from schedmate.schedulers.engine import SimConfig, SimResult, simulate
from schedmate.schedulers.job import FinalStatus, JobSpec, JobState, Phase
from schedmate.schedulers.policies import FIFO
from schedmate.schedulers.policy import ClusterView

RESTART = 40.0  # the engine's default restart cost for small jobs


class TableInsights:
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

    def track(self, job: JobState, *, event_at: float, now: float) -> TrackerReading | None:
        return None

    def diagnose(self, job: JobState, *, attempt: int) -> FailureInsight | None:
        self.diagnosed.append((job.job_id, attempt))
        category = self.diagnoses.get(job.job_id)
        if category is None:
            return None
        return FailureInsight(category == "infrastructure", category, "table")

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


def failing(job_id: str, submit: float, work: float, at: float, category: str) -> JobSpec:
    """A job that fails once at `at` seconds of its run, as `inject_failures` writes it."""
    failure = {"category": category, "reason": "x", "at": at / work}
    return job(job_id, submit, at, status=FinalStatus.FAILED, work=work, attributes={FAILURE_KEY: failure})


def run(specs: list[JobSpec], policy: StandaloneSchedMate | FIFO, nodes: int = 1, **cfg: Any) -> dict[str, JobState]:
    config = SimConfig(checkpoint_interval=1800.0, resubmit_delay=3600.0, **cfg)
    result: SimResult = simulate(specs, ClusterSpec.homogeneous(nodes, 1), policy, config)
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
    jobs = run(specs, policy)
    assert start_order(policy) == ["seen", "blocker", "tiny", "unmatched", "matched"]
    assert jobs["unmatched"].info["sm_estimate_source"] == "history"
    assert jobs["matched"].info["sm_estimate_source"] == "advisor"


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


# ------------------------------------------------------------------------------- failures


def test_diagnosed_infra_failure_resumes_from_checkpoint_with_original_priority_and_cordons_node() -> None:
    # Two 1-GPU nodes. F fails (infrastructure) at 5000 s of a 10,000 s run; checkpoints every
    # 1800 s, so it keeps 3600 s. G, same estimate, arrives during F's 310 s recovery.
    specs = [
        failing("F", 0, 10_000, 5000, "infrastructure"),
        job("B", 0, 20_000),
        job("G", 5100, 100),
    ]
    source = TableInsights({"F": 1000.0, "B": 1e6, "G": 1000.0}, {"F": "infrastructure"})
    policy = Spy(source, StandaloneConfig(failure_handler=True))
    jobs = run(specs, policy, nodes=2)

    resume = 5000 + 10 + 300
    assert ("F", 0) in source.diagnosed
    assert [(t, j) for t, j in policy.starts if j in ("F", "G")] == [(0.0, "F"), (resume, "F"), (pytest.approx(resume + RESTART + 6400), "G")]
    assert jobs["F"].end_time == pytest.approx(resume + RESTART + (10_000 - 3600))
    assert jobs["F"].wasted_gpu_time == pytest.approx(5000 - 3600)
    node = next(d.node for t, d in policy.log if isinstance(d, Cordon))
    assert [(t, type(d)) for t, d in policy.log if isinstance(d, (Cordon, Uncordon))] == [(5000, Cordon), (resume, Uncordon)]
    assert all(d.node == node for _, d in policy.log if isinstance(d, (Cordon, Uncordon)))
    c = policy.counters
    assert (c.resumed, c.true_positives, c.false_positives, c.cordoned_nodes, c.uncordoned_nodes) == (1, 1, 0, 1, 1)


def test_no_job_is_placed_on_a_cordoned_node_during_recovery() -> None:
    # "W" waits while F and B hold both nodes; F's failure frees its node, which is cordoned at
    # that same instant, so W must wait for the recovery rather than take it.
    specs = [failing("F", 0, 5000, 1000, "infrastructure"), job("B", 0, 3000), job("W", 500, 10)]
    source = TableInsights({"F": 1e5, "B": 1e5, "W": 10.0}, {"F": "infrastructure"})
    policy = Spy(source, StandaloneConfig(failure_handler=True))
    jobs = run(specs, policy, nodes=2)
    assert dict((j, t) for t, j in policy.starts)["W"] == pytest.approx(1310.0)  # waits for the node
    assert jobs["W"].phase is Phase.COMPLETED


@pytest.mark.parametrize(("diagnosis", "handler"), [("script", True), (None, True), ("infrastructure", False)])
def test_app_error_undiagnosed_or_no_handler_takes_the_user_resubmit_path(diagnosis: str | None, handler: bool) -> None:
    specs = [failing("F", 0, 10_000, 5000, "script" if handler else "infrastructure")]
    source = TableInsights({"F": 1000.0}, {"F": diagnosis})
    policy = Spy(source, StandaloneConfig(failure_handler=handler))
    jobs = run(specs, policy)
    f = jobs["F"]
    assert policy.starts == [(0.0, "F"), (5000 + 3600, "F")]  # resubmitted 1 h later
    assert f.end_time == pytest.approx(5000 + 3600 + RESTART + 6400)  # from the last checkpoint
    assert f.phase is Phase.COMPLETED and f.failures == 1
    assert not any(isinstance(d, Cordon) for _, d in policy.log)
    assert policy.counters.user_resubmits == 1 and policy.counters.resumed == 0
    assert source.diagnosed == ([("F", 0)] if handler else [])
    assert policy.counters.missed_infra == (0 if handler else 1)


def test_false_positive_is_resumed_fails_again_at_once_then_takes_the_user_path() -> None:
    specs = [failing("F", 0, 10_000, 5000, "framework")]
    source = TableInsights({"F": 1000.0}, {"F": "infrastructure"})  # wrong: it is an app error
    policy = Spy(source, StandaloneConfig(failure_handler=True))
    jobs = run(specs, policy)
    resume = 5000 + 310
    refail = resume + RESTART
    assert policy.starts == [(0.0, "F"), (resume, "F"), (refail + 3600, "F")]
    assert jobs["F"].end_time == pytest.approx(refail + 3600 + RESTART + 6400)
    assert source.diagnosed == [("F", 0)]  # at most one retry: the second failure is not diagnosed
    c = policy.counters
    assert (c.resumed, c.false_positives, c.user_resubmits, c.cordoned_nodes) == (1, 1, 1, 1)
    assert c.false_positive_gpu_s == pytest.approx(RESTART)


class TruthfulTable(TableInsights):
    """A source that knows the ground truth itself (as semantic_sim does), overriding the spec's."""

    def failure_truth(self, job: JobState, attempt: int) -> FailureInsight:
        return FailureInsight(True, "infrastructure", "source truth")


def test_ground_truth_comes_from_the_source_when_it_has_one() -> None:
    specs = [failing("F", 0, 10_000, 5000, "script")]  # the spec says script ...
    policy = Spy(TruthfulTable({"F": 1.0}, {"F": "infrastructure"}), StandaloneConfig(failure_handler=True))
    run(specs, policy)
    c = policy.counters  # ... but the source says infrastructure: a true positive, resumed once
    assert (c.true_positives, c.false_positives, c.user_resubmits) == (1, 0, 0)


def test_gpu_hours_lost_counts_progress_back_to_checkpoints() -> None:
    policy = StandaloneSchedMate(TableInsights({"F": 1.0}))
    specs = [failing("F", 0, 10_000, 5000, "script")]
    result = simulate(specs, ClusterSpec.homogeneous(1, 1), policy, SimConfig(checkpoint_interval=1800.0, resubmit_delay=3600.0))
    assert gpu_hours_lost(result, policy) == pytest.approx((5000 - 3600) / 3600)


def test_engine_resubmits_failed_jobs_of_any_policy_after_the_user_delay() -> None:
    specs = [failing("F", 0, 1000, 500, "script"), job("X", 10, 100)]
    jobs = run(specs, FIFO())
    assert jobs["X"].first_start == pytest.approx(500.0)  # F's attempt ended and left the queue
    assert jobs["F"].end_time == pytest.approx(500 + 3600 + RESTART + 1000)  # no checkpoint before 1800 s
    assert jobs["F"].phase is Phase.COMPLETED


def test_without_resubmit_delay_a_failed_job_ends_as_before() -> None:
    specs = [failing("F", 0, 1000, 500, "script")]
    result = simulate(specs, ClusterSpec.homogeneous(1, 1), FIFO(), SimConfig())
    assert result.jobs[0].phase is Phase.FAILED and result.jobs[0].end_time == 500.0


def test_policy_satisfies_the_insight_interface_it_is_tested_with() -> None:
    assert isinstance(TableInsights(), InsightSource)


# ------------------------------------------------------------------------------- injection


def trace(n: int, seed: int = 7) -> list[JobSpec]:
    rng = np.random.default_rng(seed)
    durations = np.round(np.exp(rng.normal(7.0, 2.0, n)))
    gpus = rng.choice([1, 1, 1, 2, 4, 8, 16], n)
    return [job(f"j{i}", float(i), float(d), gpus=int(g)) for i, (d, g) in enumerate(zip(durations, gpus, strict=True))]


def test_injection_is_deterministic_by_seed_and_leaves_the_input_alone() -> None:
    specs = trace(2000)
    a, b, c = inject_failures(specs, 1), inject_failures(specs, 1), inject_failures(specs, 2)
    assert a == b and [x.attributes for x in a] == [x.attributes for x in b]
    assert a != c
    assert all(s.status is FinalStatus.COMPLETED and not s.attributes for s in specs)


def test_injection_hits_the_target_shares() -> None:
    specs = trace(4000)
    out = inject_failures(specs, 3)
    shares = failure_shares(out)
    assert shares.failed_share == pytest.approx(0.305, abs=0.001)
    assert shares.infra_share == pytest.approx(0.11, abs=0.005)
    assert shares.infra_gpu_share == pytest.approx(0.82, abs=0.03)
    categories = {failure_of(s).category for s in out if failure_of(s) is not None}  # type: ignore[union-attr]
    assert categories == {"infrastructure", "framework", "script"}


def test_a_failed_spec_runs_to_its_failure_point_and_keeps_its_full_work() -> None:
    specs = trace(500)
    for before, after in zip(specs, inject_failures(specs, 0), strict=True):
        f = failure_of(after)
        if f is None:
            assert after.status is FinalStatus.COMPLETED and after.duration == before.duration
            continue
        assert after.status is FinalStatus.FAILED
        assert after.work == before.duration
        assert after.duration == pytest.approx(f.at * before.duration)
        assert 0.0 <= f.at <= 1.0 and f.reason


def test_trace_states_are_replaced_and_zero_length_jobs_never_fail() -> None:
    specs = [job("z", 0, 0.0), job("c", 1, 100, status=FinalStatus.CANCELLED)] + trace(300)
    out = inject_failures(specs, 0, FailureModel(rate=1.0))
    assert out[0].status is FinalStatus.COMPLETED
    assert out[1].status is FinalStatus.FAILED and out[1].work == 100
    assert sum(failure_of(s) is not None for s in out) == len(specs) - 1
