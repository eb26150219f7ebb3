"""Semantic artefacts for simulated jobs: which code and which logs a trace job gets.

Public traces carry no code or logs, so every job is given generated ones (spec §8). The rules
here are pure functions of (seed, job): no I/O, no models.

**Bounded distinct artefacts.** A 10,000-job trace must not mean 10,000 agent runs. A trace job's
workload *family* is chosen per job by its GPU request (`mapping.assign_workload`, the paper's
size-class rule); the *config* is then the canonical one of its cell
(family, GPUs, length bucket, variant): the job's *planned* work (`planned_work`: the world's plan,
drawn from an earlier window, never the job's own outcome; issue 22) is quantised to a log-scale grid
(`ratio`, default ×2 per bucket) and one of `variants` code styles is drawn from (seed, job id).
The config is generated for a canonical job id naming that cell, so all jobs of one cell get the
same repository bytes, the same command and the same log spec — identical content, identical
hash, one agent run.

**Sia applications** (`attributes["application"]`, `["batch_size"]`) map to the nearest corpus
family (`SIA_FAMILIES`); one artefact per (application, batch size), so an earlier job of the
same application and batch size is the natural match. The config states the application's
batch (split over `SIA_GPUS` devices where the family states a per-device batch); its length is
the family's own draw (Sia's durations come from Sia's throughput model, not from the config).

**Declared workloads** (`attributes[DECLARED_KEY]`: Arena's and Suika's jobs state their model,
global batch and parallel plan): the config states that model (nearest corpus variant, its size),
batch, sequence length and TP/PP instead of a size-class draw, so jobs of one model look alike to
the advisor; one artefact per (model, batch, GPUs, plan, length cell, variant).

**Failures** (`failure_truth`): spec §8.3 asks for infrastructure causes weighted by job GPU-time
so that they are ≈ 11% of failures but ≈ 82% of failure GPU time (Acme). Our reading:
P(infra | job) = min(cap, c · g^α), g = the job's GPU-time, with (c, α) fitted once over the
prepared jobs so that the mean probability is the count share and the GPU-time-weighted mean is
the GPU-time share (as closely as the trace's GPU-time distribution allows; `InfraCalibration`
reports the achieved values). Non-infrastructure failures are framework vs script by Acme's
counts (16 : 73); the reason within a category follows Acme's counts, except infrastructure
failures of jobs with ≥ 8 GPUs, which follow Acme's GPU-time shares (as `jobcorpus.history`).
A user's bug does not fix itself: a retry of a job whose previous attempt failed for a
framework/script reason fails for the same reason; after an infrastructure failure the next
failure is a fresh draw.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from schedmate.logspec import Framework, LogSpec, LogStatus
from schedmate.schedulers.job import JobSpec
from schedmate.synthetic.jobs.codegen import Repo, render_repo
from schedmate.synthetic.jobs.history import CATEGORY_WEIGHTS, FAILURE_REASONS, expected_perf, log_framework
from schedmate.synthetic.jobs.mapping import MAX_GPUS, assign_workload
from schedmate.synthetic.jobs.workloads import FAMILIES, WorkloadConfig, nodes_for, sample_config
from schedmate.taxonomy import FailureCategory, FailureReason, category_of, component_of

__all__ = [
    "DECLARED_KEY", "DEFAULT_RATIO", "DEFAULT_VARIANTS", "EARLY_EXIT_FRACTION", "GENERIC_PLAN", "SIA_FAMILIES", "SIA_GPUS", "Artefact", "FailureDraw", "InfraCalibration",
    "calibrate_infra", "content_hash", "failure_log_key", "failure_log_spec", "failure_truth", "length_bucket",
    "modelled_metrics", "plan_artefact", "planned_work", "steady_metrics", "repo_hash", "unit_hash",
]

# Sia application -> nearest job-corpus family (no speech or CIFAR family in the corpus: the closest
# small sequence model and the closest small CNN stand in; every app gets its own family so two apps
# never share a fingerprint).
SIA_FAMILIES: dict[str, str] = {
    "imagenet": "resnet50-in1k",
    "bert": "bert-base-squad",
    "yolov3": "yolov8m-coco",
    "gpt_pmp": "gpt-pretrain",
    "ncf": "dlrm-criteo",
    "cifar10": "mobilenetv2-in1k",
    "deepspeech2": "t5-small-c4",
}
SIA_GPUS = 4  # devices the Sia artefacts' launch commands state (Sia jobs are elastic)

# jobcorpus log style -> the log corpus's renderer (the corpus renders five frameworks; the three
# styles it lacks are drawn with the closest one: tqdm bars for Ultralytics, plain loops otherwise)
_LOG_FRAMEWORK: dict[str, Framework] = {
    "megatron": Framework.MEGATRON, "deepspeed": Framework.DEEPSPEED, "hf_trainer": Framework.HF_TRAINER,
    "accelerate": Framework.PYTORCH, "diffusers": Framework.PYTORCH, "ultralytics": Framework.LIGHTNING,
    "pytorch": Framework.PYTORCH,
}
_WORLD_GRID = (1, 2, 4, 8, 16, 32, 64, 128)
DECLARED_KEY = "declared_workload"  # JobSpec.attributes: the model and plan a policy's workload declares
_DECLARED_FAMILY = {"lm": "gpt-pretrain", "cnn": "resnet50-in1k"}  # declared kind -> corpus family
DEFAULT_RATIO = 2.0  # length cells: ×2 per cell
DEFAULT_VARIANTS = 2  # code-style variants per cell (10k synthetic jobs -> ~900 artefacts)


def unit_hash(*parts: object) -> float:
    """A uniform draw in [0, 1) from its inputs only (stable across runs and processes)."""
    digest = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def _seed_int(*parts: object) -> int:
    return int(unit_hash(*parts) * 2**62)


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def repo_hash(repo: Repo) -> str:
    """Hash of the repository files and the launch command (what extraction reads)."""
    h = hashlib.sha256()
    for path in sorted(repo.files):
        content = repo.files[path]
        raw = content.encode("utf-8") if isinstance(content, str) else content
        h.update(path.encode() + b"\0" + str(len(raw)).encode() + b"\0" + raw)
    h.update(b"\0command\0" + repo.command.encode())
    return h.hexdigest()


def length_bucket(work_s: float, ratio: float) -> int:
    """Index of the log-scale cell holding `work_s` (cell centres are ratio**k seconds)."""
    return int(math.floor(math.log(max(work_s, 1.0)) / math.log(ratio) + 0.5))


@dataclass(frozen=True)
class Artefact:
    """One distinct generated job: its config (code follows from it) and log style."""

    key: str  # canonical cell name; same key, same bytes
    family: str
    config: WorkloadConfig
    log_framework: str  # logcorpus Framework value
    step_time_s: float
    log_interval: int
    source: str  # "trace" | "sia"

    @property
    def gpus(self) -> int:
        return self.config.gpus

    @property
    def nodes(self) -> int:
        return self.config.nodes

    def render(self) -> Repo:
        return render_repo(self.config)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["config"] = self.config.to_dict()
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Artefact:
        return cls(**{**data, "config": WorkloadConfig.from_dict(dict(data["config"]))})


def _artefact(key: str, cfg: WorkloadConfig, source: str, log_interval: int | None = None) -> Artefact:
    est = expected_perf(cfg)
    interval = log_interval or _default_interval(est.steps_total)
    return Artefact(key=key, family=cfg.family, config=cfg, log_framework=_LOG_FRAMEWORK[log_framework(cfg)].value,
                    step_time_s=round(est.step_time_s, 6), log_interval=interval, source=source)


def _default_interval(steps_total: int) -> int:
    return next((i for i in (100, 50, 20, 10) if i * 40 <= steps_total), 1)


EARLY_EXIT_FRACTION = (0.1, 0.9)  # kept for callers that model a stop point as a share of the plan
GENERIC_PLAN = (1800.0, 0.35, 1.5)  # median s at 1 GPU, log-median growth per GPU doubling, log sigma


def planned_work(spec: JobSpec, seed: int) -> float:
    """Seconds of work the job was *launched for*: what its config states.

    A trace records when a job stopped, not what it planned, so the plan never comes from the
    job's own run time or state. The simulated world (`sim.world.realise`) draws it
    from an earlier window of the same trace and writes it in `attributes["planned_work"]`; a job
    that went through no world gets a plan drawn from a generic, outcome-free distribution
    (log-normal, median `GENERIC_PLAN[0]` x 2**(`GENERIC_PLAN[1]` x log2 GPUs), log sigma
    `GENERIC_PLAN[2]`; one hash draw per job): its code then tells the advisor nothing about
    how long it ran, which is the honest default for a trace the world has not modelled.
    """
    known = spec.attributes.get("planned_work")
    if known is not None:
        return float(known)
    median, growth, sigma = GENERIC_PLAN
    u = min(max(unit_hash("generic-plan", seed, spec.job_id), 1e-9), 1 - 1e-9)
    from statistics import NormalDist

    z = NormalDist().inv_cdf(u)
    return float(median * 2.0 ** (growth * math.log2(max(1, spec.num_gpus))) * math.exp(sigma * z))


def plan_artefact(spec: JobSpec, seed: int, *, ratio: float = DEFAULT_RATIO, variants: int = DEFAULT_VARIANTS,
                  planned_s: float | None = None) -> Artefact:
    """The artefact of one job (trace job or Sia job), from its identity, GPU request and *planned*
    work only (`planned_work`, or `planned_s` when the caller has it): swapping two jobs' actual
    durations or final states leaves every byte of their artefacts unchanged."""
    app = spec.attributes.get("application")
    if app:
        return _sia_artefact(str(app), int(spec.attributes.get("batch_size") or 0), seed)
    plan = planned_work(spec, seed) if planned_s is None else float(planned_s)
    declared = spec.attributes.get(DECLARED_KEY)
    if declared:
        return _declared_artefact(spec, dict(declared), plan, seed, ratio, variants)
    family = assign_workload(_blind(spec, plan), seed).family
    gpus = max(1, min(spec.num_gpus, MAX_GPUS))
    bucket = length_bucket(plan, ratio)
    variant = int(unit_hash("variant", seed, spec.job_id) * max(1, variants))
    key = f"{family}|g{gpus}|L{bucket}|v{variant}"
    canon = JobSpec(job_id=key, submit_time=0.0, num_gpus=gpus, duration=float(ratio**bucket))
    a = assign_workload(canon, seed, families=[family])
    return _artefact(key, a.config, "trace", int(a.log_spec.get("log_interval") or 0) or None)


def _declared_artefact(spec: JobSpec, declared: dict[str, Any], plan: float, seed: int, ratio: float,
                       variants: int) -> Artefact:
    """The artefact of a job whose workload declares its model and parallel plan (`DECLARED_KEY`:
    Arena's LM jobs, Suika's catalogue models; issue 26): the config states that model's nearest
    corpus variant, its size, global batch, sequence length and TP/PP, so jobs of one model get
    alike code. Inputs: what the job declares, its id (style variant) and its outcome-free plan."""
    family = _DECLARED_FAMILY.get(str(declared.get("kind", "lm")), _DECLARED_FAMILY["lm"])
    fam = FAMILIES[family]
    size = float(declared.get("params_b") or fam.variants[0].size_b)
    gpus = max(1, min(int(declared.get("gpus") or spec.num_gpus), MAX_GPUS))
    batch = int(declared.get("global_batch") or 0)
    tp, pp = int(declared.get("tp") or 1), int(declared.get("pp") or 1)
    bucket = length_bucket(plan, ratio)
    variant = int(unit_hash("variant", seed, spec.job_id) * max(1, variants))
    key = f"{family}|{declared.get('model', '?')}|b{batch}|g{gpus}|tp{tp}pp{pp}|L{bucket}|v{variant}"
    canon = JobSpec(job_id=key, submit_time=0.0, num_gpus=gpus, duration=float(ratio**bucket))
    a = assign_workload(canon, seed, families=[family])
    near = min(fam.variants, key=lambda v: (abs(math.log(v.size_b / size)), v.name))
    changes: dict[str, Any] = {"model_name": near.name, "model_size_b": size}
    if batch > 0 and (not fam.batch_is_global or batch % gpus == 0):
        changes["batch_size"] = batch if fam.batch_is_global else max(1, batch // gpus)
    if declared.get("seq_len") and a.config.seq_len is not None:
        changes["seq_len"] = int(declared["seq_len"])
    if fam.program == "megatron":
        changes["extra"] = {**a.config.extra, "tp": tp, "pp": pp, "micro_batch": 1}
    return _artefact(key, replace(a.config, **changes), "trace", int(a.log_spec.get("log_interval") or 0) or None)


def _blind(spec: JobSpec, plan: float) -> JobSpec:
    """The job as the workload mapping may see it: id, GPUs, submit time and plan; no outcome."""
    return JobSpec(job_id=spec.job_id, submit_time=spec.submit_time, num_gpus=spec.num_gpus, duration=plan,
                   user=spec.user, vc=spec.vc, name=spec.name, gpu_types=spec.gpu_types)


def _sia_artefact(app: str, batch: int, seed: int) -> Artefact:
    family = SIA_FAMILIES.get(app)
    if family is None:
        raise KeyError(f"no job-corpus family for Sia application {app!r} (known: {', '.join(sorted(SIA_FAMILIES))})")
    key = f"sia|{app}|b{batch}"
    rng = random.Random(f"sia:{seed}:{app}:{batch}")
    cfg = sample_config(family, rng, gpus=SIA_GPUS)
    fam = FAMILIES[family]
    if batch > 0:
        stated = max(SIA_GPUS, batch - batch % SIA_GPUS) if fam.batch_is_global else max(1, round(batch / SIA_GPUS))
        cfg = replace(cfg, batch_size=stated, grad_accum=1)
        if fam.program == "megatron":
            cfg = replace(cfg, extra={**cfg.extra, "micro_batch": 1})
    cfg = replace(cfg, nodes=nodes_for(cfg.gpus))
    return _artefact(key, cfg, "sia")


# ----------------------------------------------------------------------------------------- metrics


def steady_metrics(art: Artefact) -> dict[str, float]:
    """The workload's steady state as the simulator runs it, in Lucid's units (speed samples/s
    per GPU, gpu_util %, gmem_util %, gmem MB): one source of truth for what the code describes,
    what the simulator runs and what a profiler or a run's monitoring measures."""
    est = expected_perf(art.config)
    sm = max(3.0, min(100.0, est.sm_util))
    return {"speed": round(art.config.per_device_batch * art.config.grad_accum / est.step_time_s, 4),
            "gpu_util": round(sm, 3), "gmem_util": round(max(0.0, min(100.0, 0.756 * sm - 10.2)), 3),
            "gmem": round(est.gpu_mem_gb * 1024.0, 1)}


