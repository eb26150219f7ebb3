"""Lucid's Workload Estimate Model: an EBM (GA²M) duration regressor on thin metadata, online.

Lucid trains `ExplainableBoostingRegressor(learning_rate=0.01, interactions=20)` on jobs
submitted before the evaluation window and retrains it at every week boundary (its "weekly
update"); the queue is then ordered by estimated duration × GPUs, like QSSF. In a simulation
there is no history before the trace, so this estimator learns online from the simulation itself:

- **Training data**: finished jobs only, as they finish (`observe`, called from the policy's
  `on_finish`), each with the features it had when it entered the queue. A fit therefore only
  ever sees jobs whose end time is ≤ the fit time (`fit_log` records both, for tests).
- **Features**: user, VC (categorical), GPUs, submit hour and day of week, plus the profiled
  metrics (speed, GPU util, GPU-memory util, GPU memory) when the job was profiled (NaN
  otherwise: EBM keeps a separate bin for missing values). Lucid also fed `job_id`, which looks
  accidental and is left out. The target is log1p(duration): the durations span six orders of
  magnitude and only the order matters; predictions are expm1'd (Lucid clamped negative raw
  predictions to 1000 s instead).
- **Schedule**: the first fit once `min_train` jobs have finished; afterwards a refit whenever
  the history has doubled since the last fit (so a one-day trace is not stuck with a model fit
  on its first 200 jobs), and at every `period` boundary of simulated time (weekly, as Lucid)
  provided the history grew by `min_growth` (25%) since the last fit (an overloaded cluster
  drains for months after the last arrival; refitting on the same jobs every week is waste).
  That bounds the fits by O(log n) plus the weeks with real news. At most the `max_train` most
  recent jobs are used.
- **Before the first fit**: the mean log duration of the same user's finished jobs, else of all
  finished jobs, else `default_duration`.

Cost (measured on this machine, 2 busy cores, interpret 0.7.8, ~1.6k training jobs): a fit
takes ~40 s with Lucid's settings (`EBMConfig.lucid()`), ~3 s with the default, ~1 s with
`EBMConfig.fast()`. A predict call costs ~1-3 ms whatever the batch size (1 or 500 rows; fed
a numpy object array, which is 5x cheaper than a DataFrame), so the policy batches: it
estimates all jobs entering the queue since the last scheduling pass in one call, and
re-estimates the whole queue in one call after each fit. `fit_log` and `stats()` report the
fits and their wall time.
"""

from __future__ import annotations

import math
import time as wallclock
import warnings
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..job import JobSpec
from .data import Metrics

_DAY = 86_400.0
WEEK = 7 * _DAY
FEATURES = ("user", "vc", "gpus", "hour", "dayofweek", "speed", "gpu_util", "gmem_util", "gmem")
CATEGORICAL = ("user", "vc")

Row = tuple[Any, ...]
"""One job's features, in `FEATURES` order."""


@dataclass(frozen=True)
class EBMConfig:
    """Arguments for `ExplainableBoostingRegressor`.

    The default is a small GA²M (3 pairwise interactions, 2 bags, ≤ 300 rounds at rate 0.04):
    ~3 s a fit on 1.6k jobs here. `lucid()` is the notebook's setting (rate 0.01, 20
    interactions, interpret's defaults otherwise: ~40 s a fit), `fast()` drops interactions (~1 s).
    On held-out Philly and synthetic jobs all three rank durations about equally (Spearman within
    ±0.05 of each other), so the cheap default loses nothing measurable on these traces.
    """

    learning_rate: float = 0.04
    interactions: int = 3
    outer_bags: int = 2
    smoothing_rounds: int = 20
    interaction_smoothing_rounds: int = 10
    max_rounds: int = 300
    n_jobs: int = 1
    random_state: int = 0

    @classmethod
    def fast(cls) -> EBMConfig:
        """Main effects only (a GAM): for tests and quick sweeps."""
        return cls(interactions=0, interaction_smoothing_rounds=0)

    @classmethod
    def lucid(cls) -> EBMConfig:
        """Lucid's notebook: learning_rate 0.01, 20 interactions, interpret's defaults otherwise."""
        return cls(
            learning_rate=0.01, interactions=20, outer_bags=14, smoothing_rounds=500,
            interaction_smoothing_rounds=100, max_rounds=50000, n_jobs=-2,
        )


@dataclass(frozen=True, slots=True)
class FitRecord:
    time: float  # simulated time of the fit
    rows: int
    latest_end: float  # latest end time among the training jobs (≤ time)
    seconds: float  # wall time of the fit


