"""Outcomes of generated jobs: duration, SM utilisation, GPU memory, final status, log spec.

`expected_perf(config)` is the deterministic part: step time from the family's performance model
(per-sample cost x per-device batch, slowed by communication across GPUs and nodes and by a
starved dataloader), the planned run time (startup + steps x step time + evaluation), steady-state
SM utilisation and peak memory. `simulate_outcome` adds what varies between runs and users: a
user's pipeline efficiency, node-to-node noise, and the final status.

Status follows production traces (Acme Seren: 49.7% complete, 42.9% fail; Philly about 30% fail):
about 40% of jobs fail, 8% are cancelled. Failure classes and reasons follow Acme (logs.md §2.1):
user-script errors are most failures and strike within minutes (before or right after the first
step); framework errors strike early to mid-run (OOM on the first forward, dataloader deaths);
infrastructure errors are few, more likely the more GPU-hours a job plans, and strike late.
`duration_s` is what a trace records: the run time until the job ended, for whatever reason.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from schedmate.taxonomy import REASONS, Component, reasons_in
from schedmate.taxonomy import FailureCategory as TaxCategory

from .workloads import WorkloadConfig

__all__ = [
    "FAILURE_REASONS",
    "Outcome",
    "PerfEstimate",
    "UserProfile",
    "expected_perf",
    "log_framework",
    "make_user",
    "simulate_outcome",
    "trace_log_spec",
]

Status = Literal["completed", "failed", "cancelled"]
FailureCategory = Literal["script", "framework", "infrastructure"]

P_FAIL = 0.40
P_CANCEL = 0.08
P_EARLY_STOP = 0.08  # completed epoch-based jobs that stop early (early stopping)
CATEGORY_WEIGHTS = {"script": 0.73, "framework": 0.16, "infrastructure": 0.11}  # Acme failure counts
GPU_MEM_GB = 80.0

def _reason_table() -> dict[str, dict[str, tuple[int, float, str | None]]]:
    """category -> reason -> (count in Acme, share of failure GPU time in Acme in %, component),
    read from the taxonomy (Acme's reasons only). A share the taxonomy does not give is 0.0 (only
    infrastructure's shares, all given, are drawn from: `_reason`); a software component is `None`
    (the code's, not a device)."""
    table: dict[str, dict[str, tuple[int, float, str | None]]] = {}
    for category in (TaxCategory.INFRASTRUCTURE, TaxCategory.FRAMEWORK, TaxCategory.SCRIPT):
        rows: dict[str, tuple[int, float, str | None]] = {}
        for reason in reasons_in(category, acme_only=True):
            info = REASONS[reason]
            share = round(100 * info.gpu_time_share, 4) if info.gpu_time_share is not None else 0.0
            component = None if info.component is Component.SOFTWARE else info.component.value
            rows[reason.value] = (info.acme_count, share, component)
        table[category.value] = rows
    return table


FAILURE_REASONS: dict[str, dict[str, tuple[int, float, str | None]]] = _reason_table()
_STARTUP_REASONS = {"ModelLoadingError", "DatasetLoadingError"}

# (initial, final) training loss per program, for the log renderer
_LOSS = {
    "causal_sft": (1.9, 0.95), "megatron": (10.9, 2.3), "vision_cls": (6.9, 1.6), "qa": (5.9, 1.05),
    "diffusion": (0.16, 0.11), "contrastive": (6.2, 1.4), "recsys": (0.145, 0.124), "segmentation": (0.92, 0.16),
    "detection": (3.1, 1.2), "seq2seq": (4.6, 2.1),
}


@dataclass(frozen=True)
class UserProfile:
    """A submitting user: their code runs at `efficiency` x the model's speed (>1 = slower)."""

    name: str
    efficiency: float = 1.0
    fail_shift: float = 0.0  # added to the failure probability
    vc: str = "vc-default"


def make_user(rng: random.Random, name: str | None = None) -> UserProfile:
    """A user with their own pipeline efficiency and failure propensity (mean shift 0)."""
    name = name or f"u{rng.getrandbits(24):06x}"
    return UserProfile(
        name=name,
        efficiency=math.exp(rng.gauss(0.0, 0.12)),
        fail_shift=max(-0.2, min(0.2, rng.gauss(0.0, 0.06))),
        vc=f"vc-{rng.choice('abcdefgh')}",
    )


@dataclass(frozen=True)
class PerfEstimate:
    """Deterministic performance of a config (no noise): what the workload 'should' take."""

    step_time_s: float
    steps_total: int
    steps_per_epoch: int | None
    startup_s: float
    train_s: float
    eval_s: float
    planned_duration_s: float
    sm_util: float  # steady-state SM utilisation, %
    gpu_mem_gb: float  # peak per GPU, capped at the device
    gpu_mem_demand_gb: float  # uncapped demand (> capacity means OOM risk)
    static_mem_gb: float  # weights and optimizer states only


def expected_perf(cfg: WorkloadConfig) -> PerfEstimate:
    fam = cfg.family_spec
    perf = fam.perf
    sample_s = perf.sample_s * (cfg.model_size_b / fam.variants[0].size_b)
    len_ratio = 1.0
    if perf.ref_len and cfg.length:
        len_ratio = (cfg.length / perf.ref_len) ** perf.len_exp
    sample_s *= len_ratio
    if cfg.finetune == "lora":
        sample_s *= 0.7
    if cfg.precision == "fp32":
        sample_s *= 1.8
    samples_per_gpu_step = cfg.per_device_batch * cfg.grad_accum
    comm = 1.0 + perf.comm * math.log2(cfg.gpus) + (perf.internode * (1 + 0.15 * math.log2(cfg.nodes)) if cfg.nodes > 1 else 0.0)
    starve = 1.0
    if perf.workers_needed:
        starve = min(2.5, max(1.0, (perf.workers_needed / max(cfg.num_workers, 0.5)) ** 0.35))
    step_time = samples_per_gpu_step * sample_s * comm * starve + perf.step_overhead_s * cfg.grad_accum
    samples = cfg.dataset_spec.samples
    steps_per_epoch = math.ceil(samples / cfg.global_batch) if samples else None
    if cfg.iteration_type == "epochs":
        if steps_per_epoch is None:
            raise ValueError(f"{cfg.family}: dataset {cfg.dataset} has no epoch size; use steps")
        steps_total = cfg.iterations * steps_per_epoch
    else:
        steps_total = cfg.iterations
    startup = perf.startup_s * (1.0 + 0.15 * math.log2(cfg.nodes))
    train = steps_total * step_time
    evals = perf.eval_frac * train
    # memory
    micro = cfg.per_device_batch
    act = perf.act_gb * micro * len_ratio
    if fam.program == "megatron":
        tp, pp = int(cfg.extra.get("tp", 1)), int(cfg.extra.get("pp", 1))
        micro = float(cfg.extra.get("micro_batch", 1))
        static = cfg.model_size_b * 6.0 / (tp * pp) + cfg.model_size_b * 12.0 / cfg.gpus
        act = perf.act_gb * micro * len_ratio * (cfg.model_size_b / 6.7) ** 0.5 / tp
    elif cfg.finetune == "lora":
        static = cfg.model_size_b * 2.0 + cfg.model_size_b * 0.01 * perf.bytes_per_param
    elif perf.shard_states:
        static = cfg.model_size_b * perf.bytes_per_param / cfg.gpus + cfg.model_size_b * 0.25
    else:
        static = cfg.model_size_b * perf.bytes_per_param
    if cfg.precision == "fp32":
        act *= 1.7
    demand = 1.5 + static + act
    util = perf.util_max * micro / (micro + perf.util_half_batch) / starve ** 0.8
    util *= 1.0 - 0.04 * math.log2(cfg.nodes)
    return PerfEstimate(
        step_time_s=step_time, steps_total=steps_total, steps_per_epoch=steps_per_epoch, startup_s=startup,
        train_s=train, eval_s=evals, planned_duration_s=startup + train + evals,
        sm_util=max(3.0, min(100.0, util)), gpu_mem_gb=min(demand, GPU_MEM_GB - 0.5),
        gpu_mem_demand_gb=demand, static_mem_gb=1.5 + static,
    )


class Outcome(BaseModel):
    """What the history records about one run."""

    model_config = ConfigDict(extra="forbid")

    duration_s: float  # run time until the job ended (completion, failure or cancellation)
    planned_duration_s: float  # run time it would have needed to complete (this run's speed)
    sm_util: float  # SM utilisation averaged over the run, %
    sm_util_steady: float  # SM utilisation while training, %
    gpu_mem_gb: float  # peak GPU memory per GPU
    status: Status
    failure_category: FailureCategory | None = None
    failure_reason: str | None = None
    failure_component: str | None = None
    steps_done: int = 0
    early_stopped: bool = False


def _weighted(rng: random.Random, weights: dict[str, float]) -> str:
    keys = list(weights)
    return rng.choices(keys, weights=[weights[k] for k in keys])[0]


def _category(rng: random.Random, gpu_hours: float, oom_risk: bool) -> str:
    w = dict(CATEGORY_WEIGHTS)
    w["infrastructure"] *= min(4.0, max(0.4, math.sqrt(gpu_hours / 32.0)))
    if oom_risk:
        w["framework"] *= 3.0
    return _weighted(rng, w)


def _reason(rng: random.Random, category: str, gpus: int, oom_risk: bool) -> tuple[str, str | None]:
    table = FAILURE_REASONS[category]
    # big jobs fail like the GPU-time shares say (hardware), small ones like the counts say
    big = category == "infrastructure" and gpus >= 8
    weights = {r: float(share if big else count) for r, (count, share, _) in table.items()}
    if oom_risk and category == "framework":
        weights["OutOfMemoryError"] *= 40.0
    reason = _weighted(rng, weights)
    return reason, table[reason][2]


def log_framework(cfg: WorkloadConfig) -> str:
    """Which logging style the job prints (for the log renderer)."""
    program = cfg.family_spec.program
    if program == "megatron":
        return "megatron"
    if program == "detection":
        return "ultralytics"
    if program == "diffusion":
        return "diffusers"
    if cfg.launcher == "deepspeed":
        return "deepspeed"
    if cfg.style == "hf_args":
        return "hf_trainer"
    if program == "causal_sft":
        return "accelerate"
    return "pytorch"


def _log_interval(cfg: WorkloadConfig, steps_total: int) -> int:
    h = int(hashlib.sha256(f"{cfg.layout_seed}:log".encode()).hexdigest(), 16)
    options = [i for i in (1, 10, 20, 50, 100) if i * 20 <= max(steps_total, 20)] or [1]
    return options[h % len(options)]


def _fail_point(rng: random.Random, category: str, reason: str, est: PerfEstimate) -> float:
    """Fraction of the training phase done when the failure strikes (0 = before the first step)."""
    if category == "script":
        if rng.random() < 0.85:
            return 0.0
        first_steps = rng.choice((1, 10, 50, 100))
        return min(1.0, first_steps / max(est.steps_total, 1))
    if category == "framework":
        if reason in _STARTUP_REASONS:
            return 0.0
        if reason == "OutOfMemoryError" and rng.random() < 0.7:
            return min(1.0, 1 / max(est.steps_total, 1))
        return rng.betavariate(1.0, 2.5)
    return rng.betavariate(2.2, 1.2)


def simulate_outcome(
    cfg: WorkloadConfig, rng: random.Random, user: UserProfile | None = None
) -> tuple[Outcome, dict[str, Any]]:
    """One run of `cfg` by `user`: its outcome and the log spec the log renderer needs."""
    user = user or UserProfile("anonymous")
    est = expected_perf(cfg)
    step_time = est.step_time_s * user.efficiency * math.exp(rng.gauss(0.0, 0.10))
    startup = est.startup_s * math.exp(rng.gauss(0.0, 0.25))
    train = est.steps_total * step_time
    evals = est.eval_s * (train / est.train_s if est.train_s else 1.0)
    planned = startup + train + evals
    util_steady = max(3.0, min(100.0, est.sm_util * math.exp(rng.gauss(0.0, 0.05)) / user.efficiency ** 0.3))
    mem_noise = math.exp(rng.gauss(0.0, 0.04))
    oom_risk = est.gpu_mem_demand_gb > GPU_MEM_GB - 4.0
    gpu_hours = planned * cfg.gpus / 3600.0

    p_fail = min(0.9, max(0.05, P_FAIL + user.fail_shift + (0.3 if oom_risk else 0.0)))
    u = rng.random()
    status: Status = "failed" if u < p_fail else ("cancelled" if u < p_fail + P_CANCEL else "completed")
    category = reason = component = None
    early_stopped = False
    extra_s = 0.0
    if status == "failed":
        category = _category(rng, gpu_hours, oom_risk)
        reason, component = _reason(rng, category, cfg.gpus, oom_risk)
        frac = _fail_point(rng, category, reason, est)
        if frac == 0.0:  # dies during startup: somewhere between launch and the first step
            elapsed = startup * rng.uniform(0.05, 1.0)
        else:
            elapsed = startup + frac * (train + evals)
        if reason == "NCCLTimeoutError":
            extra_s = 600.0  # the watchdog waits its timeout before it kills the job
        extra_s += rng.uniform(2.0, 30.0)  # teardown, launcher reporting
    elif status == "cancelled":
        frac = rng.betavariate(0.8, 1.6)
        elapsed = startup + frac * (train + evals)
    else:
        frac = 1.0
        if cfg.iteration_type == "epochs" and cfg.iterations >= 4 and rng.random() < P_EARLY_STOP:
            frac = rng.uniform(0.5, 0.9)
            early_stopped = True
        elapsed = startup + frac * (train + evals)
    duration = elapsed + extra_s
    steps_done = 0 if frac == 0.0 else min(est.steps_total, max(1, int(frac * est.steps_total)))
    if status == "completed" and not early_stopped:
        steps_done = est.steps_total
    train_time_done = max(0.0, min(elapsed - startup, train + evals)) if frac > 0 else 0.0
    util_avg = util_steady * (train_time_done / duration) if duration > 0 else 0.0
    mem = (est.gpu_mem_gb if steps_done > 0 else min(est.static_mem_gb, est.gpu_mem_gb)) * mem_noise
    outcome = Outcome(
        duration_s=round(duration, 1), planned_duration_s=round(planned, 1), sm_util=round(util_avg, 2),
        sm_util_steady=round(util_steady, 2), gpu_mem_gb=round(min(mem, GPU_MEM_GB - 0.1), 2), status=status,
        failure_category=category, failure_reason=reason, failure_component=component, steps_done=steps_done,
        early_stopped=early_stopped,
    )
    spec = _log_spec(cfg, est, outcome, step_time=step_time, startup=startup, render_seed=rng.getrandbits(32))
    return outcome, spec


def _log_spec(
    cfg: WorkloadConfig, est: PerfEstimate, outcome: Outcome, *, step_time: float, startup: float, render_seed: int
) -> dict[str, Any]:
    loss0, loss1 = _LOSS.get(cfg.family_spec.program, (2.0, 1.0))
    failure = None
    if outcome.status == "failed":
        failure = {
            "category": outcome.failure_category, "reason": outcome.failure_reason,
            "component": outcome.failure_component, "at_s": outcome.duration_s, "at_step": outcome.steps_done,
        }
    return {
        "framework": log_framework(cfg),
        "program": cfg.family_spec.program,
        "model_name": cfg.model_name,
        "dataset": cfg.dataset,
        "iteration_type": cfg.iteration_type,
        "iterations": cfg.iterations,
        "steps": est.steps_total,
        "steps_done": outcome.steps_done,
        "steps_per_epoch": est.steps_per_epoch,
        "step_time_s": round(step_time, 4),
        "startup_s": round(min(startup, outcome.duration_s), 1),
        "duration_s": outcome.duration_s,
        "log_interval": _log_interval(cfg, est.steps_total),
        "batch_size": cfg.batch_size,
        "global_batch_size": cfg.global_batch,
        "learning_rate": cfg.learning_rate,
        "seq_len": cfg.seq_len,
        "image_size": cfg.image_size,
        "precision": cfg.precision,
        "gpus": cfg.gpus,
        "nodes": cfg.nodes,
        "loss": {"start": loss0, "end": loss1},
        "status": outcome.status,
        "early_stopped": outcome.early_stopped,
        "failure": failure,
        "seed": render_seed,
    }


def trace_log_spec(
    cfg: WorkloadConfig, *, duration_s: float, status: str, rng: random.Random
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Log spec for a trace job whose duration and status the trace fixes (mapping.py).

    The failure class of a failed job is drawn consistent with when it failed: dying before the
    first step is almost always a script error, late deaths of big jobs lean to infrastructure.
    Returns (log_spec, failure_or_empty).
    """
    est = expected_perf(cfg)
    startup = min(est.startup_s, duration_s)
    train_s = max(0.0, duration_s - startup)
    steps_done = min(est.steps_total, int(train_s / est.step_time_s)) if est.step_time_s > 0 else 0
    if status == "completed":
        steps_done = est.steps_total
    failure: dict[str, Any] = {}
    if status == "failed":
        frac = steps_done / max(est.steps_total, 1)
        if steps_done == 0:
            weights = {"script": 0.85, "framework": 0.13, "infrastructure": 0.02}
        elif frac < 0.3:
            weights = {"script": 0.35, "framework": 0.45, "infrastructure": 0.20}
        else:
            weights = {"script": 0.10, "framework": 0.35, "infrastructure": 0.55}
        category = _weighted(rng, weights)
        reason, component = _reason(rng, category, cfg.gpus, False)
        failure = {"category": category, "reason": reason, "component": component, "at_s": duration_s,
                   "at_step": steps_done}
    outcome = Outcome(
        duration_s=round(duration_s, 1), planned_duration_s=round(est.planned_duration_s, 1),
        sm_util=round(est.sm_util, 2), sm_util_steady=round(est.sm_util, 2), gpu_mem_gb=round(est.gpu_mem_gb, 2),
        status=status if status in ("completed", "failed", "cancelled") else "failed",
        failure_category=failure.get("category"), failure_reason=failure.get("reason"),
        failure_component=failure.get("component"), steps_done=steps_done,
    )
    spec = _log_spec(cfg, est, outcome, step_time=est.step_time_s, startup=startup, render_seed=rng.getrandbits(32))
    return spec, failure
