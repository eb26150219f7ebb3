"""Arnold's pure models: the spec's worked examples as literal tests (spec arnold.md §2–§4, §6)."""

from __future__ import annotations

import numpy as np
import pytest

from schedmate.schedulers.arnold.affinity import PROFILES, ModelShape, affinity_for
from schedmate.schedulers.arnold.baselines import _job_graph, best_fit, gpu_pack, kl_bisect, random_fit
from schedmate.schedulers.arnold.config import ArnoldConfig
from schedmate.schedulers.arnold.groups import CommMatrix, column_major, group_spread, matrix_spreads, row_major
from schedmate.schedulers.arnold.jct import JctPredictor
from schedmate.schedulers.arnold.mip import UnitProblem, greedy_pack, greedy_t1, lower_bound, solve_units
from schedmate.schedulers.arnold.placement_experiment import place_instance
from schedmate.schedulers.arnold.planner import materialize
from schedmate.schedulers.arnold.slowdown import SlowdownModel, calibrate_dense_e_pp
from schedmate.schedulers.arnold.topology import DataCentre
from schedmate.schedulers.arnold.trace import SETTINGS, table1_instance
from schedmate.schedulers.job import ParallelPlan


# --- §2.2 communication matrix -----------------------------------------------------------
@pytest.mark.parametrize(
    ("gpus", "tp", "pp", "shape", "nodes"),
    [(96, 8, 2, (6, 2), 12), (96, 4, 2, (6, 2), 12), (768, 4, 8, (12, 8), 96), (2944, 8, 8, (46, 8), 368)],
)
def test_comm_matrix_paper_examples(gpus, tp, pp, shape, nodes):
    m = CommMatrix.of(gpus, tp, pp)
    assert m is not None and (m.rows, m.cols) == shape and m.nodes == nodes


def test_comm_matrix_validity():
    assert CommMatrix.of(100, 4, 1) is None  # G % 8 != 0
    assert CommMatrix.of(96, 3, 2) is None  # TP not in {1, 2, 4, 8}
    assert CommMatrix.of(24, 4, 3).nodes == 3  # DP 2, 8/TP = 2: valid, 1 row x 3 stages


def test_comm_matrix_validity_literal():
    # DP % (8 / TP) must be 0: TP=2, PP=1, 24 GPUs -> DP 12, 8/2 = 4 -> valid, 3 rows x 1
    assert (CommMatrix.of(24, 2, 1).rows, CommMatrix.of(24, 2, 1).cols) == (3, 1)
    # TP=1, PP=2, 32 GPUs -> DP 16 % 8 == 0 -> 2 rows x 2 cols
    assert CommMatrix.of(32, 1, 2).nodes == 4
    # TP=1, PP=4, 32 GPUs -> DP 8 -> 1 row of 4
    assert CommMatrix.of(32, 1, 4).rows == 1
    # TP=2, PP=2, 16 GPUs -> DP 4 % 4 == 0 -> 1 x 2; TP=2, PP=4, 16 GPUs -> DP 2 % 4 != 0 -> invalid
    assert CommMatrix.of(16, 2, 2).nodes == 2 and CommMatrix.of(16, 2, 4) is None
    assert CommMatrix.of_plan(ParallelPlan(tp=8, pp=2, dp=6)).nodes == 12


# --- §2.3 spread -------------------------------------------------------------------------
def test_spread_metrics():
    assert group_spread([3, 3, 3]) == 1 and group_spread([3, 3, 3], "eq3") == 0
    assert group_spread([0, 1, 1]) == 2 and group_spread([0, 1, 1], "eq3") == 2
    mp = np.array([[0, 0], [0, 1], [1, 1]])  # rows = PP groups, cols = DP groups
    s = matrix_spreads(mp)
    assert (s.dp, s.pp) == (2, 2) and s.score(0.3) == pytest.approx(2.0)
    assert matrix_spreads(np.array([[0, 1], [0, 1]])).pp == 2
    assert matrix_spreads(np.array([[0, 1], [0, 1]])).dp == 1


