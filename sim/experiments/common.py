"""Plumbing shared by the case-study experiments (Lucid, Sia, standalone): traces, sizing, output.

Each experiment compares a reference scheduler with and without SchedMate on the same jobs and
the same cluster, over several seeds, and writes JSON, CSV and PNG files. What they share lives
here so that the three report the same metrics in the same files:

- `MakeSource`: how an experiment obtains its `InsightSource` per seed and detection rate (the
  real `SimulationInsights` in reported runs; `OracleInsights` / `NullInsights` for smoke tests);
- trace windows (`load_window`, `time_window`) and the synthetic default (`synthetic_jobs`);
- `size_cluster`: the smallest search that makes the baseline queue (spec §8: avg queuing ≥ 30%
  of avg JCT, else no policy differs);
- `RunRow` / `write_experiment` / `ExperimentResult`: one row per (trace, arm, seed), aggregated
  over seeds, written as `results.json`, `results.csv`, per-seed job CSVs and JCT CDF plots;
- `SeedMap` / `serial_map`: how independent runs (seeds, sweep points) are mapped: in order here,
  or fanned out over a Ray cluster (`deploy.ray.sweep.RayMap`), with the same answers.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from schedmate.adapters.insights import AdvisorInsight, FailureInsight, InsightSource, TrackerReading
from schedmate.adapters.registry import detected
from schedmate.config import shared_data_dir
from schedmate.schedulers.engine import SimResult
from schedmate.schedulers.job import JobSpec, JobState
from schedmate.schedulers.metrics import Summary, write_outputs
from schedmate.schedulers.plots import plot_jct_cdf
from schedmate.schedulers.traces import generate_trace, load_trace

__all__ = [
    "DAY",
    "ExperimentResult",
    "MakeSource",
    "NullInsights",
    "OracleInsights",
    "RunRow",
    "SeedMap",
    "Sizing",
    "aggregate",
    "detected",
    "load_window",
    "plot_lines",
    "queue_share",
    "wait_stats",
    "shared_file",
    "size_cluster",
    "serial_map",
    "speedups",
    "synthetic_jobs",
    "time_window",
    "write_experiment",
]

DAY = 86_400.0
_T = TypeVar("_T")
_R = TypeVar("_R")


class SeedMap(Protocol):
    """Runs `fn` on each item (a seed, a sweep point) and returns the answers in item order.

    Runs must be independent (each builds its own policy, trace and RNG from its item), so where
    they run cannot change what they return."""

    def __call__(self, fn: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]: ...


def serial_map(fn: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]:
    """The default `SeedMap`: one run after another in this process."""
    return [fn(item) for item in items]


class MakeSource(Protocol):
    """Builds the insight source of one run: the jobs it will see, the seed, the detection rate."""

    def __call__(self, specs: Sequence[JobSpec], seed: int, detection_rate: float) -> InsightSource: ...


# ================================================================================= traces


def shared_file(*parts: str) -> Path | None:
    """`../shared/data/<parts>` when it exists (experiments skip a trace without it)."""
    base = shared_data_dir()
    path = base.joinpath(*parts) if base is not None else None
    return path if path is not None and path.is_file() else None


def time_window(
    jobs: Sequence[JobSpec], *, days: float, last_days: float | None = None, offset_days: float = 0.0
) -> list[JobSpec]:
    """Jobs submitted in a contiguous `days`-long window, rebased so the window starts at 0.

    The window starts `offset_days` after the start of the trace, or, with `last_days`, after
    the start of the trace's last `last_days` days (spec §8.1: a 3-day window of the last 30).
    """
    if not jobs:
        return []
    first = min(j.submit_time for j in jobs)
    last = max(j.submit_time for j in jobs)
    origin = max(first, last - last_days * DAY) if last_days is not None else first
    start = origin + offset_days * DAY
    end = start + days * DAY
    inside = sorted((j for j in jobs if start <= j.submit_time < end), key=lambda j: (j.submit_time, j.job_id))
    return [replace(j, submit_time=j.submit_time - start) for j in inside]


def load_window(
    path: str | Path, *, days: float = 3.0, last_days: float | None = None, offset_days: float = 0.0
) -> list[JobSpec]:
    """A `time_window` of a trace file in any format `load_trace` knows."""
    return time_window(load_trace(path).jobs, days=days, last_days=last_days, offset_days=offset_days)


def synthetic_jobs(
    n_jobs: int, seed: int, *, profile: str = "helios", cluster_gpus: int = 64, load: float = 0.9, max_gpus: int | None = 8
) -> list[JobSpec]:
    """The embedded default trace (no data files); `max_gpus` 8 keeps every job packable."""
    return generate_trace(n_jobs, seed, profile=profile, cluster_gpus=cluster_gpus, load=load, max_gpus=max_gpus).jobs


# ================================================================================= sizing


def queue_share(summary: Summary) -> float:
    """Avg queuing (to first start) / avg JCT (0 when undefined)."""
    if not (summary.mean_jct > 0 and math.isfinite(summary.mean_queueing)):
        return 0.0
    return summary.mean_queueing / summary.mean_jct


@dataclass(frozen=True)
class WaitStats:
    """Time finished jobs spent not running: JCT - run time (queues, requeues, held entry).

    `Summary.mean_queueing` stops at a job's first start, which for Lucid is usually a short
    profiling run right after submission; this counts every wait, so it is the queuing
    measure that compares across policies (and the one `size_cluster` should target).
    """

    mean_wait: float
    mean_jct: float

    @property
    def share(self) -> float:
        return self.mean_wait / self.mean_jct if self.mean_jct > 0 else 0.0


def wait_stats(result: SimResult) -> WaitStats:
    jobs = [j for j in result.jobs if j.end_time is not None and j.first_start is not None and j.phase.is_terminal]
    if not jobs:
        return WaitStats(math.nan, math.nan)
    jct = np.array([j.end_time - j.spec.submit_time for j in jobs if j.end_time is not None])  # all of them
    wait = np.maximum(0.0, jct - np.array([j.run_time for j in jobs]))
    return WaitStats(float(wait.mean()), float(jct.mean()))


@dataclass(frozen=True)
class Sizing:
    """The cluster chosen for an experiment and why (every size tried, with its queue share)."""

    gpus: int
    queue_share: float
    target: float
    tried: tuple[tuple[int, float], ...]

    @property
    def met(self) -> bool:
        return self.queue_share >= self.target


def size_cluster(
    run_baseline: Callable[[int], Summary | float],
    *,
    start_gpus: int,
    min_gpus: int = 16,
    step: float = 0.75,
    target: float = 0.3,
    gpus_per_node: int = 8,
) -> Sizing:
    """The largest cluster (from `start_gpus` down by `step`, whole nodes) whose baseline queues.

    `run_baseline(gpus)` returns the baseline's Summary (share = `queue_share`) or the share
    itself (e.g. `wait_stats(result).share`). Shrinking stops at the first size whose share is
    ≥ `target`; if none down to `min_gpus` gets there, the most queued size is returned with
    `met` False (report it).
    """
    tried: list[tuple[int, float]] = []
    gpus = _whole_nodes(start_gpus, gpus_per_node)
    while True:
        measured = run_baseline(gpus)
        share = float(measured) if isinstance(measured, (int, float)) else queue_share(measured)
        tried.append((gpus, share))
        if share >= target:
            return Sizing(gpus, share, target, tuple(tried))
        smaller = _whole_nodes(int(gpus * step), gpus_per_node)
        if smaller >= gpus:
            smaller = gpus - gpus_per_node
        if smaller < min_gpus:
            best = max(tried, key=lambda t: t[1])
            return Sizing(best[0], best[1], target, tuple(tried))
        gpus = smaller


def _whole_nodes(gpus: int, per_node: int) -> int:
    return max(per_node, (gpus // per_node) * per_node)


# ================================================================================= insight sources


class NullInsights(InsightSource):
    """SchedMate knows nothing: every answer is the base class's "does not know" (the adapter
    then behaves as its reference)."""

    def stats(self) -> dict[str, Any]:
        return {"source": "null"}


@dataclass
class OracleInsights(InsightSource):
    """SMOKE TESTS ONLY, never a reported result: answers from the simulator's ground truth.

    A detected job (`detected(job_id, seed, detection_rate)`) gets an advisor match whose
    duration is its true duration and whose metrics are `metrics_of(spec)` (the true
    steady-state profile); tracking returns before = 1, after = the true speed ratio around the event. Everything else
    is None. It shows what the adapters do with perfect information, not what SchedMate does.
    """

    seed: int = 0
    detection_rate: float = 1.0
    metrics_of: Callable[[JobSpec], Mapping[str, float] | None] = lambda spec: None
    latency_s: float = 0.0
    calls: dict[str, int] = field(default_factory=lambda: {"advise": 0, "track": 0, "diagnose": 0, "matched": 0})

    def _seen(self, job: JobState, what: str) -> bool:
        return detected(job.job_id, self.seed, self.detection_rate, what)

    def advise(self, job: JobState) -> AdvisorInsight | None:
        self.calls["advise"] += 1
        if not self._seen(job, "advise"):
            return None
        self.calls["matched"] += 1
        metrics = dict(self.metrics_of(job.spec) or {})
        d = job.spec.duration
        return AdvisorInsight(
            similar_ids=(f"oracle:{job.job_id}",),
            duration_s=d,
            duration_top3_s=d,
            sm_util=metrics.get("gpu_util"),
            metrics=metrics,
            latency_s=self.latency_s,
        )

    def track(self, job: JobState, *, event_at: float, now: float) -> TrackerReading | None:
        self.calls["track"] += 1
        if not self._seen(job, "track"):
            return None
        if now <= event_at:
            return TrackerReading(before=1.0, after=None)
        # the true speed ratio, read off the engine's history (this is what makes it an oracle)
        at = [sp for t, sp, _ in job.speed_log if t <= event_at]
        before = next((sp for t, sp, _ in reversed(job.speed_log) if t < event_at and sp > 0), None)
        return TrackerReading(before=1.0, after=at[-1] / before if at and before else None)

    def diagnose(self, job: JobState, *, attempt: int) -> FailureInsight | None:
        self.calls["diagnose"] += 1
        return None

    def stats(self) -> dict[str, Any]:
        return {"source": "oracle (smoke only)", **self.calls}


# ================================================================================= results


@dataclass(frozen=True)
class RunRow:
    """One simulation: which trace, arm and seed, its summary, and the adapter's counters."""

    trace: str
    arm: str
    seed: int
    gpus: int
    summary: Summary
    extra: dict[str, Any] = field(default_factory=dict)

    def flat(self) -> dict[str, Any]:
        """A CSV/JSON row: identifiers, then the summary, then `extra` (scalars only)."""
        row: dict[str, Any] = {"trace": self.trace, "arm": self.arm, "seed": self.seed, "gpus": self.gpus}
        row.update({k: _finite(v) for k, v in asdict(self.summary).items() if k != "policy"})
        row.update({k: _finite(v) for k, v in _flatten(self.extra).items()})
        return row


