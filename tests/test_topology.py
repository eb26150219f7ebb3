"""Topology levels and bandwidths on `ClusterSpec`, and 3D-parallel plans on jobs."""

from __future__ import annotations

import pytest

from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.job import JobSpec, ParallelPlan, per_gpu_batch
from schedmate.schedulers.topology import DEFAULT_TOPOLOGY, Level, Topology


def test_parse_keeps_the_historic_grouping_of_four_nodes_per_switch_and_sixteen_per_pod():
    c = ClusterSpec.parse("40x8")
    assert c.topology == DEFAULT_TOPOLOGY
    assert [c.nodes[i].switch for i in (0, 3, 4, 15, 16)] == ["sw0", "sw0", "sw1", "sw3", "sw4"]
    assert [c.nodes[i].pod for i in (0, 15, 16, 39)] == ["pod0", "pod0", "pod1", "pod2"]


def test_a_configurable_topology_regroups_the_nodes():
    topo = Topology(nodes_per_switch=2, switches_per_pod=3, bw_switch=25.0)
    c = ClusterSpec.parse("12x8", topology=topo)
    assert c.nodes[5].switch == "sw2" and c.nodes[5].pod == "pod0" and c.nodes[6].pod == "pod1"
    assert c.bandwidth_of(((0, 8), (1, 8))) == 25.0


@pytest.mark.parametrize(
    ("placement", "level"),
    [
        (((0, 8),), Level.NODE),
        (((0, 4), (3, 4)), Level.SWITCH),
        (((0, 4), (4, 4)), Level.POD),
        (((0, 4), (15, 4)), Level.POD),
        (((0, 4), (16, 4)), Level.CLUSTER),
    ],
)
def test_level_of_is_the_smallest_domain_holding_every_gpu(placement, level):
    c = ClusterSpec.parse("32x8")
    assert c.level_of(placement) is level
    assert c.level_of([n for n, _ in placement]) is level  # node indices work too
    assert c.bandwidth_of(placement) == c.topology.bandwidth(level)


def test_bandwidth_falls_with_every_level_by_default():
    bws = [DEFAULT_TOPOLOGY.bandwidth(level) for level in Level]
    assert bws == sorted(bws, reverse=True) and len(set(bws)) == 4


def test_homogeneous_clusters_name_no_switch_unless_asked_and_unnamed_nodes_span_the_cluster():
    plain = ClusterSpec.homogeneous(4, 8)
    assert plain.nodes[0].switch is None and plain.level_of([0, 1]) is Level.CLUSTER
    named = ClusterSpec.homogeneous(8, 8, topology=Topology(2, 2))
    assert named.level_of([0, 1]) is Level.SWITCH and named.level_of([0, 3]) is Level.POD
    assert named.level_of([0, 4]) is Level.CLUSTER
    switch_only = ClusterSpec.homogeneous(8, 8, nodes_per_switch=2)
    assert switch_only.nodes[3].switch == "sw1" and switch_only.nodes[3].pod is None


def test_group_ids_match_the_names():
    c = ClusterSpec.parse("20x8")
    ids = c.group_ids(Level.SWITCH)
    for i in range(20):
        for j in range(20):
            assert (ids[i] == ids[j]) == (c.nodes[i].switch == c.nodes[j].switch)


def test_topology_refuses_nonsense():
    with pytest.raises(ValueError):
        Topology(nodes_per_switch=0)
    with pytest.raises(ValueError):
        Topology(bw_pod=0)


# ---------------------------------------------------------------- parallel plans


def test_a_plan_scales_in_data_parallel_replicas_only():
    plan = ParallelPlan(tp=8, pp=4, dp=2)
    assert plan.gpus == 64 and plan.model_parallel == 32 and str(plan) == "TP8xPP4xDP2"
    assert plan.with_gpus(96) == ParallelPlan(8, 4, 3)
    with pytest.raises(ValueError, match="whole replicas"):
        plan.with_gpus(48)


def test_a_job_plan_must_match_its_gpu_request_and_defaults_keep_todays_jobs():
    assert JobSpec("a", 0, 8, 10).plan is None and JobSpec("a", 0, 8, 10).global_batch is None
    JobSpec("b", 0, 32, 10, plan=ParallelPlan(8, 4, 1), global_batch=1024)
    with pytest.raises(ValueError, match="plan TP8xPP1xDP1 has 8 GPUs, asks 16"):
        JobSpec("c", 0, 16, 10, plan=ParallelPlan(8))
    with pytest.raises(ValueError, match="global_batch"):
        JobSpec("d", 0, 1, 10, global_batch=0)


def test_fixed_global_batch_splits_evenly():
    assert per_gpu_batch(1024, 8) == 128 and per_gpu_batch(1024, 3) == pytest.approx(341.333, rel=1e-4)
    with pytest.raises(ValueError):
        per_gpu_batch(1024, 0)
