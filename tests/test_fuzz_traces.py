"""Fuzz (issue 16, item 6): any CSV in a known trace format loads, or fails with `TraceFormatError`
naming the file and line; a loaded trace is sane (sorted, rebased, finite) and the plausibility
check never crashes on it."""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.traces import TraceFormatError, load_trace
from schedmate.schedulers.traces.plausibility import check_plausibility
from schedmate.tests.fuzz_strategies import examples, trace_csv

FUZZ = settings(max_examples=examples(150), deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def scratch() -> Path:
    with tempfile.TemporaryDirectory(prefix="fuzz-traces-") as d:
        yield Path(d)


@FUZZ
@given(text=trace_csv(), limit=st.one_of(st.none(), st.integers(0, 40)))
def test_any_trace_loads_or_names_its_bad_line(scratch, text, limit):
    path = scratch / "trace.csv"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    t0 = time.perf_counter()
    try:
        loaded = load_trace(path, limit=limit)
    except TraceFormatError as exc:
        assert str(exc).startswith("trace.csv"), exc
        assert "\n" not in str(exc)
        return
    assert time.perf_counter() - t0 < 10.0
    jobs = loaded.jobs
    assert limit is None or len(jobs) <= limit
    times = [j.submit_time for j in jobs]
    assert times == sorted(times) and (not jobs or times[0] == 0.0)
    assert all(math.isfinite(j.submit_time) and math.isfinite(j.duration) and j.num_gpus >= 1 for j in jobs)
    warnings = check_plausibility(jobs, ClusterSpec.parse("64"))
    assert all(isinstance(line, str) for line in warnings.lines())


@FUZZ
@given(data=st.binary(max_size=2000))
def test_random_bytes_as_a_trace_are_a_format_error(scratch, data):
    path = scratch / "bytes.csv"
    path.write_bytes(data)
    try:
        load_trace(path)
    except TraceFormatError:
        pass
