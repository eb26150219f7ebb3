"""DP/PP affinity (alpha, beta) and exposed communication shares per model archetype (spec §3.4).

Offline profiles record the gain of DP-aligned and PP-aligned placements (j_dp, j_pp) and two
volume ratios (r1: compute-to-communication proxy, r2: DP-to-PP volume). A new job takes the
profile nearest in (r1, r2) on its GPU type; alpha = j_dp/(j_dp+j_pp). The profiles' shapes
(hidden size, layers, ...) are not in the paper; those below are ours, chosen as typical
GPT-style shapes of each size, and only their ratios matter.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["ModelShape", "Profile", "PROFILES", "Affinity", "affinity_for", "volumes"]


@dataclass(frozen=True)
class ModelShape:
    hidden: int
    layers: int
    vocab: int = 50_304
    seq: int = 4096
    micro_batch: int = 1
    tp: int = 8
    pp: int = 8
    layer_params: float | None = None  # MoE: the MoE layer's parameter count instead of 12h²+9h
    pp_bits: int = 16  # 8-bit PP activations halve PP volume (L20 dense 7B)


def volumes(shape: ModelShape) -> tuple[float, float, float]:
    """(v_w, v_d, v_p) per GPU in elements (paper App. C, dense; TP division ours)."""
    h = shape.hidden
    per_layer = shape.layer_params if shape.layer_params is not None else 12 * h * h + 9 * h
    p_stage = h * (shape.vocab + shape.seq) + (shape.layers / shape.pp) * per_layer
    v_w = v_d = p_stage / shape.tp
    v_p = 2 * shape.micro_batch * shape.seq * h / shape.tp * (shape.pp_bits / 16)
    return v_w, v_d, v_p


def ratios(shape: ModelShape) -> tuple[float, float]:
    v_w, v_d, v_p = volumes(shape)
    return shape.micro_batch * v_w / (v_d + v_p), v_d / v_p


@dataclass(frozen=True)
class Profile:
    name: str
    gpu: str
    j_dp: float
    j_pp: float
    e_dp: float
    e_pp: float
    shape: ModelShape

    @property
    def alpha(self) -> float:
        total = self.j_dp + self.j_pp
        return self.j_dp / total if total > 0 else 0.5


# Seed table (spec §3.4; e values derived in §4). Shapes: ours.
PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile("dense_24b", "H800", 0.0, 0.023, 0.000, 0.076, ModelShape(6144, 52)),
        Profile("moe_24b", "H800", 0.0135, 0.0315, 0.225, 0.104,
                ModelShape(2048, 24, layer_params=8 * (8 * 2048 * 2048) + 4 * 2048 * 2048)),
        Profile("dense_7b", "L20", 0.014, 0.0, 0.233, 0.000, ModelShape(4096, 32, tp=4, pp=4, pp_bits=8)),
        Profile("dense_14b", "L20", 0.0, 0.005, 0.000, 0.016, ModelShape(5120, 40, tp=4, pp=4)),
    )
}


@dataclass(frozen=True)
class Affinity:
    alpha: float
    e_dp: float
    e_pp: float
    profile: str | None


def affinity_for(
    attributes: Mapping[str, object],
    gpu_type: str | None = None,
    default_alpha: float = 0.3,
    profiles: Mapping[str, Profile] = PROFILES,
) -> Affinity:
    """alpha and exposed shares from a job's trace attributes: an explicit `alpha`, a `profile`
    name, or a `shape` (ModelShape) matched to the nearest profile; else `default_alpha` and the
    nearest-by-alpha profile's e values."""
    explicit = attributes.get("alpha")
    name = attributes.get("profile")
    prof: Profile | None = profiles.get(str(name)) if name is not None else None
    shape = attributes.get("shape")
    if prof is None and isinstance(shape, ModelShape):
        r1, r2 = ratios(shape)
        pool = [p for p in profiles.values() if gpu_type is None or p.gpu == gpu_type] or list(profiles.values())
        prof = min(pool, key=lambda p: (math.dist((r1, r2), ratios(p.shape)), p.name))
    alpha = float(explicit) if isinstance(explicit, int | float) else (prof.alpha if prof else default_alpha)
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
    if prof is None:
        prof = min(profiles.values(), key=lambda p: (abs(p.alpha - alpha), p.name))
    return Affinity(alpha, prof.e_dp, prof.e_pp, prof.name)
