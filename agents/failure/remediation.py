"""What to change after a failure: one remediation per reason, its values read from the located lines.

`REMEDIES` is the table, one row per `FailureReason` that has one: the fixes the reason may take,
most specific first, and its default. A reason without a row (`remedy_of`) takes no reason-specific
fix and defaults to `unknown`: a new reason gives no advice until it has a row, never a wrong one.
`remediate` reads the root-cause line, then the failure's block and a few lines around it, with the detectors of `remedy_signs`:

1. a *specific* line wins whatever the reason: a port in use, a CUDA OOM with its figures, `No
   module named`, a time limit, a shared-memory bus error (the line's own words are stronger
   evidence than a classifier's reason, as for the category: logs.md §2.1b);
2. else the first of the reason's fixes whose detector finds its kind in the block;
3. else the reason's default, with whatever values the lines give (`unknown` without a reason).

Keys are a fixed vocabulary (`KEYS`; `install:<dist>` names the PyPI distribution) shared with
the dev set's remediation labels, so `schedmate eval failures` can score them. A remediation is
advice text for the job's owner or the cluster's operator: it never runs anything and never feeds
the recovery plan (`recovery.py` keeps its allow-list and its dry-run rule, and reads no log text).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from schedmate.agents.failure.remedy_signs import (
    DETECTORS,
    Values,
    api_mismatch,
    dist_for,
    dist_known,
    exception_class,
    gpu_oom_figures,
    is_local_module,
    node_and_gpu,
    packages_in,
    path_in,
    rank_in,
    shrink_advice,
)
from schedmate.agents.failure.rules import clean_line
from schedmate.taxonomy import FailureCategory, FailureReason

__all__ = ["KEYS", "REMEDIES", "Remediation", "ReasonRemedy", "remediate", "remediation_for", "remedy_of"]

Who = Literal["owner", "operator", "owner+operator", "nobody"]
KEYS: tuple[str, ...] = (
    "shrink_batch", "reduce_host_memory", "increase_shm", "install", "align_versions", "change_port", "fix_path",
    "debug_nccl", "cordon_node", "retry", "extend_time_limit", "stabilise_training", "fix_code", "none", "unknown",
)
# fixes a line settles by itself, whatever the classifier's reason (step 1 of the module docstring)
SPECIFIC: tuple[str, ...] = ("extend_time_limit", "change_port", "shrink_batch", "increase_shm", "install",
                             "stabilise_training")
_CONTEXT_BEFORE, _CONTEXT_AFTER = 12, 8  # lines around the block searched for values (after the root line)
_API_REASONS = frozenset({FailureReason.TYPE_ERROR, FailureReason.ATTRIBUTE_ERROR, FailureReason.VALUE_ERROR,
                          FailureReason.MODEL_LOADING_ERROR})
_NEW_SYNTAX = re.compile(r"""(?<![\w'"])f['"]|:=""")  # f-strings, the walrus: syntax an old interpreter rejects
# a CUDA error that is the program's: an assertion on the device, an out-of-bounds (illegal) access
_DEVICE_ASSERT = re.compile(r"\bdevice-side assert|\bAssertion `.*` failed|\bassert(?:ion)? triggered\b"
                            r"|\billegal memory access\b|\bmisaligned address\b", re.I)


class Remediation(BaseModel):
    """What the owner or the operator should change, with the values the log gave."""

    model_config = ConfigDict(frozen=True)

    key: str  # a `KEYS` entry; `install:<pypi-dist>` for a missing module
    who: Who
    summary: str
    steps: list[str] = []
    values: dict[str, Any] = {}
    lines: list[int] = []  # 1-based log lines the values came from
    basis: Literal["line", "reason", "none"] = "reason"  # a specific line decided, or the reason's default


@dataclass(frozen=True, slots=True)
class ReasonRemedy:
    """A reason's row: the fixes it may take (most specific first) and the one it takes by default."""

    fixes: tuple[str, ...]
    default: str


_R = FailureReason
_CODE = ReasonRemedy(("fix_path", "align_versions"), "fix_code")
REMEDIES: dict[FailureReason, ReasonRemedy] = {
    _R.NVLINK_ERROR: ReasonRemedy((), "cordon_node"),
    _R.CUDA_ERROR: ReasonRemedy(("align_versions",), "cordon_node"),  # no hardware evidence: fix_code (`_by_category`)
    _R.NODE_FAILURE: ReasonRemedy(("retry",), "cordon_node"),
    _R.ECC_ERROR: ReasonRemedy((), "cordon_node"),
    _R.NETWORK_ERROR: ReasonRemedy(("cordon_node", "debug_nccl"), "retry"),
    _R.CONNECTION_ERROR: ReasonRemedy(("debug_nccl",), "retry"),
    _R.S3_STORAGE_ERROR: ReasonRemedy(("fix_path",), "retry"),
    _R.NCCL_TIMEOUT_ERROR: ReasonRemedy(("cordon_node",), "debug_nccl"),
    _R.NCCL_REMOTE_ERROR: ReasonRemedy(("cordon_node",), "debug_nccl"),
    # a worker killed by a signal other than SIGKILL (a segfault, "exited unexpectedly") says nothing of memory
    _R.DATALOADER_KILLED: ReasonRemedy(("increase_shm", "reduce_host_memory"), "unknown"),
    _R.ATTRIBUTE_ERROR: ReasonRemedy(("align_versions",), "fix_code"),
    _R.OUT_OF_MEMORY_ERROR: ReasonRemedy(("reduce_host_memory",), "shrink_batch"),
    _R.RUNTIME_ERROR: ReasonRemedy(("align_versions", "debug_nccl", "fix_path"), "fix_code"),
    _R.ASSERTION_ERROR: _CODE,
    _R.VALUE_ERROR: _CODE,
    _R.ZERO_DIVISION_ERROR: ReasonRemedy((), "fix_code"),
    # a checkpoint that cannot be read (truncated archive, bad header, wrong path or id) is the file's
    # (`fix_path` finds it); weights that do not fit the model (state_dict size mismatch) are the code's
    _R.MODEL_LOADING_ERROR: ReasonRemedy(("retry", "fix_path", "align_versions"), "fix_code"),
    _R.DATASET_LOADING_ERROR: ReasonRemedy(("retry", "fix_path"), "fix_code"),
    _R.FILE_NOT_FOUND_ERROR: ReasonRemedy((), "fix_path"),
    _R.TYPE_ERROR: ReasonRemedy(("align_versions",), "fix_code"),
    _R.OS_ERROR: ReasonRemedy(("fix_path", "retry", "align_versions"), "fix_code"),
    _R.KEY_ERROR: ReasonRemedy((), "fix_code"),
    _R.IMPORT_ERROR: ReasonRemedy(("align_versions",), "align_versions"),
    _R.INDEX_ERROR: ReasonRemedy((), "fix_code"),
    _R.NAME_ERROR: ReasonRemedy((), "fix_code"),
    _R.SYNTAX_ERROR: ReasonRemedy((), "fix_code"),
    _R.PERMISSION_ERROR: ReasonRemedy((), "fix_path"),
    _R.CALLED_PROCESS_ERROR: ReasonRemedy(("align_versions",), "fix_code"),
    _R.ARGUMENT_ERROR: ReasonRemedy((), "fix_code"),
    _R.HOST_OUT_OF_MEMORY: ReasonRemedy(("increase_shm",), "reduce_host_memory"),
}
_NO_ROW = ReasonRemedy((), "unknown")


def remedy_of(reason: FailureReason) -> ReasonRemedy:
    """The reason's row; a reason without one: no specific fix, `unknown` by default (no advice)."""
    return REMEDIES.get(reason, _NO_ROW)


def remediation_for(key: str, values: Values | None = None, lines: Sequence[int] = (),
                    basis: Literal["line", "reason", "none"] = "reason") -> Remediation:
    """The table's advice for fix `key` with `values` filled in (`install` becomes `install:<dist>`)."""
    v = dict(values or {})
    kind = key.split(":", 1)[0]
    who, summary, steps = _ADVICE.get(kind, _unknown)(v)
    if kind == "install" and is_local_module(v.get("module", "")):
        kind = key = "fix_path"  # the job's own module: run from the repository (or pip install -e .)
        who, summary, steps = _local_module(v)
    elif kind == "install":
        key = f"install:{dist_for(v['module'])}" if v.get("module") else key
    return Remediation(key=key, who=who, summary=summary, steps=steps, values=v, lines=sorted(set(lines)), basis=basis)


def remediate(lines: Sequence[str | bytes], root: int, reason: FailureReason | None,
              category: FailureCategory | None = None, *, block: int | None = None, first_line: int = 1) -> Remediation:
    """The remediation of the failure whose root-cause line is `lines[root]` (its block starts at
    `block`); `first_line` is the 1-based log line of `lines[0]`, for citing where values came from."""
    if not 0 <= root < len(lines):
        return remediation_for("unknown", basis="none")
    block = root if block is None else block
    lo, hi = max(0, min(block, root) - _CONTEXT_BEFORE), min(len(lines), root + 1 + _CONTEXT_AFTER)
    order = [root, *range(min(block, root), root), *range(root + 1, hi), *range(lo, min(block, root))]
    cleaned = {i: clean_line(lines[i]) for i in order}
    text = {i: c.text.strip() for i, c in cleaned.items()}
    # the host label a launcher put in front (`dgx15: NVRM: Xid ...`) names the node
    labelled = {i: f"{c.source} {text[i]}" if c.source else text[i] for i, c in cleaned.items()}
    hit = lambda kind, idx: next(((i, v) for i in idx if (v := DETECTORS[kind](text[i])) is not None), None)  # noqa: E731
    # 1. a specific line: the root line first, then the rest of the block (a time limit anywhere near)
    near = order[: 1 + max(0, root - min(block, root))] + list(range(root + 1, min(hi, root + 3)))
    for kind in SPECIFIC:
        if (found := hit(kind, order if kind == "extend_time_limit" else near)):
            i, values = found
            return _filled(kind, values, [i], labelled, order, first_line, "line", text)
    if reason is None:
        # no reason named: any fix a line of the block shows, most specific first; else nothing to say
        for kind in DETECTORS:
            if (found := hit(kind, order[: 1 + max(0, root - min(block, root))])) is not None:
                return _filled(kind, found[1], [found[0]], labelled, order, first_line, "line", text)
        return remediation_for("unknown", basis="none")
    row = remedy_of(reason)
    # 2a. a class error raised inside an installed package, or syntax newer than the interpreter: versions
    block_lines = [text[i] for i in range(min(block, root), root)]
    if reason in _API_REASONS and (api := api_mismatch(text[root], block_lines)) is not None:
        return _filled("align_versions", api, [root], labelled, order, first_line, "line", text)
    if reason is _R.SYNTAX_ERROR and any(_NEW_SYNTAX.search(t) for t in block_lines):
        return _filled("align_versions", {"packages": ["python"]}, [root], labelled, order, first_line, "line", text)
    # 2b. one of the reason's fixes, found in the block or around it
    for kind in row.fixes:
        if (found := hit(kind, order)) is not None:
            i, values = found
            return _filled(kind, values, [i], labelled, order, first_line, "line", text)
    # 3. the reason's default. A CUDA error the evidence does not blame on the hardware: the code's when
    # an assertion fired on the device or an access went out of bounds, else the log cannot tell
    kind = row.default
    if reason is _R.CUDA_ERROR and category is not FailureCategory.INFRASTRUCTURE:
        kind = "fix_code" if any(_DEVICE_ASSERT.search(text[i]) for i in order) else "unknown"
    found = hit(kind, order) if kind in DETECTORS else None
    if found is not None:
        return _filled(kind, found[1], [found[0]], labelled, order, first_line, "reason", text)
    return _filled(kind, {}, [], labelled, order, first_line, "reason", text)


def _filled(kind: str, values: Values, at: list[int], text: dict[int, str], order: list[int], first_line: int,
            basis: Literal["line", "reason"], plain: dict[int, str] | None = None) -> Remediation:
    """Values the deciding line lacks, taken from the nearest line that has them (the OOM figures of
    the line after `torch.OutOfMemoryError`, the node a host label names, the exception class)."""
    values = dict(values)
    plain = plain if plain is not None else text
    more: list[tuple[str, Any]] = []
    for i in order:
        t = text[i]
        if kind == "shrink_batch":
            more = [(k, x) for k, x in gpu_oom_figures(t).items() if k not in values]
        elif kind == "cordon_node":
            more = [(k, x) for k, x in node_and_gpu(t).items() if k not in values]
        elif kind == "fix_path" and "path" not in values:
            more = list(path_in(t).items())
        elif kind == "fix_code" and "exception" not in values:
            exc = exception_class(plain[i])
            more = [("exception", exc)] if exc else []
        elif kind == "debug_nccl" and "rank" not in values:
            more = [("rank", r)] if (r := rank_in(t)) else []
        elif kind == "align_versions" and not values.get("packages"):
            more = [("packages", p)] if (p := packages_in(t)) else []
        if more:
            values.update(more)
            at.append(i)
            more = []
    return remediation_for(kind, values, [first_line + i for i in at], basis)


# --- the advice, per kind of fix ---------------------------------------------------------------------

Advice = tuple[Who, str, list[str]]


def _shrink(v: Values) -> Advice:
    steps, derived = shrink_advice(v)
    v.update(derived)
    figure = f" (it tried to allocate {v['tried_to_allocate']}" + (f" on GPU {v['gpu']}" if "gpu" in v else "") + ")" \
        if "tried_to_allocate" in v else ""
    return "owner", f"GPU memory ran out{figure}: use less memory per GPU.", steps


def _host_memory(v: Values) -> Advice:
    return "owner", "Host memory ran out (the kernel or a cgroup killed the process).", [
        "Use fewer data-loader workers (num_workers) and a smaller prefetch_factor; each worker holds a copy of "
        "what the dataset object holds.",
        "Request more host memory for the job (Slurm --mem / --mem-per-gpu, a Kubernetes memory limit), or load the "
        "dataset lazily (memory-mapped) instead of into RAM."]


def _shm_advice(v: Values) -> Advice:
    return "owner", "Shared memory (/dev/shm) is too small for the data-loader workers.", [
        "Give the container more shared memory: docker run --shm-size=16g (or --ipc=host), a Kubernetes emptyDir "
        "with medium: Memory mounted at /dev/shm.",
        "Or use fewer data-loader workers (num_workers), or torch.multiprocessing.set_sharing_strategy('file_system')."]


def _install(v: Values) -> Advice:
    module = v.get("module", "?")
    dist = dist_for(module) if module != "?" else "?"
    return "owner", f"The module {module!r} is not installed in the job's environment: install {dist}.", [
        f"pip install {dist} in the environment the job runs in (the node's image or virtualenv)" +
        (" (flash-attn builds against the installed torch and CUDA: pip install flash-attn --no-build-isolation)"
         if dist == "flash-attn" else "") + ".",
        f"Add {dist} to the job's requirements (requirements.txt / the container image) so the next run has it; if "
        "several jobs need it, the cluster's base environment should carry it."] + (
        [] if module == "?" or dist_known(module) else
        [f"{dist} is the import name as the log prints it, not a package SchedMate knows: check on PyPI that it is "
         "the project meant before installing (an import name is not always its package's name, and log text is "
         "untrusted)."])


def _local_module(v: Values) -> Advice:
    module = v.get("module", "?")
    return "owner", f"The job's own module {module!r} is not importable (no PyPI package is meant by that name).", [
        "Run from the repository's root, put it on PYTHONPATH, or install the repository (pip install -e .).",
        "Check the checkout is complete (the module's file or folder is there)."]


def _align(v: Values) -> Advice:
    pkgs = v.get("packages") or []
    named = ", ".join(pkgs) if pkgs else "the packages the lines name"
    return "owner", f"Versions do not fit together ({named}).", [
        f"Install versions of {named} built for each other (same CUDA / torch / ABI); pip check and python -m "
        "torch.utils.collect_env show what is installed.",
        "Pin them in the job's requirements; a driver that is too old is the operator's to upgrade."]


def _port(v: Values) -> Advice:
    port = v.get("port")
    p = f"port {port}" if port else "the rendezvous port"
    return "owner", f"{p[0].upper() + p[1:]} is already in use on the node (another job or a leftover process holds it).", [
        "Launch with another free port: MASTER_PORT=<free port>, torchrun --master_port <free port> or "
        "--rdzv-endpoint host:<free port>" + (f" (not {port})" if port else "") + ".",
        "Or end the leftover process holding it (ss -ltnp | grep " + (str(port) if port else "<port>") + ")."]


def _path_advice(v: Values) -> Advice:
    path = v.get("path")
    steps = [f"Check that {path} exists and is readable by the job's user on the node it ran on." if path else
             "Check the paths in the job's arguments and config exist and are readable on the node."]
    if v.get("shared_fs"):
        steps.append(f"{path} looks like a shared filesystem: if it exists elsewhere, it may not be mounted on this "
                     "node (operator: check the mount; owner: resubmit on a node that has it).")
    return ("owner+operator" if v.get("shared_fs") else "owner"), \
        (f"A file or directory is missing or not accessible: {path}." if path else "A file or directory is missing or not accessible."), steps


def _nccl(v: Values) -> Advice:
    rank = v.get("rank")
    return "owner+operator", "A collective timed out or a peer was lost" + (f" (rank {rank} named)" if rank else "") + ".", [
        "Rerun with NCCL_DEBUG=INFO (and TORCH_DISTRIBUTED_DEBUG=DETAIL) to see which rank stalled; keep "
        "TORCH_NCCL_ASYNC_ERROR_HANDLING=1 so a hang becomes an error instead of burning the allocation.",
        (f"Look at rank {rank}'s own log first: the first rank to fail is the cause, the others' timeouts are the "
         "cascade." if rank else "Find the first rank that failed: the others' timeouts are the cascade."),
        "If one node keeps being the slow or dead rank, it is infrastructure: the operator runs nccl-tests on it."]


def _cordon(v: Values) -> Advice:
    where = " ".join(x for x in (f"node {v['node']}" if v.get("node") else "", f"GPU {v['gpu']}" if v.get("gpu") else "") if x)
    return "owner+operator", f"Hardware fault{' on ' + where if where else ''}.", [
        f"Operator: cordon {v.get('node') or 'the node'} and run its diagnostics (dcgmi diag -r 3, nvidia-smi -q "
        "for ECC/Xid, ibstat / nvlink status) before returning it to service.",
        "Owner: resubmit from the last checkpoint excluding that node (Slurm --exclude); the job itself needs no change."]


def _retry(v: Values) -> Advice:
    return "owner", "A transient external failure (network, remote storage or preemption).", [
        "Resubmit: nothing in the job needs to change; resume from the last checkpoint.",
        "If it repeats, add retries with backoff around downloads and remote reads, or stage the data locally first."]


def _time(v: Values) -> Advice:
    return "owner", "The job reached its time limit.", [
        "Request a longer limit (sbatch --time) or split the run, resuming from checkpoints.",
        "Checkpoint often enough that a limit costs little; SchedMate's advisor estimates the run's duration."]


def _stabilise(v: Values) -> Advice:
    return "owner", "Training diverged (NaN or inf loss).", [
        "Lower the learning rate or lengthen warm-up; clip gradients (max_norm 1.0).",
        "Prefer bf16 over fp16 (or raise the loss scale floor); check the inputs of the failing step for NaN/inf."]


def _code_advice(v: Values) -> Advice:
    exc = v.get("exception")
    return "owner", f"A bug in the job's code or config{' (' + exc + ')' if exc else ''}.", [
        "Fix the code or config at the traceback's last frame in the job's own files; rerunning unchanged fails the "
        "same way."]


def _none(v: Values) -> Advice:
    return "nobody", "No failure: nothing to change.", []


def _unknown(v: Values) -> Advice:
    return "owner", "The log does not say what to change.", [
        "Look at the lines before the first error, or rerun with more logging (NCCL_DEBUG=INFO, CUDA_LAUNCH_BLOCKING=1)."]


_ADVICE = {
    "shrink_batch": _shrink, "reduce_host_memory": _host_memory, "increase_shm": _shm_advice, "install": _install,
    "align_versions": _align, "change_port": _port, "fix_path": _path_advice, "debug_nccl": _nccl,
    "cordon_node": _cordon, "retry": _retry, "extend_time_limit": _time, "stabilise_training": _stabilise,
    "fix_code": _code_advice, "none": _none, "unknown": _unknown,
}
