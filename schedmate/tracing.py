"""OpenTelemetry tracing helpers shared by every component.

Components take an optional `tracer`; when none is given they use the global provider's tracer
named "schedmate" (a no-op until `configure_tracing` or the host application installs a provider).
Tests pass a tracer from their own `TracerProvider` with an in-memory exporter.
"""

from __future__ import annotations

from opentelemetry import trace
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


def get_tracer(tracer: Tracer | None = None) -> Tracer:
    """The tracer to use: the one given, else the global provider's "schedmate" tracer."""
    return tracer if tracer is not None else trace.get_tracer(TRACER_NAME)
