"""Synthetic GPU-job traces calibrated to published cluster statistics; no data files needed.

`generate_trace(n_jobs, seed)` draws, per job and independently: a run time (capped
log-normal), a GPU count (powers of two), a final state correlated with the run time (see `fit`:
job-count rates and GPU-time shares per state both match the cluster), then arrivals from a
diurnal, bursty process (`arrivals`) whose rate makes the offered GPU time `load` x capacity.
Users are Zipf-distributed (a few users submit most jobs, as in every public trace), each user
belongs to one VC, and job names repeat within a user (recurring experiments). Workload
attributes are left empty for later stages to attach.

Mixtures (`MIXTURES`): `acme` is the Acme trace as a whole, Seren and Kalos pooled; each job
comes from one cluster with probability proportional to its GPU-job count in
`cluster_summary.csv` (663,813 : 19,907) and is drawn from that cluster's fitted distributions
(the cluster is kept in `attributes["cluster"]`). `mixture_targets` gives the pooled targets
(mean GPUs, run-time mean, state rates) that `fit_report` compares a drawn trace with.

Failed jobs: `duration` is the run time until the failure (what traces record), and `work`, the
run time the job would need to complete, is `duration / u` with u ~ U(0.1, 1): the failure
strikes at a uniform point of the job's run, no earlier than 10% of the way in, which keeps
`work` finite (capped at the cluster's longest run time) and >= `duration`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from schedmate.errors import BadInput

from ..job import FinalStatus
from .arrivals import ArrivalModel, arrival_times
from .calibration import CALIBRATIONS, Calibration, calibration_from_summary
from .fit import fit_gpu_mix, fit_run_time, fit_status
from .trace import LoadedTrace, Record, SkipLog, assemble

__all__ = [
    "CALIBRATIONS",
    "MIXTURES",
    "fit_report",
    "mixture_targets",
    "ArrivalModel",
    "Calibration",
    "calibration_from_summary",
    "generate_trace",
]

FORMAT = "synthetic"
_FAIL_POINT_MIN = 0.1  # earliest fraction of its work at which a failed job fails
_USER_ZIPF = 1.1  # exponent of the user-popularity law
_NAME_REPEAT = 0.25  # geometric parameter of a user's experiment index (names recur)

# pooled profiles: (calibration name, weight = GPU jobs in cluster_summary.csv)
MIXTURES: dict[str, tuple[tuple[str, float], ...]] = {
    "acme": (("seren", 663_813.0), ("kalos", 19_907.0)),
}


def generate_trace(
    n_jobs: int,
    seed: int,
    profile: str | Calibration = "seren",
    cluster_gpus: int = 64,
    load: float = 0.9,
    max_gpus: int | None = None,
    arrivals: ArrivalModel = ArrivalModel(),
) -> LoadedTrace:
    """`n_jobs` jobs calibrated to `profile` (seren, kalos, philly, helios, acme = Seren + Kalos
    pooled, or a Calibration).

    `max_gpus` (default `cluster_gpus`) truncates the GPU-count mix: the mean GPU count then
    falls below the calibration's, as it would on a cluster that small. `load` sets the arrival
    rate: the jobs' total GPU time = load x cluster_gpus x (last submit time), using the GPU
    time actually drawn, so the target holds for small traces too. Same arguments and seed,
    same trace.
    """
    parts = _components(profile)
    if n_jobs < 0:
        raise ValueError(f"n_jobs must be >= 0, got {n_jobs}")
    if cluster_gpus < 1 or not load > 0.0:
        raise ValueError(f"cluster_gpus must be >= 1 and load > 0, got {cluster_gpus}, {load}")
    max_gpus = cluster_gpus if max_gpus is None else max_gpus
    if not 1 <= max_gpus <= cluster_gpus:
        raise ValueError(f"max_gpus must be in [1, cluster_gpus={cluster_gpus}], got {max_gpus}")
    rng = np.random.default_rng(seed)
    weights = np.array([w for _, w in parts], dtype=float)
    member = rng.choice(len(parts), size=n_jobs, p=weights / weights.sum()) if len(parts) > 1 else np.zeros(n_jobs, dtype=int)
    duration = np.zeros(n_jobs)
    gpus = np.zeros(n_jobs, dtype=int)
    cancelled = np.zeros(n_jobs, dtype=bool)
    failed = np.zeros(n_jobs, dtype=bool)
    work = np.zeros(n_jobs)
    for c, (cal, _) in enumerate(parts):
        idx = np.flatnonzero(member == c)
        d, g, canc, fail, w = _draw(cal, len(idx), max_gpus, rng)
        duration[idx], gpus[idx], cancelled[idx], failed[idx], work[idx] = d, g, canc, fail, w
    cal = parts[0][0]

    span = float(duration @ gpus) / (load * cluster_gpus)  # offered GPU time = load x capacity
    submit = arrival_times(n_jobs, span, arrivals, rng)
    users, vcs, names = _people(n_jobs, rng)

    width = len(str(max(n_jobs - 1, 0)))
    codes = (FinalStatus.COMPLETED, FinalStatus.FAILED, FinalStatus.CANCELLED)
    status = np.where(cancelled, 2, np.where(failed, 1, 0)).tolist()
    submit_s: list[Any] = submit.tolist()
    gpus_n: list[Any] = gpus.tolist()
    duration_s: list[Any] = duration.tolist()
    work_s: list[Any] = work.tolist()
    records: list[Record] = []
    for i in range(n_jobs):
        fields: dict[str, Any] = {"status": codes[status[i]], "user": users[i], "vc": vcs[i], "name": names[i]}
        if len(parts) > 1:
            fields["attributes"] = {"cluster": parts[int(member[i])][0].cluster}
        if status[i] == 1:
            fields["work"] = work_s[i]
        job_id = f"syn-{i:0{width}d}"
        records.append((submit_s[i], job_id, i + 1, gpus_n[i], duration_s[i], fields))
    label = profile.lower() if isinstance(profile, str) and profile.lower() in MIXTURES else cal.cluster.lower()
    source = f"synthetic:{label}:seed={seed}"
    return assemble(records, source=source, fmt=FORMAT, skips=SkipLog(source))


def _draw(cal: Calibration, n: int, max_gpus: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Run time, GPUs, cancelled, failed and work of `n` jobs from one cluster's fitted laws."""
    run_time = fit_run_time(cal.med_run_time, cal.avg_run_time, cal.max_run_time)
    levels, probs = fit_gpu_mix(cal.med_gpu_num, cal.avg_gpu_num, cal.max_gpu)
    probs = np.where(levels <= max_gpus, probs, 0.0)
    probs /= probs.sum()
    states = fit_status(cal, run_time)
    z = rng.standard_normal(n)
    duration = np.round(run_time.at(z))
    gpus = rng.choice(levels, size=n, p=probs)
    cancelled = rng.random(n) < states.p_cancel(z)
    failed = ~cancelled & (rng.random(n) < states.p_fail_given_not_cancelled(z))
    fail_point = rng.uniform(_FAIL_POINT_MIN, 1.0, n)
    work = np.clip(np.round(duration / fail_point), duration, max(run_time.cap, 1.0))
    return duration, gpus, cancelled, failed, work


