"""Plot thinning: big runs are drawn from a few thousand points, without losing what a pixel shows."""

from __future__ import annotations

import numpy as np
import pytest

from schedmate.schedulers.plots import thin_cdf, thin_steps


def _step_series(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = np.cumsum(rng.exponential(1.0, n))
    y = np.clip(np.cumsum(rng.integers(-3, 4, n)), 0, None).astype(float)
    y[rng.integers(0, n, 5)] = 10_000.0  # isolated peaks a plot must still show
    return x, y


@pytest.mark.parametrize("seed", range(3))
def test_thin_steps_keeps_every_bins_extremes_and_both_ends(seed):
    x, y = _step_series(seed, 60_000)
    bins = 500
    tx, ty = thin_steps(x, y, max_bins=bins)
    assert tx.size <= 4 * bins and tx[0] == x[0] and tx[-1] == x[-1]
    assert np.all(np.diff(tx) > 0)  # kept points stay in time order
    b = np.minimum(((x - x[0]) * (bins / (x[-1] - x[0]))).astype(int), bins - 1)
    tb = np.minimum(((tx - x[0]) * (bins / (x[-1] - x[0]))).astype(int), bins - 1)
    for k in np.unique(b):
        assert ty[tb == k].max() == y[b == k].max() and ty[tb == k].min() == y[b == k].min()
    assert ty.max() == 10_000.0


def test_thin_steps_leaves_short_series_alone():
    x, y = _step_series(0, 100)
    tx, ty = thin_steps(x, y, max_bins=500)
    assert np.array_equal(tx, x) and np.array_equal(ty, y)


def test_thin_cdf_rises_by_at_most_one_bin_between_kept_points():
    values = np.sort(np.random.default_rng(1).lognormal(6, 2, 100_000))
    x, frac = thin_cdf(values, max_points=1000)
    assert x[0] == values[0] and x[-1] == values[-1] and frac[-1] == 1.0
    assert x.size <= 1000 and np.all(np.diff(frac) <= 1 / 999 + 1 / values.size)
    # every kept point is a true point of the full CDF
    ranks = np.searchsorted(values, x, side="right")
    np.testing.assert_allclose(frac, ranks / values.size)


def test_thin_cdf_keeps_every_point_of_a_small_sample():
    values = np.array([1.0, 2.0, 3.0])
    x, frac = thin_cdf(values)
    assert np.array_equal(x, values) and np.allclose(frac, [1 / 3, 2 / 3, 1.0])
