"""What the located lines say a fix needs: one detector per kind of fix, each reading its values
(memory figures, the port, the module, the path, the rank, the node) from the log's own words.

A detector reads one cleaned line and returns the values it found, or None when the line is not
its kind. Detectors never decide anything by themselves: `remediation` asks them in order of
specificity (a port in use before a generic connection error, a CUDA OOM before a `RuntimeError`)
and its table says which fix a reason takes when no line is specific. Log text is untrusted: the
values are quoted in advice text only, never used to run anything.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["DETECTORS", "Detector", "Values", "api_mismatch", "dist_for", "is_local_module", "rank_in", "gpu_oom_figures", "parse_size", "shrink_advice"]

Values = dict[str, Any]
Detector = Callable[[str], Values | None]

_SIZE = r"(\d+(?:\.\d+)?\s*[KMGT]i?B)"
_UNITS = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_size(text: str) -> float | None:
    """Bytes of `144.00 MiB`, `31.75 GiB` (None when not a size)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT])i?B\s*", text)
    return float(m.group(1)) * _UNITS[m.group(2)] if m else None


def _gib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


# --- GPU memory --------------------------------------------------------------------------------------

_OOM = re.compile(r"\bCUDA out of memory\b|\bOutOfMemoryError\b|\bCUBLAS_STATUS_ALLOC_FAILED\b|\bout of memory\b.*\bGPU\b"
                  r"|\bOOM when allocating tensor\b|\bRESOURCE_EXHAUSTED\b|\bran out of memory\b|\bCuda failure '?out of memory",
                  re.I)
_HOST_OOM_WORDS = re.compile(r"\bOut of memory: Killed process\b|\boom-kill|\bMemory cgroup\b|\bDefaultCPUAllocator\b", re.I)
_OOM_FIELDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("tried_to_allocate", re.compile(r"Tried to allocate " + _SIZE, re.I)),
    ("total", re.compile(_SIZE + r" total capacity|total capacity of " + _SIZE, re.I)),
    ("allocated", re.compile(_SIZE + r" already allocated|" + _SIZE + r" is allocated by PyTorch", re.I)),
    ("free", re.compile(_SIZE + r" free\b|of which " + _SIZE + r" is free", re.I)),
    ("reserved", re.compile(_SIZE + r" reserved in total by PyTorch", re.I)),
    ("reserved_unallocated", re.compile(_SIZE + r" is reserved by PyTorch but unallocated", re.I)),
)
_GPU_INDEX = re.compile(r"\bGPU\s*(\d+)\b")


def gpu_oom_figures(text: str) -> Values:
    """The memory figures a CUDA OOM message prints, as printed (`"144.00 MiB"`), and the GPU."""
    out: Values = {}
    for name, rx in _OOM_FIELDS:
        if m := rx.search(text):
            out[name] = next(g for g in m.groups() if g)
    if m := _GPU_INDEX.search(text):
        out["gpu"] = m.group(1)
    return out


