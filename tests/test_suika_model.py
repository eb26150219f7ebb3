"""Suika's models and planner against the spec's worked examples (shared/specs/suika.md §2-3, §5.1)."""

from __future__ import annotations

import math

import pytest

from schedmate.schedulers.suika.model import (
    CATALOGUE,
    FULL_IB,
    Plan,
    Stage,
    coeffs_for,
    default_plan,
    feasible,
    layout_plan,
    memory_cap,
    peak_memory,
    stage_times,
    throughput,
)
from schedmate.schedulers.suika.planner import (
    PlanSpace,
    SearchParams,
    affinity_order,
    benefit,
    best_expansions,
    best_symmetric,
    split,
    tile,
    units_of,
)
from schedmate.schedulers.suika.redeploy import checkpoint_stall, d2d_stall

HW = FULL_IB


def _job(name: str, gpus: int):
    m = CATALOGUE[name]
    c = coeffs_for(m, HW)
    d = default_plan(m, list(range(gpus)), c, HW)
    assert d is not None
    return c, d, memory_cap(c, HW, peak_memory(d, c))


def _fig3():
    """LLaMA2-7B PP2-DP2-TP2: stage 0 on node 0 GPUs 0-3, stage 1 on node 1 GPUs 8-11, 16/16 layers."""
    c, _, cap = _job("LLaMA2-7B", 8)
    p0 = Plan((Stage(2, ((0, 1), (2, 3)), 16, (12, 12)), Stage(2, ((8, 9), (10, 11)), 16, (12, 12))))
    return c, cap, p0


def test_fig3_asymmetric_expansion():
    c, cap, p0 = _fig3()
    t0 = throughput(p0, c, HW)
    one, two = best_expansions(p0, [12, 13], c, HW, cap)
    assert len(one.added) == 1 and one.throughput / t0 == pytest.approx(1.08, abs=0.01)
    assert two.added == (12, 13)
    s0, s1 = two.plan.stages
    assert (s0.dp, s0.tp, s0.layers) == (2, 2, 13) and (s1.dp, s1.tp, s1.layers) == (3, 2, 19)
    assert two.throughput / t0 == pytest.approx(1.234, abs=0.01)  # paper 1.22x, proto 1.234x


def test_fig3_dp_only_cannot_use_two_gpus():
    c, cap, p0 = _fig3()
    assert best_expansions(p0, [12, 13], c, HW, cap, space=PlanSpace.DP) == []


# spec §5.1 check 2: [proto] throughput relative to 16 GPUs
CURVE = {24: (1.42, 1.42, 1.42), 32: (1.79, 1.80, 1.78), 40: (2.23, 2.06, 1.78), 48: (2.55, 2.55, 2.40), 56: (2.96, None, 2.39), 64: (3.23, 3.23, 2.39)}


