"""Failure Locator (spec §4.1): the first root-cause error line of a huge log, by binary search.

A failed job's log is roughly "normal lines, then error lines": the first real error sets off a
cascade (NCCL timeouts on the other ranks, the launcher's `ChildFailedError`, `srun: error`)
that lasts until the log ends. The search predicate is about *prefixes*:

    P(k) = "the failure has started within lines[0:k]"

which is monotone whatever is interleaved after the fault. Evaluating P exactly means reading
the whole prefix (a dirty probe's first hit would already be the answer: that is the linear
baseline). So P(k) is evaluated on the end of the prefix: `window_chunks` chunks ending at
chunk k (default 2 × 256 lines) are asked whether they hold a failure line. Under the cascade
assumption (after the fault, no run of `window_chunks` whole chunks is free of failure lines)
this equals P, and normal lines interleaved into the cascade - other ranks still printing
progress - are tolerated up to that run length. Binary search finds the first failing chunk;
the failing line inside it is already known from the probe. A short look-back
(`lookback_chunks` further chunks before the window) catches a longer quiet gap after the
root cause and restarts the search to its left.

A line "is a failure line" (`FailureLineJudge`) when it is not benign (retries, `errors=0`
counters, `validation error: 0.12` metrics, DataLoader teardown noise, NCCL INFO, argument dumps;
a traceback the program announced and survived, e.g. `WARNING:mlflow... will retry:` followed by
a traceback; text addressed to a model), is not a warning unless it carries a high-precision
signature (drivers and NCCL print real root causes at WARNING level; a deprecation notice
carries none), and either matches a failure signature from `rules`, opens a Python traceback, or
is labelled ERROR by the embedding classifier with enough score and margin. Lines are read
through what surrounds them (`rules.clean_line`, `cleaning`): launcher rank prefixes and host
labels, timestamps, levels, pids, uuids, ANSI and markdown; a physical line holding two ranks'
output is judged part by part.

The root-cause line (`root_cause_lines`) is then the first line that states the cause: a
traceback's exception line (foreign records inside it skipped), not its header; and not the
cascade (`ChildFailedError`, `exitcode: 1`, `srun: error: ... Exited with exit code 1`) when a
failure naming itself follows it.

The judge is a cascade, cheapest first: a raw-byte keyword gate (most lines of a training log
are progress and chatter, settled with no decoding), the benign filter, the signature rules and
traceback headers; only the keyword lines none of these settles go to the embedding classifier,
in one batch per probe (embedding unseen templates is what a probe costs: about 0.1 s each on a
busy 2-core CPU, against microseconds for the rest).

Cost: the file is read (`os.pread`, never mmap: see `LogIndex`) and indexed once into line
offsets (numpy, no Python loop over lines); each probe reads and judges only its chunk. One *classifier call* is one judged chunk
(one `FailureLineJudge.flags`, at most one `classify_lines` batch); a 1M-line log takes about
2·log2(lines/chunk) calls. Baselines in the same class: `locate_linear` (classify every chunk from the start until
the first failure) and `locate_tail` (the first failure within the last 500 lines).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Literal

import numpy as np
from opentelemetry.trace import Span, Tracer

from schedmate.agents.failure.cleaning import (
    WARNING_LEVELS,
    has_interleaving,
    looks_like_instruction,
    split_interleaved,
)
from schedmate.agents.failure.rules import (
    TB_CARET as _TB_CARET_RE,
)
from schedmate.agents.failure.rules import (
    TB_FRAME as _TB_FRAME_RE,
)
from schedmate.agents.failure.rules import (
    CleanLine,
    RulesClassifier,
    clean_line,
    is_exception_line,
    is_reraised,
    is_traceback_header,
    traceback_exceptions,
)
from schedmate.embeddings.classifier import Category, LineClassifier, LineLabel
from schedmate.embeddings.logtext import DEFAULT_MAX_CHARS, normalise_line
from schedmate.embeddings.templates import mask_variables
from schedmate.logfile import open_regular, pread_exact
from schedmate.tracing import get_tracer

Method = Literal["binary", "linear", "tail"]
_INDEX_BLOCK = 1 << 22  # bytes read (one reused buffer, cache-sized) and scanned per numpy pass while indexing
_LINE_CAP = 4 * DEFAULT_MAX_CHARS  # bytes read per line: what normalise_line keeps anyway
DEFAULT_MAX_INDEX_LINES = 32_000_000  # line offsets an index holds (8 bytes each: 256 MB at most)
_LEAD = 3  # context lines read before a chunk (not classified): a warning that excuses a traceback
_RULES = RulesClassifier()


@dataclass(frozen=True, slots=True)
class Located:
    """The first failure. `line_no` is the root-cause line, the one that names the failure (for a
    Python traceback its root exception line, not the `Traceback (most recent call last):`
    header); `block_line` is where the failure block starts (that header; else `line_no`).
    Both are 0-based physical line indices (editor line − 1)."""

    line_no: int
    text: str
    calls: int
    method: Method
    lines_classified: int = 0
    total_lines: int = 0
    block_line: int | None = None

    @property
    def block(self) -> int:
        return self.line_no if self.block_line is None else self.block_line


# The launcher's and scheduler's view of a failure that happened earlier or elsewhere: torchrun's
# `ChildFailedError` block (`exitcode: 1`, `Root Cause (first observed failure)`), `srun: error:
# ... Exited with exit code`, `closing signal SIGTERM`, a launcher's `CalledProcessError` on the
# training command. Never the root cause while a real one follows it closely.
_CASCADE = re.compile(
    r"\bChildFailedError\b|\bRoot Cause \(first observed failure\)|\bexitcode\s*:\s*-?\d+|\bfailed \(exitcode: -?\d+\)"
    r"|^srun: error:|\bExited with exit code\b|\bclosing signal SIG\w+|\bSignal \d+ \(SIG\w+\) received by PID\b"
    r"|\bmpirun noticed that process\b|\bprocess(?:es)? (?:exited|terminated) with (?:exit code|signal)\b"
    r"|\bProcessExitedException\b|\bKilling subprocess\b|\bTo enable traceback see\b|^error_file:"
    r"|\bCalledProcessError: Command '\[?'?[^']*\b(?:python[\d.]*|torchrun|deepspeed|accelerate|srun|mpirun)\b"
    r"|\bJob step aborted\b|\bjob exited with (?:exit )?code\b|^Error executing job with overrides\b"
    r"|\bwandb: (?:ERROR )?(?:Abnormal program exit|Run \w+ errored)",
    re.IGNORECASE,
)
_CASCADE_LOOKAHEAD = 120  # lines after a cascade line searched for the failure it reports
_WEAK_LOOKAHEAD = 30  # lines after an error-like line searched for a failure naming itself


# Rules whose match is only a signal or an exit code (`exitcode: -9`, `Killed`, SIGTERM to the
# launcher): the failure when nothing else follows, the report of one when a failure follows closely.
SIGNAL_ONLY = frozenset({"sigkill", "launcher-signal"})


def _signal_only(text: str, rules: RulesClassifier) -> bool:
    rule = rules.match(text)
    return rule is not None and rule.name in SIGNAL_ONLY


def is_signal(text: str, rules: RulesClassifier | None = None) -> bool:
    """Only a kill or a signal (`exitcode: -9`, `Killed`): the cause when nothing else follows."""
    return _signal_only(text, rules or _RULES)


def is_cascade(text: str, rules: RulesClassifier | None = None) -> bool:
    """A launcher/scheduler line reporting that something else failed (see `_CASCADE`); never
    one carrying a high-precision signature (`srun: error: Node failure on dgx31` is the cause)."""
    rule = (rules or _RULES).match(text)
    if rule is not None and rule.name in SIGNAL_ONLY:
        return True  # a kill or a signal the launcher reports: the cause unless a failure follows
    if _CASCADE.search(text) is None:
        return False
    return rule is None or not rule.high_precision


def expand_lines(raws: Sequence[bytes | str]) -> tuple[list[CleanLine], list[int]]:
    """Cleaned logical lines of `raws` (a physical line holding two ranks' output gives two) and,
    for each, the index of the physical line it came from."""
    cleaned: list[CleanLine] = []
    owner: list[int] = []
    for i, raw in enumerate(raws):
        parts = split_interleaved(raw) if has_interleaving(raw) else [raw]
        for part in parts:
            cleaned.append(clean_line(part))
            owner.append(i)
    return cleaned, owner


def _names_failure(line: CleanLine, rules: RulesClassifier) -> bool:
    text = line.text
    if line.binary or not text.strip() or looks_like_instruction(text):
        return False
    return is_traceback_header(text) or is_exception_line(text) or rules.match(text) is not None


def root_cause_lines(
    index: LogIndex, first: int, limit: int = _CASCADE_LOOKAHEAD, rules: RulesClassifier | None = None
) -> tuple[int, int]:
    """(block start, root-cause line) of the failure whose first line is `first`.

    A traceback header or frame leads to the traceback's root exception (same launcher source;
    foreign records and chained causes skipped). When what was found is the cascade (a launcher
    or scheduler line, a launcher's wrapper exception) and a failure that is not follows within
    `limit` lines, that one is the root cause: children's tracebacks are often flushed after
    the launcher already reported them. Likewise (within `_WEAK_LOOKAHEAD` lines) when the line
    names no failure itself (no traceback, exception or signature: the embedding classifier
    found it error-like). Reads at most `limit` lines."""
    rules = rules or _RULES
    cleaned, owner = expand_lines(index.lines(first, first + limit))
    if not cleaned:
        return first, first
    block, root = _failure_at(cleaned, 0, limit, rules)
    cascade = is_cascade(cleaned[root].text, rules) or is_cascade(cleaned[block].text, rules)
    # a line only the embedding classifier found error-like (prose: "Training crashes after a
    # few steps:") yields to a failure that names itself right after it
    weak = not cascade and not _names_failure(cleaned[root], rules)
    # a kill or signal only yields to a failure that names its cause (an exception or a signature),
    # not to the launcher's own traceback header whose exception was cut off
    signal = cascade and _signal_only(cleaned[root].text, rules)
    if cascade or weak:
        for j in range(root + 1, min(len(cleaned), root + 1 + (limit if cascade else _WEAK_LOOKAHEAD))):
            if _names_failure(cleaned[j], rules) and not is_cascade(cleaned[j].text, rules):
                b, r = _failure_at(cleaned, j, limit, rules)
                named = rules.match(cleaned[r].text) is not None or is_exception_line(cleaned[r].text)
                if not is_cascade(cleaned[r].text, rules) and (named or not signal):
                    block, root = b, r
                    break
        else:
            # nothing but the launcher's report follows: the kill or signal it reports is the cause
            # (`exitcode: -9` under `Root Cause (first observed failure)`)
            if (cascade and not signal) or weak:
                sig = next((j for j in range(root + 1, min(len(cleaned), root + 1 + (limit if cascade else _WEAK_LOOKAHEAD)))
                            if _signal_only(cleaned[j].text, rules)), None)  # fmt: skip
                if sig is not None:
                    block = root = sig
    echo = first_echo(index, first + owner[root], cleaned[root], rules)
    if echo is not None:
        return echo, echo
    return first + owner[block], first + owner[root]


_ECHO_LOOKBACK = 30  # lines before the root cause searched for an earlier print of its message
_ECHO_MIN_CHARS = 20  # shorter messages (`KeyError: 0`) are too common to call a repeat an echo


def _message(text: str) -> str:
    """What a failure line says, without its exception class (`ValueError: bad x` → `bad x`)."""
    text = text.strip()
    if is_exception_line(text) and ": " in text:
        text = text.split(": ", 1)[1]
    return mask_variables(text).strip()


def first_echo(index: LogIndex, root: int, line: CleanLine, rules: RulesClassifier | None = None) -> int | None:
    """The earliest of the `_ECHO_LOOKBACK` lines before `root` printing the same message, or None.

    Programs often report a failure before raising it (`logger.error(exc)`, a warning that
    repeats until a retry budget runs out, then the error record): the first print is where the
    failure showed, and the exception that ends the run only repeats it. Echoes are log records
    or bare prints of the message (same text once numbers, addresses and ids are masked), never
    another exception line (a handled traceback's) or a launcher's report."""
    message = _message(line.text)
    if len(message) < _ECHO_MIN_CHARS or root == 0:
        return None
    rules = rules or _RULES
    a = max(0, root - _ECHO_LOOKBACK)
    earlier = [clean_line(raw) for raw in index.lines(a, root)]
    for j, c in enumerate(earlier):
        text = c.text.strip()
        if c.binary or is_exception_line(text) or is_traceback_header(text) or is_cascade(text, rules):
            continue
        if mask_variables(text).strip() == message or _message(text) == message:
            return a + j
    return None


def _failure_at(cleaned: list[CleanLine], i: int, limit: int, rules: RulesClassifier) -> tuple[int, int]:
    """(block, root) of the failure starting at logical line `i`: on an interleaved line the
    segment that names a failure; a traceback leads to its root exception."""
    if not _names_failure(cleaned[i], rules):
        i = next((j for j in range(i + 1, min(len(cleaned), i + 3)) if _names_failure(cleaned[j], rules)), i)
    text = cleaned[i].text
    if is_traceback_header(text) or _TB_FRAME_RE.match(text) or is_reraised(text):
        found = traceback_exceptions(cleaned, i, limit)
        return i, (found[0] if found else i)
    return i, i


def root_cause_line(index: LogIndex, first: int, limit: int = _CASCADE_LOOKAHEAD) -> int:
    """The line naming the failure whose first line is `first` (see `root_cause_lines`)."""
    return root_cause_lines(index, first, limit)[1]


@dataclass(frozen=True, slots=True)
class ClassificationView:
    """The window the classifiers read, one logical line per entry (two ranks' output glued on
    one physical line is split), with the failure's block start and root-cause line in it."""

    lines: list[str]
    block: int
    root: int
    start: int  # physical line number of the window's first line


def classification_view(index: LogIndex, located: Located, lines: int = 200) -> ClassificationView:
    """`classification_window` with interleaved lines split and the root-cause line located."""
    window, block_phys = classification_window(index, located, lines)
    start = located.block - block_phys
    out: list[str] = []
    first_seg: list[int] = []
    for raw in window:
        first_seg.append(len(out))
        out.extend(split_interleaved(raw) if has_interleaving(raw) else [raw])
    first_seg.append(len(out))

    def pick(phys: int) -> int:
        segs = range(first_seg[phys], first_seg[phys + 1])
        return next((j for j in segs if _names_failure(clean_line(out[j]), _RULES)), segs[0] if segs else 0)

    return ClassificationView(out, pick(block_phys), pick(located.line_no - start), start)


def classification_window(index: LogIndex, located: Located, lines: int = 200) -> tuple[list[str], int]:
    """About `lines` lines around the failure for the classifiers, holding both its block start
    and its root-cause line, and the block start's index in them (the classifiers' focus)."""
    half = lines // 2
    start = max(0, min(located.block, located.line_no - half))
    end = max(located.line_no + half, start + lines)
    window = [raw.decode("utf-8", "replace") for raw in index.lines(start, end)]
    return window, located.block - start


class LogIndex:
    """A log file indexed once into line start offsets, read through `os.pread`.

    Lines are physical lines split on `\\n` (blank ones included, so numbers match the file).
    Reading a line returns at most `line_cap` bytes of it, so a 100 MB line or a binary blob
    without newlines costs no more than a short one.

    Never `mmap`: the file may be truncated, rotated or rewritten by another process while we
    read it (log rotation, a restarted job), and a mapped page past the new end is a SIGBUS.
    A short read is just fewer bytes: lines past the new end read as empty, and `notes` says
    what changed (`check_changes` compares the file with what was indexed). Memory is bounded:
    one index block while indexing, and at most `max_lines` offsets (8 bytes each); a log with
    more lines keeps its last `max_lines` (the earlier ones read as empty, with a note).
    """

    def __init__(
        self,
        data: bytes,
        *,
        line_cap: int = _LINE_CAP,
        _fd: int | None = None,
        _starts: np.ndarray | None = None,
        _size: int | None = None,
        _trailing_newline: bool | None = None,
        _skipped: int = 0,
        _path: str | None = None,
        _ident: tuple[int, int, int] | None = None,
    ) -> None:
        self._data = data
        self._fd = _fd
        self._path = _path
        self._ident = _ident  # (device, inode, mtime_ns) when indexed
        self.line_cap = line_cap
        self.size = len(data) if _size is None else _size
        self.starts = _line_starts(data) if _starts is None else _starts
        self.skipped = _skipped  # leading lines not indexed (more than `max_lines`): read as empty
        if _trailing_newline is None:
            _trailing_newline = self.size > 0 and data[self.size - 1 : self.size] == b"\n"
        self._trailing_newline = _trailing_newline
        self.notes: list[str] = []
        if _skipped:
            self.notes.append(
                f"log has more than {len(self.starts)} lines: only its last {len(self.starts)} were indexed "
                f"(the first {_skipped} are not searched)"
            )
        self.short_reads = 0

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        line_cap: int = _LINE_CAP,
        max_lines: int = DEFAULT_MAX_INDEX_LINES,
        index_block: int = _INDEX_BLOCK,
    ) -> LogIndex:
        """Index the regular file `path`, reading `index_block` bytes at a time. Raises OSError
        when it cannot be read and `NotRegularFile` (a ValueError) for a FIFO, device, socket or
        directory, without blocking."""
        if max_lines < 1 or index_block < 1:
            raise ValueError("max_lines and index_block must be >= 1")
        fd = open_regular(path)
        try:
            st = os.fstat(fd)
            starts, size, trailing, skipped = _index_fd(fd, st.st_size, max_lines, index_block)
        except BaseException:
            os.close(fd)
            raise
        index = cls(b"", line_cap=line_cap, _fd=fd, _starts=starts, _size=size, _trailing_newline=trailing,
                    _skipped=skipped, _path=os.fspath(path), _ident=(st.st_dev, st.st_ino, st.st_mtime_ns))  # fmt: skip
        if size < st.st_size:
            index._note(f"log shrank while it was indexed (truncated or rewritten): read its first {size} bytes")
        return index

    @classmethod
    def from_lines(cls, lines: Sequence[str | bytes], *, line_cap: int = _LINE_CAP) -> LogIndex:
        """An in-memory index over already-split lines (tests, callers holding text)."""
        raw = [line.encode("utf-8", "surrogateescape") if isinstance(line, str) else line for line in lines]
        return cls(b"\n".join(raw) + (b"\n" if raw else b""), line_cap=line_cap)

    def __len__(self) -> int:
        return self.skipped + len(self.starts)

    def _note(self, note: str) -> None:
        if note not in self.notes:
            self.notes.append(note)

    def _read(self, start: int, end: int) -> bytes:
        if self._fd is None:
            return bytes(self._data[start:end])
        if end <= start:
            return b""
        try:
            out = pread_exact(self._fd, end - start, start)
        except OSError as exc:  # an I/O error mid-read (a vanished network mount): what was read stands
            self.short_reads += 1
            self._note(f"log read failed at byte {start} ({exc.strerror or exc}): diagnosis of what was read")
            return b""
        if len(out) < end - start:
            self.short_reads += 1
            self._note(
                f"log shrank while it was read (truncated, rotated or rewritten by another process): "
                f"diagnosis of the part read before byte {start + len(out)}"
            )
        return out

    def _end(self, k: int) -> int:
        """End offset (exclusive, newline excluded) of indexed line `k`."""
        if k + 1 < len(self.starts):
            return int(self.starts[k + 1]) - 1
        return self.size - 1 if self._trailing_newline else self.size

    def line(self, i: int) -> bytes:
        """Line `i` without its newline, capped at `line_cap` bytes."""
        k = i - self.skipped
        if k < 0:
            return b""
        start = int(self.starts[k])
        return self._read(start, min(self._end(k), start + self.line_cap))

    def lines(self, a: int, b: int) -> list[bytes]:
        """Lines `a..b-1`; one read and split when they are short, else capped one by one."""
        a, b = max(0, a), min(b, len(self))
        if a >= b:
            return []
        head: list[bytes] = []
        if a < self.skipped:
            head = [b""] * (min(b, self.skipped) - a)
            a = self.skipped
            if a >= b:
                return head
        ka, kb = a - self.skipped, b - self.skipped
        start, end = int(self.starts[ka]), self._end(kb - 1)
        if end - start <= (kb - ka) * self.line_cap:
            data = self._read(start, end)
            if len(data) == end - start:
                out = data.split(b"\n")
                if len(out) == kb - ka and all(len(x) <= self.line_cap for x in out):
                    return head + out
        return head + [self.line(i) for i in range(a, b)]

    def text(self, i: int) -> str:
        return normalise_line(self.line(i)).text

    def check_changes(self) -> list[str]:
        """Compare the file with what was indexed; note (and return) what changed since:
        shrunk, grown or rewritten in place, or the path now naming another file (rotated)."""
        if self._fd is None or self._ident is None:
            return self.notes
        try:
            st = os.fstat(self._fd)
        except OSError:
            return self.notes
        if st.st_size < self.size:
            self._note(
                f"log shrank from {self.size} to {st.st_size} bytes while it was read (truncated or rewritten): "
                "the diagnosis may miss or misplace lines"
            )
        elif st.st_mtime_ns != self._ident[2]:
            grown = "grew" if st.st_size > self.size else "was rewritten"
            self._note(f"log {grown} while it was read: the diagnosis covers its first {self.size} bytes as read")
        if self._path is not None:
            try:
                now = os.stat(self._path)
                moved = (now.st_dev, now.st_ino) != self._ident[:2]
            except OSError:
                moved = True
            if moved:
                self._note("log was rotated, replaced or removed while it was read: diagnosis of the file as opened")
        return self.notes

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
        self._fd = None

    def __enter__(self) -> LogIndex:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def _line_starts(data: bytes) -> np.ndarray:
    """Start offsets of every line of in-memory `data` (numpy, no Python loop over lines)."""
    size = len(data)
    if size == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.concatenate([np.zeros(1, dtype=np.int64), np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10) + 1])
    return starts[:-1] if starts[-1] == size else starts  # a trailing newline opens no new line


