"""A request's cancellation, visible to every agent working for it on the same thread.

The service's work queue runs each request on a worker thread; when the caller stops waiting
(504), the queue sets the request's `CancelToken`. Work then stops at its next check instead of
running on for nobody: the advisor's budgeted reads raise (`agents.advisor.budget`), a diagnosis
stops at its next step boundary (`check_cancelled` raises `Cancelled` before locate, classify,
similar-failure search and recovery), and every LLM call is skipped, because
`llm_breaker.time_left()` reads a cancelled request as no time left.
The token is a context variable, so the many small readers and the LLM guard need no parameter.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from schedmate.errors import TimedOut

__all__ = ["CancelToken", "Cancelled", "cancel_token", "cancelled", "check_cancelled", "using_cancel_token"]


class CancelToken:
    """Set from another thread when nobody waits for the answer any more."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()


class Cancelled(TimedOut):
    """The request was given up by its caller (the service answered 504); raised at a step boundary so
    the work ends there. A `TimedOut`, so anything that still sees it answers 504 too."""


_TOKEN: ContextVar[CancelToken | None] = ContextVar("schedmate_cancel_token", default=None)


def cancel_token() -> CancelToken | None:
    """The token of the request this thread works for (set by the service's work queue)."""
    return _TOKEN.get()


def cancelled() -> bool:
    """True when the request this thread works for was given up by its caller."""
    token = _TOKEN.get()
    return token is not None and token.cancelled


def check_cancelled(step: str) -> None:
    """Raise `Cancelled` when the request this thread works for was given up, before `step`."""
    if cancelled():
        raise Cancelled(f"cancelled before {step}: the caller stopped waiting")


@contextmanager
def using_cancel_token(token: CancelToken) -> Iterator[CancelToken]:
    reset = _TOKEN.set(token)
    try:
        yield token
    finally:
        _TOKEN.reset(reset)
