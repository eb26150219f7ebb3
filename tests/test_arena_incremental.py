"""Arena's round keeps its search state across nodes and searches (issue 26 item 4): the indexed
downgrade search must plan exactly as the reference scan of every running job, and a whole run
must decide exactly as a run with the reference search."""

from __future__ import annotations

import numpy as np
import pytest

from schedmate.schedulers.arena.config import ABLATIONS, BASELINES, ArenaConfig
from schedmate.schedulers.arena.experiment import decision_time
from schedmate.schedulers.arena.search import (
    Alloc,
    LaunchPlan,
    Layout,
    SearchSpec,
    Snapshot,
    _Index,
    _index,
    launch_search,
    place,
)
from schedmate.schedulers.arena.workload import H

TYPES = {"A": 4, "B": 2, "C": 8}  # GPUs per node
COUNTS = (1, 2, 4, 8, 16)


def _world(seed: int) -> tuple[Snapshot, Layout, dict[tuple[str, str, int], float]]:
    """A random cluster of three types, running jobs placed by buddy placement until it is full,
    and believed throughputs from a small set of values (ties are common, zeros too)."""
    rng = np.random.default_rng(seed)
    nodes: dict[str, list[int]] = {}
    sizes: list[int] = []
    for t, k in TYPES.items():
        n = int(rng.integers(2, 6))
        nodes[t] = list(range(len(sizes), len(sizes) + n))
        sizes += [k] * n
    layout = Layout({t: np.array(v) for t, v in nodes.items()}, dict(TYPES))
    free = np.array(sizes)
    allocs: dict[str, Alloc] = {}
    for i in range(60):
        t = str(rng.choice(list(TYPES)))
        c = int(rng.choice(COUNTS[:4]))
        hit = place(free, layout.nodes[t], TYPES[t], c, relaxed=True)
        if hit is None:
            continue
        a = Alloc(t, c, hit[0], hit[1])
        for node, k in a.placement:
            free[node] -= k
        allocs[f"j{i:02d}"] = a
    values = (0.0, 1.0, 2.0, 2.0, 3.0, 4.0)
    jobs = [*allocs, "new"]
    thr = {(j, t, c): float(rng.choice(values)) * c ** 0.5 for j in jobs for t in TYPES for c in COUNTS}
    return Snapshot(free, allocs), layout, thr


def _same(a: LaunchPlan | None, b: LaunchPlan | None) -> bool:
    if a is None or b is None:
        return a is b
    return (a.alloc == b.alloc and a.gain == b.gain and a.snapshot.allocs == b.snapshot.allocs
            and list(a.snapshot.allocs) == list(b.snapshot.allocs) and a.snapshot.changed == b.snapshot.changed
            and a.snapshot.free.tolist() == b.snapshot.free.tolist())


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("spec", [
    SearchSpec(3, True, True, True, True, 0.9),
    SearchSpec(1, True, True, True, True, 0.9),
    SearchSpec(3, False, True, True, True, 0.9),  # no type change (noHetero)
    SearchSpec(3, True, False, True, False, 0.8),  # no count change (noElastic), strict locality
    SearchSpec(3, True, True, True, True, 0.9, own_delta=True),  # the new job's own change counted (Arena's default)
])
def test_the_indexed_search_plans_as_the_reference_scan(seed, spec):
    snap, layout, table = _world(seed)

    def thr(j: str, g: str, n: int) -> float:
        return table.get((j, g, n), 0.0)

    movable = frozenset(list(snap.allocs)[::2] + list(snap.allocs)[1::3])
    ref, inc = snap.copy(), snap.copy()
    for t in TYPES:  # a round: several launches; the snapshot and its index carry over a success
        for n in (1, 2, 4, 8):
            a = launch_search(ref, "new", (t, n), thr, layout, spec, movable, incremental=False)
            b = launch_search(inc, "new", (t, n), thr, layout, spec, movable, incremental=True)
            assert _same(a, b), (t, n)
            if a is not None and b is not None:
                ref, inc = a.snapshot, b.snapshot
                ref.add(f"new-{t}{n}", a.alloc)
                inc.add(f"new-{t}{n}", b.alloc)


def test_a_derived_snapshot_carries_the_index_a_fresh_build_gives():
    snap, layout, table = _world(3)

    def thr(j: str, g: str, n: int) -> float:
        return table.get((j, g, n), 0.0)

    spec = SearchSpec(3, True, True, True, True, 0.9)
    movable = frozenset(snap.allocs)
    ix = _Index.build(snap, thr, layout, spec, movable)
    snap.index = ix
    for by in ix.groups.values():  # answers known before the move must be derived, not dropped
        for bucket in by.values():
            bucket.best(ix, None)
    jid, a = next((j, a) for j, a in snap.allocs.items() if a.gpus > 1)
    half = Alloc(a.gpu_type, a.gpus // 2, a.placement[:1] if len(a.placement) > 1 else ((a.placement[0][0], a.gpus // 2),))
    moved = snap.copy()
    moved.move(jid, half)
    derived = _index(moved, thr, layout, spec, movable)
    assert snap.index is ix and derived is not ix  # the parent keeps its own index
    fresh = _Index.build(moved, thr, layout, spec, movable)
    got = {t: {c: b.members for c, b in by.items()} for t, by in derived.groups.items() if by}
    want = {t: {c: b.members for c, b in by.items()} for t, by in fresh.groups.items()}
    assert got == want
    for t, by in fresh.groups.items():
        for c, bucket in by.items():
            assert derived.groups[t][c].best(derived, None) == bucket.best(fresh, None)


@pytest.mark.parametrize("arm", ["arena", "arena-d1", "arena-nohetero", "sia"])
def test_an_incremental_run_decides_as_a_from_scratch_run(arm):
    """Every decision of a 64-GPU run (R2 mix, §6 workload), with its time, is the same whether
    the search keeps its index or scans every running job at every node."""
    config = {**BASELINES, **ABLATIONS, "arena": ArenaConfig()}[arm]
    inc = decision_time(64, horizon_s=1.5 * H, config=config)
    ref = decision_time(64, horizon_s=1.5 * H, config=config, incremental=False)
    assert inc["decisions"] > 20
    assert inc["decisions_sha256"] == ref["decisions_sha256"]
