"""Category = who must act, decided from the evidence (logs.md §2.1b).

The classifiers (rules, learned, LLM) name the *reason* (what broke, an Acme name). Acme's table
(`schedmate.taxonomy`) files every reason under one category, but real failures do not respect
it: a CUDA OOM is the owner's batch size, a `TypeError` after a library changed its signature is
the dependency's, a DataLoader worker killed by the host's memory limit is the node's. So the
category is decided here, separately, from the located lines and their context; the table is
only the prior when the lines say nothing more.

`decide(lines, block, root, reason)` reads the window the classifiers read (`lines`, the failure
block starting at `lines[block]`, its root-cause line `lines[root]`) and returns an `Evidence`:
the category, the component, the reason when the evidence names a more precise one (a host
memory kill, a class-index assert), which rule decided (`rule`, a short string), why (`why`) and
the line that decided (`line`, `offset` into the window). `strength` says how much the evidence
settles it: `decisive` (a row of the §2.1b table matched a signature), `context` (read from the
frames or the neighbourhood: where an assert was raised, a rank still evaluating), `prior` (only
the reason's Acme category), `unknown-cause` (an NCCL timeout nothing explains: infrastructure
with low confidence). Every rule is written from the convention and general knowledge of real
logs, never from one dev-set item or the generator's templates.

Who must act: infrastructure = the cluster operator (hardware, network, node, storage, container
limits); framework = a dependency (library bug, version or binary mismatch, an assert inside a
framework's internals); script = the job's owner (code, config, arguments, data, a model or batch
too big for the GPU).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from schedmate.agents.failure.rules import CleanLine, clean_line
from schedmate.taxonomy import Component, FailureCategory, FailureReason, category_of, component_of

Strength = Literal["decisive", "context", "prior", "unknown-cause"]
_I, _F, _S = FailureCategory.INFRASTRUCTURE, FailureCategory.FRAMEWORK, FailureCategory.SCRIPT
R, C = FailureReason, Component


@dataclass(frozen=True, slots=True)
class Evidence:
    """What decided a failure's category (see the module docstring)."""

    category: FailureCategory
    component: Component
    reason: FailureReason | None  # a more precise reason the evidence names; None: keep the classifier's
    rule: str  # short name of the evidence rule, e.g. "cuda-oom-on-device"
    why: str  # one short sentence for the report and the chat answer
    line: str  # the (cleaned) line that decided
    offset: int | None  # its index in the window; None for the prior
    strength: Strength

    def describe(self) -> str:
        """`<rule>: <why>` and the quoted line, for reports."""
        quote = f" ({self.line[:160]!r})" if self.line else ""
        return f"{self.rule}: {self.why}{quote}"


def _rx(pattern: str, flags: int = re.IGNORECASE) -> re.Pattern[str]:
    return re.compile(pattern, flags)


