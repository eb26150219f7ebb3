"""`load_trace`: one entry point for every trace format, with detection from the header.

Each format is a small module with `NAME`, `REQUIRED` (header columns), `DESCRIPTION` and
`parse(table, skips) -> records`; this module picks one, then `trace.assemble` sorts, rebases
and limits, so every format behaves the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from schedmate.errors import BadInput

from . import acme, derived, helios, openb, philly, sia_workload
from .csvtable import Table, open_table
from .errors import TraceFormatError
from .trace import LoadedTrace, Record, SkipLog, assemble


@dataclass(frozen=True, slots=True)
class TraceFormat:
    """A loadable format: its name, the header columns it needs, and its row parser."""

    name: str
    required: tuple[str, ...]
    description: str
    parse: Callable[..., list[Record]]


FORMATS: tuple[TraceFormat, ...] = tuple(
    TraceFormat(m.NAME, m.REQUIRED, m.DESCRIPTION, m.parse)
    for m in (philly, sia_workload, helios, acme, derived, openb)
)


def iter_formats() -> Iterator[str]:
    """Names of the formats `load_trace` knows (`FORMATS` has their columns and descriptions)."""
    return (f.name for f in FORMATS)


def detect_format(header: Sequence[str]) -> str | None:
    """The format whose required columns all appear in `header`; the most specific wins."""
    present = {column.strip() for column in header}
    matches = [f for f in FORMATS if present.issuperset(f.required)]
    if not matches:
        return None
    return max(matches, key=lambda f: len(f.required)).name  # max keeps the first on a tie


def load_trace(
    path: str | Path,
    fmt: str | None = None,
    *,
    limit: int | None = None,
    app_durations: Mapping[str, float] | None = None,
) -> LoadedTrace:
    """Load a trace file into `JobSpec`s sorted by (submit_time, job_id), the first at t=0.

    `fmt` None detects the format from the header. `limit` keeps the `limit` earliest-submitted
    jobs (the whole file is still read and validated; `skipped` counts the whole file).
    `app_durations` (seconds per application) only applies to `sia_workload` files.

    Raises `TraceFormatError` (file, line, column, what was expected) for unreadable bytes, an
    empty file, a header without the format's columns, or a bad value in a column it uses.
    Rows that are truncated (fewer fields than the header), empty, or not jobs here (CPU-only,
    never run) are skipped and counted in `skipped` / `skipped_reasons` instead.
    """
    if limit is not None and limit < 0:
        raise BadInput(f"limit must be >= 0, got {limit}")
    by_name = {f.name: f for f in FORMATS}
    if fmt is not None and fmt not in by_name:
        raise BadInput(f"unknown trace format {fmt!r}; known: {', '.join(by_name)}")
    table = open_table(path)
    chosen = by_name[fmt] if fmt is not None else _detect(table)
    options = {}
    if app_durations is not None:
        if chosen.name != sia_workload.NAME:
            raise ValueError(
                f"app_durations applies to {sia_workload.NAME} files, not {chosen.name}"
            )
        options["app_durations"] = app_durations
    skips = SkipLog(table.name)
    records = chosen.parse(table, skips, **options)
    return assemble(records, source=str(path), fmt=chosen.name, skips=skips, limit=limit)


def _detect(table: Table) -> TraceFormat:
    name = detect_format(table.header)
    if name is None:
        known = "; ".join(f"{f.name}: {','.join(f.required)}" for f in FORMATS)
        expected = f"the header of a known trace format ({known})"
        raise TraceFormatError(table.path, 1, None, expected, ",".join(table.header))
    return next(f for f in FORMATS if f.name == name)