def job_features(spec: JobSpec, metrics: Metrics | None) -> Row:
    t = spec.submit_time
    m = metrics.as_list() if metrics is not None else [math.nan] * 4
    return (spec.user or "-", spec.vc or "-", float(spec.num_gpus), (t % _DAY) / 3600.0, float((t // _DAY) % 7), *m)


@dataclass
class DurationEstimator:
    config: EBMConfig = field(default_factory=EBMConfig)
    min_train: int = 200
    period: float = WEEK
    doubling: bool = True
    min_growth: float = 0.25
    max_train: int = 20_000
    default_duration: float = 600.0
    _rows: list[Row] = field(default_factory=list)
    _targets: list[float] = field(default_factory=list)
    _ends: list[float] = field(default_factory=list)
    _ids: list[str] = field(default_factory=list)
    _user: dict[str, list[float]] = field(default_factory=lambda: defaultdict(lambda: [0.0, 0.0]))
    _total: list[float] = field(default_factory=lambda: [0.0, 0.0])
    _model: Any = None
    _columns: list[str] = field(default_factory=list)
    _index: list[int] = field(default_factory=list)
    _last_fit_rows: int = 0
    _last_fit_time: float = -math.inf
    fits: int = 0
    fit_log: list[FitRecord] = field(default_factory=list)
    train_ids: tuple[str, ...] = ()  # job ids of the latest fit
    predict_calls: int = 0
    predicted_rows: int = 0
    predict_seconds: float = 0.0

    # -------------------------------------------------------------------- learning
    def observe(self, job_id: str, row: Row, duration: float, end_time: float) -> bool:
        """Learn from a job that has finished at `end_time`; True when this triggered a refit."""
        y = math.log1p(max(0.0, duration))
        self._rows.append(row)
        self._targets.append(y)
        self._ends.append(end_time)
        self._ids.append(job_id)
        acc = self._user[str(row[0])]
        acc[0] += y
        acc[1] += 1
        self._total[0] += y
        self._total[1] += 1
        if self._due(end_time):
            self.fit(end_time)
            return True
        return False

    def _due(self, now: float) -> bool:
        n = len(self._targets)
        if n < self.min_train:
            return False
        if self._model is None:
            return True
        if self.doubling and n >= 2 * self._last_fit_rows and self._last_fit_rows < self.max_train:
            return True
        new_week = math.floor(now / self.period) > math.floor(self._last_fit_time / self.period)
        return new_week and n >= (1.0 + self.min_growth) * self._last_fit_rows

    def fit(self, now: float) -> None:
        from interpret.glassbox import ExplainableBoostingRegressor

        started = wallclock.perf_counter()
        lo = max(0, len(self._rows) - self.max_train)
        frame = pd.DataFrame(self._rows[lo:], columns=list(FEATURES))
        # Columns with no information (never profiled, one user) only slow EBM down.
        columns = [c for c in FEATURES if frame[c].notna().any() and frame[c].nunique(dropna=False) > 1]
        if not columns:
            columns = ["gpus"]
        y = np.asarray(self._targets[lo:], dtype=float)
        cfg = asdict(self.config)
        types = ["nominal" if c in CATEGORICAL else "continuous" for c in columns]
        model = ExplainableBoostingRegressor(feature_names=columns, feature_types=types, **cfg)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(frame[columns], y)
        self._model, self._columns = model, columns
        self._index = [FEATURES.index(c) for c in columns]
        self._last_fit_rows = len(self._rows)
        self._last_fit_time = now
        self.train_ids = tuple(self._ids[lo:])
        self.fits += 1
        self.fit_log.append(FitRecord(now, len(y), max(self._ends[lo:]), wallclock.perf_counter() - started))

    # -------------------------------------------------------------------- prediction
    def _fallback(self, row: Row) -> float:
        user = self._user.get(str(row[0]))
        if user is not None and user[1]:
            return math.expm1(user[0] / user[1])
        if self._total[1]:
            return math.expm1(self._total[0] / self._total[1])
        return self.default_duration

    def predict_many(self, rows: list[Row]) -> list[float]:
        """Estimated durations (seconds, ≥ 1) for many jobs in one model call."""
        if not rows:
            return []
        if self._model is None:
            return [max(1.0, self._fallback(r)) for r in rows]
        started = wallclock.perf_counter()
        idx = self._index
        x = np.array([[r[i] for i in idx] for r in rows], dtype=object)  # 5x cheaper than a DataFrame
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pred = self._model.predict(x)
        self.predict_calls += 1
        self.predicted_rows += len(rows)
        self.predict_seconds += wallclock.perf_counter() - started
        return [max(1.0, float(v)) for v in np.expm1(np.clip(pred, 0.0, 30.0))]

    def stats(self) -> dict[str, float]:
        fit_s = sum(f.seconds for f in self.fit_log)
        return {
            "fits": self.fits,
            "fit_seconds": round(fit_s, 3),
            "predict_calls": self.predict_calls,
            "predicted_rows": self.predicted_rows,
            "predict_seconds": round(self.predict_seconds, 3),
        }
