"""Give trace jobs a workload: family by GPU request (the paper's rule), config, code and log spec.

Public traces carry no code. As in the paper's physical experiment, a job's Table-2 workload is
chosen by its original GPU request: large >= 8 GPUs, medium 4-7, small < 4 (8 counts as large,
spec §9.13); requests above the cluster are capped (128 GPUs). Within a class the family is drawn
uniformly, per job, from a seed and the job id only, so a job's assignment does not depend on
which other jobs are in the list.

With `match_duration` (default) the config's length (steps or epochs) is set so that the
workload's modelled run time matches the trace job's work (`JobSpec.total_work`): the code then
states a length consistent with the duration the simulator will replay, which is what the
advisor's similarity exploits. Very short jobs become short step-limited runs (debug runs).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from schedmate.schedulers.job import JobSpec

from .codegen import write_repo
from .history import expected_perf, trace_log_spec
from .workloads import FAMILIES, SizeClass, WorkloadConfig, _nice_round, get_family, nodes_for, sample_config

__all__ = [
    "MAX_GPUS",
    "WorkloadAssignment",
    "assign_workload",
    "assign_workloads",
    "attach_workloads",
    "size_class",
]

MAX_GPUS = 128


def size_class(num_gpus: int) -> SizeClass:
    """large >= 8 GPUs, medium 4-7, small < 4."""
    if num_gpus >= 8:
        return "large"
    if num_gpus >= 4:
        return "medium"
    return "small"


@dataclass(frozen=True)
class WorkloadAssignment:
    job_id: str
    size_class: SizeClass
    family: str
    config: WorkloadConfig
    log_spec: dict[str, Any]

    def attributes(self) -> dict[str, Any]:
        """What goes into `JobSpec.attributes`."""
        return {
            "workload_family": self.family,
            "size_class": self.size_class,
            "workload_config": self.config.to_dict(),
            "truth": self.config.truth().model_dump(),
            "log_spec": self.log_spec,
        }


def _pool(families: Sequence[str] | None) -> dict[str, list[str]]:
    keys = [get_family(f).key for f in families] if families is not None else list(FAMILIES)
    pool: dict[str, list[str]] = {"large": [], "medium": [], "small": []}
    for k in keys:
        pool[FAMILIES[k].scale].append(k)
    if not any(pool.values()):
        raise ValueError("no workload families to assign")
    return pool


def _fit_length(cfg: WorkloadConfig, work_s: float) -> WorkloadConfig:
    """Steps/epochs so that startup + training (+ eval) time ~ work_s."""
    fam = cfg.family_spec
    est = expected_perf(cfg)
    train_target = max(0.0, work_s - est.startup_s)
    per_step = est.step_time_s * (1.0 + fam.perf.eval_frac)
    epochs_only = fam.epoch_share >= 1.0  # the program only counts epochs (Ultralytics)
    if cfg.iteration_type == "epochs" or epochs_only:
        epochs = train_target / (per_step * (est.steps_per_epoch or 1))
        if epochs >= 1.0 or epochs_only:
            return replace(cfg, iteration_type="epochs", iterations=max(1, round(epochs)))
    # step-counted, or shorter than one epoch: a step-limited (debug-length) run
    steps = max(10, _nice_round(train_target / per_step)) if per_step > 0 else 10
    return replace(cfg, iteration_type="steps", iterations=steps)


def assign_workload(
    spec: JobSpec,
    seed: int,
    *,
    families: Sequence[str] | None = None,
    max_gpus: int = MAX_GPUS,
    match_duration: bool = True,
) -> WorkloadAssignment:
    """The workload of one trace job; deterministic in (seed, job id, GPU request, duration)."""
    pool = _pool(families)
    cls = size_class(spec.num_gpus)
    candidates = pool[cls] or [k for keys in pool.values() for k in keys]
    rng = random.Random(f"map:{seed}:{spec.job_id}")
    family = rng.choice(sorted(candidates))
    gpus = max(1, min(spec.num_gpus, max_gpus))
    cfg = sample_config(family, rng, gpus=gpus)
    if cfg.nodes != nodes_for(gpus):  # defensive: sample_config derives nodes from gpus
        cfg = replace(cfg, nodes=nodes_for(gpus))
    if match_duration:
        cfg = _fit_length(cfg, spec.total_work)
    log_spec, _ = trace_log_spec(cfg, duration_s=spec.duration, status=spec.status.value, rng=rng)
    return WorkloadAssignment(spec.job_id, cls, family, cfg, log_spec)


def assign_workloads(specs: Iterable[JobSpec], seed: int, **kwargs: Any) -> list[WorkloadAssignment]:
    return [assign_workload(s, seed, **kwargs) for s in specs]


def attach_workloads(
    specs: Iterable[JobSpec],
    seed: int,
    *,
    code_root: Path | str | None = None,
    **kwargs: Any,
) -> list[JobSpec]:
    """Specs with workload attributes; with `code_root`, each job's repository written to
    `code_root/<job_id>/` and set as `code_dir` (logs are left to the log generator)."""
    out = []
    for spec in specs:
        a = assign_workload(spec, seed, **kwargs)
        code_dir = spec.code_dir
        if code_root is not None:
            dest = Path(code_root) / _safe(spec.job_id)
            write_repo(a.config, dest)
            code_dir = str(dest)
        out.append(replace(spec, attributes={**spec.attributes, **a.attributes()}, code_dir=code_dir))
    return out


def _safe(job_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in job_id) or "job"
