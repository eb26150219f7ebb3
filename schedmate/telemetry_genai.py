"""GenAI client metrics derived from the GenAI spans, the way a collector's span-metrics connector does.

Every LLM and embedding call already ends in a span with the GenAI attributes (model, tokens,
error type; `schedmate.llm_tracing`, `embeddings.embedder`). A span processor turns each into a
`GenAICall` and hands it to listeners: `GenAIMetrics` records the semconv histograms
`gen_ai.client.operation.duration` and `gen_ai.client.token.usage`; the service's Prometheus
metrics listen too. One hook, so no call is counted by one sink and missed by another.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from opentelemetry.context import Context
from opentelemetry.metrics import Meter
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from schedmate.tracing import (
    ERROR_TYPE,
    GEN_AI_INPUT_TOKENS,
    GEN_AI_OPERATION,
    GEN_AI_OUTPUT_TOKENS,
    GEN_AI_PROVIDER,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_TOKEN_TYPE,
)

__all__ = ["CLIENT_OPERATIONS", "GenAICall", "GenAIMetrics", "GenAISpanProcessor", "genai_call"]

CLIENT_OPERATIONS = frozenset({"chat", "text_completion", "embeddings", "generate_content"})
# semconv's advised bucket boundaries
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304)


@dataclass(frozen=True)
class GenAICall:
    """One finished model call as the metrics see it."""

    operation: str
    model: str
    provider: str | None
    duration_s: float
    input_tokens: int | None
    output_tokens: int | None
    error_type: str | None


def genai_call(span: ReadableSpan) -> GenAICall | None:
    """The call a span records, or None for a span that is not a GenAI client call."""
    attrs = span.attributes or {}
    op = attrs.get(GEN_AI_OPERATION)
    if op not in CLIENT_OPERATIONS or span.start_time is None or span.end_time is None:
        return None
    tokens_in, tokens_out = attrs.get(GEN_AI_INPUT_TOKENS), attrs.get(GEN_AI_OUTPUT_TOKENS)
    error = attrs.get(ERROR_TYPE)
    return GenAICall(
        operation=str(op), model=str(attrs.get(GEN_AI_REQUEST_MODEL) or "unknown"),
        provider=str(attrs[GEN_AI_PROVIDER]) if attrs.get(GEN_AI_PROVIDER) else None,
        duration_s=max(0.0, (span.end_time - span.start_time) / 1e9),
        input_tokens=int(tokens_in) if isinstance(tokens_in, int) else None,
        output_tokens=int(tokens_out) if isinstance(tokens_out, int) else None,
        error_type=str(error) if error else None)


Listener = Callable[[GenAICall], None]


class GenAISpanProcessor(SpanProcessor):
    """Calls each listener with every GenAI client span that ends (a failing listener is skipped)."""

    def __init__(self, *listeners: Listener) -> None:
        self.listeners = list(listeners)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        call = genai_call(span)
        if call is None:
            return
        for listener in self.listeners:
            try:
                listener(call)
            except Exception:  # noqa: BLE001,S112 -- telemetry must never break a model call
                continue

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class GenAIMetrics:
    """The GenAI semconv client metrics on an OTel meter."""

    def __init__(self, meter: Meter) -> None:
        self._duration = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s", description="GenAI operation duration",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS))
        self._tokens = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}", description="Tokens used per GenAI call",
            explicit_bucket_boundaries_advisory=list(TOKEN_BUCKETS))

    def __call__(self, call: GenAICall) -> None:
        attrs: dict[str, str] = {GEN_AI_OPERATION: call.operation, GEN_AI_REQUEST_MODEL: call.model}
        if call.provider:
            attrs[GEN_AI_PROVIDER] = call.provider
        if call.error_type:
            attrs[ERROR_TYPE] = call.error_type
        self._duration.record(call.duration_s, attrs)
        for kind, n in (("input", call.input_tokens), ("output", call.output_tokens)):
            if n is not None:
                self._tokens.record(n, {**attrs, GEN_AI_TOKEN_TYPE: kind})
