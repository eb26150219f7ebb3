"""The generic adapter arm: adapters registered beside the policies, one experiment for all of them.

`adapters/<policy>.py` declares `ADAPTER` (a `PolicyAdapter`: both arms and the attributes the
policy reads of the world); `sim/experiments/adapter.py` replays any registered policy with and
without its adapter on the realistic world (`schedmate experiment adapter --policy <name>`)."""

from __future__ import annotations

import pkgutil
import textwrap
from dataclasses import replace
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import schedmate.adapters
from schedmate.adapters import registry
from schedmate.adapters.registry import PolicyAdapter, UnknownAdapter, adapter_for, available
from schedmate.config import shared_data_dir
from schedmate.errors import BadInput
from schedmate.schedulers.job import JobSpec
from schedmate.sim.artefacts import plan_artefact
from schedmate.sim.experiments.adapter import AdapterArmConfig, run_adapter_experiment, world_jobs
from schedmate.sim.experiments.common import NullInsights

BUNDLED = {"arena", "ares", "arnold", "lucid", "sia", "stated-sjf", "suika"}  # registered on 2026-11-29
# every module of adapters/ (not imported at collection): a new adapters/<name>.py is tested here
# without an edit to this file; modules that declare no ADAPTER are skipped
MODULES = sorted(m.name for m in pkgutil.iter_modules(schedmate.adapters.__path__))
STATED = ("est_gpu_time", "stated_length_s")  # what users state, read by Ares and Stated SJF


def _null(specs: Any, seed: int, rate: float) -> NullInsights:
    return NullInsights()


def _registered(module: str) -> PolicyAdapter:
    try:
        spec = adapter_for(module)
    except UnknownAdapter:
        pytest.skip(f"adapters/{module}.py declares no ADAPTER (no adapter, or its case study only)")
    root = shared_data_dir()
    if spec.policy == "sia" and (root is None or not (root / "sia" / "traces").is_dir()):
        pytest.skip("Sia needs its measured profiles from ../shared/data/sia")
    return spec


def _same_run(rows: list[Any]) -> bool:
    """The same jobs' outcomes: every summary figure but the name, wall time and engine events (an
    adapter may wake the engine for checks that then change nothing, as Lucid's cancellation does)."""
    base, sm = (replace(r.summary, policy="", wall_seconds=0.0, events=0) for r in rows)
    return bool(base == sm)


def test_the_bundled_adapters_are_found_by_their_policys_name() -> None:
    assert BUNDLED <= set(available()) and "fifo" not in available()
    for name in BUNDLED:
        spec = adapter_for(name.upper())
        assert spec.policy == name and isinstance(spec, PolicyAdapter)


def test_a_policy_without_a_declared_adapter_is_bad_input_that_names_the_registered_ones() -> None:
    for name in ("fifo", "tiresias", "no such policy", "insights"):
        with pytest.raises(UnknownAdapter, match="no SchedMate adapter for policy .*registered: arena, ares"):
            adapter_for(name)
    assert issubclass(UnknownAdapter, BadInput)


@pytest.mark.parametrize("module", MODULES)
def test_with_a_source_that_knows_nothing_every_adapter_runs_as_its_policy(module: str) -> None:
    name = _registered(module).policy
    cfg = AdapterArmConfig(policy=name, n_jobs={"sia": 8, "suika": 30}.get(name, 60), gpus=16)  # Sia: an ILP a round
    result = run_adapter_experiment(None, make_source=_null, config=cfg)
    assert [r.arm for r in result.rows] == [name, f"{name}+sm"]
    assert result.rows[0].summary.jobs == cfg.n_jobs and result.rows[0].summary.finished > 0
    assert _same_run(result.rows), result.summary
    counters = {f"world.{k}" for k in _registered(module).counters}  # only the ones the adapter names
    assert all({k for k in r.extra if k.startswith("world.")} == counters for r in result.rows)


