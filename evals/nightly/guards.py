"""Thresholds config (evals/nightly/thresholds.yaml) and the comparison that decides a regression.

Guards are relative (to previous passing runs of the same profile, and to the in-run baseline);
absolute floors exist for data a team owns. See the default config's header for why."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from schedmate.errors import BadInput, NotFound

DEFAULT_CONFIG = Path(__file__).with_name("thresholds.yaml")


class MetricGuard(BaseModel):
    model_config = ConfigDict(extra="forbid")
    better: Literal["higher", "lower"]
    max_drop: float | None = None  # absolute worsening allowed vs history (scores)
    max_ratio: float | None = None  # worsening factor allowed vs history (errors, latencies)
    beat_baseline: bool = False
    floor: float | None = None
    ceiling: float | None = None


class Thresholds(BaseModel):
    model_config = ConfigDict(extra="forbid")
    window: int = 5
    metrics: dict[str, MetricGuard] = {}


def load_thresholds(path: Path | None) -> Thresholds:
    """The config at `path` (default: the shipped one); a bad file is one clear ValueError."""
    p = path or DEFAULT_CONFIG
    if not p.is_file():
        raise NotFound(f"thresholds config {p} not found")
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
        return Thresholds.model_validate(raw)
    except yaml.YAMLError as exc:
        raise BadInput(f"thresholds config {p}: not valid YAML ({str(exc).splitlines()[0]})") from None
    except ValidationError as exc:
        e = exc.errors()[0]
        raise BadInput(f"thresholds config {p}: {'.'.join(map(str, e['loc']))}: {e['msg']}") from None


@dataclass(frozen=True)
class Check:
    metric: str
    value: float | None
    kind: str  # history | baseline | floor | ceiling
    reference: float | None
    ok: bool
    why: str


@dataclass
class Verdict:
    checks: list[Check] = field(default_factory=list)
    history_runs: int = 0

    @property
    def regressions(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    @property
    def passed(self) -> bool:
        return not self.regressions


def _worse(g: MetricGuard, value: float, ref: float) -> bool:
    """Worse than `ref` by more than allowed. For lower-is-better figures with both a ratio and
    a drop, the looser bound applies (a ratio alone would flag any change from a reference of 0)."""
    if g.better == "higher":
        return g.max_drop is not None and value < ref - g.max_drop
    limits = [ref * g.max_ratio] if g.max_ratio is not None else []
    limits += [ref + g.max_drop] if g.max_drop is not None else []
    return bool(limits) and value > max(limits)


def compare(metrics: dict[str, float | None], baselines: dict[str, float | None], history: Sequence[dict[str, Any]],
            cfg: Thresholds) -> Verdict:
    """Check every guarded metric; `history` holds earlier passing runs of the same profile, oldest first."""
    recent = list(history)[-cfg.window:]
    out = Verdict(history_runs=len(recent))
    for name, g in cfg.metrics.items():
        v = metrics.get(name)
        if v is None:
            continue
        past = [r["metrics"][name] for r in recent if r.get("metrics", {}).get(name) is not None]
        if past:
            ref = statistics.median(past)
            bad = _worse(g, v, ref)
            allowed = f"−{g.max_drop}" if g.better == "higher" else " or ".join(
                x for x in (f"×{g.max_ratio}" if g.max_ratio else "", f"+{g.max_drop}" if g.max_drop else "") if x)
            out.checks.append(Check(name, v, "history", ref, not bad,
                                    f"{v:.4g} vs median {ref:.4g} of {len(past)} earlier run(s) (allowed {allowed})"))
        b = baselines.get(name)
        if g.beat_baseline and b is not None:
            ok = v >= b if g.better == "higher" else v <= b
            out.checks.append(Check(name, v, "baseline", b, ok, f"{v:.4g} vs in-run baseline {b:.4g}"))
        if g.floor is not None:
            out.checks.append(Check(name, v, "floor", g.floor, v >= g.floor, f"{v:.4g} vs floor {g.floor:.4g}"))
        if g.ceiling is not None:
            out.checks.append(Check(name, v, "ceiling", g.ceiling, v <= g.ceiling, f"{v:.4g} vs ceiling {g.ceiling:.4g}"))
    return out
