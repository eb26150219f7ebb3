"""What the advisor may spend on one repository: bytes per file and in all, files parsed, seconds.

A repository is input we do not control: one 50 MB generated Python file made `ast.parse` grow
past 7 GB and run for minutes, and the service's timed-out call kept parsing after its 504. Every
read the static extractor makes goes through `admit` (or `read_capped`), which answers whether
this file still fits the budget and, when it does not, records one note that the result carries
(`StaticExtraction.skipped`): a skipped file is said, never silently missing.

The budget in force is a context variable set by `spending(...)` around one extraction, so the
many small readers need no extra parameter, and a caller on another thread (the service's work
queue) can `cancel()` it: the next read then raises `BudgetSpent`, which the extractor turns into
a partial result, so a timed-out request leaves no worker parsing behind it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

from schedmate.cancel import (  # re-exported: the advisor's readers check it
    CancelToken,
    cancel_token,
    using_cancel_token,
)

__all__ = ["DEFAULT_BUDGET", "Budget", "BudgetSpent", "CancelToken", "Spending", "admit", "cancel_token",
           "current", "peek_text", "read_capped", "spending", "using_cancel_token"]

_MB = 1_000_000


@dataclass(frozen=True)
class Budget:
    """Caps for one extraction. A parsed Python file costs ~250x its size in AST memory and ~2 s per
    MB, so the per-file cap (512 kB; real training scripts are tens of kB, HF's Trainer 200 kB)
    keeps one parse near 130 MB and the repository cap bounds what the AST cache can hold."""

    file_bytes: int = 512_000
    repo_bytes: int = 4 * _MB
    files: int = 400
    seconds: float = 8.0

    def __post_init__(self) -> None:
        if self.file_bytes <= 0 or self.repo_bytes <= 0 or self.files <= 0 or self.seconds <= 0:
            raise ValueError(f"every budget cap must be positive: {self}")


DEFAULT_BUDGET = Budget()


class BudgetSpent(RuntimeError):
    """The extraction's time is up or its caller gave up on it (cancelled)."""


@dataclass
class Spending:
    """What one extraction has spent so far, and the notes for what it skipped."""

    budget: Budget
    token: CancelToken | None = None
    root: Path | None = None
    started: float = field(default_factory=time.monotonic)
    bytes_read: int = 0
    files_read: int = 0
    notes: list[str] = field(default_factory=list)
    _seen: set[str] = field(default_factory=set)

    def check_time(self) -> None:
        if self.token is not None and self.token.cancelled:
            raise BudgetSpent("cancelled: the caller stopped waiting")
        if time.monotonic() - self.started > self.budget.seconds:
            raise BudgetSpent(f"parse-time budget of {self.budget.seconds:g} s spent")

    def admit(self, path: Path, size: int, label: str | None = None) -> bool:
        """True when a file of `size` bytes may be read; False (with one note) when it is over a cap."""
        self.check_time()
        name = label or _label(path, self.root)
        key = str(path)
        if key in self._seen:  # the same file read again (several readers): charged once
            return size <= self.budget.file_bytes
        b = self.budget
        why = None
        if size > b.file_bytes:
            why = f"{_mb(size)} is over the {_mb(b.file_bytes)} per-file budget"
        elif self.bytes_read + size > b.repo_bytes:
            why = f"the repository budget of {_mb(b.repo_bytes)} is spent"
        elif self.files_read >= b.files:
            why = f"the budget of {b.files} files parsed is spent"
        if why is not None:
            self._note(f"skipped {name}: {why}")
            return False
        self._seen.add(key)
        self.bytes_read += size
        self.files_read += 1
        return True

    def _note(self, text: str) -> None:
        if text not in self.notes and len(self.notes) < 20:
            self.notes.append(text)


def _label(path: Path, root: Path | None) -> str:
    if root is not None and path.is_relative_to(root):
        return path.relative_to(root).as_posix()
    return path.name


def _mb(n: int) -> str:
    return f"{n / _MB:.1f} MB" if n >= 100_000 else f"{n} bytes"


_CURRENT: ContextVar[Spending | None] = ContextVar("schedmate_advisor_budget", default=None)


def current() -> Spending | None:
    return _CURRENT.get()


@contextmanager
def spending(budget: Budget | None = None, root: Path | None = None) -> Iterator[Spending]:
    """Charge the reads made inside to `budget` (notes name files relative to `root`); a nested
    call shares the outer spending."""
    outer = _CURRENT.get()
    if outer is not None:
        yield outer
        return
    s = Spending(budget or DEFAULT_BUDGET, token=cancel_token(), root=root)
    reset = _CURRENT.set(s)
    try:
        yield s
    finally:
        _CURRENT.reset(reset)


def admit(path: Path, size: int, label: str | None = None) -> bool:
    """`Spending.admit` for the extraction in force; outside one only the per-file cap applies."""
    s = _CURRENT.get()
    if s is None:
        return size <= DEFAULT_BUDGET.file_bytes
    return s.admit(path, size, label)


def peek_text(path: Path) -> str | None:
    """A file's text for a quick look (not kept, so not charged to the repository budget); None
    when over the per-file cap or unreadable. Still stops a cancelled or overdue extraction."""
    s = _CURRENT.get()
    if s is not None:
        s.check_time()
    cap = (s.budget if s is not None else DEFAULT_BUDGET).file_bytes
    try:
        if path.stat().st_size > cap:
            return None
        with open(path, "rb") as fh:
            return fh.read(cap).decode("utf-8", errors="replace")
    except OSError:
        return None


def read_capped(path: Path, label: str | None = None) -> str | None:
    """A file's text when the budget admits it, else None; never reads more than the per-file cap."""
    try:
        size = path.stat().st_size
    except OSError:
        return None
    if not admit(path, size, label):
        return None
    s = _CURRENT.get()
    cap = (s.budget if s is not None else DEFAULT_BUDGET).file_bytes
    try:
        with open(path, "rb") as fh:  # a file that grew since stat() is still cut at the cap
            data = fh.read(cap + 1)[:cap]
    except OSError:
        return None
    return data.decode("utf-8", errors="replace")