def _index_fd(fd: int, size: int, max_lines: int, block_bytes: int = _INDEX_BLOCK) -> tuple[np.ndarray, int, bool, int]:
    """(line starts, bytes indexed, ends with a newline, leading lines dropped) of the first
    `size` bytes of `fd`, read with `os.preadv` into one reused block (bounded memory). Stops
    early, without error, when the file shrinks underneath; keeps at most `max_lines` starts."""
    if size == 0:
        return np.zeros(0, dtype=np.int64), 0, False, 0
    block = bytearray(max(1, min(block_bytes, size)))
    view = memoryview(block)
    parts: list[np.ndarray] = [np.zeros(1, dtype=np.int64)]
    held = 1
    dropped = 0
    pos = 0
    last = 0
    while pos < size:
        n = os.preadv(fd, [view[: min(len(block), size - pos)]], pos)
        if n <= 0:
            break  # truncated while we index: what was read is the log
        arr = np.frombuffer(block, dtype=np.uint8, count=n)
        found = np.flatnonzero(arr == 10).astype(np.int64) + (pos + 1)
        parts.append(found)
        held += len(found)
        last = block[n - 1]
        pos += n
        if held > max_lines + 1 + (max_lines >> 2):  # one spare: the last start may be the file's end
            merged = np.concatenate(parts)
            dropped += len(merged) - (max_lines + 1)
            parts, held = [merged[-(max_lines + 1) :].copy()], max_lines + 1
    starts = np.concatenate(parts)
    if len(starts) and starts[-1] == pos:
        starts = starts[:-1]  # a trailing newline opens no new line
    if len(starts) > max_lines:
        dropped += len(starts) - max_lines
        starts = starts[-max_lines:].copy()
    return starts, pos, pos > 0 and last == 10, dropped


