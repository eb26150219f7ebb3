"""Errors as HTTP answers: every route of the service answers a `SchedMateError` through the one
table `schedmate.errors.HTTP_ANSWERS` (status, Retry-After) with an `ErrorBody`, never a traceback."""

from __future__ import annotations

from fastapi.responses import JSONResponse

from schedmate.deploy.service.models import ErrorBody
from schedmate.errors import HTTP_ANSWERS, SchedMateError, http_answer

__all__ = ["OPENAPI_ERRORS", "error_response", "internal_error", "response_for"]

OPENAPI_ERRORS: dict[int | str, dict[str, object]] = {
    a.status: {"model": ErrorBody, "description": a.kind.replace("_", " ")}
    for a in sorted(HTTP_ANSWERS.values(), key=lambda a: -a.status)
}
"""The error answers every route documents in OpenAPI, read off the same table."""


def error_response(status: int, reason: str, retry_after_s: float | None = None,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    """An `ErrorBody` answer (with `Retry-After` in whole seconds when a retry is suggested)."""
    hdrs = dict(headers or {})
    if retry_after_s is not None:
        hdrs["Retry-After"] = str(max(1, round(retry_after_s)))
    return JSONResponse(ErrorBody(reason=reason, retry_after_s=retry_after_s).model_dump(), status_code=status,
                        headers=hdrs)


def response_for(exc: SchedMateError) -> JSONResponse:
    """`exc` answered as its kind's `HTTP_ANSWERS` entry says, its one-line message as the reason."""
    answer = http_answer(exc)
    return error_response(answer.status, exc.one_line(), retry_after_s=answer.retry_after_s)


def internal_error(exc: BaseException) -> JSONResponse:
    """A bug: 500 naming only the exception's type (the details are in the service log)."""
    return error_response(500, f"internal error ({type(exc).__name__}); see the service log")
