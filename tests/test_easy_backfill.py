"""EASY backfilling (`schedulers/policies/easy.py`): reservations for the head job, kills at the limit."""

from __future__ import annotations

import dataclasses

import pytest

from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.engine import SimConfig, Simulator
from schedmate.schedulers.job import FinalStatus, JobSpec, JobState, Phase
from schedmate.schedulers.policies.easy import LIMIT_KEY, EasyBackfill, FixedLimits
from schedmate.schedulers.policy import ClusterView
from schedmate.schedulers.registry import make_policy
from schedmate.schedulers.testing import check_policy, random_trace


def job(jid: str, t: float, gpus: int, run: float, limit: float | None) -> JobSpec:
    attrs = {LIMIT_KEY: limit} if limit is not None else {}
    return JobSpec(jid, t, gpus, run, attributes=attrs)


def run(jobs: list[JobSpec], policy: EasyBackfill, cluster: str = "1x8") -> dict[str, JobState]:
    result = Simulator(jobs, ClusterSpec.parse(cluster), policy, SimConfig(record_timeline=False)).run()
    return {j.job_id: j for j in result.jobs}


def test_worked_example_backfills_only_what_cannot_delay_the_head() -> None:
    # 8 GPUs. A holds 4 until its limit (t=100). B, the head, needs all 8: its reservation is t=100.
    # C (2 GPUs, limit 50) ends before t=100: it backfills at once. D (2 GPUs, limit 500) would still
    # hold GPUs at t=100 and there is no spare GPU then: it waits behind B.
    jobs = [job("A", 0, 4, 100, 100), job("B", 1, 8, 30, 60), job("C", 2, 2, 40, 50), job("D", 3, 2, 10, 500)]
    out = run(jobs, EasyBackfill())
    assert out["C"].first_start == 2.0  # backfilled
    assert out["B"].first_start == 100.0  # not delayed by the backfill
    assert out["D"].first_start == 130.0  # after B (FIFO would give the same for D)
    assert all(j.phase is Phase.COMPLETED for j in out.values())


def test_extra_gpus_at_the_shadow_time_take_a_long_job() -> None:
    # B needs 6 of 8: at its shadow time t=100 two GPUs are spare, so D (2 GPUs, long limit) may start
    # now; E (2 more GPUs, long) may not, since the spare GPUs are taken.
    jobs = [job("A", 0, 4, 100, 100), job("B", 1, 6, 30, 60), job("D", 2, 2, 500, 500), job("E", 3, 2, 10, 500)]
    out = run(jobs, EasyBackfill())
    assert out["D"].first_start == 2.0
    assert out["B"].first_start == 100.0
    assert out["E"].first_start == 130.0


def test_a_job_is_killed_at_its_limit_and_resubmitted_with_the_maximum() -> None:
    rule = FixedLimits(max_s=1000.0, resubmit_s=20.0)
    policy = EasyBackfill(rule=rule)
    out = run([job("A", 0, 2, 100, 60)], policy)
    a = out["A"]
    assert a.phase is Phase.COMPLETED
    assert a.restarts == 1
    # killed at 60 with nothing kept, resubmitted at 80, pays the engine's 40 s restart cost, runs 100 s
    assert a.end_time == pytest.approx(60 + 20 + 40 + 100)
    assert [(k.job_id, k.source, k.run_s, k.gpus) for k in policy.kills] == [("A", "user", 60.0, 2)]
    assert a.wasted_gpu_time == pytest.approx(2 * 60)


def test_a_job_within_its_limit_is_never_killed() -> None:
    policy = EasyBackfill()
    out = run([job("A", 0, 2, 100, 120)], policy)
    assert out["A"].end_time == 100.0 and not policy.kills


@dataclasses.dataclass
class DoubleOnce:
    check_before_s: float = 30.0
    check_every_s: float = 0.0
    resubmit_s: float = 0.0
    asked: list[tuple[str, float, float]] = dataclasses.field(default_factory=list)

    def initial(self, job: JobState, view: ClusterView) -> tuple[float, str]:
        return float(job.spec.attributes[LIMIT_KEY]), "schedmate"

    def after_kill(self, job: JobState, view: ClusterView, limit: float) -> tuple[float, str]:
        return 10_000.0, "user"

    def extend(self, job: JobState, view: ClusterView, limit: float, source: str) -> float | None:
        self.asked.append((job.job_id, view.now, limit))
        return 2 * limit if len(self.asked) == 1 else None


