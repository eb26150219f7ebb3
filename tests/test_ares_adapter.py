"""Ares+SchedMate: lengths from the advisor only, no simulator truth, Ares's own answer otherwise."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from schedmate.adapters.ares import AresHistoryMedian, AresSchedMate, AresUserLengths, advised_gpu_time, user_gpu_time
from schedmate.adapters.insights import AdvisorInsight, InsightSource
from schedmate.schedulers.ares.policy import EST_KEY
from schedmate.schedulers.ares.workload import generate_workload
from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.engine import SimConfig, Simulator
from schedmate.schedulers.job import FinalStatus, JobSpec, JobState
from schedmate.schedulers.policy import ClusterView
from schedmate.sim.artefacts import plan_artefact, repo_hash, unit_hash
from schedmate.sim.experiments.ares import AresAdapterConfig, ares_world, give_user_lengths, run_ares_adapter_experiment
from schedmate.sim.experiments.common import NullInsights, OracleInsights
from schedmate.sim.world import PLANNED_RUN_KEY, EarlyStops, WorldModel, realise_planned

CLUSTER = ClusterSpec.homogeneous(8, 4)


@dataclass
class IdInsights(InsightSource):
    """Answers from the job's identity only (as an advisor reading the job's artefact would):
    a duration drawn from the id for most jobs, None for the rest."""

    unknown_share: float = 0.2
    advised: list[str] = field(default_factory=list)

    def advise(self, job: JobState) -> AdvisorInsight | None:
        self.advised.append(job.job_id)
        u = unit_hash("test-advice", job.job_id)
        if u < self.unknown_share:
            return None
        d = 600.0 + 7200.0 * u
        return AdvisorInsight(("h1",), d, d, None)

    def stats(self) -> dict[str, Any]:
        return {"source": "test"}


class Spy(AresSchedMate):
    """Records every length the adapter hands to Ares."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.passed: dict[str, float | None] = {}

    def estimate_gpu_time(self, job: JobState, view: ClusterView) -> float | None:
        est = super().estimate_gpu_time(job, view)
        self.passed[job.job_id] = est
        return est


def _specs(seed: int = 0, n: int = 40, share: float = 0.3) -> list[JobSpec]:
    wl = generate_workload(seed, rho=1.0, n_jobs=n, gpus=CLUSTER.total_gpus)
    return give_user_lengths(wl.specs, seed, share)


def _run(policy: Any, specs: list[JobSpec]) -> dict[str, float | None]:
    result = Simulator(specs, CLUSTER, policy, SimConfig(seed=0, record_timeline=False)).run()
    return {j.job_id: j.end_time for j in result.jobs}


def test_user_lengths_and_advice_helpers() -> None:
    spec = JobSpec("a", 0.0, 4, 100.0, attributes={EST_KEY: 400.0})
    assert user_gpu_time(JobState(spec)) == 400.0
    assert user_gpu_time(JobState(replace(spec, attributes={}))) is None
    assert advised_gpu_time(AdvisorInsight(("x",), 50.0, 50.0, None), 4) == 200.0
    assert advised_gpu_time(AdvisorInsight((), 50.0, 50.0, None), 4) is None  # no match
    assert advised_gpu_time(None, 4) is None


def test_swapping_two_jobs_outcomes_does_not_change_what_the_adapter_passes() -> None:
    specs = _specs()
    # two jobs with the same demand and no user length: swap their durations and final states
    pair = [i for i, s in enumerate(specs) if EST_KEY not in s.attributes and s.num_gpus == specs[0].num_gpus][:2]
    assert len(pair) == 2
    i, j = pair
    swapped = list(specs)
    swapped[i] = replace(specs[i], duration=specs[j].duration, status=FinalStatus.FAILED)
    swapped[j] = replace(specs[j], duration=specs[i].duration)
    assert swapped[i].duration != specs[i].duration
    a, b = Spy(IdInsights()), Spy(IdInsights())
    _run(a, specs)
    _run(b, swapped)
    assert a.passed == b.passed
    assert any(v is None for v in a.passed.values())  # unknown jobs stay unknown: no peeking at the trace


def test_without_insights_the_adapter_is_ares_with_user_lengths_decision_for_decision() -> None:
    specs = _specs(seed=1)
    sm = AresSchedMate(NullInsights())
    assert _run(sm, specs) == _run(AresUserLengths(), specs)
    assert sm.counters.advisor_estimated == 0
    assert sm.counters.fallback == sm.counters.arrivals - sm.counters.user_given > 0


def test_user_given_lengths_are_kept_and_not_asked_for() -> None:
    specs = _specs(seed=2)
    source = IdInsights(unknown_share=0.0)
    spy = Spy(source)
    _run(spy, specs)
    given = {s.job_id: s.attributes[EST_KEY] for s in specs if EST_KEY in s.attributes}
    assert given and all(spy.passed[k] == pytest.approx(v) for k, v in given.items())
    assert not set(source.advised) & set(given)


def test_advice_shortens_mean_jct_on_a_small_trace(tmp_path) -> None:
    cfg = AresAdapterConfig(seeds=(0, 1), rhos=(1.0,), n_jobs=60, gpus=32, gpus_per_node=4, plots=False)

    def oracle(specs, seed, rate):  # smoke only: the advisor at its best
        return OracleInsights(seed=seed, detection_rate=rate)

    result = run_ares_adapter_experiment(tmp_path, make_source=oracle, config=cfg)
    jct = {(r.arm, r.seed): r.summary.mean_jct for r in result.rows}
    for seed in cfg.seeds:
        assert jct[("ares+sm", seed)] < jct[("ares", seed)]
    doc = json.loads((tmp_path / "ares-adapter.json").read_text())
    arms = {a["arm"]: a for a in doc["aggregate"]}
    assert {"ares", "ares+sm", "ares-oracle"} <= set(arms)
    assert "mean_jct_mean" in arms["ares"] and "unfair_fraction_mean" in arms["ares+sm"]


