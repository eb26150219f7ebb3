"""Placement baselines of the paper's simulation (spec §5, mechanics from §6.1).

Each baseline picks a node list from the free nodes (`nodes_by_mp[j]`: minipod j's free nodes in
(leaf, node) order); `baseline_matrix` sorts it by (minipod, leaf, node) and fills the matrix
row-major, so a baseline's PP groups are contiguous like Arnold's. Topo-aware maps the job graph
onto GPU-packing's nodes itself (recursive Kernighan-Lin bisection); "naive" is Megatron's DP-major
fill of GPU-packing's nodes.
"""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx
import numpy as np

from .groups import CommMatrix, column_major, row_major

__all__ = ["BASELINES", "baseline_matrix", "best_fit", "gpu_pack", "kl_bisect", "random_fit", "topo_aware"]

BASELINES = ("best-fit", "random-fit", "gpu-pack", "topo-aware")
_EDGE_EPS = 1e-3


def _take(nodes_by_mp: Sequence[Sequence[int]], counts: dict[int, int]) -> list[int]:
    return [n for j, k in counts.items() for n in nodes_by_mp[j][:k]]


def best_fit(nodes_by_mp: Sequence[Sequence[int]], n: int) -> list[int] | None:
    """Each node to the minipod with the fewest remaining free nodes (> 0)."""
    left = [len(x) for x in nodes_by_mp]
    if sum(left) < n:
        return None
    counts: dict[int, int] = {}
    for _ in range(n):
        j = min((j for j in range(len(left)) if left[j] > 0), key=lambda j: (left[j], j))
        left[j] -= 1
        counts[j] = counts.get(j, 0) + 1
    return _take(nodes_by_mp, counts)


def random_fit(nodes_by_mp: Sequence[Sequence[int]], n: int, rng: np.random.Generator) -> list[int] | None:
    """Round-robin over a random permutation of the non-empty minipods (balanced, random)."""
    left = [len(x) for x in nodes_by_mp]
    if sum(left) < n:
        return None
    perm = [int(j) for j in rng.permutation(len(left)) if left[j] > 0]
    counts: dict[int, int] = {}
    while n:
        for j in perm:
            if n and left[j] > 0:
                left[j] -= 1
                counts[j] = counts.get(j, 0) + 1
                n -= 1
    return _take(nodes_by_mp, counts)


def gpu_pack(nodes_by_mp: Sequence[Sequence[int]], n: int) -> list[int] | None:
    """The tightest single minipod that fits what is left, else the whole largest one, repeatedly."""
    left = {j: len(x) for j, x in enumerate(nodes_by_mp) if len(x)}
    if sum(left.values()) < n:
        return None
    counts: dict[int, int] = {}
    while n:
        fits = [j for j, f in left.items() if f >= n]
        j = min(fits, key=lambda j: (left[j], j)) if fits else max(left, key=lambda j: (left[j], -j))
        k = min(n, left.pop(j))
        counts[j] = k
        n -= k
    return _take(nodes_by_mp, counts)


def _job_graph(matrix: CommMatrix, alpha: float) -> nx.Graph:
    """Cells (r, c): PP chain edges weigh beta+ε, DP ring edges alpha+ε."""
    r_, c_ = matrix.rows, matrix.cols
    g = nx.Graph()
    g.add_nodes_from((r, c) for r in range(r_) for c in range(c_))
    for r in range(r_):
        for c in range(c_):
            if c + 1 < c_:
                g.add_edge((r, c), (r, c + 1), weight=1.0 - alpha + _EDGE_EPS)
            if r_ > 1 and (r + 1) % r_ != r:
                g.add_edge((r, c), ((r + 1) % r_, c), weight=alpha + _EDGE_EPS)
    return g


