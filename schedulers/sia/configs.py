"""Sia's candidate allocations: (GPU type, nodes, GPUs) triples a job may be given.

Per GPU type with `k` GPUs per node: powers of two below `k` on one node, then whole nodes in
multiples of `k` (Sia's `CONFIGS_8GPU` = 1, 2, 4, 8, 16, 24, … and `CONFIGS_4GPU` = 1, 2, 4, 8,
12, 16, …), capped by the type's node count. Because every size divides `k` or is a multiple of
it, any set of configurations whose GPUs fit a type's capacity also packs onto its nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..cluster import ClusterSpec


@dataclass(frozen=True, slots=True, order=True)
class Config:
    gpu_type: str
    nodes: int
    gpus: int


@dataclass(frozen=True)
class TypeInfo:
    """One GPU type of the cluster: its node indices and GPUs per node."""

    gpu_type: str
    nodes: tuple[int, ...]
    gpus_per_node: int

    @property
    def capacity(self) -> int:
        return len(self.nodes) * self.gpus_per_node


def cluster_types(cluster: ClusterSpec, usable: np.ndarray | None = None) -> dict[str, TypeInfo]:
    """GPU types of `cluster` (nodes per type; `usable` masks out e.g. cordoned nodes).

    A type whose nodes differ in size uses its most common node size and ignores the others.
    """
    by_type: dict[str, list[int]] = {}
    for i, node in enumerate(cluster.nodes):
        if usable is None or usable[i]:
            by_type.setdefault(node.gpu_type, []).append(i)
    out: dict[str, TypeInfo] = {}
    for t, idx in sorted(by_type.items()):
        sizes = [cluster.nodes[i].gpus for i in idx]
        k = max(set(sizes), key=lambda s: (sizes.count(s), s))
        out[t] = TypeInfo(t, tuple(i for i in idx if cluster.nodes[i].gpus == k), k)
    return out


def type_configs(gpus_per_node: int, num_nodes: int, max_gpus: int | None = None) -> list[tuple[int, int]]:
    """(nodes, GPUs) sizes for one type, smallest first."""
    out: list[tuple[int, int]] = []
    g = 1
    while g < gpus_per_node:
        out.append((1, g))
        g *= 2
    for n in range(1, num_nodes + 1):
        out.append((n, n * gpus_per_node))
    if max_gpus is not None:
        out = [c for c in out if c[1] <= max_gpus]
    return out


def candidate_configs(types: dict[str, TypeInfo] | ClusterSpec, max_gpus: int | None = None) -> list[Config]:
    """All configurations of the cluster, grouped by type (types sorted by name)."""
    if isinstance(types, ClusterSpec):
        types = cluster_types(types)
    return [
        Config(t, n, g)
        for t, info in types.items()
        for n, g in type_configs(info.gpus_per_node, len(info.nodes), max_gpus)
    ]


def config_arrays(configs: Sequence[Config], type_order: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(GPUs per config, type index per config) for the ILP."""
    index = {t: i for i, t in enumerate(type_order)}
    gpus = np.array([c.gpus for c in configs], dtype=np.int64)
    tidx = np.array([index[c.gpu_type] for c in configs], dtype=np.int64)
    return gpus, tidx
