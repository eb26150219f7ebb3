"""The Grafana dashboards, as code (grafanalib): one for cluster operators, one for the service.

Every query reads a metric `schedmate serve` exposes on `/metrics`
(`deploy/service/metrics.py`; tests/test_dashboards.py checks each name against a scrape).
Both dashboards take the Prometheus data source as a variable, so one JSON file imports anywhere.
Rates use `$__rate_interval`; "over the range" panels use `$__range`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from grafanalib._gen import DashboardEncoder
from grafanalib.core import (
    Dashboard,
    GridPos,
    RowPanel,
    Stat,
    Table,
    Target,
    Template,
    Templating,
    Time,
    TimeSeries,
)

__all__ = ["DASHBOARDS", "metric_names", "operators", "queries", "render", "service", "write_all"]

DS = "${datasource}"
RATE = "$__rate_interval"
WIDTH = 24


def _target(expr: str, legend: str = "", ref: str = "A", *, instant: bool = False) -> Target:
    return Target(expr=expr, legendFormat=legend, refId=ref, datasource=DS, instant=instant)


def _targets(*pairs: tuple[str, str]) -> list[Target]:
    return [_target(expr, legend, chr(ord("A") + i)) for i, (expr, legend) in enumerate(pairs)]


def _ratio(num: str, den: str) -> str:
    """num/den over the dashboard's range, with no division by zero while nothing happened."""
    return f"sum(increase({num}[$__range])) / clamp_min(sum(increase({den}[$__range])), 1)"


def _quantiles(bucket: str, by: str = "", selector: str = "") -> list[Target]:
    group = f"le, {by}" if by else "le"
    series = " {{" + by + "}}" if by else ""
    return [_target(f"histogram_quantile({q}, sum by ({group}) (rate({bucket}{selector}[{RATE}])))",
                    f"p{round(q * 100)}{series}", chr(ord("A") + i)) for i, q in enumerate((0.5, 0.9, 0.99))]


class _Layout:
    """Places panels left to right in rows of 24 columns (Grafana's grid)."""

    def __init__(self) -> None:
        self.y = 0
        self.x = 0
        self.row_h = 0
        self.panels: list[Any] = []

    def row(self, title: str) -> None:
        self._newline()
        self.panels.append(RowPanel(title=title, gridPos=GridPos(h=1, w=WIDTH, x=0, y=self.y)))
        self.y += 1

    def add(self, panel_cls: type, w: int, h: int = 8, **kw: Any) -> None:
        if panel_cls is Stat:
            kw.setdefault("reduceCalc", "lastNotNull")  # a ratio over the range is its last value
        if self.x + w > WIDTH:
            self._newline()
        self.panels.append(panel_cls(dataSource=DS, gridPos=GridPos(h=h, w=w, x=self.x, y=self.y), **kw))
        self.x += w
        self.row_h = max(self.row_h, h)

    def _newline(self) -> None:
        self.y += self.row_h
        self.x = self.row_h = 0


def _dashboard(title: str, uid: str, description: str, panels: list[Any]) -> Dashboard:
    datasource = Template(name="datasource", label="Prometheus", query="prometheus", type="datasource",
                          default="Prometheus")
    return Dashboard(title=title, uid=uid, description=description, tags=["schedmate"], panels=panels,
                     templating=Templating(list=[datasource]), time=Time("now-6h", "now"), refresh="30s",
                     timezone="utc").auto_panel_ids()


