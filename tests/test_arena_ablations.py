"""Arena's launch and scale-up as the artifact builds them (README, "Ablation constructions checked
against the artifact"): the new job's own halving or retype adds its ΔThr to the plan's gain, on
top of its throughput where it lands; and a job launched this round may grow before it starts."""

from __future__ import annotations

import numpy as np
import pytest

from schedmate.schedulers.arena.config import ABLATIONS, BASELINES, ArenaConfig
from schedmate.schedulers.arena.hardware import build_cluster
from schedmate.schedulers.arena.policy import ATTR, Arena, LMJob
from schedmate.schedulers.arena.search import Alloc, Layout, SearchSpec, Snapshot, launch_search
from schedmate.schedulers.arena.sim import run_costed
from schedmate.schedulers.engine import SimConfig
from schedmate.schedulers.job import JobSpec

# One 4-GPU node of A, all held by a running job X, and one idle 4-GPU node of B. The new job asks
# for 2 A GPUs: it fits only after X is halved (X loses 4) or on B (the new job loses 3).
BELIEF = {("new", "A", 2): 10.0, ("new", "B", 2): 7.0, ("X", "A", 4): 9.0, ("X", "A", 2): 5.0}


def _world() -> tuple[Snapshot, Layout]:
    layout = Layout({"A": np.array([0]), "B": np.array([1])}, {"A": 4, "B": 4})
    return Snapshot(np.array([0, 4]), {"X": Alloc("A", 4, ((0, 4),), 0)}), layout


def _thr(job: str, g: str, n: int) -> float:
    return BELIEF.get((job, g, n), 0.0)


# with its own loss counted, halving X (10 − 4 = 6) beats retyping the new job (7 + (7 − 10) = 4);
# without it, the new job on B (7) beats halving X (6)
@pytest.mark.parametrize("incremental", [True, False])
@pytest.mark.parametrize(("own_delta", "config", "gain", "x_after"), [
    (True, ("A", 2), 6.0, ("A", 2)),
    (False, ("B", 2), 7.0, ("A", 4)),
])
def test_the_new_jobs_own_change_counts_in_the_plans_gain_only_when_asked(incremental, own_delta, config, gain, x_after):
    snap, layout = _world()
    spec = SearchSpec(3, True, True, True, True, 0.9, own_delta=own_delta)
    plan = launch_search(snap, "new", ("A", 2), _thr, layout, spec, frozenset({"X"}), incremental)
    assert plan is not None
    assert plan.alloc.config == config and plan.gain == pytest.approx(gain)
    assert plan.snapshot.allocs["X"].config == x_after


def test_every_arena_arm_counts_the_new_jobs_own_change_and_no_baseline_does():
    assert all(Arena(c)._spec().own_delta and c.grow_new_jobs for c in ABLATIONS.values())
    assert not any(Arena(c)._spec().own_delta or c.grow_new_jobs for c in BASELINES.values())



@pytest.mark.parametrize("grow", [True, False])
def test_a_job_launched_this_round_grows_before_it_starts(grow):
    """SCALE_UP runs over every running job, the ones just launched too (§3.5; the artifact's
    `_fit_new_jobs` upgrades "mainly for new jobs"): on an idle 16-GPU node a 2-GPU request starts
    larger, with no restart. Without it, it starts at 2 GPUs and is resized a round later."""
    cluster = build_cluster(((1, "V100"),))
    jobs = [JobSpec("a", 0.0, 2, 20000.0, attributes={ATTR: LMJob("gpt", 0.76, 128, "V100", 2, 20000)})]
    policy = Arena(ArenaConfig(profile_s=0.0, grow_new_jobs=grow))
    job = run_costed(jobs, cluster, policy, policy.downtime, SimConfig()).jobs[0]
    first_speed = next(v for _, v, _ in job.speed_log if v > 0)  # 1.0 = the request's true speed
    assert job.phase.value == "completed"
    if grow:
        assert job.resizes == 0 and first_speed > 1.0
    else:
        assert job.resizes >= 1 and first_speed < 1.0