# Warning level (c10 `[W ...]`, glog `W0501`, `UserWarning:`; record prefixes that `clean_line`
# strips are read from `CleanLine.level`); not `NCCL WARN`, which is how NCCL reports real faults
# (`NET/IB : Got completion ... with error 12, vendor err 129`). A warning is a failure line only
# when it carries a high-precision signature (`rules.HIGH_PRECISION`): drivers and NCCL print
# real root causes at WARNING level, and a deprecation notice names no signature.
DEFAULT_WARNINGS: tuple[str, ...] = (
    r"^\s*\[?(?:WARNING|WARN)\b|^\s*W\d{4}\s|^\s*\[W[\s\d]|^\s*(?:\S+:\d+: )?\w*Warning\b"
    r"|[\s\[|-](?<!NCCL )(?:WARNING|WARN)[\s\]|:-]|\bwarnings\.warn\(",
)

# Lines that look like errors but are not a job's root cause, at any level. Matched on cleaned text.
DEFAULT_BENIGN: tuple[str, ...] = (
    # retried / recovered conditions
    r"\bretrying\b|\bwill retry\b|\bretry loop\b|\bretry(?:ing)? (?:in|after) \d|\battempt \d+ ?(?:/|of) ?\d+",
    # tokenizer notice that only predicts errors (`... will result in indexing errors`)
    r"\bToken indices sequence length is longer than\b",
    # zero counters: `errors=0`, `error: 0`, `0 errors`, `no errors`
    r"\b(?:errors?|failures?|failed|exceptions?|timeouts?|nans?)\s*[:=]\s*\[?0(?:\.0+)?(?![.\d])",
    r"\b(?:0|zero|no) (?:errors?|failures?|exceptions?)\b",
    # metrics named '... error' (`validation error: 0.12`, `mse error 3e-4`, `error rate`)
    r"\b(?:val(?:idation)?|train(?:ing)?|test|eval|top-?\d+|mean[ _](?:squared|absolute)|ms|ma|rel(?:ative)?"
    r"|reconstruction|quantization|approximation)[ _-]?error\b\s*[:=]?\s*[-+]?\d|\berror[ _-]rate\b",
    # DataLoader teardown noise (logs.md: a red herring) and NCCL bootstrap chatter
    r"\bException ignored in\b|\b_MultiProcessingDataLoaderIter\.__del__|\bNCCL INFO\b",
    # argument / config dumps: `exit_on_error ........ True`, `error_on_nan: false`
    r"^\s*\S+ \.{3,} \S|^\s*[\"']?\w*(?:error|fail)\w*[\"']?\s*[:=]\s*(?:true|false|none|null|\d+)\s*,?$",
)