def operators() -> Dashboard:
    """For cluster operators: step-time slowdowns, failures by category and component, advisor
    coverage and error."""
    g = _Layout()
    g.row("Training jobs: step time")
    g.add(TimeSeries, 12, title="Step time, 10 slowest tracked jobs", unit="s",
          description="Steady step time per job (the most recently tracked jobs only; bounded label).",
          targets=[_target("topk(10, schedmate_job_step_seconds)", "{{job}}")])
    g.add(TimeSeries, 12, title="Step-time slowdown after a time of interest",
          description="Step time after / before the `split_at` of /v1/track (>1: slower).",
          targets=_quantiles("schedmate_job_slowdown_ratio_bucket"))
    g.add(Stat, 6, title="Comparisons >25% slower", format="percentunit",
          description="Share of before/after comparisons whose step time grew by more than 25%.",
          targets=[_target("(sum(increase(schedmate_job_slowdown_ratio_count[$__range])) - "
                           'sum(increase(schedmate_job_slowdown_ratio_bucket{le="1.25"}[$__range]))) / '
                           "clamp_min(sum(increase(schedmate_job_slowdown_ratio_count[$__range])), 1)")])
    g.add(Stat, 6, title="Logs with a progress signal", format="percentunit",
          targets=[_target(_ratio('schedmate_tracker_results_total{signal="true"}', "schedmate_tracker_results_total"))])
    g.add(TimeSeries, 12, title="Track calls by signal", unit="reqps",
          targets=[_target(f"sum by (signal) (rate(schedmate_tracker_results_total[{RATE}]))", "signal={{signal}}")])
    g.row("Failures")
    g.add(TimeSeries, 12, title="Failures by category", stacking={"mode": "normal"}, drawStyle="bars",
          targets=[_target(f"sum by (category) (increase(schedmate_failures_total[{RATE}]))", "{{category}}")])
    g.add(TimeSeries, 12, title="Failures by faulty component", stacking={"mode": "normal"}, drawStyle="bars",
          targets=[_target(f"sum by (component) (increase(schedmate_failures_total[{RATE}]))", "{{component}}")])
    g.add(Table, 12, title="Failures by category and component (range)",
          targets=[_target("sum by (category, component) (increase(schedmate_failures_total[$__range]))",
                           instant=True)])
    g.add(TimeSeries, 12, title="Diagnoses by outcome", unit="reqps",
          targets=[_target(f"sum by (status) (rate(schedmate_diagnoses_total[{RATE}]))", "{{status}}")])
    g.row("Scheduling advisor")
    g.add(Stat, 6, title="Advisor coverage", format="percentunit",
          description="Advise calls answered with a duration estimate (the rest keep the scheduler's default).",
          targets=[_target(_ratio("schedmate_advisor_estimates_total", "schedmate_advisor_requests_total"))])
    g.add(Stat, 6, title="Advisor match rate", format="percentunit",
          description="Advise calls that found at least one similar past job.",
          targets=[_target(_ratio("schedmate_advisor_matches_total", "schedmate_advisor_requests_total"))])
    g.add(Stat, 6, title="Estimates within 2x", format="percentunit",
          description="Advised jobs that ended within 2x of their estimated duration.",
          targets=[_target(_ratio('schedmate_advisor_duration_error_ratio_bucket{le="2.0"}',
                                  "schedmate_advisor_duration_error_ratio_count"))])
    g.add(Stat, 6, title="Jobs scored", targets=[_target(
        "sum(increase(schedmate_advisor_duration_error_ratio_count[$__range]))")])
    g.add(TimeSeries, 24, title="Advisor duration error (max(est/actual, actual/est))",
          targets=_quantiles("schedmate_advisor_duration_error_ratio_bucket"))
    return _dashboard("SchedMate: cluster", "schedmate-operators",
                      "Training-job slowdowns, failures and advisor quality as SchedMate sees them.", g.panels)


