"""Arrival times from a Philly slice (arena.md §6: "240 jobs arriving over 6 h. Use a Philly slice
if available; otherwise use Poisson arrivals ...").

The paper's testbed replays "a 6-hour Philly slice of 244 jobs" (§5.1), taking each record's
submission time from the trace and generating GPU count, type, model and iterations at random.
Here only the submission times come from Philly (`sia/traces/philly.csv` in the shared data, the
job-level Philly copy the Sia artifact ships); the §6 job mix and lognormal runtimes stay as the
spec gives them. A slice is a window of `window_s` seconds whose arrival count lies in
[n, n·(1 + slack)]: the seed picks one such window uniformly, and uniform thinning keeps exactly
n arrivals, so the trace's own bursts survive (a sparse run picks a window that is sparse itself).
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np

from schedmate.config import shared_data_dir
from schedmate.errors import BadInput, NotFound

from ..traces.loader import load_trace

PHILLY_PARTS = ("sia", "traces", "philly.csv")


def philly_path() -> Path | None:
    """The shared Philly trace, or None when the shared data or the file is absent."""
    root = shared_data_dir()
    path = root.joinpath(*PHILLY_PARTS) if root else None
    return path if path is not None and path.is_file() else None


@functools.lru_cache(maxsize=2)
def _submits(path: str) -> tuple[float, ...]:
    """Sorted submission offsets (s) of every job in the file; read once per process (the file is
    read-only reference data, 82k rows)."""
    return tuple(j.submit_time for j in load_trace(path).jobs)


def philly_submits(path: str | Path | None = None) -> np.ndarray:
    """Submission offsets of the Philly trace, sorted; NotFound when the file is absent."""
    where = Path(path) if path is not None else philly_path()
    if where is None or not where.is_file():
        raise NotFound("the Philly trace (sia/traces/philly.csv) was not found in the shared data",
                       hint="set SCHEDMATE_SHARED_DATA, or use WorkloadSpec(arrivals='poisson')")
    return np.asarray(_submits(str(where)))


def philly_slice(submits: np.ndarray, rng: np.random.Generator, n: int, window_s: float,
                 slack: float = 0.1) -> np.ndarray:
    """n sorted arrival times in [0, window_s): a window of the trace holding between n and
    n·(1 + slack) arrivals, chosen by `rng`, thinned uniformly to n. BadInput if no window of the
    trace is that busy."""
    t = np.sort(np.asarray(submits, dtype=float))
    if n < 1 or t.size < n:
        raise BadInput(f"a Philly slice of {n} jobs needs n >= 1 and at most {t.size} jobs in the trace")
    counts = np.searchsorted(t, t + window_s, side="left") - np.arange(t.size)
    hi = max(n, math.ceil(n * (1 + slack)))
    starts = np.flatnonzero((counts >= n) & (counts <= hi))
    if starts.size == 0:
        raise BadInput(f"no {window_s / 3600:g} h window of the Philly trace holds {n}..{hi} jobs (busiest: {counts.max()})")
    i = int(starts[rng.integers(starts.size)])
    window = t[i:i + int(counts[i])] - t[i]
    keep = np.sort(rng.choice(window.size, size=n, replace=False))
    return np.round(window[keep], 1)


def busiest_window(submits: np.ndarray, window_s: float) -> np.ndarray:
    """Arrival offsets (from its first job) of the trace's busiest `window_s` window, the one with
    the most submissions (Suika's §5.2 trace: "the busiest 8 h of Philly", as in Rubick)."""
    t = np.sort(np.asarray(submits, dtype=float))
    if t.size == 0:
        raise BadInput("an empty trace has no busiest window")
    counts = np.searchsorted(t, t + window_s, side="left") - np.arange(t.size)
    i = int(np.argmax(counts))
    return t[i:i + int(counts[i])] - t[i]


__all__ = ["PHILLY_PARTS", "busiest_window", "philly_path", "philly_slice", "philly_submits"]
