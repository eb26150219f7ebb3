"""Sia and its FIFO baseline alone on Sia workload files: mean/p99 JCT, makespan, restarts and
wall time per (workload, policy), the reference numbers the Sia case study starts from
(`schedmate experiment sia-reference`). Workload paths are relative to
`<shared data>/sia/workloads` unless they exist as given.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from schedmate.config import shared_data_dir
from schedmate.errors import BadInput, NotFound

from ..cluster import ClusterSpec
from ..metrics import summarize
from ..policy import Policy
from .baseline import SiaFIFO
from .jobs import load_sia_jobs
from .policy import Sia, simulate_sia
from .profiles import SIA_CLUSTER

__all__ = ["POLICIES", "make_policy", "run_reference"]

POLICIES = ("sia", "sia-fifo", "sia-fifo+bf")


def make_policy(name: str, profile_seconds: float = 0.0) -> Policy:
    name = name.strip().lower()
    if name == "sia":
        return Sia(profile_seconds=profile_seconds)
    if name in ("sia-fifo", "sia-fifo+bf"):
        return SiaFIFO(backfill=name.endswith("+bf"))
    raise BadInput(f"unknown policy {name!r}: {', '.join(POLICIES)}")


def _workload_path(name: str) -> Path:
    path = Path(name)
    if path.is_file():
        return path
    shared = shared_data_dir()
    if shared is None:
        raise NotFound(f"workload {name!r} does not exist and the shared data (SCHEDMATE_SHARED_DATA) is absent")
    return shared / "sia" / "workloads" / name


def run_reference(workloads: Sequence[str], *, policies: Sequence[str] = ("sia", "sia-fifo"), limit: int | None = None,
                  cluster: str = SIA_CLUSTER, profile_seconds: float = 0.0,
                  say: Callable[[str], None] = lambda _line: None) -> list[dict[str, Any]]:
    """One row per (workload, policy), in order; `say` gets each row as a line."""
    spec = ClusterSpec.parse(cluster)
    rows: list[dict[str, Any]] = []
    for wl in workloads:
        jobs = load_sia_jobs(_workload_path(wl), limit=limit)
        for name in policies:
            policy = make_policy(name, profile_seconds)
            t0 = time.perf_counter()
            result = simulate_sia(jobs, spec, policy)
            wall = time.perf_counter() - t0
            s = summarize(result)
            row: dict[str, Any] = {
                "workload": wl, "policy": result.policy, "jobs": s.jobs, "completed": s.completed,
                "mean_jct_h": s.mean_jct / 3600, "p99_jct_h": s.p99_jct / 3600, "makespan_h": s.makespan / 3600,
                "restarts": s.restarts, "gpu_utilisation": s.gpu_utilisation, "wall_s": wall,
            }
            stats = policy.run_stats()
            if "rounds" in stats:
                row["rounds"] = stats["rounds"]
                row["ilp_s"] = stats["ilp_seconds"]
                row["max_round_s"] = stats["max_round_seconds"]
            rows.append(row)
            say(f"{wl:24s} {result.policy:12s} completed {s.completed}/{s.jobs}  mean JCT {row['mean_jct_h']:.3f} h  "
                f"p99 {row['p99_jct_h']:.2f} h  makespan {row['makespan_h']:.2f} h  restarts {s.restarts}  "
                f"wall {wall:.1f} s")
    return rows