def service() -> Dashboard:
    """For whoever runs `schedmate serve`: latency, errors, queue, LLM calls and tokens."""
    http = "schedmate_http_request_duration_seconds"
    g = _Layout()
    g.row("HTTP")
    g.add(TimeSeries, 12, title="Requests by route", unit="reqps",
          targets=[_target(f"sum by (route) (rate({http}_count[{RATE}]))", "{{route}}")])
    g.add(TimeSeries, 12, title="Latency of /v1 calls", unit="s",
          targets=_quantiles(f"{http}_bucket", "route", '{route=~"/v1/.*"}'))
    g.add(TimeSeries, 12, title="Error ratio (5xx and 429)", unit="percentunit",
          targets=[_target(f'sum(rate({http}_count{{status=~"5..|429"}}[{RATE}])) / '
                           f"clamp_min(sum(rate({http}_count[{RATE}])), 1e-9)", "errors")])
    g.add(TimeSeries, 12, title="Errors by operation and kind", unit="reqps",
          targets=[_target(f"sum by (operation, kind) (rate(schedmate_errors_total[{RATE}]))", "{{operation}} {{kind}}")])
    g.add(TimeSeries, 12, title="Answers falling back to the scheduler's default", unit="reqps",
          targets=[_target(f"sum by (operation) (rate(schedmate_fallback_answers_total[{RATE}]))", "{{operation}}")])
    g.add(TimeSeries, 12, title="Requests in flight", targets=[_target("schedmate_http_requests_in_flight", "in flight")])
    g.row("Work queue")
    g.add(TimeSeries, 12, title="Queue depth vs slots", targets=_targets(
        ("schedmate_work_queue_busy", "busy"), ("schedmate_work_queue_slots", "slots")))
    g.add(TimeSeries, 12, title="Rejected (429), timed out (504), completed", unit="reqps", targets=_targets(
        (f"rate(schedmate_work_queue_rejected_total[{RATE}])", "rejected"),
        (f"rate(schedmate_work_queue_timeouts_total[{RATE}])", "timed out"),
        (f"rate(schedmate_work_queue_completed_total[{RATE}])", "completed")))
    g.row("LLM and embeddings")
    g.add(TimeSeries, 12, title="LLM call latency", unit="s",
          targets=_quantiles("schedmate_llm_request_duration_seconds_bucket", "operation"))
    g.add(TimeSeries, 12, title="Tokens per second", unit="short",
          targets=[_target(f'sum by (direction) (rate(schedmate_llm_tokens_total{{operation="chat"}}[{RATE}]))',
                           "{{direction}}")])
    g.add(TimeSeries, 12, title="LLM calls by outcome", unit="reqps",
          targets=[_target(f"sum by (operation, outcome) (rate(schedmate_llm_request_duration_seconds_count[{RATE}]))",
                           "{{operation}} {{outcome}}")])
    g.add(Stat, 12, title="Tokens over the range", targets=[_target(
        'sum(increase(schedmate_llm_tokens_total{operation="chat"}[$__range]))')])
    return _dashboard("SchedMate: service", "schedmate-service",
                      "Latency, errors, work queue and model calls of `schedmate serve`.", g.panels)


DASHBOARDS: dict[str, Callable[[], Dashboard]] = {"schedmate-operators": operators, "schedmate-service": service}


def render(dashboard: Dashboard) -> dict[str, Any]:
    """The dashboard as Grafana's JSON model."""
    return json.loads(json.dumps(dashboard.to_json_data(), cls=DashboardEncoder))


def write_all(out: Path) -> list[Path]:
    """Write every dashboard to `out/<uid>.json` (stable formatting, so a regenerated file diffs cleanly)."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, build in DASHBOARDS.items():
        path = out / f"{name}.json"
        path.write_text(json.dumps(render(build()), indent=2, sort_keys=True) + "\n")
        written.append(path)
    return written


def queries(model: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(panel title, PromQL) for every target of every panel, rows' nested panels included."""
    stack = list(model.get("panels", []))
    while stack:
        panel = stack.pop(0)
        stack.extend(panel.get("panels", []))
        for target in panel.get("targets", []):
            if target.get("expr"):
                yield panel.get("title", ""), target["expr"]


_IDENT = re.compile(r"(?<![\w:$])([a-zA-Z_:][\w:]*)")


def metric_names(expr: str) -> set[str]:
    """The `schedmate_*` metric names a PromQL expression reads (label values and names excluded:
    quoted strings are dropped first, and no label of ours starts with `schedmate_`)."""
    unquoted = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    return {m for m in _IDENT.findall(unquoted) if m.startswith("schedmate_")}
