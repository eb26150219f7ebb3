"""Typed configuration of the Suika family (spec §3.10, §5.2, §6) and the named arms.

One `ElasticConfig` describes Suika, its ablation Suika-DP, the non-elastic FIFO baseline and the
Sia / Rubick proxies: they differ in plan space, grant rule, redeployment mechanism and timing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum

from .model import Hardware
from .planner import PlanSpace, SearchParams
from .redeploy import RedeployCosts


class GrantRule(str, Enum):
    """When an expansion is granted: Suika's B >= tau (= U^lambda); Sia-proxy's time saved over the
    remaining run > checkpoint-restart cost; Rubick-proxy's T_new * k_reconfig > T_old."""

    TAU = "tau"
    RESTART_BENEFIT = "restart_benefit"
    RECONFIG = "reconfig"
    SIA_ILP = "sia_ilp"  # Sia: every job's allocation re-solved by its ILP each round (`sia_round.SiaRound`)


class Redeploy(str, Enum):
    D2D = "d2d"  # Suika: init overlapped with training, then a device-to-device state move
    CHECKPOINT = "checkpoint"  # Sia / Rubick: stop, checkpoint, restart


class QueueOrder(str, Enum):
    FIFO = "fifo"
    SJF = "sjf"


class ULoad(str, Enum):
    """U in tau = U^lambda (§6 #11): running jobs' basic demand (chosen) or also queued jobs'."""

    RUNNING = "running"
    RUNNING_AND_QUEUED = "running_and_queued"


@dataclass(frozen=True)
class ElasticConfig:
    """Every knob of the Suika family; the defaults are Suika's (§3.10)."""

    name: str = "suika"
    space: PlanSpace = PlanSpace.SUIKA
    grant: GrantRule = GrantRule.TAU
    redeploy: Redeploy = Redeploy.D2D
    order: QueueOrder = QueueOrder.FIFO
    lambda_tau: float = 1.0
    u_load: ULoad = ULoad.RUNNING
    reclaim_below_tau: bool = True
    t_stable: float = 30.0  # warm-up after each (re)deployment before a job may expand (§6 #9)
    queue_patience: float = 0.0  # a waiting job reclaims expansions once it has waited this long
    round_interval: float | None = None  # None: event-driven; Sia-proxy: 60 s rounds
    k_reconfig: float = 0.97
    lazy_grants: bool = True  # recompute a job's best expansion only when it is stale at the top
    mem_reserve: float = 0.10
    search: SearchParams = field(default_factory=SearchParams)
    costs: RedeployCosts = field(default_factory=RedeployCosts)
    hardware: Hardware | None = None  # None: read from the cluster's topology
    sigma_err: float = 0.0  # true iteration time = model x (1 + N(0, sigma)) per (job, plan)


