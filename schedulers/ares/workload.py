"""The spec's synthetic reproduction workload (§6.1): 160 jobs, six models, offered load ρ.

Size classes by GPU-hours (S 72%, M 20%, L 6%, XL 2%), demand and model drawn per class, the
synthetic scaling curve thr(n) = n/(1 + c·log2 n) with G_j = 32, and arrival times stretched so
that Σ L_j / (M · window) = ρ. Seeded and deterministic. `est_sigma` > 0 gives Ares a noisy
size estimate L̂_j = L_j·exp(N(0, σ)) (§7.18: the clock uses L̂_j, execution the true work).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..job import JobSpec
from .config import RESTART_S
from .fairness import FluidJob
from .policy import CURVE_KEY, EST_KEY
from .scaling import log_curve

__all__ = ["MODEL_C", "AresWorkload", "generate_workload"]

H = 3600.0
MAX_GPUS = 32
MODEL_C: dict[str, float] = {
    "resnet50": 0.03,
    "bert": 0.06,
    "yolov3": 0.08,
    "deepspeech2": 0.10,
    "resnet18": 0.12,
    "neumf": 0.45,
}
# class: (probability, GPU-hours range, demands, models)
_CLASSES: tuple[tuple[str, float, tuple[float, float], tuple[int, ...], tuple[str, ...]], ...] = (
    ("S", 0.72, (0.25, 1.0), (1, 1, 2), ("resnet18", "neumf")),
    ("M", 0.20, (1.0, 10.0), (1, 2, 4), ("bert", "deepspeech2")),
    ("L", 0.06, (10.0, 50.0), (2, 4, 8), ("yolov3",)),
    ("XL", 0.02, (50.0, 200.0), (4, 8, 16), ("resnet50",)),
)


@dataclass(frozen=True)
class AresWorkload:
    """One generated trace: engine jobs and the same jobs as the fairness references see them."""

    specs: list[JobSpec]
    fluid: list[FluidJob]
    gpus: int
    rho: float
    seed: int
    window_s: float


def generate_workload(
    seed: int,
    *,
    rho: float = 1.0,
    n_jobs: int = 160,
    gpus: int = 64,
    span_h: float = 8.0,
    restart: bool = True,
    est_sigma: float = 0.0,
) -> AresWorkload:
    """The §6.1 trace for `seed` at offered load `rho` (restart costs per §3.4 unless `restart` is off)."""
    if rho <= 0 or n_jobs < 1:
        raise ValueError("rho must be positive and n_jobs >= 1")
    rng = np.random.default_rng(seed)
    probs = np.array([c[1] for c in _CLASSES])
    classes = rng.choice(len(_CLASSES), size=n_jobs, p=probs / probs.sum())
    draws = np.sort(rng.uniform(0.0, span_h * H, size=n_jobs))
    rows = []
    for k in classes:
        _, _, (lo, hi), demands, models = _CLASSES[int(k)]
        gpu_h = math.exp(rng.uniform(math.log(lo), math.log(hi)))
        d = int(demands[int(rng.integers(len(demands)))])
        model = models[int(rng.integers(len(models)))]
        rows.append((gpu_h, d, model))
    total_gpu_s = sum(r[0] for r in rows) * H
    window = total_gpu_s / (gpus * rho)
    arrivals = draws * (window / (span_h * H))
    noise = np.exp(np.random.default_rng([seed, 1]).normal(0.0, est_sigma, size=n_jobs)) if est_sigma > 0 else None
    specs, fluid = [], []
    for i, ((gpu_h, d, model), at) in enumerate(zip(rows, arrivals)):
        curve = log_curve(MODEL_C[model], MAX_GPUS)
        o = RESTART_S[model] if restart else 0.0
        job_id = f"s{seed}-j{i:03d}"
        duration = gpu_h * H / d  # T_j(d_j): W_j = L_j·thr(d)/d iterations at thr(d) per hour
        attrs = {CURVE_KEY: curve, "restart_cost": o, "model": model}
        if noise is not None:
            attrs[EST_KEY] = gpu_h * H * float(noise[i])
        specs.append(JobSpec(job_id, float(at), d, duration, name=model, attributes=attrs))
        fluid.append(FluidJob(job_id, float(at), d, duration, curve, restart_s=o))
    return AresWorkload(specs, fluid, gpus, rho, seed, float(window))