def test_fills():
    assert row_major([0, 1, 2, 3, 4, 5], 3, 2).tolist() == [[0, 1], [2, 3], [4, 5]]
    # Megatron DP-major: rank k at (k % R, k // R)
    assert column_major([0, 1, 2, 3, 4, 5], 3, 2).tolist() == [[0, 3], [1, 4], [2, 5]]


# --- §4 slowdown sanity table --------------------------------------------------------------
DENSE, MOE = PROFILES["dense_24b"], PROFILES["moe_24b"]


def _gain(a, b, prof, model=SlowdownModel()):
    return model.slowdown(*a, prof.e_dp, prof.e_pp) / model.slowdown(*b, prof.e_dp, prof.e_pp) - 1


def test_slowdown_sanity_table():
    assert _gain((1, 2), (2, 1), DENSE) == pytest.approx(0.0231, abs=5e-4)  # PP- vs DP-aligned
    assert _gain((1, 2), (2, 1), MOE) == pytest.approx(0.0179, abs=5e-4)
    assert _gain((2, 2), (1, 2), DENSE) == pytest.approx(0.0, abs=1e-12)  # DP-aligned vs unaligned
    assert _gain((3, 2), (1, 1), MOE) == pytest.approx(0.060, abs=1e-3)  # 208-GPU run, held out
    assert _gain((3, 4), (2, 3), MOE) == pytest.approx(0.15, abs=0.01)
    assert _gain((6, 4), (4, 3), MOE) == pytest.approx(0.13, abs=0.01)
    m = SlowdownModel()
    assert [round(m.slowdown(1, p, DENSE.e_dp, DENSE.e_pp), 3) for p in (1, 2, 3, 4)] == [1.0, 1.023, 1.067, 1.177]


def test_slowdown_calibration_and_validation():
    assert calibrate_dense_e_pp(0.023) == pytest.approx(0.076, abs=5e-4)
    assert SlowdownModel().slowdown(1, 1, 0.2, 0.1) == pytest.approx(1.0)
    assert SlowdownModel(iota=0.05).slowdown(4, 1, 0.0, 0.0, busy_frac=1.0) == pytest.approx(1.05)
    with pytest.raises(ValueError):
        SlowdownModel().slowdown(1, 1, 0.7, 0.5)


# --- §3.4 affinity --------------------------------------------------------------------------
def test_affinity_selection():
    assert affinity_for({"profile": "moe_24b"}).alpha == pytest.approx(0.3)
    assert affinity_for({"profile": "dense_24b"}).alpha == 0.0
    assert affinity_for({"profile": "dense_7b"}).alpha == 1.0
    assert affinity_for({}).alpha == 0.3 and affinity_for({}, default_alpha=0.6).alpha == 0.6
    assert affinity_for({"alpha": 0.8, "profile": "moe_24b"}).alpha == 0.8
    shape = PROFILES["dense_14b"].shape
    assert affinity_for({"shape": shape}, "L20").profile == "dense_14b"
    assert affinity_for({"shape": ModelShape(4096, 32, tp=4, pp=4, pp_bits=8)}, "L20").profile == "dense_7b"
    with pytest.raises(ValueError):
        affinity_for({"alpha": 1.5})


# --- §3.2 MIP and fallbacks -------------------------------------------------------------------
def test_greedy_fallbacks_literal():
    p = UnitProblem(units=3, size=4, free=(5, 9, 4), w_y=0.5, w_t=0.5)
    t1 = greedy_t1(p)  # floors (1, 2, 1): minipod 1 takes two whole units, then minipod 0
    assert t1.tolist() == [[0, 4, 0], [0, 4, 0], [4, 0, 0]]
    pack = greedy_pack(p)  # next-fit by descending free: 9 then 5
    assert pack.tolist() == [[0, 4, 0], [0, 4, 0], [3, 1, 0]]
    assert greedy_t1(UnitProblem(3, 4, (7, 3, 3), 0.5, 0.5)) is None  # floors (1, 0, 0) < 3
    assert greedy_pack(UnitProblem(3, 4, (7, 3, 3), 0.5, 0.5)).tolist() == [[4, 0, 0], [3, 1, 0], [0, 2, 2]]
    assert solve_units(UnitProblem(4, 4, (5, 5, 5), 0.5, 0.5)) is None  # 16 > 15 free


