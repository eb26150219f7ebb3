"""Deterministic failure classification from log signatures (logs.md §2.3): the honest baseline
next to the LLM, and the cross-check that keeps a weak LLM from deciding alone.

Each `SignatureRule` maps a regex to one Acme reason (and so to a category and a component).
Rules are ordered most specific first and the first match on a line wins, so
`RuntimeError: CUDA error: uncorrectable ECC error encountered` is an ECC error, not a generic
`RuntimeError`. A rule is *specific* when its match alone settles the reason (a hardware or NCCL
signature, or an exception class that *is* an Acme reason, such as `KeyError`); it is *generic*
when it only names a container class (`RuntimeError:`, `OSError:`, a segfault) whose real cause
may be elsewhere. `combine` in `llm_classifier` lets a grounded LLM answer override only
generic matches.

The located line is read together with what it opens: a Python traceback's root exception
line (then its chained exceptions), or a few following lines for a one-line error banner; and
the cause NCCL names after `Last error:` when that is a hardware-level signature.
Rules run on cleaned text (`clean_line`: colours, launcher rank prefixes, host labels, record
prefixes and markdown stripped), never on raw bytes.

Rules are the fallback, not the classifier (`decision`): only the *high-precision* signatures
(`HIGH_PRECISION`: hardware, NCCL, fabric, node, disk, memory) decide a verdict by themselves;
an exception class (`KeyError`, `ValueError`) only breaks a tie of the learned classifier,
because the class alone does not say whose fault the failure was.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from schedmate.agents.failure.cleaning import QUIET_LEVELS, looks_like_instruction, see_through
from schedmate.embeddings.logtext import normalise_line, strip_rank_prefix
from schedmate.taxonomy import Component, FailureCategory, FailureReason, category_of, component_of

R = FailureReason


@dataclass(frozen=True, slots=True)
class SignatureRule:
    """One signature: `pattern` (searched in the normalised line) → `reason`."""

    name: str
    reason: FailureReason
    pattern: re.Pattern[str]
    specific: bool = True
    component: Component | None = None  # None: the taxonomy's component for `reason`
    high_precision: bool = False  # the match alone settles the verdict, even at WARNING level


    @property
    def category(self) -> FailureCategory:
        return category_of(self.reason)

    @property
    def faulty_component(self) -> Component:
        return self.component or component_of(self.reason)


def _rule(name: str, reason: FailureReason, pattern: str, *, specific: bool = True, flags: int = re.IGNORECASE,
          component: Component | None = None) -> SignatureRule:  # fmt: skip
    return SignatureRule(name, reason, re.compile(pattern, flags), specific, component, name in HIGH_PRECISION)


# Signatures that name a cause by themselves whatever surrounds them: hardware (Xid, ECC, NVLink,
# CUDA launch failures), the NCCL watchdog and error codes, fabric and node faults, full disks and
# stale handles, memory exhaustion, killed DataLoader workers. The rest (exception classes,
# connection errors, loading errors) depend on context: `learned` decides those, the rules only
# back it up. Only these count when printed at WARNING level (`locator.FailureLineJudge`).
HIGH_PRECISION: frozenset[str] = frozenset({
    "xid-ecc", "ecc", "xid-nvlink", "nvlink", "xid-off-bus", "cuda-device-assert", "cuda-oom", "nccl-unhandled-cuda",
    "cuda-error", "nccl-watchdog", "nccl-timeout", "nccl-remote", "nccl-system", "ib-error", "node-failure", "storage",
    "dataloader-killed", "host-oom", "sigkill", "launcher-signal", "xid-other", "nvrm-gpu", "gpu-lost", "nccl-invalid-usage",
})  # fmt: skip


# An exception class at the start of a line, optionally module-qualified: `torch.OutOfMemoryError:`.
_EXC = r"^(?:[\w.]+\.)?"
# `NVRM: Xid (PCI:0000:3b:00): 48, pid=...` (the PCI address holds colons, hence the parentheses).
_XID = r"\bXid\b\s*(?:\([^)]*\))?\s*:?\s*"

DEFAULT_RULES: tuple[SignatureRule, ...] = (
    # --- infrastructure: GPU memory, NVLink, GPU ------------------------------------------------
    _rule("xid-ecc", R.ECC_ERROR, _XID + r"(?:48|63|64|92|94|95)\b"),
    _rule("ecc", R.ECC_ERROR, r"\buncorrectable ECC error\b|\bECC error(?:s)? (?:detected|encountered)\b|\bdouble[- ]bit ECC\b"),
    _rule("xid-nvlink", R.NVLINK_ERROR, _XID + r"74\b"),
    _rule(
        "nvlink",
        R.NVLINK_ERROR,
        r"\buncorrectable NVLink error\b|\bcudaErrorNvlinkUncorrectable\b|\bNVLink (?:error|fatal error|failure)\b"
        r"|\bSXid\b\s*(?:\([^)]*\))?\s*:\s*\d+",  # NVSwitch fabric errors (`nvidia-nvswitch1: SXid (PCI:...): 12028`)
    ),
    _rule("xid-off-bus", R.CUDA_ERROR, _XID + r"79\b|\bGPU has fallen off the bus\b"),
    # a device-side assert is the application's bug (an index out of range), not the GPU's
    _rule("cuda-device-assert", R.RUNTIME_ERROR, r"\bdevice-side assert(?:ion)? triggered\b"),
    _rule(
        "cuda-oom",
        R.OUT_OF_MEMORY_ERROR,
        r"\bCUDA out of memory\b|\bOutOfMemoryError\b|\bCUBLAS_STATUS_ALLOC_FAILED\b|\bCuda failure '?out of memory\b"
        # TensorFlow's and XLA's (JAX) device allocators
        r"|\bOOM when allocating tensor\b|\bResourceExhaustedError\b|\bRESOURCE_EXHAUSTED: Out of memory\b"
        r"|\bAllocator \(GPU_\d+_bfc\) ran out of memory\b|\bOut of memory while trying to allocate \d+ bytes\b",
    ),
    _rule("nccl-unhandled-cuda", R.CUDA_ERROR, r"\bncclUnhandledCudaError\b|\bunhandled cuda error\b"),
    _rule(
        "cuda-error",
        R.CUDA_ERROR,
        r"\bCUDA error: (?:an illegal memory access|unspecified launch failure|misaligned address|unknown error"
        r"|launch timed out|uncorrectable)|\bCUBLAS_STATUS_EXECUTION_FAILED\b|\bCUDNN_STATUS_EXECUTION_FAILED\b"
        r"|\bno CUDA-capable device is detected\b|\bCUDA-capable devices? (?:is|are) busy or unavailable\b"
        r"|" + _XID + r"(?:31|43|45|61|62|119|120)\b",
    ),
    # any other Xid is a GPU-side event the driver logged (the NVIDIA catalog names it); NVRM crash
    # notices and lost devices (`Unable to determine the device handle`) likewise
    _rule("xid-other", R.CUDA_ERROR, r"\bNVRM: Xid\b|" + _XID + r"\d+\b,? ?pid"),
    _rule(
        "nvrm-gpu",
        R.CUDA_ERROR,
        r"\bNVRM: (?:GPU [\w:.]+: )?(?:A GPU crash dump has been created|GPU has fallen off the bus|RmInitAdapter failed)"
        r"|\bUnable to determine the device handle for GPU\b|\bcudaErrorLaunchFailure\b|\bCUDA driver error: unknown error\b",
    ),
    # --- infrastructure: collectives and network ------------------------------------------------
    _rule(
        "nccl-watchdog",
        R.NCCL_TIMEOUT_ERROR,
        # the heartbeat monitor's report of a hung watchdog (a collective or CUDA call that never returned)
        r"\bWatchdog caught collective operation timeout\b|\bwatchdog got stuck for \d+ seconds\b",
    ),
    _rule("nccl-timeout", R.NCCL_TIMEOUT_ERROR, r"\bNCCL operations have failed or timed out\b|\bNCCL\b.*\btimed out\b"),
    _rule(
        "nccl-remote",
        R.NCCL_REMOTE_ERROR,
        # NCCL's socket layer losing its peer (`NCCL WARN Net : Call to recv from 10.0.0.2<4431> failed : Broken pipe`)
        r"\bncclRemoteError\b|\bremote process exited or there was a network error\b"
        r"|\bNCCL WARN (?:Net|NET/Socket) ?: (?:Call to \w+ (?:from|to) \S+ failed|Connection closed by remote peer)\b",
    ),
    _rule(
        "nccl-system",
        R.NETWORK_ERROR,
        r"\bncclSystemError\b|\bunhandled system error\b|\bncclInternalError\b|\binternal error - please report\b",
    ),
    # before the IB rule: `requests.exceptions.ConnectionError: ... Network is unreachable` is a
    # connection failure; c10d store/socket errors (DistNetworkError) are rendezvous connections
    _rule(
        "connection",
        R.CONNECTION_ERROR,
        r"\bConnection(?:Refused|Reset|Aborted)Error\b|\bConnection refused\b|\bConnection reset by peer\b"
        r"|" + _EXC + r"ConnectionError\b|\bDistStoreError\b|\bDistNetworkError\b|\bRendezvous\w*Error\b"
        r"|\bserver socket has failed to listen\b|\bAddress already in use\b|\bconnection timed out\b"
        r"|\bConnection closed by peer\b|\bclient socket has timed out\b"
        # urllib3 / requests giving up on a host, and name resolution failing (`socket.gaierror`)
        r"|\b(?:MaxRetryError|NewConnectionError|ConnectTimeoutError)\b|\bMax retries exceeded with url\b"
        r"|\bgaierror\b|\bName or service not known\b|\bTemporary failure in name resolution\b",
    ),
    _rule(
        "ib-error",
        R.NETWORK_ERROR,
        r"\bNET/IB\b.*\b(?:error|failed)\b|\bnet_ib\.cc\b.*\b(?:error|vendor err)\b|\bvendor err \d+"
        r"|\bIBV_WC_\w+|\bibv_\w+ (?:failed|error)\b|\bNetwork is unreachable\b|\bNo route to host\b"
        r"|\blink (?:is )?(?:down|flapping)\b|\bNET/IB : Got async event : port error\b|\bNetwork is down\b"
        r"|\bgot completion with error\b",  # the Mellanox (mlx5) driver's failed work completion
    ),
    # --- infrastructure: node and storage -------------------------------------------------------
    _rule(
        "node-failure",
        R.NODE_FAILURE,
        r"\bNODE_FAIL\b|\bDUE TO NODE FAIL(?:URE)?\b|\bNode failure on\b|\bnode \S+ (?:is )?not responding\b"
        r"|\bnode \S+ (?:became )?NotReady\b|\bbecause its node has died\b",
    ),
    _rule(
        "storage",
        R.S3_STORAGE_ERROR,
        r"\bbotocore\.exceptions\.\w+|\bS3(?:Upload|Download)?(?:Error|Exception)\b"
        r"|\bAn error occurred \((?:SlowDown|InternalError|ServiceUnavailable|RequestTimeout|503)\)"
        r"|\[Errno 5\] Input/output error\b|\bInput/output error\b|\bNo space left on device\b|\bStale file handle\b"
        r"|\[Errno 121\] Remote I/O error\b|\bDisk quota exceeded\b",
    ),
    # --- framework --------------------------------------------------------------------------------
    _rule(
        "dataloader-killed",
        R.DATALOADER_KILLED,
        r"\bDataLoader worker \(pid(?:\(s\))?[^)]*\) (?:is killed by signal|exited unexpectedly)"
        r"|\bUnexpected bus error encountered in worker\b|\binsufficient shared memory \(shm\)",
    ),
    # the kernel or a cgroup OOM killer, or a process killed by SIGKILL (-9 / 137, a bare `Killed`):
    # host memory (logs.md §2.1b, HostOutOfMemory); a launcher closing its other workers with a signal
    # is the cascade, not this (`closing signal`)
    _rule(
        "host-oom",
        R.HOST_OUT_OF_MEMORY,
        r"\bOut of memory: Killed process\b|\boom-kill(?:er)?\b|\binvoked oom-killer\b|\bMemory cgroup out of memory\b"
        r"|\bOOMKilled\b|\bdetected \d+ oom[_ ]kill events?\b|\bexceeded (?:its )?memory limit\b",
        component=Component.MEMORY,
    ),
    _rule(
        "sigkill",
        R.HOST_OUT_OF_MEMORY,
        r"^Killed\s*$|\bexit ?code\s*[:=]?\s*-9\b|\bexit(?:s|ed)? with (?:return )?code\s*[:=]?\s*-9\b"
        r"|\bexit(?:ed with)? (?:code|status)\s*[:=]?\s*137\b|\bWTERMSIG 9\b|\bSignals\.SIGKILL\b|\bterminated with signal (?:9|SIGKILL)\b"
        r"|^(?!.*\bclosing signal\b).*\b(?:killed by|received|got) (?:signal:? ?)?(?:9|SIGKILL)\b",
        component=Component.MEMORY,
    ),
    # the launcher itself told to stop (SIGTERM / SIGHUP), a job preempted, a peer or node that
    # stopped answering: the node's side (logs.md §2.1b), low confidence without more
    _rule(
        "launcher-signal",
        R.NODE_FAILURE,
        r"\bReceived (?:1|15|SIGHUP|SIGTERM) death signal\b|\bSignalException: Process \d+ got signal: ?(?:1|15)\b"
        r"|\bDUE TO PREEMPTION\b|\bhas been marked dead\b|\bnot answering\b"
        r"|\b(?:node|worker|peer|host) \S+ (?:died|is dead|is unreachable|was lost)\b|\blost connection to (?:the )?(?:node|worker|peer|host)\b",
    ),
    _rule(
        "model-loading",
        R.MODEL_LOADING_ERROR,
        r"\bError\(s\) in loading state_dict\b|\bUnable to load weights\b|\bCan't load (?:the )?(?:model|tokenizer|config|weights)\b"
        r"|\bPytorchStreamReader failed\b|\bSafetensorError\b|\bis not a valid model identifier\b"
        r"|\bdoes not appear to have a file named\b|\b(?:model|checkpoint) (?:loading|load) failed\b"
        r"|\bUnpicklingError\b|\binvalid load key\b",
    ),
    _rule(
        "dataset-loading",
        R.DATASET_LOADING_ERROR,
        r"\bDataset(?:Generation|NotFound)Error\b|\bCouldn't find a dataset script\b|\bdatasets\.exceptions\.\w+"
        r"|\b(?:Failed to|Unable to|Error) load(?:ing)? dataset\b|\bpyarrow\.lib\.Arrow\w+|\bArrowInvalid\b",
    ),
    _rule("nan-loss", R.RUNTIME_ERROR, r"\bloss (?:is|became) nan\b|\bNaN (?:or Inf )?(?:found in|detected in) (?:the )?loss\b"),
    # NCCL refusing how it was called (two ranks on one GPU): the launch or the program, never the hardware
    _rule("nccl-invalid-usage", R.RUNTIME_ERROR, r"\bncclInvalidUsage\b|\bncclInvalidArgument\b|\bDuplicate GPU detected\b"),
    # --- exception classes that *are* Acme reasons ------------------------------------------------
    _rule("attribute-error", R.ATTRIBUTE_ERROR, _EXC + r"AttributeError\b", flags=0),
    _rule("assertion-error", R.ASSERTION_ERROR, _EXC + r"AssertionError\b", flags=0),
    _rule("value-error", R.VALUE_ERROR, _EXC + r"ValueError\b", flags=0),
    _rule("zero-division", R.ZERO_DIVISION_ERROR, _EXC + r"ZeroDivisionError\b", flags=0),
    _rule("file-not-found", R.FILE_NOT_FOUND_ERROR, _EXC + r"FileNotFoundError\b|\[Errno 2\] No such file or directory", flags=0),
    _rule("permission", R.PERMISSION_ERROR, _EXC + r"PermissionError\b|\[Errno 13\] Permission denied", flags=0),
    _rule("type-error", R.TYPE_ERROR, _EXC + r"TypeError\b", flags=0),
    _rule("key-error", R.KEY_ERROR, _EXC + r"KeyError\b", flags=0),
    _rule("import-error", R.IMPORT_ERROR, _EXC + r"(?:ImportError|ModuleNotFoundError)\b", flags=0),
    _rule("index-error", R.INDEX_ERROR, _EXC + r"IndexError\b", flags=0),
    _rule("name-error", R.NAME_ERROR, _EXC + r"(?:NameError|UnboundLocalError)\b", flags=0),
    _rule("syntax-error", R.SYNTAX_ERROR, _EXC + r"(?:SyntaxError|IndentationError|TabError)\b", flags=0),
    _rule("called-process", R.CALLED_PROCESS_ERROR, _EXC + r"CalledProcessError\b|\breturned non-zero exit status\b", flags=0),
    _rule(
        "argument-error",
        R.ARGUMENT_ERROR,
        _EXC + r"ArgumentError\b|^\S+: error: (?:unrecognized arguments|the following arguments are required|argument )",
        flags=0,
    ),
    # --- generic containers: the class alone does not say why -------------------------------------
    _rule("os-error", R.OS_ERROR, _EXC + r"(?:OSError|IOError)\b", specific=False, flags=0),
    _rule("runtime-error", R.RUNTIME_ERROR, _EXC + r"(?:RuntimeError|AcceleratorError)\b", specific=False, flags=0),
    _rule("segfault", R.RUNTIME_ERROR, r"\bSegmentation fault\b|\bcore dumped\b|\bSIGSEGV\b", specific=False),
)

# Cheap pre-filter: a line none of these words occurs in (lower-cased) cannot match any default
# rule. Substring tests, not one IGNORECASE regex alternation: ~50x faster on long lines.
_PREFILTER_WORDS: tuple[str, ...] = (
    "xid", "ecc", "nvlink", "fallen", "assert", "cuda", "cublas", "cudnn", "nccl", "net/ib", "net_ib", "vendor err",
    "ibv", "network", "route", "link", "connection", "refused", "reset", "socket", "address", "node", "botocore",
    "s3", "errno", "space left", "stale", "dataloader", "bus error", "shm", "memory", "oom", "load", "dataset", "nan",
    "error", "exception", "segmentation", "core dumped", "sigsegv", "exit status", "timed out", "timeout",
    "does not appear", "not a valid", "notready", "not responding", "nvrm", "device handle", "quota",
    "watchdog", "duplicate gpu", "retries", "service not known", "name resolution", "killed", "exitcode", "exit code",
    "exited with", "signal", "sigkill", "wtermsig", "preemption", "marked dead", "not answering", "lost connection", "died",
    "is dead", "was lost", "oomkilled", "memory limit",
)  # fmt: skip


def _may_match(text: str) -> bool:
    low = text.lower()
    return any(word in low for word in _PREFILTER_WORDS)


@dataclass(frozen=True, slots=True)
class RuleVerdict:
    """What the rules say: the reason, its category and component, and the evidence line."""

    reason: FailureReason
    category: FailureCategory
    component: Component
    rule: str
    specific: bool
    evidence: str
    offset: int  # evidence line index relative to the located line (0: the located line itself)


class RulesClassifier:
    """Signature rules over the located line and the traceback or block it opens."""

    def __init__(
        self, rules: Sequence[SignatureRule] = DEFAULT_RULES, lookahead: int = 5, max_traceback: int = 120
    ) -> None:
        self.rules = tuple(rules)
        self.lookahead = lookahead
        self.max_traceback = max_traceback
        self._prefilter = rules is DEFAULT_RULES

    def match(self, text: str) -> SignatureRule | None:
        """The first rule matching one cleaned line (`clean_line(...).text`), or None."""
        if self._prefilter and not _may_match(text):
            return None
        stripped = text.strip()
        for rule in self.rules:
            if rule.pattern.search(stripped):
                return rule
        return None

    def reasons_in(self, lines: Sequence[str | bytes]) -> dict[FailureReason, str]:
        """Every reason some rule finds anywhere in `lines`, with the first line (cleaned) that
        shows it: the grounding check for LLM answers, and the line a grounded answer quotes.
        Text addressed to a model (`looks_like_instruction`) grounds nothing."""
        found: dict[FailureReason, str] = {}
        for line in lines:
            stripped = clean_line(line).text.strip()
            if (self._prefilter and not _may_match(stripped)) or looks_like_instruction(stripped):
                continue
            for rule in self.rules:
                if rule.reason not in found and rule.pattern.search(stripped):
                    found[rule.reason] = stripped
        return found

    def classify(self, lines: Sequence[str | bytes], focus: int = 0) -> RuleVerdict | None:
        """Classify the failure that starts at `lines[focus]`.

        Candidates: the focus line; if it opens a Python traceback, that traceback's first
        exception line (chained exceptions print the root first) and nothing after it: later
        lines are the cascade (other ranks' NCCL timeouts are a symptom, logs.md §2.3);
        otherwise up to `lookahead` following lines (the details of a one-line error banner).
        The first *specific* match wins; failing that, the first generic one; else None.
        """
        cleaned = [clean_line(line) for line in lines]
        if not 0 <= focus < len(cleaned):
            return None
        candidates = [focus]
        excs = traceback_exceptions(cleaned, focus, self.max_traceback)
        if excs:
            candidates.extend(excs)  # the root exception first, chained ones after
        else:
            candidates.extend(range(focus + 1, min(len(cleaned), focus + 1 + self.lookahead)))
        generic: RuleVerdict | None = None
        seen: set[int] = set()
        for i in candidates:
            if i in seen:
                continue
            seen.add(i)
            text = cleaned[i].text
            rule = self.match(text)
            if rule is None:
                continue
            verdict = RuleVerdict(
                rule.reason, rule.category, rule.faulty_component, rule.name, rule.specific, text.strip(), i - focus
            )
            if rule.specific:
                return self._refine(cleaned, i, verdict, focus)
            generic = generic or verdict
        return generic

    def _refine(self, cleaned: Sequence[CleanLine], at: int, verdict: RuleVerdict, focus: int) -> RuleVerdict:
        """NCCL wraps the real cause: `ncclRemoteError: ...` then `Last error:` and the line that
        names it. When that line is a hardware-level signature (`NET/IB : Got completion ...
        vendor err 129`, a CUDA/ECC/NVLink error) it is the cause; a socket reset there is just
        how "the remote process exited" looks, so the NCCL reason stays."""
        if verdict.rule not in _NCCL_WRAPPERS:
            return verdict
        for j in range(at + 1, min(len(cleaned), at + 4)):
            if cleaned[j].source != cleaned[at].source:
                continue
            if _LAST_ERROR.match(cleaned[j].text) and j + 1 < len(cleaned):
                detail = cleaned[j + 1].text
                rule = self.match(detail)
                if rule is not None and rule.name in _HARDWARE_DETAIL and rule.reason is not verdict.reason:
                    return RuleVerdict(rule.reason, rule.category, rule.faulty_component, rule.name, True,
                                       detail.strip(), j + 1 - focus)  # fmt: skip
                break
        return verdict


def root_cause_text(lines: Sequence[str | bytes], focus: int, verdict: RuleVerdict | None = None) -> str:
    """The line that names the failure: the rules' evidence, else the exception ending the
    traceback opened at `focus`, else the focus line. (`Traceback (most recent call last):`
    is the first line of every Python failure, so it says nothing by itself.)"""
    if verdict is not None:
        return verdict.evidence
    cleaned = [clean_line(line) for line in lines]
    exc = traceback_exception(cleaned, focus, 120)
    return cleaned[exc if exc is not None else focus].text.strip()


@dataclass(frozen=True, slots=True)
class CleanLine:
    """A normalised line with host labels, record prefixes (timestamps, levels, pids, uuids) and
    markdown also stripped. `source` names the launcher prefixes stripped (the stream the line
    came from); `level` the record level a prefix stated (`warning`, `info`, ...), if any."""

    text: str
    source: str | None
    binary: bool = False
    level: str | None = None


# `dgx15: `, `gpu-a100-012: `, `10.0.0.3: ` (pdsh / DeepSpeed launcher host labels that
# `normalise_line` keeps because a host name is not a rank prefix): a token with a digit, then
# ': '. Not an exception class (`S3Error: ...`), which also ends in a colon.
_HOST_PREFIX = re.compile(r"^(?:[A-Za-z][\w-]*\d[\w.-]*|\d{1,3}(?:\.\d{1,3}){3}): +")
# A digit-free host label (`localhost: `, `trainer-a: `, `host: `) is indistinguishable from a
# `key: value` field (`errors: 0`, `warning: ...`), so it is stripped only in front of what a
# launcher forwards from a crashing rank: a traceback header, frame or exception line, or another
# launcher prefix. Ray's `(RayTrainWorker pid=123, ip=10.0.0.1) ` and `[worker-3] ` are labels too.
_BARE_HOST_PREFIX = re.compile(r"^[A-Za-z][\w-]*(?:\.[A-Za-z][\w-]*)*: +")
_OTHER_PREFIX = re.compile(r"^(?:\((?:\w+ )?pid=\d+(?:, ip=[\d.]+)?\)|\[(?:worker|node|host|gpu)[-_]?\d+\]:?) +")
_EXCEPTIONISH = re.compile(r"(?:Error|Exception|Warning|Interrupt|Exit|Iteration)$")
_NOT_HOSTS = frozenset({"error", "warning", "warn", "info", "debug", "note", "fatal", "critical", "exception",
                        "traceback", "caused", "reason", "message", "msg", "details", "usage", "hint",
                        "system", "assistant", "user", "kernel"})  # fmt: skip
_RANK_TAG = re.compile(r"^\[(?:rank|default)\d+\]:$")


def _host_label(text: str) -> re.Match[str] | None:
    """The host label `text` starts with, or None (see `_HOST_PREFIX`, `_BARE_HOST_PREFIX`)."""
    m = _HOST_PREFIX.match(text) or _OTHER_PREFIX.match(text)
    if m is not None:
        return None if _EXCEPTIONISH.search(m.group(0)[:-2].rstrip(": ")) else m
    m = _BARE_HOST_PREFIX.match(text)
    if m is None:
        return None
    label = m.group(0).rstrip(": ")
    if _EXCEPTIONISH.search(label) or label.lower() in _NOT_HOSTS or label.endswith((".py", ".sh")):
        return None
    rest = text[m.end() :]
    forwarded = (_TB_HEADER.match(rest) or _TB_FRAME.match(rest) or _TB_EXCEPTION_STRICT.match(rest)
                 or strip_rank_prefix(rest)[1] is not None)  # fmt: skip
    return m if forwarded else None


def _source(parts: list[str]) -> str | None:
    """The stream a line came from. Two rank tags in a row (`[rank1]:[rank0]: ...`) are two ranks
    writing at once: the text is the inner one's, so only the last rank tag names the source."""
    tokens = " ".join(parts).split()
    ranks = [i for i, t in enumerate(tokens) if _RANK_TAG.match(t)]
    if len(ranks) > 1:
        tokens = [t for i, t in enumerate(tokens) if i not in ranks[:-1]]
    return " ".join(tokens) or None


def clean_line(raw: str | bytes) -> CleanLine:
    """`normalise_line`, then host labels, rank prefixes, record prefixes (timestamps, levels,
    pids, uuids) and markdown, in whatever order they nest (at most four layers)."""
    line = normalise_line(raw)
    if line.binary:
        return CleanLine(line.text, line.source, True)
    text, sources = line.text, [line.source] if line.source else []
    level: str | None = None
    for _ in range(4):
        changed = False
        seen = see_through(text)
        if seen.decorated:
            text, level, changed = seen.text, seen.level or level, True
            text, rank = strip_rank_prefix(text)
            if rank is not None:
                sources.append(rank)
        m = _host_label(text)
        if m is not None:
            sources.append(m.group(0).strip())
            text, rank = strip_rank_prefix(text[m.end() :])
            if rank is not None:
                sources.append(rank)
            changed = True
        if not changed:
            break
    return CleanLine(text, _source(sources), False, level)


_NCCL_WRAPPERS = frozenset({"nccl-remote", "nccl-system", "nccl-unhandled-cuda", "nccl-watchdog", "nccl-timeout"})
_HARDWARE_DETAIL = frozenset({"ib-error", "xid-ecc", "ecc", "xid-nvlink", "nvlink", "xid-off-bus", "cuda-error"})
_LAST_ERROR = re.compile(r"^\s*Last error:\s*$")
# `Original Traceback (most recent call last):` is how torch re-raises a DataLoader worker's traceback
_TB_HEADER = re.compile(r"^\s*(?:Original )?Traceback \(most recent call last\):")
# IPython / Jupyter: `KeyError                                  Traceback (most recent call last)`; its
# frames are source excerpts (`----> 12 ...`), and it ends with the exception line `KeyError: 'x'`
_IPY_HEADER = re.compile(r"^\s*(?P<exc>(?:[A-Za-z_]\w*\.)*[A-Z]\w*)\s{2,}Traceback \(most recent call last\)\s*$")
# An exception whose message is another traceback: a worker's failure re-raised in the main
# process (`OSError: Traceback (most recent call last):`, `KeyError: Caught KeyError in DataLoader
# worker process 0.`, DataParallel's `... in replica 1 on device 1.`). The root is the inner one.
_TB_RERAISE = re.compile(
    r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*: (?:Traceback \(most recent call last\):|Caught \w+ in (?:DataLoader worker process|replica) \d+)"
)
_TB_FRAME = re.compile(r'^\s*File "[^"]*", line \d+')
_TB_CHAIN = re.compile(r"^\s*(?:During handling of the above exception|The above exception was the direct cause)")
_TB_CARET = re.compile(r"^\s*[\^~]+\s*$")
# `KeyError: 'x'`, `torch.OutOfMemoryError: CUDA ...`, `http.client.RemoteDisconnected: ...`,
# `KeyboardInterrupt`: a (dotted) name whose last part is capitalised, then ': ' or the end.
_TB_EXCEPTION = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?::\s|:?\s*$)")
# An exception line proper (`KeyError: 'x'`, `torch.OutOfMemoryError: ...`), not any `Word: value`.
_TB_EXCEPTION_STRICT = re.compile(
    r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Fault|Failure)\b:?"
    # lower-case classes exist only module-qualified: `socket.gaierror: ...`, `socket.timeout: timed out`
    r"|^(?:[A-Za-z_]\w*\.)+(?:[a-z]\w*)?(?:error|timeout)(?::\s(?!\s*[-+]?\d[\d.eE+-]*\s*$)|:?\s*$)"
)