SUIKA = ElasticConfig()
SUIKA_DP = replace(SUIKA, name="suika-dp", space=PlanSpace.DP)
NON_ELASTIC = replace(SUIKA, name="nonelastic-fifo", space=PlanSpace.NONE, t_stable=0.0)
# What the stand-ins lack against their papers (issue 26; §5.2 Poisson fallback trace, quick, 3 seeds, Suika's
# mean JCT 995 s; bands 1.15-1.4):
# - Sia (`SIA`, `sia_round.SiaRound`; `schedmate experiment suika --quick`, columns stretch_sm,
#   stretch_l, preempts) now re-solves every job's allocation each 60 s round with
#   Sia's ILP (p = -0.5, lambda_n = 1.1), the reallocation factor and preserve-ckpt pinning, over
#   DP-only configurations of 1/2/4 GPUs or whole nodes in whole model replicas. It is *weaker*
#   in mean JCT than the proxy: 2,382 s (2.39x) vs 1,480 s (1.49x). Its p = -0.5 objective
#   favours jobs that scale from a small minimum: S/M jobs finish in 0.45-0.54x their default-plan
#   length, the 16-GPU L jobs take 5.1-7.1x (44-147 preemptions per seed, a checkpoint-restart each;
#   `SiaParams(at_least_basic=True)` keeps jobs at or above their basic demand: not an arm, one
#   ad-hoc quick run was about as slow, 2,336 s). The
#   criteria compare Suika with the stronger of the two (`experiment.SIA_ARMS`). Not modelled:
#   heterogeneity and batch-size adaptation (one GPU type, fixed global batch), profile-as-you-go
#   (baselines get the model from time 0, §2.5).
# - Sia-proxy (§5.2): only hands out idle GPUs, takes back only to admit a job. Adding Sia's
#   restart factor to its grant rule moved its mean JCT -0.9% (quick trace): not kept.
# - Rubick-proxy: Rubick's profiled multi-resource model (11.79% error in the Suika paper) is
#   replaced by Suika's exact one (a stronger baseline), its ZeRO / activation-recomputation knobs
#   are off (as in the Suika paper's configuration), its plans are symmetric 3D only, and a
#   running job is shrunk only for a job queued over k_queue = 200 s (no re-solve between
#   running jobs). Also missing: Rubick's 6-min per-job profiling (7 trial configurations) before
#   the first launch (the Suika paper excludes baseline profiling from JCT, so not charged), its
#   multi-resource dimensions (CPU, host memory: only GPUs contend here).
# - NonElastic-FIFO: the spec's baseline exactly (default plan, strict FIFO, best-fit placement,
#   never reconfigured). What the paper's run had that ours lacks is the trace: Philly's own job
#   lengths scaled to its GPU-time and down-sampled "in proportion to cluster size". The shared
#   file has no Philly GPU count, so lengths stay lognormal (median 20 min, sigma 1.2) scaled to
#   load 0.9. Only the submission times are Philly's (`workload.PHILLY`, busiest 8 h, thinned).
# Measured on the full §5.2 trace with Philly's busiest 8 h: 9/9 criteria pass with 5 seeds
# (NonElastic / Suika 1.62, Sia 1.32, Rubick 1.23, Suika-DP 1.08, utilization 1.42x; 3 seeds:
# 1.71, 1.32, 1.23, 1.09, 1.55x), from `run_suika_experiment(OUT, (0, 1, 2, 3, 4), True,
# trace=section52_trace())` (quick=True only skips the sweeps). `schedmate experiment suika --quick`
# runs that same trace (3 seeds, 20 s): 9/9. With the Poisson fallback (3 seeds), 7/9 (2.03, 1.42).
# The half trace (`--half-trace`: busiest 4 h of Philly, 60 jobs; what `--quick` ran before
# 2026-11-29) stays at 7/9 (2.00, 1.41; Poisson 2.04, 1.49): the spec's bands are for the 8-h trace.
SIA_PROXY = replace(
    SUIKA, name="sia-proxy", space=PlanSpace.DP, grant=GrantRule.RESTART_BENEFIT, redeploy=Redeploy.CHECKPOINT,
    t_stable=0.0, round_interval=60.0, reclaim_below_tau=False,
)
RUBICK_PROXY = replace(
    SUIKA, name="rubick-proxy", space=PlanSpace.SYMMETRIC, grant=GrantRule.RECONFIG, redeploy=Redeploy.CHECKPOINT,
    t_stable=0.0, queue_patience=200.0, reclaim_below_tau=False,
)
# Sia as its paper describes it (issue 26, `sia_round.py`): the whole cluster re-solved every
# 60 s by its ILP (p = -0.5, lambda_n = 1.1) over DP-only configurations with the reallocation
# factor; checkpoint-restart on every change. The spec's proxy above stays for reference.
SIA = replace(
    SUIKA, name="sia", space=PlanSpace.DP, grant=GrantRule.SIA_ILP, redeploy=Redeploy.CHECKPOINT,
    t_stable=0.0, round_interval=60.0, reclaim_below_tau=False,
)
ARMS: dict[str, ElasticConfig] = {c.name: c for c in (SUIKA, SUIKA_DP, SIA, SIA_PROXY, RUBICK_PROXY, NON_ELASTIC)}
