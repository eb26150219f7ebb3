"""Pollux-style goodput model (OSDI'21), as Sia uses it per GPU type.

Step time of synchronous data-parallel SGD with all-reduce, for `r` replicas on `n` nodes and a
per-GPU (atomic) batch `b`, optionally accumulating gradients over `s` extra micro-steps:

    T_compute(b) = α_c + β_c·b
    T_network(n, r) = α_n + β_n·max(r−2, 0)   if n > 1   (inter-node link is the bottleneck)
                    = α_r + β_r·max(r−2, 0)   if n = 1, r > 1
                    = 0                       if r = 1
    T_optim = (T_compute^γ + T_network^γ)^(1/γ)      γ ∈ [1, 10]: 1 = no overlap, 10 ≈ max()
    T_step = s·T_compute + T_optim,   throughput = r·b·(s+1) / T_step   (samples per second)

Statistical efficiency of a total batch B (init batch B₀, gradient statistics sqr = |g|², var):
    gain = (var + sqr) / (var/(B/B₀) + sqr) ∈ [1, B/B₀],   efficiency = gain / (B/B₀)
    goodput = throughput · efficiency   (samples/s at B₀'s statistical quality)

`fit_perf_params` fits the seven parameters to measured (nodes, replicas, local_bsz) →
(step_time, sync_time) points by least squares on log times (compute = step − sync, and the
whole step), with Pollux's priors: parameters that the data cannot identify are pinned (a single
batch size pins α_c; no multi-node point pins α_n, β_n; no multi-GPU single-node point pins α_r,
β_r; no point with more than 2 replicas pins the β's), a small pull of γ toward 1, and a penalty
on β/α that prefers optimistic scaling. Without multi-node points the inter-node terms are set to
at least 1.1× the intra-node ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from scipy.optimize import least_squares

_TINY = 1e-8
_EPS = 1e-8


class PerfParams(NamedTuple):
    alpha_c: float  # constant compute time per step (s)
    beta_c: float  # compute time per sample (s)
    alpha_n: float  # inter-node sync constant (s)
    beta_n: float  # inter-node retrogression per extra replica (s)
    alpha_r: float  # intra-node sync constant (s)
    beta_r: float  # intra-node retrogression per extra replica (s)
    gamma: float  # compute/network overlap (p-norm exponent, 1..10)


class GradParams(NamedTuple):
    sqr: float
    var: float


def compute_time(params: PerfParams, atomic_bsz: np.ndarray | float) -> np.ndarray:
    return params.alpha_c + params.beta_c * np.asarray(atomic_bsz, dtype=float)


def network_time(params: PerfParams, num_nodes: np.ndarray | float, num_replicas: np.ndarray | float) -> np.ndarray:
    nodes = np.asarray(num_nodes, dtype=float)
    reps = np.asarray(num_replicas, dtype=float)
    inter = nodes > 1
    intra = reps > 1
    alpha = np.where(inter, params.alpha_n, np.where(intra, params.alpha_r, _TINY))
    beta = np.where(inter, params.beta_n, np.where(intra, params.beta_r, _TINY))
    return alpha + beta * np.maximum(reps - 2, _TINY)


def optim_time(params: PerfParams, t_compute: np.ndarray, t_network: np.ndarray) -> np.ndarray:
    g = params.gamma
    return (np.asarray(t_compute) ** g + np.asarray(t_network) ** g) ** (1.0 / g)


def step_time(
    params: PerfParams,
    num_nodes: np.ndarray | float,
    num_replicas: np.ndarray | float,
    atomic_bsz: np.ndarray | float,
    accum_steps: np.ndarray | float = 0,
) -> np.ndarray:
    """Seconds per optimiser step (accumulation micro-steps included)."""
    tc = compute_time(params, atomic_bsz)
    tn = network_time(params, num_nodes, num_replicas)
    return np.asarray(accum_steps, dtype=float) * tc + optim_time(params, tc, tn)


def predict_profile(
    params: PerfParams, num_nodes: np.ndarray, num_replicas: np.ndarray, local_bsz: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(step_time, sync_time) as the profiles record them (no accumulation)."""
    tc = compute_time(params, local_bsz)
    st = optim_time(params, tc, network_time(params, num_nodes, num_replicas))
    return st, st - tc


# ---------------------------------------------------------------------------- fitting

_LOG_IDX = (0, 1, 2, 3, 4, 5)  # fitted in log space; gamma (6) linearly
# Regularisation residuals. Pollux adds 1e-3·(γ−1)² and 1e-2·(β/α)² to a sum of RMSEs; this fit
# minimises mean squared log errors instead, whose gradient is ~2·RMSE (≈0.1) times smaller near a
# good fit, so the same relative pull needs weights ~10× smaller: sqrt(1e-4) and sqrt(1e-3).
REG_GAMMA = 1e-2
REG_RETRO = 0.03


