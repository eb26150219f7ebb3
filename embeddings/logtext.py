"""Turn raw job-log bytes into clean, bounded text lines.

Training logs are hostile input: several ranks interleave their output behind launcher prefixes,
tqdm redraws one line thousands of times with `\\r`, colour codes wrap words, a crashed process
can dump binary junk, and one "line" may be 100 MB long. Everything downstream (template mining,
embedding) assumes one short human-readable line per event, so this module enforces that while
streaming: memory stays bounded by the chunk size plus a few line caps, whatever the input.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import AnyStr, BinaryIO, cast

DEFAULT_MAX_CHARS = 2_000
DEFAULT_CHUNK_BYTES = 1 << 20
BINARY_NONPRINTABLE_RATIO = 0.3

# CSI sequences (colours, cursor moves, erase-line), OSC sequences (titles, hyperlinks) and the
# two-byte escapes; tqdm and rich emit all three.
_ANSI = r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])"
_ANSI_RE = re.compile(_ANSI)
_ANSI_BYTES_RE = re.compile(_ANSI.encode())

# Launcher prefixes, one layer each: torchrun `[rank3]:` / `[default0]:`, Open MPI `--tag-output`
# `[1,0]<stdout>:`, pdsh/DeepSpeed `10.0.0.1: ` or `worker-3: `, Slurm `srun --label` `12: `.
# Applied repeatedly because launchers nest (`10.0.0.1: [rank3]: ...`).
_RANK_PREFIX_RE = re.compile(
    r"""^(?:
        \[[A-Za-z_]*\d+\]:\ ?
      | \[\d+,\d+\]<std(?:out|err)>:\ ?
      | \d{1,3}(?:\.\d{1,3}){3}:\ +
      | (?:worker|node|host|gpu)[-_]?\d+:\ +
      | \d{1,5}:\ +
    )""",
    re.VERBOSE,
)
_NONPRINTABLE_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f\ufffd]")


@dataclass(frozen=True, slots=True)
class LogLine:
    """One normalised line. `source` is the launcher prefix that was stripped (rank/host), if any."""

    text: str
    source: str | None = None
    binary: bool = False
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class RawLine:
    """One physical line as bytes, already reduced to its last `\\r` redraw and capped in length."""

    data: bytes
    truncated: bool = False


def strip_ansi(text: str) -> str:
    """Remove terminal escape sequences; the fast path skips the regex for plain lines."""
    return _ANSI_RE.sub("", text) if "\x1b" in text else text


def last_redraw(text: str) -> str:
    """The last non-blank `\\r`-separated segment: what a terminal would finally show."""
    return _last_segment(text, len(text) + 1)[0] if "\r" in text else text


def _last_segment(buf: AnyStr, cap: int, lo: int = 0, hi: int | None = None) -> tuple[AnyStr, bool]:
    """The head (at most `cap` long) of the last non-blank `\\r` segment of `buf[lo:hi]`, and
    whether that segment was longer than `cap`.

    Walks backwards with `rfind` and slices only the capped head, so a huge buffer is never copied.
    Segments holding nothing but escape codes or whitespace count as blank.
    """
    if isinstance(buf, bytes):
        sep, esc, ansi = b"\r", b"\x1b", _ANSI_BYTES_RE
    else:
        sep, esc, ansi = "\r", "\x1b", _ANSI_RE
    end = len(buf) if hi is None else hi
    while True:
        start = max(buf.rfind(sep, lo, end) + 1, lo)
        head = buf[start : min(end, start + cap)]
        visible = ansi.sub(type(head)(), head) if esc in head else head
        if visible.strip():
            return head, end - start > cap
        if start <= lo:
            return buf[:0], False
        end = start - 1


def strip_rank_prefix(text: str) -> tuple[str, str | None]:
    """Strip nested launcher prefixes; returns the text and the prefixes removed (or None)."""
    removed: list[str] = []
    for _ in range(4):
        m = _RANK_PREFIX_RE.match(text)
        if m is None:
            break
        removed.append(m.group(0).strip())
        text = text[m.end() :]
    return text, (" ".join(removed) if removed else None)


def looks_binary(text: str) -> bool:
    """NUL bytes or a high share of control/undecodable characters mean this is not prose."""
    if not text or (text.isascii() and text.isprintable()):
        return False
    if "\x00" in text:
        return True
    bad = len(_NONPRINTABLE_RE.findall(text))
    return bad / len(text) > BINARY_NONPRINTABLE_RATIO


def normalise_line(raw: bytes | str, max_chars: int = DEFAULT_MAX_CHARS) -> LogLine:
    """Decode, de-colour, resolve redraws, strip rank prefixes and cap one line.

    The last redraw is cut to a bounded head *before* decoding, so a 100 MB input is never
    copied whole. The binary check runs after ANSI stripping (escape codes are control
    characters too) and before prefix stripping, so a prefixed junk line is still flagged.
    """
    cap = 4 * max_chars
    head: bytes | str
    if len(raw) <= cap and ("\r" not in raw if isinstance(raw, str) else b"\r" not in raw):
        head, truncated = raw, False  # fast path: the common short plain line
    elif isinstance(raw, str):
        head, truncated = _last_segment(raw, cap)
    else:
        head, truncated = _last_segment(raw, cap)
    text = head.decode("utf-8", errors="replace") if isinstance(head, bytes) else head
    text = strip_ansi(text).rstrip("\n")
    if looks_binary(text):
        return LogLine(text=text[:max_chars], binary=True, truncated=truncated or len(text) > max_chars)
    text, source = strip_rank_prefix(text)
    text = text.rstrip()
    if len(text) > max_chars:
        text, truncated = text[:max_chars], True
    return LogLine(text=text, source=source, binary=False, truncated=truncated)


class _LineAssembler:
    """Builds one physical line from pieces, keeping only its last non-blank `\\r` segment.

    Each segment is capped at `max_bytes`, so a 100 MB redraw storm or a 100 MB line without any
    newline costs at most two caps of memory.
    """

    __slots__ = ("max_bytes", "current", "last", "truncated", "current_truncated", "last_truncated")

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.current = bytearray()
        self.last = b""
        self.truncated = self.current_truncated = self.last_truncated = False

    def _append(self, data: bytes) -> None:
        room = self.max_bytes - len(self.current)
        if len(data) > room:
            self.current_truncated = True
            data = data[: max(room, 0)]
        self.current += data

    def _close_segment(self) -> None:
        if _ANSI_BYTES_RE.sub(b"", self.current).strip():
            self.last, self.last_truncated = bytes(self.current), self.current_truncated
        self.current = bytearray()
        self.current_truncated = False

    def feed(self, piece: bytes) -> None:
        """Add bytes of the current line. Only the segments around the first and last `\\r`
        are looked at, so a chunk holding a million redraws costs two `find`s, not a million."""
        first = piece.find(b"\r")
        if first < 0:
            self._append(piece)
            return
        last = piece.rfind(b"\r")
        self._append(piece[:first])
        self._close_segment()
        if last > first:  # complete segments strictly between the first and the last \r
            head, cut = _last_segment(piece, self.max_bytes, first + 1, last)
            if head:
                self.last, self.last_truncated = head, cut
        self._append(piece[last + 1 :])

    def finish(self) -> RawLine:
        self._close_segment()
        line = RawLine(self.last, self.last_truncated)
        self.last, self.last_truncated = b"", False
        return line


def iter_raw_lines(
    stream: BinaryIO, max_bytes: int = 4 * DEFAULT_MAX_CHARS, chunk_bytes: int = DEFAULT_CHUNK_BYTES
) -> Iterator[RawLine]:
    """Yield physical lines of a byte stream, reading fixed-size chunks (never `readline`).

    Plain short lines take a fast path; lines with `\\r` or longer than `max_bytes` go through
    the assembler. A final line without a trailing newline is still yielded.
    """
    asm = _LineAssembler(max_bytes)
    pending = False  # assembler holds part of the current line
    while chunk := stream.read(chunk_bytes):
        parts = chunk.split(b"\n")
        for part in parts[:-1]:
            if not pending and len(part) <= max_bytes and b"\r" not in part:
                yield RawLine(part)
            else:
                asm.feed(part)
                yield asm.finish()
                pending = False
        if parts[-1]:
            asm.feed(parts[-1])
            pending = True
    if pending:
        yield asm.finish()


def iter_log_lines(
    source: str | Path | BinaryIO | Iterable[bytes | str],
    max_chars: int = DEFAULT_MAX_CHARS,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    skip_blank: bool = True,
) -> Iterator[LogLine]:
    """Normalised lines from a file path, a binary stream, or an iterable of already-split lines."""
    if isinstance(source, (str, Path)):
        with open(source, "rb") as fh:
            yield from iter_log_lines(fh, max_chars, chunk_bytes, skip_blank)
        return
    if hasattr(source, "read"):
        # UTF-8 uses at most 4 bytes per char, so 4*max_chars bytes always covers max_chars chars.
        stream = cast(BinaryIO, source)  # anything with `read` is taken for a binary stream
        for raw in iter_raw_lines(stream, 4 * max_chars, chunk_bytes):
            line = normalise_line(raw.data, max_chars)
            if raw.truncated and not line.truncated:
                line = LogLine(line.text, line.source, line.binary, True)
            if line.text or not skip_blank:
                yield line
        return
    for item in source:
        line = normalise_line(item, max_chars)
        if line.text or not skip_blank:
            yield line
