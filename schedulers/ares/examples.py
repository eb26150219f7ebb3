"""The spec's worked examples (§3.8) as runnable traces, for the experiment's criterion 7.

The unit tests state the same inputs and expected values literally; this module lets the
reproduction run re-measure them and report the result beside the other criteria.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..cluster import ClusterSpec
from ..engine import SimConfig, simulate
from ..job import JobSpec
from .policy import CURVE_KEY, Ares
from .scaling import ScalingCurve, linear_curve, table_curve
from .virtual_time import VirtualClock

__all__ = ["ExampleCheck", "check_examples"]

H = 3600.0


@dataclass(frozen=True)
class ExampleCheck:
    name: str
    expected: dict[str, float]
    measured: dict[str, float]

    @property
    def ok(self) -> bool:
        return self.expected.keys() == self.measured.keys() and all(
            abs(self.measured[k] - v) <= 1e-6 * max(1.0, abs(v)) for k, v in self.expected.items()
        )


def _job(job_id: str, at_h: float, gpus: int, gpu_hours: float, curve: ScalingCurve) -> JobSpec:
    return JobSpec(job_id, at_h * H, gpus, gpu_hours / gpus * H, attributes={CURVE_KEY: curve, "restart_cost": 0.0})


def _run(jobs: list[JobSpec], gpus: int) -> dict[str, float]:
    cfg = SimConfig(restart_cost=0.0, restart_cost_large=0.0)
    result = simulate(jobs, ClusterSpec.homogeneous(gpus // 4, 4), Ares(round_s=60.0), cfg)
    return {j.job_id: (j.end_time or 0.0) / H for j in result.jobs}


def check_examples() -> list[ExampleCheck]:
    """Ex. 1 and 2 on the engine (60 s rounds, o_j = 0); Ex. 3 on the virtual clock."""
    lin8 = linear_curve(8)
    ex1 = _run([_job("j1", 0, 1, 14.4, lin8), _job("j2", 0, 1, 19.2, lin8), _job("j3", 0, 1, 28.8, lin8)], 8)
    capped = table_curve({1: 1.0, 2: 2.0, 4: 4.0, 8: 4.4}, 8)
    ex2 = _run([_job("job1", 0, 2, 12, capped), _job("job2", 0, 2, 22, lin8), _job("job3", 2, 2, 10, capped)], 8)
    clock = VirtualClock(4)
    f_a = clock.arrive("A", 0.0, 8.0)
    f_b = clock.arrive("B", 1.0, 2.0)
    clock.advance(10.0)
    ex3 = {"F_A": f_a, "F_B": f_b, **{f"rlin_{k}": v for k, v in clock.departures.items()}}
    return [
        ExampleCheck("ex1_ares_finish_h", {"j1": 1.8, "j2": 4.2, "j3": 7.8}, ex1),
        ExampleCheck("ex2_ares_finish_h", {"job1": 3.0, "job2": 5.5, "job3": 4.5}, ex2),
        ExampleCheck("ex3_virtual_clock", {"F_A": 8.0, "F_B": 6.0, "rlin_A": 2.5, "rlin_B": 2.0}, ex3),
    ]
