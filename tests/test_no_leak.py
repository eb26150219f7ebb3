"""No-leak rule (spec §8): an agent sees only what a live cluster would show it.

A simulated job's code, config and launch command come from its *planned* work; swapping two jobs'
outcomes (actual duration, final state) must leave every artefact byte unchanged.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from schedmate.integrations.artefacts import EARLY_EXIT_FRACTION, plan_artefact, planned_work, repo_hash
from schedmate.schedulers.job import FinalStatus, JobSpec

SEED = 3
statuses = st.sampled_from(list(FinalStatus))
durations = st.floats(min_value=60.0, max_value=5e6, allow_nan=False)


def _job(job_id: str, gpus: int, duration: float, status: FinalStatus, plan: float | None = None) -> JobSpec:
    attrs = {} if plan is None else {"planned_work": plan}
    return JobSpec(job_id=job_id, submit_time=0.0, num_gpus=gpus, duration=duration, status=status, attributes=attrs)


def _bytes(spec: JobSpec) -> tuple[str, str, str]:
    art = plan_artefact(spec, SEED)
    return art.key, repo_hash(art.render()), repr((art.log_framework, art.step_time_s, art.log_interval))


@settings(max_examples=25, deadline=None)
@given(gpus=st.sampled_from([1, 2, 4, 8, 16, 64]), plan=durations, d1=durations, s1=statuses, d2=durations,
       s2=statuses)
def test_swapping_two_jobs_outcomes_leaves_their_artefacts_identical(gpus, plan, d1, s1, d2, s2) -> None:
    a, b = _job("job-a", gpus, d1, s1, plan), _job("job-b", gpus, d2, s2, plan)
    a_swapped, b_swapped = _job("job-a", gpus, d2, s2, plan), _job("job-b", gpus, d1, s1, plan)
    assert _bytes(a) == _bytes(a_swapped)
    assert _bytes(b) == _bytes(b_swapped)


def test_a_completed_job_planned_what_it_ran() -> None:
    assert planned_work(_job("c", 4, 3600.0, FinalStatus.COMPLETED), SEED) == 3600.0


def test_an_early_exit_planned_more_than_it_ran_within_the_spec_range() -> None:
    lo, hi = EARLY_EXIT_FRACTION
    ratios = [3600.0 / planned_work(_job(f"f{i}", 4, 3600.0, FinalStatus.FAILED), SEED) for i in range(400)]
    assert all(lo <= r <= hi for r in ratios)
    # the stop point is a fresh draw per job, spread over the range, not a constant
    assert min(ratios) < lo + 0.1 and max(ratios) > hi - 0.1


def test_the_stop_point_does_not_depend_on_how_long_the_job_ran() -> None:
    short, long = _job("x", 8, 600.0, FinalStatus.CANCELLED), _job("x", 8, 60000.0, FinalStatus.CANCELLED)
    assert 600.0 / planned_work(short, SEED) == 60000.0 / planned_work(long, SEED)


def test_an_early_exit_looks_like_a_longer_job_not_like_its_actual_length() -> None:
    ran = 4000.0
    failed = _job("j", 4, ran, FinalStatus.FAILED)
    plan = planned_work(failed, SEED)
    assert plan > ran
    completed_same_plan = _job("j", 4, plan, FinalStatus.COMPLETED)
    completed_same_run = _job("j", 4, ran, FinalStatus.COMPLETED)
    assert _bytes(failed) == _bytes(completed_same_plan)
    if plan > 1.5 * ran:  # a different length cell: the code says so
        assert _bytes(failed) != _bytes(completed_same_run)
