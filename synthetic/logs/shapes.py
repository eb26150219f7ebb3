"""Shapes the agents' tests and benchmarks ask for, made by the one generator (`generate_log`).

- `generate_training_log(n, seed, ranks, style)`: the lines of a healthy multi-rank training log
  cut mid-run (no failure), with the launcher's rank prefixes of `style`;
- `make_failed_log(n, seed, reason, fault_at=..., ranks=..., ...)`: a failed log whose root cause
  sits about `fault_at` of the way through it, followed by a cascade from the other ranks; its
  `root_line` is the first line of the root-cause block and `first_line` the line naming it;
- `make_clean_log(n, seed)`: a log that completes normally;
- `BENIGN_LINES`: benign lines that look like errors (templates with `{n}`), from the `dev` pool.

Every error text comes from the `dev` pool unless asked otherwise (`pools.py`): tests that
check agents against these logs must not see held-out texts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from schedmate.loglabels import LogLabels
from schedmate.logspec import Framework, HardCase, Launcher, LogSpec, LogStatus, Pool, RankPrefix
from schedmate.taxonomy import Component, FailureCategory, FailureReason, category_of, component_of

from .generator import generate_log
from .hard import BENIGN_LINES

__all__ = ["BENIGN_LINES", "STYLES", "FailedLog", "generate_training_log", "make_clean_log", "make_failed_log"]

# Style of the old multi-rank test logs -> (framework, launcher, rank prefix).
STYLES: dict[str, tuple[Framework, Launcher, RankPrefix]] = {
    "torchrun": (Framework.MEGATRON, Launcher.TORCHRUN, RankPrefix.TORCHRUN),
    "mpi": (Framework.PYTORCH, Launcher.MPIRUN, RankPrefix.MPI),
    "pdsh": (Framework.DEEPSPEED, Launcher.DEEPSPEED, RankPrefix.PDSH),
}

def _style(style: str) -> tuple[Framework, Launcher, RankPrefix]:
    try:
        return STYLES[style]
    except KeyError:
        raise ValueError(f"unknown style {style!r} (expected one of {sorted(STYLES)})") from None


def _lines(text: str | Path) -> list[str]:
    return str(text).split("\n")[:-1]


def generate_training_log(n_lines: int, seed: int = 0, ranks: int = 16, style: str = "torchrun") -> list[str]:
    """Exactly `n_lines` lines of a healthy training log cut mid-run (no failure); `\\r` redraws
    stay inside lines. `ranks` is the world size (8 of them print); `style` the launcher."""
    fw, launcher, prefix = _style(style)
    spec = LogSpec(framework=fw, n_lines=n_lines, status=LogStatus.RUNNING, world_size=ranks,
                   visible_ranks=min(ranks, 8), launcher=launcher, rank_prefix=prefix, red_herrings=False)
    text, _ = generate_log(spec, seed)
    return _lines(text)


@dataclass(frozen=True)
class FailedLog:
    """A failed log: its lines, where the root cause is, and the full generator labels."""

    lines: list[str]
    root_line: int  # 0-based first line of the root-cause block (e.g. its `Traceback` header)
    first_line: int  # 0-based line naming the root cause (the label's `first_line`)
    reason: FailureReason
    labels: LogLabels
    category: FailureCategory = field(init=False)
    component: Component = field(init=False)
    node: str | None = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "category", category_of(self.reason))
        object.__setattr__(self, "component", component_of(self.reason))
        object.__setattr__(self, "node", self.labels.failure.host if self.labels.failure else None)

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    def write(self, path: str | Path) -> None:
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(self.text)


def make_failed_log(
    n_lines: int = 3_000,
    seed: int = 0,
    reason: FailureReason | None = None,
    *,
    fault_at: float | None = None,
    ranks: int = 16,
    style: str = "torchrun",
    benign: int = 6,
    cascade_gap: int = 40,
    pool: Pool = Pool.DEV,
    hard: tuple[HardCase, ...] = (),
) -> FailedLog:
    """A failed training log of about `n_lines` lines whose root cause (`reason`, else drawn) sits
    about `fault_at` of the way through it (default: the launcher's usual short teardown after it).
    The rest is the cascade: peers' watchdog timeouts and NCCL errors, then the teardown, with up to
    `cascade_gap` lines of survivors' output between two ranks' blocks. `benign` > 0 adds benign
    error-looking lines to the body; `hard` adds hard cases (`hard.py`)."""
    fw, launcher, prefix = _style(style)
    cascade = None if fault_at is None else max(0, int(n_lines * (1.0 - fault_at)))
    spec = LogSpec(framework=fw, n_lines=n_lines, status=LogStatus.FAILED, failure_reason=reason, world_size=ranks,
                   visible_ranks=min(ranks, 8) if not cascade else ranks, launcher=launcher, rank_prefix=prefix,
                   red_herrings=benign > 0, pool=pool, hard=hard, cascade_lines=cascade, cascade_gap=cascade_gap)
    text, labels = generate_log(spec, seed)
    f = labels.failure
    assert f is not None
    return FailedLog(lines=_lines(text), root_line=f.block_start, first_line=f.first_line, reason=f.reason, labels=labels)


def make_clean_log(n_lines: int = 2_000, seed: int = 0, ranks: int = 8, style: str = "torchrun") -> list[str]:
    """The lines of a log that completes normally."""
    fw, launcher, prefix = _style(style)
    spec = LogSpec(framework=fw, n_lines=n_lines, status=LogStatus.COMPLETED, world_size=ranks,
                   visible_ranks=min(ranks, 8), launcher=launcher, rank_prefix=prefix, red_herrings=False)
    text, _ = generate_log(spec, seed)
    return _lines(text)