def shrink_advice(v: Values) -> tuple[list[str], Values]:
    """How far the batch must shrink, from the figures (a lower bound: weights and optimizer state do
    not shrink with the batch), and whether fragmentation (reserved >> allocated) is the problem."""
    size = {k: parse_size(v[k]) for k in ("tried_to_allocate", "total", "allocated", "free", "reserved",
                                         "reserved_unallocated") if k in v}
    tried, alloc, free = size.get("tried_to_allocate"), size.get("allocated"), size.get("free")
    reserved = size.get("reserved")
    unallocated = size.get("reserved_unallocated")
    if reserved is None and alloc is not None and unallocated is not None:
        reserved = alloc + unallocated
    steps: list[str] = []
    derived: Values = {}
    if tried is not None and alloc is not None:
        usable = (reserved if reserved is not None else alloc) + (free or 0.0)
        short = alloc + tried - usable
        if short > 0 and short >= alloc:
            factor = (alloc + tried) / max(usable, 1.0)
            derived["shortfall"] = _gib(short)
            derived["min_shrink_factor"] = round(factor, 1)
            steps.append(f"The request alone ({v['tried_to_allocate']}) is more than the GPU could give ({_gib(usable)}): "
                         f"what sets that tensor's size (batch, sequence length, image size) must shrink about "
                         f"{factor:.1f}x, or the model must be sharded across GPUs (FSDP / ZeRO-3 / tensor parallelism).")
        elif short > 0:
            pct = max(1, math.ceil(100 * short / alloc))
            derived["shortfall"] = _gib(short)
            derived["min_batch_cut_pct"] = pct
            steps.append(f"The step needed {_gib(alloc + tried)} where PyTorch could hold {_gib(usable)}: at least "
                         f"{_gib(short)} must go. Cut the per-GPU batch by at least {pct}% (a lower bound: weights and "
                         "optimizer state do not shrink with it); halving it and doubling gradient accumulation keeps "
                         "the effective batch.")
        else:
            steps.append(f"The {v['tried_to_allocate']} request would have fitted in memory PyTorch held: the cache is "
                         "fragmented rather than full.")
        if reserved is not None and (reserved - alloc >= tried or reserved - alloc >= 0.1 * reserved):
            derived["fragmented"] = True
            steps.append(f"Reserved ({_gib(reserved)}) is well above allocated ({_gib(alloc)}): set "
                         "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to let the allocator reuse that memory.")
    elif "tried_to_allocate" in v:
        steps.append(f"The job asked for {v['tried_to_allocate']} more than the GPU had free: halve the per-GPU batch "
                     "and double gradient accumulation to keep the effective batch.")
    else:
        steps.append("Halve the per-GPU batch and double gradient accumulation to keep the effective batch.")
    steps.append("Or trade compute for memory: gradient (activation) checkpointing, mixed precision (bf16), or a "
                 "sharded optimizer (ZeRO / FSDP).")
    return steps, derived


def _gpu_oom(text: str) -> Values | None:
    if not _OOM.search(text) or _HOST_OOM_WORDS.search(text):
        return None
    return gpu_oom_figures(text)


# --- ports -------------------------------------------------------------------------------------------

_PORT_IN_USE = re.compile(r"\bAddress already in use\b|\bEADDRINUSE\b|\berrno:? ?98\b|\[Errno 98\]", re.I)
_PORT = re.compile(r"(?:\]|\b\d{1,3}(?:\.\d{1,3}){3}|\blocalhost|\?UNKNOWN\?):(\d{2,5})\b|\bport[:= ]\s*(\d{2,5})\b", re.I)


def _port_in_use(text: str) -> Values | None:
    if not _PORT_IN_USE.search(text):
        return None
    m = _PORT.search(text)
    return {"port": next(g for g in m.groups() if g)} if m else {}


# --- modules and versions ----------------------------------------------------------------------------

_NO_MODULE = re.compile(r"No module named ['\"]?([\w.]+)['\"]?")
_VERSION = re.compile(
    r"\bcannot import name\b|\bundefined symbol\b|\bGLIBC(?:XX)?_[\d.]+' not found|\bcompiled (?:against|with)\b"
    r"|\bversion mismatch\b|\bincompatible\b.*\bversion|\bversion\b.*\bincompatible\b|\brequires? [\w-]+ ?(?:[<>=!]=?|version)"
    r"|\bdriver (?:version )?is (?:too old|insufficient)\b|\bdriver on your system is too old\b"
    r"|\bCUDA driver version is insufficient\b|\bdtype size changed\b|\bAPI version\b|\bnot compatible with\b"
    r"|\bwas built for\b|\bcannot open shared object file\b|\bno kernel image is available\b"
    r"|\bnot supported (?:by|on) (?:this|your) (?:version|CUDA|GPU)\b|\bunsupported (?:GPU|CUDA|compute capability)\b",
    re.I,
)
# package names the lines may name (as printed); a version mismatch names two of them
_PACKAGES = re.compile(
    r"\b(PyTorch|torch\w*|numpy|transformers|tokenizers|accelerate|deepspeed|flash[_-]attn|xformers|triton|apex|"
    r"bitsandbytes|peft|trl|vllm|datasets|huggingface[_-]hub|safetensors|protobuf|tensorflow|jax(?:lib)?|scipy|pandas|"
    r"pydantic|mmcv|mmdet|CUDA|cuDNN|NCCL|GLIBCXX|GLIBC|libstdc\+\+|lib\w+\.so[\w.]*|driver|python|setuptools|"
    r"opencv[\w-]*|pillow|scikit[\w-]*|onnx\w*|megatron\w*|transformer_engine|diffusers|timm|sentencepiece)\b",
    re.I,
)
_FROM_MODULE = re.compile(r"\bfrom ['\"]([\w.]+)['\"]|\bin module ['\"]?([\w.]+)")


