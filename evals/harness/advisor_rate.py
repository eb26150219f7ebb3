"""Rate x plan (+ early exits) in the advisor evaluation, and the duration metrics all systems share.

History records carry what their logs measured (`measured_fields`: startup, wall time per step,
steps done / planned / per epoch); the rate estimator reads them back from the store's records.
The early-exit model and its prior strength are fitted on the history window only; the prior
strength is chosen on the dev corpus. Every system is scored on the same new jobs by:

* within 100%: |est - truth| / truth <= 1 (the paper's metric; it forgives under-estimates);
* median |ln(est / truth)|: symmetric in over- and under-estimates;
* Spearman rho between estimates and truths: what an SJF-like policy needs (the order);

overall, per final status (completed / failed / cancelled) and for jobs SchedMate matched or not.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from schedmate.agents.advisor.early_exit import DurationForecast, EarlyExitModel, ExitRecord, forecast
from schedmate.agents.advisor.rate_estimator import Plan, RatePlanEstimate, RateSample, estimate_rate_plan
from schedmate.embeddings.store import Match
from schedmate.htmlreport import Table
from schedmate.synthetic.jobs.generator import CorpusJob

__all__ = ["EXIT_PRIOR_GRID", "POINT_KINDS", "RateForecast", "abs_log_ratios", "choose_rate_params", "duration_metrics",
           "exit_calibration", "exit_records", "history_samples", "measured_fields", "rate_forecasts", "spearman"]

EXIT_PRIOR_GRID = (1.0, 3.0, 10.0, 30.0)
POINT_KINDS = ("p50", "mean", "plan")  # the forecast's median, its mean, or the full run (exits ignored)
MIN_STEPS_FOR_WALL_RATE = 20  # below this, teardown time swamps the wall time per step: use the logged step time


# ----------------------------------------------------------------------------------------- measured history


def measured_fields(r: CorpusJob) -> dict[str, Any]:
    """What a run's own logs measure (the tracker's view), for its `JobOutcome`."""
    spec = r.log_spec
    done = int(r.outcome.steps_done)
    startup = float(spec.get("startup_s") or 0.0) if done > 0 else None
    step = None
    # Wall time per step (evaluation and checkpoints included) only for runs that ended by finishing:
    # a failed or cancelled run's wall time also holds how it ended (a crash dump, a hang until the
    # watchdog fired, a drain), which is not training; its logged step time is used instead.
    finished = r.outcome.status == "completed"
    if finished and done >= MIN_STEPS_FOR_WALL_RATE and startup is not None and r.outcome.duration_s > startup:
        step = (r.outcome.duration_s - startup) / done
    elif done > 0 and spec.get("step_time_s"):
        step = float(spec["step_time_s"])
    spe = spec.get("steps_per_epoch")
    return {"startup_s": startup, "step_time_s": step, "steps_done": done, "steps_total": spec.get("steps"),
            "steps_per_epoch": int(spe) if spe else None}


def history_samples(recs: Sequence[CorpusJob], fps: Mapping[str, Mapping[str, Any]],
                    measured: Mapping[str, Mapping[str, Any]]) -> list[RateSample]:
    return [RateSample(job_id=r.id, model_name=fps[r.id].get("model_name"), dataset=fps[r.id].get("dataset"),
                       task_type=fps[r.id].get("task_type"), batch_size=fps[r.id].get("batch_size"), gpus=r.launch.gpus,
                       model_size_b=fps[r.id].get("model_size_b"), num_workers=fps[r.id].get("num_workers"),
                       seq_len=fps[r.id].get("seq_len"),
                       step_time_s=measured[r.id]["step_time_s"], steps_per_epoch=measured[r.id]["steps_per_epoch"],
                       startup_s=measured[r.id]["startup_s"],
                       sm_util=r.outcome.sm_util_steady if r.outcome.steps_done > 0 else None)
            for r in recs]


def exit_records(recs: Sequence[CorpusJob], fps: Mapping[str, Mapping[str, Any]],
                 measured: Mapping[str, Mapping[str, Any]]) -> list[ExitRecord]:
    """One `ExitRecord` per history job; a pre-step exit's run time is scaled by the startup the
    rate estimator expects for it from the *other* history jobs (its own startup was never logged)."""
    samples = history_samples(recs, fps, measured)
    out = []
    for r, _sample in zip(recs, samples, strict=True):  # strict: one sample per record
        m = measured[r.id]
        total = m["steps_total"] or 0
        early = r.outcome.status != "completed" or (total > 0 and m["steps_done"] < total)
        progress = (m["steps_done"] / total) if total > 0 else None
        ratio = None
        if early and m["steps_done"] == 0:
            others = [x for x in samples if x.job_id != r.id]
            ref = estimate_rate_plan(Plan.from_fields({**fps[r.id], "iterations": 1, "iteration_type": "steps"},
                                                      r.launch.gpus), others)
            if ref is not None and ref.startup_s > 0:
                ratio = r.outcome.duration_s / ref.startup_s
        out.append(ExitRecord(user=r.user, group=r.experiment, exited_early=early, progress=progress,
                              startup_ratio=ratio))
    return out


# ----------------------------------------------------------------------------------------- forecasts


@dataclass(frozen=True)
class RateForecast:
    rate: RatePlanEstimate | None  # None: no similar job with a measured speed (fallback used)
    forecast: DurationForecast | None
    fallback: tuple[float | None, float | None]

    @property
    def matched(self) -> bool:
        return self.rate is not None

    def point(self, kind: str = "p50") -> tuple[float | None, float | None]:
        """(duration, SM util): `kind` = p50 | mean | plan; the fallback's values when unmatched."""
        if self.rate is None or self.forecast is None:
            return self.fallback
        d = {"p50": self.forecast.p50_s, "mean": self.forecast.expected_s, "plan": self.forecast.plan_s}[kind]
        return d, self.rate.sm_util if self.rate.sm_util is not None else self.fallback[1]


