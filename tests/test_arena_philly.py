"""Arena §6 arrivals from a Philly slice (arena.md §6: "Use a Philly slice if available")."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from schedmate.errors import BadInput, NotFound
from schedmate.schedulers.arena.experiment import section6_workload, sparse_load
from schedmate.schedulers.arena.hardware import R2, build_cluster
from schedmate.schedulers.arena.philly import philly_path, philly_slice, philly_submits
from schedmate.schedulers.arena.workload import PHILLY, POISSON, WorkloadSpec, generate

H = 3600.0


def _trace() -> np.ndarray:
    """A quiet hour (10 jobs), a busy 6 h (300 jobs) and a quiet tail (10 jobs)."""
    return np.concatenate([np.linspace(0, H, 10, endpoint=False), H + np.linspace(0, 6 * H, 300, endpoint=False),
                           7 * H + np.linspace(0, 10 * H, 10)])


def test_a_slice_keeps_n_arrivals_inside_the_window_from_a_window_that_busy():
    t = philly_slice(_trace(), np.random.default_rng(0), 240, 6 * H, slack=0.3)
    assert t.size == 240 and t[0] >= 0 and t[-1] < 6 * H and np.all(np.diff(t) >= 0)


def test_a_slice_is_a_window_holding_n_to_n_times_one_plus_slack_arrivals():
    # only windows starting in the busy block hold 240..312 arrivals; the quiet hour's do not
    with pytest.raises(BadInput, match="no 6 h window"):
        philly_slice(_trace(), np.random.default_rng(0), 320, 6 * H, slack=0.0)


def test_the_same_seed_gives_the_same_slice():
    a = philly_slice(_trace(), np.random.default_rng(3), 200, 6 * H)
    b = philly_slice(_trace(), np.random.default_rng(3), 200, 6 * H)
    assert np.array_equal(a, b)


def test_unknown_arrivals_are_refused_in_one_line():
    with pytest.raises(BadInput, match="unknown arrivals"):
        generate(build_cluster(R2), 0, WorkloadSpec(arrivals="weibull"))


def test_a_missing_trace_file_is_not_found(tmp_path):
    with pytest.raises(NotFound, match="Philly trace"):
        philly_submits(tmp_path / "absent.csv")


def test_the_section6_workload_falls_back_to_poisson_without_the_trace(tmp_path, monkeypatch):
    monkeypatch.setenv("SCHEDMATE_SHARED_DATA", str(tmp_path))  # shared data without sia/traces/philly.csv
    assert philly_path() is None and section6_workload().arrivals == POISSON


def test_the_section6_workload_uses_a_philly_slice_when_the_trace_is_present(tmp_path, monkeypatch):
    trace = tmp_path / "sia" / "traces" / "philly.csv"
    trace.parent.mkdir(parents=True)
    trace.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,11cb48\n")
    monkeypatch.setenv("SCHEDMATE_SHARED_DATA", str(tmp_path))
    assert philly_path() == trace and section6_workload().arrivals == PHILLY


@pytest.mark.skipif(philly_path() is None, reason="needs the shared Philly trace (SCHEDMATE_SHARED_DATA)")
def test_a_philly_workload_has_the_poisson_job_mix_and_load_with_philly_submit_times():
    cluster = build_cluster(R2)
    poisson = generate(cluster, 0, WorkloadSpec())
    philly = generate(cluster, 0, WorkloadSpec(arrivals=PHILLY))
    assert len(philly) == 240 and max(j.submit_time for j in philly) < 6 * H
    # the job mix is drawn before the arrivals: same models and requests, other submit times
    assert [j.name for j in philly] == [j.name for j in poisson]
    assert [j.submit_time for j in philly] != [j.submit_time for j in poisson]
    offered = sum(j.num_gpus * j.duration for j in philly) / (cluster.total_gpus * 6 * H)
    assert offered == pytest.approx(1.3, rel=0.02)
    sparse = generate(cluster, 0, sparse_load(replace(WorkloadSpec(), arrivals=PHILLY), 0.5))
    assert len(sparse) == 92
