"""Process telemetry: OpenTelemetry traces, metrics and the logs bridge, set up in one place.

Components never configure exporters; they take an optional tracer (`schedmate.tracing`) and
otherwise use the process-wide providers. An entry point (`schedmate serve`, `schedmate demo`)
builds a `Telemetry` from `TelemetryConfig.resolve(flag)` and installs it for the process.

Configuration, strongest first: the `--otel console|otlp|none` flag (all three signals), then
the standard variables `OTEL_SDK_DISABLED`, `OTEL_TRACES_EXPORTER`, `OTEL_METRICS_EXPORTER`,
`OTEL_LOGS_EXPORTER` (comma lists of otlp/console/none), `OTEL_SERVICE_NAME`,
`OTEL_RESOURCE_ATTRIBUTES`; the OTLP/HTTP exporters read `OTEL_EXPORTER_OTLP_[SIGNAL_]ENDPOINT`,
`_HEADERS` and `_TIMEOUT` themselves, and the metric reader `OTEL_METRIC_EXPORT_INTERVAL`.
Where we depart from the spec: an unset `OTEL_*_EXPORTER` means "none", not "otlp", so a command
run on a laptop does not retry a collector that was never there.

Even with every exporter off, traces are *recorded* (an SDK provider, no exporter), because the
GenAI metrics are derived from the LLM spans (`schedmate.telemetry_genai`).
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal, cast

from opentelemetry import _logs as otel_logs
from opentelemetry import metrics, trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, ConsoleLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor

from schedmate.errors import BadInput
from schedmate.telemetry_genai import GenAIMetrics, GenAISpanProcessor
from schedmate.tracing import TRACER_NAME

__all__ = ["EXPORTERS", "Exporter", "Telemetry", "TelemetryConfig", "TelemetryConfigError", "telemetry_session"]

Exporter = Literal["otlp", "console"]
EXPORTERS = ("otlp", "console", "none")
DEFAULT_SERVICE_NAME = "schedmate"
LOGGER_NAME = "schedmate"  # the logs bridge forwards this logger (and its children) only


class TelemetryConfigError(BadInput):
    """An `--otel` value or `OTEL_*_EXPORTER` variable names no exporter we have."""


@dataclass(frozen=True)
class TelemetryConfig:
    """Where each signal goes (empty: nowhere) and the service's name."""

    traces: tuple[Exporter, ...] = ()
    metrics: tuple[Exporter, ...] = ()
    logs: tuple[Exporter, ...] = ()
    service_name: str | None = None  # None: OTEL_SERVICE_NAME, else "schedmate"
    endpoint: str | None = None  # OTLP/HTTP base URL (…:4318); None: the exporters' OTEL_* variables
    log_level: int = logging.INFO

    @classmethod
    def resolve(cls, flag: str | None = None, env: Mapping[str, str] | None = None, *,
                endpoint: str | None = None) -> TelemetryConfig:
        """The flag when given (all signals), else the `OTEL_*` variables of `env` (os.environ)."""
        env = os.environ if env is None else env
        if flag is not None:
            chosen = _exporters(flag, "--otel")
            return cls(chosen, chosen, chosen, endpoint=endpoint)
        if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
            return cls(endpoint=endpoint)
        traces, metrics, logs = (_exporters(env.get(f"OTEL_{s}_EXPORTER", "none"), f"OTEL_{s}_EXPORTER")
                                 for s in ("TRACES", "METRICS", "LOGS"))
        return cls(traces, metrics, logs, endpoint=endpoint)


def _exporters(text: str, where: str) -> tuple[Exporter, ...]:
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in EXPORTERS]
    if bad:
        raise TelemetryConfigError(f"{where}: unknown exporter {bad[0]!r}; expected one of {', '.join(EXPORTERS)}")
    return tuple(cast(Exporter, n) for n in dict.fromkeys(names) if n != "none")  # checked against EXPORTERS above


