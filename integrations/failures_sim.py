"""Failure injection for the standalone case study (spec §8.3): which jobs fail, when, and why.

`inject_failures` is a pure function over `JobSpec`s, deterministic by seed:

- every job first becomes a job that completes after its full work (the trace's own states are
  replaced: Philly's file has none, the synthetic trace's are redrawn here);
- `rate` (30.5%, Philly's GPU-job failure rate) of the jobs fail once, at U(0, 1) of their run:
  `status` FAILED, `duration` = run time until the failure, `work` = the full run, so the engine
  runs `duration`, calls `on_failure`, and a resumed or resubmitted job redoes only what the
  last checkpoint lost (`SimConfig.checkpoint_interval`);
- the category is Acme's (logs spec §2.1): `infra_share` (≈ 11%) of the failures are
  infrastructure failures, chosen with weights (GPU time)^α, α picked so that they hold
  `infra_gpu_share` (≈ 82%) of the GPU time lost to failures; the others are framework errors
  (`framework_share` of them, Acme's 404 of 2,294) or user-script errors;
- the choice is recorded in `spec.attributes["failure"]` as a plain dict (`category`, `reason`,
  `at`) so an insight source can generate the matching failed log (`failure_of` reads it back).

Jobs with zero run time cannot fail part-way and are never chosen.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from schedmate.schedulers.job import FinalStatus, JobSpec

__all__ = [
    "APPLICATION",
    "CATEGORIES",
    "FAILURE_KEY",
    "FailureModel",
    "FailureShares",
    "InjectedFailure",
    "failure_of",
    "failure_shares",
    "inject_failures",
    "is_infrastructure",
]

FAILURE_KEY = "failure"
INFRASTRUCTURE, FRAMEWORK, SCRIPT = "infrastructure", "framework", "script"
CATEGORIES = (INFRASTRUCTURE, FRAMEWORK, SCRIPT)
APPLICATION = (FRAMEWORK, SCRIPT)

# Acme reasons with their failure counts (logs spec §2.1): the reason within a category is drawn
# in proportion to them, so the log generator can write the matching error.
REASONS: Mapping[str, Mapping[str, int]] = {
    INFRASTRUCTURE: {
        "NVLinkError": 54, "CUDAError": 21, "NodeFailure": 16, "ECCError": 12, "NetworkError": 12,
        "ConnectionError": 147, "S3StorageError": 10, "NCCLTimeoutError": 6, "NCCLRemoteError": 3,
    },
    FRAMEWORK: {
        "DataloaderKilled": 6, "AttributeError": 67, "OutOfMemoryError": 14, "RuntimeError": 65,
        "AssertionError": 105, "ValueError": 33, "ZeroDivisionError": 5, "ModelLoadingError": 104,
        "DatasetLoadingError": 5,
    },
    SCRIPT: {
        "FileNotFoundError": 568, "TypeError": 620, "OSError": 266, "KeyError": 260, "ImportError": 111,
        "IndexError": 23, "NameError": 18, "SyntaxError": 10, "PermissionError": 7,
    },
}


@dataclass(frozen=True)
class FailureModel:
    """Knobs of the injection; defaults are spec §8.3's (Philly rate, Acme category shares)."""

    rate: float = 0.305
    infra_share: float = 0.11
    infra_gpu_share: float = 0.82
    framework_share: float = 404 / (404 + 1890)

    def __post_init__(self) -> None:
        for name in ("rate", "infra_share", "infra_gpu_share", "framework_share"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value}")


@dataclass(frozen=True)
class InjectedFailure:
    """What `inject_failures` decided for one job (`at`: fraction of the run when it fails)."""

    category: str
    reason: str
    at: float

    @property
    def infrastructure(self) -> bool:
        return self.category == INFRASTRUCTURE


@dataclass(frozen=True)
class FailureShares:
    """Measured shares of an injected trace, to check against the model."""

    jobs: int
    failed: int
    infrastructure: int
    failed_share: float  # failed / jobs
    infra_share: float  # infrastructure / failed
    infra_gpu_share: float  # infrastructure share of the GPU time of failed attempts


def is_infrastructure(truth: object) -> bool | None:
    """Normalise a ground-truth answer: a bool, a category name, or anything with an
    `infrastructure` attribute (`InjectedFailure`, `FailureInsight`); None when unknown."""
    if truth is None:
        return None
    if isinstance(truth, bool):
        return truth
    flag = getattr(truth, "infrastructure", None)
    if isinstance(flag, bool):
        return flag
    return str(truth).strip().lower() in (INFRASTRUCTURE, "infra")


def failure_of(spec: JobSpec) -> InjectedFailure | None:
    """The injected failure of `spec`, or None when it does not fail (or was not injected)."""
    raw = spec.attributes.get(FAILURE_KEY)
    if not isinstance(raw, Mapping):
        return None
    return InjectedFailure(str(raw["category"]), str(raw.get("reason", "")), float(raw.get("at", 0.0)))