@cache
def _pip_names() -> dict[str, str]:
    raw = resources.files("schedmate.agents.failure").joinpath("data/pip_names.json").read_text(encoding="utf-8")
    return {k: v for k, v in json.loads(raw).items() if not k.startswith("_")}


def dist_for(module: str) -> str:
    """The PyPI distribution providing import name `module` (`flash_attn` → `flash-attn`): the
    mapping for names that differ, else the top-level name, lower-case, `_` as `-`."""
    names = _pip_names()
    parts = module.split(".")
    for i in range(len(parts), 0, -1):  # `google.protobuf.x` → `google.protobuf`
        if (hit := names.get(".".join(parts[:i]))) is not None:
            return hit
    return parts[0].lower().replace("_", "-")


def dist_known(module: str) -> bool:
    """True when the import name (or a parent package of it) is in the tested mapping: the PyPI
    name then comes from us, not from the log's text alone."""
    names, parts = _pip_names(), module.split(".")
    return any(".".join(parts[:i]) in names for i in range(len(parts), 0, -1))


# import names that are a repository's own modules, never the PyPI project of that name a user meant
_LOCAL_MODULES = frozenset({"utils", "util", "src", "models", "model", "modules", "lib", "common", "config", "configs",
                            "tools", "data", "dataset", "training", "train", "debug", "helpers", "core", "scripts", "test",
                            "tests", "options", "networks", "layers", "trainer", "engine", "misc", "losses", "loss"})


def is_local_module(module: str) -> bool:
    """`utils`, `models.resnet`: a repository's own module (run from its root), not a package to install."""
    return module.split(".")[0] in _LOCAL_MODULES


_NOT_INSTALLED = re.compile(r"cannot import name ['\"]?\w+['\"]? from ['\"]([\w.]+)['\"] \(unknown location\)")


def _missing_module(text: str) -> Values | None:
    m = _NO_MODULE.search(text) or _NOT_INSTALLED.search(text)  # `(unknown location)`: only a namespace left
    return {"module": m.group(1)} if m else None


def packages_in(text: str) -> list[str]:
    """Package names the line names, as printed, first occurrence each (case-insensitive)."""
    seen: dict[str, str] = {}
    for m in _PACKAGES.finditer(text):
        seen.setdefault(m.group(1).lower(), m.group(1))
    for m in _FROM_MODULE.finditer(text):
        name = (m.group(1) or m.group(2)).split(".")[0]
        seen.setdefault(name.lower(), name)
    return list(seen.values())


_SITE_FRAME = re.compile(r'^\s*File "[^"]*[/\\](?:site|dist)-packages[/\\]([A-Za-z_][\w]*)')
_API_MISMATCH = re.compile(r"\bunexpected keyword argument\b|\bhas no attribute\b|\bmissing \d+ required (?:positional|keyword)"
                           r"|\btakes \d+ positional arguments? but \d+\b|\bgot multiple values for\b|\bis not supported\b"
                           r"|\bdeprecated\b|\bno longer\b|\bremoved in\b")
_MODULE_ATTR = re.compile(r"module ['\"]([\w.]+)['\"] has no attribute")


def api_mismatch(exception_line: str, frames: Sequence[str]) -> Values | None:
    """A class error (TypeError, AttributeError, a bare KeyError) raised inside an installed package's
    code, or naming a package's module, is that package's API changing under the job: the versions."""
    if not _API_MISMATCH.search(exception_line):
        return None
    if m := _MODULE_ATTR.search(exception_line):
        top = m.group(1).split(".")[0]
        if not is_local_module(top):
            return {"packages": [top]}
    last = next((f for f in reversed(frames) if f.lstrip().startswith("File ")), None)
    if last is not None and (m := _SITE_FRAME.match(last)):
        return {"packages": [m.group(1)]}
    return None


def _version_mismatch(text: str) -> Values | None:
    if not _VERSION.search(text):
        return None
    return {"packages": packages_in(text)}


# --- host memory and shared memory -------------------------------------------------------------------

