"""Finish-time fairness computed in one vectorised pass must equal the per-job computation it
replaced, and `compare_policies` must compute per-job records once for CSV and plots alike.

The reference below is the former implementation, kept verbatim (an `np.interp` per job over the
whole event array): it is the specification the fast path is held to.
"""

from __future__ import annotations

import numpy as np
import pytest

from schedmate.schedulers import metrics
from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.compare import compare_policies
from schedmate.schedulers.engine import SimConfig, SimResult, simulate
from schedmate.schedulers.job import JobSpec
from schedmate.schedulers.metrics import job_records, mean_active
from schedmate.schedulers.policies import make_policy
from schedmate.schedulers.traces import generate_trace


# ---------------------------------------------------------------- the former implementation
def _old_mean_active(active_integral: np.ndarray, start: float, end: float) -> float:
    times, acc = active_integral[:, 0], active_integral[:, 1]
    if end <= start:
        return 1.0
    area = float(np.interp(end, times, acc) - np.interp(start, times, acc))
    return max(1.0, area / (end - start))


def _old_ftf(result: SimResult) -> list[float | None]:
    out: list[float | None] = []
    total = result.cluster.total_gpus
    for job in result.jobs:
        spec = job.spec
        ended = job.end_time is not None and job.phase.is_terminal
        ran = job.first_start is not None
        jct = (job.end_time - spec.submit_time) if ended and ran else None  # type: ignore[operator]
        ftf = None
        if jct is not None and spec.duration > 0:
            n_active = _old_mean_active(result.active_integral, spec.submit_time, job.end_time)  # type: ignore[arg-type]
            isolated = spec.duration * max(1.0, spec.num_gpus * n_active / total)
            ftf = jct / isolated
        out.append(ftf)
    return out


# ---------------------------------------------------------------- helpers
def _random_integral(rng: np.random.Generator, n: int) -> np.ndarray:
    """An engine-like running integral: strictly increasing times, non-decreasing job-seconds."""
    times = np.concatenate([[0.0], np.cumsum(rng.exponential(50.0, n - 1) + 1e-6)])
    active = rng.integers(0, 40, n - 1)
    acc = np.concatenate([[0.0], np.cumsum(active * np.diff(times))])
    return np.column_stack([times, acc])


def _windows(rng: np.random.Generator, times: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Windows of every kind the old code met: inside, on knots, past either end, empty, reversed."""
    lo, hi = -0.1 * times[-1], 1.1 * times[-1]
    starts = rng.uniform(lo, hi, m)
    ends = starts + rng.exponential(0.05 * times[-1], m)
    knots = rng.integers(0, times.size, (2, m // 4))
    starts[: m // 4], ends[: m // 4] = np.minimum(times[knots[0]], times[knots[1]]), np.maximum(
        times[knots[0]], times[knots[1]]
    )
    ends[m // 4 : m // 4 + 10] = starts[m // 4 : m // 4 + 10]  # empty window
    ends[m // 4 + 10 : m // 4 + 20] = starts[m // 4 + 10 : m // 4 + 20] - 5.0  # reversed window
    return starts, ends


# ---------------------------------------------------------------- mean number of active jobs
@pytest.mark.parametrize("seed", range(6))
def test_vectorised_mean_active_equals_the_per_job_interp(seed):
    rng = np.random.default_rng(seed)
    integral = _random_integral(rng, int(rng.integers(2, 3000)))
    starts, ends = _windows(rng, integral[:, 0], 800)
    new = mean_active(integral[:, 0], integral[:, 1], starts, ends)
    old = np.array([_old_mean_active(integral, s, e) for s, e in zip(starts, ends)])
    np.testing.assert_allclose(new, old, rtol=1e-9, atol=0)
    assert (new >= 1.0).all()


def test_mean_active_of_a_hand_worked_integral():
    # 2 jobs active on [0, 10), 4 on [10, 20): ∫ = 20 at t=10, 60 at t=20.
    integral = np.array([[0.0, 0.0], [10.0, 20.0], [20.0, 60.0]])
    got = mean_active(integral[:, 0], integral[:, 1], np.array([0.0, 5.0, 10.0, 3.0]), np.array([20.0, 15.0, 20.0, 3.0]))
    np.testing.assert_allclose(got, [3.0, 3.0, 4.0, 1.0])


# ---------------------------------------------------------------- per-job records on real runs
def _small_run(seed: int, policy: str) -> SimResult:
    trace = generate_trace(250, seed=seed, cluster_gpus=16, load=1.6)
    return simulate(trace.jobs, ClusterSpec.parse("2x8"), make_policy(policy), SimConfig(seed=seed, resubmit_delay=30.0))


@pytest.mark.parametrize(("seed", "policy"), [(0, "fifo"), (1, "srtf"), (2, "tiresias"), (3, "sjf+bf")])
def test_job_records_ftf_equal_the_former_per_job_computation(seed, policy):
    result = _small_run(seed, policy)
    new = [r.ftf for r in job_records(result)]
    old = _old_ftf(result)
    assert [v is None for v in new] == [v is None for v in old]
    defined = [(n, o) for n, o in zip(new, old) if o is not None]
    assert len(defined) > 100  # the run must exercise the metric, not only skip it
    np.testing.assert_allclose([n for n, _ in defined], [o for _, o in defined], rtol=1e-9, atol=0)


def test_job_without_a_window_or_a_duration_has_no_ftf():
    # "huge" can never fit (no JCT); "zero" has no run time (no isolated time to compare with).
    result = simulate(
        [JobSpec("ok", 0, 1, 100), JobSpec("huge", 0, 64, 10), JobSpec("zero", 5, 1, 0)],
        ClusterSpec.parse("8x1"),
        make_policy("fifo"),
    )
    recs = {r.job_id: r for r in job_records(result)}
    assert recs["ok"].ftf == pytest.approx(_old_ftf(result)[[j.spec.job_id for j in result.jobs].index("ok")])
    assert recs["huge"].ftf is None and recs["zero"].ftf is None


# ---------------------------------------------------------------- computed once
def test_compare_policies_computes_fairness_once_per_policy_for_csv_and_plots(tmp_path, monkeypatch):
    calls: list[int] = []
    real = metrics.mean_active

    def counting(*args):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(metrics, "mean_active", counting)
    jobs = generate_trace(120, seed=4, cluster_gpus=16, load=1.2).jobs
    comparison = compare_policies(jobs, ClusterSpec.parse("2x8"), ["fifo", "srtf"], out_dir=tmp_path)
    assert len(calls) == 2
    assert (tmp_path / "fifo.jobs.csv").is_file() and (tmp_path / "jct_cdf.png").is_file()
    assert comparison.metrics_seconds >= 0.0 and comparison.output_seconds > 0.0
