"""What one generated log should look like: `LogSpec`, with every knob optional.

A field left `None` is drawn from the seed by `LogSpec.resolve`, so `LogSpec(framework=...,
n_lines=...)` is a complete request and the labels carry the resolved spec. Resolution uses its own
random stream, so `generate_log(resolved, seed)` rebuilds exactly the same log as
`generate_log(partial, seed)`.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from schedmate.taxonomy import FailureCategory, FailureReason, category_of, reason_weights


class Framework(StrEnum):
    MEGATRON = "megatron"
    DEEPSPEED = "deepspeed"
    HF_TRAINER = "hf_trainer"
    LIGHTNING = "lightning"
    PYTORCH = "pytorch"


class LogStatus(StrEnum):
    COMPLETED = "completed"  # training reached its last step and the job exited cleanly
    RUNNING = "running"  # the log is cut mid-training (what a tracker sees of a live job)
    FAILED = "failed"  # one injected root cause, then its cascade


class FailurePhase(StrEnum):
    INIT = "init"  # before the first training step (imports, arguments, model/data loading)
    TRAIN = "train"  # after at least one progress line


class Launcher(StrEnum):
    PYTHON = "python"
    TORCHRUN = "torchrun"
    DEEPSPEED = "deepspeed"
    ACCELERATE = "accelerate"
    SRUN = "srun"
    MPIRUN = "mpirun"


class Pool(StrEnum):
    """Which half of the generator's error texts a failed log draws from (`synthetic.logs.pools`):
    rules and keyword tables may be written from `dev` only; `heldout` measures generalisation."""

    DEV = "dev"
    HELDOUT = "heldout"


class HardCase(StrEnum):
    """Shapes of real cluster failures that defeat a reader of the log's tail (`synthetic.logs.hard`)."""

    HANG = "hang"  # the job hangs after the root cause; NCCL watchdog timeouts thousands of lines later
    FLOOD = "flood"  # thousands of cascade lines from many ranks after the root cause
    OTHER_RANK = "other_rank"  # the launcher names a peer; the culprit is not the rank that printed last
    DECOYS = "decoys"  # benign lines that look like errors, before and after the root cause
    RESTART = "restart"  # an earlier attempt failed (another reason) and was restarted; the label is the final one
    WARN_LEVEL = "warn_level"  # the root cause is printed as a WARNING and the job dies later


# Probability of each hard case in a failed log whose spec leaves `hard` to the seed. Tuned so that
# a reader of the last 500 lines is far below the binary-search locator (the paper: without the
# locator, infra F1 falls from 67.7 to 11.1) while every case stays one real clusters produce.
HARD_MIX: dict[HardCase, float] = {
    HardCase.FLOOD: 0.85,
    HardCase.OTHER_RANK: 0.5,
    HardCase.DECOYS: 0.3,
    HardCase.HANG: 0.15,
    HardCase.RESTART: 0.1,
    HardCase.WARN_LEVEL: 0.1,
}


class RankPrefix(StrEnum):
    """How the launcher marks which rank printed a line."""

    NONE = "none"
    TORCHRUN = "torchrun"  # `[rank3]:` (torch >= 2.2)
    TORCHRUN_LEGACY = "torchrun_legacy"  # `[default3]:` (older `--tee`)
    PDSH = "pdsh"  # `node-1: ` (DeepSpeed multi-node launcher)
    MPI = "mpi"  # `[1,3]<stdout>:`
    SRUN = "srun"  # `3: ` (srun --label)


VARIANTS: dict[Framework, tuple[str, ...]] = {
    Framework.MEGATRON: ("core", "classic", "params"),
    Framework.DEEPSPEED: ("basic", "pipe"),
    Framework.HF_TRAINER: ("v4", "legacy"),
    Framework.LIGHTNING: ("v2", "v1"),
    Framework.PYTORCH: ("simple", "nanogpt", "epoch", "titan", "loguru"),
}

# Category mix of failed logs when a caller does not choose: the paper's Failure Handler set has
# 25% infrastructure (75 of 300); the rest is split [I] between framework and script.
DEFAULT_CATEGORY_WEIGHTS: dict[FailureCategory, float] = {
    FailureCategory.INFRASTRUCTURE: 0.25,
    FailureCategory.FRAMEWORK: 0.30,
    FailureCategory.SCRIPT: 0.45,
}

