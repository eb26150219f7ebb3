"""Implausible traces load, but are counted and listed (issue 16, item 4): a row dated 2099 in a 2017 trace,
a 64-GPU job on an 8-GPU cluster."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from schedmate.cli import app
from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.job import JobSpec
from schedmate.schedulers.traces.plausibility import check_plausibility

runner = CliRunner()
HEADER = "timestamp,duration,num_gpus,gpu_time,cluster"


def _jobs(times: list[float], gpus: list[int] | None = None) -> list[JobSpec]:
    return [JobSpec(f"j{i}", t, (gpus or [1] * len(times))[i], 60.0) for i, t in enumerate(times)]


def test_a_job_decades_after_the_rest_is_a_time_outlier():
    w = check_plausibility(_jobs([0, 60, 120, 600, 3600, 7200, 80 * 365 * 86400.0]))
    assert [j for j, _ in w.time_outliers] == ["j6"]
    assert w.core_span_s == 7200
    assert "1 job(s) submit far outside" in w.lines()[0] and "j6" in w.lines()[0]


def test_a_job_decades_before_the_rest_is_an_outlier_too():
    year = 365 * 86400.0
    w = check_plausibility(_jobs([0, 30 * year, 30 * year + 60, 30 * year + 600, 30 * year + 900]))
    assert [j for j, _ in w.time_outliers] == ["j0"]


def test_an_ordinary_trace_with_bursts_and_quiet_days_has_no_warning():
    day = 86400.0
    times = [0.0] * 50 + [i * 600.0 for i in range(100)] + [5 * day, 9 * day, 12 * day]
    assert not check_plausibility(_jobs(times), ClusterSpec.parse("64"))


def test_jobs_larger_than_the_cluster_are_listed_with_size_and_capacity():
    w = check_plausibility(_jobs([0, 1, 2], [8, 64, 9]), ClusterSpec.parse("8"))
    assert w.oversized == (("j1", 64, 8), ("j2", 9, 8))
    assert "2 job(s) ask more GPUs" in w.lines()[0]


def test_capacity_follows_the_jobs_allowed_gpu_types():
    cluster = ClusterSpec.parse("2x8:A100,4x4:T4")
    job = JobSpec("t4-only", 0.0, 24, 60.0, gpu_types=("T4",))
    assert check_plausibility([job], cluster).oversized == (("t4-only", 24, 16),)
    assert not check_plausibility([JobSpec("any", 0.0, 24, 60.0)], cluster)


def test_many_outliers_are_counted_and_the_first_five_listed():
    w = check_plausibility(_jobs([0, 1, 2], [99] * 3), ClusterSpec.parse("8"))
    many = check_plausibility(_jobs([float(i) for i in range(9)], [99] * 9), ClusterSpec.parse("8"))
    assert "and" not in w.lines()[0].split(":")[-1]
    assert "9 job(s)" in many.lines()[0] and "and 4 more" in many.lines()[0]


def test_simulate_warns_and_the_table_counts_cancelled_jobs(tmp_path):
    rows = [HEADER] + [f"2017-10-01 {i:02d}:00:00,600,1,600,vc1" for i in range(10)]
    rows += ["2099-01-01 00:00:00,600,1,600,vc1", "2017-10-01 03:30:00,600,64,38400,vc1"]
    trace = tmp_path / "odd.csv"
    trace.write_text("\n".join(rows) + "\n")
    result = runner.invoke(app, ["simulate", "--trace", str(trace), "--cluster", "8", "--policies", "fifo",
                                 "--out", str(tmp_path / "o")])  # fmt: skip
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "1 job(s) submit far outside the trace's span" in out and "philly-12" in out
    assert "will be cancelled on arrival: philly-13 (64 GPUs > 8)" in out
    assert "larger than the cluster (cancelled): philly-13" in out  # under the table
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary[0]["cancelled"] == 1
    warnings = json.loads((tmp_path / "o" / "warnings.json").read_text())
    assert [w["job_id"] for w in warnings["oversized"]] == ["philly-13"]
    assert [w["job_id"] for w in warnings["time_outliers"]] == ["philly-12"]


def test_a_plausible_trace_writes_no_warnings(tmp_path):
    result = runner.invoke(app, ["simulate", "--jobs", "60", "--cluster", "64", "--policies", "fifo",
                                 "--out", str(tmp_path / "o")])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output
    assert not (tmp_path / "o" / "warnings.json").exists()