def _params_from(x: np.ndarray, fixed: dict[int, float], free: list[int]) -> PerfParams:
    full = np.empty(7)
    for i, v in fixed.items():
        full[i] = v
    for j, i in enumerate(free):
        full[i] = np.exp(x[j]) if i in _LOG_IDX else x[j]
    return PerfParams(*full)


def fit_perf_params(
    num_nodes: Sequence[float] | np.ndarray,
    num_replicas: Sequence[float] | np.ndarray,
    local_bsz: Sequence[float] | np.ndarray,
    step_times: Sequence[float] | np.ndarray,
    sync_times: Sequence[float] | np.ndarray,
    init: PerfParams | None = None,
) -> PerfParams:
    """Fit `PerfParams` to measured (nodes, replicas, local_bsz) → (step_time, sync_time).

    `init` warm-starts the search (e.g. the previous fit when one point was added).
    """
    nodes = np.asarray(num_nodes, dtype=float)
    reps = np.asarray(num_replicas, dtype=float)
    bsz = np.asarray(local_bsz, dtype=float)
    st = np.asarray(step_times, dtype=float)
    sy = np.asarray(sync_times, dtype=float)
    if nodes.size == 0:
        raise ValueError("no profile points to fit")
    tc = np.maximum(st - sy, 1e-6)
    log_tc, log_st = np.log(tc), np.log(np.maximum(st, 1e-6))

    # Starting point: a linear fit of compute time on batch size, sync medians for the links.
    if np.unique(bsz).size > 1:
        slope, icept = np.polyfit(bsz, tc, 1)
        beta_c0 = max(slope, 1e-6)
        alpha_c0 = max(icept, 1e-4)
    else:
        alpha_c0 = float(tc.mean()) / 2
        beta_c0 = max(float(tc.mean()) / 2 / max(float(bsz.mean()), 1.0), 1e-7)
    multi_node = nodes > 1
    intra = (nodes == 1) & (reps > 1)
    alpha_n0 = float(np.median(sy[multi_node])) if multi_node.any() else 1e-2
    alpha_r0 = float(np.median(sy[intra])) if intra.any() else 1e-2
    start = [alpha_c0, beta_c0, max(alpha_n0, 1e-4), 1e-3, max(alpha_r0, 1e-4), 1e-3, 1.5]
    if init is not None:
        start = [max(float(v), 1e-7) for v in init[:6]] + [float(init.gamma)]

    fixed: dict[int, float] = {}
    if np.unique(bsz).size == 1:
        fixed[0] = float(tc.mean()) / 2
    if not multi_node.any():
        fixed[2] = fixed[3] = _TINY
    if not intra.any():
        fixed[4] = fixed[5] = _TINY
    if not (reps > 2).any():
        fixed[3] = fixed[5] = _TINY
    free = [i for i in range(7) if i not in fixed]
    n1 = np.sqrt(nodes.size)
    # Which link each point synchronises over (fixed per point): inter-node, intra-node, none.
    m_inter = nodes > 1
    m_intra = (~m_inter) & (reps > 1)
    extra = np.maximum(reps - 2, _TINY)
    has_bn, has_br = 3 in free, 5 in free
    base = np.array([fixed.get(i, 0.0) for i in range(7)])
    free_arr = np.array(free, dtype=np.int64)
    log_mask = free_arr < 6
    out = np.empty(2 * nodes.size + 3)
    nsz = nodes.size

    def residuals(x: np.ndarray) -> np.ndarray:
        full = base.copy()
        full[free_arr] = np.where(log_mask, np.exp(np.minimum(x, 50.0)), x)
        ac, bc, an, bn, ar, br, g = full
        pc = ac + bc * bsz
        pn = np.where(m_inter, an + bn * extra, np.where(m_intra, ar + br * extra, _TINY + _TINY * extra))
        lo = np.log(pc**g + pn**g) / g
        out[:nsz] = (np.log(pc) - log_tc) / n1
        out[nsz : 2 * nsz] = (lo - log_st) / n1
        out[-3] = REG_GAMMA * (g - 1.0)
        out[-2] = REG_RETRO * bn / an if has_bn else 0.0
        out[-1] = REG_RETRO * br / ar if has_br else 0.0
        return out.copy()

    x0 = np.array([np.log(start[i]) if i in _LOG_IDX else start[i] for i in free])
    lower = np.array([np.log(_TINY) if i in _LOG_IDX else 1.0 for i in free])
    upper = np.array([np.log(1e4) if i in _LOG_IDX else 10.0 for i in free])
    x0 = np.clip(x0, lower + 1e-9, upper - 1e-9)
    if free:
        result = least_squares(residuals, x0, bounds=(lower, upper), method="trf", xtol=1e-6, ftol=1e-6, max_nfev=200)
        params = _params_from(result.x, fixed, free)
    else:
        params = _params_from(np.empty(0), fixed, free)
    if not multi_node.any():
        # Prior: the inter-node link is no faster than the intra-node one.
        params = params._replace(alpha_n=max(params.alpha_n, params.alpha_r * 1.1), beta_n=max(params.beta_n, params.beta_r * 1.1))
    return params