_SHM = re.compile(r"\bshared memory\b|/dev/shm\b|\bbus error\b|\binsufficient shared memory\b|\bshm\b"
                  r"|\bunable to (?:write to|mmap \d+ bytes from) file </torch_", re.I)
_HOST_OOM = re.compile(
    r"\bOut of memory: Killed process\b|\boom-kill(?:er)?\b|\bMemory cgroup out of memory\b|\bOOMKilled\b"
    r"|\boom[_ ]kill events?\b|\bexceeded (?:its )?memory limit\b|\bkilled by signal: Killed\b|^Killed\s*$"
    r"|\bexit ?code\s*[:=]?\s*-9\b"
    r"|\bSIGKILL\b|\bsignal 9\b|\bDefaultCPUAllocator: (?:not enough memory|can't allocate memory)\b"
    r"|\bCannot allocate memory\b|\bMemoryError\b",
    re.I,
)


def _shm(text: str) -> Values | None:
    return {} if _SHM.search(text) else None


def _host_oom(text: str) -> Values | None:
    return {} if _HOST_OOM.search(text) else None


# --- collectives and hardware ------------------------------------------------------------------------

_NCCL = re.compile(r"\bWatchdog caught collective operation timeout\b|\bwatchdog got stuck\b|\bNCCL\b.*\btimed? ?out\b"
                   r"|\bcollective operation timeout\b|\bNCCL operations have failed or timed out\b|\bncclRemoteError\b"
                   r"|\bncclSystemError\b|\bncclInternalError\b|\bunhandled system error\b|\bremote process exited\b"
                   r"|\bNCCL (?:WARN|error)\b|\bNCCL communicator was aborted\b|\bProcessGroupNCCL\b.*\b(?:timeout|error)\b"
                   r"|\bTimeout at NCCL work\b",
                   re.I)
_RANK = re.compile(r"\[(?:PG [^\]]*?)?Rank (\d+)\]|\brank[ :=]+(\d+)\b|\brank(\d+)\]", re.I)
_HARDWARE = re.compile(
    r"\bXid\b|\bSXid\b|\bECC error|\buncorrectable ECC\b|\bdouble[- ]bit ECC\b|\bNVLink\b.*\b(?:error|fail)|\bfallen off the bus\b"
    r"|\bNET/IB\b.*\b(?:error|fail)|\bvendor err\b|\bIBV_WC_\w+|\bibv_\w+ (?:failed|error)\b|\bgot completion with error\b"
    r"|\bNODE_FAIL\b|\bDUE TO NODE FAIL|\bNode failure on\b|\bnot responding\b|\bNotReady\b|\bnode has died\b"
    r"|\bUnable to determine the device handle\b|\bRmInitAdapter failed\b|\bGPU crash dump\b|\bcudaErrorNvlinkUncorrectable\b",
    re.I,
)
_NODE = re.compile(r"\b(?:Node failure on|node|on host|host|hostname)[ :=]+([A-Za-z][\w-]*\d[\w.-]*)", re.I)
_HOST_LABEL = re.compile(r"^([A-Za-z][\w-]*\d[\w.-]*): |^([\w.-]+):\d+:\d+ \[\d+\] ")  # `dgx15: `, NCCL's `host:pid:tid [dev] `
_GPU = re.compile(r"\(PCI:([0-9a-fA-F:.]+)\)|\bPCI:([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.\d)?)"
                  r"|\bGPU ([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.\d)?)|\bGPU\s*(\d+)\b")


def node_and_gpu(text: str) -> Values:
    """The node and GPU a hardware line names (a host label the launcher put in front counts)."""
    out: Values = {}
    if m := _NODE.search(text) or _HOST_LABEL.search(text):
        out["node"] = next(g for g in m.groups() if g).rstrip(".:,")
    if m := _GPU.search(text):
        out["gpu"] = next(g for g in m.groups() if g)
    return out


# torch.distributed's own connections (the c10d store, rendezvous): a peer or the master that died or
# never came up, not an external service
_DIST = re.compile(r"\bc10d\b.*\b(?:timed out|failed|connect\w*|refused|closed)\b|\bRendezvous\w*(?:Error|Timeout)\b"
                   r"|\bDistNetworkError\b|\bDistStoreError\b|\bclient socket has timed out\b|\bConnection closed by peer\b"
                   r"|\bTCPStore\b.*\b(?:timed out|failed|refused)|\bSocket Timeout\b", re.I)
