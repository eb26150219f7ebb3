"""Fast LLM-layer tests against a stub OpenAI-compatible server: no model, no llama.cpp needed."""

from __future__ import annotations

import json
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from pydantic import BaseModel, Field, ValidationError

from schedmate import llm_local
from schedmate.llm import LLMConfig, make_chat_model, open_chat_model
from schedmate.llm_local import LlamaCppMissing, LocalLLMError, LocalLLMServer, LocalModelMissing, resolve_gguf
from schedmate.structured import (
    LLMOutputError,
    LLMRequestError,
    LLMUnavailable,
    extract,
    salvage_json,
)
from schedmate.tests.llm_stub import RESPONSE_MODEL, Reply, StubLLM
from schedmate.tracing import configure_tracing, memory_tracing


class StepStats(BaseModel):
    """Per-step training stats from a log line."""

    step_time_ms: float = Field(gt=0)
    loss: float


GOOD = json.dumps({"step_time_ms": 512.5, "loss": 2.31})
LOG = "iteration 100/1000 | elapsed time per iteration (ms): 512.5 | lm loss: 2.310E+00"


@pytest.fixture
def stub() -> Iterator[StubLLM]:
    server = StubLLM().start()
    yield server
    server.stop()


@pytest.fixture
def tracing() -> tuple[object, InMemorySpanExporter]:
    provider, exporter = memory_tracing()
    return provider.get_tracer("test"), exporter


def _config(url: str, **kw: object) -> LLMConfig:
    base = {"backend": "openai", "model": "stub-model", "base_url": url, "api_key": "test", "max_retries": 0, "timeout_s": 5}
    return LLMConfig(**{**base, **kw})


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- structured extraction -------------------------------------------------------------------


def test_extract_parses_tool_call(stub: StubLLM) -> None:
    stub.push(Reply(args=GOOD))
    model = make_chat_model(_config(stub.url))
    out = extract(model, StepStats, [SystemMessage("Extract step stats."), HumanMessage(LOG)])
    assert out == StepStats(step_time_ms=512.5, loss=2.31)
    body = stub.requests[0]
    assert body["tool_choice"]["function"]["name"] == "StepStats"
    assert body["temperature"] == 0.0 and body["max_completion_tokens"] == 256


def test_garbage_is_retried_then_typed_error(stub: StubLLM) -> None:
    stub.push(Reply(text="the loss is low"), Reply(args="{not json"), Reply(args='{"step_time_ms": -1, "loss": 1}'))
    model = make_chat_model(_config(stub.url))
    with pytest.raises(LLMOutputError) as info:
        extract(model, StepStats, LOG, retries=2)
    err = info.value
    assert err.attempts == 3 and len(stub.requests) == 3
    assert err.raw == '{"step_time_ms": -1, "loss": 1}'
    assert "no JSON object" in err.errors[0] and "step_time_ms" in err.errors[2]
    # the re-ask carries the previous rejection reason in the (single) last user turn
    last_user = stub.requests[1]["messages"][-1]
    assert last_user["role"] == "user" and "rejected" in last_user["content"] and LOG in last_user["content"]


def test_retry_recovers(stub: StubLLM) -> None:
    stub.push(Reply(args='{"step_time_ms": "fast", "loss": 2}'), Reply(args=GOOD))
    out = extract(make_chat_model(_config(stub.url)), StepStats, LOG, retries=1)
    assert out.loss == 2.31 and len(stub.requests) == 2


def test_zero_retries_means_one_call(stub: StubLLM) -> None:
    stub.push(Reply(text="nope"))
    with pytest.raises(LLMOutputError):
        extract(make_chat_model(_config(stub.url)), StepStats, LOG, retries=0)
    assert len(stub.requests) == 1


def test_text_method_salvages_json(stub: StubLLM) -> None:
    stub.push(Reply(text=f"Sure! Here it is:\n```json\n{GOOD}\n```\nAnything else?"))
    out = extract(make_chat_model(_config(stub.url)), StepStats, LOG, method="text")
    assert out.step_time_ms == 512.5
    body = stub.requests[0]
    assert "tools" not in body and "JSON schema" in body["messages"][-1]["content"]


