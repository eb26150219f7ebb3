"""`schedmate experiment slurm`: arms under EASY backfilling, SchedMate's limits, kills and extensions (small)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from schedmate.adapters.insights import AdvisorInsight, InsightSource
from schedmate.deploy.slurm.user_requests import ROUND_VALUES_S, UserRequestModel
from schedmate.schedulers.job import JobSpec, JobState
from schedmate.sim.experiments.slurm import ARMS, SlurmSetup, limit_plan, run_slurm_experiment
from schedmate.sim.world import WORLD_KEY


@dataclass
class PlannedAdvice(InsightSource):
    """TEST SOURCE: the advisor as if it read the job's plan (what its code states), with the
    run's own step-time factor unknown: estimate = plan, p90 = plan x 1.3. Never a reported result."""

    asked: list[str] = field(default_factory=list)
    _log: dict[str, float | None] = field(default_factory=dict)

    def advise(self, job: JobState) -> AdvisorInsight | None:
        self.asked.append(job.job_id)
        world = job.spec.attributes.get(WORLD_KEY) or {}
        plan = float(world.get("startup_s", 0.0)) + float(job.spec.attributes.get("planned_work", job.spec.duration))
        self._log[job.job_id] = plan
        return AdvisorInsight(("h-1", "h-2"), plan, plan, None, duration_p90_s=1.3 * plan)

    def advice_log(self) -> dict[str, float | None]:
        return dict(self._log)


class Factory:
    def __init__(self) -> None:
        self.sources: list[PlannedAdvice] = []

    def __call__(self, specs: Sequence[JobSpec], seed: int, detection_rate: float) -> PlannedAdvice:
        self.sources.append(PlannedAdvice())
        return self.sources[-1]


def test_every_arm_runs_in_the_same_world_and_the_summary_reports_kills_and_estimate_quality(tmp_path: Path) -> None:
    factory = Factory()
    result = run_slurm_experiment(tmp_path, make_source=factory, source_label="planned advice (test)",
                                  traces=["synthetic"], seeds=1, n_jobs=150, gpus=32)
    by = {r["arm"]: r for r in result.rows}
    assert list(by) == list(ARMS)
    assert all(r["jobs"] == 150 and r["unfinished"] == 0 for r in result.rows)
    assert sorted(factory.sources[0].asked) == sorted(set(factory.sources[0].asked))  # each job advised once
    assert len(factory.sources[0].asked) == 150
    # users ask at least the full run (up to MaxTime), the default is MaxTime, the oracle is exact: only a
    # job longer than MaxTime (7 days) is killed, the same ones under users' requests and the default
    for arm in ("users", "default", "oracle"):
        assert by[arm]["killed_by_schedmate"] == 0
    assert by["users"]["killed_by_other_limits"] == by["default"]["killed_by_other_limits"] \
        == by["oracle"]["killed_by_other_limits"] <= 2
    assert by["schedmate"]["killed_by_schedmate"] > 0  # plan x 1.3 x 1.2 is too short for slow runs
    assert by["schedmate+extend"]["extended_jobs"] > 0
    assert by["schedmate+extend"]["killed_by_schedmate"] < by["schedmate"]["killed_by_schedmate"]
    assert by["schedmate"]["gpu_h_lost_schedmate"] >= by["schedmate"]["gpu_h_lost_schedmate_ckpt"] >= 0
    assert by["default"]["mean_wait_h"] >= by["oracle"]["mean_wait_h"]  # 7-day limits hide every gap

    doc = json.loads((tmp_path / "slurm.json").read_text())
    assert doc["config"]["source"] == "planned advice (test)" and [a["arm"] for a in doc["aggregate"]] == list(ARMS)
    text = (tmp_path / "summary.txt").read_text()
    assert "SchedMate limits + extension vs users' requests: mean wait cut" in text
    assert "of those with p90 = the estimate" in text  # start-up kills where no spread was measured
    assert "advisor estimates: completed median |ln(est/actual)|" in text
    assert doc["details"]["requests"]["synthetic/seed0"]["schedmate_limit_share"] == 1.0


def test_schedmate_limits_are_the_deployed_rule_and_users_requests_are_modal_upper_bounds() -> None:
    setup = SlurmSetup()
    spec = JobSpec("j1", 0.0, 2, 3000.0, attributes={WORLD_KEY: {"full_run_s": 3000.0, "startup_s": 60.0}})
    advice = {"j1": AdvisorInsight(("a", "b"), 3300.0, 3300.0, None, duration_p90_s=3540.0)}
    plan = limit_plan([spec], 0, setup, advice)
    assert plan.schedmate["j1"] == math.ceil(1.2 * 3540 / 60) * 60  # 71 min, as `schedmate slurm estimate`
    assert limit_plan([spec], 0, setup, {"j1": None}).schedmate["j1"] is None  # no estimate: the default
    # a p90 that is the estimate itself (one matched job: no spread measured) is marked for the kill count
    assert plan.no_spread == frozenset()
    flat = {"j1": AdvisorInsight(("a",), 3300.0, 3300.0, None, duration_p90_s=3300.0)}
    assert limit_plan([spec], 0, setup, flat).no_spread == frozenset({"j1"})

    model = UserRequestModel()
    asked = [model.request(f"j{i}", 100.0 + i % 500, 0) for i in range(2000)]
    given = [a for a in asked if a is not None]
    assert abs(1 - len(given) / 2000 - model.no_request_share) < 0.03
    assert abs(sum(a == model.max_time_s for a in given) / 2000 - 0.9 * model.max_share) < 0.03
    assert set(given) <= set(ROUND_VALUES_S)  # modal: round values only
    assert all(a >= 100.0 + i % 500 for i, a in enumerate(asked) if a is not None)  # upper bounds
    assert asked == [model.request(f"j{i}", 100.0 + i % 500, 0) for i in range(2000)]  # same job, same ask


def test_the_command_refuses_an_unknown_arm_or_trace_in_one_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from schedmate.cli import app

    for args, word in ((["--arms", "users,bogus"], "arm 'bogus'"), (["--trace", "helios"], "trace 'helios'")):
        got = CliRunner().invoke(app, ["experiment", "slurm", "--out", str(tmp_path / "out"), *args])
        assert got.exit_code == 2 and f"unknown {word}" in got.output and "Traceback" not in got.output
