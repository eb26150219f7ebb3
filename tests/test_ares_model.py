"""Ares pure model: the spec's worked examples (§3.2, §3.8) with literal inputs and outputs."""

from __future__ import annotations

import pytest

from schedmate.schedulers.ares.baselines import (
    efs_allocate,
    fifo_allocate,
    las_allocate,
    optimus_allocate,
    srtf_allocate,
)
from schedmate.schedulers.ares.config import AresConfig
from schedmate.schedulers.ares.elastic import Contender, ares_allocate, fill_target, scale_cap
from schedmate.schedulers.ares.fairness import FluidJob, fairness_report, reference_finish_times, waterfill
from schedmate.schedulers.ares.scaling import ScalingCurve, linear_curve, log_curve, table_curve
from schedmate.schedulers.ares.virtual_time import VirtualClock, rlin_finish_times

H = 3600.0


# --------------------------------------------------------------------------- scaling and caps
def test_cap_example_normalises_to_demand() -> None:
    """§3.2: thr = n/(1+0.1·log2 n), α = 0.75: cap 8 for d = 1 (e(8)=0.769, e(16)=0.714), 16 for d = 2."""
    curve = log_curve(0.1, 32)
    assert curve.efficiency(8, 1) == pytest.approx(0.769, abs=1e-3)
    assert curve.efficiency(16, 1) == pytest.approx(0.714, abs=1e-3)
    assert scale_cap(curve, 1, 0.75, 64) == 8
    assert scale_cap(curve, 2, 0.75, 64) == 16


@pytest.mark.parametrize(("c", "cap"), [(0.03, 32), (0.06, 32), (0.08, 16), (0.10, 8), (0.12, 4), (0.45, 1)])
def test_cap_table_of_section_6(c: float, cap: int) -> None:
    """§6.1 table: cap for d = 1 at α = 0.75 with G_j = 32 on 64 GPUs."""
    assert scale_cap(log_curve(c, 32), 1, 0.75, 64) == cap


def test_cap_limits_and_alpha_one() -> None:
    curve = linear_curve(32)
    assert scale_cap(curve, 1, 1.0, 64) == 32  # perfectly linear jobs still scale at α = 1
    assert scale_cap(log_curve(0.03, 32), 1, 1.0, 64) == 1  # anything sub-linear does not
    assert scale_cap(curve, 4, 0.75, 24) == 16  # stops at the largest doubling ≤ M, never clamps to 24
    assert scale_cap(curve, 64, 0.75, 32) == 32  # a demand above the limit is capped at the limit


def test_one_gpu_baseline_ignores_demand() -> None:
    curve = log_curve(0.45, 32)  # NeuMF: e(2) vs 1 GPU = 0.69 < 0.75
    assert scale_cap(curve, 4, 0.75, 64, "one_gpu") == 1
    # relative to d = 4: e(8) = 1.9/2.35 = 0.81 ≥ α, e(16) = 1.9/2.8 = 0.68 < α
    assert scale_cap(curve, 4, 0.75, 64, "demand") == 8


def test_fill_target_doubles_while_speedup_grows() -> None:
    flat_after_4 = table_curve({1: 1.0, 2: 2.0, 4: 3.0, 8: 3.0}, 16)
    assert fill_target(flat_after_4, 1, 64) == 4
    assert fill_target(log_curve(0.45, 32), 1, 64) == 32


def test_fractional_throughput_interpolates() -> None:
    curve = ScalingCurve((1.0, 1.5, 2.0))
    assert curve.thr(1.5) == pytest.approx(1.25)
    assert curve.thr(0.5) == pytest.approx(0.5)
    assert curve.thr(10) == 2.0


# --------------------------------------------------------------------------- virtual clock
def test_example_3_virtual_clock() -> None:
    """Ex. 3: M = 4; A at 0 with L = 8, B at 1 h with L = 2 → V(1) = 4, F_A = 8, F_B = 6; R-lin B 2.0 h, A 2.5 h."""
    clock = VirtualClock(4)
    assert clock.arrive("A", 0.0, 8.0) == 8.0
    assert clock.advance(1.0) == pytest.approx(4.0)
    assert clock.arrive("B", 1.0, 2.0) == pytest.approx(6.0)
    clock.advance(10.0)
    assert clock.departures == pytest.approx({"B": 2.0, "A": 2.5})


def test_example_1_gps_finishes() -> None:
    """Ex. 1: M = 8, sizes 14.4, 19.2, 28.8 GPU·h at t = 0 → R-lin finishes 5.4, 6.6, 7.8 h (avg 6.6 h)."""
    done = rlin_finish_times([("j1", 0.0, 14.4), ("j2", 0.0, 19.2), ("j3", 0.0, 28.8)], 8)
    assert done == pytest.approx({"j1": 5.4, "j2": 6.6, "j3": 7.8})
    assert sum(done.values()) / 3 == pytest.approx(6.6)


