"""Sia jobs in our engine: job length, the true throughput the engine sees, per-job fitted models.

Three pieces, kept apart so the policy never reads the simulator's ground truth directly:

- `TruthModel` (per application): what a job *really* achieves on a GPU type. Step times come
  from `PerfParams` fitted to *all* measured points of that type, times a per-(nodes, replicas)
  correction (median measured/fitted ratio of the points with that shape), so configurations the
  smooth model misses (e.g. yolov3 on 1 A100) keep their measured speed; gradient statistics come
  from the validation files at the job's current epoch and batch size (interpolated), as in the
  Sia artifact. Rates are in *progress per second* (iterations at the initial batch size, scaled
  by statistical efficiency), the unit of the validation files' `progress` column.
- `SiaThroughput` (the engine's `throughput` callable) and the **work units**. A job's
  `duration` is the wall time it would need on its *submitted* configuration — `num_replicas`
  GPUs of the base type (rtx, 2080Ti, where Sia's workloads were generated) at its submitted
  `batch_size`, no tuning — times the application's calibration slowdown (Sia's `SLOWDOWNS`).
  Engine progress (work-seconds) maps to training progress through that reference run:
  w(p) = slowdown·∫₀ᵖ dp'/g_ref(p'), piecewise linear per epoch because gradient statistics change
  per epoch. The engine's speed is therefore dw/dt = g_now(p)/g_ref(p): goodput of the current
  allocation (type, nodes, GPUs, batch size) over goodput of the reference configuration, both at
  the current epoch. A job on its submitted configuration runs at speed 1 and finishes after
  exactly `duration`. The speed is piecewise constant between decisions; Sia refreshes every
  running job each round (60 s), so epoch changes are picked up within a round.
- `SiaJobModel` (per job, owned by the policy): the job's *own* view — per-type profiles
  {(nodes, replicas, local_bsz): (step, sync)}, `PerfParams` refitted whenever a new point is
  observed (profile-as-you-go), and the latest gradient statistics. `seed_model` builds the
  default bootstrap (1-GPU measurements on every type); a SchedMate adapter can supply a model
  copied from similar historical jobs instead (`Sia.bootstrap`).

`load_sia_jobs` reads a Sia workload CSV into `JobSpec`s with those durations.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..cluster import ClusterSpec
from ..job import JobSpec, JobState, Phase
from .goodput import GoodputFunction, GradParams, PerfParams, fit_perf_params, predict_profile, split_batch
from .profiles import BASE_PROFILE, PROFILE_GPUS_PER_NODE, AppProfile, available_apps, load_app, profile_name

ProfileKey = tuple[int, int, int]  # (nodes, replicas, local/atomic batch size)


# ============================================================================ fit cache

_FIT_CACHE: dict[tuple, PerfParams] = {}
_FIT_CACHE_MAX = 50_000


def fit_profile(points: Mapping[ProfileKey, tuple[float, float]], init: PerfParams | None = None) -> PerfParams:
    """`fit_perf_params` over a profile dict, memoised on its exact contents (`init` warm-starts)."""
    key = tuple(sorted((k, (round(v[0], 9), round(v[1], 9))) for k, v in points.items()))
    hit = _FIT_CACHE.get(key)
    if hit is not None:
        return hit
    ks = np.array(list(points.keys()), dtype=float)
    vs = np.array(list(points.values()), dtype=float)
    params = fit_perf_params(ks[:, 0], ks[:, 1], ks[:, 2], vs[:, 0], vs[:, 1], init=init)
    if len(_FIT_CACHE) >= _FIT_CACHE_MAX:
        _FIT_CACHE.clear()
    _FIT_CACHE[key] = params
    return params


# ============================================================================ ground truth


class TruthModel:
    """What an application really achieves per GPU profile (see the module docstring)."""

    def __init__(self, app: AppProfile) -> None:
        self.app = app
        self._params: dict[str, PerfParams] = {}
        self._corr: dict[str, dict[tuple[int, int], tuple[float, float]]] = {}

    def params(self, profile: str) -> PerfParams:
        p = self._params.get(profile)
        if p is None:
            t = self.app.tables[profile]
            p = fit_perf_params(t.num_nodes, t.num_replicas, t.local_bsz, t.step_time, t.sync_time)
            self._params[profile] = p
            st, sy = predict_profile(p, t.num_nodes, t.num_replicas, t.local_bsz)
            ratio_step = t.step_time / st
            ratio_comp = (t.step_time - t.sync_time) / np.maximum(st - sy, 1e-9)
            corr: dict[tuple[int, int], tuple[float, float]] = {}
            keys = np.stack([t.num_nodes, t.num_replicas], axis=1)
            for key in {(int(a), int(b)) for a, b in keys}:
                m = (t.num_nodes == key[0]) & (t.num_replicas == key[1])
                corr[key] = (float(np.median(ratio_step[m])), float(np.median(ratio_comp[m])))
            self._corr[profile] = corr
        return p

    def has(self, profile: str) -> bool:
        return profile in self.app.tables

    def measure(self, profile: str, nodes: int, replicas: int, atomic_bsz: float) -> tuple[float, float]:
        """(step_time, sync_time) of one optimiser step without accumulation."""
        p = self.params(profile)
        st, sy = predict_profile(p, np.array([nodes]), np.array([replicas]), np.array([atomic_bsz]))
        step, comp = float(st[0]), float(st[0] - sy[0])
        r_step, r_comp = self._corr[profile].get((nodes, replicas), (1.0, 1.0))
        step, comp = step * r_step, comp * r_comp
        comp = min(comp, step * 0.999)
        return step, step - comp

    def rate(self, profile: str, nodes: int, replicas: int, atomic_bsz: int, accum_steps: int, epoch: int) -> float:
        """True progress per second (before the calibration slowdown)."""
        step, sync = self.measure(profile, nodes, replicas, atomic_bsz)
        total = step + (step - sync) * accum_steps
        batch = replicas * atomic_bsz * (accum_steps + 1)
        scale = batch / self.app.init_batch_size
        sqr, var = self.app.grad_stats(batch, epoch)
        denom = var / scale + sqr
        gain = (var + sqr) / denom if denom > 0 else 1.0
        return gain / total

    def grad_stats(self, batch_size: float, epoch: int) -> GradParams:
        return GradParams(*self.app.grad_stats(batch_size, epoch))


@functools.lru_cache(maxsize=32)
def _truth(app: AppProfile) -> TruthModel:
    return TruthModel(app)


def truth_for(app: str | AppProfile, root: Path | str | None = None) -> TruthModel:
    return _truth(app if isinstance(app, AppProfile) else load_app(app, root))


# ============================================================================ work units


@dataclass(frozen=True)
class WorkCurve:
    """Reference run of one job: work-seconds ↔ training progress (see the module docstring)."""

    epoch_progress: np.ndarray  # E+1 progress boundaries
    ref_rate: np.ndarray  # E reference progress rates (true, before slowdown)
    cum_work: np.ndarray  # E+1 work-seconds at each boundary (slowdown included)

    @property
    def duration(self) -> float:
        return float(self.cum_work[-1])

    def epoch_at_work(self, work: float) -> int:
        e = int(np.searchsorted(self.cum_work, work, side="right")) - 1
        return min(max(e, 0), self.ref_rate.size - 1)

    def progress_at(self, work: float) -> float:
        e = self.epoch_at_work(work)
        frac = (work - self.cum_work[e]) / max(self.cum_work[e + 1] - self.cum_work[e], 1e-12)
        frac = min(max(frac, 0.0), 1.0)
        return float(self.epoch_progress[e] + frac * (self.epoch_progress[e + 1] - self.epoch_progress[e]))

    def work_at(self, progress: float) -> float:
        e = int(np.searchsorted(self.epoch_progress, progress, side="right")) - 1
        e = min(max(e, 0), self.ref_rate.size - 1)
        frac = (progress - self.epoch_progress[e]) / max(self.epoch_progress[e + 1] - self.epoch_progress[e], 1e-12)
        return float(self.cum_work[e] + min(max(frac, 0.0), 1.0) * (self.cum_work[e + 1] - self.cum_work[e]))


def reference_batch(app: AppProfile, profile: str, replicas: int, batch_size: int) -> tuple[int, int, int]:
    """(nodes, atomic_bsz, accum_steps) of `replicas` GPUs of `profile` at a fixed total batch."""
    per_node = PROFILE_GPUS_PER_NODE.get(profile, 8)
    nodes = max(1, math.ceil(replicas / per_node))
    _, hi = app.local_bsz_range(profile)
    atomic, accum = split_batch(float(batch_size), float(replicas), hi, app.init_batch_size)
    return nodes, int(max(int(atomic), 1)), int(accum)


@functools.lru_cache(maxsize=4096)
def _work_curve(app: AppProfile, profile: str, replicas: int, batch_size: int) -> WorkCurve:
    truth = _truth(app)
    nodes, atomic, accum = reference_batch(app, profile, replicas, batch_size)
    rates = np.array(
        [truth.rate(profile, nodes, replicas, atomic, accum, e) for e in range(app.max_epochs)], dtype=float
    )
    span = np.diff(app.epoch_progress)
    cum = np.concatenate([[0.0], np.cumsum(app.constants.slowdown * span / rates)])
    return WorkCurve(app.epoch_progress, rates, cum)


def work_curve(
    app: str | AppProfile, replicas: int, batch_size: int, profile: str = BASE_PROFILE, root: Path | str | None = None
) -> WorkCurve:
    a = app if isinstance(app, AppProfile) else load_app(app, root)
    return _work_curve(a, profile, int(replicas), int(batch_size))


def job_application(spec: JobSpec) -> str:
    app = spec.attributes.get("application")
    if not app:
        raise KeyError(f"job {spec.job_id} has no 'application' attribute (not a Sia job)")
    return str(app)


def job_batch_size(spec: JobSpec, app: AppProfile) -> int:
    b = spec.attributes.get("batch_size")
    return int(b) if b else app.init_batch_size


# ============================================================================ the engine callable


@dataclass(frozen=True, slots=True)
class Observation:
    """What a running job reports: its configuration, measured step/sync time and grad stats."""

    profile: str
    nodes: int
    replicas: int
    atomic_bsz: int
    accum_steps: int
    step_time: float
    sync_time: float
    grad: GradParams


Batch = tuple[int, int]
"""(atomic_bsz, accum_steps) a policy chose for a job (Sia tunes it per allocation)."""


class SiaThroughput:
    """True speed model: speed = goodput(now) / goodput(reference), both true.

    Policies answer `Policy.throughput` with it. The batch size is the one the policy chose for
    the job (`batch=`, kept in the policy's own state); without one the job keeps its submitted
    total batch (strong scaling).
    A placement spanning several GPU types runs at the pace of its slowest type. Jobs in the
    PROFILING phase make no progress.
    """

    def __init__(self, root: Path | str | None = None, reference_profile: str = BASE_PROFILE) -> None:
        self.root = root
        self.reference_profile = reference_profile
        self._profile_of: dict[str, str] = {}
        self._apps: dict[str, AppProfile] = {}

    # -- helpers ------------------------------------------------------------------------
    def app(self, spec: JobSpec) -> AppProfile:
        a = self._apps.get(spec.job_id)
        if a is None:
            a = self._apps[spec.job_id] = load_app(job_application(spec), self.root)
        return a

    def curve(self, spec: JobSpec) -> WorkCurve:
        app = self.app(spec)
        return _work_curve(app, self.reference_profile, spec.num_gpus, job_batch_size(spec, app))

    def duration(self, spec: JobSpec) -> float:
        return self.curve(spec).duration

    def profile(self, gpu_type: str) -> str:
        p = self._profile_of.get(gpu_type)
        if p is None:
            p = self._profile_of[gpu_type] = profile_name(gpu_type)
        return p

    def shape(self, job: JobState, cluster: ClusterSpec) -> list[tuple[str, int]]:
        """[(profile, nodes)] of the job's placement, one entry per GPU type used."""
        counts: dict[str, int] = {}
        for node, _ in job.placement:
            prof = self.profile(cluster.nodes[node].gpu_type)
            counts[prof] = counts.get(prof, 0) + 1
        return list(counts.items())

    def batch(
        self, job: JobState, app: AppProfile, profile: str, replicas: int, chosen: Batch | None = None
    ) -> tuple[int, int]:
        if chosen is not None:
            return int(chosen[0]), int(chosen[1])
        _, atomic, accum = reference_batch(app, profile, replicas, job_batch_size(job.spec, app))
        return atomic, accum

    def epoch(self, job: JobState) -> int:
        return self.curve(job.spec).epoch_at_work(job.progress)

    # -- engine interface -----------------------------------------------------------------
    def __call__(self, job: JobState, cluster: ClusterSpec, batch: Batch | None = None) -> float:
        if job.phase is Phase.PROFILING or not job.placement:
            return 0.0
        app = self.app(job.spec)
        truth = _truth(app)
        curve = self.curve(job.spec)
        e = curve.epoch_at_work(job.progress)
        nodes = len(job.placement)
        rate = math.inf
        for prof, _ in self.shape(job, cluster):
            if not truth.has(prof):
                raise KeyError(f"application {app.name!r} has no profile for {prof!r}")
            atomic, accum = self.batch(job, app, prof, job.num_gpus, batch)
            rate = min(rate, truth.rate(prof, nodes, job.num_gpus, atomic, accum, e))
        return float(rate / curve.ref_rate[e])

    def observe(self, job: JobState, cluster: ClusterSpec, batch: Batch | None = None) -> Observation | None:
        """The measurement a running job reports for its current allocation (None if idle)."""
        if job.phase is not Phase.RUNNING or not job.placement:
            return None
        shape = self.shape(job, cluster)
        if len(shape) != 1:
            return None  # mixed-type placements are not profiled
        prof = shape[0][0]
        app = self.app(job.spec)
        truth = _truth(app)
        if not truth.has(prof):
            return None
        nodes, reps = len(job.placement), job.num_gpus
        atomic, accum = self.batch(job, app, prof, reps, batch)
        step, sync = truth.measure(prof, nodes, reps, atomic)
        e = self.epoch(job)
        grad = truth.grad_stats(reps * atomic * (accum + 1), e)
        return Observation(prof, nodes, reps, atomic, accum, step, sync, grad)


# ============================================================================ per-job model


class SiaJobModel:
    """A job's own throughput model: per-type profiles, fitted params, gradient statistics."""

    def __init__(
        self,
        app: AppProfile,
        profiles: Mapping[str, Mapping[ProfileKey, tuple[float, float]]] | None = None,
        grad: GradParams | None = None,
    ) -> None:
        self.app = app
        self.profiles: dict[str, dict[ProfileKey, tuple[float, float]]] = {
            k: dict(v) for k, v in (profiles or {}).items()
        }
        self.perf: dict[str, PerfParams] = {}
        self.grad = grad
        self.source = "seed"  # who built it: "seed", "history", ...
        self.ran_on: set[str] = set()  # types with points measured while running (not seeds)
        self.project = True  # borrow the best-known type's curve for types it has not run on
        self._cache: dict[tuple, np.ndarray] = {}
        for prof, pts in self.profiles.items():
            if pts:
                self.perf[prof] = fit_profile(pts)

    def copy(self) -> SiaJobModel:
        other = SiaJobModel.__new__(SiaJobModel)
        other.app = self.app
        other.profiles = {k: dict(v) for k, v in self.profiles.items()}
        other.perf = dict(self.perf)
        other.grad = self.grad
        other.source = self.source
        other.ran_on = set(self.ran_on)
        other.project = self.project
        other._cache = {}
        return other

    # -- profile-as-you-go ------------------------------------------------------------------
    def observe(self, profile: str, nodes: int, replicas: int, local_bsz: int, step: float, sync: float) -> bool:
        """Add a measured point; refit that type's params if the point is new. True if refitted."""
        pts = self.profiles.setdefault(profile, {})
        key = (int(nodes), int(replicas), int(local_bsz))
        if profile not in self.ran_on:
            self.ran_on.add(profile)
            self._cache.clear()
        if key in pts:
            return False
        pts[key] = (float(step), float(sync))
        self.perf[profile] = fit_profile(pts, self.perf.get(profile))
        self._cache.clear()
        return True

    def set_grad(self, grad: GradParams | None) -> None:
        if grad != self.grad:
            self.grad = grad
            self._cache.clear()

    def update(self, obs: Observation) -> bool:
        self.set_grad(obs.grad)
        return self.observe(obs.profile, obs.nodes, obs.replicas, obs.atomic_bsz, obs.step_time, obs.sync_time)

    # -- queries ---------------------------------------------------------------------------
    def max_profiled_replicas(self, profile: str) -> int:
        return max((k[1] for k in self.profiles.get(profile, ())), default=0)

    def knows(self, profile: str) -> bool:
        return profile in self.perf

    def goodput_fn(self, profile: str) -> GoodputFunction | None:
        perf = self.perf.get(profile)
        if perf is None:
            return None
        return GoodputFunction(
            perf, self.grad, self.app.init_batch_size, self.app.max_batch_size, self.app.local_bsz_range(profile)
        )

    def one_gpu_throughput(self, profile: str) -> float | None:
        """Samples/s on one GPU at the largest measured batch (Sia's per-type throughput ratio)."""
        pts = [(k[2], v[0]) for k, v in self.profiles.get(profile, {}).items() if k[0] == 1 and k[1] == 1]
        if pts:
            bsz, step = max(pts)
            return bsz / step
        fn = self.goodput_fn(profile)
        if fn is None:
            return None
        return float(fn.throughput(1, 1, fn.max_local)[()])

    def projection_source(self, profile: str) -> str | None:
        """The type whose curve `profile` borrows: the run-on type with the most replicas seen."""
        if not self.project or profile in self.ran_on or not self.ran_on:
            return None
        return max(sorted(self.ran_on), key=self.max_profiled_replicas)

    def goodputs(self, profile: str, nodes: np.ndarray, replicas: np.ndarray) -> np.ndarray:
        """Estimated goodput (samples/s at B₀ quality) with the best batch size; NaN if unknown.

        Without gradient statistics (the job never ran) only the batch size B₀ is assumed, so
        the estimate is plain throughput. For a type the job has not run on yet (only seed
        points), Sia's projection applies: the curve of the type it ran on with the most
        replicas, times the ratio of 1-GPU throughputs (nodes recomputed for that type).
        """
        key = (profile, np.asarray(nodes, float).tobytes(), np.asarray(replicas, float).tobytes())
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        src = self.projection_source(profile)
        if src is not None:
            t_dst, t_src = self.one_gpu_throughput(profile), self.one_gpu_throughput(src)
            if t_dst is not None and t_src:
                reps = np.asarray(replicas, float)
                src_nodes = np.ceil(reps / PROFILE_GPUS_PER_NODE.get(src, 8))
                good = self._own_goodputs(src, src_nodes, reps) * (t_dst / t_src)
                self._cache[key] = good
                return good
        good = self._own_goodputs(profile, nodes, replicas)
        self._cache[key] = good
        return good

    def _own_goodputs(self, profile: str, nodes: np.ndarray, replicas: np.ndarray) -> np.ndarray:
        fn = self.goodput_fn(profile)
        if fn is None:
            return np.full(np.shape(nodes), np.nan)
        if self.grad is None:
            good, _, _ = fn.optimize(nodes, replicas, batch_size=None, samples=1)
        else:
            good, _, _ = fn.optimize(nodes, replicas)
        return good

    def choose_batch(self, profile: str, nodes: int, replicas: int) -> tuple[int, int]:
        """(atomic_bsz, accum_steps) the job will run with on this allocation."""
        lo, hi = self.app.local_bsz_range(profile)
        fn = self.goodput_fn(profile)
        if fn is None or self.grad is None:
            b0 = max(self.app.init_batch_size, lo * replicas)
            atomic, accum = split_batch(float(b0), float(replicas), hi, self.app.init_batch_size)
            return int(max(int(atomic), 1)), int(accum)
        good, atomic, accum = fn.optimize(nodes, replicas)
        if good[0] <= 0:
            b0 = max(self.app.init_batch_size, lo * replicas)
            a, s = split_batch(float(b0), float(replicas), hi, self.app.init_batch_size)
            return int(max(int(a), 1)), int(s)
        return int(atomic[0]), int(accum[0])


def seed_profiles(app: AppProfile, profiles: Iterable[str], max_replicas: int = 1) -> dict[str, dict[ProfileKey, tuple[float, float]]]:
    """Measured single-node points with at most `max_replicas` GPUs, per profile (Sia's seeding)."""
    out: dict[str, dict[ProfileKey, tuple[float, float]]] = {}
    for prof in profiles:
        table = app.tables.get(prof)
        if table is None:
            continue
        mask = (table.num_nodes == 1) & (table.num_replicas <= max_replicas)
        if mask.any():
            out[prof] = table.subset(mask).as_dict()
    return out


def seed_model(app: str | AppProfile, profiles: Iterable[str], max_replicas: int = 1, root: Path | str | None = None) -> SiaJobModel:
    """Default bootstrap: 1-GPU measurements on every GPU type, no gradient statistics yet."""
    a = app if isinstance(app, AppProfile) else load_app(app, root)
    return SiaJobModel(a, seed_profiles(a, profiles, max_replicas))


# ============================================================================ workloads


def with_sia_duration(spec: JobSpec, throughput: SiaThroughput) -> JobSpec:
    """`spec` with `duration` (work) = its reference run time (see the module docstring)."""
    duration = throughput.duration(spec)
    attrs = dict(spec.attributes)
    attrs.pop("duration_unknown", None)
    app = throughput.app(spec)
    attrs["sia_reference"] = f"{spec.num_gpus}x{throughput.reference_profile}@{job_batch_size(spec, app)}"
    # Measured checkpoint-restore time of the application (the artifact's `rescale_time`); an
    # engine that reads `restart_cost` from the attributes charges it per restart.
    attrs.setdefault("restart_cost", app.constants.rescale_time)
    return replace(spec, duration=duration, work=None, attributes=attrs)


def as_sia_jobs(jobs: Iterable[JobSpec], throughput: SiaThroughput | None = None) -> list[JobSpec]:
    """Generic jobs as Sia jobs: each without an application gets one of the measured applications
    (round-robin, deterministic) and its reference run time as duration (`Policy.prepare_jobs`)."""
    tp = throughput or SiaThroughput()
    apps = available_apps(tp.root)
    out = []
    for i, spec in enumerate(jobs):
        if not spec.attributes.get("application"):
            spec = replace(spec, attributes={**spec.attributes, "application": apps[i % len(apps)]})
        out.append(with_sia_duration(spec, tp))
    return out


def load_sia_jobs(
    path: Path | str,
    *,
    limit: int | None = None,
    throughput: SiaThroughput | None = None,
    max_gpus: int | None = None,
) -> list[JobSpec]:
    """Read a Sia workload CSV; each job's duration is its reference run time.

    `max_gpus` caps the requested GPU count (the reference configuration) for small clusters.
    """
    from ..traces.loader import load_trace

    tp = throughput or SiaThroughput()
    trace = load_trace(path, fmt="sia_workload", limit=limit)
    out: list[JobSpec] = []
    for spec in trace.jobs:
        if max_gpus is not None and spec.num_gpus > max_gpus:
            spec = replace(spec, num_gpus=max_gpus)
        out.append(with_sia_duration(spec, tp))
    return out
