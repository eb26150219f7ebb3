"""Typed LLM failures, so callers can tell "no LLM now, fall back" from "the LLM answered badly".

Kept dependency-free so every LLM module (and callers) can import them without cycles.
"""

from __future__ import annotations


class LLMError(RuntimeError):
    """Base class of every SchedMate LLM failure."""


class LLMUnavailable(LLMError):
    """No answer could be obtained: endpoint down or refusing, timed out, overloaded, or the
    backend is not installed/configured here. Callers should fall back to non-LLM heuristics."""


class LLMRequestError(LLMError):
    """The endpoint rejected the request itself (HTTP 4xx, e.g. an unsupported `method`)."""


class LLMOutputError(LLMError):
    """The model answered, but after all retries nothing validated against the schema.

    `raw` is the last raw answer (tool-call arguments or text); `errors` holds one message per
    attempt, so logs show why each attempt was rejected.
    """

    def __init__(self, message: str, *, raw: str, errors: list[str], attempts: int) -> None:
        super().__init__(message)
        self.raw = raw
        self.errors = errors
        self.attempts = attempts


class LLMSkipped(LLMUnavailable):
    """The call was not made: the endpoint's circuit breaker is open (`reason="circuit_open"`,
    see `schedmate.llm_breaker`) or the caller's time budget was spent (`reason="budget"`).
    A kind of `LLMUnavailable`, so every caller already falls back; reports count it apart."""

    def __init__(self, message: str, *, reason: str = "circuit_open") -> None:
        super().__init__(message)
        self.reason = reason