# --- signatures -------------------------------------------------------------------------------------
# hardware evidence: Xid/SXid, ECC, NVLink, a GPU off the bus or lost, PCIe AER errors, NVML unable to reach the GPU
HARDWARE = _rx(
    r"\bS?Xid\b\s*(?:\([^)]*\))?\s*:?\s*\d+|\buncorrectable ECC\b|\bECC error|\bdouble[- ]bit\b|\bNVLink\b.*\berror\b"
    r"|\bcudaErrorNvlinkUncorrectable\b|\bfallen off the bus\b|\bAER:.*\berror\b|\bNVRM:|\bUnable to determine the device handle\b"
    r"|\bNVMLError\w*\b|\brow remap|\bpage retirement\b|\bGPU is lost\b"
)
# the kernel or a cgroup OOM killer, a process killed by SIGKILL (-9 / 137): host memory
OOM_KILLER = _rx(
    r"\bOut of memory: Killed process\b|\boom-kill(?:er)?\b|\binvoked oom-killer\b|\bMemory cgroup out of memory\b"
    r"|\bOOMKilled\b|\boom_reaper\b|\bexceeded (?:its )?memory limit\b|\bout of memory \(OOM\) killer\b"
    r"|\bdetected \d+ oom[_ ]kill events?\b|\bSome of your processes may have been killed by the cgroup out-of-memory handler\b"
)
SIGKILL = _rx(
    r"^\s*Killed\s*$|\bexit ?code\s*[:=]?\s*-9\b|\bexited with (?:return )?code\s*[:=]?\s*-9\b|\bexit(?:ed with)? (?:code|status)\s*[:=]?\s*137\b"
    r"|\b(?:killed by )?signal:? ?9\b|\bSIGKILL\b|\bSignals\.SIGKILL\b|\bWTERMSIG 9\b|\bkilled by signal: Killed\b"
)
WORKER = _rx(r"\bDataLoader worker\b|\bin worker\b|\bworker process\b")
SHM = _rx(r"\bbus error\b|\binsufficient shared memory\b|\bshared memory \(shm\)|/dev/shm\b|\bout of shared memory\b|\bSIGBUS\b")
# torch.multiprocessing failing to put a tensor in shared memory: the shm segment is full by itself
SHM_WRITE = _rx(r"\bunable to (?:write to|open) (?:file|shared memory object) </torch_|\bunable to mmap \d+ bytes from file </torch_")
DISK_FULL = _rx(r"\bNo space left on device\b|\[Errno 28\]|\bDisk quota exceeded\b")
TRUNCATED_LOAD = _rx(r"\bPytorchStreamReader failed\b|\bunexpected EOF\b|\bfailed finding central directory\b|\bHeaderTooLarge\b|\btruncated\b")
CUDA_OOM = _rx(
    r"\bCUDA out of memory\b|\bOutOfMemoryError\b|\bCUBLAS_STATUS_ALLOC_FAILED\b|\bCuda failure '?out of memory\b|\bHIP out of memory\b"
    # TensorFlow's and XLA's (JAX) device allocators: `OOM when allocating tensor with shape[...]`,
    # `ResourceExhaustedError`, `RESOURCE_EXHAUSTED: Out of memory while trying to allocate N bytes`,
    # `Allocator (GPU_0_bfc) ran out of memory trying to allocate`
    r"|\bOOM when allocating tensor\b|\bResourceExhaustedError\b|\bRESOURCE_EXHAUSTED: Out of memory\b"
    r"|\bAllocator \(GPU_\d+_bfc\) ran out of memory\b|\bOut of memory while trying to allocate \d+ bytes\b"
)
FRAMEWORK_LEAK = _rx(r"\bmemory leak\b|\bleak(?:s|ing|ed)? (?:GPU )?memory\b")
CLASS_ASSERT = _rx(
    r"\bt >= 0 && t < n_classes\b|\bcur_target >= 0 && cur_target < n_classes\b|\bsrcIndex < srcSelectDimSize\b"
    r"|\bindex out of bounds\b|\bindex >= -sizes\[i\] && index < sizes\[i\]|\bClassNLLCriterion\b|\bNLLLoss\w*\.cu\b"
    r"|\bIndexKernel\.cu\b|\bScatterGatherKernel\.cu\b|\bEmbedding\w*\.cu\b.*Assertion"
)
DEVICE_ASSERT = _rx(r"\bdevice-side assert(?:ion)? triggered\b|\.cu:\d+: \w+: block: \[")
CUDA_ERROR = _rx(
    r"\bCUDA error\b|\bcuda runtime error\b|\billegal memory access\b|\bunspecified launch failure\b|\bCUBLAS_STATUS_\w+|\bCUDNN_STATUS_\w+"
    r"|\bcudaError\w+|\bkernel execution error\b|\bmisaligned address\b|\bTHCudaCheck FAIL\b|\bCUDA driver error\b"
)
DRIVER_MISMATCH = _rx(
    r"\bNVIDIA driver on your system is too old\b|\bCUDA driver version is insufficient\b|\bdriver version is insufficient for CUDA runtime\b"
    r"|\bno kernel image is available for execution\b|\bnot compatible with the current PyTorch installation\b"
)
NCCL_TIMEOUT = _rx(r"\bWatchdog caught collective operation timeout\b|\bNCCL\b.*\btimed? ?out\b|\bwatchdog got stuck\b|\bTimeout at NCCL work\b")
# a rank still in the job's own evaluation or preprocessing when the others wait in a collective
STRAGGLER = _rx(
    r"\b(?:Running )?[Ee]valuat(?:e|ing|ion)\b.*(?:\d+%|\d+/\d+|batch|step)|\bValidation(?: DataLoader)?\b.*\d+%|\b(?:Map|Filter|Tokeniz\w*|Preprocess\w*)\b[^|\n]*\d+%\|"
    r"|\bRunning tokenizer on dataset\b|\bpreprocessing (?:the )?(?:data|dataset)\b|\bbuilding (?:the )?(?:index|dataset)\b.*\brank\b"
)
# a dependency at the wrong version, or a binary built against another one
VERSION = _rx(
    r"\bundefined symbol\b|\bGLIBC(?:XX)?_[\d.]+' not found\b|\bversion `?[\w.]+'? not found\b|\bwas compiled (?:against|with)\b"
    r"|\bcompiled (?:against|for) (?:a )?(?:different|another|an incompatible)\b|\bversion mismatch\b|\bmismatched versions?\b"
    r"|\brequires? [`'\"]?(?:[\w.-]+ ?)?[\w.\[\]-]+ ?(?:>=|==|<=|>|<|~=) ?\d[\w.]*|\bis (?:not )?(?:compatible|incompatible) with (?:the installed |your )?[\w.-]+ (?:version|==|>=|\d)"
    r"|\bplease (?:upgrade|update|downgrade|reinstall) (?:your )?[\w.-]+|\bpip install (?:-U|--upgrade) \S+|\bdeprecated and (?:has been )?removed\b"
    r"|\bhas been removed in (?:version )?v?\d|\bError building extension\b|\bninja\b.*\bnon-zero exit status\b|\bCommand '\['ninja'"
    r"|\bABI\b.*\b(?:mismatch|incompatib)",
)
IMPORT_NAME = _rx(r"\bcannot import name '?[\w.]+'? from '?([\w.]+)'?(?: \(([^)]*)\))?", 0)
NO_MODULE = _rx(r"\bNo module named '([\w.]+)'", 0)
UNEXPECTED_KW = _rx(r"\b([A-Z]\w*)\.(?:__init__|\w+)\(\) got an unexpected keyword argument\b", 0)
TYPE_ATTR = _rx(r"\btype object '\w+' has no attribute\b|\bmodule '[\w.]+' has no attribute\b", 0)
OBJ_ATTR = _rx(r"'(\w+)' object has no attribute\b", 0)
USER_CLASSES = frozenset({"NoneType", "Namespace", "str", "list", "dict", "int", "float", "tuple", "bool", "bytes", "set",
                          "ndarray", "Tensor", "DataFrame", "Series", "PosixPath", "function", "method"})  # fmt: skip