# Probability that a failure of this reason happens before training starts. Script errors mostly
# fail within minutes (Acme); model/dataset loading errors are init errors by definition.
INIT_PROBABILITY: dict[FailureReason, float] = {
    FailureReason.NVLINK_ERROR: 0.05,
    FailureReason.CUDA_ERROR: 0.1,
    FailureReason.NODE_FAILURE: 0.05,
    FailureReason.ECC_ERROR: 0.05,
    FailureReason.NETWORK_ERROR: 0.2,
    FailureReason.CONNECTION_ERROR: 0.5,
    FailureReason.S3_STORAGE_ERROR: 0.4,
    FailureReason.NCCL_TIMEOUT_ERROR: 0.1,
    FailureReason.NCCL_REMOTE_ERROR: 0.2,
    FailureReason.DATALOADER_KILLED: 0.0,
    FailureReason.ATTRIBUTE_ERROR: 0.5,
    FailureReason.OUT_OF_MEMORY_ERROR: 0.0,
    FailureReason.RUNTIME_ERROR: 0.3,
    FailureReason.ASSERTION_ERROR: 0.6,
    FailureReason.VALUE_ERROR: 0.4,
    FailureReason.ZERO_DIVISION_ERROR: 0.2,
    FailureReason.MODEL_LOADING_ERROR: 1.0,
    FailureReason.DATASET_LOADING_ERROR: 1.0,
    FailureReason.FILE_NOT_FOUND_ERROR: 0.6,
    FailureReason.TYPE_ERROR: 0.5,
    FailureReason.OS_ERROR: 0.7,
    FailureReason.KEY_ERROR: 0.4,
    FailureReason.IMPORT_ERROR: 1.0,
    FailureReason.INDEX_ERROR: 0.2,
    FailureReason.NAME_ERROR: 0.5,
    FailureReason.SYNTAX_ERROR: 1.0,
    FailureReason.PERMISSION_ERROR: 0.3,
    FailureReason.CALLED_PROCESS_ERROR: 1.0,
    FailureReason.ARGUMENT_ERROR: 1.0,
}

_WORLD_SIZES: dict[Framework, tuple[int, ...]] = {
    Framework.MEGATRON: (8, 16, 32, 64, 128, 256),
    Framework.DEEPSPEED: (1, 4, 8, 16, 32, 64),
    Framework.HF_TRAINER: (1, 1, 2, 4, 8, 16),
    Framework.LIGHTNING: (1, 2, 4, 8, 16),
    Framework.PYTORCH: (1, 2, 4, 8, 16, 32),
}
_LOG_INTERVALS: dict[Framework, tuple[int, ...]] = {
    Framework.MEGATRON: (1, 1, 5, 10, 10, 100),
    Framework.DEEPSPEED: (1, 10, 10, 50, 100),
    Framework.HF_TRAINER: (1, 5, 10, 10, 20, 50),
    Framework.LIGHTNING: (1, 1, 2, 5, 10),
    Framework.PYTORCH: (1, 1, 10, 10, 20, 50, 100),
}
_STEP_TIME_RANGE: dict[Framework, tuple[float, float]] = {
    Framework.MEGATRON: (0.3, 12.0),
    Framework.DEEPSPEED: (0.1, 6.0),
    Framework.HF_TRAINER: (0.05, 3.0),
    Framework.LIGHTNING: (0.02, 2.0),
    Framework.PYTORCH: (0.02, 3.0),
}

# Per-step arrays are drawn for every simulated step, so the number of steps a log covers is capped
# (a million-line log logs often, not rarely).
MAX_SIMULATED_STEPS = 4_000_000


