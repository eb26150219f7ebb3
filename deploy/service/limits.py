"""Request size limit and the bounded work queue (429 when full, 504 past the per-call timeout).

`WorkQueue` admits at most `slots` calls at once, running or waiting for the models; a call
beyond that is refused at once (`QueueFull`, answered 429) rather than queued without bound, so
overload costs a rejection, not memory. A call that outlives `timeout_s` is answered 504, but its
thread keeps its slot until it really ends: timed-out work cannot pile up behind the lock. The
504 also cancels the call's `CancelToken` (`schedmate.cancel`), so work that checks it stops at
its next step instead of running on for nobody: the advisor's budgeted reads
(`agents.advisor.budget`), a diagnosis at its next step boundary (locate, classify, similar-failure
search, recovery: `schedmate.cancel.Cancelled`), and every LLM call (advise, track, diagnose,
chat), which `llm_breaker.time_left()` then skips. A tracking run's deterministic reading still
finishes (it is bounded by the log readers' caps).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from schedmate.cancel import CancelToken, using_cancel_token
from schedmate.errors import Overloaded, TimedOut

__all__ = ["BodyLimit", "CallTimeout", "FastReject", "QueueFull", "WorkQueue"]

T = TypeVar("T")


class QueueFull(Overloaded):
    """Every slot is taken."""


class CallTimeout(TimedOut):
    """The call did not finish within the per-call timeout."""


class WorkQueue:
    def __init__(self, slots: int, timeout_s: float) -> None:
        self.slots = slots
        self.timeout_s = timeout_s
        self._busy = 0
        self._executor = ThreadPoolExecutor(max_workers=slots, thread_name_prefix="schedmate-call")
        self.rejected = 0
        self.timed_out = 0
        self.completed = 0

    @property
    def busy(self) -> int:
        return self._busy

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        if self._busy >= self.slots:
            self.rejected += 1
            raise QueueFull(f"all {self.slots} work slots are busy")
        self._busy += 1  # the event loop is single-threaded: no lock needed
        token = CancelToken()
        future = asyncio.get_running_loop().run_in_executor(self._executor, _cancellable, token, fn, *args)
        future.add_done_callback(self._release)
        try:
            return await asyncio.wait_for(asyncio.shield(future), self.timeout_s)
        except TimeoutError:
            self.timed_out += 1
            token.cancel()
            raise CallTimeout(f"no answer within {self.timeout_s:g} s") from None

    def _release(self, _future: Awaitable[Any]) -> None:
        self._busy -= 1
        self.completed += 1

    def stats(self) -> dict[str, int]:
        return {"slots": self.slots, "busy": self._busy, "rejected": self.rejected, "timed_out": self.timed_out,
                "completed": self.completed}

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


def _cancellable(token: CancelToken, fn: Callable[..., T], *args: Any) -> T:
    with using_cancel_token(token):
        return fn(*args)


class BodyLimit:
    """ASGI middleware: 413 for a declared Content-Length above `max_bytes`, and for a streamed
    body that grows past it (the route's body read then fails with the same 413)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await _too_large(send, self.max_bytes)
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise HTTPException(413, f"request body exceeds {self.max_bytes} bytes")
            return message

        await self.app(scope, limited, send)


async def _too_large(send: Send, limit: int) -> None:
    body = ('{"fallback":"scheduler-default","reason":"request body exceeds %d bytes","retry_after_s":null}'
            % limit).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class FastReject:
    """ASGI middleware: while every work slot is taken, answer /v1 calls 429 before routing, body
    parsing or validation. Under a 10x overload the event loop shares the GIL with the agents'
    threads, and a rejection that costs the full FastAPI path made rejections themselves queue
    for seconds; `WorkQueue.run` still decides for the calls that get through."""

    def __init__(self, app: ASGIApp, queue: WorkQueue, prefix: str = "/v1/") -> None:
        self.app = app
        self.queue = queue
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.queue.busy >= self.queue.slots and scope["path"].startswith(self.prefix):
            self.queue.rejected += 1
            body = (b'{"fallback":"scheduler-default","reason":"all %d work slots are busy","retry_after_s":1.0}'
                    % self.queue.slots)
            await send({"type": "http.response.start", "status": 429,
                        "headers": [(b"content-type", b"application/json"), (b"retry-after", b"1"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)
