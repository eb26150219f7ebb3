"""Arena's pure models (arena.md §2.3, §3.1–3.5, §3.7): literal inputs, expected outputs from the spec."""

from __future__ import annotations

import numpy as np
import pytest

from schedmate.schedulers.arena.config import (
    BASELINES,
    ArenaConfig,
    View,
    t_search_artifact,
    t_search_full,
    t_search_pruned,
)
from schedmate.schedulers.arena.hardware import GPU_TYPES
from schedmate.schedulers.arena.model import (
    COUNTS,
    best_grid,
    candidate_plans,
    estimate,
    grids,
    make_model,
    perf_table,
    thr_ap,
    thr_dp,
)
from schedmate.schedulers.arena.policy import Arena
from schedmate.schedulers.arena.search import (
    Alloc,
    Layout,
    SearchSpec,
    Snapshot,
    _halve,
    halvings_of,
    launch_search,
    place,
    scale_up,
)
from schedmate.schedulers.arena.views import ap_view, decision_view, linear_view
from schedmate.schedulers.job import ParallelPlan

GPT13 = make_model("gpt", 1.3)


# ------------------------------------------------------------------ §2.3 throughput and memory
def test_memory_and_iteration_time_of_plain_dp_on_one_gpu_follow_the_formulas():
    # GPT-1.3B (L24, h2048), B = 128, one GPU: m = 4 microbatches of b = 32, S = 1024
    est = estimate(GPT13, GPU_TYPES["A100"], ParallelPlan(1, 1, 1), 128)
    act = 2 * 32 * 1024 * 2048
    assert est.mem_bytes == pytest.approx(16 * 1.3e9 + 24 * act + 34 * 32 * 1024 * 2048)  # 26.30 GB
    # T = 4 microbatches × 8·P·tokens/(F·u), u = 0.5·32768/(32768+4096)
    assert est.iter_s == pytest.approx(9.8304)
    assert est.feasible  # 26.3 GB ≤ 0.8 × 40 GB
    assert not estimate(GPT13, GPU_TYPES["A10"], ParallelPlan(1, 1, 1), 128).feasible  # > 0.8 × 24 GB


def test_plan_space_keeps_tp_in_a_node_and_integer_microbatches():
    plans = candidate_plans(GPT13, 4, 128, per_node=2)  # A40: 2 GPUs per node
    assert all(p.tp <= 2 and p.gpus == 4 and 128 % (p.dp * 4 * p.pp) == 0 for p in plans)
    assert {(p.pp, p.dp, p.tp) for p in plans} == {(1, 4, 1), (1, 2, 2), (2, 2, 1), (2, 1, 2), (4, 1, 1)}
    # B = 128 on 16 GPUs of pure DP: b = 128/(16·4) = 2 is an integer; on 64 it would not be
    assert ParallelPlan(1, 1, 16) in candidate_plans(GPT13, 16, 128, per_node=16)


def test_dp_runs_out_of_memory_where_ap_does_not():
    gpt67, a10 = make_model("gpt", 6.7), GPU_TYPES["A10"]
    assert thr_dp(gpt67, a10, 8, 128) == 0.0  # 16·6.7e9 B of state alone exceed 24 GB
    assert thr_ap(gpt67, a10, 8, 128) > 0.0  # sharded over pp·tp it fits
    g = best_grid(gpt67, a10, 8, 128)
    assert g is not None and g.proxy.plan.pp * g.proxy.plan.tp > 1


def test_scaling_is_sublinear_and_linear_extrapolation_overshoots_as_calibrated():
    # §2.3 calibration: linear from 1 GPU overshoots AP by ~1.14x at 2 GPUs (paper) and the model
    # gives about 1.7–2.2x at 16 (we allow "about" as ±0.1)
    for name in ("A40", "H100"):
        gpu = GPU_TYPES[name]
        thr = {n: thr_ap(GPT13, gpu, n, 128) for n in COUNTS}
        per_gpu = [thr[n] / n for n in COUNTS]
        assert all(a > b for a, b in zip(per_gpu, per_gpu[1:], strict=False))
        assert 1.0 < 2 * thr[1] / thr[2] < 1.3
        assert 1.6 <= 16 * thr[1] / thr[16] <= 2.3