def test_tool_args_salvaged_from_wrapped_answer(stub: StubLLM) -> None:
    stub.push(Reply(args=json.dumps({"name": "StepStats", "arguments": {"step_time_ms": 3, "loss": 1}})))
    assert extract(make_chat_model(_config(stub.url)), StepStats, LOG).step_time_ms == 3


def test_refused_connection_is_unavailable_fast() -> None:
    model = make_chat_model(_config(f"http://127.0.0.1:{_dead_port()}/v1"))
    t0 = time.perf_counter()
    with pytest.raises(LLMUnavailable, match="unreachable"):
        extract(model, StepStats, LOG)
    assert time.perf_counter() - t0 < 2.0


def test_timeout_is_unavailable_fast(stub: StubLLM) -> None:
    stub.push(Reply(args=GOOD, delay_s=3.0))
    model = make_chat_model(_config(stub.url, timeout_s=0.3))
    t0 = time.perf_counter()
    with pytest.raises(LLMUnavailable, match="timed out"):
        extract(model, StepStats, LOG, retries=2)  # no re-ask on transport failure
    assert time.perf_counter() - t0 < 1.5 and len(stub.requests) == 1


def test_http_errors_are_typed(stub: StubLLM) -> None:
    stub.push(Reply(status=400), Reply(status=503))
    model = make_chat_model(_config(stub.url))
    with pytest.raises(LLMRequestError):
        extract(model, StepStats, LOG)
    with pytest.raises(LLMUnavailable):
        extract(model, StepStats, LOG)


def test_llama_cpp_validation_500_is_a_request_error(stub: StubLLM) -> None:
    # what llama-cpp-python answers to method="json_schema": a 500 wrapping a body validation error
    stub.push(Reply(status=500, error="1 validation error: {'loc': ('body', 'response_format', 'type')}"))
    with pytest.raises(LLMRequestError):
        extract(make_chat_model(_config(stub.url)), StepStats, LOG, method="json_schema")


def test_truncated_answer_is_retried(stub: StubLLM) -> None:
    stub.push(Reply(text='{"step_time_ms": 5', finish="length"), Reply(text=GOOD))
    out = extract(make_chat_model(_config(stub.url)), StepStats, LOG, method="json_mode")
    assert out.loss == 2.31 and len(stub.requests) == 2
    assert stub.requests[0]["response_format"] == {"type": "json_object"}


def test_gemma3_chat_format_folds_system_prompt() -> None:
    pytest.importorskip("llama_cpp")
    from schedmate.llama_server import format_gemma3

    prompt = format_gemma3(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
         {"role": "assistant", "content": "Hello"}, {"role": "user", "content": [{"type": "text", "text": "Why?"}]}]
    )  # fmt: skip
    assert prompt.prompt == (
        "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello<end_of_turn>\n"
        "<start_of_turn>user\nWhy?<end_of_turn>\n<start_of_turn>model\n"
    )
    assert prompt.stop == "<end_of_turn>"


# --- tracing ---------------------------------------------------------------------------------


def test_chat_span_has_genai_attributes(stub: StubLLM, tracing: tuple) -> None:
    tracer, exporter = tracing
    stub.push(Reply(args="garbage"), Reply(args=GOOD))
    model = make_chat_model(_config(stub.url, temperature=0.2, max_tokens=64), tracer=tracer)
    extract(model, StepStats, LOG, tracer=tracer)
    spans = exporter.get_finished_spans()
    chats = [s for s in spans if s.name == "chat stub-model"]
    (parent,) = [s for s in spans if s.name == "extract StepStats"]
    assert len(chats) == 2
    for attempt, span in enumerate(chats):
        a = span.attributes
        assert span.kind == SpanKind.CLIENT and span.parent.span_id == parent.context.span_id
        assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.provider.name"] == "openai"
        assert a["gen_ai.request.model"] == "stub-model" and a["gen_ai.response.model"] == RESPONSE_MODEL
        assert a["gen_ai.usage.input_tokens"] == 12 and a["gen_ai.usage.output_tokens"] == 7
        assert a["gen_ai.request.max_tokens"] == 64 and a["gen_ai.request.temperature"] == 0.2
        assert tuple(a["gen_ai.response.finish_reasons"]) == ("tool_calls",)
        assert a["server.address"] == "127.0.0.1" and a["schedmate.llm.attempt"] == attempt
    assert parent.attributes["schedmate.llm.retries"] == 1


