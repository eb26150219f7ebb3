"""The Metric Tracker's reading of a log as every surface sends it: one `TrackResult`.

`schedmate track --json`, the service's `/v1/track` (`TrackResponse` is this model plus the
service's fallback envelope) and the chat's metrics tool carry it unchanged; `track_result_of` is
the one place a tracker answer becomes it (`metric_of` for each metric). Line numbers are 1-based, as an editor shows them (`SourceLine.lineno`), the
convention of every wire model (`schedmate.wire.LINE_NUMBERS`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from schedmate.wire import LINE_NUMBERS

if TYPE_CHECKING:
    from schedmate.agents.tracker import failslow
    from schedmate.agents.tracker.tracker import MetricEstimate, NoSignal, TrackerReport

__all__ = ["MAX_LINES", "FailSlowAlert", "Metric", "TrackResult", "failslow_alert_of", "metric_of", "track_result_of"]

MAX_LINES = 20  # lines cited per metric: the newest the estimate read


class Metric(BaseModel):
    """One metric's steady estimate, its newest value and the lines it was read from."""

    model_config = ConfigDict(frozen=True)

    value: float
    unit: str
    last: float | None = None
    lines: list[int] = Field([], description=f"lines the value came from, {LINE_NUMBERS}")


class FailSlowAlert(BaseModel):
    """A sustained slowdown the fail-slow detector raised (`agents.tracker.failslow`): how much
    slower (`ratio`: step time since the onset / baseline), where it began and how sure."""

    model_config = ConfigDict(frozen=True)

    line: int = Field(description=f"the observation that raised the alarm, {LINE_NUMBERS}")
    since_line: int = Field(description=f"first line of the slowed regime (the estimated onset), {LINE_NUMBERS}")
    since_step: int | None = None
    step: int | None = None
    ratio: float
    confidence: float
    baseline_s: float
    scope: str = Field("job", description="job (job-wide), rank (one rank named) or host")
    stream: str = "job"
    rank: int | None = None
    host: str | None = None
    summary: str = Field("", description="the alert in one line, as the CLI prints it")


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
    steps_per_s: float | None = Field(None, description="1 / the steady step time")
    newest_line: int | None = Field(None, description=f"the newest line a metric came from, {LINE_NUMBERS}")
    # a level shift of the step time: the steady estimate over the earlier regime's median (>1 is slower)
    slowdown: float | None = None
    earlier_step_time_s: float | None = None
    regime_since_line: int | None = Field(None, description=f"first line of the newest regime, {LINE_NUMBERS}")
    notes: list[str] = Field([], description="how the log was read (decompressed, decoded, a capped line)")
    failslow: FailSlowAlert | None = Field(None, description="the newest fail-slow alert (`track --follow`)")


def metric_of(est: MetricEstimate | None) -> Metric | None:
    if est is None:
        return None
    return Metric(value=float(est.value), unit=est.unit, last=est.last,
                  lines=[ln.lineno for ln in est.lines if ln.lineno is not None][:MAX_LINES])


def track_result_of(result: TrackerReport | NoSignal) -> TrackResult:
    """The tracker's answer on the wire: its metrics, and the slowdown against the earlier regime
    when the step time shifted level (a rise is a slowdown, a fall usually the end of warm-up)."""
    from schedmate.agents.tracker.tracker import NoSignal

    if isinstance(result, NoSignal):
        return TrackResult(note=result.reason, llm_status=result.llm_status)
    st, loss, tp = result.step_time, result.loss, result.throughput
    newest = [s.lineno for e in (st, loss, tp) if e for s in e.lines if s.lineno is not None]
    before = slowdown = since = None
    if st is not None and st.superseded and not st.derived:
        values = {id(g.line): g.extraction.step_time_s for g in result.lines}
        earlier = sorted(v for s in st.superseded if (v := values.get(id(s))) is not None)
        if earlier:
            before = earlier[len(earlier) // 2]
            slowdown = round(st.value / before, 3) if before > 0 else None
            linenos = [s.lineno for s in (*st.lines, *st.dropped) if s.lineno is not None]
            since = min(linenos) if linenos else None
    return TrackResult(signal=True, step_time=metric_of(st), loss=metric_of(loss), throughput=metric_of(tp),
                       confidence=round(result.confidence, 4), method=result.method, llm_status=result.llm_status,
                       steps_per_s=result.steps_per_s, newest_line=max(newest) if newest else None,
                       slowdown=slowdown, earlier_step_time_s=before, regime_since_line=since)


def failslow_alert_of(alert: failslow.FailSlowAlert) -> FailSlowAlert:
    return FailSlowAlert(line=alert.line, since_line=alert.since_line, since_step=alert.since_step, step=alert.step,
                         ratio=alert.ratio, confidence=alert.confidence, baseline_s=alert.baseline_s, scope=alert.scope,
                         stream=alert.stream, rank=alert.rank, host=alert.host, summary=alert.describe())
