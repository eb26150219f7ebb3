"""OpenTelemetry GenAI spans for LangChain chat-model calls.

A LangChain callback handler rather than a wrapper around the model: it is attached once, at
construction (`make_chat_model`), and then sees *every* call made through that model -- plain
`invoke`, `with_structured_output`, tool-binding, agents, batch -- including the provider's
own token usage, finish reasons and response model, without re-implementing the Runnable API.
It runs inline so each span's parent is the caller's current span (e.g. an `extract` span).
"""

from __future__ import annotations

import threading
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from schedmate.tracing import (
    ERROR_TYPE,
    GEN_AI_FINISH_REASONS,
    GEN_AI_INPUT_TOKENS,
    GEN_AI_MAX_TOKENS,
    GEN_AI_OPERATION,
    GEN_AI_OUTPUT_TOKENS,
    GEN_AI_PROVIDER,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_RESPONSE_ID,
    GEN_AI_RESPONSE_MODEL,
    GEN_AI_TEMPERATURE,
    GEN_AI_TOOL_CALL_ID,
    GEN_AI_TOOL_NAME,
    GEN_AI_TOOL_TYPE,
    SCHEDMATE_LLM_ATTEMPT,
    SERVER_ADDRESS,
    SERVER_PORT,
    get_tracer,
)


class GenAITracingHandler(BaseCallbackHandler):
    """One CLIENT span `chat {model}` per chat-model call, with GenAI semconv attributes.

    `provider`/`server_*` describe the endpoint (LangChain only knows "openai" for any
    OpenAI-compatible server); request parameters are read from the call's own invocation
    params so `.bind(...)` overrides are reported truthfully.
    """

    run_inline = True  # keep OTel context: the span must nest under the caller's span
    raise_error = False  # tracing must never break a call

    def __init__(
        self,
        tracer: Tracer | None = None,
        *,
        provider: str | None = None,
        server_address: str | None = None,
        server_port: int | None = None,
    ) -> None:
        self._tracer = get_tracer(tracer)
        self.provider = provider
        self.server_address = server_address
        self.server_port = server_port
        self._spans: dict[UUID, Span] = {}
        self._lock = threading.Lock()

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        meta = metadata or {}
        params = kwargs.get("invocation_params") or {}
        model = params.get("model") or params.get("model_name") or meta.get("ls_model_name") or "unknown"
        attrs: dict[str, Any] = {
            GEN_AI_OPERATION: "chat",
            GEN_AI_PROVIDER: self.provider or meta.get("ls_provider") or "unknown",
            GEN_AI_REQUEST_MODEL: model,
        }
        max_tokens = params.get("max_tokens", params.get("max_completion_tokens", meta.get("ls_max_tokens")))
        temperature = params.get("temperature", meta.get("ls_temperature"))
        optional = {
            GEN_AI_MAX_TOKENS: max_tokens,
            GEN_AI_TEMPERATURE: temperature,
            SERVER_ADDRESS: self.server_address,
            SERVER_PORT: self.server_port,
            SCHEDMATE_LLM_ATTEMPT: meta.get(SCHEDMATE_LLM_ATTEMPT),
        }
        attrs.update({k: v for k, v in optional.items() if v is not None})
        span = self._tracer.start_span(f"chat {model}", kind=SpanKind.CLIENT, attributes=attrs)
        with self._lock:
            self._spans[run_id] = span

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            span = self._spans.pop(run_id, None)
        if span is None:
            return
        for key, value in _response_attributes(response).items():
            span.set_attribute(key, value)
        span.end()

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            span = self._spans.pop(run_id, None)
        if span is None:
            return
        span.set_attribute(ERROR_TYPE, type(error).__qualname__)
        span.record_exception(error)
        span.set_status(Status(StatusCode.ERROR, str(error)[:200]))
        span.end()


class GenAIToolTracingHandler(BaseCallbackHandler):
    """One INTERNAL span `execute_tool {name}` per LangChain tool call (GenAI semconv).

    Passed in an agent run's `config={"callbacks": [...]}` so it sees every tool the graph
    executes; it ignores model, chain and retriever events (the model's own handler traces
    those), so no chat call is traced twice.
    """

    run_inline = True
    raise_error = False
    # tool events are dispatched under `ignore_agent`, so that one must stay False
    ignore_llm = ignore_chat_model = ignore_chain = ignore_retriever = ignore_retry = True

    def __init__(self, tracer: Tracer | None = None) -> None:
        self._tracer = get_tracer(tracer)
        self._spans: dict[UUID, Span] = {}
        self._lock = threading.Lock()

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        tool_call_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        name = str((serialized or {}).get("name") or kwargs.get("name") or "tool")
        attrs: dict[str, Any] = {GEN_AI_OPERATION: "execute_tool", GEN_AI_TOOL_NAME: name, GEN_AI_TOOL_TYPE: "function"}
        if tool_call_id:
            attrs[GEN_AI_TOOL_CALL_ID] = str(tool_call_id)
        span = self._tracer.start_span(f"execute_tool {name}", kind=SpanKind.INTERNAL, attributes=attrs)
        with self._lock:
            self._spans[run_id] = span

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            span = self._spans.pop(run_id, None)
        if span is not None:
            span.end()

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            span = self._spans.pop(run_id, None)
        if span is None:
            return
        span.set_attribute(ERROR_TYPE, type(error).__qualname__)
        span.set_status(Status(StatusCode.ERROR, str(error)[:200]))
        span.end()


def _response_attributes(response: LLMResult) -> dict[str, Any]:
    """Usage, response model/id and finish reasons from a chat result (message first, then llm_output)."""
    attrs: dict[str, Any] = {}
    llm_output = response.llm_output or {}
    gens = [g for batch in response.generations for g in batch]
    finish = [str(info["finish_reason"]) for g in gens if (info := g.generation_info or {}).get("finish_reason")]
    usage_in = usage_out = 0
    have_usage = False
    for g in gens:
        if isinstance(g, ChatGeneration):
            msg = g.message
            meta = msg.response_metadata or {}
            if not finish and meta.get("finish_reason"):
                finish.append(str(meta["finish_reason"]))
            attrs.setdefault(GEN_AI_RESPONSE_MODEL, meta.get("model_name"))
            attrs.setdefault(GEN_AI_RESPONSE_ID, meta.get("id") or getattr(msg, "id", None))
            usage = getattr(msg, "usage_metadata", None)
            if usage:
                have_usage = True
                usage_in += int(usage.get("input_tokens") or 0)
                usage_out += int(usage.get("output_tokens") or 0)
    if not have_usage and isinstance(llm_output.get("token_usage"), dict):
        tu = llm_output["token_usage"]
        have_usage = True
        usage_in = int(tu.get("prompt_tokens") or 0)
        usage_out = int(tu.get("completion_tokens") or 0)
    if have_usage:
        attrs[GEN_AI_INPUT_TOKENS] = usage_in
        attrs[GEN_AI_OUTPUT_TOKENS] = usage_out
    if not attrs.get(GEN_AI_RESPONSE_MODEL) and llm_output.get("model_name"):
        attrs[GEN_AI_RESPONSE_MODEL] = llm_output["model_name"]
    if finish:
        attrs[GEN_AI_FINISH_REASONS] = finish
    return {k: v for k, v in attrs.items() if v is not None}
