"""Buddy placement, the bounded-depth downgrade search and the greedy scale-up (arena.md §3.5).

Pure functions over a `Snapshot` (free GPUs per node plus every running job's allocation); the
policy turns the snapshot that wins into engine decisions. Throughputs are the policy's *view*
(what it believes), looked up through `Believed`; the engine later runs jobs at their true speed.

A round's cost follows what it touches, not the number of running jobs: the snapshot carries an
index of the movable jobs by (type, count) with each group's best shrink / retype candidate, built
once per round and derived per search node from the groups a move touched, and `place` answers
per GPU type until that type's GPUs change. `launch_search(..., incremental=False)` is the
reference that scans every running job at every node; both give the same plan (ties included).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from ..job import Placement
from .model import COUNTS

Config = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Alloc:
    """A job's GPUs: type, count, nodes, and how many halvings below the best locality it sits."""

    gpu_type: str
    gpus: int
    placement: Placement
    halvings: int = 0

    @property
    def config(self) -> Config:
        return (self.gpu_type, self.gpus)


@dataclass(frozen=True)
class Layout:
    """Nodes of each GPU type that placement may use, and GPUs per node K_g."""

    nodes: Mapping[str, np.ndarray]
    per_node: Mapping[str, int]

    @property
    def types(self) -> tuple[str, ...]:
        return tuple(sorted(self.nodes))


def halvings_of(placement: Placement, per_node: int) -> int:
    """Halvings of GPUs per node below the buddy layout (min(n, K_g) per node)."""
    n = sum(k for _, k in placement)
    best = min(n, per_node)
    low = min(k for _, k in placement)
    return max(0, round(math.log2(best / low))) if low < best else 0


def place(free: np.ndarray, nodes: np.ndarray, per_node: int, n: int, relaxed: bool = True) -> tuple[Placement, int] | None:
    """Buddy placement (§3.5 PLACE): one best-fit node if n ≤ K_g, else n/K_g idle nodes; failing
    that, with `relaxed`, n/k nodes each with ≥ k idle GPUs for k = n/2, n/4, … (best fit first).
    Returns (placement, halvings) or None."""
    f = free[nodes]
    if n <= per_node:
        ok = np.flatnonzero(f >= n)
        if ok.size:
            i = ok[np.argmin(f[ok])]
            return ((int(nodes[i]), n),), 0
    else:
        ok = np.flatnonzero(f >= per_node)
        need = n // per_node
        if ok.size >= need and n % per_node == 0:
            return tuple(sorted((int(nodes[i]), per_node) for i in ok[:need])), 0
    if not relaxed:
        return None
    k, h = min(n, per_node) // 2, 1
    while k >= 1:
        ok = np.flatnonzero(f >= k)
        need = n // k
        if ok.size >= need:
            pick = ok[np.argsort(f[ok], kind="stable")[:need]]
            return tuple(sorted((int(nodes[i]), k) for i in pick)), h
        k //= 2
        h += 1
    return None


Believed = Callable[[str, str, int], float]
"""(job_id, gpu_type, count) → believed samples/s; 0 = infeasible (never run a job there)."""


