"""Opening log files that users and other processes control, without hanging or crashing.

A log path is untrusted: it may name a FIFO (an `open()` blocks until a writer appears), a
device (`/dev/zero` never ends), a directory, or a file another process truncates, rotates or
rewrites while we read it. Readers therefore:

- check the path with `os.stat` *before* opening, and open with `O_NONBLOCK` so that a path
  swapped to a FIFO between the check and the open still cannot block; the open descriptor is
  checked again with `os.fstat` (regular files only);
- read through `os.pread` (`pread_exact`), never `mmap`: a mapped page of a file truncated
  underneath is a SIGBUS that kills the process, while a short `pread` is just fewer bytes.

`NotRegularFile` is a `ValueError` whose message names the path and what it is, so callers
that already turn `OSError`/`ValueError` into "cannot read log" give one clear line.
"""

from __future__ import annotations

import bz2
import codecs
import lzma
import os
import shutil
import stat
import tempfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from schedmate.errors import BadInput

__all__ = ["DEFAULT_MAX_DECODED_BYTES", "LogView", "NotRegularFile", "StreamDecoder", "describe_mode", "detect_encoding",
           "open_regular", "pread_exact", "readable_log", "sniff_log"]


class NotRegularFile(BadInput):
    """The path exists but is not a regular file (FIFO, socket, device, directory)."""


def describe_mode(mode: int) -> str:
    """What `mode` is, in words (`a FIFO (named pipe)`, `a directory`, ...)."""
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _check(path: str | os.PathLike[str], mode: int) -> None:
    if not stat.S_ISREG(mode):
        raise NotRegularFile(f"{os.fspath(path)} is {describe_mode(mode)}, not a regular log file")


def open_regular(path: str | os.PathLike[str]) -> int:
    """A read-only descriptor of the regular file `path` (caller closes it with `os.close`).

    Raises `NotRegularFile` for anything else and `OSError` when it cannot be opened; never
    blocks (a FIFO is refused before and, if swapped in, during the open)."""
    _check(path, os.stat(path).st_mode)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        _check(path, os.fstat(fd).st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def pread_exact(fd: int, size: int, offset: int) -> bytes:
    """Up to `size` bytes at `offset`; fewer only when the file ends (or shrank) before that."""
    out = os.pread(fd, size, offset)
    if len(out) == size or not out:
        return out
    parts = [out]
    got = len(out)
    while got < size:
        more = os.pread(fd, size - got, offset + got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


# ------------------------------------------------------------------------------ logs as they come
#
# A log may arrive gzip/bz2/xz-compressed (`job.log.gz` from a log rotator) or in UTF-16/32 (a
# Windows tool, PowerShell's `>`). Read as bytes, both looked like text without a failure line,
# and the CLI and the service answered "no failure found". `readable_log` gives the readers a
# file they can index: the original when it is plain UTF-8-compatible text, else a UTF-8 copy
# (decompressed and/or transcoded, streamed, its last `max_bytes` kept), and says plainly what
# it could not read (`unreadable: encoding`, `unreadable: compression`), never leaving a caller
# to report a healthy job.


DEFAULT_MAX_DECODED_BYTES = 512 * 1024 * 1024  # a decoded copy keeps the log's last 512 MB (failures are at the end)
_SAMPLE = 64 * 1024
_CHUNK = 1024 * 1024
_LONG_LINE = 8_000  # readers keep a line up to here (agents/failure/locator.py `_LINE_CAP`)
_TAIL_SCAN = 64 * 1024 * 1024

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"PK\x03\x04", "zip"), (b"\x04\x22\x4d\x18", "lz4"),
)
_DECOMPRESSORS: dict[str, Callable[[], Any]] = {
    "gzip": lambda: zlib.decompressobj(wbits=47),  # 32 + 15: a gzip (or zlib) header, read incrementally
    "bz2": bz2.BZ2Decompressor,
    "xz": lzma.LZMADecompressor,
}
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"),  # these codecs read and drop the BOM
)


@dataclass
class LogView:
    """What to read for a log: `path` (the original or a decoded UTF-8 copy), how it was decoded,
    notes for the result, and `unreadable` ("encoding: ..." / "compression: ...") when nothing
    trustworthy could be read; a caller then says so instead of diagnosing."""

    original: Path
    path: Path
    compression: str | None = None
    encoding: str = "utf-8"
    notes: list[str] = field(default_factory=list)
    unreadable: str | None = None

    @property
    def converted(self) -> bool:
        return self.path != self.original

    def status_message(self) -> str:
        """`unreadable: encoding (...)`: the one line a result carries for an unreadable log."""
        return f"unreadable: {self.unreadable}" if self.unreadable else ""


