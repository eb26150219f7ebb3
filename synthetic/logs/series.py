"""The true per-step numbers a log reports: step time, loss, learning rate, gradient norm.

Step time = base × warm-up factor × slowdown factor × log-normal jitter, with rare spikes:
- warm-up: step 1 is `warmup_factor` times slower, decaying quadratically to 1 at `warmup_steps`;
- slowdown: from `slowdown_step` on (a co-located job arrived), every step is `slowdown_factor`
  times slower.
Loss follows a power law towards a floor with multiplicative noise. Everything is drawn in
order, chunk by chunk, from one generator, so a log never holds more than one chunk of per-step
arrays in memory and the numbers do not depend on how the caller chunks (the chunk size is fixed).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class SeriesParams:
    base_step_time: float
    jitter: float
    warmup_steps: int
    warmup_factor: float
    slowdown_step: int | None  # first slowed step (1-based), None for no co-located job
    slowdown_factor: float
    spike_prob: float
    loss_start: float
    loss_end: float
    loss_halflife: float
    loss_alpha: float
    loss_noise: float
    lr_peak: float
    lr_warmup: int
    total_steps: int
    grad_norm0: float

    @classmethod
    def draw(cls, rng: np.random.Generator, *, base_step_time: float, warmup_steps: int, warmup_factor: float,
             slowdown_step: int | None, slowdown_factor: float, total_steps: int) -> SeriesParams:
        loss_end = float(rng.uniform(1.2, 3.0))
        return cls(
            base_step_time=base_step_time, jitter=float(rng.uniform(0.01, 0.06)), warmup_steps=warmup_steps,
            warmup_factor=warmup_factor, slowdown_step=slowdown_step, slowdown_factor=slowdown_factor,
            spike_prob=float(rng.choice([0.0, 0.001, 0.003])), loss_start=float(rng.uniform(7.0, 11.5)),
            loss_end=loss_end, loss_halflife=float(rng.uniform(20, 400)), loss_alpha=float(rng.uniform(0.4, 0.9)),
            loss_noise=float(rng.uniform(0.005, 0.03)), lr_peak=float(rng.choice([1e-4, 2e-4, 3e-4, 6e-4, 1.5e-4, 2e-5])),
            lr_warmup=int(rng.choice([100, 500, 2000])), total_steps=total_steps, grad_norm0=float(rng.uniform(2.0, 12.0)),
        )


class Series:
    """Draws steps `[s0, s1)` (1-based) in order."""

    def __init__(self, params: SeriesParams, rng: np.random.Generator) -> None:
        self.p = params
        self.rng = rng
        self.next_step = 1

    def draw(self, s0: int, s1: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Step times (s), losses and gradient norms of steps s0..s1-1."""
        if s0 != self.next_step:
            raise ValueError("steps must be drawn in order")
        self.next_step = s1
        p = self.p
        n = s1 - s0
        s = np.arange(s0, s1, dtype=np.float64)
        z = self.rng.standard_normal((3, n))
        t = p.base_step_time * np.exp(p.jitter * z[0])
        if p.warmup_steps > 0 and s0 <= p.warmup_steps:
            w = np.clip((p.warmup_steps - s + 1) / p.warmup_steps, 0.0, 1.0)
            t *= 1.0 + (p.warmup_factor - 1.0) * w * w
        if p.slowdown_step is not None and s1 > p.slowdown_step:
            t[s >= p.slowdown_step] *= p.slowdown_factor
        if p.spike_prob > 0:
            u = self.rng.random(n)
            spikes = u < p.spike_prob
            if spikes.any():
                t[spikes] *= 2.0 + 2.0 * u[spikes] / p.spike_prob
        loss = (p.loss_end + (p.loss_start - p.loss_end) * (1.0 + s / p.loss_halflife) ** (-p.loss_alpha)) * (
            1.0 + p.loss_noise * z[1]
        )
        gnorm = p.grad_norm0 * (1.0 + s / 200.0) ** -0.35 * np.exp(0.15 * z[2]) + 0.05
        return t, loss, gnorm

    def lr(self, steps: np.ndarray) -> np.ndarray:
        """Linear warm-up then cosine decay to 10% of the peak."""
        p = self.p
        steps = np.asarray(steps, dtype=np.float64)
        warm = p.lr_peak * np.minimum(1.0, steps / max(1, p.lr_warmup))
        frac = np.clip((steps - p.lr_warmup) / max(1, p.total_steps - p.lr_warmup), 0.0, 1.0)
        cos = p.lr_peak * (0.1 + 0.9 * 0.5 * (1.0 + np.cos(np.pi * frac)))
        return np.where(steps < p.lr_warmup, warm, cos)