def _components(profile: str | Calibration) -> list[tuple[Calibration, float]]:
    if isinstance(profile, str) and profile.lower() in MIXTURES:
        return [(CALIBRATIONS[name], weight) for name, weight in MIXTURES[profile.lower()]]
    return [(_calibration(profile), 1.0)]


def mixture_targets(profile: str) -> dict[str, float]:
    """Pooled published statistics of a profile (job-count weighted over its clusters)."""
    parts = _components(profile)
    w = np.array([x for _, x in parts], dtype=float)
    w /= w.sum()

    def pooled(field: str) -> float:
        return float(sum(wi * getattr(c, field) for (c, _), wi in zip(parts, w)))

    gpu_w = np.array([wi * c.avg_gpu_num for (c, _), wi in zip(parts, w)])
    return {
        "avg_gpu_num": pooled("avg_gpu_num"),
        "avg_run_time": pooled("avg_run_time"),
        "med_run_time": pooled("med_run_time"),
        "fail_rate": pooled("fail_rate"),
        "cancel_rate": pooled("cancel_rate"),
        "complete_rate": pooled("complete_rate"),
        **{f"share_jobs_{c.cluster.lower()}": float(wi) for (c, _), wi in zip(parts, w)},
        **{f"share_gpu_demand_{c.cluster.lower()}": float(g / gpu_w.sum()) for (c, _), g in zip(parts, gpu_w)},
    }


