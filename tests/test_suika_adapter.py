"""Suika+SchedMate: measured corrections of the iteration-time model (issue 12, item 5)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from schedmate.adapters.suika import Correction, SuikaSchedMate, fit_kcomp
from schedmate.schedulers.engine import SimConfig, Simulator, simulate
from schedmate.schedulers.job import JobState
from schedmate.schedulers.suika.config import SUIKA
from schedmate.schedulers.suika.model import CATALOGUE, coeffs_for, iteration_time, layout_plan
from schedmate.schedulers.suika.policy import ElasticPolicy, hardware_of
from schedmate.schedulers.suika.timing import cluster_for
from schedmate.schedulers.suika.workload import TraceConfig, generate_trace
from schedmate.sim.experiments.common import NullInsights
from schedmate.sim.experiments.suika import (
    Misfit,
    SuikaAdapterConfig,
    SuikaSMWorld,
    SuikaWorld,
    run_suika_adapter_experiment,
)
from tests.test_arena_adapter import ByDeclaredName, Fixed

SMALL = TraceConfig(hours=2.0, num_jobs=24)
NO_COST = dict(restart_cost=0.0, restart_cost_large=0.0)


def _ends(policy: ElasticPolicy, seed: int = 0) -> dict[str, float | None]:
    result = simulate(generate_trace(SMALL, seed), cluster_for(64), policy, SimConfig(seed=seed, **NO_COST))
    return {j.job_id: j.end_time for j in result.jobs}


def test_fallback_is_suika_decision_for_decision() -> None:
    assert _ends(SuikaSchedMate(NullInsights())) == _ends(ElasticPolicy(SUIKA))
    misfit = Misfit(0.4, 0)
    sm = SuikaSMWorld(NullInsights(), SUIKA, misfit=misfit)
    assert _ends(sm) == _ends(SuikaWorld(SUIKA, misfit=misfit))
    assert sm.counters.corrected == 0 and sm.counters.fallback == SMALL.num_jobs


def test_fit_kcomp_recovers_a_known_factor() -> None:
    hw = hardware_of(cluster_for(64))
    model = CATALOGUE["LLaMA2-7B"]
    prior = coeffs_for(model, hw)
    plan = layout_plan(list(range(model.gpus)), model.pp, model.dp, model.tp, prior, hw)
    assert plan is not None
    t = iteration_time(plan, replace(prior, k_comp=prior.k_comp * 1.7), hw)
    assert fit_kcomp(plan, prior, hw, t) == pytest.approx(1.7, rel=1e-6)


def _book(policy: SuikaSchedMate, spec) -> object:  # noqa: ANN001
    sim = Simulator([spec], cluster_for(64), policy, SimConfig(seed=0, **NO_COST))
    job = JobState(spec)
    policy.on_arrival(job, sim.view)
    return policy._book(job, hardware_of(cluster_for(64)))


def test_what_the_adapter_passes_depends_on_history_not_on_the_jobs_outcome() -> None:
    a, b = [s for s in generate_trace(SMALL, 1)][:2]
    b_same = replace(b, attributes=dict(a.attributes), name=a.name, plan=a.plan, num_gpus=a.num_gpus)
    swapped = [replace(a, duration=b.duration), replace(b_same, duration=a.duration)]
    history = {"h1": Correction(a.attributes["suika_model"], 1.5)}
    coeffs = []
    for spec in (a, b_same, *swapped):
        policy = SuikaSchedMate(Fixed(("h1",)))
        policy.history = dict(history)
        coeffs.append(_book(policy, spec).coeffs)
        assert policy.counters.corrected == 1
    assert all(c == coeffs[0] for c in coeffs)
    prior = coeffs_for(CATALOGUE[a.attributes["suika_model"]], hardware_of(cluster_for(64)))
    assert coeffs[0].k_comp == pytest.approx(prior.k_comp * 1.5)
    # another history changes it (the test can fail); another declared model is ignored
    policy = SuikaSchedMate(Fixed(("h1",)))
    policy.history = {"h1": Correction(a.attributes["suika_model"], 0.8)}
    assert _book(policy, a).coeffs != coeffs[0]
    policy = SuikaSchedMate(Fixed(("h1",)))
    policy.history = {"h1": Correction("not-this-model", 1.5)}
    assert _book(policy, a).coeffs == prior and policy.counters.fallback == 1


def test_the_correction_changes_the_belief_not_the_simulated_truth() -> None:
    spec = generate_trace(SMALL, 2)[0]
    hw = hardware_of(cluster_for(64))
    policy = SuikaSchedMate(Fixed(("h1",)))
    policy.history = {"h1": Correction(spec.attributes["suika_model"], 2.0)}
    book = _book(policy, spec)
    base = ElasticPolicy(SUIKA)
    base_book = _book_base(base, spec)
    plan = layout_plan(list(range(book.jm.gpus)), book.jm.pp, book.jm.dp, book.jm.tp, book.coeffs, hw)
    assert book.coeffs != base_book.coeffs
    assert policy._true_time(book, plan, hw) == base._true_time(base_book, plan, hw)
    assert book.norm == base_book.norm


def _book_base(policy: ElasticPolicy, spec) -> object:  # noqa: ANN001
    return policy._book(JobState(spec), hardware_of(cluster_for(64)))


def test_direction_on_a_small_trace() -> None:
    """With an advisor that matches same-model jobs in a world whose per-model compute differs
    from the prior, corrected jobs' iteration-time and speedup errors fall below the prior's."""
    cfg = SuikaAdapterConfig(seeds=(0,), trace=TraceConfig(hours=3.0, num_jobs=40), arms=("suika+sm",), plots=False)
    res = run_suika_adapter_experiment(None, make_source=lambda s, seed, d: ByDeclaredName(), config=cfg)
    extra = res.rows[0].extra
    assert extra["corrected_share"] > 0.3
    assert extra["est_err_time_corrected"] < extra["est_err_time_prior_same_jobs"]
    assert extra["est_err_speedup_corrected"] < extra["est_err_speedup_prior_same_jobs"]


def test_invariants_hold_with_corrections() -> None:
    from schedmate.schedulers.testing import check_policy
    from schedmate.sim.experiments.arena import DeclaredModelMatches

    check_policy(lambda: SuikaSchedMate(DeclaredModelMatches()), num_jobs=30, seed=0)


def test_arm_comparison_is_per_trace_seed_means_with_named_extras():
    from types import SimpleNamespace

    from schedmate.sim.experiments.common import RunRow, compare_arms

    def row(arm, seed, jct, **extra):
        return RunRow("t", arm, seed, 8, SimpleNamespace(mean_jct=jct), extra)  # type: ignore[arg-type]

    rows = [row("alone", 0, 7200.0, err=0.4), row("alone", 1, 3600.0, err=0.2),
            row("sm", 0, 3600.0, err=0.1, share=0.5), row("sm", 1, 7200.0, err=None, share=1.0)]
    c = compare_arms(rows, "alone", "sm", both=("err",), arm_only=("share",))["t"]
    assert c["alone_mean_jct_h"] == pytest.approx(1.5) and c["sm_mean_jct_h"] == pytest.approx(1.5)
    assert c["jct_change"] == pytest.approx(0.0) and c["seeds_better"] == 1.0 and c["seeds"] == 2.0
    assert c["alone_err"] == pytest.approx(0.3) and c["sm_err"] == pytest.approx(0.1)  # None skipped
    assert c["share"] == pytest.approx(0.75)
    assert compare_arms(rows, "alone", "missing") == {}