def test_plain_chat_and_error_spans(tracing: tuple, stub: StubLLM) -> None:
    tracer, exporter = tracing
    assert make_chat_model(_config(stub.url), tracer=tracer).invoke("hi").content == "hello"
    dead = make_chat_model(_config(f"http://127.0.0.1:{_dead_port()}/v1"), tracer=tracer)
    with pytest.raises(LLMUnavailable):
        extract(dead, StepStats, LOG, tracer=tracer)
    ok, failed, outer = exporter.get_finished_spans()
    assert ok.attributes["gen_ai.usage.output_tokens"] == 7
    assert ok.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert failed.status.status_code == StatusCode.ERROR and "error.type" in failed.attributes
    assert outer.attributes["error.type"] == "LLMUnavailable"


def test_untraced_model_gets_spans_from_extract(stub: StubLLM, tracing: tuple) -> None:
    from langchain_openai import ChatOpenAI

    tracer, exporter = tracing
    stub.push(Reply(args=GOOD))
    bare = ChatOpenAI(model="bare", base_url=stub.url, api_key="x", max_retries=0)
    extract(bare, StepStats, LOG, tracer=tracer)
    assert [s.name for s in exporter.get_finished_spans()] == ["chat bare", "extract StepStats"]


def test_configure_tracing_exporters() -> None:
    for name in ("none", "console", "memory", "otlp"):
        provider = configure_tracing(name, endpoint="http://127.0.0.1:4318/v1/traces")
        assert provider.resource.attributes["service.name"] == "schedmate"
        provider.shutdown()
    with pytest.raises(ValueError):
        configure_tracing("jaeger")  # type: ignore[arg-type]


# --- JSON salvage ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('noise {"a": {"b": [1, 2]}} trailing }', {"a": {"b": [1, 2]}}),
        ('{"s": "br{ace}\\"q"} more', {"s": 'br{ace}"q'}),
        ("{bad} then {\"ok\": true}", {"ok": True}),
        ("```json\n{\"x\": null}\n```", {"x": None}),
        ("no json here", None),
        ('{"open": 1', None),
        ("[1, 2]", None),
    ],
)
def test_salvage_json(text: str, expected: dict | None) -> None:
    assert salvage_json(text) == expected


# --- config and local-backend error paths ----------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"temperature": 3.0},
        {"max_tokens": 0},
        {"timeout_s": 0},
        {"base_url": "ftp://x"},
        {"host": "0.0.0.0"},
        {"backend": "openai"},  # needs a model
        {"backend": "mistral"},
        {"unknown_field": 1},
    ],
)
def test_config_validation(kwargs: dict) -> None:
    with pytest.raises(ValidationError):
        LLMConfig(**kwargs)


def test_config_defaults() -> None:
    cfg = LLMConfig()
    assert (cfg.backend, cfg.temperature, cfg.max_tokens, cfg.max_retries, cfg.ctx) == ("local", 0.0, 256, 2, 2048)
    assert cfg.provider == "llama_cpp" and LLMConfig(backend="vllm", model="m").provider == "vllm"


def test_vllm_without_url_is_clear() -> None:
    with pytest.raises(LLMUnavailable, match="vllm serve"):
        make_chat_model(LLMConfig(backend="vllm", model="m"))


