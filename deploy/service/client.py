"""A thin Python client of API v1 (sync httpx). Pass `http=` to run over any httpx client, e.g.
FastAPI's `TestClient(app)` for an in-process service.

Every call returns the response model, or raises `ServiceError` (status, reason, retry hint) for
a non-200 answer or a transport failure; callers that only need "a signal or the scheduler's
default" (`LiveInsights`) treat `ServiceError` as "SchedMate does not know".
"""

from __future__ import annotations

import time
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from schedmate.defaults import SERVICE_URL
from schedmate.deploy.service.models import (
    AdviseRequest,
    AdviseResponse,
    DiagnoseRequest,
    DiagnoseResponse,
    FailureReportRequest,
    JobAck,
    JobEndRequest,
    JobRegisterRequest,
    ResolveFailureRequest,
    ResolveFailureResponse,
    SimilarFailuresRequest,
    SimilarFailuresResponse,
    TrackRequest,
    TrackResponse,
)
from schedmate.errors import DependencyUnavailable

__all__ = ["SchedMateClient", "ServiceError"]

M = TypeVar("M", bound=BaseModel)


class ServiceError(DependencyUnavailable):
    """The service did not answer 200: `status` (None: no HTTP answer), its `reason`, `retry_after_s`."""

    def __init__(self, status: int | None, reason: str, retry_after_s: float | None = None) -> None:
        super().__init__(f"{status or 'no answer'}: {reason}")
        self.status = status
        self.reason = reason
        self.retry_after_s = retry_after_s


class SchedMateClient:
    def __init__(self, base_url: str = SERVICE_URL, *, token: str | None = None, timeout_s: float = 60.0,
                 retries: int = 0, http: httpx.Client | None = None) -> None:
        """`retries`: how often a 429/503 answer is retried after its Retry-After (capped at 5 s)."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._own = http is None
        self._http = http or httpx.Client(base_url=base_url, timeout=timeout_s)
        self._http.headers.update(headers)
        self.retries = retries

    def close(self) -> None:
        if self._own:
            self._http.close()

    def __enter__(self) -> SchedMateClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------------ ops

    def health(self) -> dict[str, Any]:
        return self._get("/health")

    def ready(self) -> dict[str, Any]:
        return self._get("/ready", ok=(200, 503))

    # ------------------------------------------------------------------------------ v1

    def advise(self, repo: str, command: str, *, gpus: int | None = None, **kw: Any) -> AdviseResponse:
        return self._post("advise", AdviseRequest(repo=repo, command=command, gpus=gpus, **kw), AdviseResponse)

    def track(self, log: str, **kw: Any) -> TrackResponse:
        return self._post("track", TrackRequest(log=log, **kw), TrackResponse)

    def diagnose(self, log: str, **kw: Any) -> DiagnoseResponse:
        return self._post("diagnose", DiagnoseRequest(log=log, **kw), DiagnoseResponse)

    def register(self, job_id: str, repo: str, command: str, **kw: Any) -> JobAck:
        return self._post("jobs/register", JobRegisterRequest(job_id=job_id, repo=repo, command=command, **kw), JobAck)

    def end(self, job_id: str, **kw: Any) -> JobAck:
        return self._post("jobs/end", JobEndRequest(job_id=job_id, **kw), JobAck)

    def report_failure(self, job_id: str, log: str, **kw: Any) -> JobAck:
        return self._post("failures/report", FailureReportRequest(job_id=job_id, log=log, **kw), JobAck)

    def resolve_failure(self, job_id: str, note: str) -> ResolveFailureResponse:
        return self._post("failures/resolve", ResolveFailureRequest(job_id=job_id, note=note), ResolveFailureResponse)

    def similar_failures(self, *, line: str | None = None, log: str | None = None, k: int = 3
                         ) -> SimilarFailuresResponse:
        return self._post("failures/similar", SimilarFailuresRequest(line=line, log=log, k=k), SimilarFailuresResponse)

    # ------------------------------------------------------------------------------ transport

    def _get(self, path: str, ok: tuple[int, ...] = (200,)) -> dict[str, Any]:
        resp = self._send("GET", path, None)
        if resp.status_code not in ok:
            raise _error(resp)
        return resp.json()

    def _post(self, op: str, body: BaseModel, model: type[M]) -> M:
        payload = body.model_dump(mode="json", exclude_none=True)
        for attempt in range(self.retries + 1):
            resp = self._send("POST", f"/v1/{op}", payload)
            if resp.status_code == 200:
                return model.model_validate(resp.json())
            err = _error(resp)
            if resp.status_code not in (429, 503) or attempt == self.retries:
                raise err
            time.sleep(min(5.0, err.retry_after_s or 1.0))
        raise AssertionError("unreachable")

    def _send(self, method: str, path: str, payload: Any) -> httpx.Response:
        """One request; sent again once when a pooled keep-alive connection turns out closed by
        the server (every v1 call is read-only or idempotent, so a resend is safe)."""
        for attempt in (0, 1):
            try:
                return self._http.request(method, path, json=payload)
            except (httpx.ReadError, httpx.RemoteProtocolError) as exc:
                if attempt:
                    raise ServiceError(None, f"{type(exc).__name__}: {exc}") from exc
            except httpx.HTTPError as exc:
                raise ServiceError(None, f"{type(exc).__name__}: {exc}") from exc
        raise AssertionError("unreachable")


def _error(resp: httpx.Response) -> ServiceError:
    try:
        body = resp.json()
    except ValueError:
        body = {}
    reason = body.get("reason") if isinstance(body, dict) else None
    if reason is None:
        reason = str(body.get("detail") if isinstance(body, dict) and "detail" in body else resp.text[:300])
    return ServiceError(resp.status_code, reason, body.get("retry_after_s") if isinstance(body, dict) else None)