# Raw-byte gate: a line without any of these words is a normal line (no normalising, rules or
# embedding). The words hold no digits, so the verdict is cached by the line's digit-free key
# (progress lines differing only in numbers share it). Broad on purpose: a false "maybe" only
# costs the rules (and at worst one embedding per template); a missed word hides a failure.
_RAW_KEYWORDS: tuple[bytes, ...] = (
    b"err", b"fail", b"fatal", b"exception", b"traceback", b"abort", b"kill", b"xid", b"nccl", b"timeout",
    b"timed out", b"refused", b"reset", b"oom", b"out of memory", b"illegal memory", b"insufficient", b"fallen",
    b"not responding", b"notready", b"denied", b"no such", b"space left", b"segmentation", b"core dumped",
    b"assert", b" nan", b"nan ", b"=nan", b"illegal", b"panic", b"crash", b"terminat", b"sigsegv", b"sigbus",
    b"unable", b"cannot", b"corrupt", b"invalid", b"unexpected", b"critical", b"cuda-capable", b"nvlink",
    b"stale file", b"unreachable", b"no route", b"link is down", b"link down", b"flapping", b"already in use",
    b"connection closed", b"can't load", b"does not appear to have", b"not a valid", b"couldn't find", b"non-zero exit",
    b"quota", b"nvrm", b"network is down", b"watchdog", b"exitcode", b"exit code", b"exited with", b"death signal",
    b"wtermsig", b"preemption", b"marked dead", b"not answering", b"lost connection", b" died", b"is dead", b"was lost",
    b"memory limit",
)  # fmt: skip
# Not `node`, `memory`, `cuda`, `ecc` or `File "` alone: configs (`pin_memory: true`, `{'node-6': [0, 1]}`,
# `(cuda)`, hex ids) and traceback frames (the header before them is the failure line) hold them.
_DIGITS = b"0123456789"
_KEYWORD_CACHE_SIZE = 200_000


