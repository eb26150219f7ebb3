"""Baseline duration / utilisation estimators on sparse submission metadata.

* `EBMEstimator`: Lucid's duration model (a GA2M, here interpret's
  `ExplainableBoostingRegressor`) on what a scheduler sees at submission: user, GPU count and
  submit-time features (hour of day, day of week); trained on log duration. The same features
  fit a second model for SM utilisation (Lucid itself profiles utilisation; we have no profiler).
* `SameUserGpusEstimator`: history matching as simple schedulers do it (QSSF-style): mean outcome
  of past jobs by the same user with the same GPU count, else the same user, else all history.

Both implement `estimator.FallbackEstimator`, so either can be the advisor's no-match fallback.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from schedmate.agents.advisor.estimator import JobQuery

__all__ = ["EBMEstimator", "HistoryRow", "SameUserGpusEstimator", "sparse_features"]

DAY_S = 86400.0


@dataclass(frozen=True)
class HistoryRow:
    job: JobQuery
    duration_s: float
    sm_util: float | None = None


def sparse_features(jobs: Sequence[JobQuery], features: Sequence[str]) -> pd.DataFrame:
    cols: dict[str, list[object]] = {f: [] for f in features}
    for j in jobs:
        t = j.submit_time or 0.0
        values = {
            "user": j.user or "?", "vc": j.vc or "?", "gpus": int(j.gpus or 0), "name": j.name or "?",
            "hour": int((t % DAY_S) // 3600), "weekday": int((t // DAY_S) % 7),
        }
        for f in features:
            cols[f].append(values[f])
    df = pd.DataFrame(cols)
    for f in features:
        if f in ("user", "vc", "name"):
            df[f] = df[f].astype(str)
    return df


class EBMEstimator:
    """Lucid-style GA2M duration model (and a utilisation model) on sparse metadata."""

    name = "lucid-ebm"

    def __init__(self, features: Sequence[str] = ("user", "gpus", "hour", "weekday"), *, outer_bags: int = 8,
                 random_state: int = 0, n_jobs: int = 1, **ebm_kwargs: object) -> None:
        self.features = tuple(features)
        self.kw = {"outer_bags": outer_bags, "random_state": random_state, "n_jobs": n_jobs, **ebm_kwargs}
        self._dur = None
        self._util = None
        self._fallback_d: float | None = None
        self._fallback_u: float | None = None

    def fit(self, rows: Sequence[HistoryRow]) -> EBMEstimator:
        from interpret.glassbox import ExplainableBoostingRegressor  # deferred: slow import

        if len(rows) < 5:
            raise ValueError(f"need at least 5 historical jobs to fit, got {len(rows)}")
        X = sparse_features([r.job for r in rows], self.features)
        y = np.log1p(np.array([max(0.0, r.duration_s) for r in rows]))
        self._dur = ExplainableBoostingRegressor(**self.kw).fit(X, y)
        self._fallback_d = float(np.median([r.duration_s for r in rows]))
        with_u = [r for r in rows if r.sm_util is not None]
        if len(with_u) >= 5:
            Xu = sparse_features([r.job for r in with_u], self.features)
            self._util = ExplainableBoostingRegressor(**self.kw).fit(Xu, np.array([r.sm_util for r in with_u]))
            self._fallback_u = float(np.median([r.sm_util for r in with_u]))
        return self

    def predict_many(self, jobs: Sequence[JobQuery]) -> list[tuple[float | None, float | None]]:
        if self._dur is None:
            raise RuntimeError("EBMEstimator is not fitted")
        X = sparse_features(jobs, self.features)
        d = np.expm1(self._dur.predict(X))
        u = np.clip(self._util.predict(X), 0.0, 100.0) if self._util is not None else [None] * len(jobs)
        return [(float(max(d_i, 0.0)), None if u_i is None else float(u_i)) for d_i, u_i in zip(d, u, strict=True)]

    def predict(self, job: JobQuery) -> tuple[float | None, float | None]:
        return self.predict_many([job])[0]


class SameUserGpusEstimator:
    """Mean outcome of the same user's past jobs with the same GPU count (backing off to the user, then all)."""

    name = "same-user-same-gpus"

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, int], list[HistoryRow]] = defaultdict(list)
        self._by_user: dict[str, list[HistoryRow]] = defaultdict(list)
        self._all: list[HistoryRow] = []

    def fit(self, rows: Sequence[HistoryRow]) -> SameUserGpusEstimator:
        for r in rows:
            self.add(r)
        return self

    def add(self, row: HistoryRow) -> None:
        self._by_key[(row.job.user or "?", int(row.job.gpus or 0))].append(row)
        self._by_user[row.job.user or "?"].append(row)
        self._all.append(row)

    def predict(self, job: JobQuery) -> tuple[float | None, float | None]:
        for pool in (self._by_key.get((job.user or "?", int(job.gpus or 0))), self._by_user.get(job.user or "?"),
                     self._all):
            if pool:
                d = float(np.mean([r.duration_s for r in pool]))
                us = [r.sm_util for r in pool if r.sm_util is not None]
                u = float(np.mean(us)) if us else None
                if pool is self._all:  # global: median is the robust default
                    d = float(np.median([r.duration_s for r in pool]))
                    u = float(np.median(us)) if us else None
                return d, u
        return None, None

    def level(self, job: JobQuery) -> str:
        if self._by_key.get((job.user or "?", int(job.gpus or 0))):
            return "user+gpus"
        return "user" if self._by_user.get(job.user or "?") else "all"
