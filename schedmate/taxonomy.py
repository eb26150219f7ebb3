"""Failure taxonomy after Acme (Hu et al., NSDI'24, Table 3): category → reason → faulty component.

The category here is each reason's *prior* only: the Failure Handler decides a failure's category
from its evidence (who must act, logs.md §2.1b; `agents.failure.evidence`). HostOutOfMemory (the
kernel or a cgroup OOM killer) is the one reason added beyond Acme's table, with acme_count 0.

Three categories. Infrastructure failures are the rare but expensive ones (about 11% of failed
jobs, about 82% of the GPU time lost to failures) and the only ones the Failure Handler recovers
automatically; framework and script failures need the user.

`acme_count` is the number of Acme failures with that reason. Use it (not the GPU-time share) as a
class prior: the shares are a *secondary* compilation and measure lost GPU time, not frequency
(`/work/shared/specs/logs.md` §2.1).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class FailureCategory(StrEnum):
    """Acme's three failure categories."""

    INFRASTRUCTURE = "infrastructure"
    FRAMEWORK = "framework"
    SCRIPT = "script"


class Component(StrEnum):
    """The faulty component the Failure Handler names (software: framework or user script)."""

    GPU = "gpu"
    NVLINK = "nvlink"
    NETWORK = "network"
    NODE = "node"
    STORAGE = "storage"
    MEMORY = "memory"  # host memory: the kernel/cgroup OOM killer, shared memory (logs.md §2.1b)
    SOFTWARE = "software"
    UNKNOWN = "unknown"  # a classifier may answer it; the generator never injects it


class FailureReason(StrEnum):
    """Acme Table 3 reasons (the values are Acme's names)."""

    # infrastructure
    NVLINK_ERROR = "NVLinkError"
    CUDA_ERROR = "CUDAError"
    NODE_FAILURE = "NodeFailure"
    ECC_ERROR = "ECCError"
    NETWORK_ERROR = "NetworkError"
    CONNECTION_ERROR = "ConnectionError"
    S3_STORAGE_ERROR = "S3StorageError"
    NCCL_TIMEOUT_ERROR = "NCCLTimeoutError"
    NCCL_REMOTE_ERROR = "NCCLRemoteError"
    # framework
    DATALOADER_KILLED = "DataloaderKilled"
    ATTRIBUTE_ERROR = "AttributeError"
    OUT_OF_MEMORY_ERROR = "OutOfMemoryError"
    RUNTIME_ERROR = "RuntimeError"
    ASSERTION_ERROR = "AssertionError"
    VALUE_ERROR = "ValueError"
    ZERO_DIVISION_ERROR = "ZeroDivisionError"
    MODEL_LOADING_ERROR = "ModelLoadingError"
    DATASET_LOADING_ERROR = "DatasetLoadingError"
    # script
    FILE_NOT_FOUND_ERROR = "FileNotFoundError"
    TYPE_ERROR = "TypeError"
    OS_ERROR = "OSError"
    KEY_ERROR = "KeyError"
    IMPORT_ERROR = "ImportError"
    INDEX_ERROR = "IndexError"
    NAME_ERROR = "NameError"
    SYNTAX_ERROR = "SyntaxError"
    PERMISSION_ERROR = "PermissionError"
    CALLED_PROCESS_ERROR = "CalledProcessError"
    ARGUMENT_ERROR = "ArgumentError"
    # added by the project, not in Acme's Table 3 (logs.md §2.1b): infrastructure, acme_count 0; last
    # so that the order (and every index) of Acme's reasons stays as it was
    HOST_OUT_OF_MEMORY = "HostOutOfMemory"


@dataclass(frozen=True, slots=True)
class ReasonInfo:
    """What the taxonomy says about one reason."""

    reason: FailureReason
    category: FailureCategory
    component: Component  # the component the generator labels an injected failure with
    acme_count: int  # failures with this reason in Acme (a prior by count, not by GPU time)
    gpu_time_share: float | None  # share of failure GPU time (secondary source), None if not given


_I, _F, _S = FailureCategory.INFRASTRUCTURE, FailureCategory.FRAMEWORK, FailureCategory.SCRIPT
_R, _C = FailureReason, Component