def inject_failures(specs: Sequence[JobSpec], seed: int, model: FailureModel = FailureModel()) -> list[JobSpec]:
    """The same jobs (same order), `model.rate` of them failing once; deterministic by `seed`."""
    rng = np.random.default_rng([seed, 0x5EED_FA11])
    work = np.array([s.total_work for s in specs], dtype=float)
    gpus = np.array([s.num_gpus for s in specs], dtype=float)
    eligible = np.flatnonzero(work > 0)
    n_fail = min(len(eligible), int(round(model.rate * len(specs))))
    failing = np.sort(rng.choice(eligible, size=n_fail, replace=False)) if n_fail else np.zeros(0, dtype=int)
    at = rng.uniform(0.0, 1.0, size=n_fail)
    lost = work[failing] * gpus[failing] * at  # GPU time of each failed attempt
    infra = _choose_infra(work[failing] * gpus[failing], lost, model, rng)
    app_u = rng.uniform(size=n_fail)
    reason_u = rng.uniform(size=n_fail)

    out = [_completed(s) for s in specs]
    for i, idx in enumerate(failing.tolist()):
        if infra[i]:
            category = INFRASTRUCTURE
        else:
            category = FRAMEWORK if app_u[i] < model.framework_share else SCRIPT
        failure = {"category": category, "reason": _reason(category, reason_u[i]), "at": float(at[i])}
        spec = out[idx]
        out[idx] = replace(
            spec,
            status=FinalStatus.FAILED,
            duration=float(work[idx] * at[i]),
            work=float(work[idx]),
            attributes={**spec.attributes, FAILURE_KEY: failure},
        )
    return out


def failure_shares(specs: Sequence[JobSpec]) -> FailureShares:
    """Count failures and infrastructure shares (by number and by failed-attempt GPU time)."""
    failed = [(s, f) for s in specs if (f := failure_of(s)) is not None]
    infra = [(s, f) for s, f in failed if f.infrastructure]
    lost_all = sum(s.duration * s.num_gpus for s, _ in failed)
    lost_infra = sum(s.duration * s.num_gpus for s, _ in infra)
    return FailureShares(
        jobs=len(specs),
        failed=len(failed),
        infrastructure=len(infra),
        failed_share=len(failed) / len(specs) if specs else 0.0,
        infra_share=len(infra) / len(failed) if failed else 0.0,
        infra_gpu_share=lost_infra / lost_all if lost_all > 0 else 0.0,
    )


# ---------------------------------------------------------------------------------- helpers


def _completed(spec: JobSpec) -> JobSpec:
    """The job as if it ran to completion: the trace's own failure or cancellation is dropped."""
    attributes: dict[str, Any] = {k: v for k, v in spec.attributes.items() if k != FAILURE_KEY}
    return replace(spec, status=FinalStatus.COMPLETED, duration=spec.total_work, work=None, attributes=attributes)


def _choose_infra(weight: np.ndarray, lost: np.ndarray, model: FailureModel, rng: np.random.Generator) -> np.ndarray:
    """Mask of the `infra_share` failures that are infrastructure ones.

    Weighted sampling without replacement (Efraimidis–Spirakis keys log(u) / w) with weights
    weight^α; the same draws serve every α, and α in [0, 4] is scanned for the one whose GPU-time
    share of `lost` is closest to `infra_gpu_share` (α = 0 is a uniform choice by count).
    """
    n = len(weight)
    k = int(round(model.infra_share * n))
    mask = np.zeros(n, dtype=bool)
    if k == 0 or n == 0:
        return mask
    log_u = np.log(rng.uniform(1e-300, 1.0, size=n))
    log_w = np.log(np.maximum(weight, 1e-9))
    log_w -= log_w.max()  # scale-free: only ratios of weights matter
    total = float(lost.sum())
    best: tuple[float, np.ndarray] | None = None
    for alpha in np.linspace(0.0, 4.0, 81):
        keys = log_u / np.exp(alpha * log_w)  # log(u^(1/w)), w = weight^α; larger is chosen
        chosen = np.argpartition(-keys, k - 1)[:k]
        share = float(lost[chosen].sum()) / total if total > 0 else 0.0
        gap = abs(share - model.infra_gpu_share)
        if best is None or gap < best[0] - 1e-12:
            best = (gap, chosen)
    mask[best[1]] = True  # type: ignore[index]
    return mask


def _reason(category: str, u: float) -> str:
    names = list(REASONS[category])
    counts = np.array([REASONS[category][n] for n in names], dtype=float)
    cdf = np.cumsum(counts) / counts.sum()
    return names[min(int(np.searchsorted(cdf, u, side="right")), len(names) - 1)]
