"""The Metric Tracker's reading of a log as every surface sends it: one `TrackResult`.

The service's `/v1/track` (`TrackResponse` is this model plus the service's fallback envelope) and
the chat's metrics tool carry it unchanged; `metric_of` is the one place a tracker estimate becomes
a wire `Metric`. Line numbers are 1-based, as an editor shows them (`SourceLine.lineno`), the
convention of every wire model (`schedmate.wire.LINE_NUMBERS`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from schedmate.wire import LINE_NUMBERS

if TYPE_CHECKING:
    from schedmate.agents.tracker.tracker import MetricEstimate

__all__ = ["MAX_LINES", "Metric", "TrackResult", "metric_of"]

MAX_LINES = 20  # lines cited per metric: the newest the estimate read


class Metric(BaseModel):
    """One metric's steady estimate, its newest value and the lines it was read from."""

    model_config = ConfigDict(frozen=True)

    value: float
    unit: str
    last: float | None = None
    lines: list[int] = Field([], description=f"lines the value came from, {LINE_NUMBERS}")


class TrackResult(BaseModel):
    """Step time, loss and throughput read from a training log; with a split time, also the
    throughput before and after it (`before`, `after`, `ratio`, `unit`, `note`)."""

    model_config = ConfigDict(frozen=True)

    signal: bool = False
    step_time: Metric | None = None
    loss: Metric | None = None
    throughput: Metric | None = None
    confidence: float | None = None
    method: str | None = None
    before: float | None = Field(None, description="throughput before the split time")
    after: float | None = None
    ratio: float | None = None
    unit: str | None = None
    note: str | None = Field(None, description="why there is no signal, or what the split comparison found")
    llm_status: str = "disabled"


def metric_of(est: MetricEstimate | None) -> Metric | None:
    if est is None:
        return None
    return Metric(value=float(est.value), unit=est.unit, last=est.last,
                  lines=[ln.lineno for ln in est.lines if ln.lineno is not None][:MAX_LINES])
