"""Lucid's throughput-aware throttle ("Prescient Adaptive Sharing") and its submission forecaster.

Lucid packs only under load: every 100 s it takes the Throughput Predict Model's forecast of GPU
jobs submitted per 10-minute bin for the next ≤5 bins after now, and disables packing when their
mean is ≤ 2 (`Lucid.check_pas`). Lucid's forecasts came from a notebook over the Venus cluster's
history (`Venus_throughput_pred.csv`); here the forecaster learns online from the submissions the
simulation itself has seen, so it works on any trace and never sees the future:

- **Series**: submissions per 10-min bin (`observe` at every arrival). Bin k is complete once
  the clock reaches its end; only complete bins are used.
- **Features** for the count of bin k, all from bins ≤ k−6 (1 h earlier; Lucid's smallest lag),
  so the next 5 bins are always predictable from complete data: the lags at 1 h, 3 h and 1 day
  (6, 18, 144 bins), a "soft" 1-day lag (mean of bins k−145..k−143), the mean, median and std of
  the 6 bins ending at k−6 (rolling 1 h), and the bin's hour of day. Missing history (the first
  day) is encoded as −1, which the trees split on.
- **Model**: scikit-learn `GradientBoostingRegressor` (50 trees of depth 3), fit on bins whose
  target is complete (k < current bin), at most the last two weeks, first once `min_train_bins`
  (6 h) exist and then once per simulated day that saw a submission (an overloaded cluster
  keeps draining long after the last arrival; nothing new is learnt then). Before the first fit the forecast is the mean of
  the last 6 complete bins (persistence); with no complete bin at all there is no forecast and
  packing stays on (Lucid's default when no prediction applies).

The forecast changes only when the clock enters a new bin or the model is refit, so the throttle
is cached per (bin, fit): one predict call per 10 simulated minutes at most (~2-4 ms each
here, most of it scikit-learn's input validation), and a fit takes ~0.5 s.
The threshold (2 jobs per 10 min) is Lucid's, calibrated on Venus (≈1,080 GPUs); it is an
absolute rate, so scale it for much smaller or larger clusters if needed.
"""

from __future__ import annotations

import math
import statistics
import warnings
from dataclasses import dataclass, field

import numpy as np
from sklearn.ensemble import GradientBoostingRegressor

BIN_SECONDS = 600.0
LEAD_BINS = 6  # features come from bins at least this far back (1 h)
HORIZON_BINS = 5  # Lucid averages the next ≤5 bins
_MISSING = -1.0


