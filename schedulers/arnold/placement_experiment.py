"""Experiments A and B of the reproduction check (spec §6.1–6.2): static placement quality on the
Table-1 settings, and what the resulting spreads mean for step time under the §4 model.

Arms: "arnold" (PP unit, the paper's), "arnold-both" (PP and DP units, the lower score),
"arnold-dp", the four baselines, and "naive" (Megatron DP-major fill of GPU-packing's nodes).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from .affinity import PROFILES
from .baselines import BASELINES, baseline_matrix
from .groups import CommMatrix, matrix_spreads
from .planner import plan_lpj
from .slowdown import SlowdownModel
from .topology import DataCentre
from .trace import SETTINGS, Setting, table1_instance

__all__ = ["PlacementRow", "place_instance", "placement_rows", "step_time_rows"]

ALPHAS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


@dataclass(frozen=True)
class PlacementRow:
    experiment: str
    setting: str
    seed: int
    alpha: float
    arm: str
    s_dp: int
    s_pp: int
    score: float
    seconds: float = 0.0
    profile: str = ""
    slowdown: float = float("nan")

    def flat(self) -> dict[str, object]:
        return asdict(self)


def place_instance(
    setting: Setting, free: Sequence[int], seed: int, alpha: float, *, time_limit: float = 10.0
) -> dict[str, tuple[np.ndarray, float]]:
    """Node matrices of every arm on one instance: arm → (R×C nodes, solve seconds)."""
    dc = DataCentre.from_free_counts(free)
    nodes_by_mp = dc.nodes_by_minipod(range(dc.minipod.size))
    matrix = CommMatrix.of(setting.gpus, setting.tp, setting.pp)
    assert matrix is not None
    out: dict[str, tuple[np.ndarray, float]] = {}
    for unit in ("pp", "dp"):
        p = plan_lpj(matrix, nodes_by_mp, dc.minipod, alpha, unit=unit, time_limit=time_limit)
        if p is None:
            raise ValueError(f"setting {setting.name} does not fit its free nodes {list(free)}")
        out["arnold" if unit == "pp" else "arnold-dp"] = (p.nodes, p.seconds)
    pp_score = matrix_spreads(dc.minipod[out["arnold"][0]]).score(alpha)
    dp_score = matrix_spreads(dc.minipod[out["arnold-dp"][0]]).score(alpha)
    out["arnold-both"] = out["arnold"] if pp_score <= dp_score else out["arnold-dp"]
    key = {int(n): (int(dc.minipod[n]), int(dc.leaf[n]), int(n)) for n in range(dc.minipod.size)}
    rng = np.random.default_rng([seed, round(alpha * 1000)])
    for name in (*BASELINES, "naive"):
        m = baseline_matrix(name, nodes_by_mp, matrix, alpha, key, rng)
        assert m is not None
        out[name] = (m, 0.0)
    return out


def placement_rows(
    seeds: Iterable[int], *, settings: Sequence[Setting] = SETTINGS, alphas: Sequence[float] = ALPHAS, time_limit: float = 10.0
) -> list[PlacementRow]:
    """Experiment A: every arm's spreads and score per (setting, seed, alpha)."""
    rows = []
    for setting in settings:
        for seed in seeds:
            free = table1_instance(setting, seed)
            minipod = DataCentre.from_free_counts(free).minipod
            for alpha in alphas:
                for arm, (nodes, secs) in place_instance(setting, free, seed, alpha, time_limit=time_limit).items():
                    s = matrix_spreads(minipod[nodes])
                    rows.append(PlacementRow("A", setting.name, seed, alpha, arm, s.dp, s.pp, s.score(alpha), secs))
    return rows


def step_time_rows(
    seeds: Iterable[int],
    *,
    settings: Sequence[Setting] = SETTINGS[1:],
    profiles: Sequence[str] = ("moe_24b", "dense_24b"),
    model: SlowdownModel | None = None,
    time_limit: float = 10.0,
) -> list[PlacementRow]:
    """Experiment B: each arm's LPJ slowdown (§4) for a profile's alpha and exposed shares."""
    model = model or SlowdownModel()
    rows = []
    for setting in settings:
        for seed in seeds:
            free = table1_instance(setting, seed)
            minipod = DataCentre.from_free_counts(free).minipod
            for name in profiles:
                prof = PROFILES[name]
                placed = place_instance(setting, free, seed, prof.alpha, time_limit=time_limit)
                for arm, (nodes, secs) in placed.items():
                    s = matrix_spreads(minipod[nodes])
                    slow = model.slowdown(s.dp, s.pp, prof.e_dp, prof.e_pp)
                    rows.append(PlacementRow("B", setting.name, seed, prof.alpha, arm, s.dp, s.pp, s.score(prof.alpha), secs, name, slow))
    return rows
