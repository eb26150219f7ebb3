"""Tail a growing job log incrementally, with bounded memory and bounded reads per call.

`LogTail.read()` returns the complete lines appended since the last call. It handles what
happens to real logs while a job runs:

- **partial last line**: bytes after the last newline stay pending until their newline arrives,
  so a line caught mid-write (`elapsed time per iteration (ms): 51` of `512.3`) is never parsed;
- **rotation** (the path now names another inode: `logrotate` rename, a restarted job): the old
  file is drained to its end through the still-open handle, then the new file is read from its
  start; the old file's unterminated tail is dropped (counted), never guessed;
- **truncation** (same inode, size below what was read: `copytruncate`, `> log`): restart at 0;
  NUL bytes a writer without O_APPEND leaves in the hole are stripped from line starts;
- **huge lines**: lines are cut by `lines.LineCutter`, the one line reader shared with the
  daemon's follower, under its one long-line rule (a line within `max_line_bytes` whole; a
  longer one reduced to its last `\\r` redraw, capped, `TailLine.truncated`), so memory stays
  bounded whatever the file holds;
- **logs as they come**: the first bytes decide (`schedmate.logfile.StreamDecoder`, the
  streaming `readable_log`): gzip/bz2/xz are decompressed and UTF-16/32 decoded as they are read
  (line offsets then count bytes of the UTF-8 decoding, and `start="end"`/`N` reads such a log
  from its beginning); binary data or zstd/zip/lz4 is never read as lines:
  `TailRead.error` says `unreadable: <why>`; single junk lines in a text log are left to
  `normalise_line` downstream;
- **not a log** (a FIFO, device, socket or directory at the path): never opened, so never a
  hang; `TailRead.error` says what the path is (checked on every open, rotations included);
- **bounded reads**: at most `max_read_bytes` per call (`TailRead.more` says there is more);
  `start="end"` / `start=N` attaches to the last bytes of an existing big log instead of
  reading it all (line numbers still count the skipped prefix unless `count_skipped_lines=False`).

Line numbers are 1-based within one file *generation*; `generation` increases on every
rotation or truncation. Not thread-safe: one tail per reader.

`FileState` / `ReadingCache`: a reading of a whole file (the service's `track`) depends only on
its bytes, so it is kept while the file's (device, inode, size, mtime) are unchanged and computed
again once any of them moves (appended, rewritten, rotated, truncated). Thread-safe.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Generic, Literal, TypeVar

from schedmate.agents.tracker.lines import DEFAULT_MAX_LINE_BYTES, LineCutter
from schedmate.logfile import NotRegularFile, StreamDecoder, open_regular, pread_exact

DEFAULT_MAX_READ_BYTES = 8 << 20
DEFAULT_CHUNK_BYTES = 1 << 20
_SNIFF_BYTES = 4096  # a log's first 4 KB decide its encoding (a junk block further on does not)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class TailLine:
    """One complete physical line (newline removed; capped, then only its last `\\r` redraw)."""

    lineno: int
    offset: int
    raw: bytes
    generation: int
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class TailRead:
    """What one `read()` found. `more`: the byte budget ran out before the end of the file."""

    lines: list[TailLine] = field(default_factory=list)
    bytes_read: int = 0
    rotated: bool = False
    truncated: bool = False
    missing: bool = False
    more: bool = False
    partial_dropped: int = 0
    error: str | None = None  # not a regular file (never read), or `unreadable: <why>` (binary, zstd, ...)


class LogTail:
    """Incremental reader of one log path (see the module docstring)."""

    def __init__(
        self,
        path: str | Path,
        *,
        start: Literal["begin", "end"] | int = "begin",
        max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        count_skipped_lines: bool = True,
    ) -> None:
        if max_read_bytes <= 0 or chunk_bytes <= 0 or max_line_bytes <= 0:
            raise ValueError("byte limits must be positive")
        if isinstance(start, int) and start < 0:
            raise ValueError("start=N means the last N bytes; N must be >= 0")
        self.path = Path(path)
        self.start = start
        self.max_read_bytes = max_read_bytes
        self.chunk_bytes = min(chunk_bytes, max_read_bytes)
        self.max_line_bytes = max_line_bytes
        self.count_skipped_lines = count_skipped_lines
        self._fh: BinaryIO | None = None
        self._ident: tuple[int, int] | None = None
        self._pos = 0  # next byte to read in the current file
        self._cut = LineCutter(max_line_bytes)
        self._decoder: StreamDecoder | None = None  # decided from the file's first bytes
        self._lineno = 0
        self.generation = 0
        self._first_open = True

    # -- public -----------------------------------------------------------------------------

    @property
    def offset(self) -> int:
        """Bytes consumed as complete lines (the pending line starts here); for a compressed or
        UTF-16/32 log, bytes of its UTF-8 decoding."""
        return self._cut.start

    @property
    def decoded(self) -> str | None:
        """How a compressed or UTF-16/32 log is read (`gzip-decompressed`, ...); None for UTF-8."""
        return self._decoder.describe() if self._decoder is not None and self._decoder.transforms else None

    @property
    def lineno(self) -> int:
        """Number of the last complete line returned (0 before any)."""
        return self._lineno

    def read(self, max_bytes: int | None = None) -> TailRead:
        """New complete lines since the last call, reading at most `max_bytes` bytes."""
        budget = self.max_read_bytes if max_bytes is None else max_bytes
        lines: list[TailLine] = []
        rotated = truncated = missing = False
        dropped = 0
        used = 0
        if self._fh is None:
            try:
                if not self._open(initial=True):
                    return TailRead(missing=True)
            except NotRegularFile as exc:
                return TailRead(error=str(exc))
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            st = None
            missing = True
        assert self._fh is not None
        if st is not None and (st.st_dev, st.st_ino) != self._ident:
            # Rotated: finish the old file through the open handle, then switch.
            used, more = self._drain(lines, budget)
            if more:
                return TailRead(lines, used, rotated=False, more=True)
            dropped = self._drop_pending()
            self._close()
            rotated = True
            self.generation += 1
            self._lineno = 0
            try:
                opened = self._open(initial=False)
            except NotRegularFile as exc:
                return TailRead(lines, used, rotated=True, partial_dropped=dropped, error=str(exc))
            if not opened:
                return TailRead(lines, used, rotated=True, missing=True, partial_dropped=dropped)
        elif st is not None and st.st_size < self._pos:
            truncated = True
            dropped = self._drop_pending()
            self.generation += 1
            self._pos = 0
            self._cut.reset(0)
            self._decoder = self._decoder.restarted() if self._decoder is not None else None
            self._lineno = 0
        n, more = self._drain(lines, budget - used)
        error = f"unreadable: {self._decoder.unreadable}" if self._decoder and self._decoder.unreadable else None
        return TailRead(lines, used + n, rotated, truncated, missing, more, dropped, error)

    def close(self) -> None:
        self._close()

    def __enter__(self) -> LogTail:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals --------------------------------------------------------------------------

    def _open(self, *, initial: bool) -> bool:
        """Open the path (False: it does not exist); `NotRegularFile` for a FIFO, device, ..."""
        try:
            fh = open(open_regular(self.path), "rb", buffering=0)  # noqa: SIM115 -- held across calls
        except FileNotFoundError:
            return False
        st = os.fstat(fh.fileno())
        self._fh, self._ident = fh, (st.st_dev, st.st_ino)
        self._pos = 0
        self._cut.reset(0)
        self._decoder = None
        if initial and self._first_open:
            self._first_open = False
            self._sniff()
            if self._decoder is None or not self._decoder.transforms:
                self._seek_start(st.st_size)
        return True

    def _sniff(self) -> bool:
        """Decide how to read the file from its first bytes (False while it has none)."""
        if self._decoder is None:
            assert self._fh is not None
            head = pread_exact(self._fh.fileno(), _SNIFF_BYTES, 0)
            if head:
                self._decoder = StreamDecoder.sniff(head)
        return self._decoder is not None

    def _seek_start(self, size: int) -> None:
        """Attach near the end of an existing file: skip to the first line start after the cut."""
        if self.start == "begin":
            return
        keep = 0 if self.start == "end" else int(self.start)
        cut = max(0, size - keep)
        if cut == 0:
            return
        assert self._fh is not None
        self._fh.seek(cut - 1)
        probe = cut - 1
        while True:  # find the newline ending the line the cut falls into
            block = self._fh.read(self.chunk_bytes)
            if not block:
                probe = size
                break
            i = block.find(b"\n")
            if i >= 0:
                probe += i + 1
                break
            probe += len(block)
        self._pos = probe
        self._cut.reset(probe)
        if self.count_skipped_lines:
            self._fh.seek(0)
            count, left = 0, probe
            while left > 0:
                block = self._fh.read(min(self.chunk_bytes, left))
                if not block:
                    break
                count += block.count(b"\n")
                left -= len(block)
            self._lineno = count

    def _drain(self, lines: list[TailLine], budget: int) -> tuple[int, bool]:
        """Read complete lines from the current position until EOF or `budget` bytes."""
        assert self._fh is not None
        used = 0
        if not self._sniff() or (self._decoder is not None and self._decoder.unreadable):
            return 0, False  # nothing written yet, or nothing that reads as lines
        self._fh.seek(self._pos)
        while used < budget:
            chunk = self._fh.read(min(self.chunk_bytes, budget - used))
            if not chunk:
                return used, False
            used += len(chunk)
            self._consume(chunk, lines)
        # Budget spent: is there more? (a 1-byte probe, position restored by the next seek)
        more = bool(self._fh.read(1))
        return used, more

    def _consume(self, chunk: bytes, lines: list[TailLine]) -> None:
        self._pos += len(chunk)
        decoder = self._decoder
        data = decoder.feed(chunk) if decoder is not None and decoder.transforms else chunk
        for line in self._cut.feed(data):
            self._lineno += 1
            raw = line.raw
            if raw[:1] == b"\x00":
                raw = raw.lstrip(b"\x00")  # hole left by truncation under a non-append writer
            lines.append(TailLine(self._lineno, line.offset, raw, self.generation, line.cut))

    def _drop_pending(self) -> int:
        """Forget an unterminated line (it will never be completed); returns its byte count."""
        n = self._cut.pending_bytes
        self._cut.reset(self._cut.start + n)
        return n

    def _close(self) -> None:
        if self._fh is not None:
            self._fh.close()
        self._fh = None
        self._ident = None


@dataclass(frozen=True, slots=True)
class FileState:
    """One version of a file as `stat` sees it, without reading it. Appending moves the size,
    rewriting in place the mtime (nanoseconds), rotation the inode."""

    dev: int
    ino: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, path: str | Path) -> FileState | None:
        """The file's state now; None when it cannot be stat'ed."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class ReadingCache(Generic[T]):
    """Readings of whole files, each kept while its file's `FileState` holds (LRU, `max_entries`).

    `get(path, compute)` answers the kept reading when the state is the one it was computed at,
    else calls `compute()` and keeps its result only when the state was the same before and
    after (a file that changed mid-read is not cached) and `keep(result)` agrees (e.g. not a
    reading degraded by a dependency that may come back). Callers that mutate an answer copy it.
    """

    def __init__(self, max_entries: int = 256) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be >= 1")
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._kept: OrderedDict[str, tuple[FileState, T]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, path: str | Path, compute: Callable[[], T], keep: Callable[[T], bool] = lambda _: True) -> T:
        key = str(path)
        before = FileState.of(path)
        with self._lock:
            kept = self._kept.get(key)
            if before is not None and kept is not None and kept[0] == before:
                self._kept.move_to_end(key)
                self.hits += 1
                return kept[1]
            self.misses += 1
        value = compute()
        if before is not None and FileState.of(path) == before and keep(value):
            with self._lock:
                self._kept[key] = (before, value)
                self._kept.move_to_end(key)
                while len(self._kept) > self.max_entries:
                    self._kept.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._kept)
