"""Typed LLM failures, so callers can tell "no LLM now, fall back" from "the LLM answered badly".

Kept dependency-free (but for `schedmate.errors`, which imports nothing) so every LLM module (and
callers) can import them without cycles. `LLMUnavailable` is a `DependencyUnavailable`; the others
are plain `SchedMateError`s (the LLM answered, badly: no user can fix that).
"""

from __future__ import annotations

from typing import Literal

from schedmate.errors import DependencyUnavailable, SchedMateError


class LLMError(SchedMateError, RuntimeError):
    """Base class of every SchedMate LLM failure."""


class LLMUnavailable(LLMError, DependencyUnavailable):
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


LLMStatus = Literal[
    "ok", "disabled", "unused", "skipped", "unavailable", "circuit_open", "timeout",
    "invalid_output", "request_error", "rejected", "step_limit", "error",
]
"""What became of an agent's LLM stage, the one spelling every agent and wire schema uses (issue 25):

- `ok`: the LLM answered and the answer was used; `disabled`: no LLM configured; `unused`: one was
  configured but not needed (the deterministic path answered); `skipped`: not asked for this input.
- `unavailable`: no answer (endpoint down, backend missing; `LLMUnavailable`); `circuit_open`: not
  asked because the endpoint's circuit breaker is open; `timeout`: the time budget ran out before or
  while asking (was `out_of_time` in the Failure Handler).
- `invalid_output`: it answered, but nothing validated against the schema (`LLMOutputError`; was
  `output_error` in the Metric Tracker); `request_error`: the endpoint refused the request
  (`LLMRequestError`); `rejected`: the answer parsed but a check refused it (the Failure Handler
  still uses it for `LLMRequestError` too); `step_limit`: the agent ran out of model calls; `error`:
  anything else.
"""
