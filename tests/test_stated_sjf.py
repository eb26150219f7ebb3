"""Stated SJF and its SchedMate adapter: the worked example of adding a policy with its adapter.

Four files: `schedulers/policies/stated_sjf.py` (the policy), its line in `schedulers/registry.py`,
`adapters/stated_sjf.py` (the adapter, its world attribute and `ADAPTER`) and this test. Nothing
else names it, yet `schedmate simulate --policies stated-sjf` and `schedmate experiment adapter
--policy stated-sjf` run it (docs/architecture.md, "Adding a policy")."""

from __future__ import annotations

from dataclasses import replace

from schedmate.adapters.insights import AdvisorInsight, InsightSource
from schedmate.adapters.registry import adapter_for, available
from schedmate.adapters.stated_sjf import StatedSJFSchedMate, stated_plans
from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.engine import SimConfig, Simulator
from schedmate.schedulers.job import JobSpec, JobState
from schedmate.schedulers.policies.stated_sjf import STATED_KEY, StatedSJF
from schedmate.schedulers.registry import make_policy
from schedmate.schedulers.testing import check_policy
from schedmate.sim.experiments.adapter import AdapterArmConfig, run_adapter_experiment
from schedmate.sim.experiments.common import NullInsights


def _queue(lengths: dict[str, float | None]) -> list[JobSpec]:
    """A busy 1-GPU job, then the others queued behind it (submitted in name order)."""
    jobs = [JobSpec("busy", 0.0, 1, 100.0)]
    for i, (name, stated) in enumerate(lengths.items()):
        attrs = {} if stated is None else {STATED_KEY: stated}
        jobs.append(JobSpec(name, 1.0 + i, 1, 10.0 * (i + 1), attributes=attrs))
    return jobs


def _order(policy: StatedSJF, jobs: list[JobSpec]) -> list[str]:
    result = Simulator(jobs, ClusterSpec.homogeneous(1, 1), policy, SimConfig(seed=0)).run()
    return [j.job_id for j in sorted(result.jobs, key=lambda j: j.first_start or 0.0)]


class Durations(InsightSource):
    """Says each job's length from a table (a stand-in for the advisor); records what it is told."""

    def __init__(self, durations: dict[str, float]) -> None:
        self.durations = durations
        self.recorded: list[tuple[str, bool]] = []

    def advise(self, job: JobState) -> AdvisorInsight | None:
        d = self.durations.get(job.job_id)
        return None if d is None else AdvisorInsight((f"past-{job.job_id}",), d, d, None)

    def record(self, job: JobState, *, finished: bool) -> None:
        self.recorded.append((job.job_id, finished))


def test_the_shortest_stated_length_goes_first_and_unstated_jobs_last_in_submit_order() -> None:
    jobs = _queue({"u1": None, "s50": 50.0, "u2": None, "s5": 5.0})
    assert _order(StatedSJF(), jobs) == ["busy", "s5", "s50", "u1", "u2"]


def test_it_is_registered_and_keeps_the_books() -> None:
    assert type(make_policy("stated-sjf")) is StatedSJF
    check = check_policy(lambda: make_policy("stated-sjf"), num_jobs=20, seed=3)
    assert check.checked.checks > 0 and len(check.result.jobs) == 20
    assert "stated-sjf" in available() and adapter_for("Stated-SJF").adapter is StatedSJFSchedMate


def test_the_adapter_orders_unstated_jobs_by_the_advisors_duration_and_keeps_what_users_state() -> None:
    jobs = _queue({"u1": None, "s50": 50.0, "u2": None, "s5": 5.0})
    source = Durations({"u1": 80.0, "u2": 20.0, "s50": 1.0})  # a statement wins over the advisor
    assert _order(StatedSJFSchedMate(source), jobs) == ["busy", "s5", "u2", "s50", "u1"]
    assert ("u1", False) in source.recorded and ("u1", True) in source.recorded


def test_with_a_source_that_knows_nothing_the_adapter_is_the_policy_on_the_realistic_world() -> None:
    result = run_adapter_experiment(None, make_source=lambda specs, seed, rate: NullInsights(),
                                    config=AdapterArmConfig(policy="stated-sjf", n_jobs=60, gpus=16))
    base, sm = (r.summary for r in result.rows)
    assert replace(base, policy="", wall_seconds=0.0) == replace(sm, policy="", wall_seconds=0.0)
    assert result.rows[1].extra["policy"]["schedmate"]["stated"] > 0


def test_what_users_state_is_their_plan_not_their_outcome() -> None:
    jobs = [JobSpec(f"j{i}", float(i), 2, 100.0 * (i + 1), attributes={"planned_work": 60.0 * (i + 1)}) for i in range(40)]
    swapped = [replace(jobs[0], duration=jobs[1].duration), replace(jobs[1], duration=jobs[0].duration), *jobs[2:]]
    stated = [[s.attributes.get(STATED_KEY) for s in stated_plans(js, 7, 16).jobs] for js in (jobs, swapped)]
    assert stated[0] == stated[1]
    assert 0 < sum(x is not None for x in stated[0]) < len(jobs)
    assert all(x == s.attributes["planned_work"] for x, s in zip(stated[0], jobs) if x is not None)

