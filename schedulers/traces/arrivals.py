"""Bursty, diurnal job arrivals: a Markov-modulated Poisson process times a daily cycle.

GPU-cluster submissions follow the working day (Helios, Acme and Philly all show daytime peaks)
and come in bursts (hyper-parameter sweeps, retries, deadline pushes). A homogeneous Poisson
process has neither, and both matter for queueing delay. The intensity has the shape

    h(t) = (1 + A cos(2 pi (t / 86400 - peak_hour / 24))) * (B if bursting else 1)

(t = 0 is midnight), where the burst state is a two-state Markov chain with exponential calm and
burst sojourns. Arrivals are drawn by time rescaling: the gaps of a unit-rate Poisson process,
mapped through the inverse of the integrated intensity and scaled so that the n arrivals span
exactly `span` seconds. Fixing the span (rather than a rate) is what lets the generator hit a
target load exactly, while keeping the day 24 h long and bursts where the chain puts them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

DAY = 86_400.0
_MAX_GRID = 2_000_000  # intensity-grid points; 60 s steps up to ~3.8 years


@dataclass(frozen=True, slots=True)
class ArrivalModel:
    """Shape of the arrival process; its rate comes from the target load."""

    diurnal_amplitude: float = 0.5  # A in [0, 1): peak/trough rate ratio (1+A)/(1-A) = 3
    peak_hour: float = 14.0  # hour of day with the most submissions
    burst_factor: float = 4.0  # B >= 1: rate multiplier while bursting
    mean_burst_s: float = 1_800.0  # mean length of a burst
    mean_calm_s: float = 6 * 3_600.0  # mean time between bursts

    def __post_init__(self) -> None:
        if not 0.0 <= self.diurnal_amplitude < 1.0:
            raise ValueError(f"diurnal_amplitude must be in [0, 1), got {self.diurnal_amplitude}")
        if self.burst_factor < 1.0 or self.mean_burst_s <= 0.0 or self.mean_calm_s <= 0.0:
            raise ValueError("burst_factor must be >= 1 and burst/calm means > 0")

    @property
    def burst_share(self) -> float:
        """Long-run fraction of time spent bursting."""
        return self.mean_burst_s / (self.mean_burst_s + self.mean_calm_s)


def arrival_times(n: int, span: float, model: ArrivalModel, rng: np.random.Generator) -> np.ndarray:
    """`n` sorted arrival times, the first at 0 and the last at `span` seconds (for n >= 2)."""
    if n <= 0:
        return np.zeros(0)
    if n == 1 or span <= 0.0:
        return np.zeros(n)
    grid = np.linspace(0.0, span, int(min(_MAX_GRID, max(1_000, span / 60.0))) + 1)
    shape = 1.0 + model.diurnal_amplitude * np.cos(
        2.0 * math.pi * (grid / DAY - model.peak_hour / 24.0)
    )
    shape = np.where(_bursting(grid, model, rng), shape * model.burst_factor, shape)
    integral = np.concatenate(([0.0], np.cumsum(0.5 * (shape[1:] + shape[:-1]) * np.diff(grid))))
    epochs = np.cumsum(rng.exponential(size=n - 1))
    targets = np.concatenate(([0.0], epochs / epochs[-1])) * integral[-1]
    times = np.interp(targets, integral, grid)
    times[-1] = span  # exact despite interpolation round-off
    return times


def _bursting(grid: np.ndarray, model: ArrivalModel, rng: np.random.Generator) -> np.ndarray:
    """Burst state of the two-state chain at each grid time, started in its stationary law."""
    state = bool(rng.random() < model.burst_share)
    edges, states, t = [0.0], [state], 0.0
    while True:
        t += float(rng.exponential(model.mean_burst_s if state else model.mean_calm_s))
        if t >= grid[-1]:
            break
        state = not state
        edges.append(t)
        states.append(state)
    return np.asarray(states)[np.searchsorted(edges, grid, side="right") - 1]
