"""Rate x plan: a new job's full-run duration from the measured speed of similar past jobs.

The paper averages the durations of matched jobs, which only works when the new job is an
identical rerun. Here the matched jobs contribute what transfers between configurations, their
measured wall time per optimizer step (from their logs), and the new job contributes its own
plan (iterations, iteration type, batch size, GPUs, as extracted from its code):

* a steps-based plan: train = iterations x step time, scaled by the batch-size ratio (a step's
  work grows with the samples it processes);
* an epochs-based plan: train = epochs x epoch time, where a similar job's epoch time is its
  steps per epoch x step time, scaled by its GPUs / the new GPUs (an epoch is a fixed amount of
  data, so its time does not depend on the batch size, only on how many GPUs share it).

Work per sample grows with the parameter count, so a sample's time is also scaled by the model
sizes' ratio when both are known (1 for the same model), and with the sample's length: the
sequence lengths' ratio when both jobs state one (tokens per sample; a 2,048-token run of the same
config takes about four times a 512-token one). Similar jobs are chosen by tiers, most
specific first (the same launch config but for its length: model + dataset + task + GPUs + batch
+ dataloader workers; then model + dataset + task + GPUs, model + dataset + task, model +
dataset, model, and last dataset + task with both model sizes known, i.e. another size or
variant of the model): a softer match than identical artefacts. Where GPU counts differ, a steps
plan follows the pool's own GPU elasticity of the step time (is the stated batch per device or
global?). The
estimate is the median over the first tier that yields any usable job, in log space, with the
spread of those log times, and of those jobs' log start-ups, kept for quantiles. Pure functions; no store or generator access.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Plan", "RatePlanEstimate", "RateSample", "TIERS", "Tier", "estimate_rate_plan", "gpu_elasticity",
           "sample_train_time", "startup_log_spread"]


@dataclass(frozen=True)
class Tier:
    name: str
    keys: tuple[str, ...]  # fields that must agree (both known and equal)
    need_size: bool = False  # both model sizes must be known (the size ratio carries the transfer)


# the first tier with a usable sample wins
TIERS: tuple[Tier, ...] = (
    Tier("same launch config", ("model_name", "dataset", "task_type", "gpus", "batch_size", "num_workers")),
    Tier("model+dataset+task+gpus", ("model_name", "dataset", "task_type", "gpus")),
    Tier("model+dataset+task", ("model_name", "dataset", "task_type")),
    Tier("model+dataset", ("model_name", "dataset")),
    Tier("model", ("model_name",)),
    Tier("dataset+task, size-scaled", ("dataset", "task_type"), need_size=True),
)


def _norm(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


def _pos_int(value: Any) -> int | None:
    try:
        v = int(value)
    except (TypeError, ValueError):
        return None
    return v if v > 0 else None


def _int(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _pos_float(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if v > 0 and math.isfinite(v) else None


@dataclass(frozen=True)
class Plan:
    """What the new job will do, as its code and launch say."""

    model_name: str | None = None
    dataset: str | None = None
    task_type: str | None = None
    iterations: int | None = None
    iteration_type: str | None = None  # "steps" | "epochs"
    batch_size: int | None = None
    gpus: int | None = None
    model_size_b: float | None = None
    num_workers: int | None = None
    seq_len: int | None = None  # tokens per sample, where the code states one

    @classmethod
    def from_fields(cls, fields: Mapping[str, Any], gpus: int | None) -> Plan:
        return cls(model_name=fields.get("model_name"), dataset=fields.get("dataset"), task_type=fields.get("task_type"),
                   iterations=_pos_int(fields.get("iterations")), iteration_type=fields.get("iteration_type"),
                   batch_size=_pos_int(fields.get("batch_size")), gpus=_pos_int(gpus),
                   model_size_b=_pos_float(fields.get("model_size_b")), num_workers=_int(fields.get("num_workers")),
                   seq_len=_pos_int(fields.get("seq_len")))


@dataclass(frozen=True)
class RateSample:
    """One historical job: its extracted fingerprint and what its logs measured."""

    job_id: str
    model_name: str | None = None
    dataset: str | None = None
    task_type: str | None = None
    batch_size: int | None = None
    gpus: int | None = None
    model_size_b: float | None = None
    num_workers: int | None = None
    step_time_s: float | None = None
    steps_per_epoch: int | None = None
    startup_s: float | None = None
    sm_util: float | None = None
    seq_len: int | None = None

    @classmethod
    def from_record(cls, record: Any) -> RateSample:
        """From an `embeddings.store.JobRecord` (workload = fingerprint, submitted = launch, outcome = measured)."""
        w, sub, out = record.workload, record.submitted, record.outcome
        return cls(job_id=record.job_id, model_name=w.get("model_name"), dataset=w.get("dataset"),
                   task_type=w.get("task_type"), batch_size=_pos_int(w.get("batch_size")), gpus=_pos_int(sub.get("gpus")),
                   model_size_b=_pos_float(w.get("model_size_b")), num_workers=_int(w.get("num_workers")),
                   step_time_s=_pos_float(out.step_time_s), steps_per_epoch=_pos_int(out.steps_per_epoch),
                   startup_s=out.startup_s, sm_util=out.sm_util, seq_len=_pos_int(w.get("seq_len")))


@dataclass(frozen=True)
class RatePlanEstimate:
    """Full-run duration (startup + training) of the plan at the matched jobs' speed."""

    startup_s: float
    train_s: float
    spread: float  # standard deviation of the samples' log train times (0 for one sample)
    tier: str
    sample_ids: list[str] = field(default_factory=list)
    sm_util: float | None = None
    gpu_elasticity: float = 0.0
    startup_spread: float = 0.0  # standard deviation of the tier's log start-ups (0 for fewer than two)
    startups_measured: int = 0  # how many of the tier's jobs measured a start-up (> 0 s)

    @property
    def duration_s(self) -> float:
        return self.startup_s + self.train_s

    def quantile_s(self, z: float) -> float:
        """Start-up at its own log-normal quantile `z` plus training at its: a sum of two quantiles is
        more extreme than the same quantile of the sum, so for z > 0 a conservative upper end."""
        return self.startup_s * math.exp(z * self.startup_spread) + self.train_s * math.exp(z * self.spread)