def fit_report(trace: LoadedTrace, profile: str) -> dict[str, dict[str, float]]:
    """Target vs achieved: job-size shares (1, 2-8, 9-64, >64 GPUs, from the fitted laws),
    run-time quantiles, mean GPUs and final-state rates of a drawn trace."""
    jobs = trace.jobs
    g = np.array([j.num_gpus for j in jobs], dtype=float)
    d = np.array([j.duration for j in jobs], dtype=float)
    status = [j.status for j in jobs]
    bins = ((1, 1), (2, 8), (9, 64), (65, 1 << 20))
    parts = _components(profile)
    w = np.array([x for _, x in parts], dtype=float)
    w /= w.sum()
    target: dict[str, float] = dict(mixture_targets(profile))
    for lo, hi in bins:
        share = 0.0
        for (cal, _), wi in zip(parts, w):
            levels, probs = fit_gpu_mix(cal.med_gpu_num, cal.avg_gpu_num, cal.max_gpu)
            share += wi * float(probs[(levels >= lo) & (levels <= hi)].sum())
        target[f"gpus_{lo}_{hi}"] = share
    achieved: dict[str, float] = {
        "avg_gpu_num": float(g.mean()) if len(g) else 0.0,
        "avg_run_time": float(d.mean()) if len(d) else 0.0,
        "med_run_time": float(np.median(d)) if len(d) else 0.0,
        "fail_rate": status.count(FinalStatus.FAILED) / max(1, len(jobs)),
        "cancel_rate": status.count(FinalStatus.CANCELLED) / max(1, len(jobs)),
        "complete_rate": status.count(FinalStatus.COMPLETED) / max(1, len(jobs)),
        **{f"run_time_q{int(q * 100)}": float(np.quantile(d, q)) for q in (0.25, 0.5, 0.75, 0.9, 0.99)},
    }
    for lo, hi in bins:
        achieved[f"gpus_{lo}_{hi}"] = float(((g >= lo) & (g <= hi)).mean()) if len(g) else 0.0
    return {"target": target, "achieved": achieved}


def _calibration(profile: str | Calibration) -> Calibration:
    if isinstance(profile, Calibration):
        return profile
    try:
        return CALIBRATIONS[profile.lower()]
    except KeyError:
        raise BadInput(
            f"unknown profile {profile!r}; known: {', '.join(CALIBRATIONS)} or a Calibration"
        ) from None


def _people(n: int, rng: np.random.Generator) -> tuple[list[str], list[str], list[str]]:
    """User, VC and job name per job: Zipf users, one VC per user, recurring names."""
    n_users = int(np.clip(round(2 * math.sqrt(max(n, 1))), 2, 500))
    n_vcs = int(np.clip(n_users // 12, 1, 16))
    user_of_job = rng.choice(n_users, size=n, p=_zipf(n_users, _USER_ZIPF))
    vc_of_user = rng.choice(n_vcs, size=n_users, p=_zipf(n_vcs, 1.0))
    experiment = rng.geometric(_NAME_REPEAT, size=n)
    users = [f"u{u:03d}" for u in user_of_job]
    vcs = [f"vc{vc_of_user[u]:02d}" for u in user_of_job]
    names = [f"{user}-exp{k}" for user, k in zip(users, experiment)]
    return users, vcs, names


def _zipf(n: int, exponent: float) -> np.ndarray:
    weights = 1.0 / np.arange(1, n + 1) ** exponent
    return weights / weights.sum()
