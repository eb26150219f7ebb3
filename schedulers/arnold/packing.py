"""Placers for Arnold: the default bin-packer for non-LPJ jobs and a fixed placement for an LPJ.

`PackPlacer` (spec §3.5, "default bin-pack"): a job of at most one node goes to the node with the
fewest free GPUs that still fits (partially used nodes first, so whole nodes stay free for LPJs);
a larger job takes whole nodes, from the minipod with the fewest whole free nodes that fits it, else
the largest minipods first. `allowed` limits the nodes (outside reserved zones); `prefer` nodes are
used before the others (outside a zone before inside it).
"""

from __future__ import annotations

import numpy as np

from ..cluster import ClusterSpec
from ..job import JobState, Placement
from .topology import DataCentre

__all__ = ["FixedPlacer", "PackPlacer", "whole_nodes"]


def whole_nodes(candidates: np.ndarray, k: int, minipod: np.ndarray, leaf: np.ndarray) -> list[int]:
    """Up to k of `candidates` (whole free nodes): best-fit minipod, else largest minipods first."""
    if k <= 0 or candidates.size == 0:
        return []
    by_mp: dict[int, list[int]] = {}
    for n in candidates[np.lexsort((candidates, leaf[candidates]))]:
        by_mp.setdefault(int(minipod[n]), []).append(int(n))
    fits = [j for j, ns in by_mp.items() if len(ns) >= k]
    if fits:
        j = min(fits, key=lambda j: (len(by_mp[j]), j))
        return by_mp[j][:k]
    out: list[int] = []
    for j in sorted(by_mp, key=lambda j: (-len(by_mp[j]), j)):
        out += by_mp[j][: k - len(out)]
        if len(out) == k:
            break
    return out


class PackPlacer:
    """Default packer for non-LPJ jobs, restricted to `allowed` nodes (None: all)."""

    name = "arnold-pack"

    def __init__(self, dc: DataCentre, allowed: np.ndarray | None = None, prefer: np.ndarray | None = None) -> None:
        self.dc = dc
        self.allowed = allowed
        self.prefer = prefer

    def place(self, job: JobState, free: np.ndarray, eligible: np.ndarray, n: int, cluster: ClusterSpec) -> Placement | None:
        ok = eligible if self.allowed is None else eligible & self.allowed
        cap = cluster.capacity()
        per = int(cap.max())
        if n <= per:
            cands = np.flatnonzero(ok & (free >= n))
            if cands.size == 0:
                return None
            pref = np.zeros(len(free), dtype=bool) if self.prefer is None else ~self.prefer
            best = cands[np.lexsort((cands, free[cands], pref[cands]))][0]
            return ((int(best), n),)
        k = -(-n // per)
        whole = ok & (free == cap) & (cap == per)
        if int(whole.sum()) < k:
            return None
        mp, lf = self.dc.minipod, self.dc.leaf
        if self.prefer is None:
            nodes = whole_nodes(np.flatnonzero(whole), k, mp, lf)
        else:
            nodes = whole_nodes(np.flatnonzero(whole & self.prefer), k, mp, lf)
            nodes += whole_nodes(np.flatnonzero(whole & ~self.prefer), k - len(nodes), mp, lf)
        nodes.sort()
        counts = [per] * (k - 1) + [n - per * (k - 1)]
        return tuple((node, c) for node, c in zip(nodes, counts, strict=True))


class FixedPlacer:
    """Answers one precomputed placement (an LPJ's reserved zone) if its GPUs are free."""

    name = "arnold-fixed"

    def __init__(self, placement: Placement) -> None:
        self.placement = placement

    def place(self, job: JobState, free: np.ndarray, eligible: np.ndarray, n: int, cluster: ClusterSpec) -> Placement | None:
        if sum(k for _, k in self.placement) != n:
            return None
        if all(eligible[node] and free[node] >= k for node, k in self.placement):
            return self.placement
        return None