@dataclass
class SubmissionForecaster:
    bin_seconds: float = BIN_SECONDS
    min_train_bins: int = 36
    retrain_bins: int = 144
    max_train_bins: int = 2016
    seed: int = 0
    fits: int = 0
    fit_targets: list[int] = field(default_factory=list)  # last bin index used as a target, per fit
    predict_calls: int = 0
    _c: np.ndarray = field(default_factory=lambda: np.zeros(1024))  # submissions per bin (grows)
    _model: GradientBoostingRegressor | None = None
    _trees: list = field(default_factory=list)
    _base: float = 0.0
    _fit_bin: int = -1
    _pred: dict[int, float] = field(default_factory=dict)  # target bin → forecast of the current model

    @property
    def counts(self) -> list[int]:
        """Submissions per bin so far (bins after the last submission omitted)."""
        nz = np.flatnonzero(self._c)
        return [int(v) for v in self._c[: nz[-1] + 1]] if nz.size else []

    def bin_of(self, t: float) -> int:
        return int(math.floor(t / self.bin_seconds + 1e-9))

    def _reserve(self, n: int) -> None:
        if n > len(self._c):
            grown = np.zeros(max(n, 2 * len(self._c)))
            grown[: len(self._c)] = self._c
            self._c = grown

    def observe(self, t: float) -> None:
        """One job submitted at time `t`."""
        k = self.bin_of(t)
        self._reserve(k + 1)
        self._c[k] += 1

    def features(self, ks: np.ndarray, complete: int) -> np.ndarray:
        """Feature rows for target bins `ks`, from complete bins (< `complete`) ≤ k − LEAD_BINS."""
        ks = np.asarray(ks, dtype=np.int64)
        self._reserve(complete)
        if len(ks) <= 8:
            return np.asarray([self._row(int(k), complete) for k in ks], dtype=float)
        c = self._c[:complete]

        def at(idx: np.ndarray) -> np.ndarray:
            ok = (idx >= 0) & (idx < complete)
            return np.where(ok, c[np.clip(idx, 0, max(0, complete - 1))], np.nan) if complete else np.full(idx.shape, np.nan)

        base = ks - LEAD_BINS
        window = at(base[:, None] + np.arange(-5, 1)[None, :])  # the 6 bins (1 h) ending at k−6
        soft = at(ks[:, None] + np.array([-145, -144, -143])[None, :])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-missing rows give NaN, as intended
            gappy = bool(np.isnan(window).any())  # only in the first hour: the nan-aware forms are 10x slower
            stats = (np.nanmean, np.nanmedian, np.nanstd) if gappy else (np.mean, np.median, np.std)
            cols = [at(base), at(ks - 18), at(ks - 144), np.nanmean(soft, axis=1)]
            cols += [f(window, axis=1) for f in stats]
        x = np.column_stack([*cols, ((ks * self.bin_seconds) % 86_400.0) / 3600.0])
        return np.nan_to_num(x, nan=_MISSING)

    def _row(self, k: int, complete: int) -> list[float]:
        """`features` for one target bin in plain Python (cheaper than numpy for a few rows)."""
        c = self._c

        def at(i: int) -> float | None:
            return float(c[i]) if 0 <= i < complete else None

        base = k - LEAD_BINS
        window = [v for v in (at(i) for i in range(base - 5, base + 1)) if v is not None]
        soft = [v for v in (at(k - 145), at(k - 144), at(k - 143)) if v is not None]
        m = _MISSING
        out = [at(base), at(k - 18), at(k - 144), statistics.fmean(soft) if soft else None]
        if window:
            out += [statistics.fmean(window), float(np.median(window)), statistics.pstdev(window)]
        else:
            out += [None, None, None]
        out.append(((k * self.bin_seconds) % 86_400.0) / 3600.0)
        return [m if v is None else v for v in out]

    def _maybe_fit(self, complete: int) -> None:
        if complete < self.min_train_bins:
            return
        if self._model is not None and complete - self._fit_bin < self.retrain_bins:
            return
        if self._model is not None and not self._c[self._fit_bin : complete].any():
            return  # no submission since the last fit (the trace is over): keep the model
        lo = max(1, complete - self.max_train_bins)
        targets = np.arange(lo, complete)  # every target bin is complete: only the past is used
        x = self.features(targets, complete)
        y = self._c[targets].copy()
        model = GradientBoostingRegressor(n_estimators=50, max_depth=3, learning_rate=0.1, random_state=self.seed)
        self._model = model.fit(x, y)
        self._trees = [est.tree_ for est in model.estimators_[:, 0]]
        self._base = float(np.ravel(model.init_.constant_)[0])
        self._fit_bin = complete
        self._pred.clear()
        self.fits += 1
        self.fit_targets.append(complete - 1)

    def forecast(self, now: float) -> list[float] | None:
        """Forecast submissions for the next ≤5 bins after `now`; None when nothing is known."""
        b = self.bin_of(now)
        complete = b  # bins 0..b-1 are over
        if complete == 0:
            return None
        self._maybe_fit(complete)
        bins = list(range(b + 1, b + 1 + HORIZON_BINS))
        if self._model is None:
            self._reserve(complete)
            return [float(np.mean(self._c[max(0, complete - LEAD_BINS) : complete]))] * len(bins)
        todo = [k for k in bins if k not in self._pred]
        if todo:
            self.predict_calls += 1
            for k, v in zip(todo, self.predict(self.features(np.asarray(todo), complete)), strict=True):
                self._pred[k] = max(0.0, float(v))
        return [self._pred[k] for k in bins]

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The fitted model's prediction, summed from its trees directly: the same numbers as
        `GradientBoostingRegressor.predict`, without its ~2 ms of input validation per call."""
        x32 = np.ascontiguousarray(x, dtype=np.float32)
        assert self._model is not None  # predict() is called once the model is fitted
        lr = self._model.learning_rate
        total = np.full(len(x32), self._base)
        for tree in self._trees:
            total += lr * tree.predict(x32).reshape(len(x32), -1)[:, 0]
        return total


@dataclass
class Throttle:
    """Packing on when the forecast mean submissions per bin exceed `threshold` (Lucid: 2)."""

    forecaster: SubmissionForecaster = field(default_factory=SubmissionForecaster)
    threshold: float = 2.0
    enabled_when_unknown: bool = True
    last_forecast: float | None = None
    _key: tuple[int, int] | None = None
    _state: bool = True
    switches: int = 0

    def packing_enabled(self, now: float) -> bool:
        key = (self.forecaster.bin_of(now), self.forecaster.fits)
        if key != self._key:
            fc = self.forecaster.forecast(now)
            self.last_forecast = float(np.mean(fc)) if fc else None
            state = self.enabled_when_unknown if self.last_forecast is None else self.last_forecast > self.threshold
            if self._key is not None and state != self._state:
                self.switches += 1
            self._key = (self.forecaster.bin_of(now), self.forecaster.fits)  # a fit may just have happened
            self._state = state
        return self._state

    def next_change(self, now: float) -> float:
        """The next time the decision may change (the start of the next bin)."""
        return (self.forecaster.bin_of(now) + 1) * self.forecaster.bin_seconds
