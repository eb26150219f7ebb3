"""Early exits: how likely a run ends before its plan, and where, learned from past runs.

Two in five cluster jobs fail and some are cancelled or stop early; no code says which. What the
history does say is how often a user's runs, and runs of the same job name (an experiment), ended
before their plan, and where they ended: before the first step (as a fraction of the startup) or
part-way (as the fraction of planned steps done). The exit probability is shrunk from the global
rate to the user's, then to the job name's (a Beta prior of strength `prior_strength` at each
level), so one failed rerun does not make a 100% forecast.

`forecast(rate_plan, p_exit, positions)` turns a full-run estimate and this model into a
predictive distribution (weighted points), its mean, p50 and p90. The p50 is the point estimate
that minimises the expected |ln(estimate / truth)|.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["DurationForecast", "EarlyExitModel", "ExitPositions", "ExitRecord", "forecast", "shrunk_rate",
           "weighted_quantile"]

_Z = (-1.2816, -0.5244, 0.0, 0.5244, 1.2816)  # normal deciles 10/30/50/70/90: the full-run spread


@dataclass(frozen=True)
class ExitRecord:
    """One past run as its logs describe it."""

    user: str | None
    group: str | None  # job name / experiment
    exited_early: bool  # ended before its planned steps (failed, cancelled, stopped early)
    progress: float | None = None  # steps done / steps planned at the exit; 0 = before the first step
    startup_ratio: float | None = None  # pre-step exits: run time / the expected startup of such a job


@dataclass(frozen=True)
class ExitPositions:
    """Where exits end: share before the first step, and the observed positions of each kind."""

    pre_step_share: float
    startup_ratios: tuple[float, ...]  # pre-step exits: duration / startup
    progress: tuple[float, ...]  # part-way exits: fraction of planned steps done


def shrunk_rate(events: int, n: int, prior: float, strength: float) -> float:
    """Posterior mean of a rate with a Beta prior of mean `prior` and `strength` pseudo-runs."""
    return (events + strength * prior) / (n + strength) if n + strength > 0 else prior


@dataclass
class EarlyExitModel:
    """Exit probability per (user, job name) and exit positions per user, with back-off to all runs."""

    prior_strength: float = 5.0
    min_positions: int = 5  # a user's own exit positions are used once they have this many
    _n: int = field(default=0, init=False)
    _k: int = field(default=0, init=False)
    _user: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]), init=False)
    _group: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]), init=False)
    _pos: dict[str | None, list[ExitRecord]] = field(default_factory=lambda: defaultdict(list), init=False)

    def fit(self, records: Sequence[ExitRecord]) -> EarlyExitModel:
        for r in records:
            self._n += 1
            self._k += r.exited_early
            if r.user is not None:
                self._user[r.user][0] += r.exited_early
                self._user[r.user][1] += 1
            if r.group is not None:
                self._group[r.group][0] += r.exited_early
                self._group[r.group][1] += 1
            if r.exited_early and r.progress is not None:
                self._pos[None].append(r)
                if r.user is not None:
                    self._pos[r.user].append(r)
        return self

    @property
    def base_rate(self) -> float:
        return self._k / self._n if self._n else 0.0

    def p_exit(self, user: str | None, group: str | None) -> float:
        p = self.base_rate
        for table, key in ((self._user, user), (self._group, group)):
            if key is not None and key in table:
                k, n = table[key]
                p = shrunk_rate(k, n, p, self.prior_strength)
        return p

    def positions(self, user: str | None) -> ExitPositions:
        pool = self._pos.get(user, []) if user is not None else []
        if len(pool) < self.min_positions:
            pool = self._pos.get(None, [])
        pre = [r for r in pool if r.progress == 0.0]
        ratios = tuple(float(r.startup_ratio) for r in pre if r.startup_ratio is not None and r.startup_ratio > 0)
        prog = tuple(float(r.progress) for r in pool if r.progress is not None and r.progress > 0)
        return ExitPositions(pre_step_share=len(pre) / len(pool) if pool else 0.0, startup_ratios=ratios,
                             progress=prog)


@dataclass(frozen=True)
class DurationForecast:
    plan_s: float  # full run at the matched speed (no exit)
    p_exit: float
    expected_s: float
    p50_s: float
    p90_s: float


def weighted_quantile(values: Sequence[float], weights: Sequence[float], q: float) -> float:
    """The smallest value whose cumulative weight reaches q of the total (a step-function quantile)."""
    if not values:
        raise ValueError("no values")
    order = np.argsort(values, kind="stable")
    v = np.asarray(values, dtype=float)[order]
    w = np.asarray(weights, dtype=float)[order]
    cum = np.cumsum(w) / w.sum()
    return float(v[int(np.searchsorted(cum, q - 1e-12))])


def forecast(startup_s: float, train_s: float, spread: float, p_exit: float, pos: ExitPositions) -> DurationForecast:
    """Mixture of the full run (lognormal spread around startup + train) and the observed exit positions."""
    full = startup_s + train_s
    pts: list[float] = []
    wts: list[float] = []
    has_pre = bool(pos.startup_ratios) and pos.pre_step_share > 0 and startup_s > 0
    has_mid = bool(pos.progress) and pos.pre_step_share < 1
    p = p_exit if (has_pre or has_mid) else 0.0
    for z in _Z:
        pts.append(full * math.exp(z * spread))
        wts.append((1.0 - p) / len(_Z))
    share_pre = pos.pre_step_share if has_pre and has_mid else (1.0 if has_pre else 0.0)
    for r in pos.startup_ratios if has_pre else ():
        pts.append(r * startup_s)
        wts.append(p * share_pre / len(pos.startup_ratios))
    for f in pos.progress if has_mid else ():
        pts.append(startup_s + f * train_s)
        wts.append(p * (1.0 - share_pre) / len(pos.progress))
    pts, wts = [x for x, w in zip(pts, wts, strict=True) if w > 0], [w for w in wts if w > 0]
    mean = float(np.average(pts, weights=wts))
    return DurationForecast(plan_s=full, p_exit=p, expected_s=mean, p50_s=weighted_quantile(pts, wts, 0.5),
                            p90_s=weighted_quantile(pts, wts, 0.9))
