"""Placement-dependent step time (spec §4): slowdown of an LPJ relative to a one-minipod placement.

    g(m)      = 0 if m <= 1 else min(1, (m-1)/(M_SAT-1))
    b_coll(m) = 1 - L_COLL·g(m),  b_p2p(m) = 1 - L_P2P·g(m)
    slowdown  = (1 - e_dp - e_pp) + e_dp/b_coll(S_DP) + e_pp/b_p2p(S_PP)  [+ IOTA·g(max S)·busy]

e_dp and e_pp are the exposed shares of DP and PP traffic at local placement, calibrated so the
model reproduces the paper's 96-GPU experiments (dense: PP-aligned +2.3%; MoE +1.8%).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SlowdownModel", "calibrate_dense_e_pp"]


@dataclass(frozen=True)
class SlowdownModel:
    l_coll: float = 0.17  # max collective BusBw loss across minipods [paper]
    l_p2p: float = 0.70  # max send/recv BusBw loss [paper]
    m_sat: int = 4  # minipods at which the loss saturates [ours]
    iota: float = 0.0  # optional multi-tenant interference (0.05 when on) [derived]
    comm_scale: float = 1.0  # multiplies e_dp, e_pp for much larger models

    def __post_init__(self) -> None:
        if not (0 <= self.l_coll < 1 and 0 <= self.l_p2p < 1) or self.m_sat < 2:
            raise ValueError("losses must lie in [0, 1) and m_sat be at least 2")

    def g(self, m: int) -> float:
        return 0.0 if m <= 1 else min(1.0, (m - 1) / (self.m_sat - 1))

    def b_coll(self, m: int) -> float:
        return 1.0 - self.l_coll * self.g(m)

    def b_p2p(self, m: int) -> float:
        return 1.0 - self.l_p2p * self.g(m)

    def slowdown(self, s_dp: int, s_pp: int, e_dp: float, e_pp: float, busy_frac: float = 0.0) -> float:
        """Step time over the one-minipod step time (≥ 1) for job-level max spreads in minipods."""
        e_dp, e_pp = e_dp * self.comm_scale, e_pp * self.comm_scale
        if e_dp < 0 or e_pp < 0 or e_dp + e_pp > 1:
            raise ValueError(f"exposed shares must be >= 0 and sum to <= 1, got {e_dp}, {e_pp}")
        base = (1.0 - e_dp - e_pp) + e_dp / self.b_coll(s_dp) + e_pp / self.b_p2p(s_pp)
        return base + self.iota * self.g(max(s_dp, s_pp)) * busy_frac


def calibrate_dense_e_pp(gain: float, model: SlowdownModel | None = None) -> float:
    """e_pp giving a PP-aligned (2,1) placement `gain` over a DP-aligned (1,2) one when e_dp = 0."""
    model = model or SlowdownModel()
    return gain / (1.0 / model.b_p2p(2) - 1.0)