def modelled_metrics(art: Artefact, job_id: str, seed: int) -> dict[str, float]:
    """What monitoring measured for one run: `steady_metrics` with a small per-run spread (5%
    speed and SM utilisation, 3% memory), deterministic in (seed, job id); plus sm_util and
    gpu_mem_gb for the store."""
    m = steady_metrics(art)
    rng = random.Random(f"metrics:{seed}:{job_id}")
    sm = max(3.0, min(100.0, m["gpu_util"] * math.exp(rng.gauss(0.0, 0.05))))
    speed = m["speed"] * math.exp(rng.gauss(0.0, 0.05))
    mem_gb = m["gmem"] / 1024.0 * math.exp(rng.gauss(0.0, 0.03))
    gmem_util = max(0.0, min(100.0, 0.756 * sm - 10.2))  # memory-controller util tracks SM util (Lucid's table, r = 0.93)
    return {"speed": round(speed, 4), "gpu_util": round(sm, 3), "gmem_util": round(gmem_util, 3),
            "gmem": round(mem_gb * 1024.0, 1), "sm_util": round(sm, 3), "gpu_mem_gb": round(mem_gb, 3)}


# ----------------------------------------------------------------------------------------- logs


def _world(gpus: int) -> int:
    return next((w for w in _WORLD_GRID if w >= gpus), _WORLD_GRID[-1])


