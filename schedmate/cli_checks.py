"""Argument checks every CLI command runs BEFORE it does any work (issue 16, item 4).

A bad `--policies`, `--out`, `--limit` or `--cluster` used to surface after minutes of simulation
(or as a MemoryError); each check here raises `CliInputError` (a `BadInput`, which the CLI prints as
one line, exit 2) naming the option, what was expected and what was given.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from schedmate.errors import BadInput

__all__ = [
    "MAX_CLUSTER_GPUS",
    "MAX_CLUSTER_NODES",
    "CliInputError",
    "check_choice",
    "check_cluster",
    "check_count",
    "check_fraction",
    "check_limit",
    "check_out_dir",
    "check_policies",
]

MAX_CLUSTER_GPUS = 200_000
"""The largest cluster the simulator accepts: above the biggest GPU clusters built so far (~10^5)."""
MAX_CLUSTER_NODES = 50_000
"""Node objects are per node: 80 M GPUs as 10 M nodes is a MemoryError, not a cluster."""


CliInputError = BadInput
"""A command-line value the user can fix (kept as a name; printed as one line, exit 2)."""


def check_policies(text: str) -> list[str]:
    """The policy names in `text`, each known (and its `+bf` variant real), before any simulation."""
    from schedmate.schedulers.registry import UnknownPolicy, policy_class, supports_backfill

    names = [p.strip() for p in text.split(",") if p.strip()]
    if not names:
        raise CliInputError("--policies: no policy given (e.g. --policies fifo,sjf)")
    seen: set[str] = set()
    for name in names:
        key = name.lower()
        if key in seen:
            raise CliInputError(f"--policies: {name!r} is listed twice")
        seen.add(key)
        base, _, suffix = key.partition("+")
        try:
            factory = policy_class(base)
        except UnknownPolicy as exc:
            raise CliInputError(f"--policies: {exc}") from None
        if suffix and (suffix != "bf" or not supports_backfill(factory)):
            raise CliInputError(f"--policies: policy {base!r} has no {suffix!r} variant")
    return names


def check_out_dir(path: Path, option: str = "--out") -> Path:
    """`path` is, or can become, a writable folder: refused up front if it or a parent is a file."""
    if path.exists() and not path.is_dir():
        raise CliInputError(f"{option} {path} is an existing file, not a folder; give a folder path")
    ancestor = path
    while not ancestor.exists():
        if ancestor.parent == ancestor:
            break
        ancestor = ancestor.parent
    if ancestor.exists() and not ancestor.is_dir():
        raise CliInputError(f"{option} {path}: {ancestor} is a file, so no folder can be made under it")
    if ancestor.exists() and not os.access(ancestor, os.W_OK | os.X_OK):
        raise CliInputError(f"{option} {path}: {ancestor} is not writable")
    return path


def check_limit(value: int | None, option: str = "--limit") -> int | None:
    """None (no limit) or a positive count; 0 or a negative number would silently score nothing."""
    if value is not None and value < 1:
        raise CliInputError(f"{option} must be a positive number (or left out for all), not {value}")
    return value


def check_count(value: int, option: str, *, minimum: int = 1, maximum: int | None = None) -> int:
    """An integer option within [minimum, maximum]."""
    if value < minimum or (maximum is not None and value > maximum):
        bound = f"between {minimum} and {maximum:,}" if maximum is not None else f"at least {minimum}"
        raise CliInputError(f"{option} must be {bound}, not {value}")
    return value


def check_fraction(value: float, option: str) -> float:
    """A share in [0, 1] (NaN refused)."""
    if not 0.0 <= value <= 1.0:
        raise CliInputError(f"{option} must be between 0 and 1, not {value}")
    return value


_PART = re.compile(r"(\d+)(?:x(\d+))?(?::[\w.-]+)?")


def check_cluster(text: str) -> str:
    """A cluster description within `MAX_CLUSTER_GPUS` / `MAX_CLUSTER_NODES` (sizes are checked on the
    text, before `ClusterSpec.parse` builds a node object per node); syntax errors are the parser's."""
    gpus = nodes = 0
    for part in (p.strip() for p in text.split(",")):
        m = _PART.fullmatch(part)
        if not m:
            continue  # ClusterSpec.parse names the expected syntax
        count, per = int(m.group(1)), m.group(2)
        if per is None:
            gpus += count
            nodes += max(1, count // 8)
        else:
            gpus += count * int(per)
            nodes += count
    if gpus > MAX_CLUSTER_GPUS or nodes > MAX_CLUSTER_NODES:
        raise CliInputError(
            f"--cluster {text!r} has {gpus:,} GPUs on {nodes:,} nodes; the simulator takes at most "
            f"{MAX_CLUSTER_GPUS:,} GPUs and {MAX_CLUSTER_NODES:,} nodes"
        )
    return text


def check_choice(value: str, option: str, choices: Sequence[str]) -> str:
    """`value` is one of `choices`."""
    if value not in choices:
        raise CliInputError(f"{option} must be one of {', '.join(choices)}, not {value!r}")
    return value
