"""`ArnoldPlacer`: Arnold's LPJ placement (§3.2 + §3.3) as an engine `Placer`, for any policy.

An LPJ is placed at once on whole free eligible nodes (no reservation ahead: that is the policy's
job); everything else goes to the default packer. The rank matrix of each LPJ it placed is kept
(`mapping`), since a `Placement` is an unordered set of (node, GPUs).
"""

from __future__ import annotations

import numpy as np

from ..cluster import ClusterSpec
from ..job import JobState, Placement
from .affinity import affinity_for
from .config import ArnoldConfig
from .packing import PackPlacer
from .planner import LpjPlacement, plan_lpj
from .policy import is_lpj
from .topology import DataCentre

__all__ = ["ArnoldPlacer"]


class ArnoldPlacer:
    name = "arnold"

    def __init__(self, config: ArnoldConfig | None = None) -> None:
        self.config = config or ArnoldConfig()
        self.placed: dict[str, LpjPlacement] = {}
        self._dc: tuple[ClusterSpec, DataCentre] | None = None

    def mapping(self, job_id: str) -> np.ndarray | None:
        """R×C node matrix of an LPJ this placer placed (node rank r + R·c), else None."""
        p = self.placed.get(job_id)
        return p.nodes if p is not None else None

    def place(self, job: JobState, free: np.ndarray, eligible: np.ndarray, n: int, cluster: ClusterSpec) -> Placement | None:
        if self._dc is None or self._dc[0] is not cluster:
            self._dc = (cluster, DataCentre.from_cluster(cluster))
        dc = self._dc[1]
        matrix = is_lpj(job, self.config, cluster.max_node_gpus)
        if matrix is None or matrix.gpus != n:
            return PackPlacer(dc).place(job, free, eligible, n, cluster)
        cap = cluster.capacity()
        whole = np.flatnonzero(eligible & (free == cap))
        if whole.size < matrix.nodes:
            return None
        alpha = affinity_for(job.spec.attributes, cluster.nodes[0].gpu_type, self.config.default_alpha).alpha
        found = plan_lpj(
            matrix, dc.nodes_by_minipod(whole), dc.minipod, alpha, unit=self.config.unit, metric=self.config.metric,
            time_limit=self.config.mip_time_limit_s, node_limit=self.config.mip_node_limit, form=self.config.mip_form,
        )
        if found is None:
            return None
        self.placed[job.job_id] = found
        per = matrix.gpus // matrix.nodes
        return tuple(sorted((int(node), per) for node in found.nodes.ravel()))
