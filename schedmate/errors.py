"""One exception root for SchedMate (issue 25, item 2).

Every error SchedMate raises on purpose is a `SchedMateError` with a one-line message (and an
optional hint), in one of a few kinds that say who must act:

- `BadInput`: the caller's input is wrong (a missing file, a malformed number, an unknown name);
  `NotFound`, `Refused` and `InvalidValue` narrow it for HTTP (404, 403, 422).
- `DependencyUnavailable`: something SchedMate needs is not there (Redis, the LLM, Slurm, Ray,
  models still loading, an unwritable file system); `Overloaded` and `TimedOut` are the service's
  own limits (429, 504).
- `Unsupported`: a request SchedMate understands but does not do.

The CLI prints any of them as one line `error: <message>` and exits 2 (`schedmate.cli`); the
service answers them through `HTTP_ANSWERS`, the one table from kind to status. Anything that is
not a `SchedMateError` (an internal `ValueError`, `KeyError`, ...) is a bug: a traceback and exit 1
on the command line, a logged 500 in the service. The module imports nothing, so every layer
(including `llm_errors`, the store, the simulator's trace readers) can subclass it without cycles.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "HTTP_ANSWERS",
    "BadInput",
    "DependencyUnavailable",
    "HttpAnswer",
    "InvalidValue",
    "NotFound",
    "Overloaded",
    "Refused",
    "SchedMateError",
    "TimedOut",
    "Unsupported",
    "http_answer",
]


class SchedMateError(Exception):
    """Root of every error SchedMate raises on purpose. `str(exc)` is the message; `hint` (optional)
    says what to do about it; `one_line()` is both on one line, as the CLI and the service show them."""

    def __init__(self, message: str = "", *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint

    def one_line(self) -> str:
        """Message and hint as one line (newlines in either folded into spaces)."""
        text = str(self) or type(self).__name__
        if self.hint:
            text = f"{text} ({self.hint})"
        return " ".join(text.split())

    @property
    def http_status(self) -> int:
        """The HTTP status `HTTP_ANSWERS` gives this error."""
        return http_answer(self).status


class BadInput(SchedMateError, ValueError):
    """The user's input is wrong and the user can fix it. Also a `ValueError`, so code that already
    refused bad values with `except ValueError` keeps working."""


class NotFound(BadInput, LookupError):
    """The input names something that does not exist (a file, a job, a recorded failure)."""


class InvalidValue(BadInput):
    """Each part of the input is well-formed, but a value is unusable or the parts do not go together."""


class Refused(BadInput):
    """The input names something this caller may not use (a path outside the allowed roots)."""


class DependencyUnavailable(SchedMateError, RuntimeError):
    """Something SchedMate needs is not there now: Redis, the LLM, Slurm, Ray, the models, a file system."""


class Overloaded(DependencyUnavailable):
    """Every slot is taken: try again shortly."""


class TimedOut(DependencyUnavailable):
    """The work did not finish within its time limit."""


class Unsupported(SchedMateError, NotImplementedError):
    """A request SchedMate understands but does not do (a format, a policy variant, a platform)."""


@dataclass(frozen=True)
class HttpAnswer:
    """How the service answers an error kind: status, the metrics label, and the Retry-After it suggests."""

    status: int
    kind: str
    retry_after_s: float | None = None


HTTP_ANSWERS: dict[type, HttpAnswer] = {
    BadInput: HttpAnswer(400, "bad_input"),
    Refused: HttpAnswer(403, "path_refused"),
    NotFound: HttpAnswer(404, "bad_input"),
    InvalidValue: HttpAnswer(422, "bad_input"),
    Overloaded: HttpAnswer(429, "queue_full", retry_after_s=1.0),
    Unsupported: HttpAnswer(501, "unsupported"),
    DependencyUnavailable: HttpAnswer(503, "dependency_down", retry_after_s=5.0),
    TimedOut: HttpAnswer(504, "timeout"),
    SchedMateError: HttpAnswer(500, "internal"),
}
"""Error kind -> HTTP answer, the service's only mapping: an error gets the entry of its nearest
class in the table (so a new subclass needs no entry unless it wants another status)."""


def http_answer(exc: SchedMateError) -> HttpAnswer:
    """The `HTTP_ANSWERS` entry of `exc`'s nearest class in the table."""
    for cls in type(exc).__mro__:
        answer = HTTP_ANSWERS.get(cls)
        if answer is not None:
            return answer
    return HTTP_ANSWERS[SchedMateError]
