"""The one error every trace loader raises for a file it cannot trust.

CLI code prints `str(err)` without a traceback, so the message alone must tell the user which
file, which line, which column, what was expected and what was found.
"""

from __future__ import annotations

from pathlib import Path

from schedmate.errors import BadInput


class TraceFormatError(BadInput):
    """A trace file whose header or values do not match its format.

    `line` is 1-based (the header is line 1); `column` is the column name, or None when the
    problem is not tied to one column (an empty file, an unknown header). `got` is the offending
    text, shown quoted; None leaves it out.
    """

    def __init__(
        self,
        file: str | Path,
        line: int | None,
        column: str | None,
        expected: str,
        got: str | None = None,
    ) -> None:
        self.file = str(file)
        self.line = line
        self.column = column
        self.expected = expected
        self.got = got
        super().__init__(self.message)

    @property
    def message(self) -> str:
        where = Path(self.file).name + (f":{self.line}" if self.line is not None else "")
        what = f"column '{self.column}': " if self.column is not None else ""
        found = f", got {_shorten(self.got)!r}" if self.got is not None else ""
        return f"{where}: {what}expected {self.expected}{found}"

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):  # keep it picklable (multiprocessing, pytest-xdist)
        return (type(self), (self.file, self.line, self.column, self.expected, self.got))


def _shorten(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
