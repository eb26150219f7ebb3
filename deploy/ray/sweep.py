"""Seeds and sweeps fanned out over Ray: each (policy, seed) simulation is one Ray task.

`RayMap` is a `SeedMap` (sim/experiments/common.py): it runs a picklable function over
items as Ray tasks and returns the answers in item order, so an experiment written against
`SeedMap` runs unchanged on one box (`serial_map`) or on a cluster. `run_sweep` is such an
experiment: policies x seeds of the simulator on synthetic traces, written as `sweep.json` /
`sweep.csv` by the experiments' shared writer. Each run builds its trace, policy and RNG from its
own (policy, seed), so the rows are the same wherever they ran; only `wall_seconds` (the engine's
own timing) differs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from schedmate.errors import BadInput
from schedmate.sim.experiments.common import ExperimentResult, RunRow, SeedMap, serial_map, write_experiment

__all__ = ["RayMap", "SweepConfig", "run_point", "run_sweep"]

_T = TypeVar("_T")
_R = TypeVar("_R")


@dataclass(frozen=True)
class RayMap:
    """A `SeedMap` over the Ray cluster this process is connected to (one task per item)."""

    cpus_per_item: float = 1.0

    def __call__(self, fn: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]:
        import ray

        if not ray.is_initialized():
            raise RuntimeError("Ray is not initialised: use deploy.ray.cluster.ray_cluster first")
        task = ray.remote(num_cpus=self.cpus_per_item, max_retries=1)(fn)
        return list(ray.get([task.remote(item) for item in items]))


@dataclass(frozen=True)
class SweepConfig:
    policies: tuple[str, ...] = ("fifo", "sjf", "tiresias")
    seeds: tuple[int, ...] = (0, 1, 2)
    jobs: int = 500
    cluster: str = "64"  # `ClusterSpec.parse`: '64', '8x8', '6x4:T4,2x8:A100'
    load: float = 1.2
    profile: str = "seren"  # the synthetic trace's calibration (`traces.generate_trace`)

    def __post_init__(self) -> None:
        from schedmate.schedulers.registry import policy_class

        if not self.policies or not self.seeds or self.jobs < 1 or self.load <= 0:
            raise BadInput("a sweep needs a policy, a seed, jobs >= 1 and load > 0")
        for name in self.policies:
            policy_class(name.partition("+")[0])  # unknown names fail here, before any run starts

    def points(self) -> list[tuple[SweepConfig, str, int]]:
        return [(self, p, s) for s in self.seeds for p in self.policies]


def run_point(point: tuple[SweepConfig, str, int]) -> RunRow:
    """One simulation of the sweep (runs wherever the map sends it)."""
    from schedmate.schedulers.cluster import ClusterSpec
    from schedmate.schedulers.engine import SimConfig, simulate
    from schedmate.schedulers.metrics import summarize
    from schedmate.schedulers.registry import make_policy
    from schedmate.schedulers.traces import generate_trace

    cfg, name, seed = point
    spec = ClusterSpec.parse(cfg.cluster)
    jobs = generate_trace(cfg.jobs, seed, profile=cfg.profile, cluster_gpus=spec.total_gpus, load=cfg.load).jobs
    policy = make_policy(name)
    result = simulate(policy.prepare_jobs(jobs), spec, policy, SimConfig(seed=seed, record_timeline=False))
    return RunRow(f"synthetic:{cfg.profile}", name, seed, spec.total_gpus, summarize(result), policy.run_stats())


def run_sweep(config: SweepConfig, out_dir: Path | None = None, *, map_seeds: SeedMap = serial_map,
              where: str = "serial") -> ExperimentResult:
    """Every (policy, seed) of `config` through `map_seeds`; files under `out_dir` when given."""
    t0 = time.perf_counter()
    rows = map_seeds(run_point, config.points())
    wall = time.perf_counter() - t0
    details: dict[str, Any] = {"where": where, "runs": len(rows), "wall_s": round(wall, 3),
                               "engine_s": round(sum(r.summary.wall_seconds for r in rows), 3)}
    files = write_experiment(out_dir, "sweep", rows, config=asdict(config), details=details) if out_dir else []
    by_arm: dict[str, list[float]] = {}
    for r in rows:
        by_arm.setdefault(r.arm, []).append(r.summary.mean_jct)
    best = min(by_arm, key=lambda a: sum(by_arm[a]) / len(by_arm[a]))
    line = (f"sweep: {len(rows)} runs ({len(config.policies)} policies x {len(config.seeds)} seeds, {config.jobs} jobs "
            f"on {config.cluster} GPUs) in {wall:.1f} s wall on {where} (engine {details['engine_s']:.1f} s); "
            f"lowest mean JCT: {best} ({sum(by_arm[best]) / len(by_arm[best]) / 3600:.2f} h)")
    from schedmate.sim.experiments.common import aggregate

    return ExperimentResult("sweep", out_dir, list(rows), aggregate(rows), files, line, details)
