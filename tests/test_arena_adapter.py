"""Arena+SchedMate: history-bootstrapped throughput models (issue 12, item 5)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from schedmate.adapters.arena import ArenaSchedMate, Measured, bootstrap_view
from schedmate.adapters.insights import AdvisorInsight
from schedmate.schedulers.arena.config import ArenaConfig
from schedmate.schedulers.arena.hardware import R1, R2, build_cluster
from schedmate.schedulers.arena.policy import ATTR, Arena
from schedmate.schedulers.arena.sim import run_costed
from schedmate.schedulers.arena.workload import WorkloadSpec, generate
from schedmate.schedulers.engine import SimConfig, Simulator
from schedmate.schedulers.job import JobState
from schedmate.sim.experiments.arena import ArenaAdapterConfig, DeclaredModelMatches, run_arena_adapter_experiment
from schedmate.sim.experiments.common import NullInsights

ByDeclaredName = DeclaredModelMatches


class Fixed(ByDeclaredName):
    """Test double: always the same similar jobs."""

    def __init__(self, ids: tuple[str, ...]) -> None:
        super().__init__()
        self.ids = ids

    def advise(self, job: JobState) -> AdvisorInsight | None:
        return AdvisorInsight(self.ids, None, None, None)


def _jct(result) -> dict[str, float]:  # noqa: ANN001
    return {j.job_id: j.end_time for j in result.jobs}


def test_fallback_is_arena_decision_for_decision() -> None:
    cluster = build_cluster(R1)
    jobs = generate(cluster, 3, WorkloadSpec(n_jobs=40))
    runs = []
    for policy in (Arena(ArenaConfig(seed=3)), ArenaSchedMate(NullInsights(), ArenaConfig(seed=3))):
        runs.append(_jct(run_costed(jobs, cluster, policy, policy.downtime, SimConfig(seed=3))))
        if isinstance(policy, ArenaSchedMate):
            assert policy.counters.bootstrapped == 0 and policy.counters.fallback == 40
    assert runs[0] == runs[1]


def _arrive(policy: ArenaSchedMate, spec) -> JobState:  # noqa: ANN001
    sim = Simulator([spec], build_cluster(R2), policy, SimConfig(seed=0))
    job = JobState(spec)
    policy.on_arrival(job, sim.view)
    return job


def test_what_the_adapter_passes_depends_on_history_not_on_the_jobs_outcome() -> None:
    cluster = build_cluster(R2)
    a, b = [s for s in generate(cluster, 0, WorkloadSpec(n_jobs=40))][:2]
    lm = a.attributes[ATTR]
    # two jobs declaring the same model, with swapped outcomes (lengths): same belief, no profiling
    b_same = replace(b, attributes={ATTR: lm}, name=a.name)
    b_swapped = replace(b_same, duration=a.duration)
    a_swapped = replace(a, duration=b.duration)
    key = (lm.family, lm.billions, lm.batch)
    history = {"h1": Measured(key, {(lm.req_type, lm.req_gpus): 123.0, (lm.req_type, 1): 40.0})}
    beliefs = []
    for spec in (a, a_swapped, b_same, b_swapped):
        policy = ArenaSchedMate(Fixed(("h1",)), ArenaConfig(seed=0))
        policy.history = dict(history)
        job = _arrive(policy, spec)
        info = policy.info[job.job_id]
        assert info.ready_at == 0.0 and info.profile_s == 0.0
        beliefs.append(info.allowed)
    assert all(b == beliefs[0] for b in beliefs)
    assert beliefs[0][(lm.req_type, lm.req_gpus)] == 123.0
    # a different recorded history changes what the adapter passes (the test can fail)
    policy = ArenaSchedMate(Fixed(("h1",)), ArenaConfig(seed=0))
    policy.history = {"h1": Measured(key, {(lm.req_type, lm.req_gpus): 99.0})}
    job = _arrive(policy, a)
    assert policy.info[job.job_id].allowed != beliefs[0]
    # a match that declared another model is ignored: Arena profiles as usual
    policy = ArenaSchedMate(Fixed(("h1",)), ArenaConfig(seed=0))
    policy.history = {"h1": Measured(("other", 1.0, 1), {(lm.req_type, lm.req_gpus): 123.0})}
    job = _arrive(policy, a)
    info = policy.info[job.job_id]
    assert info.profile_s > 0 and info.ready_at == info.profile_s and policy.counters.fallback == 1


def test_bootstrap_view_means_measured_and_extrapolates_within_a_type() -> None:
    grid = {("A10", 1): 1.0, ("A10", 2): 1.0, ("A10", 4): 1.0, ("A40", 4): 1.0}
    m = [Measured(("gpt", 1.0, 128), {("A10", 2): 10.0}), Measured(("gpt", 1.0, 128), {("A10", 2): 14.0})]
    view = bootstrap_view(grid, m)
    assert view == {("A10", 1): 6.0, ("A10", 2): 12.0, ("A10", 4): 24.0}
    assert bootstrap_view(grid, m, extrapolate=False) == {("A10", 2): 12.0}
    assert bootstrap_view(grid, []) is None


def test_direction_on_a_small_trace() -> None:
    """With an advisor that matches same-model jobs: profiling is skipped for some jobs and mean
    JCT (over the default 3 seeds) is not worse beyond noise (the README finds the effect nil: its
    sign follows the seeds, e.g. +0.8% on seeds 0-2 and -0.2% on 3-5 on this trace); believing
    measured configurations only, the bootstrapped model is more accurate than Arena's profiled
    view on the same jobs."""
    cfg = ArenaAdapterConfig(clusters=("R1",), n_jobs=120, arms=("arena", "arena+sm", "arena+sm-measured"), plots=False)
    res = run_arena_adapter_experiment(None, make_source=lambda s, seed, d: ByDeclaredName(), config=cfg)
    c = res.details["arena_vs_arena_sm"]["R1"]
    assert c["bootstrapped_share"] > 0.1 and c["profiling_saved_s"] > 0
    assert c["arena+sm_profiling_s_per_job"] < c["arena_profiling_s_per_job"]
    assert c["arena+sm_mean_jct_h"] < 1.02 * c["arena_mean_jct_h"]
    measured = res.details["arena_vs_arena_sm_measured"]["R1"]
    assert measured["est_err_bootstrapped"] < measured["est_err_prior_same_jobs"]
    assert np.isfinite(c["est_err_bootstrapped"])


@pytest.mark.parametrize("arm", ["arena", "arena+sm", "arena+sm-measured", "arena-exact"])
def test_every_arm_runs(arm: str) -> None:
    cfg = ArenaAdapterConfig(seeds=(1,), clusters=("R1",), n_jobs=30, arms=(arm,), plots=False)
    res = run_arena_adapter_experiment(None, make_source=lambda s, seed, d: ByDeclaredName(), config=cfg)
    assert res.rows[0].summary.finished == 30


def test_invariants_hold_with_bootstrapping() -> None:
    from schedmate.schedulers.testing import check_policy

    check_policy(lambda: ArenaSchedMate(DeclaredModelMatches()), num_jobs=30, seed=0)
