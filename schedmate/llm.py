"""LLM configuration and the chat-model factory.

One code path for every backend: `langchain_openai.ChatOpenAI` against an OpenAI-compatible
endpoint. `local` starts (or reuses) the embedded llama.cpp server; `openai` is any endpoint
(production: `vllm serve`, or OpenAI itself); `vllm` is the same route with provider "vllm" and
a required `base_url` -- in-process vLLM is GPU-only and deliberately not embedded.

Every model `make_chat_model` returns is a `GuardedChatOpenAI`: its calls pass through a
per-endpoint `CircuitBreaker` (`.breaker`; `schedmate.llm_breaker`) and honour the caller's
`llm_deadline`, so a stalled endpoint costs one timeout, not one per call.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

import httpx
import openai
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from langchain_openai import ChatOpenAI
from opentelemetry.trace import Tracer
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from schedmate.cancel import cancelled
from schedmate.llm_breaker import CircuitBreaker, time_left
from schedmate.llm_errors import LLMError, LLMSkipped, LLMUnavailable
from schedmate.llm_local import DEFAULT_GGUF_PACKAGE, LocalLLMServer, is_loopback, resolve_gguf
from schedmate.llm_tracing import GenAITracingHandler

Backend = Literal["local", "openai", "vllm"]
_PROVIDERS: dict[str, str] = {"local": "llama_cpp", "openai": "openai", "vllm": "vllm"}
LOCAL_API_KEY = "sk-no-key"  # self-hosted servers check no key by default; the OpenAI client wants one


class LLMConfig(BaseModel):
    """How to reach a chat model. Validated at the boundary; immutable once built."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Backend = "local"
    model: str | None = Field(None, description="Model name; local: defaults to the GGUF file stem.")
    base_url: str | None = Field(None, description="OpenAI-compatible base URL (…/v1). Local: reuse a running server.")
    api_key: SecretStr | None = Field(None, description="openai/vllm; None reads OPENAI_API_KEY.")
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(256, gt=0, le=32768)
    timeout_s: float = Field(30.0, gt=0.0, description="Per-request timeout (connect + generate).")
    max_retries: int = Field(2, ge=0, le=10, description="Transport retries (connection, 429, 5xx).")
    breaker_failures: int = Field(3, ge=1, description="Consecutive failed calls that open the endpoint's circuit.")
    breaker_timeouts: int = Field(1, ge=1, description="Consecutive timed-out calls that open it.")
    breaker_cooldown_s: float = Field(60.0, ge=0.0, description="Seconds an open circuit skips the LLM.")
    provider_name: str | None = Field(None, description="Override gen_ai.provider.name.")
    # local backend only
    local_model_path: Path | None = None
    local_model_package: str = DEFAULT_GGUF_PACKAGE
    ctx: int = Field(2048, ge=256, le=131072)
    host: str = "127.0.0.1"
    chat_format: str | None = Field("gemma3", description="llama.cpp chat format; None = GGUF's template.")
    n_threads: int | None = Field(None, ge=1)
    startup_timeout_s: float = Field(60.0, gt=0.0)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, v: str | None) -> str | None:
        if v is not None and urlparse(v).scheme not in ("http", "https"):
            raise ValueError(f"base_url must be an http(s) URL, got {v!r}")
        return v.rstrip("/") if v else v

    @field_validator("host")
    @classmethod
    def _loopback(cls, v: str) -> str:
        if not is_loopback(v):
            raise ValueError(f"the embedded LLM server binds to loopback only, got host {v!r}")
        return v

    @model_validator(mode="after")
    def _backend_needs(self) -> LLMConfig:
        if self.backend in ("openai", "vllm") and not self.model:
            raise ValueError(f"backend {self.backend!r} needs `model`")
        return self

    @property
    def provider(self) -> str:
        """gen_ai.provider.name for spans."""
        return self.provider_name or _PROVIDERS[self.backend]