class LogSpec(BaseModel):
    """A request for one log. `None` means "draw it from the seed"."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    framework: Framework | None = None
    n_lines: int = Field(2000, ge=1, description="lines in the file (honoured exactly unless too small for the chosen tail)")
    status: LogStatus | None = None
    failure_reason: FailureReason | None = None
    failure_phase: FailurePhase | None = None
    variant: str | None = Field(None, description="progress-line variant of the framework (see VARIANTS)")
    world_size: int | None = Field(None, ge=1)
    visible_ranks: int | None = Field(None, ge=1, description="ranks whose output this log holds")
    launcher: Launcher | None = None
    rank_prefix: RankPrefix | None = None
    noise_level: float | None = Field(None, ge=0.0, le=0.995, description="share of training-phase lines that are not progress")
    ansi: bool | None = None
    carriage_returns: bool | None = Field(None, description="tqdm redraws joined by \\r on one line")
    nccl_debug: bool | None = Field(None, description="NCCL_DEBUG=INFO chatter")
    red_herrings: bool | None = Field(None, description="benign lines that look like errors")
    duplicate_progress: bool | None = Field(None, description="every rank prints the progress line (plain PyTorch)")
    log_interval: int | None = Field(None, ge=1, description="steps between progress events")
    base_step_time: float | None = Field(None, gt=0.0, description="steady-state seconds per step")
    warmup_steps: int | None = Field(None, ge=0)
    warmup_factor: float | None = Field(None, ge=1.0, description="first step is this many times slower")
    slowdown_factor: float | None = Field(None, ge=1.0, description="step time multiplier after a co-located job arrives; 1.0 = none")
    slowdown_at: float | None = Field(None, gt=0.0, lt=1.0, description="arrival, as a fraction of the steps in the log")
    global_batch_size: int | None = Field(None, ge=1)
    seq_length: int | None = Field(None, ge=1)
    pool: Pool | None = Field(None, description="error-text pool of a failed log (dev / heldout); None: drawn")
    hard: tuple[HardCase, ...] | None = Field(None, description="hard cases of a failed log; None: drawn from the caller's mix")
    cascade_lines: int | None = Field(None, ge=0, description="a failed log's lines after its root-cause block: the "
                                      "cascade is padded with peers' errors and survivors' output to about this many; "
                                      "None: the launcher's usual teardown")
    cascade_gap: int | None = Field(None, ge=0, description="at most this many survivors' lines between two ranks' "
                                    "cascade blocks (with cascade_lines or a flood); None: 3")

    def resolve(self, rng: np.random.Generator, *, category_weights: dict[FailureCategory, float] | None = None,
                reason_prior: str = "acme", hard_mix: dict[HardCase, float] | None = None,
                heldout_share: float = 0.0) -> LogSpec:
        """Fill every `None` field from `rng` (fields already set are kept as they are). `pool` is
        `heldout` with probability `heldout_share` (default: always `dev`); a failed log's `hard`
        cases are drawn from `hard_mix` (default: none; `HARD_MIX` is the benchmark's mix)."""
        v: dict = self.model_dump()

        def pick(seq):
            return seq[int(rng.integers(len(seq)))]

        def coin(p: float) -> bool:
            return bool(rng.random() < p)

        fw = Framework(v["framework"]) if v["framework"] else pick(list(Framework))
        v["framework"] = fw
        if v["failure_reason"] is not None:
            v["status"] = LogStatus.FAILED
        status = LogStatus(v["status"]) if v["status"] else pick([LogStatus.COMPLETED, LogStatus.RUNNING, LogStatus.FAILED])
        v["status"] = status
        if status is LogStatus.FAILED:
            if v["failure_reason"] is None:
                weights = category_weights or DEFAULT_CATEGORY_WEIGHTS
                cats = list(weights)
                p = np.array([weights[c] for c in cats], dtype=float)
                cat = cats[int(rng.choice(len(cats), p=p / p.sum()))]
                rw = reason_weights(cat, reason_prior)
                reasons = list(rw)
                p = np.array([rw[r] for r in reasons], dtype=float)
                v["failure_reason"] = reasons[int(rng.choice(len(reasons), p=p / p.sum()))]
            reason = FailureReason(v["failure_reason"])
            if v["failure_phase"] is None:
                v["failure_phase"] = FailurePhase.INIT if coin(INIT_PROBABILITY[reason]) else FailurePhase.TRAIN
        else:
            v["failure_reason"] = None
            v["failure_phase"] = None
        if v["variant"] is None:
            v["variant"] = pick(VARIANTS[fw])
        elif v["variant"] not in VARIANTS[fw]:
            raise ValueError(f"unknown variant {v['variant']!r} for {fw} (expected one of {VARIANTS[fw]})")
        world = v["world_size"] or pick(_WORLD_SIZES[fw])
        v["world_size"] = world
        if v["visible_ranks"] is None:
            v["visible_ranks"] = world if world <= 8 else pick((8, 8, 16))
        v["visible_ranks"] = min(v["visible_ranks"], world)
        if v["launcher"] is None:
            v["launcher"] = _pick_launcher(fw, world, pick)
        if v["rank_prefix"] is None:
            v["rank_prefix"] = _pick_prefix(Launcher(v["launcher"]), world, pick)
        if world == 1:
            v["rank_prefix"] = RankPrefix.NONE
        if v["noise_level"] is None:
            v["noise_level"] = round(float(rng.uniform(0.15, 0.7)), 3)
        for key, share in (("ansi", 0.35), ("carriage_returns", 0.8), ("red_herrings", 0.5)):
            if v[key] is None:
                v[key] = coin(share)
        if v["nccl_debug"] is None:
            v["nccl_debug"] = world > 1 and coin(0.5)
        if v["duplicate_progress"] is None:
            v["duplicate_progress"] = (fw is Framework.PYTORCH and world > 1 and v["variant"] in ("simple", "epoch")
                                       and coin(0.3))
        if v["log_interval"] is None:
            interval = pick(_LOG_INTERVALS[fw])
            cap = max(1, MAX_SIMULATED_STEPS // max(1, v["n_lines"]))
            v["log_interval"] = max(1, min(interval, cap))
        if v["base_step_time"] is None:
            lo, hi = _STEP_TIME_RANGE[fw]
            v["base_step_time"] = round(float(math.exp(rng.uniform(math.log(lo), math.log(hi)))), 4)
        if v["warmup_steps"] is None:
            v["warmup_steps"] = int(math.exp(rng.uniform(math.log(3), math.log(60))))
        if v["warmup_factor"] is None:
            v["warmup_factor"] = round(float(rng.uniform(1.5, 6.0)), 3)
        if v["slowdown_factor"] is None:
            v["slowdown_factor"] = round(float(rng.uniform(1.3, 3.0)), 3) if coin(0.3) else 1.0
        if v["slowdown_at"] is None:
            v["slowdown_at"] = round(float(rng.uniform(0.3, 0.8)), 3)
        if v["global_batch_size"] is None:
            choices = {
                Framework.MEGATRON: (256, 512, 1024, 1536, 2048),
                Framework.DEEPSPEED: (32, 64, 128, 256, 512),
            }.get(fw, (8, 16, 32, 64, 128, 256))
            v["global_batch_size"] = max(pick(choices), world)
        if v["seq_length"] is None:
            v["seq_length"] = pick((2048, 4096, 8192) if fw in (Framework.MEGATRON, Framework.DEEPSPEED) else (512, 1024, 2048, 4096))
        # drawn last, so the fields above resolve as they did before pools and hard cases existed
        if v["pool"] is None:
            v["pool"] = Pool.HELDOUT if coin(heldout_share) else Pool.DEV
        if status is not LogStatus.FAILED:
            v["hard"] = ()
        elif v["hard"] is None:
            mix = hard_mix or {}
            v["hard"] = tuple(h for h in HardCase if coin(mix.get(h, 0.0)))
        hard = set(v["hard"])
        if HardCase.FLOOD in hard and self.world_size is None and world < 64:
            # thousands of cascade lines need many ranks, all in one (srun-merged) log
            v["world_size"] = pick((64, 128, 256, 512))
            v["visible_ranks"] = v["world_size"]
            if world == 1:
                v["launcher"] = self.launcher or _pick_launcher(fw, v["world_size"], pick)
                v["rank_prefix"] = self.rank_prefix or _pick_prefix(Launcher(v["launcher"]), v["world_size"], pick)
        elif HardCase.FLOOD in hard and self.visible_ranks is None:
            v["visible_ranks"] = v["world_size"]
        return LogSpec.model_validate(v)

    @property
    def category(self) -> FailureCategory | None:
        return category_of(self.failure_reason) if self.failure_reason else None


_T = TypeVar("_T")


def resolved(value: _T | None) -> _T:
    """A field of a resolved `LogSpec` (`resolve` fills every `None`): `None` here is the caller's bug
    (a renderer handed an unresolved spec), reported as such rather than as a confusing `int(None)`."""
    if value is None:
        raise TypeError("LogSpec field is unset: render a spec returned by LogSpec.resolve()")
    return value


def _pick_launcher(fw: Framework, world: int, pick) -> Launcher:
    if fw is Framework.DEEPSPEED:
        return Launcher.DEEPSPEED
    if world == 1:
        return pick((Launcher.PYTHON, Launcher.ACCELERATE)) if fw is Framework.HF_TRAINER else Launcher.PYTHON
    return pick({
        Framework.MEGATRON: (Launcher.TORCHRUN, Launcher.TORCHRUN, Launcher.SRUN),
        Framework.HF_TRAINER: (Launcher.TORCHRUN, Launcher.ACCELERATE),
        Framework.LIGHTNING: (Launcher.PYTHON, Launcher.SRUN),
        Framework.PYTORCH: (Launcher.TORCHRUN, Launcher.TORCHRUN, Launcher.SRUN, Launcher.MPIRUN),
    }[fw])


def _pick_prefix(launcher: Launcher, world: int, pick) -> RankPrefix:
    if launcher in (Launcher.TORCHRUN, Launcher.ACCELERATE):
        return pick((RankPrefix.TORCHRUN, RankPrefix.TORCHRUN, RankPrefix.TORCHRUN_LEGACY, RankPrefix.NONE))
    if launcher is Launcher.DEEPSPEED:
        return RankPrefix.PDSH if world > 8 else RankPrefix.NONE
    if launcher is Launcher.SRUN:
        return pick((RankPrefix.SRUN, RankPrefix.NONE))
    if launcher is Launcher.MPIRUN:
        return pick((RankPrefix.MPI, RankPrefix.MPI, RankPrefix.NONE))
    return RankPrefix.NONE
