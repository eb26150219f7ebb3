"""Reading a trace CSV defensively, and typed field parsers that fail with file/line/column.

Policy shared by every loader:
- unreadable bytes (binary garbage, NUL bytes, not UTF-8), an empty file, or a header without
  the format's required columns raise `TraceFormatError`;
- a row whose field count differs from the header (a truncated or empty line) is skipped and
  counted: one damaged line should not cost the whole trace;
- a wrong value in a column the loader uses raises `TraceFormatError`: it means the file is not
  what its header claims, and silently dropping such rows would bias the trace.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from .errors import TraceFormatError
from .trace import SkipLog


@dataclass(frozen=True, slots=True)
class Table:
    """A decoded CSV: its header and a reader positioned after it (single pass)."""

    path: Path
    header: tuple[str, ...]
    reader: Any  # a csv.reader; its `line_num` is the physical line just read

    @property
    def name(self) -> str:
        return self.path.name

    def columns(self, required: Sequence[str], fmt: str) -> dict[str, int]:
        """Index of each header column; raises if one of `required` is missing."""
        index = {name: i for i, name in enumerate(self.header)}
        for name in required:
            if name not in index:
                raise TraceFormatError(
                    self.path,
                    1,
                    name,
                    f"a {fmt} header with columns {','.join(required)}",
                    ",".join(self.header),
                )
        return index

    def records(self, skips: SkipLog) -> Iterator[tuple[int, list[str]]]:
        """(line, fields) of each row with as many fields as the header; others are skipped."""
        width = len(self.header)
        try:
            for fields in self.reader:
                if len(fields) == width:
                    yield self.reader.line_num, fields
                elif not fields:
                    skips.add(self.reader.line_num, "empty line")
                else:
                    skips.add(
                        self.reader.line_num,
                        f"malformed row: {len(fields)} fields, the header has {width}",
                    )
        except csv.Error as err:  # e.g. an unterminated quote running to the end of file
            line = self.reader.line_num + 1
            raise TraceFormatError(self.path, line, None, "a CSV row", str(err)) from None


def open_table(path: str | Path) -> Table:
    """Decode `path` as UTF-8 CSV and read its header."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise TraceFormatError(path, None, None, "a CSV file, not a directory") from None
    nul = data.find(b"\x00")
    if nul >= 0:
        raise TraceFormatError(
            path, data.count(b"\n", 0, nul) + 1, None, "CSV text", "a NUL byte (a binary file?)"
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        bad = data[err.start : err.start + 1].hex()
        raise TraceFormatError(path, line, None, "UTF-8 CSV text", f"byte 0x{bad}") from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        first = next(reader, None)
    except csv.Error as err:
        raise TraceFormatError(path, 1, None, "a CSV header row", str(err)) from None
    if first is None or not any(cell.strip() for cell in first):
        raise TraceFormatError(path, 1, None, "a CSV header row, but the file is empty")
    header = tuple(cell.strip() for cell in first)
    return Table(path, header, reader)


def nonneg_float(table: Table, line: int, column: str, text: str) -> float:
    """A finite number >= 0 (durations, relative times)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (0.0 <= value < math.inf):
        raise TraceFormatError(table.path, line, column, "a non-negative number", text)
    return value


def nonneg_int(table: Table, line: int, column: str, text: str) -> int:
    """A whole number >= 0; "8" and "8.0" are accepted (pandas writes ints as floats)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (0.0 <= value < math.inf) or value != int(value):
        raise TraceFormatError(table.path, line, column, "a non-negative whole number", text)
    return int(value)


_EPOCH = datetime(1970, 1, 1)


def timestamp(table: Table, line: int, column: str, text: str) -> float:
    """Seconds since the epoch of an ISO date-time; naive times are read as UTC.

    Only differences matter (submit times are rebased), so the zone of naive times is moot.
    """
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise TraceFormatError(
            table.path, line, column, "a timestamp YYYY-MM-DD HH:MM:SS", text
        ) from None
    if moment.tzinfo is None:
        return (moment - _EPOCH).total_seconds()  # faster than attaching a zone
    return moment.timestamp()


def nonempty(table: Table, line: int, column: str, text: str) -> str:
    """A non-blank string (ids, names), stripped."""
    value = text.strip()
    if not value:
        raise TraceFormatError(table.path, line, column, "a non-empty value", text)
    return value
