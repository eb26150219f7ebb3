"""Bytes → complete lines, with bounded memory whatever the file holds.

A line is consumed only once its `\\n` has arrived (a line caught mid-write is never parsed,
and the committed offset always sits at a line start). A line longer than `max_line_bytes`
keeps its first `max_line_bytes` bytes and is flagged `cut`; the rest is skipped as it streams,
so a multi-GB file without a newline costs one capped buffer.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Line:
    """One complete line: byte `offset` of its start in its file, bytes without the newline."""

    offset: int
    raw: bytes
    cut: bool = False

    @property
    def end(self) -> int:
        """Offset just past this line's newline, given its full length was `raw` (uncut lines)."""
        return self.offset + len(self.raw) + 1


@dataclass(slots=True)
class LineCutter:
    """Splits a stream of chunks into `Line`s; `start` is where the pending line begins."""

    max_line_bytes: int
    start: int = 0
    _pending: bytearray = field(default_factory=bytearray)
    _cut: bool = False

    @property
    def pending_bytes(self) -> int:
        return len(self._pending)

    def feed(self, chunk: bytes, at: int) -> list[Line]:
        """Complete lines in `chunk` (which starts at file offset `at`, contiguous with the last)."""
        parts = chunk.split(b"\n")
        rest = parts.pop()  # after the last newline: the next pending line (maybe empty)
        out: list[Line] = []
        if parts and (self._pending or self._cut):
            self._keep(parts[0])
            out.append(Line(self.start, bytes(self._pending), self._cut))
            self._pending.clear()
            self._cut = False
            pos = at + len(parts[0]) + 1
            parts = parts[1:]
        else:
            pos = self.start if parts else at
        cap = self.max_line_bytes
        for piece in parts:
            n = len(piece)
            out.append(Line(pos, piece) if n <= cap else Line(pos, piece[:cap], True))
            pos += n + 1
        if out:
            self.start = pos
        self._keep(rest)
        return out

    def reset(self, start: int) -> None:
        """Forget the pending line; the next byte fed is at `start`."""
        self._pending.clear()
        self._cut = False
        self.start = start

    def _keep(self, data: bytes) -> None:
        room = self.max_line_bytes - len(self._pending)
        if len(data) > room:
            self._pending.extend(data[: max(0, room)])
            self._cut = True
        else:
            self._pending.extend(data)