def rate_forecasts(recs: Sequence[CorpusJob], fps: Mapping[str, Mapping[str, Any]],
                   pools: Mapping[str, Sequence[Match]], exits: EarlyExitModel,
                   fallback: Mapping[str, tuple[float | None, float | None]]) -> dict[str, RateForecast]:
    """Rate x plan from each job's retrieved pool (store records), combined with the early-exit model."""
    out = {}
    for r in recs:
        samples = [RateSample.from_record(m.record) for m in pools[r.id] if m.record is not None]
        est = estimate_rate_plan(Plan.from_fields(fps[r.id], r.launch.gpus), samples)
        fc = None
        if est is not None:
            fc = forecast(est.startup_s, est.train_s, est.spread, exits.p_exit(r.user, r.experiment),
                          exits.positions(r.user))
        out[r.id] = RateForecast(est, fc, fallback[r.id])
    return out


def choose_rate_params(dev_new: Sequence[CorpusJob], dev_fps: Mapping[str, Mapping[str, Any]],
                       dev_pools: Mapping[str, Sequence[Match]], dev_exits: Sequence[ExitRecord],
                       dev_fallback: Mapping[str, tuple[float | None, float | None]],
                       grid: Sequence[float] = EXIT_PRIOR_GRID, kinds: Sequence[str] = POINT_KINDS,
                       ) -> tuple[float, str, list[dict[str, Any]]]:
    """Early-exit prior strength and point estimate (p50 / mean / plan) minimising the dev split's
    median |ln ratio| over all new jobs (ties: the stronger prior, then the order of `kinds`)."""
    curve: list[dict[str, Any]] = []
    truths = [r.outcome.duration_s for r in dev_new]
    for m in grid:
        model = EarlyExitModel(prior_strength=m).fit(dev_exits)
        fc = rate_forecasts(dev_new, dev_fps, dev_pools, model, dev_fallback)
        for kind in kinds:
            est = [fc[r.id].point(kind)[0] for r in dev_new]
            lr = abs_log_ratios(est, truths)
            curve.append({"prior_strength": m, "kind": kind, "median_abs_log": float(np.median(lr)) if lr else None,
                          "within_100": share_within_100(est, truths)})
    best = min(curve, key=lambda c: (c["median_abs_log"] if c["median_abs_log"] is not None else math.inf,
                                     -c["prior_strength"], list(kinds).index(c["kind"])))
    return float(best["prior_strength"]), str(best["kind"]), curve


def share_within_100(estimates: Sequence[float | None], truths: Sequence[float | None]) -> float | None:
    pairs = _pairs(estimates, truths)
    return float(np.mean([abs(e - t) / t <= 1.0 for e, t in pairs])) if pairs else None


