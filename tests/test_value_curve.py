"""Value curve (issue 22 item 5): the noisy oracle source and the curve's bookkeeping."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from schedmate.schedulers.job import JobSpec, JobState
from schedmate.sim.experiments.common import OracleInsights
from schedmate.sim.experiments.value_curve import (
    MEDIAN_ABS_Z,
    noisy_oracle_source,
    run_value_curve,
    source_quality,
)


def _specs(n: int = 4000) -> list[JobSpec]:
    rng = np.random.default_rng(1)
    return [JobSpec(job_id=f"j{i}", submit_time=float(i), duration=float(rng.uniform(60, 36000)), num_gpus=1)
            for i in range(n)]


@pytest.mark.parametrize("sigma", [0.0, 0.25, 0.5, 1.0, 1.5, 2.0])
@pytest.mark.parametrize("coverage", [0.3, 0.6, 1.0])
def test_the_noise_source_has_the_stated_median_error_and_coverage(sigma: float, coverage: float) -> None:
    specs = _specs()
    source = noisy_oracle_source(sigma, coverage)(specs, 0, 1.0)
    errs, covered = [], 0
    for s in specs:
        ins = source.advise(JobState(s))
        if ins is not None:
            covered += 1
            errs.append(abs(math.log(ins.duration_top3_s / s.duration)))
    assert covered / len(specs) == pytest.approx(coverage, abs=0.03)
    assert float(np.median(errs)) == pytest.approx(sigma * MEDIAN_ABS_Z, abs=0.05 * max(sigma, 0.2))
    med, share = source_quality(specs, 0, sigma, coverage)
    assert med == pytest.approx(float(np.median(errs))) and share == pytest.approx(covered / len(specs))


def test_coverage_is_nested_and_sigma_zero_is_the_oracle() -> None:
    specs = _specs(500)
    low = noisy_oracle_source(0.0, 0.3)(specs, 0, 1.0)
    high = noisy_oracle_source(0.0, 0.6)(specs, 0, 1.0)
    oracle = OracleInsights(seed=0)
    for s in specs:
        a, b, o = low.advise(JobState(s)), high.advise(JobState(s)), oracle.advise(JobState(s))
        if a is not None:
            assert b is not None and a.duration_top3_s == b.duration_top3_s == o.duration_top3_s == s.duration


def test_sigma_zero_full_coverage_equals_the_oracle_estimate_arm(tmp_path: Path) -> None:
    """The curve's (0, 100%) point is the SchedMate-SRPT arm run on the oracle's estimates."""
    from schedmate.sim.experiments.standalone import run_standalone_experiment

    def oracle(specs, seed, rate):  # type: ignore[no-untyped-def]
        return OracleInsights(seed=seed, detection_rate=rate)

    ref = run_standalone_experiment(None, make_source=oracle, source_label="oracle (test)", trace="synthetic",
                                    n_jobs=120, seeds=[0], gpus=32, arms=["schedmate-srpt"],
                                    resubmit_delays=(), detection_rates=())
    expected = ref.rows[0].summary.mean_jct

    def runner(arms, make, rate, seed):  # type: ignore[no-untyped-def]
        res = run_standalone_experiment(None, make_source=make, source_label="vc", trace="synthetic", n_jobs=120,
                                        seeds=[seed], gpus=32, arms=list(arms), resubmit_delays=(), detection_rates=())
        return {r.arm: r.summary.mean_jct for r in res.rows}

    doc = run_value_curve("standalone", tmp_path, sigmas=(0.0, 2.0), coverages=(1.0,), runner=runner)
    point = next(p for p in doc["points"] if p["sigma"] == 0.0 and p["coverage"] == 1.0)
    assert point["mean_jct"] == pytest.approx(expected)


def test_the_command_writes_the_files(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from schedmate.cli import app

    out = tmp_path / "vc"
    res = CliRunner().invoke(app, ["experiment", "value-curve", "--case", "standalone", "--quick", "--out", str(out)])
    assert res.exit_code == 0, res.output
    for name in ("value_curve.json", "value_curve.csv", "value_curve.png"):
        assert (out / name).is_file()
    doc = json.loads((out / "value_curve.json").read_text())
    assert {"points", "baselines", "best_baseline", "oracle", "real_point", "stops_helping", "summary"} <= set(doc)
    assert len(doc["points"]) == 8 and "SENSITIVITY" in doc["label"]
