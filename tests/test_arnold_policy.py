"""Arnold on the engine: invariants (check_policy), reservations, LPJ start and placement speed."""

from __future__ import annotations

import json

import numpy as np
import pytest

from schedmate.schedulers.arnold.affinity import PROFILES
from schedmate.schedulers.arnold.groups import matrix_spreads
from schedmate.schedulers.arnold.policy import ArnoldPolicy
from schedmate.schedulers.arnold.reservation_experiment import reservation_rows, time_average
from schedmate.schedulers.arnold.slowdown import SlowdownModel
from schedmate.schedulers.arnold.timing import decision_time
from schedmate.schedulers.arnold.topology import DataCentre, arnold_cluster
from schedmate.schedulers.arnold.trace import HOUR, ReservationWorkload, reservation_trace
from schedmate.schedulers.cluster import Level
from schedmate.schedulers.job import JobSpec, ParallelPlan, Phase
from schedmate.schedulers.registry import make_policy
from schedmate.schedulers.testing import check_policy

SMALL = ReservationWorkload(
    minipods=4, nodes_per_minipod=8, sizes=(1, 2, 4), probs=(0.6, 0.3, 0.1),
    announce_s=2 * HOUR, start_s=3 * HOUR, lpj=(4, 8, 4), lpj_duration_s=HOUR,
)


def _small_cluster():
    return arnold_cluster(SMALL.minipods, SMALL.nodes_per_minipod)


@pytest.mark.parametrize("seed", [0, 1])
def test_check_policy_random_trace(seed):
    check_policy(lambda: make_policy("arnold"), seed=seed)


@pytest.mark.parametrize("options", [{}, {"borrow": "always"}, {"reserve": False}, {"arrival_mode": "wait"}, {"unit": "both"}])
def test_check_policy_with_lpj(options):
    jobs = reservation_trace(SMALL, 0)
    checked = check_policy(lambda: ArnoldPolicy(**options), jobs, _small_cluster())
    lpj = next(j for j in checked.result.jobs if j.job_id == "lpj")
    assert lpj.phase is Phase.COMPLETED and lpj.first_start >= SMALL.start_s
    if options.get("arrival_mode") != "wait":
        assert lpj.first_start < SMALL.start_s + 60.0 + 1e-6  # preempts leftovers at its start


def test_lpj_runs_on_its_zone_with_placement_speed():
    jobs = reservation_trace(SMALL, 1)
    cluster = _small_cluster()
    policy = ArnoldPolicy()
    check_policy(lambda: policy, jobs, cluster)
    state = policy.lpjs["lpj"]
    assert state.started_at is not None and state.placement is not None
    assert state.placement.nodes.shape == (4, 4)
    assert sorted(state.placement.nodes.ravel().tolist()) == state.zone.tolist()
    mp = DataCentre.from_cluster(cluster).minipod
    s = matrix_spreads(mp[state.placement.nodes])
    assert (s.dp, s.pp) == (state.spreads.dp, state.spreads.pp)
    # runtime = local duration x slowdown(spreads) (no restart: the LPJ starts once)
    lpj = next(j for j in policy_result_jobs(policy, jobs, cluster) if j.job_id == "lpj")
    slow = SlowdownModel().slowdown(s.dp, s.pp, PROFILES["moe_24b"].e_dp, PROFILES["moe_24b"].e_pp)
    assert lpj.end_time - lpj.first_start == pytest.approx(SMALL.lpj_duration_s * slow, rel=1e-6)


def policy_result_jobs(policy, jobs, cluster):
    from schedmate.schedulers.engine import Simulator

    fresh = ArnoldPolicy(policy.config)
    return Simulator(jobs, cluster, fresh).run().jobs


