"""Case-1 experiment: its plumbing (windows, sizing, thinning, outputs), its models, one small run.

The small run uses the oracle source (smoke only) on a few hundred synthetic jobs and one seed;
it checks that every arm runs and the files are written, not the figures. Needs Lucid's
measured table (../shared/data/lucid); those tests skip without it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schedmate.config import shared_data_dir
from schedmate.schedulers.job import JobSpec, JobState
from schedmate.schedulers.lucid import Metrics, WorkloadTable
from schedmate.schedulers.metrics import Summary
from schedmate.sim.experiments.common import (
    DAY,
    NullInsights,
    RunRow,
    Sizing,
    aggregate,
    detected,
    size_cluster,
    speedups,
    time_window,
)

HAVE_TABLE = shared_data_dir() is not None and (shared_data_dir() / "lucid" / "single_data.csv").is_file()


def needs_table(test):
    reason = "../shared/data/lucid is absent (set SCHEDMATE_SHARED_DATA to its path)"
    return pytest.mark.shared_data(pytest.mark.skipif(not HAVE_TABLE, reason=reason)(test))

TABLE = WorkloadTable(
    {
        ("light", "d", 32, 0): (Metrics(speed=900, gpu_util=20, gmem_util=5, gmem=2000), 0),
        ("heavy", "d", 32, 0): (Metrics(speed=100, gpu_util=90, gmem_util=80, gmem=9000), 2),
    }
)


def job(i: int, t: float, **kw) -> JobSpec:
    return JobSpec(f"j{i}", t, kw.pop("gpus", 1), kw.pop("duration", 100.0), **kw)


def summary(mean_jct: float, mean_queueing: float = 0.0) -> Summary:
    nan = float("nan")
    return Summary("p", 1, 1, 1, 0, 0, 0, mean_jct, mean_jct, mean_jct, mean_queueing, mean_jct, 0, 0, 0, 0, nan, nan, 0, 0)


# ======================================================================== plumbing


def test_time_window_keeps_a_contiguous_span_of_the_last_days_rebased_to_zero():
    jobs = [job(i, i * DAY / 2) for i in range(20)]  # every 12 h over 9.5 days
    window = time_window(jobs, days=2, last_days=4)  # last 4 days start at 5.5 d: 5.5 <= t < 7.5
    assert [j.job_id for j in window] == ["j11", "j12", "j13", "j14"]
    assert [j.submit_time / DAY for j in window] == [0.0, 0.5, 1.0, 1.5]
    assert [j.job_id for j in time_window(jobs, days=1, offset_days=3)] == ["j6", "j7"]


def test_size_cluster_shrinks_until_the_baseline_queues():
    shares = {256: 0.05, 192: 0.2, 144: 0.35, 104: 0.6}
    sizing = size_cluster(lambda g: shares[g], start_gpus=256)
    assert sizing == Sizing(144, 0.35, 0.3, ((256, 0.05), (192, 0.2), (144, 0.35)))
    assert sizing.met


def test_size_cluster_reports_when_no_size_queues_enough():
    sizing = size_cluster(lambda g: summary(100.0, 1.0 + g / 100), start_gpus=32, min_gpus=16)
    assert not sizing.met and sizing.gpus == 32 and [g for g, _ in sizing.tried] == [32, 24, 16]


def test_detection_is_deterministic_and_nested_across_rates():
    ids = [f"j{i}" for i in range(2000)]
    at = {d: {i for i in ids if detected(i, 3, d)} for d in (0.0, 0.3, 0.6, 1.0)}
    assert at[0.0] == set() and at[1.0] == set(ids)
    assert at[0.3] <= at[0.6] and abs(len(at[0.3]) / 2000 - 0.3) < 0.04
    assert at[0.3] == {i for i in ids if detected(i, 3, 0.3)} != {i for i in ids if detected(i, 4, 0.3)}


def test_aggregate_and_speedups_are_over_seeds():
    rows = [
        RunRow("t", "lucid", 0, 8, summary(200.0)), RunRow("t", "sm", 0, 8, summary(100.0), {"sm": {"evictions": 2}}),
        RunRow("t", "lucid", 1, 8, summary(300.0)), RunRow("t", "sm", 1, 8, summary(200.0), {"sm": {"evictions": 4}}),
    ]
    assert speedups(rows, "lucid", "sm") == {"t": [2.0, 1.5]}
    sm = next(a for a in aggregate(rows) if a["arm"] == "sm")
    assert sm["mean_jct_mean"] == 150.0 and sm["seeds"] == 2 and sm["sm.evictions_mean"] == 3.0


def test_the_null_source_knows_nothing():
    state = JobState(job(0, 0.0))
    src = NullInsights()
    assert src.advise(state) is None and src.track(state, event_at=0.0, now=60.0) is None


# ======================================================================== models


def test_heavy_pair_model_slows_heavy_pairs_and_leaves_light_pairs_alone():
    from schedmate.sim.experiments.lucid import HeavyPairInterference

    light = {"model": "light", "dataset": "d", "batch_size": 32, "amp": 0}
    heavy = {**light, "model": "heavy"}
    model = HeavyPairInterference({}, TABLE, gamma=1.5)
    assert model.speeds(job(0, 0, attributes=light), job(1, 0, attributes=light)) == (1.0, 1.0)  # 0.2 + 0.2 <= 1
    s = 1 / 1.8**1.5
    assert model.speeds(job(0, 0, attributes=heavy), job(1, 0, attributes=heavy)) == pytest.approx((s, s))
    measured = HeavyPairInterference({(("heavy", "d", 1, 32, 0), ("light", "d", 1, 32, 0)): (0.9, 0.7)}, TABLE)
    assert measured.speeds(job(0, 0, attributes=light, gpus=4), job(1, 0, attributes=heavy)) == (0.7, 0.9)


def test_warmup_bias_lowers_only_the_profiled_util_of_biased_jobs():
    from schedmate.sim.experiments.lucid import WarmupProfiler, prepare_jobs

    profiler = WarmupProfiler(100.0, 1, 8.0, TABLE)
    biased = JobState(job(0, 0, attributes={"model": "heavy", "dataset": "d", "batch_size": 32, "amp": 0, "warmup_bias": 0.5}))
    assert profiler.measure(biased).gpu_util == 45.0 and profiler.measure(biased).gmem == 9000
    jobs = prepare_jobs([job(i, i) for i in range(2000)], TABLE, seed=1)
    share = sum("warmup_bias" in j.attributes for j in jobs) / len(jobs)
    assert abs(share - 0.3) < 0.04 and all("model" in j.attributes for j in jobs)
    assert all(0.3 <= j.attributes["warmup_bias"] <= 0.7 for j in jobs if "warmup_bias" in j.attributes)


# ======================================================================== a small run


@needs_table
def test_a_small_run_writes_json_csv_and_plots_for_every_arm(tmp_path: Path):
    from schedmate.schedulers.lucid import load_default_table
    from schedmate.sim.experiments.lucid import oracle_source, run_lucid_experiment

    table = load_default_table()
    result = run_lucid_experiment(
        tmp_path, make_source=oracle_source(table), source_label="oracle (smoke only)", traces=["synthetic"],
        seeds=1, n_jobs=250, cluster_gpus={"synthetic": 32}, sweep=(0.0, 0.5, 1.0), table=table,
    )
    arms = {r.arm for r in result.rows}
    assert {"lucid", "lucid+sm", "lucid+sm/bypass", "lucid+sm/duration", "lucid+sm/cancel", "lucid+sm/theta0.65"} <= arms
    assert {"tiresias", "qssf", "lucid+sm/d=0", "lucid+sm/d=0.5", "lucid+sm/d=1"} <= arms
    doc = json.loads((tmp_path / "lucid.json").read_text())
    assert doc["config"]["source"] == "oracle (smoke only)" and len(doc["rows"]) == len(result.rows)
    names = {p.name for p in result.files}
    assert {"lucid.json", "lucid.csv", "jct_cdf_synthetic_seed0.png", "detection_sweep_synthetic.png", "summary.txt"} <= names
    assert all(p.is_file() for p in result.files)
    assert (tmp_path / "synthetic_seed0" / "lucid.jobs.csv").is_file()
    by_arm = {r.arm: r for r in result.rows}
    assert by_arm["lucid+sm/d=0"].summary.mean_jct == by_arm["lucid"].summary.mean_jct  # d = 0 is Lucid
    sm = by_arm["lucid+sm"].extra
    assert sm["sm"]["bypassed"] > 0 and sm["profiler_gpu_s"] < by_arm["lucid"].extra["profiler_gpu_s"] / 2
    # with an oracle, only jobs that end within T_prof still use the profiler (where they finish)
    assert sm["sm"]["kept_short_in_profiler"] == sm["profiled"]
    assert result.summary.startswith("lucid experiment [oracle (smoke only); 1 seed(s)]: synthetic (32 GPUs)")