def _size_ratio(plan: Plan, sample: RateSample) -> float:
    """Work per sample, the plan's over the sample's: parameters x tokens, each where both state it."""
    size = plan.model_size_b / sample.model_size_b if plan.model_size_b and sample.model_size_b else 1.0
    tokens = plan.seq_len / sample.seq_len if plan.seq_len and sample.seq_len else 1.0
    return size * tokens


def sample_train_time(plan: Plan, sample: RateSample, gpu_elasticity: float = 0.0) -> float | None:
    """The plan's training time at this sample's measured speed; None when it cannot be transferred.

    `gpu_elasticity` (steps plans only): d ln(step time) / d ln(GPUs) at a fixed stated batch size,
    0 when the batch is per device, -1 when it is global and split across the GPUs.
    """
    if plan.iterations is None or sample.step_time_s is None:
        return None
    size = _size_ratio(plan, sample)
    if plan.iteration_type == "steps":
        ratio = plan.batch_size / sample.batch_size if plan.batch_size and sample.batch_size else 1.0
        if gpu_elasticity and plan.gpus and sample.gpus:
            ratio *= (plan.gpus / sample.gpus) ** gpu_elasticity
        return plan.iterations * sample.step_time_s * ratio * size
    if plan.iteration_type == "epochs":
        if sample.steps_per_epoch is None:
            return None
        ratio = sample.gpus / plan.gpus if plan.gpus and sample.gpus else 1.0
        return plan.iterations * sample.steps_per_epoch * sample.step_time_s * ratio * size
    return None


def _agree(plan: Plan, sample: RateSample, tier: Tier) -> bool:
    if tier.need_size and not (plan.model_size_b and sample.model_size_b):
        return False
    for k in tier.keys:
        a, b = _norm(getattr(plan, k)), _norm(getattr(sample, k))
        if a is None or b is None or a != b:
            return False
    return True


def gpu_elasticity(plan: Plan, pool: Sequence[RateSample], bounds: tuple[float, float] = (-1.0, 0.5)) -> float:
    """Least-squares slope of ln(step time per stated sample, size-normalised) on ln(GPUs) over the
    pool, clipped to `bounds`; 0 when the pool has fewer than two GPU counts. It says from the
    history whether this code's stated batch is per device (about 0) or global (about -1)."""
    xs, ys = [], []
    for s in pool:
        if s.step_time_s and s.gpus and s.batch_size:
            xs.append(math.log(s.gpus))
            ys.append(math.log(s.step_time_s / s.batch_size / (s.model_size_b or 1.0) / (s.seq_len or 1)))
    if len(set(xs)) < 2:
        return 0.0
    slope = float(np.polyfit(xs, ys, 1)[0])
    return min(bounds[1], max(bounds[0], slope))


def startup_log_spread(samples: Sequence[RateSample]) -> tuple[float, int]:
    """(standard deviation of the samples' log start-ups, how many measured one): only start-ups
    above 0 s count (a log needs one); the spread is 0 with fewer than two. Start-up varies apart
    from speed (image pulls, data staging, rendezvous), so it is measured on its own."""
    logs = [math.log(v) for s in samples if (v := s.startup_s) is not None and v > 0 and math.isfinite(v)]
    return (float(np.std(logs)) if len(logs) > 1 else 0.0), len(logs)


def estimate_rate_plan(plan: Plan, samples: Sequence[RateSample], *,
                       tiers: Sequence[Tier] = TIERS) -> RatePlanEstimate | None:
    """Median (log space) of the plan's training time over the first tier with a usable sample.

    In tiers where GPU counts may differ, a steps plan's step time is moved along the pool's
    `gpu_elasticity`. Startup is the median measured startup of that tier's jobs (0 when none was
    measured), its spread the standard deviation of their log start-ups, measured like the train
    times' (start-up varies apart from speed: image pulls, data staging, rendezvous), over those
    above 0 s (a log needs one) and 0 with fewer than two; SM utilisation the median of theirs.
    None when no tier has a usable sample.
    """
    for tier in tiers:
        pool = [s for s in samples if _agree(plan, s, tier)]
        e = gpu_elasticity(plan, pool) if "gpus" not in tier.keys and plan.iteration_type == "steps" else 0.0
        times = [(s, t) for s in pool if (t := sample_train_time(plan, s, e)) is not None and t > 0
                 and math.isfinite(t)]
        if not times:
            continue
        logs = np.log([t for _, t in times])
        starts = [s.startup_s for s in pool if s.startup_s is not None]
        start_spread, start_n = startup_log_spread(pool)
        utils = [s.sm_util for s in pool if s.sm_util is not None]
        return RatePlanEstimate(
            startup_s=float(np.median(starts)) if starts else 0.0, train_s=float(np.exp(np.median(logs))),
            spread=float(np.std(logs)) if len(logs) > 1 else 0.0, tier=tier.name, sample_ids=[s.job_id for s, _ in times],
            sm_util=float(np.median(utils)) if utils else None, gpu_elasticity=e,
            startup_spread=start_spread, startups_measured=start_n,
        )
    return None
