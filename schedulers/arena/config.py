"""Arena's options and overhead constants (arena.md §3.7, §4, §7), one typed config per policy arm.

`ArenaConfig` defaults are the spec's chosen interpretation; each §7 ambiguity's alternative is a
field. The baselines of §5.1 are the same round-driven scheduler with other views and mechanisms
(`baseline_config`), so an arm differs only in what the spec says differs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

DELTA_S = 300.0  # scheduling interval Δ [P]
T_CKPT_S = 120.0  # checkpoint-resume when moving a running job [I]
PRUNE_SPEEDUP = 5.48  # pruned AP search vs full [P]
T_PROF_S = 8.5 * 60  # Arena profiling at N = 16, M = 4 [P]
DP_PROFILE_PER_CONFIG_S = 30.0  # ElasticFlow / Gavel full-GPU DP profiling per (type, count) [A]
AGE_S = 3600.0  # aging threshold [I]


class View(str, Enum):
    """What a policy believes a job's throughput is (§2.3 "scheduler's view")."""

    AP = "ap"  # Arena: κ·Thr_AP·(1+ε), proxy-plan optimality and profiler error
    AP_EXACT = "ap_exact"  # oracle AP (tests)
    DP = "dp"  # static DP: Thr_DP, infeasible where DP runs out of memory
    LINEAR = "linear"  # Sia's bootstrap: n·Thr_DP(g, smallest DP-feasible count)/that count


class Profiling(str, Enum):
    """How a new job's profiling occupies the cluster (§7.11)."""

    HOLD_GPU = "hold_gpu"  # 1 idle GPU held for T_prof (the sensitivity arm "arena-profhold")
    DELAY = "delay"  # pure delay, no schedulable GPU held (default: README "profiling")


def t_search_full(n: int) -> float:
    """Full AP search on n GPUs (baselines) [A]."""
    return min(150.0 * n, 600.0)


def t_search_pruned(n: int) -> float:
    """Arena's pruned search (§3.6): the full search / 5.48 [I], ≈ 27·n s, at most ≈ 110 s."""
    return t_search_full(n) / PRUNE_SPEEDUP


def t_search_artifact(n: int) -> float:
    """The artifact's Arena search cost: 10 s per GPU, capped at 40 s (§7.10 alternative)."""
    return min(10.0 * n, 40.0)


@dataclass(frozen=True)
class ArenaConfig:
    """One arm. Defaults: Arena with the §4 parameters and the §7 chosen readings."""

    name: str = "arena"
    view: View = View.AP
    depth: int = 3  # D
    scale_up_steps: int | None = None  # U; None = D (§7.4); 10 is the artifact's
    queues: int = 3  # P
    age_s: float = AGE_S
    interval_s: float = DELTA_S
    allow_type_change: bool = True  # heterogeneity
    allow_count_change: bool = True  # elasticity
    shrink_others: bool = True  # the downgrade search may shrink / retype running jobs
    backfill: bool = True  # later jobs of a blocked queue may launch (opportunistic)
    preempt_opportunistic: bool = True  # §7.1: a blocker may suspend backfilled jobs
    revoke_all_at_once: bool = False  # ... True: its search sees all their GPUs free at once (§3.5 literal, README)
    strict_lower_queues: bool = False  # §7.2 alternative: skip all queues below the blocker
    hysteresis: bool = False  # §7.7: scale-up only if gain·remaining > Thr·downtime
    grow_new_jobs: bool = True  # SCALE_UP may grow / retype the jobs launched in the same round, before they start (README)
    own_delta: bool = True  # the new job's own halving / retype counts in its plan's gain, as the artifact counts it (README)
    relaxed_locality: bool = True
    locality_penalty: float = 0.9  # per halving of GPUs per node [A]
    # execution and overheads
    exec_factor: float = 0.962  # pruned AP search reaches 96.2% of Alpa; 0.934 deploys the proxy
    pruned_search: bool = True  # False: deploy the proxy plan directly, no search time (exec 0.934)
    artifact_search_cost: bool = False  # §7.10: min(10·n, 40) s instead of full/5.48
    full_search_cost: bool = False  # baselines: T_search_full
    ckpt_s: float = T_CKPT_S
    profiling: Profiling = Profiling.DELAY
    profile_s: float = T_PROF_S  # scaled by (#types)/4 at run time
    profile_per_config_s: float = 0.0  # baselines: prepended DP profiling, per (type, count) or type
    profile_per_type_only: bool = False  # Sia: 1-GPU bootstrap per type
    fcfs: bool = False  # rigid request, arrival order, no scale-up
    block_per_type: bool = False  # a job that cannot start blocks later jobs of its requested GPU type only [A]
    block_new_jobs: bool = True  # ... new jobs included (FCFS); False: a new job gets one try first (Gavel) [A]
    gavel_ilp: bool = False  # Gavel: each launch re-solves the max-sum-throughput type ILP (`gavel.py`)
    ef_filling: bool = False  # ElasticFlow: each launch re-plans its type by progressive filling (`elasticflow.py`)
    ef_keep_in_place: bool = True  # ... a job whose count is unchanged keeps its GPUs (False: the artifact's repack)
    seed: int = 0  # κ, ε draws

    @property
    def steps_up(self) -> int:
        return self.depth if self.scale_up_steps is None else self.scale_up_steps

    def search_cost(self, n: int) -> float:
        if self.full_search_cost:
            return t_search_full(n)
        if not self.pruned_search:
            return 0.0
        return t_search_artifact(n) if self.artifact_search_cost else t_search_pruned(n)

    def with_(self, **changes: Any) -> ArenaConfig:
        return replace(self, **changes)


