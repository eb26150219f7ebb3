"""Routes of the chat diagnosis (API and the local web page) served by `schedmate serve`.

`GET /chat` is a plain HTML/JS page (its script and style are served from this package: no CDN);
`POST /v1/chat` answers one question as JSON (`ChatAnswer`: the text, the quoted log lines with
their numbers, the proposed recovery plan). The API route sits behind the service's bearer token
and its work queue (429 when full, 504 past the per-call timeout), like every /v1 call; the page
asks for the token when the API answers 401.

`CoreBackend` is the chat's `ChatBackend` over `ServiceCore`: the same models, Redis, path
allow-list and degradation as the other /v1 calls; the terminal front end (`schedmate chat`)
uses it too. Conversations live in Redis when the service has one (else in the process, said so
in every answer). A configured LLM endpoint (`serve --llm-url`) drives the tools; without one the
tools answer alone.
"""

from __future__ import annotations

import contextvars
import logging
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse, HTMLResponse
from pydantic import BaseModel, ConfigDict, Field

from schedmate.agents.chat import (
    ChatAgent,
    ChatAnswer,
    ChatConfig,
    ChatInputError,
    ChatUnavailable,
    DiagnosisFacts,
    EstimateFacts,
    JobFacts,
    MemorySessionStore,
    MetricsFacts,
    RedisSessionStore,
    SimilarCase,
)
from schedmate.agents.chat.facts import SESSION_ID
from schedmate.agents.chat.intent_model import IntentClassifier
from schedmate.deploy.service.auth import token_check
from schedmate.deploy.service.config import PathRefused, ServiceConfig
from schedmate.deploy.service.core import DependencyDown, ServiceCore
from schedmate.deploy.service.http_errors import OPENAPI_ERRORS, error_response, internal_error, response_for
from schedmate.deploy.service.models import (
    AdviseRequest,
    DiagnoseRequest,
    SimilarFailuresRequest,
    TrackRequest,
)
from schedmate.errors import BadInput, SchedMateError

__all__ = ["ChatRequest", "CoreBackend", "make_agent", "router"]

log = logging.getLogger("schedmate.service.chat")
STATIC = Path(__file__).resolve().parent / "static"
_JOB_ID = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"


class ChatRequest(BaseModel):
    """One question in a session; `log` (a path under the allowed roots) or `job_id` on the first turn."""

    model_config = ConfigDict(extra="forbid")

    session_id: str = Field(pattern=SESSION_ID)
    question: str = Field(min_length=1, max_length=4000)
    log: str | None = Field(None, max_length=4096)
    job_id: str | None = Field(None, pattern=_JOB_ID)


class CoreBackend:
    """`ChatBackend` over the service core (its errors translated to the chat's two kinds)."""

    def __init__(self, core: ServiceCore) -> None:
        self.core = core

    def resolve_log(self, raw: str) -> Path:
        try:
            path = self.core.config.resolve_path(raw, kind="log")
        except PathRefused as exc:
            raise ChatInputError(str(exc)) from None
        if not path.is_file():
            raise ChatInputError(f"log not found or not a regular file: {raw}")
        return path

    def _call(self, fn: Any, req: Any) -> Any:
        try:
            return fn(req)
        except DependencyDown as exc:
            raise ChatUnavailable(f"{exc.dependency}: {exc.reason}") from None
        except BadInput as exc:  # a path refused, a file not found, ...
            raise ChatInputError(str(exc)) from None

    def diagnose(self, log: Path, job_id: str) -> DiagnosisFacts:
        """The service's diagnosis without its envelope: the same `Diagnosis` the API answers."""
        r = self._call(self.core.diagnose, DiagnoseRequest(log=str(log), job_id=job_id))
        return DiagnosisFacts(**{name: getattr(r, name) for name in DiagnosisFacts.model_fields})

    def similar(self, line: str, k: int) -> list[SimilarCase]:
        r = self._call(self.core.similar_failures, SimilarFailuresRequest(line=line[:4096], k=k))
        return [SimilarCase(job_id=s["job_id"], score=s["score"], category=s.get("category"), reason=s.get("reason"),
                            final_status=s.get("final_status"), duration_s=s.get("duration"),
                            resolution=s.get("resolution")) for s in r.similar]

    def embed(self, texts: list[str]) -> Any:
        """The service's MiniLM over `texts` (the chat's intent classifier; `ChatUnavailable` while loading)."""
        try:
            self.core._need_models()
        except DependencyDown as exc:
            raise ChatUnavailable(f"{exc.dependency}: {exc.reason}") from None
        embedder = self.core._embedder
        if embedder is None:
            raise ChatUnavailable("models: no embedder loaded")
        return embedder.embed(texts)

    def metrics(self, log: Path) -> MetricsFacts:
        """The service's `TrackResult` without its envelope (whose `reason` says why there is no signal)."""
        r = self._call(self.core.track, TrackRequest(log=str(log)))
        fields = {name: getattr(r, name) for name in MetricsFacts.model_fields}
        return MetricsFacts(**{**fields, "note": r.reason or r.note})

    def job(self, job_id: str) -> JobFacts | None:
        try:
            record = self.core.job_record(job_id)
        except DependencyDown as exc:
            raise ChatUnavailable(f"{exc.dependency}: {exc.reason}") from None
        if record is None:
            return None
        sub, out = record.submitted, record.outcome
        estimate, note = None, ""
        if sub.get("repo") and sub.get("command"):
            try:
                adv = self._call(self.core.advise, AdviseRequest(repo=str(sub["repo"]), command=str(sub["command"]),
                                                                 gpus=sub.get("gpus"), nodes=sub.get("nodes")))
                # the advice's own estimate; without one, an empty one saying why (the envelope's reason)
                estimate = adv.estimate or EstimateFacts(note=adv.reason or "")
                if any(mt.job_id == job_id for mt in adv.matches):
                    note = "the advisor's matches include this job's own record"
            except (ChatInputError, ChatUnavailable) as exc:
                note = f"no advisor estimate: {exc}"
        else:
            note = "no advisor estimate: the history has no repository and command for this job"
        return JobFacts(job_id=job_id, log=sub.get("log"), final_status=out.final_status.value if out.final_status
                        else None, duration_s=out.duration, sm_util=out.sm_util, gpu_memory_gb=out.gpu_memory,
                        failure_category=out.failure_category, failure_reason=out.failure_reason, estimate=estimate,
                        note=note)