def test_vllm_with_url_uses_openai_route(stub: StubLLM, tracing: tuple) -> None:
    tracer, exporter = tracing
    model = make_chat_model(LLMConfig(backend="vllm", model="m", base_url=stub.url, max_retries=0), tracer=tracer)
    model.invoke("hi")
    assert exporter.get_finished_spans()[0].attributes["gen_ai.provider.name"] == "vllm"


def test_missing_gguf_path_is_clear(tmp_path: Path) -> None:
    with pytest.raises(LocalModelMissing, match="not found"):
        resolve_gguf(tmp_path / "nope.gguf")
    with pytest.raises(LocalModelMissing, match="never downloads"):
        resolve_gguf(None, package="schedmate-no-such-weights-pkg")
    with pytest.raises(LLMUnavailable):  # LocalModelMissing is an LLMUnavailable: callers fall back
        make_chat_model(LLMConfig(local_model_path=tmp_path / "nope.gguf"))


def test_missing_llama_cpp_is_clear(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setattr(llm_local.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(LlamaCppMissing, match=r"pip install 'llama-cpp-python\[server\]'"):
        LocalLLMServer(gguf).start()


def test_non_loopback_host_refused(tmp_path: Path) -> None:
    with pytest.raises(LocalLLMError, match="non-loopback"):
        LocalLLMServer(tmp_path / "m.gguf", host="0.0.0.0")
    with pytest.raises(LocalLLMError, match="non-loopback"):
        LocalLLMServer(tmp_path / "m.gguf", host="example.com")


# --- embedded-server lifecycle, with the stub as the "llama.cpp" process --------------------


class StubProcessServer(LocalLLMServer):
    """LocalLLMServer running the stub server script instead of llama_cpp.server."""

    def __init__(self, *args: object, stub_args: tuple[str, ...] = (), **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        self.stub_args = stub_args

    def preflight(self) -> None:
        pass

    def command(self, port: int) -> list[str]:
        return [sys.executable, "-m", "schedmate.tests.llm_stub", "--port", str(port), *self.stub_args]


def test_server_lifecycle_and_local_model(tmp_path: Path, tracing: tuple) -> None:
    tracer, exporter = tracing
    with StubProcessServer(tmp_path / "gemma.gguf", startup_timeout_s=20) as server:
        assert server.running and server.startup_s is not None
        assert server.base_url.startswith("http://127.0.0.1:")
        model = make_chat_model(LLMConfig(max_retries=0), tracer=tracer, server=server)
        assert model.invoke("hi").content == "hello"
        proc = server._proc
    assert not server.running and proc is not None and proc.poll() is not None
    span = exporter.get_finished_spans()[0]
    assert span.name == "chat gemma" and span.attributes["gen_ai.provider.name"] == "llama_cpp"


def test_local_backend_sends_max_tokens(stub: StubLLM) -> None:
    model = make_chat_model(LLMConfig(base_url=stub.url, max_tokens=32, max_retries=0))
    model.invoke("hi")
    assert stub.requests[0]["max_tokens"] == 32  # llama.cpp ignores max_completion_tokens


def test_open_chat_model_passthrough_for_remote(stub: StubLLM) -> None:
    with open_chat_model(_config(stub.url)) as model:
        assert model.invoke("hi").content == "hello"


def test_server_early_exit_reports_log(tmp_path: Path) -> None:
    server = StubProcessServer(tmp_path / "m.gguf", stub_args=("--bogus",), startup_timeout_s=20)
    with pytest.raises(LocalLLMError, match="exited with code 2") as info:
        server.start()
    assert "unrecognized arguments" in str(info.value) and not server.running


def test_server_startup_timeout(tmp_path: Path) -> None:
    server = StubProcessServer(tmp_path / "m.gguf", stub_args=("--startup-delay", "30"), startup_timeout_s=0.5)
    t0 = time.perf_counter()
    with pytest.raises(LocalLLMError, match="not ready"):
        server.start()
    assert time.perf_counter() - t0 < 8 and not server.running
