"""Suika's incremental plan search (spec §3.6-3.8): affinity-ordered prefixes of the idle GPUs,
EXPAND_AND_BALANCE (one PP/DP/TP edit plus a min-max rebalance) chained over a window of
predecessor plans, and the baselines' plan spaces (DP-only replicas, from-scratch symmetric 3D).

All functions are pure: a plan, a GPU set and the job's coefficients in, plans out.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from itertools import islice

from .model import (
    FULL_IB,
    Coeffs,
    Hardware,
    Plan,
    Stage,
    _replica_times,
    even_split,
    iteration_time,
    layout_plan,
    peak_memory,
    per_layer_memory,
    throughput,
)

TP_DEGREES = (1, 2, 4, 8)


class PlanSpace(str, Enum):
    """Which plan edits a job may get: Suika's asymmetric 3D edits, whole replicas only
    (Suika-DP / Sia), from-scratch symmetric 3D (Rubick), or none (non-elastic)."""

    SUIKA = "suika"
    DP = "dp"
    SYMMETRIC = "symmetric"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class SearchParams:
    """Alg. 1's pruning knobs (§3.10): predecessor window W, unit cap w, early stop."""

    window: int = 8
    unit_cap: int = 8
    early_stop: bool = True


@dataclass(frozen=True, slots=True)
class Candidate:
    """A prefix of the job's affinity-ordered idle GPUs, the best plan on R0 + prefix, its throughput."""

    added: tuple[int, ...]
    plan: Plan
    throughput: float


def benefit(n_held: int, n_added: int, t_old: float, t_new: float) -> float:
    """Marginal benefit B = (|R0| / |R_delta|) x (T1 - T0) / T0 (§3.1): 1 = linear scaling."""
    return (n_held / n_added) * (t_new - t_old) / t_old


def split(n: int, costs: Sequence[float], caps: Sequence[int] | None = None) -> tuple[int, ...] | None:
    """SPLIT (Appendix B): integers a_i >= 1, sum n, a_i <= cap_i, minimising max a_i * c_i.

    Greedy with a heap: every step adds 1 to the bin with the smallest (a_i + 1) * c_i that has
    room. Starting from the proportional floor (a_i <= n * (1/c_i) / sum(1/c), which the greedy
    passes anyway) skips most steps. None when n < bins or the caps hold fewer than n."""
    m = len(costs)
    caps = list(caps) if caps is not None else [n] * m
    if n < m or sum(min(c, n) for c in caps) < n or any(c < 1 for c in caps):
        return None
    inv = sum(1 / c for c in costs)
    a = [max(1, min(caps[i], int(n / (costs[i] * inv)) - 1)) for i in range(m)]
    if sum(a) > n:
        a = [1] * m
    heap = [((a[i] + 1) * costs[i], i) for i in range(m) if a[i] < caps[i]]
    heapq.heapify(heap)
    for _ in range(n - sum(a)):
        _, i = heapq.heappop(heap)
        a[i] += 1
        if a[i] < caps[i]:
            heapq.heappush(heap, ((a[i] + 1) * costs[i], i))
    return tuple(a)


