"""Spec: a diagnosis whose caller gave up (the service answered 504) stops at its next step
boundary: locate, classify, similar-failure search and recovery each check the request's
`CancelToken` (`schedmate.cancel`) before they start, so the worker does not finish for nobody."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from schedmate.agents.failure import FailureHandler, FailureHandlerConfig
from schedmate.cancel import Cancelled, CancelToken, check_cancelled, using_cancel_token
from schedmate.deploy.service.limits import CallTimeout, WorkQueue
from schedmate.synthetic.logs import make_failed_log
from schedmate.taxonomy import FailureReason

META = {"job_id": "job-504"}


@pytest.fixture(scope="module")
def failed_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    log = make_failed_log(1_500, seed=7, reason=FailureReason.KEY_ERROR, fault_at=0.5, ranks=4)
    path = tmp_path_factory.mktemp("cancel") / "job.log"
    path.write_text("\n".join(log.lines) + "\n")
    return path


def steps_seen(mp: pytest.MonkeyPatch, handler: FailureHandler, *, after_locate: Any = None) -> list[str]:
    """Record which steps ran; `after_locate` runs once the locator is done (the 504 arriving)."""
    seen: list[str] = []
    locate, classify = handler.locator.locate, handler.classify_window

    def locate_and_then(*a: Any, **kw: Any) -> Any:
        seen.append("locate")
        out = locate(*a, **kw)
        if after_locate is not None:
            after_locate()
        return out

    def classify_seen(*a: Any, **kw: Any) -> Any:
        seen.append("classify")
        return classify(*a, **kw)

    mp.setattr(handler.locator, "locate", locate_and_then)
    mp.setattr(handler, "classify_window", classify_seen)
    return seen


def test_a_cancelled_request_stops_before_the_next_step(classifier: Any, failed_log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    handler = FailureHandler(classifier, config=FailureHandlerConfig(method="rules"))
    token = CancelToken()
    seen = steps_seen(monkeypatch, handler, after_locate=token.cancel)
    with using_cancel_token(token), pytest.raises(Cancelled, match="before classify"):
        handler.diagnose(failed_log, META)
    assert seen == ["locate"]


def test_an_uncancelled_request_finishes_every_step(classifier: Any, failed_log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    handler = FailureHandler(classifier, config=FailureHandlerConfig(method="rules"))
    seen = steps_seen(monkeypatch, handler)
    with using_cancel_token(CancelToken()):
        d = handler.diagnose(failed_log, META)
    assert seen == ["locate", "classify"]
    assert d.status == "failure_found" and d.reason is FailureReason.KEY_ERROR


def test_a_request_cancelled_before_it_starts_reads_nothing(classifier: Any, failed_log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    handler = FailureHandler(classifier, config=FailureHandlerConfig(method="rules"))
    seen = steps_seen(monkeypatch, handler)
    token = CancelToken()
    token.cancel()
    with using_cancel_token(token), pytest.raises(Cancelled, match="before locate"):
        handler.diagnose(failed_log, META)
    assert seen == []


def test_after_the_504_the_worker_stops_at_the_step_boundary(classifier: Any, failed_log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the service's work queue: the call times out while the locator runs; the worker
    thread then ends at the step boundary (Cancelled) instead of classifying."""
    handler = FailureHandler(classifier, config=FailureHandlerConfig(method="rules"))
    ended = threading.Event()
    outcome: list[BaseException | None] = []
    seen = steps_seen(monkeypatch, handler, after_locate=lambda: time.sleep(0.5))  # the locator outlives the call

    def work() -> Any:
        try:
            out = handler.diagnose(failed_log, META)
            outcome.append(None)
            return out
        except BaseException as exc:
            outcome.append(exc)
            raise
        finally:
            ended.set()

    async def call() -> None:
        queue = WorkQueue(slots=1, timeout_s=0.2)
        try:
            with pytest.raises(CallTimeout):
                await queue.run(work)
        finally:
            queue.close()

    asyncio.run(call())
    assert ended.wait(30)
    assert seen == ["locate"]
    assert isinstance(outcome[0], Cancelled)


def test_check_cancelled_is_silent_without_a_token_or_before_the_cancel() -> None:
    check_cancelled("anything")  # no request: nothing to cancel
    token = CancelToken()
    with using_cancel_token(token):
        check_cancelled("locate")
        token.cancel()
        with pytest.raises(Cancelled, match="before locate"):
            check_cancelled("locate")