def test_grids_one_per_pipeline_degree_and_the_best_grid_is_the_max():
    gpu = GPU_TYPES["A40"]
    gs = grids(GPT13, gpu, 8, 128)
    assert [g.stages for g in gs] == sorted({g.stages for g in gs}) and {g.gpus for g in gs} == {8}
    best = best_grid(GPT13, gpu, 8, 128)
    assert best is not None
    assert best.proxy.iter_s == min(g.proxy.iter_s for g in gs if g.feasible)
    assert thr_ap(GPT13, gpu, 8, 128) == pytest.approx(128 / best.proxy.iter_s)


def test_perf_table_lists_dp_oom_configurations_that_ap_runs():
    t = perf_table(make_model("gpt", 2.6), 128, {"A100": GPU_TYPES["A100"]})
    assert ("A100", 2) in t.dp_oom_where_ap_fits()  # 16·2.6e9 = 41.6 GB of state: DP never fits
    assert t.plans[("A100", 2)].gpus == 2


# ------------------------------------------------------------------ §2.3 views
def test_arena_view_is_kappa_times_ap_with_mean_about_0_93():
    t = perf_table(GPT13, 128, {"A40": GPU_TYPES["A40"]})
    ratios = []
    for seed in range(400):
        v = ap_view(t, np.random.default_rng(seed))
        ratios += [v[c] / t.ap[c] for c in t.ap if t.ap[c] > 0]
    assert np.mean(ratios) == pytest.approx(0.93, abs=0.01)


def test_sia_linear_bootstrap_extrapolates_from_the_smallest_dp_feasible_count():
    t = perf_table(GPT13, 128, {"A40": GPU_TYPES["A40"]})
    lin = linear_view(t)
    assert lin[("A40", 16)] == pytest.approx(16 * t.dp[("A40", 1)])
    assert decision_view(t, View.DP, ("A40", 1), np.random.default_rng(0)) == t.dp


# ------------------------------------------------------------------ §3.7 overheads
def test_search_and_profiling_costs():
    assert [t_search_full(n) for n in (1, 2, 4, 16)] == [150, 300, 600, 600]
    assert t_search_pruned(1) == pytest.approx(150 / 5.48)  # ≈ 27·n s
    assert t_search_pruned(16) == pytest.approx(109.49, abs=0.01)  # at most ≈ 110 s
    assert [t_search_artifact(n) for n in (1, 2, 4, 8)] == [10, 20, 40, 40]
    assert Arena()._profile_seconds(4) == pytest.approx(8.5 * 60)  # 8.5 min at M = 4
    assert Arena()._profile_seconds(2) == pytest.approx(8.5 * 60 / 2)  # scaled by M/4
    assert Arena(BASELINES["gavel"])._profile_seconds(4) == 600  # 30 s × 4 types × 5 counts ≈ 10 min
    assert Arena(BASELINES["sia"])._profile_seconds(4) == 120  # 30 s per type
    assert Arena(BASELINES["fcfs"])._profile_seconds(4) == 0
    assert ArenaConfig(pruned_search=False).search_cost(8) == 0.0  # proxy deployed directly


# ------------------------------------------------------------------ §3.5 placement and search
def test_buddy_placement_best_fit_whole_nodes_then_relaxed_with_penalty_halvings():
    nodes = np.arange(4)
    assert place(np.array([4, 2, 3, 4]), nodes, 4, 2) == (((1, 2),), 0)  # tightest node that fits
    assert place(np.array([4, 2, 4, 4]), nodes, 4, 8) == (((0, 4), (2, 4)), 0)  # n/K whole idle nodes
    # no idle pair of nodes: relaxed, 4 nodes × 2 GPUs = one halving of GPUs per node
    assert place(np.array([2, 3, 2, 2]), nodes, 4, 8) == (((0, 2), (1, 2), (2, 2), (3, 2)), 1)
    assert place(np.array([2, 3, 2, 2]), nodes, 4, 8, relaxed=False) is None
    assert halvings_of(((0, 1), (1, 1), (2, 1), (3, 1)), 4) == 2