def local_server(config: LLMConfig) -> LocalLLMServer:
    """An unstarted embedded server for `config` (resolves the GGUF now: fails fast if missing)."""
    gguf = resolve_gguf(config.local_model_path, config.local_model_package)
    return LocalLLMServer(
        gguf,
        host=config.host,
        n_ctx=config.ctx,
        chat_format=config.chat_format,
        model_alias=config.model or gguf.stem,
        n_threads=config.n_threads,
        startup_timeout_s=config.startup_timeout_s,
    )


def make_breaker(config: LLMConfig) -> CircuitBreaker:
    """A circuit breaker with `config`'s thresholds."""
    return CircuitBreaker(
        max_failures=config.breaker_failures, max_timeouts=config.breaker_timeouts, cooldown_s=config.breaker_cooldown_s
    )


def make_chat_model(
    config: LLMConfig,
    *,
    tracer: Tracer | None = None,
    server: LocalLLMServer | None = None,
    breaker: CircuitBreaker | None = None,
) -> BaseChatModel:
    """A traced, circuit-broken chat model for `config` (`breaker`: share one between models;
    default: a new one from `config`'s thresholds).

    `local`: uses `config.base_url` if set, else the given started `server`, else starts one
    whose lifetime is tied to the returned model (stopped when it is garbage-collected or at
    exit; prefer `open_chat_model` for deterministic shutdown).
    """
    if config.backend == "vllm" and not config.base_url:
        raise LLMUnavailable(_vllm_hint())
    owned: LocalLLMServer | None = None
    model_name = config.model
    if config.backend == "local" and not config.base_url:
        if server is None:
            owned = server = local_server(config)
            server.start()
        if not server.running:
            raise LLMUnavailable("local LLM server is not running; call start() or use open_chat_model")
        base_url: str | None = server.base_url
        model_name = server.model_alias
    else:
        base_url = config.base_url
    chat = _chat_openai(config, base_url, model_name or "local", tracer, breaker or make_breaker(config))
    if owned is not None:
        weakref.finalize(chat, owned.stop)
    return chat


@contextmanager
def open_chat_model(config: LLMConfig, *, tracer: Tracer | None = None) -> Iterator[BaseChatModel]:
    """`make_chat_model` with the embedded server (if any) started on entry and stopped on exit."""
    if config.backend != "local" or config.base_url:
        yield make_chat_model(config, tracer=tracer)
        return
    with local_server(config) as server:
        yield make_chat_model(config, tracer=tracer, server=server)


def _chat_openai(
    config: LLMConfig, base_url: str | None, model: str, tracer: Tracer | None, breaker: CircuitBreaker
) -> GuardedChatOpenAI:
    url = urlparse(base_url) if base_url else None
    handler = GenAITracingHandler(
        tracer,
        provider=config.provider,
        server_address=url.hostname if url else "api.openai.com",
        server_port=(url.port or (443 if url.scheme == "https" else 80)) if url else 443,
    )
    if config.api_key is not None:
        api_key: SecretStr | None = config.api_key
    elif config.backend == "local" or (base_url and not os.environ.get("OPENAI_API_KEY")):
        api_key = SecretStr(LOCAL_API_KEY)  # self-hosted endpoints (vllm serve) accept any key
    else:
        api_key = None  # ChatOpenAI reads OPENAI_API_KEY
    # ChatOpenAI sends `max_completion_tokens`; llama-cpp-python's server only reads `max_tokens`
    # (and would otherwise generate until the context is full).
    extra_body = {"max_tokens": config.max_tokens} if config.backend == "local" else None
    return GuardedChatOpenAI(
        breaker=breaker,
        endpoint=base_url or "https://api.openai.com/v1",
        model=model,
        base_url=base_url,
        api_key=api_key,
        temperature=config.temperature,
        max_tokens=config.max_tokens,
        timeout=config.timeout_s,
        max_retries=0,  # retried here instead: never after a timeout (a stalled endpoint costs one timeout)
        transport_retries=config.max_retries,
        use_responses_api=False,
        extra_body=extra_body,
        callbacks=[handler],
    )