@dataclass
class Telemetry:
    """The three SDK providers of one process (or one test), built but not yet installed."""

    config: TelemetryConfig
    tracer_provider: TracerProvider
    meter_provider: MeterProvider
    logger_provider: LoggerProvider
    _handler: logging.Handler | None = field(default=None, repr=False)
    _closed: bool = field(default=False, repr=False)

    @classmethod
    def build(cls, config: TelemetryConfig, *, span_processors: Sequence[SpanProcessor] = (),
              metric_readers: Sequence[MetricReader] = ()) -> Telemetry:
        """Providers exporting as `config` says, plus the given processors/readers (tests pass
        in-memory ones). GenAI metrics are recorded from the LLM spans into the meter provider."""
        attrs = {} if config.service_name is None and os.environ.get("OTEL_SERVICE_NAME") else {
            "service.name": config.service_name or DEFAULT_SERVICE_NAME}
        resource = Resource.create(attrs)
        readers = [*metric_readers, *(PeriodicExportingMetricReader(_metric_exporter(e, config.endpoint))
                                      for e in config.metrics)]
        meter_provider = MeterProvider(resource=resource, metric_readers=readers)
        tracer_provider = TracerProvider(resource=resource)
        tracer_provider.add_span_processor(GenAISpanProcessor(GenAIMetrics(meter_provider.get_meter(TRACER_NAME))))
        for processor in span_processors:
            tracer_provider.add_span_processor(processor)
        for exporter in config.traces:
            tracer_provider.add_span_processor(_span_processor(exporter, config.endpoint))
        logger_provider = LoggerProvider(resource=resource)
        for exporter in config.logs:
            logger_provider.add_log_record_processor(_log_processor(exporter, config.endpoint))
        return cls(config, tracer_provider, meter_provider, logger_provider)

    def install(self) -> Telemetry:
        """Make these the process-wide providers (OTel allows this once per process) and bridge
        the `schedmate` loggers' records into the logs pipeline, with trace and span ids."""
        trace.set_tracer_provider(self.tracer_provider)
        metrics.set_meter_provider(self.meter_provider)
        otel_logs.set_logger_provider(self.logger_provider)
        if self.config.logs:
            self._handler = self.log_handler(self.config.log_level)
            logger = logging.getLogger(LOGGER_NAME)
            logger.addHandler(self._handler)
            if logger.getEffectiveLevel() > self.config.log_level:
                logger.setLevel(self.config.log_level)
        return self

    def log_handler(self, level: int = logging.NOTSET) -> logging.Handler:
        """A `logging` handler that emits records into this logs pipeline (the bridge): the one
        from opentelemetry-instrumentation-logging, else the SDK's (deprecated there, same API)."""
        try:
            from opentelemetry.instrumentation.logging.handler import LoggingHandler
        except ImportError:  # pragma: no cover -- older installs
            from opentelemetry.sdk._logs import LoggingHandler  # type: ignore[assignment]  # the SDK's older class of the same API
        return LoggingHandler(level=level, logger_provider=self.logger_provider)

    def flush_on_signal(self, *signals: signal.Signals) -> None:
        """On these signals (default SIGTERM), flush and stop, then die of the signal as before.

        A process killed by SIGTERM runs neither `finally` blocks nor atexit hooks, and uvicorn
        re-raises the SIGTERM it handled once it has shut down; without this the spans still in
        the batch queue and the last metric export would be lost."""

        def handler(sig: int, _frame: object) -> None:
            self.shutdown()
            signal.signal(sig, signal.SIG_DFL)
            signal.raise_signal(sig)

        for sig in signals or (signal.SIGTERM,):
            signal.signal(sig, handler)

    def shutdown(self) -> None:
        """Flush and stop every exporter (pending spans, the last metric export, buffered logs); once."""
        if self._closed:
            return
        self._closed = True
        if self._handler is not None:
            logging.getLogger(LOGGER_NAME).removeHandler(self._handler)
            self._handler = None
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()
        self.logger_provider.shutdown()


@contextmanager
def telemetry_session(flag: str | None = None, *, span_processors: Sequence[SpanProcessor] = (),
                      endpoint: str | None = None) -> Iterator[Telemetry]:
    """Build and install the process's telemetry for the duration of a command; flush at exit."""
    tel = Telemetry.build(TelemetryConfig.resolve(flag, endpoint=endpoint), span_processors=span_processors).install()
    try:
        yield tel
    finally:
        tel.shutdown()


def _otlp_url(endpoint: str | None, signal: str) -> str | None:
    return None if endpoint is None else f"{endpoint.rstrip('/')}/v1/{signal}"


def _span_processor(exporter: Exporter, endpoint: str | None) -> SpanProcessor:
    if exporter == "console":
        return SimpleSpanProcessor(ConsoleSpanExporter())
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return BatchSpanProcessor(OTLPSpanExporter(endpoint=_otlp_url(endpoint, "traces")))


def _metric_exporter(exporter: Exporter, endpoint: str | None):
    if exporter == "console":
        return ConsoleMetricExporter()
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    return OTLPMetricExporter(endpoint=_otlp_url(endpoint, "metrics"))


def _log_processor(exporter: Exporter, endpoint: str | None):
    if exporter == "console":
        return SimpleLogRecordProcessor(ConsoleLogRecordExporter())
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

    return BatchLogRecordProcessor(OTLPLogExporter(endpoint=_otlp_url(endpoint, "logs")))