def test_mip_matches_bruteforce_objective_and_bound():
    rng = np.random.default_rng(7)
    for _ in range(12):
        k = int(rng.integers(2, 5))
        free = tuple(int(x) for x in rng.integers(0, 9, size=k))
        size, units = int(rng.integers(1, 4)), int(rng.integers(1, 5))
        alpha = float(rng.choice([0.0, 0.3, 0.7, 1.0]))
        p = UnitProblem(units, size, free, alpha, 1 - alpha)
        exact = solve_units(p, use_bound=False)
        fast = solve_units(p)
        if not p.feasible:
            assert exact is None and fast is None
            continue
        assert fast.objective == pytest.approx(exact.objective)
        assert lower_bound(p) <= exact.objective + 1e-9
        assert (exact.counts.sum(axis=1) == size).all() and (exact.counts.sum(axis=0) <= np.array(free)).all()


def test_materialize_consecutive_ranks():
    counts = np.array([[1, 1], [2, 0]])  # unit 0 split, unit 1 whole in minipod 0
    m = materialize(counts, [[0, 1, 2], [3, 4]])
    assert m.tolist() == [[0, 1], [2, 3]]  # whole unit first; stage 0 of both rows in minipod 0
    assert materialize(counts, [[0, 1, 2], [3, 4]], unit="dp").tolist() == [[0, 2], [1, 3]]


# --- §6.1 Table-1 instances ---------------------------------------------------------------------
def test_table1_generator():
    assert table1_instance(SETTINGS[0], 0) == [6, 6, 6]
    for st in SETTINGS[1:]:
        free = table1_instance(st, 3)
        assert len(free) == st.minipods and sum(free) == st.free_nodes
    assert table1_instance(SETTINGS[2], 5) == table1_instance(SETTINGS[2], 5)


def _scores(setting, free, alpha):
    mp = DataCentre.from_free_counts(free).minipod
    return {a: matrix_spreads(mp[n]) for a, (n, _) in place_instance(setting, free, 0, alpha).items()}


@pytest.mark.parametrize("alpha", [0.2, 0.4])
def test_setting_i_symmetric_tie(alpha):
    s = _scores(SETTINGS[0], [6, 6, 6], alpha)
    assert s["arnold"].score(alpha) == s["gpu-pack"].score(alpha) == s["topo-aware"].score(alpha)
    assert (s["arnold"].dp, s["arnold"].pp) == (2, 1)


def test_setting_iii_scores_and_step_time():
    free = table1_instance(SETTINGS[2], 0)
    s = _scores(SETTINGS[2], free, 0.2)
    assert s["arnold"].score(0.2) == pytest.approx(1.6) and s["gpu-pack"].score(0.2) == pytest.approx(2.4)
    s8 = _scores(SETTINGS[2], free, 0.8)
    assert s8["arnold"].score(0.8) == pytest.approx(3.4)
    assert s8["arnold-both"].score(0.8) == pytest.approx(1.6)  # criterion (e): the DP unit wins
    # §6.2: moe_24b at alpha 0.3: Arnold (4, 1) 1.046, packers 1.078, naive DP-major 1.256
    s3 = _scores(SETTINGS[2], free, 0.3)
    model = SlowdownModel()
    slow = {a: model.slowdown(x.dp, x.pp, MOE.e_dp, MOE.e_pp) for a, x in s3.items()}
    assert (s3["arnold"].dp, s3["arnold"].pp) == (4, 1)
    assert slow["arnold"] == pytest.approx(1.046, abs=1e-3)
    assert slow["gpu-pack"] == pytest.approx(1.078, abs=1e-3)
    assert slow["naive"] == pytest.approx(1.256, abs=1e-3)


