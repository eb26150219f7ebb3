"""Placement: which GPUs a started job gets. Separate from ordering so policies can swap it.

A placer is a pure function of the job and the free-GPU vector: it never mutates either and returns
None when the job does not fit. It sees the job it places (`job.spec.plan`: TP/PP/DP degrees,
`global_batch`) so a topology-aware placer can keep a TP group inside a node or a PP stage inside a
pod; `n` is the GPU count asked now (an elastic start or resize may differ from the request). All
placers here ignore the job's plan and are deterministic (ties go to the lowest node index).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from .cluster import ClusterSpec
from .job import JobState, Placement


class Placer(Protocol):
    name: str

    def place(
        self, job: JobState, free: np.ndarray, eligible: np.ndarray, n: int, cluster: ClusterSpec
    ) -> Placement | None: ...


def _fewest_nodes(free: np.ndarray, candidates: np.ndarray, n: int) -> Placement | None:
    """Fill the emptiest nodes first so a multi-node job spans as few nodes as possible."""
    if candidates.size == 0 or int(free[candidates].sum()) < n:
        return None
    order = candidates[np.lexsort((candidates, -free[candidates]))]
    taken: list[tuple[int, int]] = []
    left = n
    for idx in order:
        k = min(int(free[idx]), left)
        if k <= 0:
            break
        taken.append((int(idx), k))
        left -= k
        if left == 0:
            return tuple(sorted(taken))
    return None


class Consolidate:
    """Best fit: the single node whose free GPUs fit most tightly, else as few nodes as possible."""

    name = "consolidate"

    def place(self, job, free, eligible, n, cluster):
        if n >= 1:  # the common case in fewer array passes (same nodes, same order as below)
            fits = np.flatnonzero(eligible & (free >= n))
            if fits.size:
                best = fits[free[fits].argmin()]  # argmin returns the first (lowest index) on ties
                return ((int(best), n),)
        candidates = np.flatnonzero(eligible & (free > 0))
        if candidates.size == 0:
            return None
        fits = candidates[free[candidates] >= n]
        if fits.size:
            best = fits[np.argmin(free[fits])]  # argmin returns the first (lowest index) on ties
            return ((int(best), n),)
        return _fewest_nodes(free, candidates, n)


class Spread:
    """One GPU per node round-robin over the nodes with most free GPUs (load balancing)."""

    name = "spread"

    def place(self, job, free, eligible, n, cluster):
        candidates = np.flatnonzero(eligible & (free > 0))
        if int(free[candidates].sum()) < n:
            return None
        left = free.copy()
        counts: dict[int, int] = {}
        order = candidates[np.lexsort((candidates, -free[candidates]))]
        while n > 0:
            for idx in order:
                if n == 0:
                    break
                if left[idx] > 0:
                    left[idx] -= 1
                    counts[int(idx)] = counts.get(int(idx), 0) + 1
                    n -= 1
        return tuple(sorted(counts.items()))


class TopologyAware:
    """Keep a job under as few hops as possible: one node, else one switch, else one pod.

    Within the chosen group it packs like `Consolidate`; among groups that fit it picks the one with
    the least free capacity (best fit), which keeps large empty groups for large jobs.
    """

    name = "topology"

    def place(self, job, free, eligible, n, cluster):
        single = Consolidate().place(job, free, eligible, n, cluster)
        if single is not None and len(single) == 1:
            return single
        candidates = np.flatnonzero(eligible & (free > 0))
        for level in ("switch", "pod"):
            groups: dict[str, list[int]] = {}
            for idx in candidates:
                key = getattr(cluster.nodes[idx], level)
                if key is not None:
                    groups.setdefault(key, []).append(int(idx))
            fitting = [(int(free[g].sum()), g[0], np.array(g)) for g in groups.values() if free[g].sum() >= n]
            if fitting:  # best fit; ties to the group with the lowest node index (not its name: sw10 < sw2)
                _, _, members = min(fitting, key=lambda t: (t[0], t[1]))
                return _fewest_nodes(free, members, n)
        return _fewest_nodes(free, candidates, n)


PLACERS: dict[str, type] = {"consolidate": Consolidate, "spread": Spread, "topology": TopologyAware}


def make_placer(name: str) -> Placer:
    try:
        return PLACERS[name]()
    except KeyError:
        raise ValueError(f"unknown placer {name!r}; choose one of {', '.join(PLACERS)}") from None