LIB_FRAME = _rx(r'File "[^"]*(?:site-packages|dist-packages|/lib/python\d[\d.]*/(?!site)|<frozen )', 0)
FRAME = _rx(r'^\s*File "([^"]*)", line \d+', 0)
# what an assert checks: the owner's configuration or data (sizes, paths, counts) rather than a library's state
CONFIG_ASSERT = _rx(
    r"\bbatch[_ ]?size\b|\bdivisible\b|\bmust be\b|\bshould be\b|\bexpected\b.*\bgot\b|\bpath\b|\bexists?\b|\bnum_\w+|\bshape\b"
    r"|\blen\(|\bnot found\b|\bconfig\b|\bworld[_ ]size\b|\bgradient_accumulation\b"
)
STATE_DICT_SHAPE = _rx(r"\bsize mismatch for\b|\bcopying a param with shape\b")
CONNECTION = _rx(
    r"\bAddress already in use\b|\bserver socket has failed to listen\b|\bRendezvous\w*(?:Error|Timeout)\b|\bclient socket has (?:timed out|failed to connect)\b"
    r"|\bConnection (?:refused|reset by peer|timed out)\b|\bkeep-alive heartbeat\b|\bNo route to host\b|\bName or service not known\b"
)
PEER_LOST = _rx(
    r"\bnode \S+ (?:is )?not responding\b|\bnot answering\b|\bhas been marked dead\b|\b(?:node|worker|peer|host) \S+ (?:died|is dead|is unreachable|was lost)\b"
    r"|\blost connection to (?:the )?(?:node|worker|peer|host|head)\b|\bNODE_FAIL\b|\bDUE TO NODE FAIL|\bbecause its node has died\b"
)
LAUNCHER_SIGNAL = _rx(
    r"\bReceived (?:1|15|SIGHUP|SIGTERM) death signal\b|\bgot signal: (?:1|15)\b|\bSignalException\b|\bDUE TO PREEMPTION\b"
    r"|\bslurmstepd: error: \*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED\b(?!.*TIME LIMIT)"
)
# a checkpoint archive cut short: the zip's central directory (written last) is missing, so the
# write never finished (a full disk, a killed save, an incomplete copy): storage, not a library bug
CORRUPT_ARCHIVE = _rx(r"\bPytorchStreamReader failed reading (?:zip archive|file)\b|\bfailed finding central directory\b")
# a model or dataset hub (or any download host) that the node cannot reach, with no usable cache
HUB_UNREACHABLE = _rx(
    r"\bWe couldn't connect to '?https?://|\bLocalEntryNotFoundError\b|\bConnection error, and we cannot find the requested files\b"
    r"|\bCouldn't reach '?https?://|\bcheck(?:out)? your internet connection\b|\bTemporary failure in name resolution\b"
)
DATASET_CONTEXT = _rx(r"\bload_dataset\b|/datasets/|\bdatasets\.|\bDataset\w*Error\b")
# tensor shapes that do not fit each other: the owner's model, data or batch configuration
SHAPE_MISMATCH = _rx(
    r"\bshapes cannot be multiplied\b|\bExpected input batch_size \(\d+\) to match target batch_size\b"
    r"|\bThe size of tensor a \(\d+\) must match the size of tensor b\b|\bsize mismatch, m1: \[|\bGiven groups=\d+, weight of size\b"
    r"|\bIncompatible shapes: \[|\bDimensions must be equal, but are \d+ and \d+\b|\boperands could not be broadcast together with shapes\b"
    r"|\bTarget size \(.*\) must be the same as input size\b|\bshape '\[[-\d, ]+\]' is invalid for input of size \d+"
)
# DDP: a parameter produced no gradient, the owner's model or forward (find_unused_parameters)
UNUSED_PARAMS = _rx(r"\bExpected to have finished reduction in the prior iteration\b|\bparameters that were not used in producing (?:the )?loss\b")
# an option of the job's command line named in the message: the owner's arguments
CLI_OPTION = _rx(r"(?:^|[\s`'\"(])--[a-z][\w-]+", 0)
STORAGE = _rx(r"\[Errno 5\] Input/output error\b|\bInput/output error\b|\bStale file handle\b|\bRemote I/O error\b|\bbotocore\.exceptions\b")


