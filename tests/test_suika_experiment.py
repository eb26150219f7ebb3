"""Suika's reproduction runner writes the Lucid/Sia experiment shape (aggregate + criteria), CSV and plot."""

from __future__ import annotations

import json

from schedmate.schedulers.suika.experiment import ARM_ORDER, evaluate_criteria, run_suika_experiment
from schedmate.schedulers.suika.workload import TraceConfig, generate_trace


def test_tiny_run_writes_json_csv_and_plot(tmp_path):
    doc = run_suika_experiment(tmp_path, seeds=(0,), quick=True, trace=TraceConfig(hours=1.0, num_jobs=12))
    assert {r["arm"] for r in doc["aggregate"]} == set(ARM_ORDER)
    assert all(r["mean_jct_mean"] > 0 for r in doc["aggregate"])
    for crit in doc["criteria"].values():
        assert "measured" in crit and isinstance(crit["pass"], bool)
    saved = json.loads((tmp_path / "suika.json").read_text())
    assert saved["aggregate"] == doc["aggregate"]
    assert (tmp_path / "suika.csv").read_text().count("\n") == 1 + len(ARM_ORDER)
    assert (tmp_path / "suika.png").stat().st_size > 0


def test_criteria_fail_when_suika_is_slower():
    agg = [
        {"arm": arm, "mean_jct_mean": jct, "mean_wjct_mean": jct, "utilization_mean": 0.8, "mean_stall_mean": 60.0}
        for arm, jct in zip(ARM_ORDER, (2000.0, 1500.0, 1400.0, 1420.0, 1450.0, 1000.0))
    ]
    crit = evaluate_criteria(agg, 0.5)
    assert not crit["1_order"]["pass"] and not crit["2_vs_nonelastic"]["pass"]
    assert crit["2_vs_nonelastic"]["direction"] is False
    assert not crit["6_utilization"]["pass"] and not crit["7_stall"]["pass"] and not crit["8_basic_first"]["pass"]


def test_trace_hits_the_offered_load():
    cfg = TraceConfig()
    jobs = generate_trace(cfg, seed=4)
    load = sum(j.num_gpus * j.duration for j in jobs) / (cfg.num_gpus * cfg.hours * 3600)
    assert len(jobs) == cfg.num_jobs and abs(load - cfg.load) < 0.01
    assert jobs == generate_trace(cfg, seed=4) and jobs != generate_trace(cfg, seed=5)


def test_quick_measures_the_spec_trace_and_only_the_half_trace_option_shortens_it(tmp_path):
    """The criteria are §5.2's, so `--quick` drops the sweeps, never the trace they are written for."""
    seen: list[TraceConfig] = []

    class Stop(Exception):
        pass

    def record(points):
        seen.extend(trace for trace, _ in points)
        raise Stop

    for kwargs in ({"quick": True}, {"quick": True, "half_trace": True}):
        try:
            run_suika_experiment(tmp_path, seeds=(0,), map_points=lambda fn, points: record(points), **kwargs)
        except Stop:
            pass
    assert [(t.hours, t.num_jobs) for t in seen] == [(8.0, 120), (4.0, 60)]
