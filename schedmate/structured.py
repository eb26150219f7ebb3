"""Validated structured extraction from a chat model, with bounded re-asks and typed failures.

Small local models (Gemma-3-270M) produce plausible-looking garbage, so nothing is trusted:
every answer is validated by the pydantic schema; an invalid one is re-asked with the
validation error appended, at most `retries` times, then `LLMOutputError` carries the raw text.
Transport problems become `LLMUnavailable` at once (no re-ask), so callers can fall back.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal, TypeVar

import httpx
import openai
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.exceptions import (
    ModelAPIError,
    ModelConnectionError,
    ModelRateLimitError,
    ModelTimeoutError,
)
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, convert_to_messages
from langchain_core.prompt_values import PromptValue
from langchain_core.runnables import RunnableConfig
from opentelemetry.trace import Status, StatusCode, Tracer
from pydantic import BaseModel, ValidationError

from schedmate.llm_errors import LLMError, LLMOutputError, LLMRequestError, LLMUnavailable
from schedmate.llm_tracing import GenAITracingHandler
from schedmate.tracing import ERROR_TYPE, SCHEDMATE_LLM_ATTEMPT, SCHEDMATE_LLM_RETRIES, SCHEDMATE_LLM_SCHEMA, get_tracer

__all__ = ["LLMError", "LLMOutputError", "LLMRequestError", "LLMUnavailable", "Method", "extract", "salvage_json"]

T = TypeVar("T", bound=BaseModel)
Method = Literal["function_calling", "json_mode", "json_schema", "text"]
_MAX_SALVAGE_CHARS = 100_000


def extract(
    model: BaseChatModel,
    schema: type[T],
    messages: LanguageModelInput,
    *,
    method: Method = "function_calling",
    retries: int = 2,
    tracer: Tracer | None = None,
    schema_hint: bool | None = None,
) -> T:
    """Ask `model` for a `schema` instance; return it validated, or raise a typed `LLMError`.

    `method`: "function_calling" (default; the embedded llama.cpp server turns a forced tool
    call into a JSON-schema grammar, and rejects "json_schema"), "json_schema", "json_mode", or
    "text" (plain answer, JSON salvaged from the text; for endpoints without tool support).
    `schema_hint` appends the JSON schema to the prompt (default: on for json_mode/text, where
    the model would otherwise never see it).
    Raises `LLMUnavailable` (endpoint down/timeout), `LLMRequestError` (4xx) or `LLMOutputError`.
    """
    if retries < 0:
        raise ValueError("retries must be >= 0")
    base = _as_messages(messages)
    if schema_hint if schema_hint is not None else method in ("json_mode", "text"):
        base = _with_note(base, _schema_note(schema))
    runnable = model if method == "text" else model.with_structured_output(schema, method=method, include_raw=True)
    callbacks: list[BaseCallbackHandler] = [] if _is_traced(model) else [GenAITracingHandler(tracer)]
    errors: list[str] = []
    raw = ""
    with get_tracer(tracer).start_as_current_span(f"extract {schema.__name__}") as span:
        span.set_attribute(SCHEDMATE_LLM_SCHEMA, schema.__name__)
        for attempt in range(retries + 1):
            span.set_attribute(SCHEDMATE_LLM_RETRIES, attempt)
            msgs = base if attempt == 0 else _with_note(base, _retry_note(errors[-1]))
            config = RunnableConfig(metadata={SCHEDMATE_LLM_ATTEMPT: attempt}, callbacks=callbacks)
            try:
                out = runnable.invoke(msgs, config=config)
            except (openai.LengthFinishReasonError, openai.ContentFilterFinishReasonError) as exc:
                raw = _completion_text(getattr(exc, "completion", None))  # answered, but cut off
                errors.append("the answer was cut off (max_tokens or content filter)")
                continue
            except Exception as exc:  # noqa: BLE001 -- mapped to typed errors or re-raised
                mapped = map_llm_exception(exc)
                _fail(span, mapped)
                raise mapped from exc
            result, raw, error = _parse(schema, out)
            if result is not None:
                return result
            errors.append(error)
        failure = LLMOutputError(
            f"{schema.__name__}: no valid answer after {retries + 1} attempt(s): {errors[-1]}",
            raw=raw, errors=errors, attempts=retries + 1,
        )  # fmt: skip
        _fail(span, failure)
        raise failure


def salvage_json(text: str) -> dict[str, Any] | None:
    """The first balanced `{...}` in `text` that parses as a JSON object, else None.

    Tolerates prose, markdown fences and trailing chatter around the object; braces inside JSON
    strings are skipped. Bounded to the first 100k characters.
    """
    text = text[:_MAX_SALVAGE_CHARS]
    start = text.find("{")
    while start != -1:
        end = _balanced_end(text, start)
        if end is None:
            return None  # unbalanced from here on: no later '{' can close either
        try:
            obj = json.loads(text[start : end + 1])
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            return obj
        start = text.find("{", start + 1)
    return None


def map_llm_exception(exc: BaseException) -> LLMError:
    """Transport/HTTP failures -> `LLMUnavailable` / `LLMRequestError`; anything else -> `LLMError`."""
    if isinstance(exc, LLMError):
        return exc
    if isinstance(exc, openai.APITimeoutError | ModelTimeoutError | httpx.TimeoutException | TimeoutError):
        return LLMUnavailable(f"LLM request timed out: {exc}")
    if isinstance(exc, openai.APIConnectionError | ModelConnectionError | httpx.TransportError | ConnectionError):
        return LLMUnavailable(f"LLM endpoint unreachable: {exc}")
    if isinstance(exc, openai.APIStatusError):
        # llama-cpp-python answers a request that fails its validation (e.g. method="json_schema")
        # with HTTP 500: a caller bug, not an outage, so it must not be silently "fallen back" from.
        if exc.status_code < 500 or ("validation error" in str(exc) and "'body'" in str(exc)):
            return LLMRequestError(f"LLM endpoint rejected the request ({exc.status_code}): {exc}")
        return LLMUnavailable(f"LLM endpoint overloaded or failing ({exc.status_code}): {exc}")
    if isinstance(exc, ModelRateLimitError | ModelAPIError):
        return LLMUnavailable(f"LLM endpoint overloaded or failing: {exc}")
    return LLMError(f"LLM call failed: {type(exc).__name__}: {exc}")


def _parse(schema: type[T], out: Any) -> tuple[T | None, str, str]:
    """(validated result or None, raw text, error message) for one structured/plain answer."""
    if isinstance(out, dict) and "raw" in out:
        parsed, message = out.get("parsed"), out["raw"]
        if isinstance(parsed, schema):
            return parsed, _raw_text(message), ""
    else:
        message = out
    raw = _raw_text(message) if isinstance(message, BaseMessage) else str(message)
    obj = salvage_json(raw)
    if obj is None:
        return None, raw, "the answer contains no JSON object"
    for candidate in (obj, *(obj[k] for k in ("arguments", "parameters") if isinstance(obj.get(k), dict))):
        try:
            return schema.model_validate(candidate), raw, ""
        except ValidationError as exc:
            error = _short_validation_error(exc)
    return None, raw, error


def _raw_text(message: BaseMessage) -> str:
    """The model's answer as text: tool-call arguments verbatim if any, else the content."""
    if isinstance(message, AIMessage):
        for call in message.additional_kwargs.get("tool_calls") or ():
            args = (call.get("function") or {}).get("arguments")
            if isinstance(args, str):
                return args
        if message.tool_calls:
            return json.dumps(message.tool_calls[0]["args"])
        if message.invalid_tool_calls:
            return str(message.invalid_tool_calls[0].get("args") or "")
    return message.text if hasattr(message, "text") else str(message.content)


