"""Suika §5.2 trace from the busiest hours of Philly ("preferably the busiest 8 h of Philly")."""

from __future__ import annotations

import numpy as np
import pytest

from schedmate.errors import BadInput
from schedmate.schedulers.arena.philly import busiest_window, philly_path
from schedmate.schedulers.suika.experiment import section52_trace
from schedmate.schedulers.suika.workload import PHILLY, POISSON, TraceConfig, generate_trace

H = 3600.0


def test_the_busiest_window_is_the_one_with_most_submissions_from_its_first_job():
    quiet = np.linspace(0, 10 * H, 20)
    busy = 20 * H + np.linspace(0, 2 * H, 50)
    w = busiest_window(np.concatenate([busy, quiet]), 8 * H)  # unsorted input
    assert w.size == 50 and w[0] == 0 and w[-1] == pytest.approx(2 * H)


def test_unknown_arrivals_are_refused():
    with pytest.raises(BadInput, match="unknown arrivals"):
        generate_trace(TraceConfig(arrivals="weibull"), 0)


def test_the_section52_trace_prefers_philly_when_present_and_the_half_trace_halves_it(tmp_path, monkeypatch):
    trace = tmp_path / "sia" / "traces" / "philly.csv"
    trace.parent.mkdir(parents=True)
    trace.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,11cb48\n")
    monkeypatch.setenv("SCHEDMATE_SHARED_DATA", str(tmp_path))
    full, half = section52_trace(), section52_trace(half=True)
    assert full.arrivals == half.arrivals == PHILLY
    assert (full.hours, full.num_jobs) == (8.0, 120)
    assert (half.hours, half.num_jobs) == (full.hours / 2, full.num_jobs // 2)
    trace.unlink()
    assert section52_trace().arrivals == POISSON


@pytest.mark.skipif(philly_path() is None, reason="needs the shared Philly trace (SCHEDMATE_SHARED_DATA)")
def test_a_philly_trace_keeps_the_fallbacks_mix_and_load_with_philly_submit_times():
    cfg = TraceConfig(arrivals=PHILLY)
    philly, poisson = generate_trace(cfg, 0), generate_trace(TraceConfig(), 0)
    assert len(philly) == 120 and max(j.submit_time for j in philly) < 8 * H
    offered = sum(j.num_gpus * j.duration for j in philly) / (64 * 8 * H)
    assert offered == pytest.approx(0.9, rel=0.01)
    assert [j.submit_time for j in philly] != [j.submit_time for j in poisson]
    assert [j.submit_time for j in generate_trace(cfg, 0)] == [j.submit_time for j in philly]  # seeded
