"""Cluster model: nodes with a GPU type and count, optional virtual clusters and topology.

Topology is node → leaf/ToR switch → spine/pod → cluster (`topology.Topology`): each node names
its switch and pod, and the spec carries the per-level bandwidths. Placement-aware policies ask
`level_of(placement)` / `bandwidth_of(placement)` or `group_ids(level)`. Specs are immutable; the
engine keeps free-GPU counts apart.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from schedmate.errors import BadInput

from .job import Placement
from .topology import DEFAULT_TOPOLOGY, Level, Topology  # noqa: F401 (re-exported)


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

    `gpu_speed` gives a relative speed per GPU type (1.0 when absent) for heterogeneous clusters;
    `topology` the switch/pod grouping the parsers use and the bandwidth of each level.
    """

    nodes: tuple[NodeSpec, ...]
    gpu_speed: dict[str, float] = field(default_factory=dict)
    topology: Topology = DEFAULT_TOPOLOGY

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
        object.__setattr__(self, "_groups", {})

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def homogeneous(
        cls,
        num_nodes: int,
        gpus_per_node: int = 8,
        gpu_type: str = "V100",
        nodes_per_switch: int | None = None,
        switches_per_pod: int | None = None,
        topology: Topology | None = None,
    ) -> ClusterSpec:
        """Identical nodes. Nodes name no switch/pod unless `nodes_per_switch` or `topology` is given
        (kept so existing homogeneous experiments place exactly as before)."""
        pods = topology is not None or bool(nodes_per_switch and switches_per_pod)
        if topology is None and nodes_per_switch:
            topology = Topology(nodes_per_switch, switches_per_pod or DEFAULT_TOPOLOGY.switches_per_pod)
        named = topology is not None
        topo = topology or DEFAULT_TOPOLOGY
        return cls(
            tuple(
                NodeSpec(
                    name=f"node{i:04d}",
                    gpus=gpus_per_node,
                    gpu_type=gpu_type,
                    switch=topo.switch_name(i) if named else None,
                    pod=topo.pod_name(i) if pods else None,
                )
                for i in range(num_nodes)
            ),
            topology=topo,
        )

    @classmethod
    def parse(cls, text: str, topology: Topology = DEFAULT_TOPOLOGY) -> ClusterSpec:
        """Parse a compact description.

        `64` (64 GPUs, 8 per node), `8x8` (8 nodes × 8 GPUs), `8x8:A100`, or a heterogeneous list
        `6x4:T4,2x8:A100,3x8:2080Ti`. Nodes are grouped by `topology` (default 4 per switch and 4
        switches per pod).
        """
        nodes: list[NodeSpec] = []
        for part in (p.strip() for p in text.split(",")):
            m = re.fullmatch(r"(\d+)(?:x(\d+))?(?::([\w.-]+))?", part)
            if not m:
                raise BadInput(
                    f"cannot parse cluster {text!r}: expected e.g. '64', '8x8', '6x4:T4,2x8:A100'"
                )
            count, per, gtype = int(m.group(1)), m.group(2), m.group(3) or "V100"
            if per is None:  # a bare GPU count
                if count < 1:
                    raise BadInput(f"cluster part {part!r} has no GPUs")
                per_node = 8 if count >= 8 else count
                if count % per_node:
                    raise BadInput(f"{count} GPUs do not split into nodes of {per_node}")
                count, per_i = count // per_node, per_node
            else:
                per_i = int(per)
            if count < 1 or per_i < 1:
                raise BadInput(f"cluster part {part!r} has no GPUs")
            for _ in range(count):
                i = len(nodes)
                nodes.append(
                    NodeSpec(f"{gtype.lower()}-{i:04d}", per_i, gtype, None, topology.switch_name(i), topology.pod_name(i))
                )
        return cls(tuple(nodes), topology=topology)

    # -- queries --------------------------------------------------------------------------------
    @property
    def total_gpus(self) -> int:
        return self._total  # type: ignore[attr-defined]  # cached by __post_init__ on the frozen instance, not a field

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
        return self._capacity  # type: ignore[attr-defined]  # cached by __post_init__ on the frozen instance, not a field

    def speed_of(self, gpu_type: str) -> float:
        return self.gpu_speed.get(gpu_type, 1.0)

    def eligible_mask(self, gpu_types: tuple[str, ...] | None, vc: str | None) -> np.ndarray:
        """Nodes a job may use: allowed GPU types, and its VC when the cluster defines that VC."""
        key = (gpu_types, vc)
        cached = self._masks.get(key)  # type: ignore[attr-defined]  # a cache __post_init__ sets on the frozen instance, not a field
        if cached is not None:
            return cached
        mask = np.ones(len(self.nodes), dtype=bool)
        if gpu_types:
            allowed = set(gpu_types)
            mask &= np.array([n.gpu_type in allowed for n in self.nodes])
        if vc and vc in self.vcs:
            mask &= np.array([n.vc == vc for n in self.nodes])
        mask.setflags(write=False)
        self._masks[key] = mask  # type: ignore[attr-defined]  # a cache __post_init__ sets on the frozen instance, not a field
        return mask

    # -- topology -------------------------------------------------------------------------------
    def group_ids(self, level: Level) -> np.ndarray:
        """Per node, an integer id of its group at `level` (equal ids = same group; read-only).

        A node that names no switch (or pod) is a group of its own at that level."""
        cached = self._groups.get(level)  # type: ignore[attr-defined]  # a cache __post_init__ sets on the frozen instance, not a field
        if cached is not None:
            return cached
        if level is Level.NODE:
            ids = np.arange(len(self.nodes))
        elif level is Level.CLUSTER:
            ids = np.zeros(len(self.nodes), dtype=np.int64)
        else:
            names: dict[str, int] = {}
            attr = "switch" if level is Level.SWITCH else "pod"
            out = []
            for i, node in enumerate(self.nodes):
                key = getattr(node, attr)
                out.append(names.setdefault(key, len(names)) if key is not None else -1 - i)
            ids = np.array(out, dtype=np.int64)
        ids.setflags(write=False)
        self._groups[level] = ids  # type: ignore[attr-defined]  # a cache __post_init__ sets on the frozen instance, not a field
        return ids

    def level_of(self, nodes: Iterable[int] | Placement) -> Level:
        """The smallest level holding every node given (node indices or a placement)."""
        idx = sorted({n if isinstance(n, int | np.integer) else n[0] for n in nodes})
        if len(idx) <= 1:
            return Level.NODE
        for level in (Level.SWITCH, Level.POD):
            ids = self.group_ids(level)[idx]
            if (ids == ids[0]).all():
                return level
        return Level.CLUSTER

    def bandwidth_of(self, placement: Placement) -> float:
        """GB/s of the slowest link a collective over `placement` crosses (`Topology.bandwidth`)."""
        return self.topology.bandwidth(self.level_of(placement))