# ---------------------------------------------------------------------------- goodput


def efficiency(grad: GradParams | None, batch_size: np.ndarray | float, init_batch_size: float) -> np.ndarray:
    """Statistical efficiency of `batch_size` relative to `init_batch_size` (1 at B₀)."""
    scale = np.asarray(batch_size, dtype=float) / init_batch_size
    if grad is None:
        return np.ones_like(scale)
    sqr, var = max(grad.sqr, 0.0), max(grad.var, 0.0)
    denom = var / scale + sqr
    gain = np.where(denom > 0, (var + sqr) / np.where(denom > 0, denom, 1.0), 1.0)
    return gain / scale


def split_batch(
    batch_size: np.ndarray | float, num_replicas: np.ndarray | float, max_local_bsz: float, init_batch_size: float
) -> tuple[np.ndarray, np.ndarray]:
    """(atomic_bsz, accum_steps) for a total batch: accumulate when a GPU cannot hold its share.

    A single replica with a batch above B₀ accumulates at least once (Pollux: gradient statistics
    need two micro-batches to be estimated).
    """
    reps = np.asarray(num_replicas, dtype=float)
    local = np.asarray(batch_size, dtype=float) / reps
    accum = np.ceil(local / max_local_bsz - _EPS) - 1
    accum = np.where((reps == 1) & (local > init_batch_size + _EPS), np.maximum(accum, 1), accum)
    accum = np.maximum(accum, 0).astype(int)
    atomic = np.ceil(local / (accum + 1) - _EPS).astype(int)
    return atomic, accum


class GoodputFunction:
    """Goodput of one job on one GPU type: a fitted `PerfParams` plus gradient statistics."""

    def __init__(
        self,
        perf: PerfParams,
        grad: GradParams | None,
        init_batch_size: float,
        max_batch_size: float,
        local_bsz_range: tuple[float, float],
    ) -> None:
        self.perf = perf
        self.grad = grad
        self.init_batch_size = float(init_batch_size)
        self.max_batch_size = float(max(max_batch_size, init_batch_size))
        self.min_local, self.max_local = float(local_bsz_range[0]), float(local_bsz_range[1])

    def throughput(self, num_nodes, num_replicas, atomic_bsz, accum_steps=0) -> np.ndarray:
        t = step_time(self.perf, num_nodes, num_replicas, atomic_bsz, accum_steps)
        batch = np.asarray(num_replicas) * np.asarray(atomic_bsz) * (np.asarray(accum_steps) + 1)
        return batch / t

    def goodput(self, num_nodes, num_replicas, atomic_bsz, accum_steps=0) -> np.ndarray:
        batch = np.asarray(num_replicas) * np.asarray(atomic_bsz) * (np.asarray(accum_steps) + 1)
        eff = efficiency(self.grad, batch, self.init_batch_size)
        return self.throughput(num_nodes, num_replicas, atomic_bsz, accum_steps) * eff

    def optimize(
        self,
        num_nodes: np.ndarray | float,
        num_replicas: np.ndarray | float,
        *,
        batch_size: float | None = None,
        samples: int = 50,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Best (goodput, atomic_bsz, accum_steps) per (nodes, replicas); goodput 0 where invalid.

        With `batch_size` the total batch is fixed (no tuning); otherwise it is searched over
        `samples` geometric points in [max(B₀, min_local·r), max_batch_size].
        """
        nodes = np.atleast_1d(np.asarray(num_nodes, dtype=float))
        reps = np.atleast_1d(np.asarray(num_replicas, dtype=float))
        nodes, reps = np.broadcast_arrays(nodes, reps)
        if batch_size is not None:
            batch = np.full((1, reps.size), float(batch_size))
        else:
            lo = np.maximum(self.init_batch_size, self.min_local * reps)
            hi = np.maximum(self.max_batch_size, lo)
            batch = np.geomspace(lo, hi, samples)  # (samples, configs)
        atomic, accum = split_batch(batch, reps, self.max_local, self.init_batch_size)
        good = self.goodput(nodes, reps, atomic, accum)
        ok = (atomic >= self.min_local - _EPS) & (atomic <= self.max_local + _EPS)
        if batch_size is None:
            ok &= reps * self.min_local <= self.max_batch_size + _EPS
        else:
            ok |= atomic < self.min_local  # a fixed small batch is allowed below the profiled minimum
            ok &= atomic >= 1
        good = np.where(ok, good, 0.0)
        best = np.argmax(good, axis=0)
        cols = np.arange(reps.size)
        return good[best, cols], atomic[best, cols], accum[best, cols]