def failure_log_key(art: Artefact, reason: str, variant: int) -> str:
    """Failure logs are shared across jobs of one log style, world size and root cause."""
    return f"{art.log_framework}|w{_world(art.gpus)}|{reason}|v{variant}"


def failure_log_spec(key: str, *, n_lines: int) -> tuple[LogSpec, int]:
    framework, world, reason, _ = key.split("|")
    spec = LogSpec(framework=Framework(framework), n_lines=n_lines, status=LogStatus.FAILED,
                   failure_reason=FailureReason(reason), world_size=int(world[1:]))
    return spec, _seed_int("failure", key)


# ----------------------------------------------------------------------------------------- failures


@dataclass(frozen=True)
class InfraCalibration:
    """P(infra | GPU-time g) = min(cap, scale · g**alpha), fitted on the prepared jobs."""

    scale: float
    alpha: float
    cap: float = 0.98
    count_share: float = 0.0  # achieved mean probability (target 0.11)
    gpu_share: float = 0.0  # achieved GPU-time-weighted mean (target 0.82)

    def p_infra(self, gpu_time: float) -> float:
        return float(min(self.cap, self.scale * max(gpu_time, 1.0) ** self.alpha))


def _shares(g: np.ndarray, alpha: float, scale: float, cap: float) -> tuple[float, float]:
    p = np.minimum(cap, scale * g**alpha)
    return float(p.mean()), float((p * g).sum() / g.sum())