def test_throughput_is_declared_and_slower_when_spread():
    cluster = arnold_cluster(4, 4, nodes_per_leaf=2)  # pods of 4 nodes
    assert cluster.group_ids(Level.POD).tolist() == [0] * 4 + [1] * 4 + [2] * 4 + [3] * 4
    plan = ParallelPlan(tp=8, pp=2, dp=2)  # 2 x 2 matrix, 4 nodes
    spec = JobSpec("L", 0.0, 32, 100.0, plan=plan, attributes={"lpj": True, "profile": "dense_24b"})
    policy = ArnoldPolicy()
    from schedmate.schedulers.engine import Simulator

    sim = Simulator([spec], cluster, policy)
    job = sim.jobs["L"]
    policy.on_arrival(job, sim.view)
    local = policy.throughput(job, tuple((n, 8) for n in range(4)), sim.view)
    # not planned by Arnold: row-major fill of the sorted nodes, rows [0, 4] and [8, 12] cross pods
    spread_pp = policy.throughput(job, ((0, 8), (4, 8), (8, 8), (12, 8)), sim.view)
    spread_dp = policy.throughput(job, ((0, 8), (1, 8), (4, 8), (5, 8)), sim.view)  # columns cross
    assert local == pytest.approx(1.0)
    assert spread_pp == pytest.approx(1 / 1.0231, abs=1e-4)  # dense_24b: S_PP = 2
    assert spread_dp == pytest.approx(1.0)  # dense_24b gains nothing from DP alignment (e_dp = 0)


def test_unannounced_lpj_is_planned_at_submit():
    jobs = [JobSpec(f"b{i}", 0.0, 8, 5000.0) for i in range(6)]
    plan = ParallelPlan(tp=8, pp=2, dp=4)  # 4 x 2 = 8 nodes
    jobs.append(JobSpec("L", 100.0, 64, 1000.0, plan=plan, attributes={"lpj": True}))
    cluster = arnold_cluster(2, 8, nodes_per_leaf=4)
    policy = ArnoldPolicy(arrival_mode="wait")
    res = check_policy(lambda: policy, jobs, cluster).result
    lpj = next(j for j in res.jobs if j.job_id == "L")
    assert policy.lpjs["L"].planned_at == pytest.approx(120.0)  # first round after submit
    assert lpj.first_start <= 180.0  # 10 free nodes were enough: started without preemption
    assert all(j.restarts == 0 for j in res.jobs)


def test_small_plan_is_not_an_lpj():
    spec = JobSpec("s", 0.0, 16, 100.0, plan=ParallelPlan(tp=8, pp=2, dp=1))
    res = check_policy(lambda: ArnoldPolicy(), [spec], arnold_cluster(1, 4, nodes_per_leaf=4)).result
    assert res.jobs[0].phase is Phase.COMPLETED


def test_options_and_registry():
    assert make_policy("arnold", unit="both").config.unit == "both"
    with pytest.raises(ValueError):
        ArnoldPolicy(unit="rows")
    with pytest.raises(TypeError):
        ArnoldPolicy(not_an_option=1)


def test_reservation_directions():
    """Spec §6.3 directions on the default workload (8 x 32 nodes, 160-node LPJ), one seed."""
    rows, _ = reservation_rows([0], arms={"arnold": {}, "reserve-and-pack": {"borrow": "always"}, "arnold-no-jct": {"jct_mode": "none"}})
    by = {r.arm: r for r in rows}
    assert by["arnold"].retention < 0.05 < 0.5 < by["reserve-and-pack"].retention
    assert by["arnold-no-jct"].wait_window_mean_min > 3 * by["arnold"].wait_window_mean_min
    assert by["arnold-no-jct"].alloc_window < by["arnold"].alloc_window
    assert by["arnold-no-jct"].idle_reserved_node_h >= by["arnold"].idle_reserved_node_h


def test_time_average():
    t = np.array([0.0, 10.0, 20.0])
    v = np.array([1.0, 0.0, 0.5])
    assert time_average(t, v, 0, 20) == pytest.approx(0.5)
    assert time_average(t, v, 5, 30) == pytest.approx((5 * 1 + 10 * 0 + 10 * 0.5) / 25)