def test_halving_keeps_half_the_nodes_or_half_a_node():
    assert _halve(Alloc("A40", 8, ((0, 2), (1, 2), (2, 2), (3, 2))), 2).placement == ((0, 2), (1, 2))
    assert _halve(Alloc("V100", 8, ((5, 8),)), 16).placement == ((5, 4),)


def _layout(types: dict[str, list[int]], per_node: dict[str, int]) -> Layout:
    return Layout({g: np.array(v) for g, v in types.items()}, per_node)


SPEC = SearchSpec(depth=3, allow_type_change=True, allow_count_change=True, shrink_others=True, relaxed=True, penalty=0.9)


def test_launch_shrinks_the_running_job_that_loses_least():
    # one type, two 2-GPU nodes; X runs on both (4 GPUs); the new job N asks 2 GPUs
    layout = _layout({"A40": [0, 1]}, {"A40": 2})
    snap = Snapshot(np.array([0, 0]), {"X": Alloc("A40", 4, ((0, 2), (1, 2)))})
    thr = {("X", 4): 10.0, ("X", 2): 8.5, ("X", 1): 4.0, ("N", 2): 5.0, ("N", 1): 3.0}
    plan = launch_search(snap, "N", ("A40", 2), lambda j, g, n: thr.get((j, n), 0.0), layout, SPEC, frozenset({"X"}))
    assert plan is not None
    assert plan.snapshot.allocs["X"] == Alloc("A40", 2, ((0, 2),))  # halved: keeps its first node
    assert plan.alloc == Alloc("A40", 2, ((1, 2),))
    assert plan.gain == pytest.approx(5.0 + (8.5 - 10.0))  # X loses 1.5 < N's 2 by halving
    assert plan.snapshot.free.tolist() == [0, 0]


def test_launch_moves_the_new_job_to_an_idle_type_when_its_own_is_full():
    layout = _layout({"A40": [0], "A10": [1]}, {"A40": 2, "A10": 2})
    snap = Snapshot(np.array([0, 2]), {"X": Alloc("A40", 2, ((0, 2),))})
    thr = {("X", "A40"): 6.0, ("N", "A40"): 5.0, ("N", "A10"): 4.0}
    no_shrink = SearchSpec(3, True, False, True, True, 0.9)
    plan = launch_search(snap, "N", ("A40", 2), lambda j, g, n: thr.get((j, g), 0.0), layout, no_shrink, frozenset({"X"}))
    assert plan is not None and plan.alloc == Alloc("A10", 2, ((1, 2),)) and plan.gain == pytest.approx(4.0)
    none = SearchSpec(3, False, False, True, True, 0.9)
    assert launch_search(snap, "N", ("A40", 2), lambda j, g, n: thr.get((j, g), 0.0), layout, none, frozenset({"X"})) is None


def test_launch_never_shrinks_a_job_below_what_it_can_run():
    layout = _layout({"A40": [0, 1]}, {"A40": 2})
    snap = Snapshot(np.array([0, 0]), {"X": Alloc("A40", 4, ((0, 2), (1, 2)))})
    thr = {("X", 4): 10.0, ("N", 2): 5.0, ("N", 1): 3.0}  # X cannot run on 2 GPUs (AP OOM)
    assert launch_search(snap, "N", ("A40", 2), lambda j, g, n: thr.get((j, n), 0.0), layout, SPEC, frozenset({"X"})) is None


def test_scale_up_doubles_the_job_that_gains_most_into_idle_gpus():
    layout = _layout({"A40": [0, 1, 2]}, {"A40": 2})
    snap = Snapshot(np.array([0, 0, 2]), {"X": Alloc("A40", 2, ((0, 2),)), "Y": Alloc("A40", 2, ((1, 2),))})
    thr = {("X", 2): 5.0, ("X", 4): 6.0, ("Y", 2): 5.0, ("Y", 4): 9.0}
    out = scale_up(snap, lambda j, g, n: thr.get((j, n), 0.0), layout, SPEC, frozenset({"X", "Y"}), steps=3)
    assert out.allocs["Y"].gpus == 4 and out.allocs["X"].gpus == 2 and out.changed == ["Y"]
    assert out.free.sum() == 0