# Phrases that hold a keyword but are normal output: MPI's `[1,3]<stderr>:` prefix, Megatron's
# per-step `number of nan iterations: 0` counter. Removed before the keyword test.
_KEYWORD_NOISE: tuple[bytes, ...] = (b"<stderr>", b"number of nan iterations")


def _has_keyword(data: bytes, cache: dict[bytes, bool]) -> bool:
    key = data.translate(None, _DIGITS)
    hit = cache.get(key)
    if hit is None:
        lowered = key.lower()
        for noise in _KEYWORD_NOISE:
            if noise in lowered:
                lowered = lowered.replace(noise, b"")
        hit = any(word in lowered for word in _RAW_KEYWORDS)
        if len(cache) >= _KEYWORD_CACHE_SIZE:
            cache.clear()
        cache[key] = hit
    return hit


class FailureLineJudge:
    """Decides which lines are failure lines; one `first_failure` call = one classifier call."""

    def __init__(
        self,
        classifier: LineClassifier,
        *,
        rules: RulesClassifier | None = None,
        benign: Sequence[str] = DEFAULT_BENIGN,
        warnings: Sequence[str] = DEFAULT_WARNINGS,
        min_score: float = 0.45,
        min_margin: float = 0.05,
    ) -> None:
        self.classifier = classifier
        self.rules = rules if rules is not None else RulesClassifier()
        self.benign = re.compile("|".join(f"(?:{p})" for p in benign), re.IGNORECASE) if benign else None
        self.warnings = re.compile("|".join(f"(?:{p})" for p in warnings), re.IGNORECASE) if warnings else None
        self.min_score = min_score
        self.min_margin = min_margin
        self.calls = 0
        self.lines = 0  # lines judged
        self.classified = 0  # lines of those sent to the embedding classifier
        self._keyword_cache: dict[bytes, bool] = {}

    def flags(self, raws: Sequence[bytes | str], lead: int = 0) -> list[bool]:
        """One failure flag per line of `raws[lead:]` (one classifier call); the first `lead`
        lines are context only (a warning just before the chunk can still excuse a traceback).

        A cascade, cheapest first: lines without a failure keyword are normal; benign lines,
        handled tracebacks, text addressed to a model and warnings without a high-precision
        signature are not failures; signature rules and traceback headers are. A physical line
        holding two ranks' output is judged part by part. Only what is left (keyword lines
        nothing above settles) is sent to the embedding classifier, in one batch: embedding is
        what a probe costs, and most lines never need it.
        """
        self.calls += 1
        self.lines += len(raws) - lead
        out: list[bool | None] = []  # None: the embedding classifier decides
        ask: dict[int, bytes | str] = {}
        handled = _HandledTraceback(self.benign)
        for i, raw in enumerate(raws):
            data = raw.encode("utf-8", "surrogateescape") if isinstance(raw, str) else raw
            keyword = _has_keyword(data, self._keyword_cache)
            if not keyword and not handled.active:
                out.append(False)
                continue
            parts = split_interleaved(raw) if keyword and has_interleaving(data) else [raw]
            verdicts = [self._judge(part, keyword, handled, i) for part in parts]
            if any(v is True for v in verdicts):
                out.append(True)
            elif i >= lead and any(v is None for v in verdicts):
                out.append(None)
                ask[i] = parts[verdicts.index(None)]
            else:
                out.append(False)
        if ask:
            self.classified += len(ask)
            for i, label in zip(ask, self.classifier.classify_lines(list(ask.values())), strict=True):
                out[i] = self._confident_error(label)
        return [bool(flag) for flag in out[lead:]]

    def _judge(self, raw: bytes | str, keyword: bool, handled: _HandledTraceback, i: int) -> bool | None:
        line = clean_line(raw)
        text = line.text
        if line.binary or not text.strip() or handled.swallow(line) or not keyword or looks_like_instruction(text):
            return False
        announces = _ANNOUNCES_TRACEBACK.search(text) is not None and not _PY_WARNING.search(text)
        if self.benign is not None and self.benign.search(text):
            if announces:
                handled.warned(line, i)
            return False
        rule = self.rules.match(text)
        if line.level in WARNING_LEVELS or (self.warnings is not None and self.warnings.search(text)):
            if rule is not None and rule.high_precision:
                return True  # a root cause printed at warning level
            if announces:
                handled.warned(line, i)
            return False
        header = is_traceback_header(text)
        if header and handled.excuses(line, i):
            return False
        if rule is not None or header:
            return True
        return None

    def _confident_error(self, label: LineLabel) -> bool:
        return (
            label.category is Category.ERROR
            and label.confident
            and label.score >= self.min_score
            and label.margin >= self.min_margin
        )

    def first_failure(self, raws: Sequence[bytes | str], lead: int = 0) -> int | None:
        """Index (in `raws[lead:]`) of the first failure line, or None."""
        return next((i for i, bad in enumerate(self.flags(raws, lead)) if bad), None)


