"""Suika's shared EXPAND_AND_BALANCE memo (issue 26): sharing answers between jobs by the shape of
their GPUs must never change an answer, only how often it is computed."""

from __future__ import annotations

import random

from schedmate.schedulers.suika.model import CATALOGUE, Hardware, coeffs_for, default_plan, memory_cap, peak_memory
from schedmate.schedulers.suika.planner import PlanSpace, best_expansions, shape_key

HW = Hardware(nodes_per_rack=2)  # small racks: cross-rack links appear in 64 GPUs


def _case(name: str, first_node: int):
    m = CATALOGUE[name]
    c = coeffs_for(m, HW)
    d = default_plan(m, [first_node * 8 + i for i in range(m.gpus)], c, HW)
    assert d is not None
    return c, d, memory_cap(c, HW, peak_memory(d, c))


def test_shared_memo_gives_the_answers_of_no_memo():
    rng = random.Random(0)
    shapes: dict = {}
    for name in ("GPT2-1.3B", "LLaMA2-7B", "Qwen2-7B", "GPT2-15B", "Qwen2-0.5B"):
        for first in (0, 2, 5):
            c, d, cap = _case(name, first)
            held = set(d.gpus)
            free = sorted(rng.sample([g for g in range(64) if g not in held], 24))
            for space in (PlanSpace.SUIKA, PlanSpace.DP):
                plain = best_expansions(d, free, c, HW, cap, space=space)
                shared = best_expansions(d, free, c, HW, cap, space=space, shapes=shapes, memo={})
                assert [(x.added, x.plan.signature, x.throughput) for x in shared] == \
                       [(x.added, x.plan.signature, x.throughput) for x in plain]
    assert shapes  # the memo was used (and hit across jobs: several jobs share a model)


def test_shape_key_renames_nodes_but_keeps_rack_structure():
    _, a, _ = _case("LLaMA2-7B", 0)  # node 0, rack 0
    _, b, _ = _case("LLaMA2-7B", 2)  # node 2, rack 1
    assert shape_key(a, [8, 9], HW) == shape_key(b, [24, 25], HW)  # +1 node in the same rack
    assert shape_key(a, [8, 9], HW) != shape_key(a, [16, 17], HW)  # same rack vs another rack
    assert shape_key(a, [8, 9], HW) != shape_key(a, [8, 16], HW)  # one node vs two
