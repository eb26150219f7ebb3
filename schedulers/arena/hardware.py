"""GPU types and the spec's clusters (arena.md §2.3 table, §5.1 Table 1, §6 R1/R2).

FLOP/s and bandwidths are public spec values [I]; every link is derated by `LINK_EFFICIENCY`.
GPUs per node (K_g) come from the cluster itself when it differs from the table (a test cluster
of 8-GPU V100 nodes), so placement and the throughput model agree.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..cluster import ClusterSpec, NodeSpec

LINK_EFFICIENCY = 0.7
GB = 1e9


@dataclass(frozen=True, slots=True)
class GpuType:
    """One GPU type: memory (GB), GPUs per node, FP16 TFLOP/s, HBM and link bandwidths (GB/s)."""

    name: str
    mem_gb: float
    per_node: int
    tflops: float
    hbm_gbs: float
    intra_gbs: float
    inter_gbs: float

    @property
    def flops(self) -> float:
        return self.tflops * 1e12

    @property
    def mem_bytes(self) -> float:
        return self.mem_gb * GB

    @property
    def bw_intra(self) -> float:
        """Bytes/s of one intra-node link after the efficiency derate."""
        return self.intra_gbs * GB * LINK_EFFICIENCY

    @property
    def bw_inter(self) -> float:
        return self.inter_gbs * GB * LINK_EFFICIENCY


GPU_TYPES: dict[str, GpuType] = {
    g.name: g
    for g in (
        GpuType("H100", 80, 8, 989, 3350, 450, 25),
        GpuType("L20", 48, 16, 119.5, 864, 32, 25),
        GpuType("A100", 40, 4, 312, 1555, 300, 12.5),
        GpuType("A40", 48, 2, 150, 696, 32, 12.5),
        GpuType("A10", 24, 2, 125, 600, 32, 25),
        GpuType("V100", 32, 16, 125, 900, 150, 12.5),
    )
}
DEFAULT_GPU = "V100"


def gpu_types_of(cluster: ClusterSpec) -> dict[str, GpuType]:
    """The table's constants for each type in `cluster`, with K_g = that type's largest node.

    An unknown type borrows V100's constants under its own name [I]."""
    out: dict[str, GpuType] = {}
    for node in cluster.nodes:
        base = GPU_TYPES.get(node.gpu_type) or replace(GPU_TYPES[DEFAULT_GPU], name=node.gpu_type)
        k = max(node.gpus, out[node.gpu_type].per_node if node.gpu_type in out else 0)
        out[node.gpu_type] = replace(base, per_node=k)
    return out


def build_cluster(parts: tuple[tuple[int, str], ...]) -> ClusterSpec:
    """Nodes of each (count, type), K_g GPUs each from the table, numbered in order."""
    nodes: list[NodeSpec] = []
    for count, gtype in parts:
        k = GPU_TYPES[gtype].per_node
        nodes += [NodeSpec(f"{gtype.lower()}-{len(nodes) + i:04d}", k, gtype) for i in range(count)]
    return ClusterSpec(tuple(nodes))


R1 = ((16, "A40"), (16, "A10"))
"""§6 Cluster R1, a copy of Cluster-A: 64 GPUs, 2 types."""
R2 = ((4, "A100"), (1, "V100"), (8, "A40"), (8, "A10"))
"""§6 Cluster R2: 64 GPUs, 4 types (16 each)."""
SIM_1280 = ((80, "A100"), (20, "V100"), (160, "A40"), (160, "A10"))
"""§5.1 simulated cluster: 320 GPUs of each of 4 types."""
