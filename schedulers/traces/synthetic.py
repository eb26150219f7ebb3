"""Synthetic GPU-job traces calibrated to published cluster statistics; no data files needed.

`generate_trace(n_jobs, seed)` draws, per job and independently: a run time (capped
log-normal), a GPU count (powers of two), a final state correlated with the run time (see `fit`:
job-count rates and GPU-time shares per state both match the cluster), then arrivals from a
diurnal, bursty process (`arrivals`) whose rate makes the offered GPU time `load` x capacity.
Users are Zipf-distributed (a few users submit most jobs, as in every public trace), each user
belongs to one VC, and job names repeat within a user (recurring experiments). Workload
attributes are left empty for later stages to attach.

Failed jobs: `duration` is the run time until the failure (what traces record), and `work`, the
run time the job would need to complete, is `duration / u` with u ~ U(0.1, 1): the failure
strikes at a uniform point of the job's run, no earlier than 10% of the way in, which keeps
`work` finite (capped at the cluster's longest run time) and >= `duration`.
"""

from __future__ import annotations

import math

import numpy as np

from ..job import FinalStatus
from .arrivals import ArrivalModel, arrival_times
from .calibration import CALIBRATIONS, Calibration, calibration_from_summary
from .fit import fit_gpu_mix, fit_run_time, fit_status
from .trace import LoadedTrace, Record, SkipLog, assemble

__all__ = [
    "CALIBRATIONS",
    "ArrivalModel",
    "Calibration",
    "calibration_from_summary",
    "generate_trace",
]

FORMAT = "synthetic"
_FAIL_POINT_MIN = 0.1  # earliest fraction of its work at which a failed job fails
_USER_ZIPF = 1.1  # exponent of the user-popularity law
_NAME_REPEAT = 0.25  # geometric parameter of a user's experiment index (names recur)


def generate_trace(
    n_jobs: int,
    seed: int,
    profile: str | Calibration = "seren",
    cluster_gpus: int = 64,
    load: float = 0.9,
    max_gpus: int | None = None,
    arrivals: ArrivalModel = ArrivalModel(),
) -> LoadedTrace:
    """`n_jobs` jobs calibrated to `profile` (seren, kalos, philly, helios, or a Calibration).

    `max_gpus` (default `cluster_gpus`) truncates the GPU-count mix: the mean GPU count then
    falls below the calibration's, as it would on a cluster that small. `load` sets the arrival
    rate: the jobs' total GPU time = load x cluster_gpus x (last submit time), using the GPU
    time actually drawn, so the target holds for small traces too. Same arguments and seed,
    same trace.
    """
    cal = _calibration(profile)
    if n_jobs < 0:
        raise ValueError(f"n_jobs must be >= 0, got {n_jobs}")
    if cluster_gpus < 1 or not load > 0.0:
        raise ValueError(f"cluster_gpus must be >= 1 and load > 0, got {cluster_gpus}, {load}")
    max_gpus = cluster_gpus if max_gpus is None else max_gpus
    if not 1 <= max_gpus <= cluster_gpus:
        raise ValueError(f"max_gpus must be in [1, cluster_gpus={cluster_gpus}], got {max_gpus}")
    rng = np.random.default_rng(seed)
    run_time = fit_run_time(cal.med_run_time, cal.avg_run_time, cal.max_run_time)
    levels, probs = fit_gpu_mix(cal.med_gpu_num, cal.avg_gpu_num, cal.max_gpu)
    probs = np.where(levels <= max_gpus, probs, 0.0)
    probs /= probs.sum()
    states = fit_status(cal, run_time)

    z = rng.standard_normal(n_jobs)
    duration = np.round(run_time.at(z))
    gpus = rng.choice(levels, size=n_jobs, p=probs)
    cancelled = rng.random(n_jobs) < states.p_cancel(z)
    failed = ~cancelled & (rng.random(n_jobs) < states.p_fail_given_not_cancelled(z))
    fail_point = rng.uniform(_FAIL_POINT_MIN, 1.0, n_jobs)
    work = np.clip(np.round(duration / fail_point), duration, max(run_time.cap, 1.0))

    span = float(duration @ gpus) / (load * cluster_gpus)  # offered GPU time = load x capacity
    submit = arrival_times(n_jobs, span, arrivals, rng)
    users, vcs, names = _people(n_jobs, rng)

    width = len(str(max(n_jobs - 1, 0)))
    codes = (FinalStatus.COMPLETED, FinalStatus.FAILED, FinalStatus.CANCELLED)
    status = np.where(cancelled, 2, np.where(failed, 1, 0)).tolist()
    submit_s, gpus_n, duration_s, work_s = (a.tolist() for a in (submit, gpus, duration, work))
    records: list[Record] = []
    for i in range(n_jobs):
        fields = {"status": codes[status[i]], "user": users[i], "vc": vcs[i], "name": names[i]}
        if status[i] == 1:
            fields["work"] = work_s[i]
        job_id = f"syn-{i:0{width}d}"
        records.append((submit_s[i], job_id, i + 1, gpus_n[i], duration_s[i], fields))
    source = f"synthetic:{cal.cluster.lower()}:seed={seed}"
    return assemble(records, source=source, fmt=FORMAT, skips=SkipLog(source))


def _calibration(profile: str | Calibration) -> Calibration:
    if isinstance(profile, Calibration):
        return profile
    try:
        return CALIBRATIONS[profile.lower()]
    except KeyError:
        raise ValueError(
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