def test_an_extension_asked_before_expiry_keeps_the_job_alive() -> None:
    rule = DoubleOnce()
    policy = EasyBackfill(rule=rule)
    out = run([job("A", 0, 1, 100, 60)], policy)
    # asked 30 s before each limit: at 30 (limit 60, doubled) and at 90 (limit 120, left alone)
    assert rule.asked == [("A", 30.0, 60.0), ("A", 90.0, 120.0)]
    assert out["A"].end_time == 100.0 and out["A"].restarts == 0
    assert policy.run_stats()["extensions"] == 1 and not policy.kills


def test_backfilled_jobs_use_their_limits_not_their_run_times() -> None:
    # C runs 40 s but asked for 500: EASY cannot know it ends before the head's reservation.
    jobs = [job("A", 0, 4, 100, 100), job("B", 1, 8, 30, 60), job("C", 2, 2, 40, 500)]
    out = run(jobs, EasyBackfill())
    assert out["C"].first_start == 130.0


@pytest.mark.parametrize("name", ["easy", "easy-conservative"])
def test_check_policy_on_a_random_trace_with_kills(name: str) -> None:
    base = random_trace(40, seed=3)
    jobs = [dataclasses.replace(s, attributes={LIMIT_KEY: s.duration * (0.7 if i % 5 == 0 else 2.0)})
            for i, s in enumerate(base)]
    check = check_policy(lambda: make_policy(name), jobs)
    kills = check.checked.inner.run_stats()["kills"]  # type: ignore[attr-defined]
    assert kills.get("user", 0) >= 1
    assert all(j.phase.is_terminal for j in check.result.jobs)


@pytest.mark.parametrize("name", ["easy", "easy-conservative"])
def test_check_policy_default_trace(name: str) -> None:
    check_policy(lambda: make_policy(name), seed=1)


def test_conservative_protects_every_reservation_where_easy_protects_only_the_heads() -> None:
    # 8 GPUs. A holds 4 until t=100. B (6 GPUs) is the head: reserved at 100, with 2 GPUs spare then.
    # C (all 8, 10 s) waits behind B. D (2 GPUs, limit 500) fits the head's spare GPUs, so EASY starts it
    # at once, and C then waits for D's end (t=403). Conservative also reserves C (t=150) and D would
    # overlap it: D waits, C starts at 150, D after C.
    jobs = [job("A", 0, 4, 100, 100), job("B", 1, 6, 50, 50), job("C", 2, 8, 10, 10), job("D", 3, 2, 400, 500)]
    easy = run(jobs, EasyBackfill())
    assert (easy["D"].first_start, easy["B"].first_start, easy["C"].first_start) == (3.0, 100.0, 403.0)
    cons = run(jobs, EasyBackfill(conservative=True))
    assert (cons["B"].first_start, cons["C"].first_start, cons["D"].first_start) == (100.0, 150.0, 160.0)


def test_failed_jobs_end_as_failed() -> None:
    spec = dataclasses.replace(job("A", 0, 1, 10, 100), status=FinalStatus.FAILED)
    out = run([spec], EasyBackfill())
    assert out["A"].phase is Phase.FAILED


@dataclasses.dataclass
class ExtendAfterStartup:
    """Extends only once the job has run 20 s (its "first progress line"), polled every 10 s."""

    check_before_s: float = 50.0
    check_every_s: float = 10.0
    resubmit_s: float = 0.0
    asked: list[float] = dataclasses.field(default_factory=list)

    def initial(self, job: JobState, view: ClusterView) -> tuple[float, str]:
        return 40.0, "schedmate"

    def after_kill(self, job: JobState, view: ClusterView, limit: float) -> tuple[float, str]:
        return 10_000.0, "user"

    def extend(self, job: JobState, view: ClusterView, limit: float, source: str) -> float | None:
        self.asked.append(view.now)
        return 200.0 if view.now >= 20.0 and limit < 200.0 else None


def test_the_rule_is_polled_until_the_limit_expires() -> None:
    rule = ExtendAfterStartup()
    policy = EasyBackfill(rule=rule)
    out = run([job("A", 0, 1, 100, None)], policy)
    assert rule.asked[:3] == [0.0, 10.0, 20.0]  # limit 40 s, checked from 50 s before, every 10 s
    assert out["A"].end_time == 100.0 and not policy.kills


def test_a_job_longer_than_the_maximum_resumes_from_its_checkpoint_and_ends() -> None:
    policy = EasyBackfill(rule=FixedLimits(default_s=100.0, max_s=100.0))
    out = run([job("A", 0, 1, 250, None)], policy)
    # work kept across kills: 100, then 60 per 100 s attempt (each restart pays 40 s), then the last 30
    assert out["A"].phase is Phase.COMPLETED and len(policy.kills) == 3
    assert policy.run_stats()["counts"]["resumed_after_kill"] == 3