def _frames_before(cleaned: Sequence[CleanLine], root: int, limit: int = 60) -> list[str]:
    """The paths of the traceback frames printed before `root` (innermost last), at most `limit` lines back."""
    out: list[str] = []
    for i in range(max(0, root - limit), root):
        m = FRAME.match(cleaned[i].text)
        if m is not None:
            out.append(m.group(1))
    return out


def _is_lib(path: str) -> bool:
    return LIB_FRAME.search(f'File "{path}"') is not None


def _prior(reason: FailureReason | None) -> Evidence | None:
    if reason is None:
        return None
    return Evidence(category_of(reason), component_of(reason), None, "acme-prior",
                    f"no evidence beyond the reason: Acme files {reason.value} under {category_of(reason).value}",
                    "", None, "prior")  # fmt: skip


def decide(lines: Sequence[str | bytes], block: int, root: int | None, reason: FailureReason | None) -> Evidence | None:
    """The category of the failure at `lines[block]` (root-cause line `lines[root]`) by evidence;
    None when there is neither evidence nor a reason (no verdict)."""
    if not lines:
        return _prior(reason)
    n = len(lines)
    block = min(max(block, 0), n - 1)
    root = block if root is None else min(max(root, 0), n - 1)
    lo, hi = max(0, block - 40), min(n, root + 40)
    cleaned = {i: clean_line(lines[i]) for i in range(lo, hi)}
    text = {i: c.text.strip() for i, c in cleaned.items()}
    core = sorted({block, root} | set(range(block, min(root + 1, block + 120))))  # the failure block itself
    after = range(root + 1, min(n, root + 6))  # the lines that detail a one-line banner
    around = range(lo, hi)

    def first(rx: re.Pattern[str], where: Sequence[int] | range) -> int | None:
        return next((i for i in where if i in text and rx.search(text[i])), None)

    def ev(cat: FailureCategory, comp: Component, rsn: FailureReason | None, rule: str, why: str, at: int | None,
           strength: Strength = "decisive") -> Evidence:  # fmt: skip
        return Evidence(cat, comp, rsn, rule, why, text.get(at, "") if at is not None else "", at, strength)

    root_text = text.get(root, "")
    focus = [root, *after] if root != block else [block, *after]

    # 1. hardware named anywhere near the failure: the operator's (a CUDA error then is the GPU's)
    hw = first(HARDWARE, around)
    if hw is not None and (reason in (R.ECC_ERROR, R.NVLINK_ERROR, R.CUDA_ERROR, R.NCCL_TIMEOUT_ERROR, R.NCCL_REMOTE_ERROR,
                                      R.NETWORK_ERROR, R.RUNTIME_ERROR, R.NODE_FAILURE, None)
                           or CUDA_ERROR.search(root_text)):  # fmt: skip
        comp = C.NVLINK if re.search(r"nvlink|SXid", text[hw], re.IGNORECASE) else C.GPU
        rsn = (R.ECC_ERROR if re.search(r"\bECC\b|Xid\b\s*(?:\([^)]*\))?\s*:?\s*(?:48|63|64|92|94|95)\b", text[hw])
               else R.NVLINK_ERROR if comp is C.NVLINK else None)  # fmt: skip
        if rsn is None and reason not in (R.ECC_ERROR, R.NVLINK_ERROR, R.CUDA_ERROR):
            rsn = R.CUDA_ERROR
        return ev(_I, comp, rsn, "hardware-evidence", "the log names a hardware fault (Xid, ECC, NVLink, a lost GPU)", hw)

    # 2. memory: the host's, not the GPU's
    oom = first(OOM_KILLER, focus) if first(OOM_KILLER, focus) is not None else first(OOM_KILLER, core)
    if oom is not None:
        worker = WORKER.search(text[oom]) is not None or (reason is R.DATALOADER_KILLED)
        rsn = R.DATALOADER_KILLED if worker else R.HOST_OUT_OF_MEMORY
        return ev(_I, C.MEMORY, rsn, "host-oom-killer", "the kernel or cgroup OOM killer killed the process: host memory limit", oom)
    shm = first(SHM, focus)
    if shm is not None and (WORKER.search(" ".join(text.get(i, "") for i in focus)) or reason is R.DATALOADER_KILLED):
        return ev(_I, C.MEMORY, R.DATALOADER_KILLED, "shm-exhausted",
                  "a DataLoader worker died of a bus error: shared memory (/dev/shm) too small for the container", shm)
    shw = first(SHM_WRITE, focus)
    if shw is not None:
        return ev(_I, C.MEMORY, R.DATALOADER_KILLED, "shm-exhausted",
                  "a tensor could not be written to shared memory: /dev/shm too small for the container", shw)
    kill = first(SIGKILL, focus)
    if kill is not None and not CUDA_OOM.search(root_text):
        worker = WORKER.search(text[kill]) is not None or reason is R.DATALOADER_KILLED
        rsn = R.DATALOADER_KILLED if worker else R.HOST_OUT_OF_MEMORY
        return ev(_I, C.MEMORY, rsn, "sigkill", "killed by SIGKILL (-9 / 137 / 'Killed'): most often the host OOM killer", kill)

    # 3. storage: a full disk, and a later load failing on the file it truncated
    disk = first(DISK_FULL, [*focus, *core])
    if disk is None and TRUNCATED_LOAD.search(root_text):
        disk = first(DISK_FULL, range(lo, root))
    if disk is not None:
        rsn = R.MODEL_LOADING_ERROR if reason is R.MODEL_LOADING_ERROR else R.S3_STORAGE_ERROR
        return ev(_I, C.STORAGE, rsn, "disk-full", "the disk or quota is full: storage", disk)
    io = first(STORAGE, focus)
    if io is not None:
        return ev(_I, C.STORAGE, R.S3_STORAGE_ERROR, "storage-io", "the file system failed the read or write (I/O error)", io)
    zipcut = first(CORRUPT_ARCHIVE, focus)
    if zipcut is not None:
        return ev(_I, C.STORAGE, R.MODEL_LOADING_ERROR, "truncated-checkpoint",
                  "the checkpoint archive is cut short (no zip central directory): its write or copy never finished", zipcut, "context")
    hub = first(HUB_UNREACHABLE, focus)
    if hub is not None:
        ds = first(DATASET_CONTEXT, range(max(lo, root - 12), min(hi, root + 3)))
        return ev(_I, C.NETWORK, R.DATASET_LOADING_ERROR if ds is not None else R.MODEL_LOADING_ERROR, "hub-unreachable",
                  "the node cannot reach the model or dataset host and nothing is cached: network reachability", hub)

    # 4. GPU memory: the owner's batch or model, unless the log blames a framework leak
    cuda_oom = first(CUDA_OOM, focus)
    if cuda_oom is not None:
        leak = first(FRAMEWORK_LEAK, around)
        if leak is not None:
            return ev(_F, C.SOFTWARE, R.OUT_OF_MEMORY_ERROR, "framework-leak", "GPU memory exhausted by a leak the log attributes to a library", leak, "context")
        return ev(_S, C.GPU, R.OUT_OF_MEMORY_ERROR, "cuda-oom-on-device",
                  "CUDA out of memory: the batch or model is too large for the GPU; the owner must shrink it", cuda_oom)

    # 5. CUDA errors: bad labels, a dependency's binary, or (without hardware evidence) a software bug
    cls = first(CLASS_ASSERT, around)
    if cls is not None and (first(DEVICE_ASSERT, around) is not None or CUDA_ERROR.search(root_text) or reason in (R.CUDA_ERROR, R.RUNTIME_ERROR)):
        return ev(_S, C.SOFTWARE, R.CUDA_ERROR, "class-index-assert",
                  "a device-side assert on a class index: labels outside [0, n_classes), the owner's data or config", cls)
    pre = range(max(lo, block - 3), block)  # a native library's one-line report printed just before the traceback
    drv = first(DRIVER_MISMATCH, [*focus, *core, *pre])
    if drv is not None:
        return ev(_F, C.SOFTWARE, R.CUDA_ERROR, "driver-build-mismatch",
                  "the installed torch build does not match the node's driver: pin a build that matches", drv)
    dev_assert = first(DEVICE_ASSERT, focus)
    if dev_assert is not None:
        return ev(_S, C.SOFTWARE, R.CUDA_ERROR, "device-side-assert",
                  "a device-side assert (an index out of range in the job's tensors)", dev_assert, "context")
    cuda = first(CUDA_ERROR, focus)
    if cuda is None and re.match(r'Traceback \(most recent call last\)|File "', root_text):
        cuda = first(CUDA_ERROR, pre)  # the traceback (cut before its exception) of a CUDA error printed just above
    # no CUDA OOM line is in focus here (step 4), so a learned OutOfMemoryError is not what the line says
    if cuda is not None and reason in (R.CUDA_ERROR, R.RUNTIME_ERROR, R.NCCL_TIMEOUT_ERROR, R.NCCL_REMOTE_ERROR, R.NETWORK_ERROR,
                                       R.OUT_OF_MEMORY_ERROR, None):
        return ev(_F, C.SOFTWARE, R.CUDA_ERROR, "cuda-error-no-hardware",
                  "a CUDA error with no hardware evidence in the log: a kernel or library bug", cuda, "context")

    # 5b. tensors that do not fit each other, parameters DDP never saw a gradient for: the owner's model or data
    shp = first(SHAPE_MISMATCH, focus)
    if shp is not None:
        return ev(_S, C.SOFTWARE, None, "shape-mismatch",
                  "tensor shapes do not fit each other: the owner's model, data or batch configuration", shp)
    unused = first(UNUSED_PARAMS, focus)
    if unused is not None:
        return ev(_S, C.SOFTWARE, None, "ddp-unused-parameters",
                  "DDP found parameters without a gradient: the owner's model or forward (or find_unused_parameters)", unused)

    # 6. NCCL timeouts: a rank still in the job's own code, else an unknown cause
    nccl = first(NCCL_TIMEOUT, [block, root])  # the failure itself, not another rank's timeout after it
    if nccl is not None or reason is R.NCCL_TIMEOUT_ERROR:
        at = nccl if nccl is not None else root
        strag = first(STRAGGLER, range(max(lo, at - 30), min(hi, at + 10)))
        if strag is not None:
            return ev(_S, C.SOFTWARE, R.NCCL_TIMEOUT_ERROR, "straggler-rank",
                      "a rank was still evaluating or preprocessing while the others waited in a collective", strag, "context")
        return ev(_I, C.NETWORK, R.NCCL_TIMEOUT_ERROR, "nccl-timeout-unknown-cause",
                  "an NCCL timeout nothing in the log explains: infrastructure, low confidence", at, "unknown-cause")

    # 7. the launcher or scheduler stopped the job, a peer stopped answering, a connection failed
    sig = first(LAUNCHER_SIGNAL, focus)
    if sig is not None:
        return ev(_I, C.NODE, R.NODE_FAILURE, "launcher-signal", "the launcher was sent SIGTERM/SIGHUP or the job was preempted", sig, "context")
    peer = first(PEER_LOST, [*focus, *range(root + 6, min(hi, root + 10))])  # Ray lists the actor's fields before why it died
    if peer is not None:
        return ev(_I, C.NODE, R.NODE_FAILURE, "peer-lost", "a node or peer stopped answering", peer)
    conn = first(CONNECTION, focus)
    if conn is not None and reason in (R.CONNECTION_ERROR, R.NETWORK_ERROR, R.RUNTIME_ERROR, R.OS_ERROR, None):
        return ev(_I, C.NETWORK, R.CONNECTION_ERROR, "connection", "a port, rendezvous or peer connection failed", conn)

    # 8. dependency versions: undefined symbols, "requires x>=y", removed names, unexpected keywords after an upgrade
    ver = first(VERSION, focus)
    if ver is not None:
        return ev(_F, C.SOFTWARE, None, "version-mismatch", "a library version or binary mismatch: pin or upgrade the dependency", ver)
    imp = first(IMPORT_NAME, focus)
    if imp is not None:
        m = IMPORT_NAME.search(text[imp])
        assert m is not None
        where = m.group(2) or ""
        if "site-packages" in where or "dist-packages" in where or "unknown location" in where:
            return ev(_F, C.SOFTWARE, R.IMPORT_ERROR, "import-name-from-library",
                      f"a name missing from the installed {m.group(1)}: a version mismatch", imp)
    nomod = first(NO_MODULE, focus)
    if nomod is not None:
        m = NO_MODULE.search(text[nomod])
        assert m is not None
        if "." in m.group(1):
            return ev(_F, C.SOFTWARE, R.IMPORT_ERROR, "missing-submodule",
                      f"{m.group(1)!r} is missing from an installed package: a version mismatch", nomod, "context")
        return ev(_S, C.SOFTWARE, R.IMPORT_ERROR, "module-not-installed",
                  f"module {m.group(1)!r} is not installed in the job's environment: the owner installs it", nomod)
    kw = first(UNEXPECTED_KW, focus)
    if kw is not None:
        return ev(_F, C.SOFTWARE, R.TYPE_ERROR, "unexpected-keyword",
                  "a library class rejects a keyword: its signature changed between versions", kw, "context")
    frames = _frames_before([cleaned.get(i, CleanLine("", None)) for i in range(0, hi)], root)
    inner_lib = bool(frames) and _is_lib(frames[-1])
    attr = first(TYPE_ATTR, focus)
    if attr is not None:
        return ev(_F, C.SOFTWARE, R.ATTRIBUTE_ERROR, "removed-attribute", "a library module or class lacks an attribute: version mismatch", attr, "context")
    obj = first(OBJ_ATTR, focus)
    if obj is not None and inner_lib:
        m = OBJ_ATTR.search(text[obj])
        if m is not None and m.group(1) not in USER_CLASSES:
            return ev(_F, C.SOFTWARE, R.ATTRIBUTE_ERROR, "attribute-in-library",
                      "a library's own code reads an attribute its object lacks: versions that do not match", obj, "context")

    # 9. assertions: what they check, and where they were raised
    if reason is R.ASSERTION_ERROR or re.search(r"\bAssertionError\b", root_text):
        message = root_text.split(":", 1)[1] if ":" in root_text else ""
        source = " ".join(text.get(i, "") for i in range(max(lo, root - 2), root)) + " " + message
        if CONFIG_ASSERT.search(source):
            return ev(_S, C.SOFTWARE, R.ASSERTION_ERROR, "config-assert", "the assert checks the job's own configuration or data", root, "context")
        if inner_lib:
            return ev(_F, C.SOFTWARE, R.ASSERTION_ERROR, "framework-internal-assert", "an assert inside a library's internals", root, "context")
        if frames:
            return ev(_S, C.SOFTWARE, R.ASSERTION_ERROR, "assert-in-job-code", "an assert in the job's own code", root, "context")

    # 9b. an exception the job's own code raised (innermost frame outside any installed library), or a
    # check that names one of the job's command-line options: the owner's code, data or arguments
    exc = re.match(r"(?:[\w.]+\.)?(ZeroDivisionError|ValueError)\b", root_text)
    if exc is not None:
        if CLI_OPTION.search(root_text):
            return ev(_S, C.SOFTWARE, None, "argument-check", "the check names one of the job's command-line options: the owner's arguments", root, "context")
        if frames and not inner_lib:
            return ev(_S, C.SOFTWARE, None, "exception-in-job-code",
                      f"{exc.group(1)} raised in the job's own code (no library frame): the owner's code or data", root, "context")

    # 10. a checkpoint that does not fit the owner's model
    shape = first(STATE_DICT_SHAPE, [*focus, *range(root, min(n, root + 12))] if root + 12 <= hi else focus)
    if shape is not None and reason in (R.MODEL_LOADING_ERROR, R.RUNTIME_ERROR, None):
        return ev(_S, C.SOFTWARE, R.MODEL_LOADING_ERROR, "checkpoint-shape-mismatch",
                  "the checkpoint's shapes do not fit the model the owner configured", shape, "context")
    return _prior(reason)