class GuardedChatOpenAI(ChatOpenAI):
    """`ChatOpenAI` whose calls pass the endpoint's circuit breaker and the caller's deadline.

    A call with the circuit open, or with no time left under `llm_deadline`, raises
    `LLMSkipped` at once (no request). Otherwise each attempt's timeout is the smaller of the
    configured one and the time left split over the retries; the call's outcome (answered,
    failed, timed out) is recorded on the breaker once. Connection failures, 429 and 5xx are
    retried (`transport_retries`, with a short backoff); a timeout is not: an endpoint that
    accepted the request and said nothing for the whole timeout will not answer the next try
    either. Answers the model gives badly are the caller's business (`structured.extract`): an
    answer is a success here."""

    breaker: Any = Field(default=None, exclude=True)
    endpoint: str = Field(default="", exclude=True)
    transport_retries: int = Field(default=0, exclude=True)

    def _guard(self, kwargs: dict[str, Any], *, first: bool = True) -> None:
        left = time_left()
        if left is not None:
            if left <= 0.05:
                if self.breaker is not None:
                    self.breaker.skipped(self.endpoint)
                why = "the caller stopped waiting" if cancelled() else "the diagnosis' time budget is spent"
                raise LLMSkipped(f"LLM call skipped: {why}", reason="budget")
            per_try = left / (1 + self.transport_retries)
            configured = self.request_timeout if isinstance(self.request_timeout, (int, float)) else None
            kwargs["timeout"] = per_try if configured is None else min(float(configured), per_try)
        if first and self.breaker is not None:
            self.breaker.before_call(self.endpoint)

    def _retry_after(self, exc: BaseException, attempt: int) -> float | None:
        """Seconds to wait before retrying after `exc`, or None when it is not worth a retry."""
        if attempt >= self.transport_retries or not _is_outage(exc) or _is_timeout(exc):
            return None
        if isinstance(exc, LLMError):
            return None
        return min(0.5 * 2**attempt, 4.0)

    def _record(self, exc: BaseException | None) -> None:
        if self.breaker is None:
            return
        if exc is None:
            self.breaker.success(self.endpoint)
        elif _is_outage(exc):
            self.breaker.failure(self.endpoint, timeout=_is_timeout(exc))
        else:
            self.breaker.success(self.endpoint)  # the endpoint answered (a 4xx, a cut-off answer)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        for attempt in range(self.transport_retries + 1):
            self._guard(kwargs, first=attempt == 0)
            try:
                result = super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)
            except BaseException as exc:
                wait = self._retry_after(exc, attempt)
                if wait is None:
                    self._record(exc)
                    raise
                time.sleep(wait)
                continue
            self._record(None)
            return result
        raise AssertionError("unreachable")

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        for attempt in range(self.transport_retries + 1):
            self._guard(kwargs, first=attempt == 0)
            try:
                result = await super()._agenerate(messages, stop=stop, run_manager=run_manager, **kwargs)
            except BaseException as exc:
                wait = self._retry_after(exc, attempt)
                if wait is None:
                    self._record(exc)
                    raise
                await asyncio.sleep(wait)
                continue
            self._record(None)
            return result
        raise AssertionError("unreachable")


def _is_timeout(exc: BaseException) -> bool:
    return isinstance(exc, openai.APITimeoutError | httpx.TimeoutException | TimeoutError)


def _is_outage(exc: BaseException) -> bool:
    """No answer from the endpoint: timeout, connection failure, 5xx/429 (what `structured`
    maps to `LLMUnavailable`)."""
    if isinstance(exc, LLMError):
        return isinstance(exc, LLMUnavailable) and not isinstance(exc, LLMSkipped)
    if _is_timeout(exc) or isinstance(exc, openai.APIConnectionError | httpx.TransportError | ConnectionError):
        return True
    return isinstance(exc, openai.APIStatusError) and (exc.status_code >= 500 or exc.status_code == 429)


def _vllm_hint() -> str:
    installed = importlib.util.find_spec("vllm") is not None
    state = "is installed but in-process vLLM is not embedded" if installed else "is not installed (GPU-only)"
    return (
        f"backend='vllm' needs base_url: vllm {state}. Run `vllm serve <model>` on a GPU host and "
        f"set base_url='http://<host>:8000/v1' (or use backend='openai' with that URL)."
    )