def detect_encoding(sample: bytes) -> str | None:
    """The text encoding of `sample` (a file's first bytes): a BOM, else the NUL pattern of
    UTF-16/32 text (ASCII characters leave every second or three of four bytes zero), else
    "utf-8" when it reads as text. None for binary data that is text in no encoding tried."""
    for bom, name in _BOMS:
        if sample.startswith(bom):
            return name
    if not sample:
        return "utf-8"
    n = len(sample) - len(sample) % 4
    if n >= 8 and sample.count(0, 0, n) > n // 4:
        lanes = [sample[i:n:4].count(0) / (n // 4) for i in range(4)]
        if lanes[1] > 0.9 and lanes[2] > 0.9 and lanes[3] > 0.9 and lanes[0] < 0.5:
            return "utf-32-le"
        if lanes[0] > 0.9 and lanes[1] > 0.9 and lanes[2] > 0.9 and lanes[3] < 0.5:
            return "utf-32-be"
        even = (lanes[0] + lanes[2]) / 2
        odd = (lanes[1] + lanes[3]) / 2
        if odd > 0.6 and even < 0.2:
            return "utf-16-le"
        if even > 0.6 and odd < 0.2:
            return "utf-16-be"
        return None
    text = sample.decode("utf-8", errors="replace")
    bad = sum(1 for ch in text if ch == "\ufffd" or (ord(ch) < 32 and ch not in "\t\n\r\f\v\x1b\x08"))
    return "utf-8" if bad <= max(8, len(text) // 20) else None  # Latin-1 accents pass; binary does not


class _TailWriter:
    """Keeps the last `max_bytes` written in two alternating halves (bounded disk and memory)."""

    def __init__(self, folder: Path, max_bytes: int) -> None:
        self.half = max(1, max_bytes // 2)
        self.files = [open(folder / "a", "w+b"), open(folder / "b", "w+b")]  # noqa: SIM115
        self.current = 0
        self.total = 0

    def write(self, data: bytes) -> None:
        while data:
            f = self.files[self.current]
            room = self.half - f.tell()
            if room <= 0:
                self.current ^= 1
                self.files[self.current].seek(0)
                self.files[self.current].truncate()
                continue
            f.write(data[:room])
            self.total += min(room, len(data))
            data = data[room:]

    def finish(self, out: Path) -> None:
        older, newer = self.files[self.current ^ 1], self.files[self.current]
        with open(out, "wb") as dst:
            if self.total > self.half:
                older.seek(0)
                shutil.copyfileobj(older, dst)
            newer.seek(0)
            shutil.copyfileobj(newer, dst)
        for f in self.files:
            f.close()


def _compression(head: bytes) -> str | None:
    return next((name for magic, name in _MAGIC if head.startswith(magic)), None)


class _Stream:
    """A log's bytes in chunks, decompressed incrementally: a stream cut short (a rotation caught
    mid-write) yields what it holds and sets `broken`, instead of losing everything to EOFError.
    Concatenated members (`cat a.gz b.gz`) are read one after the other."""

    def __init__(self, path: Path, kind: str | None) -> None:
        self.path, self.kind = path, kind
        self.broken = ""

    def __iter__(self) -> Iterator[bytes]:
        fd = open_regular(self.path)
        try:
            with os.fdopen(fd, "rb") as raw:
                if self.kind is None:
                    while chunk := raw.read(_CHUNK):
                        yield chunk
                    return
                yield from self._decompressed(raw)
        except OSError as exc:
            self.broken = exc.strerror or str(exc)

    def _decompressed(self, raw: IO[bytes]) -> Iterator[bytes]:
        assert self.kind is not None
        new = _DECOMPRESSORS[self.kind]
        dec, fed, data = new(), False, b""
        while True:
            if not data:
                data = raw.read(_CHUNK)
                if not data:
                    break
            try:
                out = dec.decompress(data)
            except (OSError, EOFError, lzma.LZMAError, zlib.error, ValueError) as exc:
                self.broken = str(exc) or type(exc).__name__
                return
            fed, data = True, b""
            if out:
                yield out
            if dec.eof:  # a member ended: the next one (if any) starts in its unused data
                data = dec.unused_data.lstrip(b"\x00")
                dec, fed = new(), False
        if fed and not dec.eof:
            self.broken = "the compressed stream ends before its end marker (truncated)"


def _sample(path: Path, kind: str) -> tuple[bytes, str]:
    """The first decompressed bytes (up to `_SAMPLE`), and why the stream broke off if it did."""
    stream = _Stream(path, kind)
    parts: list[bytes] = []
    got = 0
    for chunk in stream:
        parts.append(chunk)
        got += len(chunk)
        if got >= _SAMPLE:
            break
    return b"".join(parts)[:_SAMPLE], stream.broken


def _long_line_note(path: Path, size: int) -> str | None:
    """A note when the part of the log a diagnosis reads (its last 64 MB) holds a line longer
    than readers keep: that line is capped, and the answer must say so."""
    fd = open_regular(path)
    try:
        start = max(0, size - _TAIL_SCAN)
        run = longest = 0
        pos = start
        while pos < size:
            chunk = pread_exact(fd, min(_CHUNK, size - pos), pos)
            if not chunk:
                break
            parts = chunk.split(b"\n")
            run += len(parts[0])
            for p in parts[1:]:
                longest = max(longest, run)
                run = len(p)
            pos += len(chunk)
        longest = max(longest, run)
    finally:
        os.close(fd)
    if longest <= _LONG_LINE:
        return None
    what = "the log's last 64 MB hold" if start else "the log holds"
    return (f"{what} a line of {longest:,} bytes: lines are read up to their first {_LONG_LINE:,} bytes "
            "(capped), so a failure past that point of the line is not seen")


@contextmanager
def readable_log(path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_DECODED_BYTES) -> Iterator[LogView]:
    """The log at `path` as readers need it (see `LogView`); a decoded copy lives in a temporary
    folder removed on exit. Raises `NotRegularFile`/`OSError` like `open_regular`."""
    original = Path(path)
    fd = open_regular(original)
    try:
        size = os.fstat(fd).st_size
        head = pread_exact(fd, _SAMPLE, 0)
    finally:
        os.close(fd)
    view = LogView(original=original, path=original)
    kind = _compression(head)
    if kind in ("zstd", "zip", "lz4"):
        view.unreadable = f"compression ({kind} is not read; decompress the log first)"
        yield view
        return
    sample = head
    if kind is not None:
        view.compression = kind
        sample, broken = _sample(original, kind)
        if not sample and broken:
            view.unreadable = f"compression ({kind} stream is corrupt: {broken})"
            yield view
            return
    encoding = detect_encoding(sample)
    if encoding is None:
        view.unreadable = ("encoding (binary data: not text in UTF-8, UTF-16 or UTF-32)"
                           + (f" after {kind} decompression" if kind else ""))
        yield view
        return
    view.encoding = encoding
    if kind is None and encoding in ("utf-8", "utf-8-sig"):
        note = _long_line_note(original, size)
        if note:
            view.notes.append(note)
        yield view
        return
    with tempfile.TemporaryDirectory(prefix="schedmate-log-") as tmp:
        total, broken = _decode_copy(original, kind, encoding, Path(tmp), max_bytes)
        if broken and not total:
            view.unreadable = f"compression ({kind} stream is corrupt: {broken})"
            yield view
            return
        if broken:
            view.notes.append(f"{kind} stream breaks off after {total:,} bytes ({broken}): diagnosis of the part read")
        view.path = Path(tmp) / "decoded.log"
        how = " and ".join(x for x in (f"{kind}-decompressed" if kind else "",
                                       f"decoded from {encoding}" if encoding not in ("utf-8", "utf-8-sig") else "") if x)
        view.notes.append(f"log read {how}")
        if total > max_bytes:
            view.notes.append(f"decoded log is {total:,} bytes: its last {max_bytes:,} are read")
        note = _long_line_note(view.path, view.path.stat().st_size)
        if note:
            view.notes.append(note)
        yield view


def _decode_copy(path: Path, kind: str | None, encoding: str, tmp: Path, max_bytes: int) -> tuple[int, str]:
    """Decode into `tmp/decoded.log`; (bytes written, why the stream broke off or "")."""
    decoder: Any = codecs.getincrementaldecoder(encoding)(errors="replace")
    writer = _TailWriter(tmp, max_bytes)
    stream = _Stream(path, kind)
    for chunk in stream:  # truncated or corrupt: what came is kept, `broken` says why it stopped
        writer.write(decoder.decode(chunk).encode("utf-8", errors="replace"))
    writer.write(decoder.decode(b"", final=True).encode("utf-8", errors="replace"))
    writer.finish(tmp / "decoded.log")
    return writer.total, stream.broken


# ------------------------------------------------------------------------------ the same, streamed
#
# Readers that follow a growing log (the tracker's `LogTail`, the daemon's follower) cannot make a
# decoded copy first: they read what was appended since their last read. `StreamDecoder` is the
# same decision as `readable_log` (compression by magic bytes, encoding by BOM or NUL pattern,
# binary refused) from the log's first bytes, then transforms each chunk as it comes.


class StreamDecoder:
    """A log's raw bytes → UTF-8 bytes, chunk by chunk (decompressed and/or transcoded).

    `StreamDecoder.sniff(head)` decides from the file's first bytes; `unreadable` then says why
    nothing can be read ("encoding (...)", "compression (...)"), and a reader reports
    `unreadable: <why>` instead of an empty log. `transforms` is False for plain UTF-8, whose
    bytes a reader may use as they are. A compressed stream that turns corrupt stops yielding and
    sets `broken` (what came before it is kept)."""

    def __init__(self, compression: str | None = None, encoding: str = "utf-8", unreadable: str | None = None) -> None:
        self.compression = compression
        self.encoding = encoding
        self.unreadable = unreadable
        self.broken = ""
        self._rest = True  # no compressed member is open
        self._dec: Any = _DECOMPRESSORS[compression]() if compression in _DECOMPRESSORS else None
        self._text: Any = (codecs.getincrementaldecoder(encoding)(errors="replace")
                           if encoding not in ("utf-8",) else None)

    @classmethod
    def sniff(cls, head: bytes) -> StreamDecoder:
        """The decoder for a log whose first bytes are `head` (up to 64 KB is plenty)."""
        kind = _compression(head)
        if kind in ("zstd", "zip", "lz4"):
            return cls(kind, unreadable=f"compression ({kind} is not read; decompress the log first)")
        sample = head
        if kind is not None:
            probe = cls(kind, "utf-8")
            sample = probe._decompress(head)[:_SAMPLE]
            if not sample and probe.broken:
                return cls(kind, unreadable=f"compression ({kind} stream is corrupt: {probe.broken})")
        encoding = detect_encoding(sample)
        if encoding is None:
            return cls(kind, unreadable="encoding (binary data: not text in UTF-8, UTF-16 or UTF-32)"
                       + (f" after {kind} decompression" if kind else ""))
        return cls(kind, encoding)

    def restarted(self) -> StreamDecoder:
        """A fresh decoder of the same kind: the file was truncated and is written again by the
        same writer (its encoding is kept; a sniff of a NUL hole would misjudge it)."""
        return StreamDecoder(self.compression, self.encoding, self.unreadable)

    @property
    def transforms(self) -> bool:
        return self._dec is not None or self._text is not None

    def describe(self) -> str:
        """How the log is read, for a note (`gzip-decompressed and decoded from utf-16`)."""
        parts = [f"{self.compression}-decompressed" if self._dec is not None else "",
                 f"decoded from {self.encoding}" if self._text is not None else ""]
        return " and ".join(p for p in parts if p) or "read as UTF-8"

    def feed(self, chunk: bytes) -> bytes:
        """UTF-8 bytes for the next raw `chunk` (possibly empty while a codec buffers)."""
        if self.unreadable or self.broken:
            return b""
        data = self._decompress(chunk) if self._dec is not None else chunk
        if self._text is not None:
            data = self._text.decode(data).encode("utf-8", errors="replace")
        return data

    def at_rest(self) -> bool:
        """Whether no input is buffered (a reader that stops here can restart a fresh decoder at
        the next raw byte): no partial character pending, no compressed member open."""
        return self._rest and (self._text is None or not self._text.getstate()[0])

    def _decompress(self, data: bytes) -> bytes:
        out: list[bytes] = []
        if data:
            self._rest = False
        while data and not self.broken:
            try:
                out.append(self._dec.decompress(data))
            except (OSError, EOFError, lzma.LZMAError, zlib.error, ValueError) as exc:
                self.broken = str(exc) or type(exc).__name__
                break
            data = b""
            if self._dec.eof:  # a member ended: the next one (if any) starts in its unused data
                data = self._dec.unused_data.lstrip(b"\x00")
                self._dec = _DECOMPRESSORS[self.compression or ""]()
                self._rest = not data
        return b"".join(out)


def sniff_log(path: str | os.PathLike[str]) -> StreamDecoder:
    """How the log at `path` reads, from its first 4 KB (`StreamDecoder.sniff`); cheap enough to
    ask on every request. Raises `NotRegularFile`/`OSError` like `open_regular`."""
    fd = open_regular(path)
    try:
        head = pread_exact(fd, 4096, 0)
    finally:
        os.close(fd)
    return StreamDecoder.sniff(head)
