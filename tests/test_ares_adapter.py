"""Ares+SchedMate: lengths from the advisor only, no simulator truth, Ares's own answer otherwise."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from schedmate.adapters.ares import AresSchedMate, AresUserLengths, advised_gpu_time, user_gpu_time
from schedmate.adapters.insights import AdvisorInsight, InsightSource
from schedmate.schedulers.ares.policy import EST_KEY
from schedmate.schedulers.ares.workload import generate_workload
from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.engine import SimConfig, Simulator
from schedmate.schedulers.job import FinalStatus, JobSpec, JobState
from schedmate.schedulers.policy import ClusterView
from schedmate.sim.artefacts import unit_hash
from schedmate.sim.experiments.ares import AresAdapterConfig, give_user_lengths, run_ares_adapter_experiment
from schedmate.sim.experiments.common import NullInsights, OracleInsights

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