def test_llama13b_curve_16_to_64():
    c, d, cap = _job("LLaMA2-13B", 16)
    t0 = throughput(d, c, HW)
    cands = {16 + len(x.added): x for x in best_expansions(d, range(16, 64), c, HW, cap, params=SearchParams(early_stop=False))}
    for g, (suika, _, dp_only) in CURVE.items():
        mine = cands[g].throughput / t0
        assert mine == pytest.approx(suika, rel=0.02), g
        sym = best_symmetric(list(range(g)), c, HW, cap)
        if sym is not None:  # pass rule: Suika >= best symmetric - 1% at every step
            assert mine >= throughput(sym, c, HW) / t0 * 0.99, g
        dp = layout_plan(list(range(g)), 1, g // 4, 4, c, HW)
        assert dp is not None and throughput(dp, c, HW) / t0 == pytest.approx(dp_only, rel=0.02)
        if g >= 40 and g != 48:  # and beats DP-only by >= 10% from 40 GPUs on; the spec's own
            # proto table has 2.55 vs 2.40 (+6%) at 48, where DP-only's 12 replicas split m = 24 evenly
            assert mine >= 1.10 * throughput(dp, c, HW) / t0, g


def test_predecessor_window_is_monotone():
    c, d, cap = _job("LLaMA2-7B", 8)  # 1-4-2 on node 0, node 1 free: 8 -> 16 GPUs
    best = {}
    for w in (1, 2, 4, 8):
        cands = best_expansions(d, range(8, 16), c, HW, cap, params=SearchParams(window=w))
        best[w] = max((x.throughput for x in cands if len(x.added) == 8), default=0.0)
    assert best[8] >= best[4] >= best[2] >= best[1] > 0


def test_overlap_limits():
    c, _, _ = _job("GPT2-1.3B", 4)
    stage = Stage(1, ((0,), (8,)), 24, (12, 12))  # DP across two nodes
    d_only = stage_times(stage, c, HW, k_overlap=1.0)  # k = 1: no overlap, X = D
    perfect = stage_times(stage, c, HW, k_overlap=200.0)  # k -> inf: X -> max(0, D - Bw)
    d = c.k_param * 24 * 2 * 0.5 / HW.bw_inter  # ring all-reduce of one TP shard over 2 replicas
    assert d_only.tail == pytest.approx(d + c.k_optim * 24, rel=1e-9)
    assert perfect.tail - c.k_optim * 24 == pytest.approx(max(0.0, d - perfect.bwd), abs=1e-3 * d + 1e-9)


def test_memory_guard_keeps_xl_defaults_feasible():
    m = CATALOGUE["LLaMA-65B"]
    c = coeffs_for(m, HW)
    d = default_plan(m, list(range(m.gpus)), c, HW)
    assert d is not None
    assert peak_memory(d, c) > 0.9 * HW.gpu_mem  # no ZeRO: over the plain cap
    assert feasible(d, c, memory_cap(c, HW, peak_memory(d, c)))


def test_split_min_max_and_caps():
    assert split(10, [1.0, 1.0]) == (5, 5)
    assert split(32, [2.0, 1.0]) in ((11, 21), (10, 22))
    assert max(a * w for a, w in zip(split(32, [2.0, 1.0]), (2.0, 1.0))) == 22
    assert split(10, [1.0, 1.0], [3, 20]) == (3, 7)
    assert split(1, [1.0, 1.0]) is None and split(10, [1.0, 1.0], [3, 3]) is None


def test_tile_units_and_affinity():
    hw = HW
    assert tile([0, 1, 8, 9], 2, hw) == ((0, 1), (8, 9))
    assert tile([0, 1, 2, 8], 2, hw) is None
    order = affinity_order([8, 9], [0, 1, 10, 11, 130], hw.__class__(nodes_per_rack=1))
    assert order[:2] == [10, 11] and order[-1] == 130
    assert units_of([10, 11, 12, 16, 17], 2, hw) == [(10, 11), (12,), (16, 17)]


def test_benefit_is_one_for_linear_scaling():
    assert benefit(8, 8, 1.0, 2.0) == pytest.approx(1.0)
    assert benefit(8, 4, 1.0, 1.25) == pytest.approx(0.5)


def test_redeployment_costs():
    assert checkpoint_stall(7) == pytest.approx(1.38 * 60, abs=1.0)
    assert checkpoint_stall(13) == pytest.approx(2.02 * 60, abs=1.0)
    c, d, cap = _job("LLaMA2-13B", 16)
    grown = next(x for x in best_expansions(d, range(16, 64), c, HW, cap) if len(x.added) == 8)
    stall = d2d_stall(d, grown.plan, c, HW)
    assert stall == pytest.approx(17.0, abs=2.0)  # §3.9 calibration: about 17 s, ~7x below checkpoint
    assert 5.5 <= checkpoint_stall(13) / stall <= 8.5
    # an unchanged plan copies every shard locally through IPC: t_fix + 40 layers x 1/4 x k_po / 10 GB/s
    assert math.isclose(d2d_stall(d, d, c, HW), 12.0 + 40 * c.k_param_optim / 4 / 10e9)
