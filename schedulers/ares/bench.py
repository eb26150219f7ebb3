"""Ares decision time per scheduling round at a given cluster size (spec §3.7: the paper measured
under 0.06 s per decision at 2048 GPUs and 640 jobs/h).

    python bench/bench_policy_rounds.py --policies ares [--gpus 64,1024]   # JSON result + summary line

The §6.1 workload is scaled with the cluster (2.5 jobs per GPU, same ρ) so the active set grows
with it; each allocation pass is timed (`AllocationStats.per_decision`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..cluster import ClusterSpec
from ..engine import simulate
from .policy import Ares
from .workload import generate_workload

__all__ = ["bench_decisions"]


def bench_decisions(
    gpus: int, *, rho: float = 1.0, seed: int = 0, jobs_per_gpu: float = 2.5, **options: Any
) -> dict[str, Any]:
    """Run Ares on a scaled §6.1 trace; per-decision time statistics and active-set sizes."""
    n_jobs = max(1, int(round(jobs_per_gpu * gpus)))
    wl = generate_workload(seed, rho=rho, n_jobs=n_jobs, gpus=gpus)
    policy = Ares(**options)
    result = simulate(wl.specs, ClusterSpec.homogeneous(gpus // 4, 4), policy)
    per = np.array([t for _, t in policy.stats.per_decision]) if policy.stats.per_decision else np.zeros(1)
    active = np.array([n for n, _ in policy.stats.per_decision]) if policy.stats.per_decision else np.zeros(1)
    return {
        "gpus": gpus,
        "jobs": n_jobs,
        "rho": rho,
        "decisions": int(policy.stats.decisions),
        "rounds": int(policy.stats.rounds),
        "mean_decision_ms": float(per.mean() * 1e3),
        "p99_decision_ms": float(np.percentile(per, 99) * 1e3),
        "max_decision_ms": float(per.max() * 1e3),
        "mean_active_jobs": float(active.mean()),
        "max_active_jobs": int(active.max()),
        "sim_wall_s": result.wall_seconds,
    }