def exit_calibration(recs: Sequence[CorpusJob], exits: EarlyExitModel) -> dict[str, Any]:
    """Brier score of the early-exit probability on new jobs, against always saying the history's base rate."""
    y = np.array([r.outcome.status != "completed" or r.outcome.early_stopped for r in recs], dtype=float)
    if not len(y):
        return {"n": 0}
    p = np.array([exits.p_exit(r.user, r.experiment) for r in recs])
    return {"n": int(len(y)), "exit_share": float(y.mean()), "brier_model": float(np.mean((p - y) ** 2)),
            "brier_base_rate": float(np.mean((exits.base_rate - y) ** 2))}


# ----------------------------------------------------------------------------------------- metrics


def _pairs(estimates: Sequence[float | None], truths: Sequence[float | None]) -> list[tuple[float, float]]:
    return [(float(e), float(t)) for e, t in zip(estimates, truths, strict=True)
            if e is not None and t is not None and math.isfinite(e) and e > 0 and t > 0]


def abs_log_ratios(estimates: Sequence[float | None], truths: Sequence[float | None]) -> list[float]:
    """|ln(est / truth)| for pairs with a positive estimate and truth (0 = exact, ln 2 = off by 2x)."""
    return [abs(math.log(e / t)) for e, t in _pairs(estimates, truths)]


def spearman(estimates: Sequence[float | None], truths: Sequence[float | None]) -> float | None:
    """Spearman rank correlation (average ranks for ties); None with < 3 pairs or a constant side."""
    pairs = _pairs(estimates, truths)
    if len(pairs) < 3:
        return None
    e, t = zip(*pairs, strict=True)
    if len(set(e)) < 2 or len(set(t)) < 2:
        return None
    return float(spearmanr(e, t).statistic)


def _block(est: Sequence[float | None], truth: Sequence[float]) -> dict[str, Any]:
    pairs = _pairs(est, truth)
    if not pairs:
        return {"n": 0}
    rel = [abs(e - t) / t for e, t in pairs]
    lr = abs_log_ratios(est, truth)
    return {"n": len(pairs), "within_100": float(np.mean(np.asarray(rel) <= 1.0)),
            "median_abs_log": float(np.median(lr)), "spearman": spearman(est, truth),
            "over_share": float(np.mean([e > t for e, t in pairs]))}


def duration_metrics(recs: Sequence[CorpusJob], table: Mapping[str, tuple[float | None, float | None]],
                     matched: set[str]) -> dict[str, Any]:
    """Duration metrics overall, per final status and for SchedMate-matched vs unmatched jobs."""
    def sub(rs: Sequence[CorpusJob]) -> dict[str, Any]:
        return _block([table[r.id][0] for r in rs], [r.outcome.duration_s for r in rs])

    out: dict[str, Any] = {"all": sub(recs)}
    for status in ("completed", "failed", "cancelled"):
        out[status] = sub([r for r in recs if r.outcome.status == status])
    out["matched"] = sub([r for r in recs if r.id in matched])
    out["unmatched"] = sub([r for r in recs if r.id not in matched])
    return out


SYSTEM_LABELS = {
    "schedmate": "SchedMate mean-of-matches (paper)",
    "schedmate_rate": "SchedMate rate x plan + early exit (point chosen on dev)",
    "schedmate_rate_p50": "SchedMate rate x plan + early exit (p50)",
    "schedmate_rate_mean": "SchedMate rate x plan + early exit (mean)",
    "schedmate_rate_plan": "SchedMate rate x plan, no exit model",
    "lucid_ebm": "Lucid-style EBM (user, GPUs, submit time)",
    "same_user_gpus": "Same user + GPUs",
}


def duration_table(metrics: Mapping[str, Mapping[str, Any]]) -> Table:
    """Every system's duration figures on the same jobs, one row each (rendered by the shared report layer)."""
    def pct(x: Any) -> str:
        return "n/a" if x is None else f"{100 * x:.1f}%"

    def num(x: Any) -> str:
        return "n/a" if x is None else f"{x:.2f}"

    rows = [[label, pct(m["all"].get("within_100")), pct(m["completed"].get("within_100")),
             pct(m["failed"].get("within_100")), pct(m["cancelled"].get("within_100")),
             pct(m["matched"].get("within_100")), pct(m["unmatched"].get("within_100")),
             num(m["all"].get("median_abs_log")), num(m["all"].get("spearman")), num(m["completed"].get("median_abs_log"))]
            for key, label in SYSTEM_LABELS.items() if (m := metrics.get(key))]
    return Table(["system", "within 100% all", "completed", "failed", "cancelled", "matched", "unmatched",
                  "median abs ln", "Spearman", "median abs ln completed"], rows)