def _completion_text(completion: Any) -> str:
    try:
        return str(completion.choices[0].message.content or "")
    except (AttributeError, IndexError):
        return ""


def _balanced_end(text: str, start: int) -> int | None:
    depth, in_str, escaped = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
    return None


def _as_messages(messages: LanguageModelInput) -> list[BaseMessage]:
    if isinstance(messages, PromptValue):
        return messages.to_messages()
    if isinstance(messages, str):
        return [HumanMessage(messages)]
    if isinstance(messages, Sequence):
        return convert_to_messages(messages)
    raise TypeError(f"unsupported messages type {type(messages).__name__}")


def _with_note(messages: list[BaseMessage], note: str) -> list[BaseMessage]:
    """Append `note` to the last user turn (a second consecutive user message breaks templates
    that require alternating roles, e.g. Gemma's)."""
    if messages and isinstance(messages[-1], HumanMessage) and isinstance(messages[-1].content, str):
        return [*messages[:-1], HumanMessage(f"{messages[-1].content}\n\n{note}")]
    return [*messages, HumanMessage(note)]


def _schema_note(schema: type[BaseModel]) -> str:
    return f"Answer with only a JSON object matching this JSON schema:\n{json.dumps(schema.model_json_schema())}"


def _retry_note(error: str) -> str:
    return f"Your previous answer was rejected: {error}. Answer again with only a valid JSON object."


def _short_validation_error(exc: ValidationError) -> str:
    parts = [f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}" for e in exc.errors()[:5]]
    return "schema violation: " + "; ".join(parts)


def _is_traced(model: Any) -> bool:
    callbacks = getattr(model, "callbacks", None)
    handlers = getattr(callbacks, "handlers", callbacks) or []
    return any(isinstance(h, GenAITracingHandler) for h in handlers)


def _fail(span: Any, error: LLMError) -> None:
    span.set_attribute(ERROR_TYPE, type(error).__name__)
    span.set_status(Status(StatusCode.ERROR, str(error)[:200]))
