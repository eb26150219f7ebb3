"""Per-job records and run summaries, checked on runs whose numbers can be worked out by hand."""

from __future__ import annotations

import json
import math

import pytest

from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.engine import simulate
from schedmate.schedulers.job import FinalStatus, JobSpec
from schedmate.schedulers.metrics import job_records, summarize, write_outputs
from schedmate.schedulers.policies import make_policy


def _run(jobs, gpus="8x1", policy="fifo"):
    return simulate(jobs, ClusterSpec.parse(gpus), make_policy(policy))


def test_jct_queueing_and_makespan_of_two_jobs_on_one_gpu():
    # One GPU: a runs 0-100, b (submitted at 10) waits 90 s and runs 100-150.
    result = _run([JobSpec("a", 0, 1, 100), JobSpec("b", 10, 1, 50)], gpus="1x1")
    recs = {r.job_id: r for r in job_records(result)}
    assert recs["a"].jct == pytest.approx(100) and recs["a"].queueing_delay == 0
    assert recs["b"].jct == pytest.approx(140) and recs["b"].queueing_delay == pytest.approx(90)
    s = summarize(result)
    assert s.mean_jct == pytest.approx(120) and s.median_jct == pytest.approx(120)
    assert s.makespan == pytest.approx(150)
    assert s.gpu_utilisation == pytest.approx(150 / 150)
    assert s.gpu_time == pytest.approx(150)


def test_finish_time_fairness_marks_a_job_that_waited_behind_another_as_unfair():
    # b waits 90 s for a; alone on its 1/N share it would take 50 s, N≈2 but 1 GPU each on a 1-GPU
    # cluster: isolated = 50 × max(1, 1×N/1) ≈ 50 × N. a never waits: ρ(a) = 100 / (100 × N_a) ≤ 1.
    result = _run([JobSpec("a", 0, 1, 100), JobSpec("b", 10, 1, 50)], gpus="1x1")
    recs = {r.job_id: r for r in job_records(result)}
    assert recs["a"].ftf <= 1.0
    assert recs["b"].ftf > recs["a"].ftf


def test_failed_jobs_count_their_gpu_time_as_wasted():
    result = _run([JobSpec("ok", 0, 2, 100), JobSpec("bad", 0, 4, 30, status=FinalStatus.FAILED)])
    s = summarize(result)
    assert s.completed == 1 and s.failed == 1
    assert s.wasted_gpu_time == pytest.approx(4 * 30)


def test_outputs_are_valid_json_even_when_a_statistic_is_undefined(tmp_path):
    # The only job can never fit: no JCT exists, so mean JCT is undefined and must be null, not NaN.
    result = _run([JobSpec("huge", 0, 64, 10)], gpus="8x1")
    summaries = write_outputs(tmp_path, {"fifo": result})
    assert math.isnan(summaries["fifo"].mean_jct)
    rows = json.loads((tmp_path / "summary.json").read_text())
    assert rows[0]["mean_jct"] is None and rows[0]["cancelled"] == 1
    assert "unschedulable" in (tmp_path / "fifo.jobs.csv").read_text() or "asks 64" in (tmp_path / "fifo.jobs.csv").read_text()
