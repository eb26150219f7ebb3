"""Baseline policies and a registry to build them by name (`fifo`, `sjf+bf`, `tiresias`, ...)."""

from __future__ import annotations

from collections.abc import Callable

from ..lucid import Lucid
from ..policy import Policy
from ..sia import Sia, SiaFIFO
from .fifo import FIFO
from .qssf import QSSF
from .sjf import SJF
from .srtf import SRTF
from .tiresias import Tiresias

POLICIES: dict[str, Callable[..., Policy]] = {
    "fifo": FIFO,
    "sjf": SJF,
    "srtf": SRTF,
    "qssf": QSSF,
    "tiresias": Tiresias,
    "sia": Sia,
    "sia-fifo": SiaFIFO,
    "lucid": Lucid,
}
BACKFILLABLE = {"fifo", "sjf", "qssf", "sia-fifo"}


def make_policy(name: str, **options: object) -> Policy:
    """Build a policy by name; a `+bf` suffix turns on backfilling where the policy has it."""
    base, _, suffix = name.strip().lower().partition("+")
    if base not in POLICIES:
        raise ValueError(f"unknown policy {name!r}; choose from {', '.join(sorted(POLICIES))} (add +bf to backfill)")
    if suffix:
        if suffix != "bf" or base not in BACKFILLABLE:
            raise ValueError(f"policy {base!r} has no {suffix!r} variant")
        options = {**options, "backfill": True}
    return POLICIES[base](**options)


__all__ = ["FIFO", "QSSF", "SJF", "SRTF", "Tiresias", "POLICIES", "make_policy"]