REASONS: dict[FailureReason, ReasonInfo] = {
    info.reason: info
    for info in (
        ReasonInfo(_R.NVLINK_ERROR, _I, _C.NVLINK, 54, 0.303),
        ReasonInfo(_R.CUDA_ERROR, _I, _C.GPU, 21, 0.158),
        ReasonInfo(_R.NODE_FAILURE, _I, _C.NODE, 16, 0.143),
        ReasonInfo(_R.ECC_ERROR, _I, _C.GPU, 12, 0.110),
        ReasonInfo(_R.NETWORK_ERROR, _I, _C.NETWORK, 12, 0.045),
        ReasonInfo(_R.CONNECTION_ERROR, _I, _C.NETWORK, 147, 0.034),
        ReasonInfo(_R.S3_STORAGE_ERROR, _I, _C.STORAGE, 10, 0.021),
        ReasonInfo(_R.NCCL_TIMEOUT_ERROR, _I, _C.NETWORK, 6, 0.005),
        ReasonInfo(_R.NCCL_REMOTE_ERROR, _I, _C.NETWORK, 3, 0.0015),
        ReasonInfo(_R.DATALOADER_KILLED, _F, _C.SOFTWARE, 6, 0.044),
        ReasonInfo(_R.ATTRIBUTE_ERROR, _F, _C.SOFTWARE, 67, 0.039),
        ReasonInfo(_R.OUT_OF_MEMORY_ERROR, _F, _C.SOFTWARE, 14, 0.033),
        ReasonInfo(_R.RUNTIME_ERROR, _F, _C.SOFTWARE, 65, 0.017),
        ReasonInfo(_R.ASSERTION_ERROR, _F, _C.SOFTWARE, 105, 0.012),
        ReasonInfo(_R.VALUE_ERROR, _F, _C.SOFTWARE, 33, None),
        ReasonInfo(_R.ZERO_DIVISION_ERROR, _F, _C.SOFTWARE, 5, None),
        ReasonInfo(_R.MODEL_LOADING_ERROR, _F, _C.SOFTWARE, 104, None),
        ReasonInfo(_R.DATASET_LOADING_ERROR, _F, _C.SOFTWARE, 5, None),
        ReasonInfo(_R.FILE_NOT_FOUND_ERROR, _S, _C.SOFTWARE, 568, None),
        ReasonInfo(_R.TYPE_ERROR, _S, _C.SOFTWARE, 620, None),
        ReasonInfo(_R.OS_ERROR, _S, _C.SOFTWARE, 266, None),
        ReasonInfo(_R.KEY_ERROR, _S, _C.SOFTWARE, 260, None),
        ReasonInfo(_R.IMPORT_ERROR, _S, _C.SOFTWARE, 111, None),
        ReasonInfo(_R.INDEX_ERROR, _S, _C.SOFTWARE, 23, None),
        ReasonInfo(_R.NAME_ERROR, _S, _C.SOFTWARE, 18, None),
        ReasonInfo(_R.SYNTAX_ERROR, _S, _C.SOFTWARE, 10, None),
        ReasonInfo(_R.PERMISSION_ERROR, _S, _C.SOFTWARE, 7, None),
        ReasonInfo(_R.CALLED_PROCESS_ERROR, _S, _C.SOFTWARE, 4, None),
        ReasonInfo(_R.ARGUMENT_ERROR, _S, _C.SOFTWARE, 3, None),
        # the kernel or a cgroup OOM killer killed the training process itself (logs.md §2.1b); not
        # in Acme's table, so its count is 0 and no generator draws it unless it asks for it
        ReasonInfo(_R.HOST_OUT_OF_MEMORY, _I, _C.MEMORY, 0, None),
    )
}

# The reasons of Acme's Table 3 (every reason but HostOutOfMemory): what the generators can inject.
ACME_REASONS: tuple[FailureReason, ...] = tuple(r for r, info in REASONS.items() if info.acme_count > 0)

# Components a reason may be blamed on. ECC and CUDA errors are GPU faults; an NVLink error is an
# NVLink fault (the Failure Handler may still answer "gpu" for it, logs.md: "GPU or NVLink").
# Category by evidence (logs.md §2.1b) adds the components the evidence may name instead: a CUDA
# OOM is the GPU (the job's batch), a killed DataLoader worker host memory, a CUDA error without
# hardware evidence software.
_EXTRA_COMPONENTS: dict[FailureReason, frozenset[Component]] = {
    FailureReason.NVLINK_ERROR: frozenset({Component.GPU}),
    FailureReason.OUT_OF_MEMORY_ERROR: frozenset({Component.GPU}),
    FailureReason.DATALOADER_KILLED: frozenset({Component.MEMORY}),
    FailureReason.CUDA_ERROR: frozenset({Component.SOFTWARE}),
    FailureReason.NCCL_TIMEOUT_ERROR: frozenset({Component.SOFTWARE}),
    FailureReason.MODEL_LOADING_ERROR: frozenset({Component.STORAGE}),
}
ALLOWED_COMPONENTS: dict[FailureReason, frozenset[Component]] = {
    reason: frozenset({info.component}) | _EXTRA_COMPONENTS.get(reason, frozenset())
    for reason, info in REASONS.items()
}


def category_of(reason: FailureReason | str) -> FailureCategory:
    return REASONS[FailureReason(reason)].category


def component_of(reason: FailureReason | str) -> Component:
    return REASONS[FailureReason(reason)].component


def reasons_in(category: FailureCategory | str, *, acme_only: bool = False) -> list[FailureReason]:
    """The reasons of one category (its prior category), in Table 3 order; `acme_only`: only those
    of Acme's Table 3 (acme_count > 0), the ones generators draw from."""
    category = FailureCategory(category)
    return [r for r, info in REASONS.items() if info.category is category and (info.acme_count > 0 or not acme_only)]


def is_acme(reason: FailureReason | str) -> bool:
    """Whether `reason` is one of Acme's Table 3 (HostOutOfMemory is not: logs.md §2.1b)."""
    return REASONS[FailureReason(reason)].acme_count > 0


def is_recoverable(category: FailureCategory | str) -> bool:
    """Only infrastructure failures are recovered automatically (cordon, replace, resume)."""
    return FailureCategory(category) is FailureCategory.INFRASTRUCTURE


def reason_weights(category: FailureCategory | str, prior: str = "acme") -> dict[FailureReason, float]:
    """Sampling weights of the reasons within a category: Acme counts (`acme`) or `uniform`; only
    Acme's reasons (a reason added by the project, acme_count 0, is never drawn)."""
    reasons = reasons_in(category, acme_only=True)
    if prior == "uniform":
        return {r: 1.0 / len(reasons) for r in reasons}
    if prior != "acme":
        raise ValueError(f"unknown reason prior {prior!r} (expected 'acme' or 'uniform')")
    total = sum(REASONS[r].acme_count for r in reasons)
    return {r: REASONS[r].acme_count / total for r in reasons}
