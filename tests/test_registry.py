"""The lazy policy registry, and the invariant-checking wrapper run over every registered policy."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import EntryPoint

import pytest

from schedmate.config import shared_data_dir
from schedmate.schedulers import registry
from schedmate.schedulers.job import JobSpec
from schedmate.schedulers.policies import FIFO, make_policy
from schedmate.schedulers.policy import Policy
from schedmate.schedulers.registry import BUILTIN, UnknownPolicy, policy_class, supports_backfill
from schedmate.schedulers.testing import CheckedPolicy, InvariantViolation, check_policy, random_trace


def _sia_data() -> bool:
    root = shared_data_dir()
    return root is not None and (root / "sia" / "traces").is_dir()


def test_importing_and_building_fifo_imports_neither_sia_nor_lucid():
    # A fresh interpreter: this test process may have imported Sia already.
    code = (
        "import sys, json\n"
        "from schedmate.schedulers.policies import make_policy\n"
        "from schedmate.schedulers.compare import compare_policies\n"
        "make_policy('fifo+bf'); make_policy('tiresias')\n"
        "mods = [m for m in sys.modules if m.startswith(('schedmate.schedulers.sia', 'schedmate.schedulers.lucid', 'interpret'))]\n"
        "print(json.dumps(mods))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_a_registered_name_loads_only_when_asked_and_builds_its_class():
    code = (
        "import sys\n"
        "from schedmate.schedulers.registry import make_policy\n"
        "assert 'schedmate.schedulers.lucid.policy' not in sys.modules\n"
        "p = make_policy('lucid')\n"
        "assert type(p).__name__ == 'Lucid' and 'schedmate.schedulers.lucid.policy' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_every_builtin_target_resolves_to_a_policy_class_named_as_registered():
    for name, target in BUILTIN.items():
        cls = policy_class(name)
        assert isinstance(cls, type) and issubclass(cls, Policy), target
        built = make_policy(name).name  # a name may carry options (`fifo+bf`), set in __init__
        assert built.split("+")[0] == name, f"{target} says its name is {built!r}"


def test_backfill_suffix_follows_the_constructor_signature():
    assert {n for n in BUILTIN if supports_backfill(policy_class(n))} == {"fifo", "sjf", "qssf", "sia-fifo"}
    assert make_policy(" FIFO+bf ").name == "fifo+bf"
    with pytest.raises(UnknownPolicy, match="'srtf' has no 'bf' variant"):
        make_policy("srtf+bf")
    with pytest.raises(ValueError, match="unknown policy 'lifo'; choose from .*fifo"):
        make_policy("lifo")


class Mine(FIFO):
    name = "mine"


def test_entry_point_group_adds_a_policy_and_builtins_win_a_name_clash(monkeypatch):
    eps = [
        EntryPoint("mine", f"{__name__}:Mine", registry.ENTRY_POINT_GROUP),
        EntryPoint("fifo", f"{__name__}:Mine", registry.ENTRY_POINT_GROUP),  # cannot shadow a built-in
    ]
    monkeypatch.setattr(registry, "entry_points", lambda group: [e for e in eps if e.group == group])
    assert isinstance(make_policy("mine+bf"), Mine) and make_policy("mine+bf").backfill
    assert type(make_policy("fifo")) is FIFO
    assert "mine" in registry.available()


def test_a_malformed_target_is_refused():
    with pytest.raises(ValueError, match="not 'module:Class'"):
        registry.load("schedmate.schedulers.policies.fifo.FIFO")


# ---------------------------------------------------------------- the wrapper over every policy


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_every_registered_policy_keeps_the_books_on_a_small_random_trace(name):
    if name.startswith("sia") and not _sia_data():
        pytest.skip("Sia needs its measured profiles from ../shared/data/sia")
    check = check_policy(lambda: make_policy(name), num_jobs=12, seed=1)
    assert check.checked.checks > 0 and len(check.result.jobs) == 12
    assert isinstance(check.checked.run_stats(), dict)  # a capability the wrapper forwards


def test_the_wrapper_catches_a_policy_that_over_commits_the_books():
    class Liar(FIFO):
        name = "liar"

        def on_start(self, job, view):  # corrupts what the wrapper checks next: a read-only view
            view._sim.free_total += 1  # noqa: SLF001 (deliberate corruption)

    with pytest.raises(InvariantViolation, match="free_gpus"):
        check_policy(Liar, random_trace(6, seed=2))


def test_the_wrapper_forwards_the_speed_model_so_a_wrapped_policy_runs_identically():
    class Half(FIFO):
        name = "half"

        def throughput(self, job, placement, view):
            return 0.5 * view.base_speed(job, placement)

    jobs = [JobSpec("a", 0, 1, 100)]
    alone = check_policy(Half, jobs).result.jobs[0]
    assert alone.end_time == pytest.approx(200.0)  # the wrapper forwarded the declared model
    assert isinstance(CheckedPolicy(Half()).inner, Half)


def test_the_wrapper_forwards_the_restart_cost_a_policy_declares():
    class Cheap(FIFO):
        name = "cheap"

        def restart_cost(self, job, n_gpus, view):
            return 1.5 * n_gpus

    wrapped = CheckedPolicy(Cheap())
    assert wrapped.restart_cost(None, 4, None) == 6.0  # type: ignore[arg-type]
    assert CheckedPolicy(FIFO()).restart_cost(None, 4, None) is None  # type: ignore[arg-type]