def _baseline(name: str, view: View, **options: Any) -> ArenaConfig:
    """A §5.1 baseline on Arena's driver: executes with AP at full speed (the paper runs baselines
    with AP), pays the full AP search on every (re)start, never suspends an admitted job, and its
    profiling (if any) is a prepended delay. `name` is "arena-" + the spec's name (registry rule)."""
    base = ArenaConfig(f"arena-{name}", view, exec_factor=1.0, full_search_cost=True, preempt_opportunistic=False,
                       profiling=Profiling.DELAY, profile_s=0.0, own_delta=False, grow_new_jobs=False)
    return replace(base, **options)


BASELINES: dict[str, ArenaConfig] = {
    # rigid request in arrival order (§5.1), no profiling; a job that does not fit blocks the later
    # jobs of its own GPU type, not the other types' (the artifact's baselines/fcfs_sched.py)
    "fcfs": _baseline("fcfs", View.DP, fcfs=True, allow_type_change=False, allow_count_change=False,
                      shrink_others=False, backfill=False, block_per_type=True),
    # heterogeneity-aware max-sum-throughput (§5.1): each launch solves the type ILP over the running
    # jobs and the new one, counts fixed, <= 3 running jobs retyped (each pays T_search_full + T_ckpt);
    # no other scale-up (the artifact's gavel_sched.py); DP profiling
    "gavel": _baseline("gavel", View.DP, allow_count_change=False, profile_per_config_s=DP_PROFILE_PER_CONFIG_S,
                       gavel_ilp=True, scale_up_steps=0),
    # ElasticFlow with loosened deadlines: elastic count on one type (§5.1); each launch re-plans the
    # type: minimum shares, then progressive filling, no other scale-up (the artifact's
    # elasticflow_sched.py); DP profiling
    "ef-ls": _baseline("ef-ls", View.DP, allow_type_change=False, profile_per_config_s=DP_PROFILE_PER_CONFIG_S,
                       ef_filling=True, scale_up_steps=0),
    # Sia: count and type from a linear DP bootstrap (1 GPU per type)
    "sia": _baseline("sia", View.LINEAR, profile_per_config_s=DP_PROFILE_PER_CONFIG_S, profile_per_type_only=True),
}
ABLATIONS: dict[str, ArenaConfig] = {
    "arena": ArenaConfig(),
    "arena-dp": ArenaConfig("arena-dp", View.DP),
    "arena-nohetero": ArenaConfig("arena-nohetero", allow_type_change=False),
    "arena-noelastic": ArenaConfig("arena-noelastic", allow_count_change=False),
    "arena-d1": ArenaConfig("arena-d1", depth=1),
}

SENSITIVITY: dict[str, ArenaConfig] = {
    # §7.10: conclusions should not depend on the checkpoint-resume cost
    "arena-ckpt0": ArenaConfig("arena-ckpt0", ckpt_s=0.0),
    "arena-ckpt300": ArenaConfig("arena-ckpt300", ckpt_s=300.0),
    # §7.1 and §7.11 alternatives
    "arena-norevoke": ArenaConfig("arena-norevoke", preempt_opportunistic=False),
    "arena-profhold": ArenaConfig("arena-profhold", profiling=Profiling.HOLD_GPU),
    # §7.4 alternative: the artifact's 10 scale-up steps, at D = 1
    "arena-d1-u10": ArenaConfig("arena-d1-u10", depth=1, scale_up_steps=10),
}