_NCCL_USAGE = re.compile(r"\bncclInvalidUsage\b|\bncclInvalidArgument\b|\bDuplicate GPU detected\b", re.I)


def rank_in(text: str) -> str | None:
    """The rank a line names (`[Rank 5]`, `[PG 1 Rank 11]`, `rank: 3`, a `[rank2]:` tag)."""
    m = _RANK.search(text)
    return next(g for g in m.groups() if g) if m else None


def _nccl(text: str) -> Values | None:
    if _NCCL_USAGE.search(text) or not (_NCCL.search(text) or _DIST.search(text)):
        return None
    rank = rank_in(text)
    return {"rank": rank} if rank else {}


def _hardware(text: str) -> Values | None:
    return node_and_gpu(text) if _HARDWARE.search(text) else None


# --- the rest ----------------------------------------------------------------------------------------

_TIME_LIMIT = re.compile(r"\bDUE TO TIME LIMIT\b|\bTIME LIMIT\b.*\b(?:CANCELLED|exceeded|reached)\b|\btime limit (?:exceeded|reached)\b"
                         r"|\bexceeded (?:its |the )?(?:time|wall ?time|walltime) limit\b|\bwalltime (?:exceeded|limit)\b"
                         r"|\bJob \S+ exceeded \S+ time limit\b|\bPBS: job killed: walltime\b", re.I)
_NAN = re.compile(r"\bloss (?:is|became|=|:)\s*(?:nan|inf)\b|\bNaN (?:or Inf )?(?:found|detected)\b|\bnon-finite (?:loss|value)"
                  r"|\bFloatingPointError\b|\bloss\b.*\b(?:nan|inf)\b.*\b(?:detected|encountered)|\bdivergen(?:ce|t)\b"
                  r"|\bgradient overflow\b.*\bskipping\b.*\bloss scale\b.*\bminimum\b|\bCurrent loss scale already at minimum\b"
                  r"|\bfound NaN\b|\bnan values?\b.*\b(?:loss|gradient|output)|\bDetected (?:NaN|Inf)\b|\breturned nan values\b", re.I)
_TRANSIENT = re.compile(
    r"\b(?:HTTP(?:Error)?|status(?: code)?|Server Error:?)\s*:?\s*5\d\d\b|\b50[0-4] (?:Server Error|Service Unavailable|Bad Gateway|"
    r"Gateway Time-?out|Internal Server Error)\b|\bReadTimeout\b|\bConnectTimeout\w*\b|\bMaxRetryError\b|\bNewConnectionError\b"
    r"|\bMax retries exceeded\b|\bTemporary failure in name resolution\b|\bName or service not known\b|\bgaierror\b"
    r"|\bConnection (?:reset|refused|aborted|timed out)\b|\bRemoteDisconnected\b|\bIncompleteRead\b|\bChunkedEncodingError\b"
    r"|\bcouldn't connect to\b|\bSlowDown\b|\bServiceUnavailable\b|\bRequestTimeout\b|\bbotocore\.exceptions\b|\bThrottl\w+\b"
    r"|\bDUE TO PREEMPTION\b|\bpreempt(?:ed|ion)\b|\bStale file handle\b|\bInput/output error\b|\bRemote I/O error\b"
    r"|\bhuggingface\.co\b.*\b(?:timed out|connect|unreachable)|\bOffline mode\b|\bNetwork is unreachable\b",
    re.I,
)
_PATH_ERR = re.compile(
    r"\bFileNotFoundError\b|\[Errno 2\]|\bNo such file or directory\b|\bPermissionError\b|\[Errno 13\]|\bPermission denied\b"
    r"|\bIsADirectoryError\b|\bNotADirectoryError\b|\bdoes not exist\b|\bnot found\b|\bcannot find\b|\bcan't find\b"
    r"|\bNo space left on device\b|\bDisk quota exceeded\b|\bRead-only file system\b|\bdoes not appear to have a file named\b"
    r"|\bis not a valid model identifier\b|\bCan't load (?:the )?(?:model|tokenizer|config|weights)\b"
    # a file that is there but cannot be read: a truncated or corrupt checkpoint
    r"|\bPytorchStreamReader failed\b|\bSafetensorError\b|\bHeaderTooLarge\b|\binvalid load key\b|\bUnpicklingError\b"
    r"|\bfailed finding central directory\b",
    re.I,
)
_QUOTED_PATH = re.compile(r"""['"`]((?:[A-Za-z]:)?[~./\w][^'"`\s]*)['"`]""")
_BARE_PATH = re.compile(r"(?<![\w:/])((?:~|\.{1,2})?/[\w.@+-]+(?:/[\w.@+-]*)+)")
# paths that live on a shared filesystem a node mounts (NFS, Lustre, GPFS, cloud file systems)
_SHARED_FS = re.compile(r"^/(?:mnt|nfs|lustre|gpfs|scratch|shared|share|fsx|efs|beegfs|weka|cephfs|data\d*|datasets?|"
                        r"work|project|projects|groups?|storage|cluster|ssd|hdd|vast)(?:/|$)")
