"""The submit-time rule: a time limit in minutes from the advisor's estimate (pure, stdlib only).

Why ceil(margin x p90): Slurm kills a job at its limit, so a limit below the run time costs a lost
job while one above it only costs backfill precision; p90 is the upper end of the advisor's 10-90 %
interval of similar past jobs' run times, and the margin (1.2) covers spread a few matches cannot
show. The mean is used instead when it is larger (a heavy tail). Capped at the partition's MaxTime
(above it the job would pend with PartitionTimeLimit).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_MARGIN", "Decision", "NO_VAL_MIN", "time_limit"]

DEFAULT_MARGIN = 1.2
NO_VAL_MIN = 0xFFFFFFF0  # Slurm's NO_VAL / INFINITE and their neighbours: "not given"


@dataclass(frozen=True)
class Decision:
    """A time limit in minutes with the note kept in the job's AdminComment, or None and why not."""

    minutes: int | None
    note: str

    def line(self) -> str:
        """What job_submit.lua reads: `OK <minutes> <note>` or `SKIP <reason>` (one line)."""
        note = " ".join(self.note.split())
        return f"OK {self.minutes} {note}" if self.minutes is not None else f"SKIP {note}"

    @classmethod
    def parse(cls, line: str) -> Decision:
        head, _, rest = line.strip().partition(" ")
        if head == "OK":
            minutes, _, note = rest.partition(" ")
            if minutes.isdigit():
                return cls(int(minutes), note)
        return cls(None, rest if head == "SKIP" else line.strip()[:300] or "empty answer")


def time_limit(estimate: dict[str, Any] | None, *, margin: float = DEFAULT_MARGIN, max_minutes: int | None = None
               ) -> Decision:
    """Minutes: ceil(margin x max(p90, mean) of the similar jobs' durations), at least 1, at most
    `max_minutes` (0 or None: no cap)."""
    if not estimate:
        return Decision(None, "no estimate")
    p90, mean = estimate.get("duration_p90_s"), estimate.get("duration_s")
    candidates = [(v, name) for v, name in ((p90, "p90"), (mean, "mean")) if isinstance(v, int | float) and v > 0]
    if not candidates:
        return Decision(None, "the similar jobs have no recorded duration")
    basis, name = max(candidates)
    minutes = max(1, math.ceil(basis * margin / 60.0))
    note = (f"time limit {minutes} min from SchedMate: {margin:g} x {name} {basis:.0f} s of "
            f"{estimate.get('n_matches', '?')} similar past job(s)")
    if max_minutes is not None and 0 < max_minutes < NO_VAL_MIN and minutes > max_minutes:
        minutes = max_minutes
        note += f", capped at the partition's MaxTime {max_minutes} min"
    return Decision(minutes, note)
