"""Data-centre topology: node → switch (leaf/rack) → pod (spine domain) → cluster, with bandwidths.

Placement-aware policies (Arnold, Suika) ask which level a set of nodes spans and the bandwidth of
that level; the engine itself never reads bandwidths (speed stays a policy's declared model,
`Policy.throughput`). Defaults keep the grouping the cluster parser always used: 4 nodes per switch,
4 switches (16 nodes) per pod. Bandwidths are per-GPU GB/s, one direction, from Suika's defaults
(NVLink 300, full InfiniBand 40, cross-rack half of it); the cross-pod figure is ours (half again).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

DEFAULT_NODES_PER_SWITCH = 4
DEFAULT_SWITCHES_PER_POD = 4


class Level(IntEnum):
    """The smallest domain holding every GPU of a placement (ordered: NODE < SWITCH < POD < CLUSTER)."""

    NODE = 0
    SWITCH = 1
    POD = 2
    CLUSTER = 3


@dataclass(frozen=True, slots=True)
class Topology:
    """Grouping of nodes into switches and pods, and the bandwidth of a link at each level (GB/s)."""

    nodes_per_switch: int = DEFAULT_NODES_PER_SWITCH
    switches_per_pod: int = DEFAULT_SWITCHES_PER_POD
    bw_node: float = 300.0
    bw_switch: float = 40.0
    bw_pod: float = 20.0
    bw_cluster: float = 10.0

    def __post_init__(self) -> None:
        if self.nodes_per_switch < 1 or self.switches_per_pod < 1:
            raise ValueError("a topology needs at least one node per switch and one switch per pod")
        if min(self.bw_node, self.bw_switch, self.bw_pod, self.bw_cluster) <= 0:
            raise ValueError("bandwidths must be positive")

    @property
    def nodes_per_pod(self) -> int:
        return self.nodes_per_switch * self.switches_per_pod

    def switch_name(self, node_index: int) -> str:
        return f"sw{node_index // self.nodes_per_switch}"

    def pod_name(self, node_index: int) -> str:
        return f"pod{node_index // self.nodes_per_pod}"

    def bandwidth(self, level: Level) -> float:
        """GB/s of the slowest link a collective crosses when its GPUs span `level`."""
        return (self.bw_node, self.bw_switch, self.bw_pod, self.bw_cluster)[level]


DEFAULT_TOPOLOGY = Topology()
