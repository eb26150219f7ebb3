"""Arnold's data-centre model on the engine's topology levels: node → leaf (`Level.SWITCH`) →
minipod (`Level.POD`, a spine-switch domain) → core (`Level.CLUSTER`).

Only minipods carry a performance effect (spec §2.1: within a minipod ≤ 0.3%); leaves only order
nodes. The bandwidths attached to the levels are the per-GPU figures of one 400 Gb/s NIC per GPU
(50 GB/s inside a minipod) and NVLink inside a node; across minipods the effective bandwidth
depends on how many minipods a group spans, which `slowdown.py` models from the paper's measured
losses rather than from a single cross-level figure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..cluster import ClusterSpec, Level
from ..topology import Topology
from .config import GPUS_PER_NODE, LEAVES_PER_MINIPOD, NODES_PER_LEAF

__all__ = ["DataCentre", "arnold_cluster", "arnold_topology"]


def arnold_topology(nodes_per_leaf: int = NODES_PER_LEAF, leaves_per_minipod: int = LEAVES_PER_MINIPOD) -> Topology:
    """The engine topology for an Arnold fabric (default 4 nodes per leaf, 32 leaves per minipod)."""
    return Topology(
        nodes_per_switch=nodes_per_leaf,
        switches_per_pod=leaves_per_minipod,
        bw_node=300.0,
        bw_switch=50.0,
        bw_pod=50.0,
        # Saturated P2P loss across minipods is 70% (spec §4): 30% of the in-minipod figure.
        bw_cluster=15.0,
    )


def arnold_cluster(
    num_minipods: int,
    nodes_per_minipod: int = NODES_PER_LEAF * LEAVES_PER_MINIPOD,
    nodes_per_leaf: int = NODES_PER_LEAF,
    gpu_type: str = "H800",
) -> ClusterSpec:
    """A homogeneous cluster of `num_minipods` minipods of 8-GPU nodes."""
    if nodes_per_minipod % nodes_per_leaf:
        raise ValueError("a minipod must hold whole leaves")
    topo = arnold_topology(nodes_per_leaf, nodes_per_minipod // nodes_per_leaf)
    return ClusterSpec.homogeneous(num_minipods * nodes_per_minipod, GPUS_PER_NODE, gpu_type, topology=topo)


@dataclass(frozen=True)
class DataCentre:
    """Per node: its minipod and leaf (dense ids, 0..k-1), read from a cluster's topology levels."""

    minipod: np.ndarray
    leaf: np.ndarray
    gpus: np.ndarray

    @classmethod
    def from_cluster(cls, cluster: ClusterSpec) -> DataCentre:
        return cls(
            _dense(cluster.group_ids(Level.POD)), _dense(cluster.group_ids(Level.SWITCH)), cluster.capacity()
        )

    @classmethod
    def from_free_counts(cls, free_per_minipod: Sequence[int], nodes_per_leaf: int = NODES_PER_LEAF) -> DataCentre:
        """Only the free nodes of each minipod (static placement experiments, spec §6.1)."""
        mp = np.repeat(np.arange(len(free_per_minipod)), [int(f) for f in free_per_minipod])
        leaf = np.concatenate([np.arange(int(f)) // nodes_per_leaf + 10_000 * j for j, f in enumerate(free_per_minipod)])
        return cls(mp, _dense(leaf.astype(np.int64)), np.full(mp.size, GPUS_PER_NODE))

    @property
    def num_minipods(self) -> int:
        return int(self.minipod.max()) + 1 if self.minipod.size else 0

    def nodes_by_minipod(self, nodes: Iterable[int]) -> list[list[int]]:
        """The given nodes grouped per minipod, each list sorted by (leaf, node): the order Arnold
        hands out consecutive ranks in (spec §3.3)."""
        out: list[list[int]] = [[] for _ in range(self.num_minipods)]
        for n in sorted(nodes, key=lambda i: (self.leaf[i], i)):
            out[int(self.minipod[n])].append(int(n))
        return out

    def sort_nodes(self, nodes: Iterable[int]) -> list[int]:
        """Nodes sorted by (minipod, leaf, node) (how baselines fill their matrix, spec §6.1)."""
        return sorted((int(n) for n in nodes), key=lambda i: (self.minipod[i], self.leaf[i], i))


def _dense(ids: np.ndarray) -> np.ndarray:
    """Renumber group ids 0..k-1 in order of first appearance (nodes without a group stay alone)."""
    _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    rank = np.argsort(np.argsort(first))
    out = rank[inverse].astype(np.int64)
    out.setflags(write=False)
    return out