def make_agent(core: ServiceCore, config: ServiceConfig, *, chat_model: Any = None,
               mode: str | None = None) -> ChatAgent:
    """The chat over `core`: sessions in the service's Redis (else in memory); `chat_model` given
    or built from `config.llm` when that names an endpoint (then the model drives the tools)."""
    sessions: Any = RedisSessionStore(config.redis_url) if config.redis_url else MemorySessionStore()
    if chat_model is None and config.llm is not None and config.llm.base_url:
        from schedmate.llm import make_chat_model

        chat_model = make_chat_model(config.llm)
    chosen = mode or ("drive" if chat_model is not None else "tools")
    backend = CoreBackend(core)
    return ChatAgent(backend, sessions, chat_model=chat_model if chosen != "tools" else None,
                     config=ChatConfig(mode=chosen), intents=IntentClassifier(backend.embed))  # type: ignore[arg-type]  # `mode`: one of the three its callers set; `embed` takes any list of str


def router(core: ServiceCore, config: ServiceConfig) -> APIRouter:
    """The chat routes over `core` (they share its models, Redis and limits)."""
    api = APIRouter()
    agents: list[ChatAgent] = []  # built on first use: the page must not wait for Redis or a model

    def agent() -> ChatAgent:
        if not agents:
            agents.append(make_agent(core, config))
        return agents[0]

    def answer(req: ChatRequest) -> ChatAnswer:
        if not core.ready:
            raise DependencyDown("models", "still loading")
        return agent().ask(req.session_id, req.question, log=req.log, job_id=req.job_id)

    @api.get("/chat", response_class=HTMLResponse, include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "chat.html", media_type="text/html")

    @api.get("/chat/{asset}", include_in_schema=False)
    async def asset(asset: str) -> Any:
        files = {"chat.js": "text/javascript", "chat.css": "text/css"}
        if asset not in files:
            return error_response(404, f"no such asset: {asset}")
        return FileResponse(STATIC / asset, media_type=files[asset])

    @api.post("/v1/chat", response_model=ChatAnswer, tags=["chat"],
              dependencies=[Depends(token_check(config.token))],
              responses=dict(OPENAPI_ERRORS))
    async def chat(req: ChatRequest, request: Request) -> Any:
        """Ask about a failed job's log (or a job in the history): the answer cites and quotes the
        log's lines and proposes (never runs) an allow-listed recovery plan."""
        queue = getattr(request.app.state, "queue", None)  # the app's WorkQueue: same slots and timeout
        try:
            if queue is None:
                return answer(req)
            return await queue.run(contextvars.copy_context().run, answer, req)  # spans nest under the request
        except SchedMateError as exc:  # bad input, a dependency down, the queue's limits: the one table
            return response_for(exc)
        except Exception as exc:  # noqa: BLE001 -- a bug: logged here; the client gets a one-line reason
            log.exception("internal error in chat")
            return internal_error(exc)

    return api
