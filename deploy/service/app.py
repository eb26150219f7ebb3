"""`create_app(config)`: the FastAPI application of `schedmate serve` (API v1, OpenAPI at /openapi.json).

Status codes: 200 answered (possibly with `fallback="scheduler-default"` and a `reason`), 401 bad
token, 403 path outside the allowed roots, 404/400 unreadable input, 413 body too large, 422
invalid request, 429 work queue full, 503 a required dependency down (Redis for the job history,
models still loading), 504 per-call timeout, 500 an internal error. Every non-200 body is an
`ErrorBody` (the scheduler-default signal plus the reason), never a traceback. A `SchedMateError`
gets its status from the one table `schedmate.errors.HTTP_ANSWERS` (`http_errors.response_for`),
on every route.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from opentelemetry.trace import TracerProvider
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.exceptions import HTTPException

from schedmate.deploy.service.auth import token_check
from schedmate.deploy.service.config import ServiceConfig
from schedmate.deploy.service.core import ServiceCore
from schedmate.deploy.service.http_errors import OPENAPI_ERRORS, error_response, internal_error, response_for
from schedmate.deploy.service.limits import BodyLimit, FastReject, WorkQueue
from schedmate.deploy.service.metrics import HTTPMetrics, QueueCollector, ServiceMetrics
from schedmate.deploy.service.models import (
    AdviseRequest,
    AdviseResponse,
    DiagnoseRequest,
    DiagnoseResponse,
    ErrorBody,
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
from schedmate.deploy.service.slurm_route import router as slurm_router
from schedmate.errors import SchedMateError, http_answer

__all__ = ["API_VERSION", "create_app"]

API_VERSION = "v1"
log = logging.getLogger("schedmate.service")


def create_app(config: ServiceConfig, core: ServiceCore | None = None, *, load_models: bool = True,
               metrics: ServiceMetrics | None = None, tracer_provider: TracerProvider | None = None) -> FastAPI:
    """The app over `core` (built from `config` when None). Models load in the background at
    startup when `load_models` (so /health answers at once and /ready says when they are in).
    `metrics` (a fresh registry when None) is what `GET /metrics` exposes; pass one in to also
    feed it LLM calls (`GenAISpanProcessor(metrics.observe_llm)`). FastAPI's own telemetry traces
    each request as a SERVER span on `tracer_provider` (default: the process's)."""
    core = core or ServiceCore(config)
    queue = WorkQueue(config.max_inflight, config.call_timeout_s)
    metrics = metrics or ServiceMetrics()
    metrics.registry.register(QueueCollector(queue))

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        loader = None
        if load_models and not core.ready:
            loader = asyncio.get_running_loop().run_in_executor(None, _load, core)
        try:
            yield
        finally:
            if loader is not None and not loader.done():
                loader.cancel()
            queue.close()
            core.close()

    app = FastAPI(title="SchedMate", version="1", lifespan=lifespan,
                  description="Scheduling signals from code, logs and job history. Any answer with "
                              "`fallback: scheduler-default` means: keep the scheduler's own default.",
                  telemetry={"tracer_provider": tracer_provider} if tracer_provider is not None else None)
    app.add_middleware(BodyLimit, max_bytes=config.max_body_bytes)
    app.add_middleware(FastReject, queue=queue)  # a full queue costs no parsing
    app.add_middleware(HTTPMetrics, metrics=metrics)  # outermost: fast 429s are timed and counted too
    app.state.core, app.state.queue, app.state.metrics = core, queue, metrics

    @app.exception_handler(HTTPException)
    async def http_error(_request: Request, exc: HTTPException) -> JSONResponse:
        return error_response(exc.status_code, str(exc.detail), headers=getattr(exc, "headers", None))

    @app.get("/health", tags=["ops"])
    async def health() -> dict[str, str]:
        """Liveness: the process answers (dependencies are /ready's business)."""
        return {"status": "ok"}

    @app.get("/ready", tags=["ops"], responses={503: {"model": ErrorBody}})
    async def ready() -> JSONResponse:
        """Readiness: models loaded and Redis answering (or not configured)."""
        checks = await asyncio.get_running_loop().run_in_executor(None, core.readiness)
        ok = checks["models"] == "ok" and checks["redis"] in ("ok", "not configured")
        return JSONResponse({"ready": ok, **checks, "queue": queue.stats()}, status_code=200 if ok else 503)

    @app.get("/metrics", tags=["ops"], response_class=Response, dependencies=[Depends(token_check(config.token))])
    async def prometheus_metrics() -> Response:
        """Prometheus exposition of this app's registry (behind the /v1 token when one is set)."""
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    v1 = APIRouter(prefix=f"/{API_VERSION}", dependencies=[Depends(token_check(config.token))],
                   responses=dict(OPENAPI_ERRORS))

    async def call(fn: Callable[[Any], Any], req: Any) -> Any:
        t0 = time.perf_counter()
        op = getattr(fn, "__name__", "other")
        try:
            out = await queue.run(contextvars.copy_context().run, fn, req)  # agent spans nest under the request
        except SchedMateError as exc:  # bad input, a dependency down, the queue's limits: the one table
            answer = http_answer(exc)
            metrics.error(op, answer.kind)
            if answer.status >= 500:
                log.warning("%s: %s: %s", op, type(exc).__name__, exc.one_line())
            return response_for(exc)
        except Exception as exc:  # noqa: BLE001 -- a bug: logged here; the client gets the default signal
            metrics.error(op, "internal")
            log.exception("internal error in %s", op)
            return internal_error(exc)
        out.latency_s = round(time.perf_counter() - t0, 6)
        metrics.observe(op, req, out)
        return out

    @v1.post("/advise", response_model=AdviseResponse)
    async def advise(req: AdviseRequest) -> Any:
        """Metadata of the job's code, similar past jobs, and a duration/utilisation estimate."""
        return await call(core.advise, req)

    @v1.post("/track", response_model=TrackResponse)
    async def track(req: TrackRequest) -> Any:
        """Step time, loss and throughput from a log (before/after `split_at` when given)."""
        return await call(core.track, req)

    @v1.post("/diagnose", response_model=DiagnoseResponse)
    async def diagnose(req: DiagnoseRequest) -> Any:
        """Root-cause line, category/reason/component, similar failures, dry-run recovery plan."""
        return await call(core.diagnose, req)

    @v1.post("/jobs/register", response_model=JobAck)
    async def register(req: JobRegisterRequest) -> Any:
        """Store a submitted job's fingerprint (no outcome yet) in the job history."""
        return await call(core.register, req)

    @v1.post("/jobs/end", response_model=JobAck)
    async def end(req: JobEndRequest) -> Any:
        """Record a registered job's outcome (a failed job's log is diagnosed and kept)."""
        return await call(core.end, req)

    @v1.post("/failures/report", response_model=JobAck)
    async def report_failure(req: FailureReportRequest) -> Any:
        """Diagnose a failed job's log and add it to the failure history."""
        return await call(core.report_failure, req)

    @v1.post("/failures/resolve", response_model=ResolveFailureResponse)
    async def resolve(req: ResolveFailureRequest) -> Any:
        """Record how a recorded failure was resolved; later diagnoses show it beside similar failures."""
        return await call(core.resolve_failure, req)

    @v1.post("/failures/similar", response_model=SimilarFailuresResponse)
    async def similar(req: SimilarFailuresRequest) -> Any:
        """Past failures whose root-cause line looks like this one (or like this log's)."""
        return await call(core.similar_failures, req)

    app.include_router(v1)
    from schedmate.deploy.service.chat_route import router as chat_router

    app.include_router(chat_router(core, config))
    app.include_router(slurm_router(core, config))  # what job_submit.lua asks (deploy/slurm/)
    return app


def _load(core: ServiceCore) -> None:
    try:
        core.load()
    except Exception:  # noqa: BLE001 -- /ready reports it; the API answers 503 meanwhile
        log.exception("loading the models failed")
