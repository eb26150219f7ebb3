"""Cluster model: nodes with a GPU type and count, optional virtual clusters and topology.

Topology is node → leaf/ToR switch → spine/pod; placement-aware policies read it through
`ClusterSpec.switch_of` / `pod_of`. Specs are immutable; the engine keeps free-GPU counts apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True, slots=True)
class NodeSpec:
    name: str
    gpus: int
    gpu_type: str = "V100"
    vc: str | None = None
    switch: str | None = None
    pod: str | None = None


@dataclass(frozen=True)
class ClusterSpec:
    """An immutable description of the cluster.

    `gpu_speed` gives a relative speed per GPU type (1.0 when absent) for heterogeneous clusters.
    """

    nodes: tuple[NodeSpec, ...]
    gpu_speed: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.nodes:
            raise ValueError("a cluster needs at least one node")
        if any(n.gpus < 1 for n in self.nodes):
            raise ValueError("every node needs at least one GPU")
        # Memos: the spec is immutable, and the engine asks for these on every event.
        object.__setattr__(self, "_masks", {})
        object.__setattr__(self, "_total", sum(n.gpus for n in self.nodes))
        cap = np.array([n.gpus for n in self.nodes], dtype=np.int64)
        cap.setflags(write=False)
        object.__setattr__(self, "_capacity", cap)

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def homogeneous(
        cls,
        num_nodes: int,
        gpus_per_node: int = 8,
        gpu_type: str = "V100",
        nodes_per_switch: int | None = None,
        switches_per_pod: int | None = None,
    ) -> ClusterSpec:
        return cls(
            tuple(
                NodeSpec(
                    name=f"node{i:04d}",
                    gpus=gpus_per_node,
                    gpu_type=gpu_type,
                    switch=f"sw{i // nodes_per_switch}" if nodes_per_switch else None,
                    pod=(
                        f"pod{i // (nodes_per_switch * switches_per_pod)}"
                        if nodes_per_switch and switches_per_pod
                        else None
                    ),
                )
                for i in range(num_nodes)
            )
        )

    @classmethod
    def parse(cls, text: str) -> ClusterSpec:
        """Parse a compact description.

        `64` (64 GPUs, 8 per node), `8x8` (8 nodes × 8 GPUs), `8x8:A100`, or a heterogeneous list
        `6x4:T4,2x8:A100,3x8:2080Ti`. Nodes are grouped 4 per switch and 4 switches per pod.
        """
        nodes: list[NodeSpec] = []
        for part in (p.strip() for p in text.split(",")):
            m = re.fullmatch(r"(\d+)(?:x(\d+))?(?::([\w.-]+))?", part)
            if not m:
                raise ValueError(
                    f"cannot parse cluster {text!r}: expected e.g. '64', '8x8', '6x4:T4,2x8:A100'"
                )
            count, per, gtype = int(m.group(1)), m.group(2), m.group(3) or "V100"
            if per is None:  # a bare GPU count
                if count < 1:
                    raise ValueError(f"cluster part {part!r} has no GPUs")
                per_node = 8 if count >= 8 else count
                if count % per_node:
                    raise ValueError(f"{count} GPUs do not split into nodes of {per_node}")
                count, per_i = count // per_node, per_node
            else:
                per_i = int(per)
            if count < 1 or per_i < 1:
                raise ValueError(f"cluster part {part!r} has no GPUs")
            for _ in range(count):
                i = len(nodes)
                nodes.append(
                    NodeSpec(f"{gtype.lower()}-{i:04d}", per_i, gtype, None, f"sw{i // 4}", f"pod{i // 16}")
                )
        return cls(tuple(nodes))

    # -- queries --------------------------------------------------------------------------------
    @property
    def total_gpus(self) -> int:
        return self._total  # type: ignore[attr-defined,no-any-return]

    @property
    def gpu_types(self) -> tuple[str, ...]:
        return tuple(sorted({n.gpu_type for n in self.nodes}))

    @property
    def vcs(self) -> tuple[str, ...]:
        return tuple(sorted({n.vc for n in self.nodes if n.vc}))

    @property
    def max_node_gpus(self) -> int:
        return max(n.gpus for n in self.nodes)

    def capacity(self) -> np.ndarray:
        """GPUs per node (read-only; copy before changing it)."""
        return self._capacity  # type: ignore[attr-defined,no-any-return]

    def speed_of(self, gpu_type: str) -> float:
        return self.gpu_speed.get(gpu_type, 1.0)

    def eligible_mask(self, gpu_types: tuple[str, ...] | None, vc: str | None) -> np.ndarray:
        """Nodes a job may use: allowed GPU types, and its VC when the cluster defines that VC."""
        key = (gpu_types, vc)
        cached = self._masks.get(key)  # type: ignore[attr-defined]
        if cached is not None:
            return cached
        mask = np.ones(len(self.nodes), dtype=bool)
        if gpu_types:
            allowed = set(gpu_types)
            mask &= np.array([n.gpu_type in allowed for n in self.nodes])
        if vc and vc in self.vcs:
            mask &= np.array([n.vc == vc for n in self.nodes])
        mask.setflags(write=False)
        self._masks[key] = mask  # type: ignore[attr-defined]
        return mask
