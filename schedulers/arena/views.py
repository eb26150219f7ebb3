"""A policy's belief about a job's throughput per (type, count) (arena.md §2.3 "scheduler's view").

Arena sees κ·Thr_AP·(1+ε): κ ~ U[0.86, 1] per (job, type, count) is the proxy plan's optimality
(mean ≈ 0.93, the paper's 93.4%), ε ~ N(0, σ_n) the profiler's measured error. Baselines see
static DP (0 where DP runs out of memory) or Sia's linear bootstrap from its smallest DP-feasible
count. A view with no feasible entry falls back to the user's request (the job runs as asked).
"""

from __future__ import annotations

import zlib

import numpy as np

from .config import View
from .model import PerfTable

Config = tuple[str, int]
KAPPA_RANGE = (0.86, 1.0)
PROFILER_SIGMA: dict[int, float] = {1: 0.044, 2: 0.051, 4: 0.031, 8: 0.046, 16: 0.083}


def job_rng(seed: int, job_id: str) -> np.random.Generator:
    """A job's own stream: its draws do not depend on which other jobs exist."""
    return np.random.default_rng([seed, zlib.crc32(job_id.encode())])


def ap_view(table: PerfTable, rng: np.random.Generator) -> dict[Config, float]:
    out = {}
    for (g, n), thr in sorted(table.ap.items()):
        kappa = rng.uniform(*KAPPA_RANGE)
        eps = rng.normal(0.0, PROFILER_SIGMA.get(n, 0.05))
        out[(g, n)] = max(0.0, kappa * thr * (1 + eps)) if thr > 0 else 0.0
    return out


def linear_view(table: PerfTable) -> dict[Config, float]:
    """Sia's bootstrap: thr_n ≈ n·thr_1 per type, seeded at the smallest count DP fits."""
    out: dict[Config, float] = {}
    for g in sorted({g for g, _ in table.dp}):
        counts = sorted(n for gg, n in table.dp if gg == g)
        seed = next(((n, table.dp[(g, n)]) for n in counts if table.dp[(g, n)] > 0), None)
        for n in counts:
            out[(g, n)] = seed[1] * n / seed[0] if seed and n >= seed[0] else 0.0
    return out


def decision_view(table: PerfTable, view: View, request: Config, rng: np.random.Generator) -> dict[Config, float]:
    """What the policy believes; never empty (the request, at its true AP value, as a fallback)."""
    if view is View.AP:
        out = ap_view(table, rng)
    elif view is View.AP_EXACT:
        out = dict(table.ap)
    elif view is View.DP:
        out = dict(table.dp)
    else:
        out = linear_view(table)
    if not any(v > 0 for v in out.values()):
        out[request] = table.ap.get(request, 0.0) or 1.0
    return out
