"""Fitting the generator's distributions to a `Calibration` (pure functions, no sampling).

- Run time: a log-normal with the published median, whose sigma is solved so that the mean of
  the run time *capped at the published maximum* equals the published mean (a mixture would
  need more statistics than the summary has).
- GPU count: powers of two up to the cluster maximum, geometric in log2 level plus the least
  point mass at the median level that puts the median where published; the ratio is solved to
  match the mean.
- Final state: a Gaussian copula between run time and state, fitted so both the share of jobs
  and the share of GPU time in each state match (Acme: failures are many short jobs, while
  cancelled jobs hold most GPU time); GPU count is drawn independently of run time, so GPU-time
  shares are run-time shares. Cancellation first: a latent N(0,1) variable correlated
  (rho_c) with the run-time score z cancels the job above threshold t_c; among the rest, a
  second latent (rho_f, t_f) fails it. Both rates then hold exactly in expectation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, ndtri

from .calibration import Calibration

_Z = np.linspace(-8.5, 8.5, 1701)
_W = np.exp(-0.5 * _Z**2)
_W /= _W.sum()  # quadrature weights of a standard normal on the grid
_Z.flags.writeable = _W.flags.writeable = False  # constants, not state


@dataclass(frozen=True, slots=True)
class RunTimeModel:
    """Run time = clip(exp(mu + sigma * z), 1, cap) seconds, z ~ N(0, 1)."""

    mu: float
    sigma: float
    cap: float

    def at(self, z: np.ndarray) -> np.ndarray:
        return np.clip(np.exp(self.mu + self.sigma * z), 1.0, self.cap)


@dataclass(frozen=True, slots=True)
class StatusModel:
    """P(cancel | z) = Phi((rho_c z - t_c) / sqrt(1 - rho_c^2)); failure alike, if not cancelled."""

    rho_c: float
    t_c: float
    rho_f: float
    t_f: float

    def p_cancel(self, z: np.ndarray) -> np.ndarray:
        return _exceed(z, self.rho_c, self.t_c)

    def p_fail_given_not_cancelled(self, z: np.ndarray) -> np.ndarray:
        return _exceed(z, self.rho_f, self.t_f)


def fit_run_time(median: float, mean: float, cap: float) -> RunTimeModel:
    """Log-normal with this median whose capped mean is `mean` (closest reachable otherwise)."""
    mu = math.log(median)
    if mean <= median:
        return RunTimeModel(mu, 0.0, cap)
    sigmas = np.linspace(0.0, 8.0, 801)
    means = np.array([_capped_mean(mu, s, cap) for s in sigmas])
    above = np.nonzero(means >= mean)[0]
    if len(above) == 0:
        return RunTimeModel(mu, float(sigmas[np.argmax(means)]), cap)
    hi = float(sigmas[above[0]])
    lo = float(sigmas[above[0] - 1])
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _capped_mean(mu, mid, cap) < mean else (lo, mid)
    return RunTimeModel(mu, 0.5 * (lo + hi), cap)


def _capped_mean(mu: float, sigma: float, cap: float) -> float:
    if sigma == 0.0:
        return min(math.exp(mu), cap)
    log_cap = math.log(cap)
    body = math.exp(mu + sigma**2 / 2) * float(ndtr((log_cap - mu - sigma**2) / sigma))
    return body + cap * (1.0 - float(ndtr((log_cap - mu) / sigma)))


_MEDIAN_MARGIN = 0.02
"""Keep the median level's CDF this far past 0.5, so sampled medians land on it reliably."""


def gpu_levels(max_gpus: int) -> np.ndarray:
    """1, 2, 4, ... up to `max_gpus` (powers of two: what GPU jobs overwhelmingly request)."""
    if max_gpus < 1:
        raise ValueError(f"max_gpus must be >= 1, got {max_gpus}")
    return 2 ** np.arange(int(math.log2(max_gpus)) + 1)