# A benign log record that announces the traceback printed under it (`logger.warning("...",
# exc_info=True)`): a retry/skip notice, or a message ending in ':'.
_ANNOUNCES_TRACEBACK = re.compile(
    r"\bwill retry\b|\bretrying\b|\bretry loop\b|\bignor(?:e|ed|ing)\b|\bskipping\b|\bcontinuing\b|:\s*$", re.IGNORECASE
)


# What Python's `warnings` module prints (`lr_scheduler.py:143: UserWarning: ... skipping ...` and
# the `  warnings.warn(...)` source line under it): it never prints a traceback, so it announces none.
_PY_WARNING = re.compile(r"^\S+:\d+: \w*Warning:|\bwarnings\.warn\(")


class _HandledTraceback:
    """Tracebacks a program printed and survived: a benign line announcing it (`WARNING:mlflow...
    Failed to log metrics, will retry:`) directly followed, from the same source, by a traceback.
    The whole traceback up to its exception line is then not a failure. An unrelated warning
    just before a real traceback (`[WARNING] ... allocator cache flushes`) excuses nothing."""

    LIMIT = 80  # lines a handled traceback may span

    def __init__(self, benign: re.Pattern[str] | None) -> None:
        self.benign = benign
        self.warn_source: str | None = None
        self.warn_at = -(10**9)
        self.source: str | None = None
        self.left = 0
        self.after_frame = False

    @property
    def active(self) -> bool:
        return self.left > 0

    def warned(self, line: CleanLine, at: int) -> None:
        self.warn_source, self.warn_at = line.source, at

    def excuses(self, header: CleanLine, at: int) -> bool:
        """The header comes right after (≤ 2 lines) an announcing line of the same source."""
        if at - self.warn_at <= 3 and header.source == self.warn_source:
            self.source, self.left, self.after_frame, self.warn_at = header.source, self.LIMIT, False, -(10**9)
            return True
        return False

    def swallow(self, line: CleanLine) -> bool:
        """True when `line` belongs to the handled traceback (and is then not a failure)."""
        if not self.active or line.source != self.source:
            return False
        self.left -= 1
        text = line.text
        if is_traceback_header(text) or line.level is not None or (self.benign is not None and self.benign.search(text)):
            self.left = 0  # a new traceback or log record: the handled one is over (it was cut short)
            return False
        if _TB_FRAME_RE.match(text):
            self.after_frame = True
            return True
        if not text.strip() or _TB_CARET_RE.match(text):
            return True
        if text[:1].isspace():
            self.after_frame = False  # the frame's (indented) code line: the next line is not one
            return True
        if is_exception_line(text):
            self.left = 0  # the exception line closes it
            return True
        if self.after_frame:
            self.after_frame = False  # the code line under a frame (indentation may be lost)
            return True
        self.left = 0  # something else: the handled traceback is over
        return False