# ---------------------------------------------------------------- the case study's world


def _world_cfg(**kw: Any) -> AresAdapterConfig:
    return AresAdapterConfig(seeds=(0,), rhos=(1.0,), n_jobs=60, gpus=32, gpus_per_node=4, plots=False, **kw)


def _code(spec: JobSpec) -> tuple[str, str]:
    art = plan_artefact(spec, 0)
    return art.key, repo_hash(art.render())


def test_the_world_runs_the_generators_plans_and_its_outcomes_never_reach_the_code_or_the_users() -> None:
    specs = generate_workload(4, rho=1.0, n_jobs=60, gpus=32).specs
    calm = realise_planned(specs, 4, WorldModel(step_sigma=0.1))
    rough = realise_planned(specs, 4, WorldModel(step_sigma=0.6, early=EarlyStops.for_trace("philly")))
    assert sum(a.duration != b.duration for a, b in zip(calm, rough)) > 50  # other outcomes ...
    assert {b.status for b in rough} > {FinalStatus.COMPLETED}
    assert [_code(a) for a in calm] == [_code(b) for b in rough]  # ... the same code
    lengths = [give_user_lengths(w, 4, 0.5) for w in (calm, rough)]
    assert [s.attributes.get(EST_KEY) for s in lengths[0]] == [s.attributes.get(EST_KEY) for s in lengths[1]]
    assert all(w.attributes["planned_work"] == s.duration for w, s in zip(calm, specs))  # the drawn length is the plan


def test_a_user_states_the_planned_gpu_time_not_what_the_job_ran() -> None:
    evaluated, _ = ares_world(1, 1.0, _world_cfg())
    stated = [s for s in give_user_lengths(evaluated, 1, 1.0) if EST_KEY in s.attributes]
    assert len(stated) == len(evaluated)
    assert all(s.attributes[EST_KEY] == pytest.approx(s.num_gpus * s.attributes[PLANNED_RUN_KEY]) for s in stated)
    assert sum(abs(s.attributes[EST_KEY] / (s.num_gpus * s.duration) - 1) > 0.05 for s in stated) > len(stated) / 2


def test_the_advisors_history_is_earlier_windows_never_an_evaluated_job() -> None:
    cfg = _world_cfg(history_windows=2)
    evaluated, history = ares_world(2, 1.0, cfg)
    assert len(history) == 2 * cfg.n_jobs
    assert all(h.job_id.startswith("hist-") for h in history)
    assert not {h.job_id.split("-", 2)[2] for h in history} & {s.job_id for s in evaluated}
    assert not {h.attributes["planned_work"] for h in history} & {s.attributes["planned_work"] for s in evaluated}
    assert all(h.submit_time >= 0 for h in history)


def _state(job_id: str, gpus: int, stated: float | None = None) -> JobState:
    attrs = {EST_KEY: stated} if stated is not None else {}
    return JobState(JobSpec(job_id, 0.0, gpus, 100.0, attributes=attrs))


def test_the_history_median_baseline_guesses_from_past_jobs_of_the_same_size_and_keeps_user_lengths() -> None:
    past = [JobSpec(f"h{i}", 0.0, 2, d) for i, d in enumerate((100.0, 300.0, 900.0))] + [JobSpec("h9", 0.0, 8, 50.0)]
    policy = AresHistoryMedian(past)
    view: Any = None
    assert policy.estimate_gpu_time(_state("a", 2), view) == 600.0  # median of 2 x (100, 300, 900)
    assert policy.estimate_gpu_time(_state("b", 4), view) == pytest.approx(500.0)  # no 4-GPU job: all past jobs
    assert policy.estimate_gpu_time(_state("c", 2, stated=77.0), view) == 77.0
    assert AresHistoryMedian().estimate_gpu_time(_state("d", 2), view) is None  # nothing known: Ares's unknown


def test_the_case_study_prints_the_advisors_estimate_quality_and_the_baseline_beside_its_jct(tmp_path) -> None:
    class Logged(IdInsights):
        def advice_log(self) -> dict[str, float | None]:
            return {j: 600.0 + 7200.0 * unit_hash("test-advice", j) for j in self.advised}

    result = run_ares_adapter_experiment(tmp_path, make_source=lambda specs, seed, rate: Logged(), config=_world_cfg())
    assert "advisor estimates: completed median |ln(est/actual)|" in result.summary
    assert "history-median baseline" in result.summary and "realised load" in result.summary
    quality = result.details["advisor_quality"]["rho1"]["all"]
    assert quality["jobs"] > 0 and 0 < quality["median_abs_log_ratio"] < 5
    assert {r.arm for r in result.rows} == {"ares", "ares+median", "ares+sm", "ares-oracle"}


def test_an_unknown_early_stop_table_is_one_clear_error_not_a_silent_world_without_stops() -> None:
    from schedmate.errors import BadInput

    with pytest.raises(BadInput, match="unknown early stops 'phily'"):
        ares_world(0, 1.0, _world_cfg(early_stops="phily"))
    evaluated, _ = ares_world(0, 1.0, _world_cfg(early_stops="none"))
    assert {s.status for s in evaluated} == {FinalStatus.COMPLETED}


def test_the_cli_refuses_an_unknown_early_stop_table_in_one_line() -> None:
    from typer.testing import CliRunner

    from schedmate.cli import app

    result = CliRunner().invoke(app, ["experiment", "ares-adapter", "--early-stops", "phily", "--quick"])
    assert result.exit_code == 2 and "--early-stops must be one of" in result.output
