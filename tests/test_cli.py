"""The `schedmate` command: user errors are one clear line, results land on disk."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from schedmate.cli import app

runner = CliRunner()


def test_simulate_compares_policies_side_by_side_and_writes_results(tmp_path):
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        ["simulate", "--trace", "synthetic", "--jobs", "150", "--policies", "fifo,sjf,tiresias", "--cluster", "16", "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    for name in ("fifo", "sjf", "tiresias"):
        assert name in result.output
        assert (out / f"{name}.jobs.csv").exists()
    rows = json.loads((out / "summary.json").read_text())
    assert [r["policy"] for r in rows] == ["fifo", "sjf", "tiresias"]
    assert all(r["finished"] + r["cancelled"] >= r["jobs"] - r["unfinished"] for r in rows)
    assert (out / "jct_cdf.png").stat().st_size > 1000
    assert (out / "utilisation.png").stat().st_size > 1000


def test_malformed_trace_is_one_line_with_file_and_line_not_a_traceback(tmp_path):
    bad = tmp_path / "philly.csv"
    bad.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,abc,1,66.0,vc1\n")
    result = runner.invoke(app, ["simulate", "--trace", str(bad), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "philly.csv:2" in result.output and "duration" in result.output
    assert "Traceback" not in result.output


def test_missing_trace_file_and_bad_cluster_are_user_errors(tmp_path):
    missing = runner.invoke(app, ["simulate", "--trace", str(tmp_path / "nope.csv")])
    assert missing.exit_code == 2 and "Traceback" not in missing.output
    bad_cluster = runner.invoke(app, ["simulate", "--cluster", "lots"])
    assert bad_cluster.exit_code == 2 and "cannot parse cluster" in bad_cluster.output


def test_unknown_policy_names_the_choices():
    result = runner.invoke(app, ["simulate", "--jobs", "10", "--policies", "fifo,magic"])
    assert result.exit_code == 2
    assert "magic" in result.output and "tiresias" in result.output


def test_experiment_standalone_runs_the_real_agents_and_replays_them(tmp_path):
    """`schedmate experiment standalone` end to end on a tiny synthetic trace; a rerun replays
    the saved insights (no agent work) and gives the same figures."""
    import shutil

    import pytest

    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    out = tmp_path / "exp"
    args = ["experiment", "standalone", "--trace", "synthetic", "--jobs", "40", "--seeds", "1", "--gpus", "8",
            "--history", "20", "--arms", "fifo,schedmate-srpt,schedmate-srpt+fh", "--resubmit-delays", "600,3600",
            "--detection-rates", "1", "--out", str(out)]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "standalone experiment [SimulationInsights (real agents" in first.output
    assert sorted(p.name for p in (out / "insights").glob("*.json"))  # saved for replay
    doc = json.loads((out / "standalone.json").read_text())
    assert [r["arm"] for r in doc["aggregate"]] == ["fifo", "schedmate-srpt", "schedmate-srpt+fh"]
    assert [p["resubmit_s"] for p in doc["resubmit_sweep"]] == [600.0, 3600.0] and doc["detection_sweep"]
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert "agent_runs 0" in again.output
    replayed = json.loads((out / "standalone.json").read_text())["aggregate"]
    keys = ("arm", "mean_jct_mean", "p99_jct_mean", "makespan_mean", "completed_mean", "gpu_hours_lost_mean")
    assert [{k: r[k] for k in keys} for r in replayed] == [{k: r[k] for k in keys} for r in doc["aggregate"]]


def test_every_reference_policy_has_its_reproduction_command():
    out = runner.invoke(app, ["experiment", "--help"]).output
    for name in ("lucid", "sia", "ares", "arnold", "arena", "suika"):
        assert name in out


def test_experiment_ares_writes_the_shared_shape_with_criteria(tmp_path):
    res = runner.invoke(app, ["experiment", "ares", "--seeds", "1", "--quick", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "ares.json").read_text())
    assert doc["aggregate"] and all("mean_jct_mean" in row for row in doc["aggregate"])
    assert doc["criteria"] and all({"pass"} <= set(c) for c in doc["criteria"].values())
    assert "spec criteria passed" in res.output