def test_decision_time_small():
    d = decision_time(64)
    assert d.gpus == 64 and d.rounds > 0 and 0 < d.median_s <= d.max_s


def test_experiment_writes_shaped_outputs(tmp_path, monkeypatch):
    from schedmate.schedulers.arnold import experiment

    monkeypatch.setattr(experiment, "raw_mip_seconds", lambda seeds, alphas, time_limit=10.0: {"direct_wall": [0.1]})
    monkeypatch.setattr(experiment, "placement_rows", _small_placement)  # fewer alphas: faster
    doc = experiment.run_arnold_experiment(tmp_path, seeds=(0,), quick=True, workload=SMALL)
    saved = json.loads((tmp_path / "arnold.json").read_text())
    assert saved["criteria"].keys() == doc["criteria"].keys()
    assert {"arm", "mean_jct_mean", "seeds"} <= saved["aggregate"][0].keys()
    assert all({"measured", "pass"} <= c.keys() for c in saved["criteria"].values())
    assert (tmp_path / "arnold.csv").stat().st_size > 0 and (tmp_path / "arnold.png").stat().st_size > 0


def _small_placement(seeds):
    from schedmate.schedulers.arnold.placement_experiment import placement_rows

    return placement_rows(seeds, alphas=(0.2, 0.4, 0.6, 0.8))


def test_unannounced_lpj_waits_for_drain_without_preempting():
    jobs = [JobSpec(f"b{i}", 0.0, 8, 5000.0) for i in range(10)]
    jobs.append(JobSpec("L", 100.0, 64, 1000.0, plan=ParallelPlan(tp=8, pp=2, dp=4), attributes={"lpj": True}))
    res = check_policy(lambda: ArnoldPolicy(), jobs, arnold_cluster(2, 8, nodes_per_leaf=4)).result
    lpj = next(j for j in res.jobs if j.job_id == "L")
    assert lpj.first_start >= 5000.0 and all(j.restarts == 0 for j in res.jobs)


def test_cordoned_zone_node_is_replanned():
    from schedmate.schedulers.decisions import Cordon

    class Cordoning(ArnoldPolicy):
        cordoned: int | None = None

        def optimize(self, view):
            out = list(super().optimize(view))
            lpj = self.lpjs.get("L")
            if self.cordoned is None and lpj is not None and lpj.planned_at is not None:
                self.cordoned = int(lpj.zone[0])
                out.append(Cordon(self.cordoned))
            return out

    plan = ParallelPlan(tp=8, pp=2, dp=4)
    jobs = [JobSpec("L", 0.0, 64, 500.0, plan=plan, attributes={"lpj": True, "t_arrive": 600.0})]
    policy = Cordoning()
    res = check_policy(lambda: policy, jobs, arnold_cluster(3, 8, nodes_per_leaf=4)).result
    assert res.jobs[0].phase is Phase.COMPLETED
    assert policy.cordoned not in policy.lpjs["L"].zone.tolist()


def test_arnold_placer_under_fifo():
    from schedmate.schedulers.arnold.placer import ArnoldPlacer

    cluster = arnold_cluster(3, 8, nodes_per_leaf=4)
    plan = ParallelPlan(tp=8, pp=2, dp=6)  # 6 x 2 matrix, 12 nodes over pods of 8
    jobs = [JobSpec("s", 0.0, 8, 900.0), JobSpec("L", 10.0, 96, 500.0, plan=plan, attributes={"lpj": True, "alpha": 0.0})]
    placer = ArnoldPlacer()
    res = check_policy(lambda: make_policy("fifo"), jobs, cluster, placer=placer).result
    assert all(j.phase is Phase.COMPLETED for j in res.jobs)
    nodes = placer.mapping("L")
    assert nodes.shape == (6, 2)
    mp = DataCentre.from_cluster(cluster).minipod
    assert matrix_spreads(mp[nodes]).pp == 1  # alpha 0: every PP group inside one pod
