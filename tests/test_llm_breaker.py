"""Spec (issue 16, item 3): fast, honest degradation when the LLM endpoint fails or stalls.

- A per-endpoint circuit breaker opens after N consecutive failures, or one timeout, skips the
  LLM at once while open (and says so), lets one trial call through after the cool-down.
- A diagnosis has a total time budget that bounds its LLM call.
- Diagnoses count the LLM calls made, answered, failed, timed out and skipped.

The stalled endpoint is a real loopback TCP server that accepts connections and never answers.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import openai
import pytest
from pydantic import BaseModel

from schedmate.agents.failure import FailureHandler, FailureHandlerConfig
from schedmate.cancel import Cancelled, CancelToken, using_cancel_token
from schedmate.llm import LLMConfig, make_chat_model
from schedmate.llm_breaker import CallCounts, CircuitBreaker, llm_deadline, time_left
from schedmate.llm_errors import LLMSkipped, LLMUnavailable
from schedmate.structured import extract
from schedmate.tests.llm_stub import Reply, StubLLM
from schedmate.tests.net_stubs import stalled_endpoint

EP = "http://llm-a.example:8000/v1"  # a breaker key only: nothing connects to it
KEYERROR_LOG = [*(f"step {i} loss 2.{i % 10}" for i in range(50)), "ERROR: worker exited unexpectedly during step 50"]
META = {"job_id": "j1", "nodes": ["n1", "n2"]}


class Answer(BaseModel):
    x: int


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def stalled() -> Iterator[str]:
    """An OpenAI-compatible URL on loopback that accepts connections and never answers."""
    with stalled_endpoint() as url:
        yield url


def chat_for(url: str, timeout_s: float = 1.0, **extra: object):  # type: ignore[no-untyped-def]
    return make_chat_model(LLMConfig(backend="openai", model="m", base_url=url, api_key="k", timeout_s=timeout_s,
                                     max_retries=0, **extra))  # type: ignore[arg-type]  # fmt: skip


# --- the breaker itself ----------------------------------------------------------------------------


def test_the_circuit_opens_after_n_failures_and_skips_until_the_cooldown() -> None:
    clock = Clock()
    b = CircuitBreaker(max_failures=3, max_timeouts=1, cooldown_s=60, clock=clock)
    for _ in range(2):
        b.before_call(EP)
        b.failure(EP, timeout=False)
    assert b.state(EP) == "closed"
    b.before_call(EP)
    b.failure(EP, timeout=False)
    assert b.state(EP) == "open"
    with pytest.raises(LLMSkipped, match="circuit open .* 3 failure"):
        b.before_call(EP)
    assert b.state("http://other/v1") == "closed"  # per endpoint
    b.before_call("http://other/v1")
    clock.now = 61
    b.before_call(EP)  # the half-open trial
    with pytest.raises(LLMSkipped, match="trial"):
        b.before_call(EP)  # only one trial at a time
    b.success(EP)
    assert b.state(EP) == "closed"
    assert b.counts(EP) == CallCounts(made=4, answered=1, failed=3, timed_out=0, skipped=2)


def test_one_timeout_opens_the_circuit_and_a_failed_trial_reopens_it() -> None:
    clock = Clock()
    b = CircuitBreaker(max_failures=3, max_timeouts=1, cooldown_s=10, clock=clock)
    b.before_call(EP)
    b.failure(EP, timeout=True)
    assert b.state(EP) == "open"
    clock.now = 11
    b.before_call(EP)
    b.failure(EP, timeout=False)
    assert b.state(EP) == "open"
    with pytest.raises(LLMSkipped):
        b.before_call(EP)
    b.reset(EP)
    assert b.state(EP) == "closed" and b.counts(EP) == CallCounts()


def test_a_deadline_is_scoped_and_nested_deadlines_keep_the_earlier() -> None:
    assert time_left() is None
    with llm_deadline(10):
        with llm_deadline(100):
            left = time_left()
            assert left is not None and left <= 10
        with llm_deadline(None):
            assert time_left() is not None
    assert time_left() is None


def test_a_request_its_caller_gave_up_has_no_time_left() -> None:
    token = CancelToken()
    with using_cancel_token(token):
        assert time_left() is None  # no deadline, still wanted
        token.cancel()
        assert time_left() == 0.0
        with llm_deadline(100):
            assert time_left() == 0.0
    assert time_left() is None  # the token belongs to that request only


# --- a real stalled endpoint -----------------------------------------------------------------------


def test_a_stalled_endpoint_costs_one_timeout_then_calls_are_skipped_at_once(stalled: str) -> None:
    chat = chat_for(stalled, timeout_s=1.0)
    t0 = time.monotonic()
    with pytest.raises(LLMUnavailable, match="timed out"):
        extract(chat, Answer, "hi", retries=0)
    assert 0.9 < time.monotonic() - t0 < 10
    t1 = time.monotonic()
    with pytest.raises(LLMSkipped, match="circuit open"):
        extract(chat, Answer, "hi", retries=0)
    assert time.monotonic() - t1 < 0.2
    assert chat.breaker.counts(stalled) == CallCounts(made=1, answered=0, failed=1, timed_out=1, skipped=1)  # type: ignore[attr-defined]


def test_the_second_diagnosis_against_a_stalled_llm_skips_it_quickly(stalled: str, classifier: object) -> None:
    handler = FailureHandler(classifier, chat_model=chat_for(stalled, timeout_s=1.5),  # type: ignore[arg-type]
                             config=FailureHandlerConfig(method="llm"))  # fmt: skip
    first = handler.diagnose_lines(KEYERROR_LOG, META)
    assert first.llm_status == "unavailable" and first.timings_s["classify"] >= 1.4
    assert first.llm_calls == CallCounts(made=1, failed=1, timed_out=1)
    second = handler.diagnose_lines(KEYERROR_LOG, META)
    assert second.llm_status == "circuit_open" and second.timings_s["classify"] < 0.5
    assert second.llm_calls == CallCounts(skipped=1)
    assert any("circuit open" in f for f in second.fallbacks)
    assert second.status == "failure_found"  # the rules still answer


def test_a_diagnosis_time_budget_bounds_the_llm_call(stalled: str, classifier: object) -> None:
    handler = FailureHandler(classifier, chat_model=chat_for(stalled, timeout_s=60),  # type: ignore[arg-type]
                             config=FailureHandlerConfig(method="llm", time_budget_s=1.0))  # fmt: skip
    t0 = time.monotonic()
    d = handler.diagnose_lines(KEYERROR_LOG, META)
    assert time.monotonic() - t0 < 5  # not the 60 s request timeout
    assert d.llm_status == "unavailable" and d.llm_calls.timed_out == 1
    spent = FailureHandler(classifier, chat_model=chat_for(stalled, timeout_s=60),  # type: ignore[arg-type]
                           config=FailureHandlerConfig(method="llm", time_budget_s=0.0)).diagnose_lines(KEYERROR_LOG, META)
    assert spent.llm_status == "timeout" and spent.llm_calls.made == 0 and spent.status == "failure_found"


def test_an_answering_endpoint_is_counted_as_answered(classifier: object) -> None:
    stub = StubLLM(default=Reply(args=json.dumps(
        {"category": "script", "reason": "KeyError", "faulty_component": "software"}))).start()  # fmt: skip
    try:
        handler = FailureHandler(classifier, chat_model=chat_for(stub.url), config=FailureHandlerConfig(method="llm"))  # type: ignore[arg-type]
        d = handler.diagnose_lines(KEYERROR_LOG, META)
    finally:
        stub.stop()
    assert d.llm_status == "ok" and d.llm_calls == CallCounts(made=1, answered=1)


def test_a_stalled_endpoint_costs_one_timeout_not_one_per_retry(stalled: str) -> None:
    """Transport retries are for refused connections and 5xx; a request the endpoint accepted and
    never answered is not sent again (the issue's 91 s per diagnosis was 3 x 30 s)."""
    chat = make_chat_model(LLMConfig(backend="openai", model="m", base_url=stalled, api_key="k", timeout_s=1.0,
                                     max_retries=2))
    t0 = time.perf_counter()
    with pytest.raises(openai.APIConnectionError):
        chat.invoke("hello")
    assert time.perf_counter() - t0 < 2.5  # one 1 s timeout, not three


def test_a_refused_connection_is_retried_then_counted_as_one_failure() -> None:
    with socket.socket() as s:  # a loopback port with nothing listening
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    chat = make_chat_model(LLMConfig(backend="openai", model="m", base_url=url, api_key="k", timeout_s=1.0,
                                     max_retries=2, breaker_failures=2))
    with pytest.raises(openai.APIConnectionError):
        chat.invoke("hello")
    assert chat.breaker.state(url) == "closed"  # three tries, one failed call
    with pytest.raises(openai.APIConnectionError):
        chat.invoke("hello")
    assert chat.breaker.state(url) == "open"


def test_once_the_caller_stops_waiting_no_llm_call_is_made_and_the_diagnosis_stops(stalled: str,
                                                                                   classifier: object) -> None:
    """The service cancels a request it answered 504: its worker must not then sit in a 60 s LLM call,
    nor finish a diagnosis nobody will read (it stops at the next step boundary)."""
    chat = chat_for(stalled, timeout_s=60)
    handler = FailureHandler(classifier, chat_model=chat, config=FailureHandlerConfig(method="llm"))  # type: ignore[arg-type]
    token = CancelToken()
    with using_cancel_token(token):
        token.cancel()
        t0 = time.monotonic()
        with pytest.raises(LLMSkipped, match="caller stopped waiting"):
            extract(chat, Answer, "hi", retries=0)
        with pytest.raises(Cancelled, match="caller stopped waiting"):
            handler.diagnose_lines(KEYERROR_LOG, META)
        assert time.monotonic() - t0 < 5
    assert chat.breaker.counts(stalled).made == 0  # type: ignore[attr-defined]