@pytest.mark.parametrize("module", MODULES)
def test_what_a_policys_world_declares_never_reads_a_jobs_outcome(module: str) -> None:
    """Swap two jobs' run times and final states: the code the agents read and what users state
    are unchanged (the engine-side truth, e.g. Arena's iterations, may follow the run time)."""
    spec = _registered(module)
    made = world_jobs(AdapterArmConfig(n_jobs=40), 0)
    assert made is not None
    jobs = made[0]
    a, b = next((i, j) for i in range(len(jobs)) for j in range(i + 1, len(jobs))
                if jobs[i].duration != jobs[j].duration and jobs[i].num_gpus == jobs[j].num_gpus)
    swapped = list(jobs)
    swapped[a] = replace(jobs[a], duration=jobs[b].duration, status=jobs[b].status)
    swapped[b] = replace(jobs[b], duration=jobs[a].duration, status=jobs[a].status)

    def seen(world_of: list[JobSpec]) -> list[Any]:
        world = spec.build_world(world_of, 0, 16)
        return [(plan_artefact(s, 0), s.num_gpus, {k: s.attributes.get(k) for k in STATED}) for s in world.jobs]

    assert seen(jobs) == seen(swapped)


# ------------------------------------------------------------- a policy and adapter from outside


OUTSIDE = '''
    """A policy and its SchedMate adapter in one module outside SchedMate: longest plan first."""
    from schedmate.adapters.registry import PolicyAdapter
    from schedmate.schedulers.policies.ordered import OrderedPolicy


    class LongestPlan(OrderedPolicy):
        name = "longest-plan"

        def priority(self, job, view):
            return (-float(job.spec.attributes.get("planned_work", 0.0)), job.spec.submit_time, job.job_id)


    class LongestPlanSchedMate(LongestPlan):
        name = "longest-plan+sm"

        def __init__(self, source):
            super().__init__()
            self.source = source
            self.asked = 0

        def on_arrival(self, job, view):
            self.asked += self.source.advise(job) is None
            super().on_arrival(job, view)

        def run_stats(self):
            return {"asked": self.asked}


    ADAPTER = PolicyAdapter(policy="longest-plan", adapter=LongestPlanSchedMate, baseline=LongestPlan)
'''


def test_an_adapter_from_outside_is_an_entry_point_and_runs_in_the_generic_arm(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "outside_policy.py").write_text(textwrap.dedent(OUTSIDE))
    monkeypatch.syspath_prepend(str(tmp_path))
    eps = [EntryPoint("longest-plan", "outside_policy:ADAPTER", registry.ENTRY_POINT_GROUP)]
    monkeypatch.setattr(registry, "entry_points", lambda group: [e for e in eps if e.group == group])
    assert "longest-plan" in available()
    result = run_adapter_experiment(None, make_source=_null, config=AdapterArmConfig(policy="longest-plan", n_jobs=30))
    assert _same_run(result.rows) and result.rows[1].extra["policy"]["asked"] == 30
    assert result.summary.startswith("longest-plan+sm vs longest-plan (realistic world")


def test_the_cli_refuses_an_unknown_policy_in_one_line_before_loading_any_agent() -> None:
    from schedmate.cli import app

    result = CliRunner().invoke(app, ["experiment", "adapter", "--policy", "fifo"])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "no SchedMate adapter for policy 'fifo'" in lines[0]


def test_a_world_named_by_path_is_imported_on_first_use_and_must_build_a_policy_world():
    lucid = adapter_for("lucid")
    assert isinstance(lucid.world, str) and lucid.world.startswith("schedmate.sim.")
    named = PolicyAdapter(policy="fifo", adapter=lambda source, **kw: None,
                          world="schedmate.adapters.registry:homogeneous_world")
    assert named.build_world([], 0, 16).cluster.total_gpus == 16
    broken = PolicyAdapter(policy="fifo", adapter=lambda source, **kw: None, world="builtins:slice")
    with pytest.raises(UnknownAdapter, match="did not return a PolicyWorld"):
        broken.build_world([1], 0, 16)
    for name in ("schedmate.no_such_module:world", "schedmate.adapters.registry:no_such_world", "schedmate.adapters.registry"):
        with pytest.raises(UnknownAdapter, match="cannot be loaded|is not a function"):
            PolicyAdapter(policy="fifo", adapter=lambda source, **kw: None, world=name).build_world([], 0, 16)
