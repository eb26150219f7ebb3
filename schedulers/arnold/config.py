"""Arnold settings (spec §3.6) as one typed object; defaults are the spec's chosen interpretation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "DEFAULT_ALPHA",
    "EPS",
    "GPUS_PER_NODE",
    "NODES_PER_LEAF",
    "LEAVES_PER_MINIPOD",
    "ArnoldConfig",
    "ArrivalMode",
    "JctMode",
    "MipForm",
    "Borrow",
    "SpreadMetric",
    "Unit",
]

GPUS_PER_NODE = 8
NODES_PER_LEAF = 4  # 32 down-ports / 8 NICs per node
LEAVES_PER_MINIPOD = 32  # 128 nodes (1024 GPUs) per minipod
DEFAULT_ALPHA = 0.3
EPS = 1e-3  # tie-break on sum(y) and T when alpha or beta is 0 (spec §7.5)

Unit = Literal["pp", "dp", "both", "auto"]
SpreadMetric = Literal["minipods", "eq3"]
JctMode = Literal["oracle", "noisy", "none"]
ArrivalMode = Literal["preempt", "wait"]
Borrow = Literal["predicted", "always", "never"]
MipForm = Literal["direct", "aggregated"]


@dataclass(frozen=True)
class ArnoldConfig:
    """Arnold knobs; each non-default value selects an alternative the spec names.

    - `unit`: scheduling unit of the MIP: "auto" (the spec's choice, §7.4: PP groups as in the
      paper, both units when alpha > 0.5), or always "pp", "dp" or "both" (keep the lower score).
    - `mip_form`: the direct MIP of §3.2 or its aggregated exact form (faster here, same optima).
    - `metric`: spread as |minipods| (reporting default) or the paper's Eq. 3 (0 when local).
    - `jct_mode`: how a borrower's completion is predicted (§3.5): oracle, noisy (RMSE 1.61 bins), none.
    - `jct_margin_s`: safety margin before an LPJ's start (0 = paper-literal "pred < arrival").
    - `borrow`: who may use a reserved zone: "predicted" (Arnold), "always" (best-effort
      reserve-and-pack), "never" (same as jct_mode="none").
    - `reserve`: plan and reserve at announcement; False plans only at the LPJ's start.
    - `arrival_mode`: zone occupants at the LPJ's start are preempted, or the LPJ waits.
    - `comm_scale`, `iota`: slowdown-model options (§4): exposed-share multiplier, interference.
    """

    unit: Unit = "auto"
    metric: SpreadMetric = "minipods"
    mip_time_limit_s: float = 10.0
    mip_node_limit: int | None = None
    mip_form: MipForm = "direct"
    sched_interval_s: float = 60.0
    jct_mode: JctMode = "noisy"
    jct_bin_s: float = 600.0
    jct_rmse_bins: float = 1.61
    jct_margin_s: float = 1800.0
    borrow: Borrow = "predicted"
    reserve: bool = True
    arrival_mode: ArrivalMode = "preempt"
    lpj_min_gpus: int = 64
    default_alpha: float = DEFAULT_ALPHA
    comm_scale: float = 1.0
    iota: float = 0.0  # multi-tenant interference share (§4; 0.05 when on)

    def __post_init__(self) -> None:
        if self.unit not in ("pp", "dp", "both", "auto"):
            raise ValueError(f"unit must be auto, pp, dp or both, got {self.unit!r}")
        if self.metric not in ("minipods", "eq3"):
            raise ValueError(f"metric must be minipods or eq3, got {self.metric!r}")
        if self.jct_mode not in ("oracle", "noisy", "none"):
            raise ValueError(f"jct_mode must be oracle, noisy or none, got {self.jct_mode!r}")
        if self.mip_form not in ("direct", "aggregated"):
            raise ValueError(f"mip_form must be direct or aggregated, got {self.mip_form!r}")
        if self.borrow not in ("predicted", "always", "never"):
            raise ValueError(f"borrow must be predicted, always or never, got {self.borrow!r}")
        if self.sched_interval_s <= 0 or self.jct_bin_s <= 0 or self.jct_margin_s < 0:
            raise ValueError("intervals must be positive and the margin non-negative")
        if not 0.0 <= self.default_alpha <= 1.0:
            raise ValueError("default_alpha must lie in [0, 1]")