@dataclass
class Snapshot:
    """Free GPUs and allocations; `changed` lists the jobs whose allocation differs from the base.

    `index` groups the movable jobs by (type, count) for the downgrade search; it follows the
    snapshot through `copy`/`move`/`mark`/`add`/`remove`: a derived snapshot records its moves in
    `pending` and applies them, updating only the groups they touch, when a search first asks
    (`_index`; most search nodes are leaves that never do), so it is built once per round, not
    once per search node. Change `allocs` only through these methods while an index is attached."""

    free: np.ndarray
    allocs: dict[str, Alloc]
    changed: list[str] = field(default_factory=list)
    index: _Index | None = field(default=None, compare=False, repr=False)
    pending: tuple[tuple[str, Alloc, Alloc], ...] = field(default=(), compare=False, repr=False)
    # `place` answers per GPU type under one layout; a type's entry goes when its GPUs change, and
    # a copy shares the rest (same free GPUs on those types)
    placed: dict[str, dict[tuple[int, bool], tuple[Placement, int] | None]] = field(default_factory=dict, compare=False, repr=False)
    placed_layout: Layout | None = field(default=None, compare=False, repr=False)

    def copy(self) -> Snapshot:
        return Snapshot(self.free.copy(), dict(self.allocs), list(self.changed), self.index, self.pending,
                        dict(self.placed), self.placed_layout)

    def place(self, layout: Layout, gpu_type: str, n: int, relaxed: bool) -> tuple[Placement, int] | None:
        """`place` on this snapshot's free GPUs, remembered until GPUs of `gpu_type` change."""
        if self.placed_layout is not layout:
            self.placed, self.placed_layout = {}, layout
        memo = self.placed.setdefault(gpu_type, {})
        key = (n, relaxed)
        if key not in memo:
            memo[key] = place(self.free, layout.nodes[gpu_type], layout.per_node[gpu_type], n, relaxed)
        return memo[key]

    def add(self, job_id: str, alloc: Alloc) -> None:
        """A job not in the base (its GPUs already taken): a new launch or a kept revoked job."""
        if self.index is not None and job_id in self.index.movable:
            self.index, self.pending = None, ()  # not tracked incrementally: rebuilt on the next search
        self.allocs[job_id] = alloc

    def remove(self, job_id: str) -> Alloc:
        """Drop a job's allocation (its GPUs are not released here)."""
        if self.index is not None and job_id in self.index.movable:
            self.index, self.pending = None, ()
        return self.allocs.pop(job_id)

    def release(self, alloc: Alloc) -> None:
        self.placed.pop(alloc.gpu_type, None)
        for node, k in alloc.placement:
            self.free[node] += k

    def take(self, alloc: Alloc) -> None:
        self.placed.pop(alloc.gpu_type, None)
        for node, k in alloc.placement:
            self.free[node] -= k

    def move(self, job_id: str, alloc: Alloc) -> None:
        self.release(self.allocs[job_id])
        self.take(alloc)
        self.mark(job_id, alloc)

    def mark(self, job_id: str, alloc: Alloc) -> None:
        """Record `alloc` (its GPUs already taken) as the job's, once in `changed` however often it moves."""
        if self.index is not None and job_id in self.index.movable:
            old = self.allocs.get(job_id)
            if old is None:
                self.index, self.pending = None, ()
            else:
                self.pending = (*self.pending, (job_id, old, alloc))
        self.allocs[job_id] = alloc
        if job_id not in self.changed:
            self.changed.append(job_id)


@dataclass(frozen=True)
class SearchSpec:
    """What the downgrade search may do, and the locality penalty."""

    depth: int
    allow_type_change: bool
    allow_count_change: bool
    shrink_others: bool
    relaxed: bool
    penalty: float
    max_gpus: int = COUNTS[-1]
    # the new job's own halving or retype adds its ΔThr to the plan's gain, on top of its
    # throughput where it lands (§3.5 LAUNCH: `gain+Δ+Thr(job,cfg'')`, as the artifact's
    # `_shrink_one_job_and_migration_search` / `_htc_one_job_and_migration_search` add it);
    # False: only the running jobs' ΔThr counts (README, "Ablation constructions")
    own_delta: bool = False


def believed(thr: Believed, job_id: str, alloc: Alloc, penalty: float) -> float:
    return thr(job_id, alloc.gpu_type, alloc.gpus) * penalty**alloc.halvings


