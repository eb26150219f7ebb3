"""The engine with Arena's downtime model (arena.md §3.7): search and checkpoint-resume costs that
depend on the arm, the GPU count and whether the job had run, also on a job's first launch.

Workaround, local to this package: the engine charges one restart cost per job (`SimConfig` or
`spec.attributes["restart_cost"]`) and nothing on a first launch, while Arena's downtime is
T_search(n) on a launch and T_search(n) + T_ckpt on a move, different per arm. The engine lacks a
`Policy.restart_cost(job, n, view)` capability (asked on every launch, first included); until it
has one, `CostedSimulator` overrides the two private hooks and asks the policy's `downtime`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..cluster import ClusterSpec
from ..engine import SimConfig, SimResult, Simulator
from ..job import JobSpec, JobState, Phase, Placement
from ..policy import Policy

Downtime = Callable[[JobState, int], float]


class CostedSimulator(Simulator):
    """`Simulator` whose restart cost, and first-launch cost, is `downtime(job, gpus)`."""

    def __init__(self, jobs: Iterable[JobSpec], cluster: ClusterSpec, policy: Policy, downtime: Downtime,
                 config: SimConfig | None = None, **kwargs: Any) -> None:
        super().__init__(jobs, cluster, policy, config, **kwargs)
        self._downtime = downtime

    def _restart_cost(self, job: JobState, num_gpus: int) -> float:
        return self._downtime(job, num_gpus)

    def _launch(self, job: JobState, placement: Placement, phase: Phase) -> None:
        first = job.first_start is None
        cost = self._downtime(job, sum(k for _, k in placement)) if first and phase is Phase.RUNNING else 0.0
        super()._launch(job, placement, phase)
        if cost > 0 and job.phase is phase:  # charge the first launch's search like a restart
            job.overhead_until = self.now + cost
            t, speed, progress = job.speed_log[-1]
            job.speed_log[-1] = (job.overhead_until, speed, progress)
            self._schedule_end(job)


def run_costed(jobs: Iterable[JobSpec], cluster: ClusterSpec, policy: Policy, downtime: Downtime,
               config: SimConfig | None = None) -> SimResult:
    return CostedSimulator(jobs, cluster, policy, downtime, config).run()
