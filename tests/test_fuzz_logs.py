"""Fuzz (issue 16, item 6): any bytes in a log file give the Failure Handler (rules only, no LLM) and
the Metric Tracker a result, never an exception, within a bounded time.

Raise the number of examples with `FUZZ_EXAMPLES=500` (bench/bench_fuzz.py runs the same strategies
longer and writes the counts).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from schedmate.agents.failure import Diagnosis, FailureHandler, FailureHandlerConfig
from schedmate.agents.tracker.tracker import MetricTracker, NoSignal, TrackerReport
from schedmate.taxonomy import FailureCategory, FailureReason, category_of
from schedmate.tests.fuzz_strategies import adversarial_logs, examples, log_bytes

PER_INPUT_S = 20.0  # generous for a busy 2-core runner; a hang is minutes
FUZZ = settings(max_examples=examples(25), deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip


@pytest.fixture(scope="module")
def handler(classifier) -> FailureHandler:  # type: ignore[no-untyped-def]
    return FailureHandler(classifier, config=FailureHandlerConfig(method="rules", time_budget_s=15.0))


@pytest.fixture(scope="module")
def tracker(classifier) -> MetricTracker:  # type: ignore[no-untyped-def]
    return MetricTracker(classifier)


@pytest.fixture(scope="module")
def scratch() -> Path:
    with tempfile.TemporaryDirectory(prefix="fuzz-logs-") as d:
        yield Path(d)


def wrong_but_confident(d: Diagnosis, exc: str) -> bool:
    """A medium/high-confidence verdict that blames the cluster for a Python exception of the job.

    Under logs.md 2.1b the category is who must act, decided from the evidence: a ValueError raised
    in the job's own `train.py` is the owner's (script) although Acme's table files ValueError
    under framework, so script vs framework is the classifier's call; infrastructure never is."""
    category_of(FailureReason(exc.split(":")[0]))  # the exception is one of Acme's reasons
    return (d.verdict is not None and d.verdict.confidence in ("high", "medium")
            and d.category is FailureCategory.INFRASTRUCTURE)


def touches_nodes(d: Diagnosis) -> bool:
    """Whether the plan runs a diagnostic on, or cordons, any node."""
    return d.plan is not None and any(getattr(a, "node", None) for a in d.plan.actions)


def _timed(fn, *args):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    out = fn(*args)
    elapsed = time.perf_counter() - t0
    assert elapsed < PER_INPUT_S, f"{elapsed:.1f} s for one input"
    return out


@FUZZ
@given(data=log_bytes())
def test_any_log_file_gives_the_failure_handler_a_diagnosis(handler, scratch, data):
    path = scratch / "job.log"
    path.write_bytes(data)
    d = _timed(handler.diagnose, path, {"job_id": "fuzz"})
    assert isinstance(d, Diagnosis)
    assert d.status in ("failure_found", "no_failure_found", "unreadable")
    if d.status == "unreadable":
        pytest.fail(f"a regular file was called unreadable: {d.message}")
    if d.category is not FailureCategory.INFRASTRUCTURE:
        assert not touches_nodes(d), d.plan


@FUZZ
@given(data=log_bytes())
def test_any_log_lines_in_memory_give_a_diagnosis(handler, data):
    d = _timed(handler.diagnose_lines, data.split(b"\n"), {"job_id": "fuzz"})
    assert d.status in ("failure_found", "no_failure_found")


@FUZZ
@given(data=log_bytes())
def test_any_log_file_gives_the_tracker_a_report_or_no_signal(tracker, scratch, data):
    path = scratch / "track.log"
    path.write_bytes(data)
    result = _timed(tracker.observe, path)
    assert isinstance(result, (TrackerReport, NoSignal))
    if isinstance(result, TrackerReport) and result.step_time_s is not None:
        assert result.step_time_s == result.step_time_s  # never NaN


@FUZZ
@given(data=log_bytes())
def test_any_lines_give_the_tracker_a_report_or_no_signal(tracker, data):
    result = _timed(tracker.observe, data.split(b"\n"))
    assert isinstance(result, (TrackerReport, NoSignal))


@settings(max_examples=examples(15), deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=adversarial_logs())
def test_adversarial_script_errors_are_never_confidently_infrastructure(handler, case):
    """Foreign lines inside the traceback, injections and decoys: the rules may abstain, but a confident
    verdict is the exception's own category (Acme's taxonomy), never infrastructure; no plan touches a node."""
    lines, exc = case
    d = _timed(handler.diagnose_lines, lines, {"job_id": "adv", "nodes": ["gpu-node-01", "gpu-node-02"]})
    assert not wrong_but_confident(d, exc), (exc, d.category, d.verdict)
    assert d.category is not FailureCategory.INFRASTRUCTURE
    assert not touches_nodes(d), d.plan