AGG_METRICS = ("mean_jct", "mean_queueing", "p99_jct", "makespan", "wasted_gpu_time")


def aggregate(rows: Iterable[RunRow], metrics: Sequence[str] = AGG_METRICS) -> list[dict[str, Any]]:
    """Mean and standard deviation over seeds of each metric, per (trace, arm), in first-seen order."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r.trace, r.arm), []).append(r.flat())
    out = []
    for (trace, arm), flats in groups.items():
        entry: dict[str, Any] = {"trace": trace, "arm": arm, "seeds": len(flats)}
        names = list(metrics) + [k for k in flats[0] if k not in metrics and _numeric(flats[0][k])]
        for m in names:
            vals = np.array([f[m] for f in flats if _numeric(f.get(m))], dtype=float)
            if m in ("seed", "gpus") or not vals.size:
                continue
            entry[f"{m}_mean"] = float(vals.mean())
            entry[f"{m}_std"] = float(vals.std(ddof=1)) if vals.size > 1 else 0.0
        out.append(entry)
    return out


def speedups(rows: Iterable[RunRow], baseline: str, arm: str, metric: str = "mean_jct") -> dict[str, list[float]]:
    """Per trace, per seed: baseline metric / arm metric (> 1: the arm is better)."""
    by = {(r.trace, r.arm, r.seed): getattr(r.summary, metric) for r in rows}
    out: dict[str, list[float]] = {}
    for (trace, a, seed), value in by.items():
        if a != arm or (trace, baseline, seed) not in by or not value > 0:
            continue
        out.setdefault(trace, []).append(by[(trace, baseline, seed)] / value)
    return out


@dataclass(frozen=True)
class ExperimentResult:
    """What an experiment returns: its rows, their aggregate, the files written, one line."""

    name: str
    out_dir: Path | None
    rows: list[RunRow]
    aggregate: list[dict[str, Any]]
    files: list[Path]
    summary: str
    details: Mapping[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.summary


def mean_of(values: Iterable[float | None]) -> float:
    """Mean of the values that exist (None and NaN skipped); NaN when none do."""
    vals = [v for v in values if v is not None and not math.isnan(v)]
    return float(np.mean(vals)) if vals else math.nan


def compare_arms(rows: Sequence[RunRow], base: str, arm: str, *, both: Sequence[str] = (),
                 arm_only: Sequence[str] = ()) -> dict[str, dict[str, float]]:
    """Per trace, seed means of `base` and `arm`: mean JCT of each (h), its relative change, on how
    many seeds the arm was better, and the `extra` metrics named in `both` (for each arm, prefixed
    with its name) and `arm_only` (the arm's, unprefixed)."""
    out: dict[str, dict[str, float]] = {}
    for trace in dict.fromkeys(r.trace for r in rows):
        b = sorted((r for r in rows if r.trace == trace and r.arm == base), key=lambda r: r.seed)
        a = sorted((r for r in rows if r.trace == trace and r.arm == arm), key=lambda r: r.seed)
        if not a or not b:
            continue
        jb, ja = (float(np.mean([r.summary.mean_jct for r in x])) for x in (b, a))
        row = {
            f"{base}_mean_jct_h": jb / 3600.0, f"{arm}_mean_jct_h": ja / 3600.0,
            "jct_change": ja / jb - 1.0 if jb > 0 else math.nan,
            "seeds_better": float(sum(ra.summary.mean_jct < rb.summary.mean_jct for ra, rb in zip(a, b))),
            "seeds": float(len(a)),
        }
        for k in both:
            row[f"{base}_{k}"] = mean_of(r.extra.get(k) for r in b)
            row[f"{arm}_{k}"] = mean_of(r.extra.get(k) for r in a)
        for k in arm_only:
            row[k] = mean_of(r.extra.get(k) for r in a)
        out[trace] = row
    return out


def write_experiment(
    out_dir: Path,
    name: str,
    rows: Sequence[RunRow],
    *,
    config: Mapping[str, Any],
    details: Mapping[str, Any] | None = None,
    results: Mapping[str, Mapping[str, SimResult]] | None = None,
    cdf_arms: Sequence[str] | None = None,
) -> list[Path]:
    """Write `<name>.json` (config, details, rows, aggregate), `<name>.csv` (rows) and plots.

    `results` maps a label (e.g. `helios/seed0`) to {arm: SimResult}; each label gets its
    per-job CSVs and summary under `<label>/` and a JCT CDF of `cdf_arms` (all when None).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    flats = [r.flat() for r in rows]
    doc = {"experiment": name, "config": _jsonable(config), "details": _jsonable(details or {}), "rows": flats, "aggregate": aggregate(rows)}
    files = [out_dir / f"{name}.json", out_dir / f"{name}.csv"]
    files[0].write_text(json.dumps(doc, indent=2, default=str))
    columns: list[str] = []
    for f in flats:
        columns += [k for k in f if k not in columns]
    with open(files[1], "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        writer.writerows(flats)
    for label, by_arm in (results or {}).items():
        sub = out_dir / _safe(label)
        write_outputs(sub, dict(by_arm))
        chosen = {a: r for a, r in by_arm.items() if cdf_arms is None or a in cdf_arms}
        if chosen:
            files.append(plot_jct_cdf(chosen, out_dir / f"jct_cdf_{_safe(label)}.png", title=f"JCT CDF — {label}"))
    return files


def plot_lines(
    path: Path, x: Sequence[float], series: Mapping[str, Sequence[float | None]], *, xlabel: str, ylabel: str, title: str
) -> Path:
    """A line per series over `x` (e.g. avg JCT against the detection rate); NaN points are gaps."""
    import matplotlib.pyplot as plt  # schedulers.plots already selected the Agg backend

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, ys in series.items():
        ax.plot(list(x), [np.nan if y is None else y for y in ys], marker="o", label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# ================================================================================= helpers


def _flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flatten(v, key + "."))
        elif isinstance(v, (int, float, str, bool)) or v is None:
            out[key] = v
    return out


def _numeric(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _finite(v: Any) -> Any:
    return None if isinstance(v, float) and not math.isfinite(v) else v


def _jsonable(v: Any) -> Any:
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, Path):
        return str(v)
    if isinstance(v, float):
        return _finite(v)
    if isinstance(v, (int, str, bool)) or v is None:
        return v
    if hasattr(v, "__dataclass_fields__"):
        return _jsonable(asdict(v))
    return str(v)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