def fit_gpu_mix(median: float, mean: float, max_gpu: int) -> tuple[np.ndarray, np.ndarray]:
    """(levels, probabilities) over powers of two up to `max_gpu` matching median and mean."""
    levels = gpu_levels(max_gpu)
    k = np.arange(len(levels))
    m = int(np.argmin(np.abs(levels - median)))  # median level
    best: tuple[float, np.ndarray] | None = None
    for lam in np.linspace(0.0, 0.99, 100):
        probs = _mix(_solve_ratio(k, levels, lam, m, mean), k, lam, m)
        cdf = np.cumsum(probs)
        below = cdf[m - 1] if m > 0 else 0.0
        median_ok = cdf[m] >= 0.5 + _MEDIAN_MARGIN and below <= 0.5 - _MEDIAN_MARGIN
        error = abs(float(probs @ levels) - mean) / mean + (0.0 if median_ok else 1.0)
        if median_ok and error < 1e-3:
            return levels, probs
        if best is None or error < best[0]:
            best = (error, probs)
    assert best is not None
    return levels, best[1]


def _mix(ratio: float, k: np.ndarray, lam: float, m: int) -> np.ndarray:
    geometric = np.exp(k * math.log(ratio) - np.max(k * math.log(ratio)))
    probs = (1.0 - lam) * geometric / geometric.sum()
    probs[m] += lam
    return probs


def _solve_ratio(k: np.ndarray, levels: np.ndarray, lam: float, m: int, mean: float) -> float:
    lo, hi = -12.0, 12.0  # log ratio; the mixture mean increases with it
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        if float(_mix(math.exp(mid), k, lam, m) @ levels) < mean:
            lo = mid
        else:
            hi = mid
    return math.exp(0.5 * (lo + hi))


def fit_status(cal: Calibration, run_time: RunTimeModel) -> StatusModel:
    """Copula parameters matching job-count rates and GPU-time shares of each final state."""
    total = cal.complete_rate + cal.cancel_rate + cal.fail_rate
    p_c, p_f = cal.cancel_rate / total, cal.fail_rate / total
    shares = cal.complete_gpu_time_share + cal.cancel_gpu_time_share + cal.fail_gpu_time_share
    s_c, s_f = cal.cancel_gpu_time_share / shares, cal.fail_gpu_time_share / shares
    x = run_time.at(_Z) * _W
    x /= x.sum()  # run-time-weighted quadrature: sum(x * p) is the GPU-time share
    t_c = _threshold(p_c)

    def cancel_share(rho: float) -> float:
        return float(x @ _exceed(_Z, rho, t_c))

    rho_c = _bisect(lambda rho: cancel_share(rho) - s_c)
    not_cancelled = 1.0 - _exceed(_Z, rho_c, t_c)

    def fail_threshold(rho: float) -> float:
        """The t that makes the failure rate p_f (the rate falls as t grows: bisect on -t)."""

        def excess_rate(minus_t: float) -> float:
            return float(_W @ (not_cancelled * _exceed(_Z, rho, -minus_t))) - p_f

        return -_bisect(excess_rate, lo=-12.0, hi=12.0, steps=40)

    def fail_share(rho: float) -> float:
        return float(x @ (not_cancelled * _exceed(_Z, rho, fail_threshold(rho))))

    rho_f = _bisect(lambda rho: fail_share(rho) - s_f)
    return StatusModel(rho_c, t_c, rho_f, fail_threshold(rho_f))


def _threshold(p: float) -> float:
    if p <= 0.0:
        return math.inf
    if p >= 1.0:
        return -math.inf
    return float(ndtri(1.0 - p))


def _exceed(z: np.ndarray, rho: float, t: float) -> np.ndarray:
    """P(rho z + sqrt(1 - rho^2) e > t), e ~ N(0, 1)."""
    return ndtr((rho * z - t) / math.sqrt(1.0 - rho * rho))


def _bisect(f, lo: float = -0.995, hi: float = 0.995, steps: int = 50) -> float:
    """Root of an increasing f on [lo, hi], or the nearer end when f does not change sign."""
    if f(lo) >= 0.0:
        return lo
    if f(hi) <= 0.0:
        return hi
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if f(mid) < 0.0 else (lo, mid)
    return 0.5 * (lo + hi)
