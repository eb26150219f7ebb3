"""Per-endpoint circuit breaker and call accounting for LLM clients: fail fast, say so, count.

An endpoint that accepts connections but never answers costs the full request timeout on every
call (with the client's retries, about 90 s per call at the defaults). After `max_failures`
consecutive failures (refused, 5xx) or `max_timeouts` consecutive timeouts an endpoint's circuit
*opens*: calls are refused at once with `LLMSkipped` for `cooldown_s`, then one trial call is let
through (*half-open*); its success closes the circuit, its failure opens it again.

State is held per endpoint by a `CircuitBreaker` object (no module global): the chat model
`schedmate.llm.make_chat_model` builds carries one (`.breaker`), and models given the same
breaker share its endpoint states. `CallCounts` says what happened to the calls: made (reached
the network), answered, failed, timed out, skipped (breaker open or time budget spent), so
reports can state it instead of "LLM: yes".

`llm_deadline(seconds)` bounds the LLM calls made inside it: each call's timeout shrinks to the
time left (split over the client's retries), and a call with no time left is skipped.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Literal

from schedmate.cancel import cancelled
from schedmate.llm_errors import LLMSkipped

__all__ = ["CallCounts", "CircuitBreaker", "describe_llm", "llm_deadline", "model_call_counts", "time_left"]

State = Literal["closed", "open", "half_open"]
_DEADLINE: ContextVar[float | None] = ContextVar("schedmate_llm_deadline", default=None)


@dataclass(frozen=True, slots=True)
class CallCounts:
    """What became of LLM calls. `made` = `answered` + `failed` (timeouts are failures too)."""

    made: int = 0
    answered: int = 0
    failed: int = 0
    timed_out: int = 0
    skipped: int = 0

    def __sub__(self, other: CallCounts) -> CallCounts:
        return CallCounts(self.made - other.made, self.answered - other.answered, self.failed - other.failed,
                          self.timed_out - other.timed_out, self.skipped - other.skipped)  # fmt: skip

    def __add__(self, other: CallCounts) -> CallCounts:
        return CallCounts(self.made + other.made, self.answered + other.answered, self.failed + other.failed,
                          self.timed_out + other.timed_out, self.skipped + other.skipped)  # fmt: skip

    def describe(self) -> str:
        """`3 LLM calls: 1 answered, 2 timed out; 4 skipped` (one line for reports)."""
        if not self.made and not self.skipped:
            return "no LLM calls"
        parts = [f"{self.answered} answered"]
        if self.failed - self.timed_out:
            parts.append(f"{self.failed - self.timed_out} failed")
        if self.timed_out:
            parts.append(f"{self.timed_out} timed out")
        text = f"{self.made} LLM call(s): " + ", ".join(parts)
        return text + (f"; {self.skipped} skipped (circuit open or time budget spent)" if self.skipped else "")


@dataclass(slots=True)
class _Endpoint:
    state: State = "closed"
    failures: int = 0  # consecutive
    timeouts: int = 0  # consecutive
    opened_at: float = 0.0
    trial: bool = False  # a half-open trial call is in flight
    counts: CallCounts = field(default_factory=CallCounts)


class CircuitBreaker:
    """Per-endpoint breaker (see the module docstring). Thread-safe; `clock` is injectable."""

    def __init__(
        self,
        *,
        max_failures: int = 3,
        max_timeouts: int = 1,
        cooldown_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_failures < 1 or max_timeouts < 1 or cooldown_s < 0:
            raise ValueError("max_failures and max_timeouts must be >= 1 and cooldown_s >= 0")
        self.max_failures = max_failures
        self.max_timeouts = max_timeouts
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._lock = threading.Lock()
        self._endpoints: dict[str, _Endpoint] = {}

    def state(self, endpoint: str) -> State:
        with self._lock:
            return self._get(endpoint).state

    def counts(self, endpoint: str | None = None) -> CallCounts:
        """Calls to `endpoint` so far (all endpoints summed when None)."""
        with self._lock:
            if endpoint is not None:
                return self._get(endpoint).counts
            return sum((e.counts for e in self._endpoints.values()), CallCounts())

    def reset(self, endpoint: str | None = None) -> None:
        """Forget the state (and counts) of `endpoint`, or of every endpoint."""
        with self._lock:
            if endpoint is None:
                self._endpoints.clear()
            else:
                self._endpoints.pop(endpoint, None)

    def before_call(self, endpoint: str) -> None:
        """Raise `LLMSkipped` when the circuit is open (or a half-open trial is already running)."""
        with self._lock:
            ep = self._get(endpoint)
            if ep.state == "open":
                left = ep.opened_at + self.cooldown_s - self._clock()
                if left > 0:
                    ep.counts = replace(ep.counts, skipped=ep.counts.skipped + 1)
                    why = f"{ep.timeouts} timeout(s)" if ep.timeouts >= self.max_timeouts else f"{ep.failures} failure(s)"
                    raise LLMSkipped(
                        f"LLM circuit open for {endpoint} after {why} in a row: skipped for another {left:.0f} s",
                        reason="circuit_open",
                    )
                ep.state, ep.trial = "half_open", False
            if ep.state == "half_open":
                if ep.trial:
                    ep.counts = replace(ep.counts, skipped=ep.counts.skipped + 1)
                    raise LLMSkipped(f"LLM circuit half-open for {endpoint}: a trial call is running", reason="circuit_open")
                ep.trial = True

    def success(self, endpoint: str) -> None:
        with self._lock:
            ep = self._get(endpoint)
            ep.state, ep.failures, ep.timeouts, ep.trial = "closed", 0, 0, False
            ep.counts = replace(ep.counts, made=ep.counts.made + 1, answered=ep.counts.answered + 1)

    def failure(self, endpoint: str, *, timeout: bool) -> None:
        with self._lock:
            ep = self._get(endpoint)
            ep.failures += 1
            ep.timeouts = ep.timeouts + 1 if timeout else 0
            c = ep.counts
            ep.counts = replace(c, made=c.made + 1, failed=c.failed + 1, timed_out=c.timed_out + int(timeout))
            if ep.state == "half_open" or ep.failures >= self.max_failures or ep.timeouts >= self.max_timeouts:
                ep.state, ep.opened_at = "open", self._clock()
            ep.trial = False

    def skipped(self, endpoint: str) -> None:
        """Count a call skipped for another reason (no time budget left)."""
        with self._lock:
            ep = self._get(endpoint)
            ep.counts = replace(ep.counts, skipped=ep.counts.skipped + 1)

    def _get(self, endpoint: str) -> _Endpoint:
        ep = self._endpoints.get(endpoint)
        if ep is None:
            ep = self._endpoints[endpoint] = _Endpoint()
        return ep


@contextmanager
def llm_deadline(seconds: float | None) -> Iterator[None]:
    """Bound every LLM call made inside (this thread/task) to end within `seconds` from now;
    nested deadlines keep the earlier one. `None`: no bound (an outer one still holds)."""
    if seconds is None:
        yield
        return
    new = time.monotonic() + max(0.0, seconds)
    outer = _DEADLINE.get()
    token = _DEADLINE.set(new if outer is None else min(outer, new))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def time_left() -> float | None:
    """Seconds left under the innermost `llm_deadline`, or None when none is active. A request
    whose caller stopped waiting (`schedmate.cancel`) has none left: its LLM calls are skipped."""
    if cancelled():
        return 0.0
    deadline = _DEADLINE.get()
    return None if deadline is None else deadline - time.monotonic()


def model_call_counts(model: object) -> CallCounts | None:
    """The calls a chat model built by `make_chat_model` made so far (None: it counts none)."""
    breaker, endpoint = getattr(model, "breaker", None), getattr(model, "endpoint", None)
    return breaker.counts(endpoint) if isinstance(breaker, CircuitBreaker) and endpoint else None


def describe_llm(configured: bool, counts: CallCounts | dict[str, int] | None) -> str:
    """What a report says about its LLM: `LLM: no`, or how many calls were made, answered,
    timed out, failed and skipped; an LLM that answered nothing is said to have answered nothing
    (its systems were scored without LLM answers), never just "yes"."""
    if not configured:
        return "LLM: no"
    if counts is None:
        return "LLM: configured (calls not counted)"
    c = counts if isinstance(counts, CallCounts) else CallCounts(**counts)
    if not c.made and not c.skipped:
        return "LLM: configured, never asked"
    if not c.answered:
        return f"LLM: configured but answered nothing ({c.describe()}): its systems were scored without LLM answers"
    return f"LLM: {c.describe()}"