TB_FRAME, TB_CARET, TB_EXCEPTION = _TB_FRAME, _TB_CARET, _TB_EXCEPTION


def is_traceback_header(text: str) -> bool:
    """A Python traceback's first line (plain, torch's `Original Traceback`, or IPython's)."""
    return _TB_HEADER.match(text) is not None or _IPY_HEADER.match(text) is not None


def is_reraised(text: str) -> bool:
    """An exception line whose message is another traceback (see `_TB_RERAISE`)."""
    return _TB_RERAISE.match(text) is not None


def is_exception_line(text: str) -> bool:
    """`KeyError: 'x'`, `torch.OutOfMemoryError: ...`, a bare `KeyboardInterrupt`; not a log
    record that happens to start with a capitalised word and a colon (`INFO: ...`, `SYSTEM: ...`,
    `Note: ...`), which other ranks and other writers print in the middle of a traceback."""
    if _TB_EXCEPTION_STRICT.match(text):
        return True
    m = _TB_EXCEPTION.match(text)
    if m is None:
        return False
    name = re.split(r"[:\s]", text, maxsplit=1)[0].rsplit(".", 1)[-1]
    return not name.isupper() and name.lower() not in _NOT_HOSTS and name.lower() not in _NOT_EXCEPTIONS


_NOT_EXCEPTIONS = frozenset({"note", "hint", "epoch", "step", "iteration", "loss", "warning", "tip", "see", "output"})


