"""Case 2 experiment (spec §8.2): Sia vs Sia+SchedMate vs FIFO on Sia's workloads, reduced.

Runs on the first jobs of one workload file (skipped when ../shared/data/sia is absent) with the
rule source or a scripted factory; the real `SimulationInsights` is plugged in by the caller.
"""

from __future__ import annotations

import json

import pytest

from schedmate.config import shared_data_dir
from schedmate.schedulers.job import JobSpec, JobState
from schedmate.sim.experiments.common import NullInsights
from schedmate.sim.experiments.sia import (
    SameConfigInsights,
    SiaExperimentConfig,
    jitter_submits,
    run_sia_experiment,
)


def _sia_data() -> bool:
    root = shared_data_dir()
    return root is not None and (root / "sia" / "workloads" / "philly" / "workload-1.csv").is_file()


needs_data = pytest.mark.skipif(not _sia_data(), reason="Sia workloads absent (../shared/data/sia)")

SMALL = SiaExperimentConfig(workloads=("philly/workload-1.csv",), seeds=(0, 1), limit=12)


def spec(job_id: str, app: str = "cifar10", bsz: int = 2048, t: float = 0.0) -> JobSpec:
    return JobSpec(job_id, t, 4, 100.0, attributes={"application": app, "batch_size": bsz})


def test_jitter_is_reproducible_per_seed_bounded_and_optional():
    specs = [spec(f"j{i}", t=60.0 * i) for i in range(50)]
    a, b, c = jitter_submits(specs, 1, 60.0), jitter_submits(specs, 1, 60.0), jitter_submits(specs, 2, 60.0)
    assert [s.submit_time for s in a] == [s.submit_time for s in b]
    assert [s.submit_time for s in a] != [s.submit_time for s in c]
    assert all(0.0 <= x.submit_time - s.submit_time < 60.0 for x, s in zip(a, specs))
    assert jitter_submits(specs, 1, 0.0) == specs


def test_rule_source_matches_earlier_jobs_of_the_same_application_and_batch_earliest_first():
    src = SameConfigInsights(seed=0, detection_rate=1.0)
    jobs = [JobState(spec("a")), JobState(spec("b", bsz=4096)), JobState(spec("c")), JobState(spec("d"))]
    answers = {}
    for j in jobs:
        src.record(j, finished=False)
        answers[j.job_id] = src.advise(j)
    assert answers["a"].similar_ids == () and not answers["a"].matched
    assert answers["b"].similar_ids == ()  # other batch size
    assert answers["c"].similar_ids == ("a",)
    assert answers["d"].similar_ids == ("a", "c")
    silent = SameConfigInsights(seed=0, detection_rate=0.0)
    silent.record(jobs[0], finished=False)
    assert silent.advise(jobs[0]) is None


@pytest.mark.shared_data
@needs_data
def test_small_experiment_writes_json_csv_and_plots_and_summarises(tmp_path):
    calls = []

    def factory(specs, seed, rate):  # type: ignore[no-untyped-def]
        calls.append((len(specs), seed, rate))
        return SameConfigInsights(seed=seed, detection_rate=rate)

    result = run_sia_experiment(tmp_path, make_source=factory, config=SMALL)
    assert calls == [(12, 0, 1.0), (12, 1, 1.0)]  # one source per Sia+SM run, not per arm
    names = {p.name for p in result.files}
    assert {"sia.json", "sia.csv", "sia_table3.png", "jct_cdf_philly_workload-1_seed0.png"} <= names
    assert all(p.is_file() for p in result.files)
    doc = json.loads((tmp_path / "sia.json").read_text())
    assert doc["details"]["source"].startswith("rule:")
    rows = {(r["arm"], r["seed"]): r for r in doc["rows"]}
    assert set(rows) == {(a, s) for a in ("sia-fifo", "sia", "sia+sm") for s in (0, 1)}
    for s in (0, 1):
        sia, sm = rows[("sia", s)], rows[("sia+sm", s)]
        assert sia["completed"] == sm["completed"] == 12
        assert sm["profiling_gpu_hours"] < sia["profiling_gpu_hours"] == pytest.approx(12 * 3 * 120 / 3600)
        assert 0 < sm["bootstrap_share"] <= 1 and sia["bootstrap_share"] == 0
    assert "Sia+SM vs Sia" in result.summary and "rule:" in result.summary
    assert "philly/workload-1.csv" in result.details["sia_vs_sia_sm"]


@pytest.mark.shared_data
@needs_data
def test_a_source_that_knows_nothing_gives_sia_and_the_t_prof_sweep_adds_arms(tmp_path):
    cfg = SiaExperimentConfig(
        workloads=("philly/workload-1.csv",), seeds=(0,), limit=8, arms=("sia", "sia+sm"), t_prof_sweep=(60.0,)
    )
    result = run_sia_experiment(None, make_source=lambda specs, seed, rate: NullInsights(), config=cfg)
    by_arm = {r.arm: r for r in result.rows}
    assert set(by_arm) == {"sia", "sia+sm", "sia@t60", "sia+sm@t60"}
    assert by_arm["sia+sm"].summary.mean_jct == by_arm["sia"].summary.mean_jct
    assert by_arm["sia@t60"].extra["profiling_gpu_hours"] == pytest.approx(8 * 3 * 60 / 3600)
    assert result.files == []  # no output directory: nothing written
