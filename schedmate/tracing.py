"""OpenTelemetry tracing helpers shared by every component.

Components take an optional `tracer`; when none is given they use the global provider's tracer
named "schedmate" (a no-op until `configure_tracing` or the host application installs a provider).
Tests pass a tracer from their own `TracerProvider` with an in-memory exporter.
"""

from __future__ import annotations

from typing import Literal

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

TRACER_NAME = "schedmate"

# GenAI semantic-convention attribute names (development status; pinned here in one place).
GEN_AI_OPERATION = "gen_ai.operation.name"
GEN_AI_PROVIDER = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_MAX_TOKENS = "gen_ai.request.max_tokens"
GEN_AI_TEMPERATURE = "gen_ai.request.temperature"
GEN_AI_FINISH_REASONS = "gen_ai.response.finish_reasons"
GEN_AI_RESPONSE_ID = "gen_ai.response.id"
GEN_AI_AGENT_NAME = "gen_ai.agent.name"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
GEN_AI_TOOL_TYPE = "gen_ai.tool.type"
GEN_AI_TOKEN_TYPE = "gen_ai.token.type"  # metric attribute: "input" / "output"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
ERROR_TYPE = "error.type"
# SchedMate's own attributes (no semconv equivalent): which attempt of a validated extraction a
# chat call was, and how many re-asks an extraction needed.
SCHEDMATE_LLM_ATTEMPT = "schedmate.llm.attempt"
SCHEDMATE_LLM_RETRIES = "schedmate.llm.retries"
SCHEDMATE_LLM_SCHEMA = "schedmate.llm.schema"


def get_tracer(tracer: Tracer | None = None) -> Tracer:
    """The tracer to use: the one given, else the global provider's "schedmate" tracer."""
    return tracer if tracer is not None else trace.get_tracer(TRACER_NAME)


ExporterName = Literal["otlp", "console", "none", "memory"]


def configure_tracing(
    exporter: ExporterName | SpanExporter = "none",
    endpoint: str | None = None,
    *,
    service_name: str = "schedmate",
    set_global: bool = False,
) -> TracerProvider:
    """Build a `TracerProvider` exporting to OTLP/HTTP, the console, memory, or nowhere.

    Returned rather than installed so that callers (CLI, tests, host applications) own it;
    `set_global=True` also installs it as the process-wide provider (once per process, by OTel's
    rules). `endpoint` is the OTLP/HTTP traces URL (e.g. http://collector:4318/v1/traces); when
    None the exporter honours OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT. An exporter instance may be
    passed directly (tests pass their own `InMemorySpanExporter`; see `memory_tracing`).
    """
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    if isinstance(exporter, SpanExporter):
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    elif exporter == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    elif exporter == "console":
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    elif exporter == "memory":
        provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    elif exporter != "none":
        raise ValueError(f"unknown exporter {exporter!r}; expected otlp, console, none or memory")
    if set_global:
        trace.set_tracer_provider(provider)
    return provider


def memory_tracing() -> tuple[TracerProvider, InMemorySpanExporter]:
    """A provider with a synchronous in-memory exporter, returned together so tests can read spans."""
    exporter = InMemorySpanExporter()
    return configure_tracing(exporter), exporter