def _scale_for(g: np.ndarray, alpha: float, count: float, cap: float) -> float:
    lo, hi = 0.0, 1.0 / float(np.min(g**alpha))
    for _ in range(40):
        mid = (lo + hi) / 2
        if _shares(g, alpha, mid, cap)[0] < count:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def calibrate_infra(gpu_times: Sequence[float], *, count_share: float = 0.11, gpu_share: float = 0.82,
                    cap: float = 0.98) -> InfraCalibration:
    """Fit (scale, alpha) so infra failures are `count_share` of failures and `gpu_share` of
    their GPU time over jobs with these GPU-times (alpha on a grid in [0, 6]; a trace whose
    GPU time is too evenly spread cannot reach `gpu_share`: the fields report what was achieved)."""
    g = np.maximum(np.asarray([x for x in gpu_times if x > 0], dtype=float), 1.0)
    if len(g) == 0:
        return InfraCalibration(scale=count_share, alpha=0.0, cap=cap, count_share=count_share, gpu_share=count_share)
    g = g / np.median(g)  # numerically tame; scale is re-expressed in seconds below
    best: tuple[float, float, float, float, float] | None = None
    for alpha in np.linspace(0.0, 6.0, 121):
        scale = _scale_for(g, float(alpha), count_share, cap)
        c, s = _shares(g, float(alpha), scale, cap)
        err = abs(s - gpu_share) + 10 * abs(c - count_share)
        if best is None or err < best[0]:
            best = (err, float(alpha), scale, c, s)
    assert best is not None
    _, alpha, scale, c, s = best
    med = float(np.median(np.maximum(np.asarray([x for x in gpu_times if x > 0], dtype=float), 1.0)))
    return InfraCalibration(scale=scale / med**alpha, alpha=alpha, cap=cap, count_share=round(c, 4),
                            gpu_share=round(s, 4))


