"""`InsightSource` is a base class whose every answer defaults to "SchedMate does not know";
the simulator-only hooks live on `SimulatedWorld`; no capability is found by name (issue 25)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from schedmate.adapters.insights import NO_FAILSLOW, FailureInsight, InsightSource, SimulatedWorld
from schedmate.embeddings.lazy_classifier import LazyClassifier
from schedmate.schedulers.job import JobSpec, JobState

ROOT = Path(__file__).resolve().parent.parent
JOB = JobState(JobSpec("j1", 0.0, 8, 3600.0))


def test_a_bare_source_knows_nothing_and_holds_nothing() -> None:
    source = InsightSource()
    assert source.advise(JOB) is None
    assert source.track(JOB, event_at=10.0, now=20.0) is None
    assert source.failslow(JOB, now=20.0) == NO_FAILSLOW and source.failslow(JOB, now=20.0, since=5.0) == NO_FAILSLOW
    assert source.diagnose(JOB, attempt=0) is None
    assert source.record(JOB, finished=True) is None
    assert source.stats() == {}
    assert source.advice_log() is None  # no log kept: no estimate quality is reported for it
    assert source.close() is None


def test_a_source_overrides_only_what_it_reads() -> None:
    class Diagnoses(InsightSource):
        def diagnose(self, job: JobState, *, attempt: int) -> FailureInsight | None:
            return FailureInsight(True, "infrastructure", "NVLinkError")

    source = Diagnoses()
    assert source.diagnose(JOB, attempt=0) == FailureInsight(True, "infrastructure", "NVLinkError")
    assert source.advise(JOB) is None and source.failslow(JOB, now=1.0) == NO_FAILSLOW


def test_a_simulated_world_offers_no_truth_and_reads_the_log_by_default() -> None:
    @dataclass
    class ReadsLogs(SimulatedWorld):
        asked: list[int] = field(default_factory=list)

        def diagnose(self, job: JobState, *, attempt: int) -> FailureInsight | None:
            self.asked.append(attempt)
            return None

    world = ReadsLogs()
    assert world.failure_truth(JOB, 0) is None
    assert world.failed_log_style("j1") is None  # the world writes no log for it
    assert world.locate_failure("/nonexistent.log") is None  # no handler of its own
    assert world.diagnose_cause(JOB, attempt=2, cause=object()) is None and world.asked == [2]  # = diagnose
    assert not isinstance(InsightSource(), SimulatedWorld)


def test_a_live_source_has_no_simulated_world_hooks() -> None:
    from schedmate.deploy.service.live_source import LiveInsights

    assert issubclass(LiveInsights, InsightSource) and not issubclass(LiveInsights, SimulatedWorld)


def test_every_source_of_the_simulator_inherits_the_base_class() -> None:
    from schedmate.sim.experiments.arena import DeclaredModelMatches
    from schedmate.sim.experiments.common import NullInsights, OracleInsights
    from schedmate.sim.experiments.failslow import SpeedLogInsights
    from schedmate.sim.experiments.sia import SameConfigInsights
    from schedmate.sim.experiments.standalone import AdviceJournal, CalibratedInsights
    from schedmate.sim.experiments.value_curve import NoisyOracleInsights
    from schedmate.sim.failures import CauseDiagnosis
    from schedmate.sim.semantic import SimulationInsights

    for cls in (NullInsights, OracleInsights, SpeedLogInsights, SameConfigInsights, DeclaredModelMatches,
                NoisyOracleInsights):
        assert issubclass(cls, InsightSource), cls
    for cls in (CalibratedInsights, SimulationInsights, CauseDiagnosis, AdviceJournal):
        assert issubclass(cls, SimulatedWorld), cls


def test_the_advice_journal_passes_the_world_hooks_of_what_it_wraps_and_nothing_by_name() -> None:
    from schedmate.sim.experiments.common import NullInsights
    from schedmate.sim.experiments.standalone import AdviceJournal, CalibratedInsights

    calibrated = AdviceJournal(CalibratedInsights(recall=1.0, precision=1.0))
    cause = type("Cause", (), {"infrastructure": True, "category": "infrastructure", "reason": "ECCError", "node": None})()
    said = calibrated.diagnose_cause(JOB, attempt=0, cause=cause)
    assert said is not None and said.infrastructure and "ECCError" in said.reason
    assert calibrated.stats()["source"] == "calibrated (sensitivity only)"

    plain = AdviceJournal(NullInsights())
    assert plain.failure_truth(JOB, 0) is None and plain.failed_log_style("j1") is None
    assert plain.diagnose_cause(JOB, attempt=0, cause=cause) is None
    assert plain.stats() == {"source": "null"}
    with pytest.raises(AttributeError):
        plain.artefact  # noqa: B018 -- no proxy: what the journal does not define does not exist


def test_the_lazy_classifier_loads_on_first_use_and_forwards_nothing_else() -> None:
    made: list[int] = []

    def make_embedder() -> Any:
        made.append(1)
        raise RuntimeError("model loaded")

    clf = LazyClassifier(make_embedder)
    assert not clf.loaded and made == []
    with pytest.raises(AttributeError):
        clf.miner  # noqa: B018 -- not part of the classifier's public methods
    assert made == []
    with pytest.raises(RuntimeError, match="model loaded"):
        clf.classify_lines(["step 1 loss 2.0"])
    assert made == [1]


SOURCE_MODULES = ["adapters", "sim", "deploy/service/live_source.py", "embeddings/lazy_classifier.py"]


def _files() -> list[Path]:
    out: list[Path] = []
    for name in SOURCE_MODULES:
        path = ROOT / name
        out += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return out


def test_no_source_module_defines_a_proxy_or_probes_a_source_by_name() -> None:
    offenders = []
    for path in _files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} defines __getattr__")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr"):
                target = ast.unparse(node.args[0]) if node.args else ""
                if "source" in target:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.func.id}({target}, ...)")
    assert offenders == []
