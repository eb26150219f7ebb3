"""Every case study prints the advisor's estimate quality beside its JCT figures (issue 22)."""

from __future__ import annotations

import math

import pytest

from schedmate.schedulers.job import FinalStatus, JobSpec
from schedmate.sim.experiments.quality import estimate_quality, merge_quality, quality_line


def _job(jid: str, duration: float, status: FinalStatus = FinalStatus.COMPLETED) -> JobSpec:
    return JobSpec(job_id=jid, submit_time=0.0, num_gpus=1, duration=duration, status=status)


JOBS = [_job("a", 100.0), _job("b", 100.0), _job("c", 100.0), _job("d", 50.0, FinalStatus.FAILED),
        _job("e", 10.0, FinalStatus.CANCELLED)]


def test_completed_and_early_ended_jobs_are_scored_apart() -> None:
    q = estimate_quality({"a": 100.0, "b": 300.0, "c": None, "d": 200.0, "e": 10.0}, JOBS)
    assert q["completed"]["jobs"] == 3 and q["completed"]["estimated"] == 2
    assert q["completed"]["matched_share"] == pytest.approx(2 / 3, abs=1e-3)
    assert q["completed"]["median_abs_log_ratio"] == pytest.approx(math.log(3) / 2, abs=1e-3)
    assert q["completed"]["within_2x"] == 0.5
    assert q["early_ended"]["jobs"] == 2 and q["early_ended"]["within_2x"] == 0.5
    assert q["all"]["jobs"] == 5


def test_jobs_never_asked_do_not_count_and_unknown_ids_are_ignored() -> None:
    q = estimate_quality({"a": 100.0, "zzz": 5.0}, JOBS)
    assert q["all"]["jobs"] == 1 and q["early_ended"]["jobs"] == 0
    assert q["early_ended"]["median_abs_log_ratio"] is None


def test_seeds_pool_into_one_median() -> None:
    one = estimate_quality({"a": 200.0}, JOBS)
    two = estimate_quality({"b": 100.0, "c": 100.0}, JOBS)
    merged = merge_quality([one, two])
    assert merged["completed"]["jobs"] == 3 and merged["completed"]["median_abs_log_ratio"] == 0.0


def test_the_summary_line_names_both_groups() -> None:
    line = quality_line(estimate_quality({"a": 100.0, "d": 50.0}, JOBS))
    assert "completed median |ln(est/actual)| 0.00" in line and "early-ended" in line