@dataclass(frozen=True)
class FailureDraw:
    category: str
    reason: str
    component: str


def _pick(weights: Mapping[str, float], u: float) -> str:
    keys = sorted(weights)
    total = sum(weights[k] for k in keys)
    acc = 0.0
    for k in keys:
        acc += weights[k] / total
        if u < acc:
            return k
    return keys[-1]


def _draw(seed: int, job_id: str, attempt: int, gpus: int, p_infra: float) -> FailureDraw:
    if unit_hash("infra", seed, job_id, attempt) < p_infra:
        category = FailureCategory.INFRASTRUCTURE.value
    else:
        other = {k: v for k, v in CATEGORY_WEIGHTS.items() if k != FailureCategory.INFRASTRUCTURE.value}
        category = _pick(other, unit_hash("category", seed, job_id, attempt))
    big = category == FailureCategory.INFRASTRUCTURE.value and gpus >= 8
    weights = {r: float(share if big else count) for r, (count, share, _) in FAILURE_REASONS[category].items()}
    reason = _pick(weights, unit_hash("reason", seed, job_id, attempt))
    assert category_of(reason).value == category
    return FailureDraw(category, reason, component_of(reason).value)


def failure_truth(spec: JobSpec, attempt: int, seed: int, calibration: InfraCalibration) -> FailureDraw:
    """Root cause of the job's failed `attempt` (0 = first run); see the module docstring."""
    p = calibration.p_infra(spec.gpu_time)
    draw = _draw(seed, spec.job_id, 0, spec.num_gpus, p)
    for a in range(1, attempt + 1):
        if draw.category == FailureCategory.INFRASTRUCTURE.value:
            draw = _draw(seed, spec.job_id, a, spec.num_gpus, p)
    return draw