def _halve(alloc: Alloc, per_node: int) -> Alloc:
    """Keep the first half of a cross-node job's nodes, or half of a single node's GPUs."""
    if len(alloc.placement) > 1:
        kept = alloc.placement[: len(alloc.placement) // 2]
    else:
        node, k = alloc.placement[0]
        kept = ((node, k // 2),)
    return Alloc(alloc.gpu_type, alloc.gpus // 2, kept, halvings_of(kept, per_node))


@dataclass(frozen=True)
class LaunchPlan:
    snapshot: Snapshot
    alloc: Alloc
    gain: float


def launch_search(
    snap: Snapshot,
    job_id: str,
    start: Config,
    thr: Believed,
    layout: Layout,
    spec: SearchSpec,
    movable: frozenset[str],
    incremental: bool = True,
) -> LaunchPlan | None:
    """§3.5 LAUNCH: place the new job at `start`; if it does not fit (or only relaxed), run the BFS
    over DOWNGRADE_OPS to depth D and return the plan of highest total believed throughput
    (new job's + Σ ΔThr of the jobs it changed, the new job's own halvings and retypes too
    with `spec.own_delta`), or None. `movable`: running jobs it may touch.
    `incremental`: answer each node from the snapshot's (type, count) index, kept across searches
    and nodes (`Snapshot.index`); False: scan every running job at every node (the reference;
    the same plan either way)."""
    g, n = start
    hit = snap.place(layout, g, n, spec.relaxed) if incremental else place(snap.free, layout.nodes[g], layout.per_node[g], n, spec.relaxed)
    if hit is not None and hit[1] == 0:
        alloc = Alloc(g, n, hit[0], 0)
        out = snap.copy()
        out.take(alloc)
        return LaunchPlan(out, alloc, believed(thr, job_id, alloc, spec.penalty))
    plans: list[LaunchPlan] = []
    if hit is not None:
        alloc = Alloc(g, n, hit[0], hit[1])
        out = snap.copy()
        out.take(alloc)
        plans.append(LaunchPlan(out, alloc, believed(thr, job_id, alloc, spec.penalty)))
    frontier = [(snap, start, 0.0)]
    halves: dict[tuple[str, Alloc], tuple[float, Alloc]] = {}
    for _ in range(spec.depth):
        nxt = []
        for s, cfg, gain in frontier:
            ops = (_downgrade_ops(s, job_id, cfg, thr, layout, spec, _index(s, thr, layout, spec, movable))
                   if incremental else _downgrade_ops_scan(s, job_id, cfg, thr, layout, spec, movable, halves))
            for s2, cfg2, delta in ops:
                hit = (s2.place(layout, cfg2[0], cfg2[1], spec.relaxed) if incremental
                       else place(s2.free, layout.nodes[cfg2[0]], layout.per_node[cfg2[0]], cfg2[1], spec.relaxed))
                if hit is not None:
                    alloc = Alloc(cfg2[0], cfg2[1], hit[0], hit[1])
                    out = s2.copy()
                    out.take(alloc)
                    plans.append(LaunchPlan(out, alloc, gain + delta + believed(thr, job_id, alloc, spec.penalty)))
                if hit is None or hit[1] > 0:
                    nxt.append((s2, cfg2, gain + delta))
        frontier = nxt
        if not frontier:
            break
    return max(plans, key=lambda p: p.gain) if plans else None


_TypeChange = tuple[float, str | None, Alloc | None, Config]


def _own_retype(best: _TypeChange | None, thr: Believed, job_id: str, cfg: Config, t: str, idle: int) -> _TypeChange | None:
    """TYPE_CHANGE's candidate for the new job itself (both searches share it): `cfg`'s count on
    type `t` if `t` has the idle GPUs and runs it, kept when its gain beats `best` (ties: `best`)."""
    g, n = cfg
    if idle >= n and thr(job_id, t, n) > 0:
        gain = thr(job_id, t, n) - thr(job_id, g, n)
        if best is None or gain > best[0]:
            return (gain, None, None, (t, n))
    return best


def _downgrade_ops_scan(
    snap: Snapshot, job_id: str, cfg: Config, thr: Believed, layout: Layout, spec: SearchSpec, movable: frozenset[str],
    halves: dict[tuple[str, Alloc], tuple[float, Alloc]],
) -> list[tuple[Snapshot, Config, float]]:
    """DOWNGRADE_OPS [A] read directly, every running job scanned at every node (the reference
    `_downgrade_ops` must equal): per type, halve the job that loses least (SHRINK_t); and move
    the job on the new job's type that gains most from another type with room (TYPE_CHANGE).
    Never to a configuration a job cannot run in."""
    g, n = cfg
    pen = spec.penalty
    out: list[tuple[Snapshot, Config, float]] = []
    by_type: dict[str, list[tuple[str, Alloc]]] = {}
    for jid, a in snap.allocs.items():
        if jid in movable:
            by_type.setdefault(a.gpu_type, []).append((jid, a))
    if spec.allow_count_change:
        for t in layout.types:
            members = by_type.get(t, []) if spec.shrink_others else []
            top = max([a.gpus for _, a in members] + ([n] if t == g else []), default=0)
            best: tuple[float, str | None, Alloc | None] | None = None
            if t == g and n > 1 and n >= top / 2 and thr(job_id, g, n // 2) > 0:
                best = (thr(job_id, g, n // 2) - thr(job_id, g, n), None, None)  # the new job itself
            for jid, a in members:
                if a.gpus > 1 and a.gpus >= top / 2 and thr(jid, t, a.gpus // 2) > 0:
                    key = (jid, a)
                    if key not in halves:  # a halving's loss does not depend on the snapshot
                        half = _halve(a, layout.per_node[t])
                        halves[key] = (believed(thr, jid, half, pen) - believed(thr, jid, a, pen), half)
                    loss, half = halves[key]
                    if best is None or loss > best[0]:
                        best = (loss, jid, half)
            if best is None:
                continue
            if best[1] is None:
                out.append((snap, (g, n // 2), best[0] if spec.own_delta else 0.0))
            else:
                s2 = snap.copy()
                s2.move(best[1], best[2])  # type: ignore[arg-type]  # best[1] is not None in this branch
                out.append((s2, cfg, best[0]))
    if spec.allow_type_change:
        best_tc: _TypeChange | None = None
        placed: dict[int, tuple[Placement, int] | None] = {}  # same snapshot: one placement per count
        for t in layout.types:
            if t == g:
                continue
            idle = int(snap.free[layout.nodes[t]].sum())
            best_tc = _own_retype(best_tc, thr, job_id, (g, n), t, idle)
            placed.clear()
            for jid, a in by_type.get(g, []) if spec.shrink_others else []:
                if idle < a.gpus or thr(jid, t, a.gpus) <= 0:
                    continue
                if a.gpus not in placed:
                    placed[a.gpus] = place(snap.free, layout.nodes[t], layout.per_node[t], a.gpus, spec.relaxed)
                hit = placed[a.gpus]
                if hit is None:
                    continue
                new = Alloc(t, a.gpus, hit[0], hit[1])
                gain = believed(thr, jid, new, pen) - believed(thr, jid, a, pen)
                if best_tc is None or gain > best_tc[0]:
                    best_tc = (gain, jid, new, cfg)
        if best_tc is not None:
            tc_gain, tc_job, tc_alloc, cfg2 = best_tc
            if tc_job is None or tc_alloc is None:
                out.append((snap, cfg2, tc_gain if spec.own_delta else 0.0))
            else:
                s2 = snap.copy()
                s2.move(tc_job, tc_alloc)
                out.append((s2, cfg, tc_gain))
    return out


def _first(member: tuple[int, str, Alloc]) -> int:
    return member[0]


_Best = tuple[float, int, str, Alloc | None]
"""(value, position in the snapshot, job id, payload): a bucket's answer."""


def _earlier_max(a: _Best | None, b: _Best | None) -> _Best | None:
    """The higher value, on a tie the job earlier in the snapshot: what a scan in snapshot order
    that replaces only on `>` keeps."""
    if a is None:
        return b
    if b is None:
        return a
    return b if b[0] > a[0] or (b[0] == a[0] and b[1] < a[1]) else a


class _Bucket:
    """The movable jobs of one (GPU type, count) in snapshot order, with the downgrade search's
    answers over them. The answers depend on these jobs alone: every snapshot holding this bucket
    shares them, and a bucket one job away from this one derives them (`without`, `with_`)."""

    __slots__ = ("answers", "gpu_type", "members")

    def __init__(self, gpu_type: str, members: tuple[tuple[int, str, Alloc], ...],
                 answers: dict[tuple[str, int] | None, _Best | None] | None = None) -> None:
        self.gpu_type = gpu_type
        self.members = members  # (position in the snapshot's allocs, job id, allocation), by position
        self.answers: dict[tuple[str, int] | None, _Best | None] = answers or {}

    def _answer(self, ix: _Index, key: tuple[str, int] | None, member: tuple[int, str, Alloc]) -> _Best | None:
        """One job's candidate: halving it (key None; payload: the half) or moving it to type
        key[0] at key[1] halvings (its believed gain)."""
        pos, jid, a = member
        if key is None:
            if ix.thr(jid, self.gpu_type, a.gpus // 2) > 0:
                loss, half = ix.halved(jid, a)
                return (loss, pos, jid, half)
            return None
        t, halvings = key
        v = ix.thr(jid, t, a.gpus)
        if v <= 0:
            return None
        return (v * ix.spec.penalty**halvings - believed(ix.thr, jid, a, ix.spec.penalty), pos, jid, None)

    def best(self, ix: _Index, key: tuple[str, int] | None) -> _Best | None:
        """The first job in snapshot order with the highest candidate value, None if no candidate."""
        if key not in self.answers:
            out: _Best | None = None
            for m in self.members:
                cand = self._answer(ix, key, m)
                if cand is not None and (out is None or cand[0] > out[0]):
                    out = cand
            self.answers[key] = out
        return self.answers[key]

    def without(self, job_id: str) -> _Bucket | None:
        """This bucket less one job; an answer that was not that job stays the answer."""
        rest = tuple(m for m in self.members if m[1] != job_id)
        if not rest:
            return None
        return _Bucket(self.gpu_type, rest, {k: v for k, v in self.answers.items() if v is None or v[2] != job_id})

    def with_(self, ix: _Index, member: tuple[int, str, Alloc]) -> _Bucket:
        """This bucket plus one job at its snapshot position; each known answer against the new job's."""
        k = bisect.bisect_left(self.members, member[0], key=_first)
        members = (*self.members[:k], member, *self.members[k:])
        return _Bucket(self.gpu_type, members, {key: _earlier_max(v, self._answer(ix, key, member))
                                                for key, v in self.answers.items()})


@dataclass(frozen=True)
class _Index:
    """A snapshot's movable jobs grouped by type and count, for one (thr, layout, spec, movable).
    Built from the snapshot once; a move derives the next index by rebuilding only the one or two
    buckets it touched (`moved`)."""

    movable: frozenset[str]
    thr: Believed
    layout: Layout
    spec: SearchSpec
    position: Mapping[str, int]
    groups: Mapping[str, Mapping[int, _Bucket]]
    halves: dict[tuple[str, Alloc], tuple[float, Alloc]]  # a halving's loss depends only on the job

    def fits(self, thr: Believed, layout: Layout, spec: SearchSpec, movable: frozenset[str]) -> bool:
        return self.layout is layout and self.thr == thr and self.spec == spec and self.movable == movable

    @staticmethod
    def build(snap: Snapshot, thr: Believed, layout: Layout, spec: SearchSpec, movable: frozenset[str]) -> _Index:
        position: dict[str, int] = {}
        groups: dict[str, dict[int, list[tuple[int, str, Alloc]]]] = {}
        for i, (jid, a) in enumerate(snap.allocs.items()):
            if jid in movable:
                position[jid] = i
                groups.setdefault(a.gpu_type, {}).setdefault(a.gpus, []).append((i, jid, a))
        return _Index(movable, thr, layout, spec, position,
                      {t: {c: _Bucket(t, tuple(m)) for c, m in by.items()} for t, by in groups.items()}, {})

    def moved(self, job_id: str, old: Alloc, new: Alloc) -> _Index:
        groups = dict(self.groups)
        src = dict(groups[old.gpu_type])
        rest = src[old.gpus].without(job_id)
        if rest is None:
            del src[old.gpus]
        else:
            src[old.gpus] = rest
        groups[old.gpu_type] = src
        dst = dict(groups.get(new.gpu_type, {}))
        member = (self.position[job_id], job_id, new)
        dst[new.gpus] = dst[new.gpus].with_(self, member) if new.gpus in dst else _Bucket(new.gpu_type, (member,))
        groups[new.gpu_type] = dst
        return _Index(self.movable, self.thr, self.layout, self.spec, self.position, groups, self.halves)

    def halved(self, job_id: str, alloc: Alloc) -> tuple[float, Alloc]:
        key = (job_id, alloc)
        if key not in self.halves:
            half = _halve(alloc, self.layout.per_node[alloc.gpu_type])
            pen = self.spec.penalty
            self.halves[key] = (believed(self.thr, job_id, half, pen) - believed(self.thr, job_id, alloc, pen), half)
        return self.halves[key]


def _index(snap: Snapshot, thr: Believed, layout: Layout, spec: SearchSpec, movable: frozenset[str]) -> _Index:
    """The snapshot's index with its pending moves applied, built here if it has none for these arguments."""
    if snap.index is None or not snap.index.fits(thr, layout, spec, movable):
        snap.index, snap.pending = _Index.build(snap, thr, layout, spec, movable), ()
    ix = snap.index
    for job_id, old, new in snap.pending:
        ix = ix.moved(job_id, old, new)
    snap.index, snap.pending = ix, ()
    return ix


def _downgrade_ops(
    snap: Snapshot, job_id: str, cfg: Config, thr: Believed, layout: Layout, spec: SearchSpec, ix: _Index,
) -> list[tuple[Snapshot, Config, float]]:
    """`_downgrade_ops_scan` answered per (type, count) bucket of `ix` (the snapshot's index):
    the same operations, ties to the job earlier in the snapshot as the scan keeps them."""
    g, n = cfg
    out: list[tuple[Snapshot, Config, float]] = []
    groups: Mapping[str, Mapping[int, _Bucket]] = ix.groups if spec.shrink_others else {}
    if spec.allow_count_change:
        for t in layout.types:
            by = groups.get(t, {})
            top = max([*by, n] if t == g else by, default=0)
            best: tuple[float, str | None, Alloc | None] | None = None
            if t == g and n > 1 and n >= top / 2 and thr(job_id, g, n // 2) > 0:
                best = (thr(job_id, g, n // 2) - thr(job_id, g, n), None, None)  # the new job itself
            least: _Best | None = None
            for c, bucket in by.items():
                if c > 1 and c >= top / 2:
                    least = _earlier_max(least, bucket.best(ix, None))
            if least is not None and (best is None or least[0] > best[0]):
                best = (least[0], least[2], least[3])
            if best is None:
                continue
            loss, jid, half = best
            if jid is None or half is None:
                out.append((snap, (g, n // 2), loss if spec.own_delta else 0.0))
            else:
                s2 = snap.copy()
                s2.move(jid, half)
                out.append((s2, cfg, loss))
    if spec.allow_type_change:
        best_tc: _TypeChange | None = None
        on_g = groups.get(g, {})
        for t in layout.types:
            if t == g:
                continue
            idle = int(snap.free[layout.nodes[t]].sum())
            best_tc = _own_retype(best_tc, thr, job_id, (g, n), t, idle)
            top_move: _Best | None = None
            top_hit: tuple[Placement, int] | None = None
            for c, bucket in on_g.items():
                if idle < c:
                    continue
                hit = snap.place(layout, t, c, spec.relaxed)
                if hit is None:
                    continue
                cand = bucket.best(ix, (t, hit[1]))
                if cand is not None and _earlier_max(top_move, cand) is cand:
                    top_move, top_hit = cand, hit
            if top_move is not None and top_hit is not None and (best_tc is None or top_move[0] > best_tc[0]):
                a = snap.allocs[top_move[2]]
                best_tc = (top_move[0], top_move[2], Alloc(t, a.gpus, top_hit[0], top_hit[1]), cfg)
        if best_tc is not None:
            tc_gain, tc_job, tc_alloc, cfg2 = best_tc
            if tc_job is None or tc_alloc is None:
                out.append((snap, cfg2, tc_gain if spec.own_delta else 0.0))
            else:
                s2 = snap.copy()
                s2.move(tc_job, tc_alloc)
                out.append((s2, cfg, tc_gain))
    return out


def scale_up(
    snap: Snapshot,
    thr: Believed,
    layout: Layout,
    spec: SearchSpec,
    movable: frozenset[str],
    steps: int,
    worth: Callable[[str, float], bool] | None = None,
) -> Snapshot:
    """§3.5 SCALE_UP: up to `steps` times apply the single best positive gain, a type change to an
    idle buddy placement or a doubling on the job's own type. `worth(job, gain)` is the optional
    hysteresis (§7.7)."""
    pen = spec.penalty
    for _ in range(steps):
        best: tuple[float, str, Alloc] | None = None
        for jid in sorted(movable):  # a fixed order: ties must not depend on string hashing
            a = snap.allocs[jid]
            cur = believed(thr, jid, a, pen)
            if spec.allow_type_change:
                for t in layout.types:
                    if t == a.gpu_type or thr(jid, t, a.gpus) <= 0:
                        continue
                    hit = snap.place(layout, t, a.gpus, relaxed=False)
                    if hit is not None:
                        gain = thr(jid, t, a.gpus) - cur
                        if gain > 0 and (best is None or gain > best[0]):
                            best = (gain, jid, Alloc(t, a.gpus, hit[0], 0))
            if spec.allow_count_change and a.gpus * 2 <= spec.max_gpus and thr(jid, a.gpu_type, 2 * a.gpus) > 0:
                free = snap.free.copy()
                for node, k in a.placement:
                    free[node] += k
                nodes = layout.nodes[a.gpu_type]
                hit = place(free, nodes, layout.per_node[a.gpu_type], 2 * a.gpus, relaxed=False)
                if hit is not None:
                    gain = thr(jid, a.gpu_type, 2 * a.gpus) - cur
                    if gain > 0 and (best is None or gain > best[0]):
                        best = (gain, jid, Alloc(a.gpu_type, 2 * a.gpus, hit[0], 0))
        if best is None or (worth is not None and not worth(best[1], best[0])):
            break
        snap = snap.copy()
        snap.move(best[1], best[2])
    return snap