def topo_aware(
    nodes_by_mp: Sequence[Sequence[int]], matrix: CommMatrix, alpha: float
) -> np.ndarray | None:
    """GPU-packing's nodes; minipods halved recursively by node count; the job graph split into
    parts of exactly those sizes by Kernighan-Lin from a row-major initial split."""
    chosen = gpu_pack(nodes_by_mp, matrix.nodes)
    if chosen is None:
        return None
    pos = {n: j for j, x in enumerate(nodes_by_mp) for n in x}
    groups: dict[int, list[int]] = {}
    for n in chosen:
        groups.setdefault(pos[n], []).append(n)
    graph = _job_graph(matrix, alpha)
    out = np.zeros((matrix.rows, matrix.cols), dtype=np.int64)
    cells = sorted(graph.nodes)  # row-major

    def split(parts: list[int], cells: list[tuple[int, int]]) -> None:
        if len(parts) == 1:
            for cell, node in zip(sorted(cells), groups[parts[0]], strict=True):
                out[cell] = node
            return
        sizes = [len(groups[j]) for j in parts]
        total, acc, cut = sum(sizes), 0, 1
        best = None
        for i in range(1, len(parts)):
            acc += sizes[i - 1]
            if best is None or abs(2 * acc - total) < best:
                best, cut = abs(2 * acc - total), i
        left_n = sum(sizes[:cut])
        a, b = set(cells[:left_n]), set(cells[left_n:])
        if a and b:
            a, b = kl_bisect(graph.subgraph(cells), a, b)
        split(parts[:cut], sorted(a))
        split(parts[cut:], sorted(b))

    split(sorted(groups), cells)
    return out


def kl_bisect(graph: nx.Graph, a: set, b: set, *, passes: int = 10, top: int = 8) -> tuple[set, set]:
    """Kernighan-Lin with pair swaps, so both parts keep their sizes (networkx's bisection moves
    single nodes when the parts differ in size). Each step tries the `top` best-gain nodes per side."""
    a, b = set(a), set(b)
    side = {v: 0 for v in a} | {v: 1 for v in b}

    def w(u: object, v: object) -> float:
        return float(graph[u][v]["weight"]) if graph.has_edge(u, v) else 0.0

    for _ in range(passes):
        d = {v: sum(float(e["weight"]) * (1 if side[u] != side[v] else -1) for u, e in graph[v].items()) for v in side}
        locked: set = set()
        swaps: list[tuple[object, object]] = []
        gains: list[float] = []
        for _ in range(min(len(a), len(b))):
            ca = sorted((v for v in side if side[v] == 0 and v not in locked), key=lambda v: (-d[v], v))[:top]
            cb = sorted((v for v in side if side[v] == 1 and v not in locked), key=lambda v: (-d[v], v))[:top]
            if not ca or not cb:
                break
            g, x, y = max(((d[x] + d[y] - 2 * w(x, y), x, y) for x in ca for y in cb), key=lambda t: t[0])
            locked |= {x, y}
            swaps.append((x, y))
            gains.append(g)
            side[x], side[y] = 1, 0
            for v in (x, y):
                for u, e in graph[v].items():
                    if u not in locked:  # v moved: u's external/internal weights change
                        d[u] += 2 * float(e["weight"]) * (1 if side[u] != side[v] else -1)
        cum = np.cumsum(gains) if gains else np.zeros(0)
        k = int(np.argmax(cum)) + 1 if cum.size and cum.max() > 1e-12 else 0
        for x, y in swaps[k:]:  # undo the swaps past the best prefix
            side[x], side[y] = 0, 1
        if k == 0:
            break
        a = {v for v, s_ in side.items() if s_ == 0}
        b = {v for v, s_ in side.items() if s_ == 1}
    return {v for v, s_ in side.items() if s_ == 0}, {v for v, s_ in side.items() if s_ == 1}


def baseline_matrix(
    name: str,
    nodes_by_mp: Sequence[Sequence[int]],
    matrix: CommMatrix,
    alpha: float,
    sort_key: dict[int, tuple[int, int, int]],
    rng: np.random.Generator | None = None,
) -> np.ndarray | None:
    """R×C node matrix of a baseline (`sort_key[node]` = (minipod, leaf, node))."""
    if name == "topo-aware":
        return topo_aware(nodes_by_mp, matrix, alpha)
    n = matrix.nodes
    if name == "best-fit":
        nodes = best_fit(nodes_by_mp, n)
    elif name == "random-fit":
        nodes = random_fit(nodes_by_mp, n, rng if rng is not None else np.random.default_rng(0))
    elif name in ("gpu-pack", "naive"):
        nodes = gpu_pack(nodes_by_mp, n)
    else:
        raise ValueError(f"unknown baseline {name!r}; choose from {', '.join(BASELINES)} or naive")
    if nodes is None:
        return None
    nodes = sorted(nodes, key=lambda x: sort_key[x])
    fill = column_major if name == "naive" else row_major
    return fill(nodes, matrix.rows, matrix.cols)
