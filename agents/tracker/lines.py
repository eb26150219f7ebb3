"""Bytes → complete log lines: the one line reader of the tracker's tail (`tail.LogTail`, the
service's `track`) and the daemon's directory follower (`deploy/daemon/follower.py`).

**Completeness**: a line is handed on only once its `\\n` has arrived, so a line caught mid-write
(`elapsed time per iteration (ms): 51` of `512.3`) is never parsed, and `start` (where the
pending line begins) is always a line start: the offset a reader commits or resumes from.

**The long-line rule** (one rule for every reader): a line of at most `max_line_bytes` bytes is
returned whole, `\\r` redraws included (HF Trainer prints its metrics dict over the training
bar). A longer line is reduced to its last non-blank `\\r` segment (a progress bar's latest
redraw) and that segment to its first `max_line_bytes` bytes; it is flagged `cut`. The rest is
skipped as it streams, so a multi-GB file without a newline costs two capped buffers
(`schedmate.embeddings.logtext._LineAssembler`). Readers say that a line was cut; the
diagnosis' readers cap at the same 8,000 bytes (`schedmate.logfile`, the failure locator).

Offsets are byte offsets in the stream fed (for a compressed or UTF-16/32 log: in its UTF-8
decoding, `schedmate.logfile.StreamDecoder`).
"""

from __future__ import annotations

from dataclasses import dataclass

from schedmate.embeddings.logtext import DEFAULT_MAX_CHARS, _LineAssembler

__all__ = ["DEFAULT_MAX_LINE_BYTES", "Line", "LineCutter"]

DEFAULT_MAX_LINE_BYTES = 4 * DEFAULT_MAX_CHARS  # 8,000: what the diagnosis' readers keep of a line


@dataclass(frozen=True, slots=True)
class Line:
    """One complete line: byte `offset` of its start, its bytes without the newline, and `cut`
    when the long-line rule reduced it (module docstring)."""

    offset: int
    raw: bytes
    cut: bool = False

    @property
    def end(self) -> int:
        """Offset just past this line's newline, given its full length was `raw` (uncut lines)."""
        return self.offset + len(self.raw) + 1


class LineCutter:
    """Splits a stream of chunks into `Line`s; `start` is where the pending line begins."""

    __slots__ = ("_asm", "_buf", "max_line_bytes", "pending_bytes", "start")

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, start: int = 0) -> None:
        if max_line_bytes <= 0:
            raise ValueError("max_line_bytes must be positive")
        self.max_line_bytes = max_line_bytes
        self.start = start
        self.pending_bytes = 0  # bytes of the pending (unterminated) line fed so far
        self._buf = bytearray()  # the pending line itself while it is within the cap
        self._asm = _LineAssembler(max_line_bytes)  # its last redraw, capped, once it is not

    def feed(self, chunk: bytes, at: int | None = None) -> list[Line]:
        """Complete lines in `chunk`, which follows the bytes fed before (`at`, when given, is its
        offset in the stream: it must be `start + pending_bytes`)."""
        base = self.start + self.pending_bytes if at is None else at
        out: list[Line] = []
        cap = self.max_line_bytes
        begin = 0
        while True:
            nl = chunk.find(b"\n", begin)
            if nl < 0:
                break
            piece = chunk[begin:nl]
            if not self.pending_bytes and len(piece) <= cap:
                out.append(Line(self.start, piece))  # the common case: one short line in one chunk
            else:
                self._add(piece)
                if self.pending_bytes <= cap:
                    out.append(Line(self.start, bytes(self._buf)))
                else:
                    out.append(Line(self.start, self._asm.finish().data, True))
                self._clear()
            begin = nl + 1
            self.start = base + begin
        if begin < len(chunk):
            self._add(chunk[begin:])
        return out

    def reset(self, start: int) -> None:
        """Forget the pending line (it will never be completed); the next byte fed is at `start`."""
        self._clear()
        self.start = start

    def _add(self, piece: bytes) -> None:
        self._asm.feed(piece)
        self.pending_bytes += len(piece)
        if self.pending_bytes <= self.max_line_bytes:
            self._buf += piece
        elif self._buf:
            self._buf = bytearray()

    def _clear(self) -> None:
        if self.pending_bytes:
            self._asm.finish()
        self.pending_bytes = 0
        self._buf = bytearray()
