"""`LoadedTrace`, what every loader and generator returns, and the one place it is assembled.

Loaders parse rows into `Record`s with absolute submit times; `assemble` sorts, checks job ids,
rebases time so the first job submits at 0 and builds the `JobSpec`s, so every format gets the
same ordering, rebasing and `limit` semantics.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..job import JobSpec
from .errors import TraceFormatError

MAX_REASONS = 5
"""How many skip reasons a `LoadedTrace` keeps verbatim; the rest are only counted."""


@dataclass(frozen=True, slots=True)
class LoadedTrace:
    """Jobs of one trace, sorted by (submit_time, job_id), the first submitting at t=0.

    `skipped` counts rows that were read but are not jobs here (truncated rows, CPU-only jobs,
    pods never scheduled, ...); `skipped_reasons` keeps the first few, each `file:line: why`.
    """

    jobs: list[JobSpec]
    source: str
    format: str
    skipped: int = 0
    skipped_reasons: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.jobs)


@dataclass(slots=True)
class SkipLog:
    """Counts skipped rows and keeps the first `MAX_REASONS` reasons (one per loader call)."""

    file: str
    count: int = 0
    reasons: list[str] = field(default_factory=list)

    def add(self, line: int, why: str) -> None:
        self.count += 1
        if len(self.reasons) < MAX_REASONS:
            self.reasons.append(f"{self.file}:{line}: {why}")


Record = tuple[float, str, int, int, float, Mapping[str, Any]]
"""(absolute submit time, job id, source line, num_gpus, duration, other JobSpec fields).

Positional and flat because the big traces build ~10^5 of them (see `NO_FIELDS`)."""

NO_FIELDS: Mapping[str, Any] = MappingProxyType({})
"""Shared by records with no other fields (saves a dict per row); read-only."""


def assemble(
    records: Iterable[Record],
    *,
    source: str,
    fmt: str,
    skips: SkipLog,
    limit: int | None = None,
) -> LoadedTrace:
    """Sort, de-duplicate-check, rebase to t=0 and keep the `limit` earliest jobs."""
    rows = list(records)  # in file order, so a duplicate is reported at its later line
    seen: set[str] = set()
    for _, job_id, line, *_ in rows:
        if job_id in seen:
            raise TraceFormatError(source, line, "job_id", "a unique job id", job_id)
        seen.add(job_id)
    ordered = sorted(rows)
    if limit is not None:
        ordered = ordered[:limit]
    origin = ordered[0][0] if ordered else 0.0
    jobs = [
        JobSpec(job_id, submit - origin, gpus, duration, **fields)
        for submit, job_id, _, gpus, duration, fields in ordered
    ]
    return LoadedTrace(jobs, source, fmt, skips.count, list(skips.reasons))
