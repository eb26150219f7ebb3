"""No-leak rule (spec §8, issue 22): an agent sees only what a live cluster would show it.

The default path of every case study is `sim.world`: a trace window is realised with
plans drawn from an *earlier* window, and the artefacts (code, config, launch command, log style)
are rendered from those plans. Swapping two evaluated jobs' outcomes (run time, final state)
must leave every artefact byte unchanged, and no evaluated job may appear in the history.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from schedmate.schedulers.job import FinalStatus, JobSpec
from schedmate.sim.artefacts import plan_artefact, planned_work, repo_hash
from schedmate.sim.world import WorldModel, history_window, realise

SEED = 3
statuses = st.sampled_from(list(FinalStatus))
durations = st.floats(min_value=60.0, max_value=5e6, allow_nan=False)


def _job(job_id: str, gpus: int, duration: float, status: FinalStatus = FinalStatus.COMPLETED,
         user: str = "u1", submit: float = 0.0) -> JobSpec:
    return JobSpec(job_id=job_id, submit_time=submit, num_gpus=gpus, duration=duration, status=status, user=user)


def _earlier() -> list[JobSpec]:
    return [_job(f"old-{i}", [1, 2, 4, 8][i % 4], 60.0 * (1 + (i * 37) % 500), user=f"u{i % 3}") for i in range(200)]


def _bytes(spec: JobSpec) -> tuple[str, str, str]:
    art = plan_artefact(spec, SEED)
    return art.key, repo_hash(art.render()), repr((art.log_framework, art.step_time_s, art.log_interval))


@settings(max_examples=20, deadline=None)
@given(gpus=st.sampled_from([1, 2, 4, 8, 16]), d1=durations, s1=statuses, d2=durations, s2=statuses)
def test_swapping_two_jobs_outcomes_leaves_every_world_artefact_identical(gpus, d1, s1, d2, s2) -> None:
    ref = _earlier()
    window = [_job("a", gpus, d1, s1), _job("b", gpus, d2, s2), _job("c", 4, 900.0)]
    swapped = [_job("a", gpus, d2, s2), _job("b", gpus, d1, s1), _job("c", 4, 900.0)]
    before = [_bytes(s) for s in realise(window, SEED, ref)]
    after = [_bytes(s) for s in realise(swapped, SEED, ref)]
    assert before == after


@settings(max_examples=20, deadline=None)
@given(d1=durations, s1=statuses, d2=durations, s2=statuses)
def test_a_job_that_went_through_no_world_still_gets_an_outcome_free_plan(d1, s1, d2, s2) -> None:
    assert planned_work(_job("x", 4, d1, s1), SEED) == planned_work(_job("x", 4, d2, s2), SEED)
    assert _bytes(_job("x", 4, d1, s1)) == _bytes(_job("x", 4, d2, s2))


def test_a_completed_job_did_not_plan_what_it_ran() -> None:
    ran = [_job(f"j{i}", 4, 3600.0) for i in range(50)]
    plans = [s.attributes["planned_work"] for s in realise(ran, SEED, _earlier())]
    assert sum(1 for p in plans if abs(p - 3600.0) < 1.0) == 0
    assert len({round(p) for p in plans}) > 10  # a spread drawn from the earlier window, not a constant


def test_the_world_run_time_follows_the_code_and_the_jobs_own_step_time() -> None:
    jobs = realise([_job(f"j{i}", 2, 5000.0) for i in range(300)], SEED, _earlier(), WorldModel(step_sigma=0.3))
    done = [s for s in jobs if s.status is FinalStatus.COMPLETED]
    assert len(done) == len(jobs)  # the window says who stopped: nobody here
    factors = sorted(s.attributes["world"]["step_factor"] for s in done)
    assert 0.6 < factors[len(factors) // 2] < 1.6 and factors[0] < 0.8 and factors[-1] > 1.25


def test_a_trace_without_status_gets_early_stops_with_mass_in_the_first_minutes() -> None:
    from schedmate.sim.world import EarlyStops

    model = WorldModel(early=EarlyStops.for_trace("philly"))
    jobs = realise([_job(f"j{i}", 1, 7200.0) for i in range(2000)], SEED, _earlier(), model)
    early = [s for s in jobs if s.status is not FinalStatus.COMPLETED]
    assert 0.33 < len(early) / len(jobs) < 0.47  # Philly's non-complete rate, 39.6%
    quick = [s for s in early if s.attributes["world"]["stop"] == "failed-early"]
    assert len(quick) > 0.35 * sum(1 for s in early if s.status is FinalStatus.FAILED)
    assert all(s.duration <= s.attributes["world"]["full_run_s"] + 1e-6 for s in early)


def test_history_comes_from_the_earlier_window_and_never_names_an_evaluated_job() -> None:
    evaluated = realise([_job(f"old-{i}", 1, 100.0) for i in range(5)], SEED, _earlier())
    history = history_window(_earlier(), SEED)
    assert {s.job_id for s in history}.isdisjoint({s.job_id for s in evaluated})
    assert all(s.job_id.startswith("hist-") for s in history)


def test_an_early_exit_stop_point_never_reaches_the_artefact() -> None:
    ref = _earlier()
    ok = realise([_job("j", 8, 600.0)], SEED, ref)[0]
    failed = realise([replace(_job("j", 8, 600.0), status=FinalStatus.FAILED)], SEED, ref)[0]
    assert _bytes(ok) == _bytes(failed)
    assert failed.duration <= ok.duration