def load_balance(stages: Sequence[tuple[int, tuple[tuple[int, ...], ...]]], c: Coeffs, hw: Hardware, cap: float) -> Plan | None:
    """LOAD_BALANCE: even batch split per stage, memory-capped min-max layer split, feasibility.

    `stages` are (tp, replicas) pairs; returns None if the batch or the layers cannot be split
    or a GPU runs out of memory."""
    s = len(stages)
    batches = []
    for _tp, reps in stages:
        if len(reps) > c.micro_batch:
            return None
        batches.append(even_split(c.micro_batch, len(reps)))  # identical replicas: even split
    costs, caps = [], []
    for i, ((tp, _), b) in enumerate(zip(stages, batches)):
        tf, tb, _ = _replica_times(c, hw, b[0], 1, tp)
        costs.append(tf + tb)
        caps.append(int(cap // per_layer_memory(i, s, tp, b[0], c)))
    layers = split(c.layers, costs, caps)
    if layers is None:
        return None
    plan = Plan(tuple(Stage(tp, reps, lay, b) for (tp, reps), lay, b in zip(stages, layers, batches)))
    return plan if peak_memory(plan, c) <= cap else None


def _by_node(gpus: Iterable[int], hw: Hardware) -> dict[int, list[int]]:
    by_node: dict[int, list[int]] = {}
    for g in sorted(gpus):
        by_node.setdefault(g // hw.gpus_per_node, []).append(g)
    return by_node


def _tile_grouped(by_node: dict[int, list[int]], t: int, gcd: int | None = None) -> tuple[tuple[int, ...], ...] | None:
    """`gcd`: of the nodes' GPU counts when the caller has it (t tiles them iff t divides it)."""
    if (gcd % t) if gcd is not None else any(len(v) % t for v in by_node.values()):
        return None
    return tuple(tuple(v[k : k + t]) for node in sorted(by_node) for v in (by_node[node],) for k in range(0, len(v), t))


def tile(gpus: Iterable[int], t: int, hw: Hardware) -> tuple[tuple[int, ...], ...] | None:
    """Cut each node's GPUs (sorted) into groups of t; None if some node's count is not a multiple."""
    return _tile_grouped(_by_node(gpus, hw), t)


def _skeleton(plan: Plan) -> list[tuple[int, tuple[tuple[int, ...], ...]]]:
    return [(s.tp, s.replicas) for s in plan.stages]


def _iter_candidates(plan: Plan, added: Sequence[int], hw: Hardware, space: PlanSpace) -> Iterator[list[tuple[int, tuple]]]:
    """`expand_candidates`, lazily and in the same order (the shape memo takes the k-th)."""
    base = _skeleton(plan)
    tps = [t for t in TP_DEGREES if t <= hw.gpus_per_node]
    if space is PlanSpace.DP:
        # Suika-DP: one TP group more in every stage (a whole model replica), PP/TP fixed
        tp = base[0][0]
        if any(t != tp for t, _ in base) or len(added) != tp * len(base):
            return
        groups = tile(added, tp, hw)
        if groups is not None and len(groups) == len(base):
            yield [(t, reps + (g,)) for (t, reps), g in zip(base, groups)]
        return
    grouped = _by_node(added, hw)
    gcd = math.gcd(*(len(v) for v in grouped.values()))
    tiles = {t: _tile_grouped(grouped, t, gcd) for t in tps}
    for t in tps:  # PP-EXPAND: a new last stage
        g = tiles[t]
        if g:
            yield base + [(t, g)]
    for i, (tp, reps) in enumerate(base):  # DP-EXPAND: extra replicas of stage i
        g = tiles.get(tp)
        if g:
            yield base[:i] + [(tp, reps + g)] + base[i + 1 :]
    for i, (tp, reps) in enumerate(base):  # TP-EXPAND: rebuild stage i at another TP degree
        pool = _by_node([x for r in reps for x in r] + list(added), hw)
        pool_gcd = math.gcd(*(len(v) for v in pool.values()))
        for t in tps:
            if t == tp:
                continue
            g = _tile_grouped(pool, t, pool_gcd)
            if g:
                yield base[:i] + [(t, g)] + base[i + 1 :]


def expand_candidates(plan: Plan, added: Sequence[int], hw: Hardware, space: PlanSpace) -> list[list[tuple[int, tuple]]]:
    """The skeletons one local edit away from `plan` that use every GPU of `added` (§3.7, §3.11)."""
    return list(_iter_candidates(plan, added, hw, space))


def shape_key(plan: Plan, added: Sequence[int], hw: Hardware) -> tuple:
    """`plan`'s skeleton and the added GPUs with nodes and racks renamed in order of first
    appearance. EXPAND_AND_BALANCE reads GPUs only through which ones share a node or a rack
    (tiling, bandwidth classes), so two calls with one key pick the same candidate (same index in
    `expand_candidates`' order), with the same layers, batches and iteration time."""
    per, racks_per = hw.gpus_per_node, hw.nodes_per_rack
    nodes: dict[int, int] = {}
    racks: dict[int, int] = {}

    def label(g: int) -> tuple[int, int]:
        n = g // per
        r = n // racks_per
        return racks.setdefault(r, len(racks)), nodes.setdefault(n, len(nodes))

    skel = tuple((s.tp, tuple(label(r[0]) for r in s.replicas)) for s in plan.stages)
    return skel, tuple(label(g) for g in sorted(added))


def _profile(skel: Sequence[tuple[int, tuple[tuple[int, ...], ...]]], hw: Hardware, seen: dict | None = None) -> tuple:
    """All LOAD_BALANCE and the iteration time read from a skeleton: per stage TP, DP and which
    bandwidth classes link its replicas' nodes (one node; two nodes in a rack; two racks).
    `seen` keeps stages already profiled by identity (one call's candidates share most stages)."""
    out = []
    for tp, reps in skel:
        hit = seen.get(id(reps)) if seen is not None else None
        if hit is not None and hit[0] is reps:
            out.append((tp, *hit[1]))
            continue
        nodes = {r[0] // hw.gpus_per_node for r in reps}
        racks = len({n // hw.nodes_per_rack for n in nodes}) if len(nodes) > 1 else 1
        entry = (len(reps), len(nodes) == 1, len(nodes) > racks, racks > 1)
        if seen is not None:
            seen[id(reps)] = (reps, entry)
        out.append((tp, *entry))
    return tuple(out)


def _balanced(skel: list[tuple[int, tuple]], c: Coeffs, hw: Hardware, cap: float, shapes: dict | None,
              seen: dict | None = None) -> Plan | None:
    """`load_balance(skel)`, its iteration time memoised per `_profile` in `shapes`."""
    if shapes is None:
        return load_balance(skel, c, hw, cap)
    key = ("balance", _profile(skel, hw, seen))  # `shapes` is already scoped to (c, cap, hw, space)
    hit = shapes.get(key)
    if hit is None:
        p = load_balance(skel, c, hw, cap)
        shapes[key] = ((None, None, None) if p is None else
                             (tuple(s.layers for s in p.stages), tuple(s.batches for s in p.stages), iteration_time(p, c, hw)))
        return p
    layers, batches, t_iter = hit
    if layers is None:
        return None
    p = Plan(tuple(Stage(tp, reps, lay, b) for (tp, reps), lay, b in zip(skel, layers, batches)))
    p._cache[(c, hw)] = t_iter
    return p


def _expand_and_balance(
    plan: Plan, added: Sequence[int], c: Coeffs, hw: Hardware, cap: float, space: PlanSpace, shapes: dict | None = None
) -> tuple[Plan | None, int]:
    best, best_t, best_k = None, -math.inf, -1
    seen: dict = {}
    for k, skel in enumerate(_iter_candidates(plan, added, hw, space)):
        p = _balanced(skel, c, hw, cap, shapes, seen)
        if p is None:
            continue
        t = throughput(p, c, hw)
        if t > best_t:
            best, best_t, best_k = p, t, k
    return best, best_k


def expand_and_balance(
    plan: Plan, added: Sequence[int], c: Coeffs, hw: Hardware, cap: float, space: PlanSpace = PlanSpace.SUIKA,
    shapes: dict | None = None,
) -> Plan | None:
    """EXPAND_AND_BALANCE(P0, R): the best balanced, feasible plan one edit away, or None.

    `shapes` (shared by every job of one policy) memoises the answer per `shape_key`: a hit builds
    only the winning candidate, so jobs of one model on like-shaped GPUs are balanced once."""
    if shapes is None:
        return _expand_and_balance(plan, added, c, hw, cap, space)[0]
    scoped = shapes.get((c, cap, hw, space))
    if scoped is None:
        scoped = shapes[(c, cap, hw, space)] = {}
    key = shape_key(plan, added, hw)
    hit = scoped.get(key)
    if hit is None:
        best, k = _expand_and_balance(plan, added, c, hw, cap, space, scoped)
        scoped[key] = (k, None) if best is None else (
            k, (tuple(s.layers for s in best.stages), tuple(s.batches for s in best.stages), iteration_time(best, c, hw)))
        return best
    k, kept = hit
    if kept is None:
        return None
    skel = next(islice(_iter_candidates(plan, added, hw, space), k, None))
    layers, batches, t_iter = kept
    best = Plan(tuple(Stage(tp, reps, lay, b) for (tp, reps), lay, b in zip(skel, layers, batches)))
    best._cache[(c, hw)] = t_iter
    return best


def affinity_order(held: Iterable[int], free: Iterable[int], hw: Hardware) -> list[int]:
    """Idle GPUs sorted by (-affinity to the job's GPUs, rack, node, gpu) (§3.6)."""
    nodes = {hw.node(g) for g in held}
    racks = {hw.rack(g) for g in held}

    def key(g: int) -> tuple[int, int]:
        aff = 0 if hw.node(g) in nodes else (1 if hw.rack(g) in racks else 2)
        return aff, g

    return sorted(free, key=key)


def units_of(order: Sequence[int], w: int, hw: Hardware) -> list[tuple[int, ...]]:
    """Consecutive runs of <= w GPUs of `order` that never cross a node boundary."""
    units: list[tuple[int, ...]] = []
    cur: list[int] = []
    for g in order:
        if cur and (len(cur) >= w or hw.node(cur[-1]) != hw.node(g)):
            units.append(tuple(cur))
            cur = []
        cur.append(g)
    if cur:
        units.append(tuple(cur))
    return units


def unit_size(n_held: int, cap: int = 8) -> int:
    """w = min(ceil(N / 16), 8)."""
    return max(1, min(math.ceil(n_held / 16), cap))


def best_expansions(
    plan: Plan,
    free: Iterable[int],
    c: Coeffs,
    hw: Hardware = FULL_IB,
    cap: float = math.inf,
    *,
    space: PlanSpace = PlanSpace.SUIKA,
    params: SearchParams = SearchParams(),
    memo: dict | None = None,
    shapes: dict | None = None,
) -> list[Candidate]:
    """GET_BEST_RS_AND_THPS (Alg. 1): for each affinity-ordered prefix, the best plan found.

    Suika's space chains EXPAND_AND_BALANCE over the W nearest predecessors; the DP space grows by
    whole replicas; the symmetric space re-plans from scratch on R0 + prefix (Rubick). `memo`
    (one dict per job, same coefficients) keeps EXPAND_AND_BALANCE results across calls: after a
    grant elsewhere only the prefixes whose GPUs changed are re-planned. `shapes` (one dict per
    policy) shares EXPAND_AND_BALANCE answers between jobs up to node renaming (`shape_key`)."""
    held = plan.gpus
    n = len(held)
    order = affinity_order(held, free, hw)
    if not order or space is PlanSpace.NONE:
        return []
    if space is PlanSpace.SYMMETRIC:
        return _symmetric_expansions(held, order, c, hw, cap, params)
    if space is PlanSpace.DP:
        step = plan.stages[0].tp * len(plan.stages)
        units = [tuple(order[k : k + step]) for k in range(0, len(order) - step + 1, step)]
    else:
        units = units_of(order, unit_size(n, params.unit_cap), hw)
    pbar: list[Plan | None] = [plan]
    prefix: list[int] = []
    out: list[Candidate] = []
    for i in range(1, len(units) + 1):
        if params.early_stop and len(prefix) + len(units[i - 1]) > max(n, len(units[0])):
            break
        prefix.extend(units[i - 1])
        best, best_t = None, -math.inf
        window = 1 if space is PlanSpace.DP else params.window
        for j in range(max(1, i - window + 1), i + 1):
            base = pbar[j - 1]
            if base is None:
                continue
            added = tuple(g for u in units[j - 1 : i] for g in u)
            if memo is None:
                p = expand_and_balance(base, added, c, hw, cap, space, shapes)
            else:
                hit = memo.get((id(base), added))
                if hit is None or hit[0] is not base:  # the base is kept alive, so its id is unique
                    hit = (base, expand_and_balance(base, added, c, hw, cap, space, shapes))
                    memo[(id(base), added)] = hit
                p = hit[1]
            if p is not None:
                t = throughput(p, c, hw)
                if t > best_t:
                    best, best_t = p, t
        pbar.append(best)
        if best is not None:
            out.append(Candidate(tuple(prefix), best, best_t))
    return out


def best_symmetric(gpus: Sequence[int], c: Coeffs, hw: Hardware = FULL_IB, cap: float = math.inf) -> Plan | None:
    """The best symmetric PP x DP x TP plan on exactly `gpus` (laid out PP -> DP -> TP, even layers)."""
    ordered = sorted(gpus)
    g = len(ordered)
    best, best_t = None, -math.inf
    for tp in TP_DEGREES:
        if tp > hw.gpus_per_node or g % tp:
            continue
        rest = g // tp
        for pp in range(1, rest + 1):
            if rest % pp:
                continue
            p = layout_plan(ordered, pp, rest // pp, tp, c, hw)
            if p is None or peak_memory(p, c) > cap:
                continue
            t = throughput(p, c, hw)
            if t > best_t:
                best, best_t = p, t
    return best


def _symmetric_expansions(
    held: Sequence[int], order: Sequence[int], c: Coeffs, hw: Hardware, cap: float, params: SearchParams
) -> list[Candidate]:
    out = []
    limit = len(held) if params.early_stop else len(order)
    for k in range(1, min(limit, len(order)) + 1):
        p = best_symmetric(list(held) + list(order[:k]), c, hw, cap)
        if p is not None:
            out.append(Candidate(tuple(order[:k]), p, throughput(p, c, hw)))
    return out