# --- baselines ----------------------------------------------------------------------------------
def test_baselines_literal():
    mps = [[0, 1, 2], [3, 4, 5, 6, 7], [8, 9]]
    assert best_fit(mps, 4) == [8, 9, 0, 1]  # fewest remaining first
    assert gpu_pack(mps, 4) == [3, 4, 5, 6]  # tightest single minipod that fits
    assert gpu_pack(mps, 7) == [3, 4, 5, 6, 7, 8, 9]  # largest, then the tightest fit for the rest
    r = random_fit(mps, 6, np.random.default_rng(0))
    assert len(r) == 6 and {len([n for n in r if n in m]) for m in mps} == {2}  # balanced
    assert best_fit(mps, 11) is None


def test_kl_bisect_keeps_sizes_and_cuts_light_edges():
    m = CommMatrix.of(96, 8, 2)  # 6 x 2
    g = _job_graph(m, alpha=0.0)  # PP edges heavy: keep rows together
    cells = sorted(g.nodes)
    a, b = kl_bisect(g, set(cells[::2][:4]) | {cells[1], cells[3]}, set(cells) - (set(cells[::2][:4]) | {cells[1], cells[3]}))
    assert len(a) == 6 and len(b) == 6
    assert all(((r, 0) in a) == ((r, 1) in a) for r in range(6))  # no PP edge cut


# --- JCT predictor and config -----------------------------------------------------------------------
def test_jct_predictor_modes():
    assert JctPredictor("oracle").predict("j", 1234.0) == 1234.0
    assert JctPredictor("none").predict("j", 1234.0) is None
    p = JctPredictor("noisy", seed=3)
    assert p.predict("a", 9000.0) == p.predict("a", 9000.0)
    bins = np.array([p.predict(f"j{i}", 30_000.0) / 600 - 1 for i in range(4000)]) - 50
    assert np.sqrt(np.mean(bins**2)) == pytest.approx(1.61, abs=0.12)
    assert min(JctPredictor("noisy").predict(f"s{i}", 10.0) for i in range(200)) >= 600


def test_config_validation():
    with pytest.raises(ValueError):
        ArnoldConfig(unit="row")
    with pytest.raises(ValueError):
        ArnoldConfig(jct_mode="gbm")
    with pytest.raises(ValueError):
        ArnoldConfig(jct_margin_s=-1)


def test_unit_auto_switches_to_both_above_half():
    from schedmate.schedulers.arnold.planner import plan_lpj

    free = table1_instance(SETTINGS[2], 0)
    dc = DataCentre.from_free_counts(free)
    by_mp = dc.nodes_by_minipod(range(dc.minipod.size))
    m = CommMatrix.of(2944, 8, 8)
    low = plan_lpj(m, by_mp, dc.minipod, 0.4, unit="auto")
    high = plan_lpj(m, by_mp, dc.minipod, 0.8, unit="auto")
    assert low.unit == "pp" and low.score == pytest.approx(2.2)
    assert high.unit == "dp" and high.score == pytest.approx(1.6)
    eq3 = plan_lpj(m, by_mp, dc.minipod, 0.2, unit="pp", metric="eq3")
    assert (eq3.spreads.dp, eq3.spreads.pp) == (4, 0)  # Eq. 3: a one-minipod PP group counts 0


def test_aggregated_form_matches_direct():
    rng = np.random.default_rng(11)
    for _ in range(10):
        k = int(rng.integers(2, 5))
        free = tuple(int(x) for x in rng.integers(1, 10, size=k))
        p = UnitProblem(int(rng.integers(1, 5)), int(rng.integers(1, 5)), free, float(rng.uniform()), 0.0)
        p = UnitProblem(p.units, p.size, p.free, p.w_y, 1 - p.w_y)
        a = solve_units(p, use_bound=False, form="direct")
        b = solve_units(p, use_bound=False, form="aggregated")
        assert (a is None) == (b is None)
        if a is not None:
            assert b.objective == pytest.approx(a.objective)
            assert (b.counts.sum(axis=1) == p.size).all() and (b.counts.sum(axis=0) <= np.array(free)).all()
