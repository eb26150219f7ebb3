"""Arena's §5.1 baselines as the spec and the artifact describe them: FCFS blocks per GPU type,
Gavel assigns types with its max-sum-throughput ILP (counts fixed, few retypes per admission),
EF-LS re-plans its type by minimum shares and progressive filling."""

from __future__ import annotations

import numpy as np

from schedmate.schedulers.arena import ATTR, Arena, LMJob
from schedmate.schedulers.arena.elasticflow import EFJob, progressive_filling
from schedmate.schedulers.arena.gavel import GavelJob, assign_types
from schedmate.schedulers.arena.hardware import build_cluster
from schedmate.schedulers.arena.search import Alloc, Snapshot
from schedmate.schedulers.arena.sim import run_costed
from schedmate.schedulers.engine import SimConfig
from schedmate.schedulers.job import JobSpec


def test_gavel_ilp_puts_the_job_that_gains_most_on_the_fast_type():
    jobs = [GavelJob("small-gain", 2, None, {"fast": 11.0, "slow": 10.0}),
            GavelJob("big-gain", 2, None, {"fast": 30.0, "slow": 10.0})]
    assert assign_types(jobs, {"fast": 2, "slow": 2}) == {"small-gain": "slow", "big-gain": "fast"}


def test_gavel_ilp_retypes_at_most_max_moves_running_jobs():
    running = [GavelJob(f"r{i}", 1, "slow", {"fast": 5.0, "slow": 1.0}) for i in range(3)]
    new = GavelJob("new", 1, None, {"slow": 1.0})
    types = assign_types([*running, new], {"fast": 4, "slow": 4}, max_moves=1)
    assert types is not None and sum(types[f"r{i}"] == "fast" for i in range(3)) == 1
    assert types["new"] == "slow"


def test_gavel_ilp_has_no_answer_when_the_counts_do_not_fit():
    running = [GavelJob("r", 2, "only", {"only": 1.0})]
    assert assign_types([*running, GavelJob("new", 1, None, {"only": 1.0})], {"only": 2}) is None
    assert assign_types([GavelJob("new", 1, None, {})], {"only": 2}) is None  # no type it may use


def _lm(gtype: str, n: int) -> dict[str, object]:
    return {ATTR: LMJob("gpt", 0.76, 128, gtype, n, 100)}


def test_fcfs_blocks_only_the_blocked_jobs_gpu_type():
    # A40: one 2-GPU node, a holds 1 GPU. b (2 A40 GPUs) cannot start; d (1 A40 GPU) would fit but
    # arrived after b, so it waits in arrival order; c asks for A10 and starts at the first tick.
    cluster = build_cluster(((1, "A40"), (1, "A10")))
    jobs = [JobSpec("a", 0.0, 1, 3000.0, attributes=_lm("A40", 1)),
            JobSpec("b", 10.0, 2, 500.0, attributes=_lm("A40", 2)),
            JobSpec("c", 20.0, 1, 500.0, attributes=_lm("A10", 1)),
            JobSpec("d", 30.0, 1, 500.0, attributes=_lm("A40", 1))]
    policy = Arena(variant="fcfs")
    res = run_costed(jobs, cluster, policy, policy.downtime, SimConfig())
    by = {j.job_id: j for j in res.jobs}
    assert by["a"].first_start == by["c"].first_start == 300.0
    assert by["b"].first_start >= by["a"].end_time  # rigid: waits for its two GPUs
    assert by["d"].first_start >= by["b"].first_start  # never ahead of b on b's type
    assert all(j.phase.value == "completed" for j in res.jobs)


def test_gavel_launches_on_the_type_its_ilp_prefers_not_the_requested_one():
    cluster = build_cluster(((1, "A100"), (1, "A10")))
    jobs = [JobSpec("j", 0.0, 1, 1000.0, attributes=_lm("A10", 1))]
    policy = Arena(variant="gavel")
    res = run_costed(jobs, cluster, policy, policy.downtime, SimConfig())
    table = policy.info["j"].table
    assert table.dp[("A100", 1)] > table.dp[("A10", 1)] > 0  # DP believes A100 is faster
    # speeds are relative to the request (A10): above 1 only on the A100
    assert max(speed for _, speed, _ in res.jobs[0].speed_log) > 1.0
    assert policy.stats.launches == 1 and policy.config.gavel_ilp and policy.config.steps_up == 0


def test_progressive_filling_gives_minimum_shares_then_doubles_the_largest_gain():
    jobs = [EFJob("flat", {1: 10.0, 2: 11.0, 4: 11.5}), EFJob("steep", {2: 10.0, 4: 19.0, 8: 30.0})]
    # minimum shares 1 + 2; with 2 GPUs left the larger gain wins: steep 2 -> 4 (+9), not flat 1 -> 2 (+1)
    assert progressive_filling(jobs, 5) == {"flat": 1, "steep": 4}
    # 8 GPUs: then steep 4 -> 8 needs 4 of the 3 left, so flat doubles twice (+1, +0.5)
    assert progressive_filling(jobs, 8) == {"flat": 4, "steep": 4}
    assert progressive_filling(jobs, 2) is None  # the minimum shares alone need 3 GPUs
    assert progressive_filling([EFJob("x", {})], 8) is None


def test_ef_ls_shrinks_a_running_job_to_admit_a_new_one_of_its_type():
    # one 2-GPU A40 node: a grows to both GPUs while alone; b arrives and a is halved to admit it
    cluster = build_cluster(((1, "A40"),))
    jobs = [JobSpec("a", 0.0, 1, 20000.0, attributes=_lm("A40", 1)),
            JobSpec("b", 1000.0, 1, 500.0, attributes=_lm("A40", 1))]
    policy = Arena(variant="ef-ls")
    res = run_costed(jobs, cluster, policy, policy.downtime, SimConfig())
    by = {j.job_id: j for j in res.jobs}
    assert by["a"].first_start == 300.0 and by["b"].first_start < by["a"].end_time
    assert policy.info["a"].reschedules >= 1 and all(j.phase.value == "completed" for j in res.jobs)


def test_a_job_moved_twice_in_one_round_is_one_change():
    # two launches in one round may both re-plan a running job: it must reach the engine once
    snap = Snapshot(np.array([1, 2]), {"a": Alloc("A40", 1, ((0, 1),))})  # nodes of 2 GPUs
    snap.move("a", Alloc("A40", 2, ((1, 2),)))
    snap.move("a", Alloc("A40", 1, ((0, 1),)))
    assert snap.changed == ["a"] and snap.free.tolist() == [1, 2]
