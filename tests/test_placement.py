"""Placement and cluster description, written as a specification.

A placer maps the job, a free-GPU vector, an eligibility mask and a GPU count to a placement
((node, gpus), ...) sorted by node, or None when the job does not fit. It never mutates its input.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedmate.schedulers.cluster import ClusterSpec, NodeSpec
from schedmate.schedulers.engine import simulate
from schedmate.schedulers.job import JobSpec, JobState, Phase
from schedmate.schedulers.placement import Consolidate, Spread, TopologyAware, make_placer
from schedmate.schedulers.policies import make_policy

PLACERS = [Consolidate(), Spread(), TopologyAware()]


def job_of(n: int) -> JobState:
    return JobState(JobSpec("j", 0, n, 100))


def place(placer, free, n, cluster=None, eligible=None):
    free = np.asarray(free, dtype=np.int64)
    cluster = cluster or ClusterSpec.homogeneous(len(free), int(free.max()) or 1)
    eligible = np.ones(len(free), dtype=bool) if eligible is None else np.asarray(eligible, dtype=bool)
    return placer.place(job_of(n), free, eligible, n, cluster)


def nodes_of(placement):
    return [node for node, _ in placement]


# ---------------------------------------------------------------- Consolidate (best fit)


def test_consolidate_picks_the_node_whose_free_gpus_fit_most_tightly():
    assert place(Consolidate(), [8, 3, 5, 2], 3) == ((1, 3),)  # exact fit beats larger holes
    assert place(Consolidate(), [8, 3, 5, 2], 4) == ((2, 4),)  # 5 is the tightest of {8, 5}
    assert place(Consolidate(), [8, 3, 5, 2], 6) == ((0, 6),)


def test_consolidate_breaks_ties_on_the_lowest_node_index():
    assert place(Consolidate(), [1, 4, 4], 2) == ((1, 2),)


def test_consolidate_spans_the_fewest_nodes_for_a_job_larger_than_any_node():
    # 20 GPUs over nodes with 8, 2, 8, 3, 8 free: three nodes is the minimum (8 + 8 + 4).
    placement = place(Consolidate(), [8, 2, 8, 3, 8], 20)
    assert len(placement) == 3
    assert sum(k for _, k in placement) == 20
    assert placement == ((0, 8), (2, 8), (4, 4))


def test_a_job_that_does_not_fit_gets_no_placement():
    for placer in PLACERS:
        assert place(placer, [2, 1, 0], 4) is None, placer.name
        assert place(placer, [8, 8], 4, eligible=[False, False]) is None, placer.name


# ---------------------------------------------------------------- Spread


def test_spread_puts_one_gpu_per_node_while_it_can():
    assert place(Spread(), [8, 8, 8, 8], 4) == ((0, 1), (1, 1), (2, 1), (3, 1))


def test_spread_goes_round_robin_when_the_job_has_more_gpus_than_nodes():
    assert place(Spread(), [8, 8, 8, 8], 6) == ((0, 2), (1, 2), (2, 1), (3, 1))


def test_spread_prefers_the_emptiest_nodes():
    assert place(Spread(), [2, 8, 8, 1], 2) == ((1, 1), (2, 1))


# ---------------------------------------------------------------- TopologyAware

# 8 nodes x 8 GPUs, 2 nodes per switch, 2 switches per pod:
#   pod0 = {sw0: nodes 0,1; sw1: nodes 2,3}, pod1 = {sw2: nodes 4,5; sw3: nodes 6,7}
TOPO = ClusterSpec.homogeneous(8, 8, nodes_per_switch=2, switches_per_pod=2)


def test_topology_keeps_a_job_on_one_node_when_one_fits():
    free = [8, 3, 8, 8, 8, 8, 8, 8]
    assert place(TopologyAware(), free, 3, TOPO) == ((1, 3),)


def test_topology_keeps_a_multi_node_job_inside_one_switch():
    # 16 GPUs: Consolidate would take the first two 8-free nodes (0 and 3: two switches);
    # only sw3 (nodes 6, 7) holds 16 free GPUs.
    free = [8, 0, 0, 8, 4, 4, 8, 8]
    assert place(Consolidate(), free, 16, TOPO) == ((0, 8), (3, 8))
    assert place(TopologyAware(), free, 16, TOPO) == ((6, 8), (7, 8))


def test_topology_falls_back_to_one_pod_when_no_switch_fits():
    # 20 GPUs: no switch has 20 free (max 16); pod0 has 16, pod1 has 24 -> pod1 only.
    free = [8, 0, 0, 8, 4, 4, 8, 8]
    placement = place(TopologyAware(), free, 20, TOPO)
    assert placement == ((4, 4), (6, 8), (7, 8))
    assert {TOPO.nodes[i].pod for i in nodes_of(placement)} == {"pod1"}


def test_topology_picks_the_tightest_switch_among_those_that_fit():
    # 10 GPUs: sw1 has 16 free, sw2 has 12 -> sw2 (keeps sw1's 16 for a bigger job).
    free = [1, 1, 8, 8, 6, 6, 1, 1]
    assert {TOPO.nodes[i].switch for i in nodes_of(place(TopologyAware(), free, 10, TOPO))} == {"sw2"}


def test_topology_breaks_ties_on_the_lowest_node_index_not_the_switch_name():
    # 24 one-GPU nodes, 2 per switch: sw2 (nodes 4, 5) and sw10 (nodes 20, 21) both fit 2 GPUs
    # exactly. 'sw10' < 'sw2' as strings, but the lower node index must win.
    cluster = ClusterSpec.homogeneous(24, 1, nodes_per_switch=2)
    free = np.zeros(24, dtype=np.int64)
    free[[0, 2, 4, 5, 20, 21]] = 1
    assert place(TopologyAware(), free, 2, cluster) == ((4, 1), (5, 1))


# ---------------------------------------------------------------- every placer


@st.composite
def placement_problems(draw):
    num_nodes = draw(st.integers(1, 12))
    per_node = draw(st.sampled_from([1, 2, 4, 8]))
    cluster = ClusterSpec.homogeneous(num_nodes, per_node, nodes_per_switch=2, switches_per_pod=2)
    free = np.array(draw(st.lists(st.integers(0, per_node), min_size=num_nodes, max_size=num_nodes)))
    eligible = np.array(draw(st.lists(st.booleans(), min_size=num_nodes, max_size=num_nodes)))
    n = draw(st.integers(1, num_nodes * per_node))
    return cluster, free, eligible, n


@settings(max_examples=150, deadline=None)
@given(placement_problems(), st.sampled_from(PLACERS))
def test_every_placer_returns_a_valid_placement_exactly_when_the_job_fits(problem, placer):
    cluster, free, eligible, n = problem
    before = free.copy()
    placement = placer.place(job_of(n), free, eligible, n, cluster)
    assert np.array_equal(free, before), "a placer must not mutate the free vector"
    if int(free[eligible].sum()) < n:
        assert placement is None
        return
    assert placement is not None
    assert list(placement) == sorted(placement)
    assert len({node for node, _ in placement}) == len(placement)
    assert sum(k for _, k in placement) == n
    for node, k in placement:
        assert eligible[node] and 1 <= k <= free[node]
    fits_one = eligible & (free >= n)
    if placer.name in ("consolidate", "topology") and fits_one.any():
        assert len(placement) == 1
        assert free[placement[0][0]] == free[fits_one].min()  # best fit


@settings(max_examples=100, deadline=None)
@given(placement_problems())
def test_topology_stays_in_one_switch_whenever_some_switch_can_hold_the_job(problem):
    cluster, free, eligible, n = problem
    usable = np.where(eligible, free, 0)
    switch_free: dict[str, int] = {}
    for i, node in enumerate(cluster.nodes):
        switch_free[node.switch] = switch_free.get(node.switch, 0) + int(usable[i])
    placement = TopologyAware().place(job_of(n), free, eligible, n, cluster)
    if max(switch_free.values()) >= n:
        assert len({cluster.nodes[i].switch for i in nodes_of(placement)}) == 1


def test_make_placer_builds_by_name_and_rejects_unknown_names():
    assert make_placer("spread").name == "spread"
    with pytest.raises(ValueError, match="unknown placer 'nearest'"):
        make_placer("nearest")


# ---------------------------------------------------------------- eligibility


def test_eligibility_masks_nodes_by_gpu_type():
    cluster = ClusterSpec.parse("2x4:T4,2x8:A100")
    assert cluster.eligible_mask(("A100",), None).tolist() == [False, False, True, True]
    assert cluster.eligible_mask(("T4", "A100"), None).tolist() == [True] * 4
    assert cluster.eligible_mask(None, None).tolist() == [True] * 4
    assert cluster.eligible_mask(("H100",), None).tolist() == [False] * 4


def test_eligibility_masks_nodes_by_virtual_cluster_when_the_cluster_defines_it():
    cluster = ClusterSpec(
        (
            NodeSpec("a0", 8, "V100", vc="research"),
            NodeSpec("a1", 8, "A100", vc="research"),
            NodeSpec("b0", 8, "A100", vc="prod"),
        )
    )
    assert cluster.vcs == ("prod", "research")
    assert cluster.eligible_mask(None, "research").tolist() == [True, True, False]
    assert cluster.eligible_mask(("A100",), "research").tolist() == [False, True, False]
    # a VC the cluster does not define restricts nothing (traces name VCs the model may lack)
    assert cluster.eligible_mask(None, "unknown-vc").tolist() == [True, True, True]


def test_jobs_only_ever_run_on_nodes_of_their_gpu_type():
    cluster = ClusterSpec.parse("2x4:T4,1x8:A100")  # nodes 0, 1: T4; node 2: A100
    jobs = [JobSpec(f"j{i}", i, 2, 100, gpu_types=("A100",)) for i in range(6)]
    used: set[int] = set()

    policy = make_policy("fifo+bf")
    inner_start = policy.on_start

    def on_start(job, view):
        used.update(nodes_of(job.placement))
        inner_start(job, view)

    policy.on_start = on_start  # type: ignore[method-assign]
    result = simulate(jobs, cluster, policy)
    assert used == {2}
    assert all(j.phase is Phase.COMPLETED for j in result.jobs)
    # 4 jobs fit the A100 node at once; the last two wait for the first two to finish
    assert sorted(j.first_start for j in result.jobs) == [0, 1, 2, 3, 100, 101]


# ---------------------------------------------------------------- ClusterSpec.parse


def test_parse_a_bare_gpu_count_as_nodes_of_eight():
    cluster = ClusterSpec.parse("64")
    assert len(cluster.nodes) == 8 and cluster.total_gpus == 64
    assert {n.gpus for n in cluster.nodes} == {8} and cluster.gpu_types == ("V100",)


def test_parse_a_small_gpu_count_as_one_node():
    cluster = ClusterSpec.parse("4")
    assert [n.gpus for n in cluster.nodes] == [4]


def test_parse_nodes_times_gpus():
    cluster = ClusterSpec.parse("8x8")
    assert [n.gpus for n in cluster.nodes] == [8] * 8
    assert ClusterSpec.parse("8x8:A100").gpu_types == ("A100",)


def test_parse_a_heterogeneous_list_in_order_with_topology():
    cluster = ClusterSpec.parse("6x4:T4,2x8:A100,3x8:2080Ti")
    assert [(n.gpus, n.gpu_type) for n in cluster.nodes] == [(4, "T4")] * 6 + [(8, "A100")] * 2 + [(8, "2080Ti")] * 3
    assert cluster.total_gpus == 6 * 4 + 2 * 8 + 3 * 8 == 64
    assert cluster.gpu_types == ("2080Ti", "A100", "T4")
    assert len({n.name for n in cluster.nodes}) == 11
    # 4 nodes per switch, 4 switches (16 nodes) per pod, counted across the whole list
    assert [n.switch for n in cluster.nodes] == ["sw0"] * 4 + ["sw1"] * 4 + ["sw2"] * 3
    assert {n.pod for n in cluster.nodes} == {"pod0"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "cannot parse cluster"),
        ("abc", "cannot parse cluster"),
        ("8x", "cannot parse cluster"),
        ("x8", "cannot parse cluster"),
        ("8y8", "cannot parse cluster"),
        ("-8", "cannot parse cluster"),
        ("8x8:", "cannot parse cluster"),
        ("8x8;A100", "cannot parse cluster"),
        ("8x8,,2x4", "cannot parse cluster"),
        ("0x8", "has no GPUs"),
        ("8x0", "has no GPUs"),
        ("12", "12 GPUs do not split into nodes of 8"),
    ],
)
def test_parse_rejects_garbage_with_a_clear_message(text, message):
    with pytest.raises(ValueError, match=message):
        ClusterSpec.parse(text)


def test_parse_rejects_zero_gpus_with_a_clear_message():
    with pytest.raises(ValueError, match="no GPUs"):
        ClusterSpec.parse("0")
