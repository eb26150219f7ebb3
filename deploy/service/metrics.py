"""Prometheus metrics of `schedmate serve` (`GET /metrics`), one registry per app.

Names follow Prometheus conventions (base units in the name, `_total` counters); every label has
a bounded value set: routes are the app's route templates (else "other"), operations the core's
method names, categories/components the failure taxonomy, models at most `max_models` names
(then "other"). The one per-job series, `schedmate_job_step_seconds{job}`, keeps only the
`max_job_series` most recently tracked jobs: an evicted job's series is removed, so a cluster that
runs a million jobs still exposes at most that many.

What is recorded where: the HTTP middleware (`HTTPMetrics`) times every request; `call()` in the
app reports errors by kind and hands each answer to `observe`, which reads failures, advisor
matches, step times and slowdowns off the typed responses; LLM calls arrive from the GenAI span
processor (`observe_llm`); the work queue is read at scrape time (`QueueCollector`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from schedmate.deploy.service.limits import WorkQueue
from schedmate.deploy.service.models import (
    SCHEDULER_DEFAULT,
    AdviseRequest,
    AdviseResponse,
    DiagnoseResponse,
    JobAck,
    JobEndRequest,
    TrackRequest,
    TrackResponse,
)
from schedmate.telemetry_genai import GenAICall

__all__ = ["HTTPMetrics", "QueueCollector", "ServiceMetrics", "exported_names"]

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
LLM_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0)
RATIO_BUCKETS = (0.5, 0.8, 0.9, 0.95, 1.05, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0)
ERROR_RATIO_BUCKETS = (1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0)  # le="2.0": estimates within 2x
NO_VALUE = "none"
log = logging.getLogger("schedmate.service.metrics")
DEFAULT_MAX_JOB_SERIES = 100
DEFAULT_MAX_MODELS = 8
DEFAULT_MAX_ADVISED = 4096  # estimates kept until the job ends, to score the advisor on line


class ServiceMetrics:
    """The service's metrics in their own `CollectorRegistry` (no process-global state)."""

    def __init__(self, *, max_job_series: int = DEFAULT_MAX_JOB_SERIES, max_models: int = DEFAULT_MAX_MODELS,
                 max_advised: int = DEFAULT_MAX_ADVISED) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.http_duration = Histogram(
            "schedmate_http_request_duration_seconds", "HTTP request latency by route template and status code",
            ["route", "status"], buckets=LATENCY_BUCKETS, registry=r)
        self.http_in_flight = Gauge("schedmate_http_requests_in_flight", "HTTP requests being served", registry=r)
        self.errors = Counter("schedmate_errors_total", "API calls that ended in an error answer, by kind",
                              ["operation", "kind"], registry=r)
        self.fallbacks = Counter("schedmate_fallback_answers_total",
                                 "Answers telling the scheduler to keep its own default", ["operation"], registry=r)
        self.failures = Counter("schedmate_failures_total", "Failures diagnosed, by category and faulty component",
                                ["category", "component"], registry=r)
        self.diagnoses = Counter("schedmate_diagnoses_total", "Logs diagnosed, by outcome", ["status"], registry=r)
        self.advisor_requests = Counter("schedmate_advisor_requests_total", "Advise calls answered", registry=r)
        self.advisor_matches = Counter("schedmate_advisor_matches_total",
                                       "Advise calls that found at least one similar past job", registry=r)
        self.advisor_estimates = Counter("schedmate_advisor_estimates_total",
                                         "Advise calls answered with a duration estimate", registry=r)
        self.advisor_error = Histogram(
            "schedmate_advisor_duration_error_ratio",
            "max(estimate/actual, actual/estimate) of advised jobs' durations once they end (1 = exact, 2 = off by 2x)",
            buckets=ERROR_RATIO_BUCKETS, registry=r)
        self.track_results = Counter("schedmate_tracker_results_total", "Track calls, by whether the log had progress",
                                     ["signal"], registry=r)
        self.step_seconds = Gauge("schedmate_job_step_seconds",
                                  f"Steady step time of a tracked job (the {max_job_series} most recent jobs)",
                                  ["job"], registry=r)
        self.slowdown = Histogram("schedmate_job_slowdown_ratio",
                                  "Step-time ratio after/before a time of interest (>1: the job slowed down)",
                                  buckets=RATIO_BUCKETS, registry=r)
        self.llm_duration = Histogram("schedmate_llm_request_duration_seconds", "LLM and embedding call latency",
                                      ["operation", "model", "outcome"], buckets=LLM_BUCKETS, registry=r)
        self.llm_tokens = Counter("schedmate_llm_tokens_total", "Tokens sent to (input) and generated by (output) models",
                                  ["operation", "direction"], registry=r)
        self.max_job_series = max_job_series
        self.max_models = max_models
        self.max_advised = max_advised
        self._jobs: OrderedDict[str, None] = OrderedDict()
        self._models: set[str] = set()
        self._advised: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()  # LLM calls report from worker threads

    # ------------------------------------------------------------------ answers

    def observe(self, operation: str, request: Any, answer: Any) -> None:
        """Record what an answer says (its type decides which metrics apply); never raises."""
        try:
            self._observe(operation, request, answer)
        except Exception:  # noqa: BLE001 -- a metrics bug must not turn an answer into a 500
            log.exception("recording metrics for %s failed", operation)

    def _observe(self, operation: str, request: Any, answer: Any) -> None:
        if getattr(answer, "fallback", None) == SCHEDULER_DEFAULT:
            self.fallbacks.labels(operation).inc()
        if isinstance(answer, AdviseResponse):
            self._advise(request, answer)
        elif isinstance(answer, TrackResponse):
            self._track(request, answer)
        elif isinstance(answer, DiagnoseResponse):
            self._diagnosis(answer)
        elif isinstance(answer, JobAck):
            if answer.diagnosis is not None:
                self._diagnosis(answer.diagnosis)
            if isinstance(request, JobEndRequest) and answer.stored:
                self._ended(request)

    def error(self, operation: str, kind: str) -> None:
        self.errors.labels(operation, kind).inc()

    def _advise(self, req: AdviseRequest, out: AdviseResponse) -> None:
        self.advisor_requests.inc()
        if out.matches:
            self.advisor_matches.inc()
        if out.estimate is not None and out.estimate.duration_s:
            self.advisor_estimates.inc()
            if req.job_id:
                with self._lock:
                    self._advised[req.job_id] = float(out.estimate.duration_s)
                    self._advised.move_to_end(req.job_id)
                    while len(self._advised) > self.max_advised:
                        self._advised.popitem(last=False)

    def _ended(self, req: JobEndRequest) -> None:
        with self._lock:
            estimate = self._advised.pop(req.job_id, None)
        if estimate and req.duration_s and req.status == "completed":
            self.advisor_error.observe(max(estimate / req.duration_s, req.duration_s / estimate))

    def _track(self, req: TrackRequest, out: TrackResponse) -> None:
        self.track_results.labels("true" if out.signal else "false").inc()
        step = out.step_time
        scale = {"s": 1.0, "ms": 1e-3}.get(step.unit) if step is not None else None
        if step is not None and scale is not None and req.job_id:
            self._set_step(req.job_id, step.value * scale)
        if out.ratio and out.ratio > 0:  # throughput after/before; step time moves the other way
            self.slowdown.observe(1.0 / out.ratio)

    def _set_step(self, job: str, seconds: float) -> None:
        with self._lock:
            self._jobs[job] = None
            self._jobs.move_to_end(job)
            evicted = []
            while len(self._jobs) > self.max_job_series:
                evicted.append(self._jobs.popitem(last=False)[0])
        for old in evicted:
            self.step_seconds.remove(old)
        self.step_seconds.labels(job).set(seconds)

    def _diagnosis(self, d: DiagnoseResponse) -> None:
        self.diagnoses.labels(d.status).inc()
        if d.status == "failure_found":
            self.failures.labels(d.category or NO_VALUE, d.component or NO_VALUE).inc()

    # ------------------------------------------------------------------ LLM calls

    def observe_llm(self, call: GenAICall) -> None:
        """A finished model call (a `GenAISpanProcessor` listener)."""
        with self._lock:
            if call.model not in self._models and len(self._models) < self.max_models:
                self._models.add(call.model)
            model = call.model if call.model in self._models else "other"
        self.llm_duration.labels(call.operation, model, "error" if call.error_type else "ok").observe(call.duration_s)
        for direction, n in (("input", call.input_tokens), ("output", call.output_tokens)):
            if n:
                self.llm_tokens.labels(call.operation, direction).inc(n)