class FailureLocator:
    """Binary-search locator plus the two baselines, all with the same `FailureLineJudge`."""

    def __init__(
        self,
        classifier: LineClassifier,
        *,
        chunk: int = 256,
        window_chunks: int = 2,
        lookback_chunks: int = 2,
        tail_chunks: int = 8,
        judge: FailureLineJudge | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        if chunk < 1 or window_chunks < 1 or lookback_chunks < 0 or tail_chunks < 1:
            raise ValueError("chunk, window_chunks, tail_chunks must be >= 1 and lookback_chunks >= 0")
        self.judge = judge if judge is not None else FailureLineJudge(classifier)
        self.chunk = chunk
        self.window_chunks = window_chunks
        self.lookback_chunks = lookback_chunks
        self.tail_chunks = tail_chunks
        self._tracer = get_tracer(tracer)
        self.last_calls = 0  # classifier calls of the latest locate* (also when nothing was found)
        self.last_lines = 0

    # -- public API -----------------------------------------------------------------------------

    def locate(self, source: str | Path | LogIndex | Sequence[str | bytes]) -> Located | None:
        """The first failure line by binary search over chunks, or None when the tail is clean."""
        with self._open(source) as index, self._tracer.start_as_current_span("failure.locate.binary") as span:
            search = _Search(self, index)
            found = search.run()
            result = self._result(index, found, "binary", search.calls0, search.lines0)
            self._annotate(span, index, result)
        return result

    def locate_linear(self, source: str | Path | LogIndex | Sequence[str | bytes]) -> Located | None:
        """Baseline: classify chunk after chunk from the start until the first failure line."""
        with self._open(source) as index, self._tracer.start_as_current_span("failure.locate.linear") as span:
            calls0, lines0 = self.judge.calls, self.judge.lines
            found = None
            for a in range(0, len(index), self.chunk):
                lead = min(a, _LEAD)
                hit = self.judge.first_failure(index.lines(a - lead, a + self.chunk), lead)
                if hit is not None:
                    found = a + hit
                    break
            result = self._result(index, found, "linear", calls0, lines0)
            self._annotate(span, index, result)
        return result

    def locate_tail(self, source: str | Path | LogIndex | Sequence[str | bytes], tail: int = 500) -> Located | None:
        """Baseline ('w/o Locator'): the first failure line within the last `tail` lines."""
        with self._open(source) as index, self._tracer.start_as_current_span("failure.locate.tail") as span:
            calls0, lines0 = self.judge.calls, self.judge.lines
            found = None
            for a in range(max(0, len(index) - tail), len(index), self.chunk):
                lead = min(a, _LEAD)
                hit = self.judge.first_failure(index.lines(a - lead, min(a + self.chunk, len(index))), lead)
                if hit is not None:
                    found = a + hit
                    break
            result = self._result(index, found, "tail", calls0, lines0)
            self._annotate(span, index, result)
        return result

    # -- internals ------------------------------------------------------------------------------

    class _Borrowed:
        """Context manager that yields an index and closes it only if it opened it."""

        def __init__(self, index: LogIndex, owned: bool) -> None:
            self.index, self.owned = index, owned

        def __enter__(self) -> LogIndex:
            return self.index

        def __exit__(self, *exc: object) -> None:
            if self.owned:
                self.index.close()

    def _open(self, source: str | Path | LogIndex | Sequence[str | bytes]) -> FailureLocator._Borrowed:
        if isinstance(source, LogIndex):
            return self._Borrowed(source, False)
        if isinstance(source, (str, Path)):
            return self._Borrowed(LogIndex.open(source), True)
        return self._Borrowed(LogIndex.from_lines(source), True)

    def _result(
        self, index: LogIndex, found: int | None, method: Method, calls0: int = 0, lines0: int = 0
    ) -> Located | None:
        self.last_calls = self.judge.calls - calls0
        self.last_lines = self.judge.lines - lines0
        if found is None:
            return None
        block, root = root_cause_lines(index, found, rules=self.judge.rules)
        return Located(
            line_no=root,
            text=index.text(root),
            calls=self.judge.calls - calls0,
            method=method,
            lines_classified=self.judge.lines - lines0,
            total_lines=len(index),
            block_line=block,
        )

    def _annotate(self, span: Span, index: LogIndex, result: Located | None) -> None:
        span.set_attribute("schedmate.failure.lines", len(index))
        span.set_attribute("schedmate.failure.found", result is not None)
        if result is not None:
            span.set_attribute("schedmate.failure.line_no", result.line_no)
            span.set_attribute("schedmate.failure.classifier_calls", result.calls)
            span.set_attribute("schedmate.failure.lines_classified", result.lines_classified)


class _Search:
    """One binary search over one index; chunk verdicts are memoised (each chunk costs one call)."""

    def __init__(self, locator: FailureLocator, index: LogIndex) -> None:
        self.loc, self.index = locator, index
        self.size = locator.chunk
        self.n_chunks = -(-len(index) // self.size)
        self.first: dict[int, int | None] = {}  # chunk -> first failure line in it (absolute) or None
        self.calls0, self.lines0 = locator.judge.calls, locator.judge.lines

    def bad(self, c: int) -> int | None:
        if c not in self.first:
            a = c * self.size
            lead = min(a, _LEAD)
            hit = self.loc.judge.first_failure(self.index.lines(a - lead, a + self.size), lead)
            self.first[c] = None if hit is None else a + hit
        return self.first[c]

    def window_bad(self, c: int) -> bool:
        """P̂(c): a failure line in the `window_chunks` chunks ending at chunk c (right to left)."""
        return any(self.bad(j) is not None for j in range(c, max(-1, c - self.loc.window_chunks), -1))

    def run(self) -> int | None:
        if self.n_chunks == 0:
            return None
        hi = next(
            (c for c in range(self.n_chunks - 1, max(-1, self.n_chunks - 1 - self.loc.tail_chunks), -1)
             if self.bad(c) is not None),
            None,
        )  # fmt: skip
        if hi is None:
            return None  # the tail is clean: not a failed log, or the cascade is not where we look
        while True:
            lo = 0
            while lo < hi:  # smallest c in [lo, hi] with P̂(c); P̂(hi) holds
                mid = (lo + hi) // 2
                if self.window_bad(mid):
                    hi = mid
                else:
                    lo = mid + 1
            # P̂(hi) and not P̂(hi - 1): the first failure of the window is in chunk hi itself
            first = hi
            gap = range(hi - self.loc.window_chunks - 1, hi - self.loc.window_chunks - 1 - self.loc.lookback_chunks, -1)
            earlier = next((c for c in gap if c >= 0 and self.bad(c) is not None), None)
            if earlier is None:
                return self.bad(first)
            hi = earlier  # a longer quiet gap than the window: search again to its left