def test_clock_freezes_when_gps_is_empty() -> None:
    clock = VirtualClock(2)
    clock.arrive("a", 0.0, 2.0)  # leaves GPS at t = 1 with V = 2
    assert clock.advance(5.0) == pytest.approx(2.0)  # frozen, not reset
    assert clock.arrive("b", 5.0, 1.0) == pytest.approx(3.0)


def test_clock_rejects_going_back() -> None:
    clock = VirtualClock(2)
    clock.advance(3.0)
    with pytest.raises(ValueError):
        clock.advance(1.0)


# --------------------------------------------------------------------------- allocation pass
def _ex2_jobs() -> dict[str, Contender]:
    """Ex. 2: M = 8, d = 2; job1/job3 linear to 4 GPUs with e(8) < α (cap 4), job2 linear (cap 8)."""
    capped = table_curve({1: 1.0, 2: 2.0, 4: 4.0, 8: 4.4}, 8)
    linear = linear_curve(8)
    clock = VirtualClock(8)
    f1 = clock.arrive("job1", 0.0, 12.0)
    f2 = clock.arrive("job2", 0.0, 22.0)
    v2 = clock.advance(2.0)
    f3 = clock.arrive("job3", 2.0, 10.0)
    assert v2 == pytest.approx(8.0) and (f1, f2, f3) == pytest.approx((12.0, 22.0, 18.0))
    return {
        jid: Contender(jid, a, 2, curve, vft=f, cap=scale_cap(curve, 2, 0.75, 8))
        for jid, a, curve, f in (("job1", 0.0, capped, f1), ("job2", 0.0, linear, f2), ("job3", 2.0, capped, f3))
    }


def test_example_2_allocation_table() -> None:
    jobs = _ex2_jobs()
    assert [jobs[j].cap for j in ("job1", "job2", "job3")] == [4, 8, 4]
    assert ares_allocate([jobs["job1"], jobs["job2"]], 8) == {"job1": 4, "job2": 4}  # [0, 2): job2 shrunk
    assert ares_allocate(list(jobs.values()), 8) == {"job1": 4, "job3": 4, "job2": 0}  # [2, 3): job2 preempted
    assert ares_allocate([jobs["job2"], jobs["job3"]], 8) == {"job3": 4, "job2": 4}  # [3, 4.5)
    assert ares_allocate([jobs["job2"]], 8) == {"job2": 8}  # [4.5, 5.5)


def test_example_2_gps_finishes() -> None:
    """Ex. 2's GPS column: job1 3.5 h, job2 5.5 h, job3 5.0 h (Ares's column runs on the engine)."""
    gps = rlin_finish_times([("job1", 0.0, 12.0), ("job2", 0.0, 22.0), ("job3", 2.0, 10.0)], 8)
    assert gps == pytest.approx({"job1": 3.5, "job2": 5.5, "job3": 5.0})


def test_no_shrink_falls_back_to_rigid_and_backfills() -> None:
    curve = linear_curve(8)
    a = Contender("a", 0.0, 2, curve, vft=1.0, cap=6)
    b = Contender("b", 0.0, 4, curve, vft=2.0, cap=8)
    c = Contender("c", 0.0, 2, curve, vft=3.0, cap=2)
    assert ares_allocate([a, b, c], 8, allow_shrink=False) == {"a": 6, "b": 0, "c": 2}
    assert ares_allocate([a, b, c], 8, allow_shrink=True) == {"a": 6, "b": 2, "c": 0}


def test_fill_leftover_hands_idle_gpus_in_priority_order() -> None:
    curve = linear_curve(16)
    a = Contender("a", 0.0, 1, curve, vft=1.0, cap=2, fill_target=16)
    b = Contender("b", 0.0, 1, curve, vft=2.0, cap=2, fill_target=4)
    assert ares_allocate([a, b], 8) == {"a": 2, "b": 2}
    assert ares_allocate([a, b], 8, fill_leftover=True) == {"a": 6, "b": 2}


def test_config_validates() -> None:
    with pytest.raises(ValueError):
        AresConfig(alpha=0.0)
    with pytest.raises(ValueError):
        AresConfig(ftf_reference="nope")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- baselines
def _rigid() -> list[Contender]:
    curve = linear_curve(8)
    return [
        Contender("old", 0.0, 4, curve, remaining=900.0, attained=7200.0, current=4),
        Contender("big", 1.0, 6, curve, remaining=50.0, attained=0.0),
        Contender("small", 2.0, 2, curve, remaining=100.0, attained=0.0),
    ]