_FRAME = re.compile(r'^\s*File "')
_EXC_CLASS = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Fault|Failure|Warning))\b")


_ERRNO_PATH = re.compile(r"(?:No such file or directory|Permission denied|Is a directory|Not a directory|"
                         r"Read-only file system)(?: \(os error \d+\))?: ['\"](.+?)['\"]\s*$")


def path_in(text: str) -> Values:
    """The path a file error names (`[Errno 2] ...: 'path'` first, else a quoted one, else a bare
    absolute or relative path), and whether it looks like a shared filesystem that may not be
    mounted on the node. A traceback frame (`File "x.py", line 3`) names code, not the missing file."""
    if _FRAME.match(text) or not _PATH_ERR.search(text):
        return {}
    m = _ERRNO_PATH.search(text)
    cand = [m.group(1)] if m else []
    cand += [m.group(1) for m in _QUOTED_PATH.finditer(text) if "/" in m.group(1) or "." in m.group(1)]
    cand += [m.group(1) for m in _BARE_PATH.finditer(text)]
    if not cand:
        return {}
    path = cand[0]
    out: Values = {"path": path}
    if _SHARED_FS.match(path):
        out["shared_fs"] = True
    return out


def _path(text: str) -> Values | None:
    if not _PATH_ERR.search(text):
        return None
    values = path_in(text)
    # "not found" / "does not exist" alone are too common to mean a file, unless a path is named
    if not values and re.search(r"\bnot found\b|\bdoes not exist\b|\bcannot find\b|\bcan't find\b", text, re.I) \
            and not re.search(r"\bFileNotFoundError\b|No such file", text):
        return None
    return values


_IDE_EXCEPTION = re.compile(r"^Exception has occurred: ([A-Za-z_][\w.]*)")  # VS Code's report of a raised exception
_DOTTED_CLASS = re.compile(r"^((?:[a-z_]\w*\.)+[A-Z]\w*): ")  # `pyarrow.lib.ArrowInvalid: ...`


def exception_class(text: str) -> str | None:
    """The exception class an exception line starts with (`KeyError`, `torch.OutOfMemoryError`,
    `pyarrow.lib.ArrowInvalid`, VS Code's `Exception has occurred: ScannerError`)."""
    text = text.strip()
    m = _EXC_CLASS.match(text) or _IDE_EXCEPTION.match(text) or _DOTTED_CLASS.match(text)
    return m.group(1) if m else None


def _time_limit(text: str) -> Values | None:
    return {} if _TIME_LIMIT.search(text) else None


def _nan(text: str) -> Values | None:
    return {} if _NAN.search(text) else None


def _transient(text: str) -> Values | None:
    return {} if _TRANSIENT.search(text) else None


def _code(text: str) -> Values | None:
    exc = exception_class(text)
    return {"exception": exc} if exc else None


# kind of fix → its detector, most specific first (the order `remediation` asks them in)
DETECTORS: dict[str, Detector] = {
    "extend_time_limit": _time_limit,
    "change_port": _port_in_use,
    "shrink_batch": _gpu_oom,
    "increase_shm": _shm,
    "reduce_host_memory": _host_oom,
    "install": _missing_module,
    "align_versions": _version_mismatch,
    "cordon_node": _hardware,
    "debug_nccl": _nccl,
    "stabilise_training": _nan,
    "retry": _transient,
    "fix_path": _path,
    "fix_code": _code,
}