def traceback_exceptions(lines: Sequence[CleanLine], focus: int, limit: int = 120) -> list[int]:
    """Indices of the exception lines of the traceback opened at (or just after) `focus`: the
    first (the root), then those of chained tracebacks (`During handling of the above exception`,
    `The above exception was the direct cause`), in order.

    Robust to what launchers and readers do to tracebacks: lines of other ranks/hosts
    interleaved (skipped by `source`), foreign records of the same stream in between (an
    `INFO ...` line, text addressed to a model: skipped, never taken for the exception), a
    traceback indented as a whole (markdown code block: indentation counts from the header's),
    and Slurm's `--label` prefix eating the indentation of frames and code (so a code line is
    recognised as the line right after a frame, not by its indentation).

    A re-raised worker failure (`is_reraised`) is followed into the traceback it carries: the
    inner exception is the root (the wrapper itself when the inner one was cut off). An IPython
    traceback ends with the exception its header names.
    """
    start = next(
        (i for i in range(focus, min(len(lines), focus + 3))
         if _TB_HEADER.match(lines[i].text) or _TB_FRAME.match(lines[i].text)
         or _IPY_HEADER.match(lines[i].text) or _TB_RERAISE.match(lines[i].text)),
        None,
    )  # fmt: skip
    if start is None:
        return []
    found: list[int] = []
    head = lines[start]
    ipy = _IPY_HEADER.match(head.text)
    if ipy is not None:
        return _ipython_exception(lines, start, ipy.group("exc"), limit)
    reraised = start if _TB_RERAISE.match(head.text) else None
    source, level = head.source, head.level
    base = len(head.text) - len(head.text.lstrip()) if _TB_HEADER.match(head.text) else 0
    after_frame = _TB_FRAME.match(head.text) is not None
    chained = True  # looking for the exception of the current (first or chained) traceback
    for i in range(start + 1, min(len(lines), start + limit)):
        line = lines[i]
        text = line.text
        if base and text[:base].isspace():
            text = text[base:]
        if line.source != source or not text.strip() or _TB_CARET.match(text):
            continue
        if line.level != level and line.level in QUIET_LEVELS:
            continue  # another writer's record in the middle of this traceback
        if looks_like_instruction(text):
            continue
        if _TB_CHAIN.match(text):
            chained = True
            continue
        if _TB_HEADER.match(text) or _TB_FRAME.match(text):
            if not chained:
                break  # a new, unchained traceback: another failure (the cascade)
            after_frame = _TB_FRAME.match(text) is not None
            continue
        exception = is_exception_line(text)
        if after_frame and not exception:
            after_frame = False  # the code line printed under a frame
            continue
        after_frame = False
        if text[:1].isspace():
            continue  # more code or a caret marker under a frame
        if exception and chained and _TB_RERAISE.match(text):
            reraised = i  # the traceback it carries follows: its exception is the root
            continue
        if exception and chained:
            found.append(i)
            chained = False
        elif found:
            break  # the traceback is over
    if not found and reraised is not None:
        return [reraised]
    return found


def _ipython_exception(lines: Sequence[CleanLine], start: int, exc: str, limit: int) -> list[int]:
    """The line `exc: ...` (unindented, same stream) closing an IPython traceback opened at `start`."""
    name = exc.rsplit(".", 1)[-1]
    source = lines[start].source
    for i in range(start + 1, min(len(lines), start + limit)):
        text = lines[i].text
        if lines[i].source != source or text[:1].isspace() or not is_exception_line(text):
            continue
        if re.split(r"[:\s]", text, maxsplit=1)[0].rsplit(".", 1)[-1] == name:
            return [i]
    return []


def traceback_exception(lines: Sequence[CleanLine], focus: int, limit: int = 120) -> int | None:
    """The root exception line of the traceback opened at `focus` (see `traceback_exceptions`)."""
    found = traceback_exceptions(lines, focus, limit)
    return found[0] if found else None