def test_rigid_baselines() -> None:
    jobs = _rigid()
    assert fifo_allocate(jobs, 8) == {"old": 4, "big": 0, "small": 0}  # head-of-line blocks "small"
    assert srtf_allocate(jobs, 8) == {"big": 6, "small": 2, "old": 0}
    assert las_allocate(jobs, 8) == {"big": 6, "small": 2, "old": 0}  # "old" passed 1 GPU·h


def test_efs_round_robins_to_caps() -> None:
    curve = linear_curve(8)
    jobs = [Contender("a", 0.0, 1, curve, cap=2), Contender("b", 1.0, 1, curve, cap=8)]
    assert efs_allocate(jobs, 8) == {"a": 2, "b": 6}
    assert efs_allocate(jobs, 1) == {"a": 1, "b": 0}


def test_optimus_gives_gpus_where_time_drops_most() -> None:
    jobs = [
        Contender("flat", 0.0, 1, log_curve(0.45, 8), remaining=20.0),
        Contender("linear", 0.0, 1, linear_curve(8), remaining=100.0),
    ]
    alloc = optimus_allocate(jobs, 8)  # linear: drops 50, 16.7, 8.3, 5, 3.3; flat: 5.5, 3.1, …
    assert alloc == {"linear": 6, "flat": 2}
    assert optimus_allocate(jobs, 1) == {"flat": 1, "linear": 0}  # first GPUs in arrival order


# --------------------------------------------------------------------------- fairness metric
def test_waterfill_redistributes_capped_share() -> None:
    assert waterfill([1, 4, 4], 8) == pytest.approx([1.0, 3.5, 3.5])


def test_rscal_alignment_and_caps() -> None:
    """One job alone on 8 GPUs, G = 4: runs at thr(4) from ⌈a/R⌉·R + o."""
    job = FluidJob("j", 30.0, 1, 400.0, linear_curve(4), restart_s=10.0)
    aligned = reference_finish_times([job], 8, "scal_aligned", round_s=60.0)
    assert aligned["j"] == pytest.approx(60.0 + 10.0 + 100.0)
    assert reference_finish_times([job], 8, "scal")["j"] == pytest.approx(130.0)
    assert reference_finish_times([job], 8, "lin")["j"] == pytest.approx(30.0 + 400.0 / 8)


def test_rscal_does_not_redistribute() -> None:
    """Two jobs on 8 GPUs, one capped at G = 1: the other still gets only 4 GPUs."""
    jobs = [FluidJob("a", 0.0, 1, 100.0, linear_curve(1)), FluidJob("b", 0.0, 1, 600.0, linear_curve(8))]
    ref = reference_finish_times(jobs, 8, "scal")
    assert ref["a"] == pytest.approx(100.0)
    assert ref["b"] == pytest.approx(100.0 + 200.0 / 8)  # 4 GPUs until a leaves (7 if redistributed)


def test_fairness_report_strict_unfair() -> None:
    arrival = {"a": 0.0, "b": 0.0, "c": 0.0}
    ref = {"a": 10.0, "b": 10.0, "c": 10.0}
    report = fairness_report({"a": 10.0, "b": 5.0, "c": 20.0}, arrival, ref)
    assert report.ftf == pytest.approx({"a": 1.0, "b": 0.5, "c": 2.0})
    assert report.unfair_fraction == pytest.approx(1 / 3)  # FTF = 1 exactly is fair
    assert report.worst_ftf == pytest.approx(2.0)


def test_scaling_gps_repredicts_on_arrival() -> None:
    """Artifact priority (§7.5): A (G = 4) alone on 4 GPUs is predicted to end at 2 h; B (G = 1)
    arriving at 1 h halves A's share: B ends at 2 h, A (4 h of work left at 1 h) at 2.5 h."""
    from schedmate.schedulers.ares.fairness import ScalingGps

    gps = ScalingGps(4)
    assert gps.arrive(FluidJob("A", 0.0, 1, 8.0, linear_curve(4)), 0.0) == pytest.approx({"A": 2.0})
    assert gps.arrive(FluidJob("B", 1.0, 1, 1.0, linear_curve(1)), 1.0) == pytest.approx({"A": 2.5, "B": 2.0})


def test_shrink_and_fill_keep_whole_replicas() -> None:
    """A TP2 job (unit 2) shrinks to 2 of 3 free GPUs, not 3; fill adds whole replicas too."""
    curve = linear_curve(16)
    head = Contender("head", 0.0, 1, curve, vft=1.0, cap=5)
    tp2 = Contender("tp2", 0.0, 4, curve, vft=2.0, cap=8, unit=2)
    assert ares_allocate([head, tp2], 8) == {"head": 5, "tp2": 2}
    small = Contender("tp2", 0.0, 2, curve, vft=2.0, cap=2, fill_target=16, unit=2)
    assert ares_allocate([head, small], 10, fill_leftover=True) == {"head": 5, "tp2": 4}
