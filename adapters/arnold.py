"""Arnold+SchedMate (issue 12, item 5): cordon what the Failure Handler blames, re-place the job.

Two policies, both the unmodified Arnold interval loop apart from failure handling:

- `ArnoldRestart`: Arnold as a pre-training cluster runs it without SchedMate. A failed job is
  restarted from its last checkpoint (`on_failure` → True) and Arnold places it again: an LPJ on
  its own zone (Arnold keeps a started LPJ's zone), so while the fault persists the job fails
  again there. Restarts stop after `max_stuck` consecutive failures without progress since the
  last restart (a user's bug), and the world's own path follows (`failures_sim`: the job ends, or
  the user resubmits an infrastructure failure). When a zone node is cordoned by someone (the
  operators, after repeated failures), a waiting LPJ is planned afresh over usable nodes: Arnold
  only re-plans zones before a start, and without this the job would wait for the repair. Every
  plan keeps off the zones of started LPJs (`_plan`: a fix of Arnold's LPJ-vs-LPJ preemption
  loop, in both arms).
- `ArnoldSchedMate(source)`: the same, and at each failure it asks the Failure Handler
  (`InsightSource.diagnose`, which reads the failed log the simulated world wrote). A diagnosis
  of infrastructure cordons the node it points to (the host whose task died: `job.failed_node`,
  a fact any scheduler sees) at once, so the restarted job is re-placed (an LPJ re-planned) away
  from it. No diagnosis, or another category: `ArnoldRestart`'s behaviour, decision for decision.

The adapter decides on the diagnosis only; the world's cause of a failure is read, when the source
is a `SimulatedWorld` (`failure_truth`), for the true/false-positive counters and nothing else.

Not charged: the handler's latency (seconds; restarts happen at Arnold's next 60 s round).

Registered for the generic adapter arm (`ADAPTER`): its world injects failures and writes the failed
logs, which only the simulator does, so it is named, not imported
(`schedmate.sim.experiments.arnold:failure_world`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from schedmate.adapters.insights import InsightSource, SimulatedWorld
from schedmate.adapters.registry import PolicyAdapter
from schedmate.schedulers.arnold.policy import ArnoldPolicy, LpjState
from schedmate.schedulers.decisions import Cordon, Decision
from schedmate.schedulers.job import JobState, Phase
from schedmate.schedulers.policy import ClusterView

__all__ = ["ADAPTER", "ArnoldRestart", "ArnoldSMCounters", "ArnoldSchedMate", "RestartCounters"]

_EPS = 1e-6


@dataclass
class RestartCounters:
    """Failure handling of one run (both arms)."""

    failures: int = 0  # failed attempts seen
    restarts: int = 0  # restarted from checkpoint
    gave_up: int = 0  # stuck (no progress over `max_stuck` restarts): the world's path
    replans: int = 0  # waiting LPJs planned afresh because a zone node was cordoned


class ArnoldRestart(ArnoldPolicy):
    """Arnold restarting failed jobs on their placement (module docstring)."""

    name = "arnold"

    def __init__(self, *args: Any, max_stuck: int = 2, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_stuck = max_stuck
        self.restart_counters = RestartCounters()
        self._resumed_at: dict[str, float] = {}  # progress after the rollback of the last restart
        self._stuck: dict[str, int] = {}

    def on_failure(self, job: JobState, view: ClusterView) -> bool:
        c = self.restart_counters
        c.failures += 1
        last = self._resumed_at.get(job.job_id)
        stuck = self._stuck.get(job.job_id, 0) + 1 if last is not None and job.progress <= last + _EPS else 0
        self._stuck[job.job_id] = stuck
        if stuck >= self.max_stuck:
            c.gave_up += 1
            self._resumed_at.pop(job.job_id, None)
            self._stuck.pop(job.job_id, None)
            return False
        c.restarts += 1
        self._resumed_at[job.job_id] = -1.0  # set to the rolled-back progress in on_requeue
        return True

    def on_requeue(self, job: JobState, view: ClusterView) -> None:
        super().on_requeue(job, view)
        if self._resumed_at.get(job.job_id) == -1.0:
            self._resumed_at[job.job_id] = job.progress

    def optimize(self, view: ClusterView) -> Sequence[Decision]:
        cordoned = view.cordoned
        for lpj in self.lpjs.values():
            if lpj.started_at is None or lpj.zone.size == 0 or not cordoned[lpj.zone].any():
                continue
            if view.job(lpj.job_id).phase is not Phase.QUEUED:
                continue  # running elsewhere, or over
            # a started LPJ back in the queue whose zone lost a node: plan it again
            lpj.started_at, lpj.planned_at, lpj.placement = None, None, None
            lpj.zone = np.zeros(0, dtype=np.int64)
            self.restart_counters.replans += 1
        return super().optimize(view)

    def _plan(self, lpj: LpjState, view: ClusterView) -> None:
        """Arnold's planning, kept off the zones of LPJs that have started and are not over.

        Arnold unreserves a zone once its LPJ starts, so a later plan may pick those nodes and,
        at its start, preempt that LPJ, which takes its zone back the next round: measured on
        this experiment's trace, hundreds of preemptions of one LPJ (re-plans after cordons make
        it frequent, but plain Arnold does it too). Those nodes are held out while planning."""
        held = np.zeros(len(view.cluster.nodes), dtype=bool)
        for other in self.lpjs.values():
            if other.job_id != lpj.job_id and other.started_at is not None and other.zone.size:
                if not view.job(other.job_id).phase.is_terminal:
                    held[other.zone] = True
        saved = self._reserved[held].copy()
        self._reserved[held] = -1  # any non-zero value: not usable while planning
        try:
            super()._plan(lpj, view)
        finally:
            self._reserved[held] = saved

    def run_stats(self) -> dict[str, Any]:
        return {**super().run_stats(), "restart": asdict(self.restart_counters)}


@dataclass
class ArnoldSMCounters:
    """What the Failure Handler told the adapter and what it did."""

    diagnosed: int = 0  # the source answered
    said_infra: int = 0
    cordons: int = 0  # nodes cordoned on a diagnosis
    true_positives: int = 0  # counters only: the world's cause, when the source offers it
    false_positives: int = 0
    missed_infra: int = 0
    diagnosis_seconds: float = 0.0


class ArnoldSchedMate(ArnoldRestart):
    """Arnold with the Failure Handler's diagnoses (module docstring)."""

    name = "arnold+sm"

    def __init__(self, source: InsightSource, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.source = source
        self.counters = ArnoldSMCounters()
        self._cordon_now: list[int] = []

    def on_failure(self, job: JobState, view: ClusterView) -> bool:
        attempt = job.failures - 1  # 0 = the first failed run
        insight = self.source.diagnose(job, attempt=attempt)
        c = self.counters
        truth = _truth(self.source, job, attempt)
        if insight is not None:
            c.diagnosed += 1
            c.diagnosis_seconds += insight.latency_s
        if insight is not None and insight.infrastructure:
            c.said_infra += 1
            c.true_positives += truth is True
            c.false_positives += truth is False
            node = job.failed_node
            if node is not None and not view.cordoned[node] and node not in self._cordon_now:
                self._cordon_now.append(int(node))
        else:
            c.missed_infra += truth is True
        return super().on_failure(job, view)

    def schedule(self, view: ClusterView) -> Sequence[Decision]:
        """Cordons right after the failure; the job is re-placed at the next round."""
        out: list[Decision] = [Cordon(n) for n in self._cordon_now if not view.cordoned[n]]
        self.counters.cordons += len(out)
        self._cordon_now.clear()
        return [*out, *super().schedule(view)]

    def run_stats(self) -> dict[str, Any]:
        return {**super().run_stats(), "schedmate": asdict(self.counters)}

    def info(self) -> dict[str, Any]:
        return {**asdict(self.counters), **asdict(self.restart_counters), "source": self.source.stats()}


def _truth(source: InsightSource, job: JobState, attempt: int) -> bool | None:
    """The world's cause of the attempt as a flag, for counters only (None when not offered)."""
    return source.failure_truth(job, attempt) if isinstance(source, SimulatedWorld) else None


ADAPTER = PolicyAdapter(policy="arnold", adapter=ArnoldSchedMate, baseline=ArnoldRestart,
                        world="schedmate.sim.experiments.arnold:failure_world", reads=("diagnose",),
                        counters=("faulty_failures", "ops_cordons", "cordons_of_healthy_nodes"))