class QueueCollector(Collector):
    """The work queue read at scrape time (its own counters are the truth; nothing is double-counted)."""

    def __init__(self, queue: WorkQueue) -> None:
        self.queue = queue

    def collect(self) -> Iterator[Metric]:
        s = self.queue.stats()
        yield GaugeMetricFamily("schedmate_work_queue_slots", "Calls admitted at once", value=s["slots"])
        yield GaugeMetricFamily("schedmate_work_queue_busy", "Calls running or waiting for the models (queue depth)",
                                value=s["busy"])
        yield CounterMetricFamily("schedmate_work_queue_rejected", "Calls refused with 429 (queue full)",
                                  value=s["rejected"])
        yield CounterMetricFamily("schedmate_work_queue_timeouts", "Calls answered 504", value=s["timed_out"])
        yield CounterMetricFamily("schedmate_work_queue_completed", "Calls that finished", value=s["completed"])


class HTTPMetrics:
    """ASGI middleware: latency and status of every HTTP request, by route template (bounded).
    (The request's SERVER span is FastAPI's own telemetry's.)"""

    def __init__(self, app: ASGIApp, metrics: ServiceMetrics) -> None:
        self.app = app
        self.metrics = metrics
        self._paths: frozenset[str] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        status = 500
        m = self.metrics

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        m.http_in_flight.inc()
        try:
            await self.app(scope, receive, send_status)
        finally:
            m.http_in_flight.dec()
            m.http_duration.labels(self._route(scope), str(status)).observe(time.perf_counter() - t0)

    def _route(self, scope: Scope) -> str:
        route = scope.get("route")
        if route is not None and getattr(route, "path", None):
            return str(route.path)
        if self._paths is None and scope.get("app") is not None:  # requests answered before routing
            self._paths = frozenset(p for p in (getattr(r, "path", None) for r in scope["app"].routes) if p)
        path = scope.get("path", "")
        return path if self._paths and path in self._paths else "other"


def exported_names(families: Iterable[Metric]) -> set[str]:
    """Every sample name these metric families expose (`registry.collect()`, or a parsed scrape,
    which lists every family even before its first labelled series exists)."""
    suffixes: dict[str, Iterable[str]] = {
        "counter": ("_total", "_created"), "histogram": ("_bucket", "_sum", "_count", "_created"),
        "summary": ("", "_sum", "_count", "_created"), "gauge": ("",), "info": ("_info",),
        "stateset": ("",), "gaugehistogram": ("_bucket", "_gsum", "_gcount"), "unknown": ("",),
    }
    names: set[str] = set()
    for family in families:
        names.update(family.name + s for s in suffixes.get(family.type, ("",)))
        names.update(s.name for s in family.samples)
    return names

