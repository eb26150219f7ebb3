"""`POST /v1/slurm/time-limit`: what job_submit.lua asks, answered as one line of text.

The plugin runs inside slurmctld with its job write lock held, so the call must be cheap on the
Slurm side: `curl` with a short timeout, a JSON body built in Lua, and a plain-text answer it can
read with one pattern (`OK <minutes> <note>` / `SKIP <reason>`). Everything else (the launch
command of the script, the GPUs, the advisor, the time-limit rule) happens here, in the service's
work queue like every /v1 call. Every failure is an answer `SKIP <why>` with status 200, so the
plugin has one path for "leave the job to Slurm"; only the token check (401) and the service's
own guards (413, 429 before parsing) answer otherwise, and the plugin reads those as SKIP too.

It lives with the service (like `chat_route`): it reads the service's core, token check and wire
models, while `deploy/slurm/` holds what Slurm itself runs (plugin, hook, time-limit rule) and
never imports the service, so the dependency goes one way.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from schedmate.deploy.service.auth import token_check
from schedmate.deploy.service.config import ServiceConfig
from schedmate.deploy.service.core import ServiceCore
from schedmate.deploy.service.models import AdviseRequest
from schedmate.deploy.slurm.slurmjob import gpus_requested, launch_command
from schedmate.deploy.slurm.timelimit import DEFAULT_MARGIN, NO_VAL_MIN, Decision, time_limit
from schedmate.errors import BadInput, SchedMateError

__all__ = ["PATH", "TimeLimitRequest", "decide", "router"]

PATH = "/v1/slurm/time-limit"
log = logging.getLogger("schedmate.service.slurm")


class TimeLimitRequest(BaseModel):
    """The job as job_submit.lua sees it (`job_desc` fields; Slurm's NO_VAL numbers mean "not given")."""

    model_config = ConfigDict(extra="forbid")

    work_dir: str = Field(max_length=4096)
    script: str = Field(max_length=1 << 20, description="the batch script (job_desc.script)")
    tres_per_node: str = Field("", max_length=1024, description="e.g. gres:gpu:2")
    tres_per_job: str = Field("", max_length=1024)
    nodes: int | None = Field(None, ge=0)
    user: str | None = Field(None, max_length=256)
    max_minutes: int | None = Field(None, ge=0, description="the partition's MaxTime; 0: none")
    margin: float = Field(DEFAULT_MARGIN, ge=1.0, le=10.0)

    def advise_request(self) -> AdviseRequest:
        nodes = self.nodes if self.nodes and self.nodes < NO_VAL_MIN else None
        gpus = gpus_requested(self.tres_per_node, nodes) or gpus_requested(self.tres_per_job)
        return AdviseRequest(repo=self.work_dir, command=launch_command(self.script), gpus=gpus, nodes=nodes,
                             user=self.user)


def decide(answer: Any, req: TimeLimitRequest) -> Decision:
    """The decision for an `AdviseResponse`: the rule over its estimate, or why there is none."""
    if answer.fallback is not None or answer.estimate is None:
        return Decision(None, f"SchedMate: {answer.reason or 'no estimate'}")
    if "all failed or cancelled" in (answer.estimate.note or ""):  # issue 27 (estimator.py rule 2)
        return Decision(None, "SchedMate: every similar past job failed or was cancelled; their run times say when "
                              "they stopped, not how long the work takes")
    return time_limit(answer.estimate.model_dump(), margin=req.margin, max_minutes=req.max_minutes)


def router(core: ServiceCore, config: ServiceConfig) -> APIRouter:
    api = APIRouter(tags=["slurm"])

    @api.post(PATH, response_class=PlainTextResponse, dependencies=[Depends(token_check(config.token))])
    async def slurm_time_limit(body: dict[str, Any], request: Request) -> PlainTextResponse:
        """`OK <minutes> <note>` or `SKIP <reason>` for a batch job submitted without --time."""
        try:
            req = TimeLimitRequest.model_validate(body)
            if not req.script.strip():
                raise BadInput("no batch script (interactive job)")
            answer = await request.app.state.queue.run(core.advise, req.advise_request())
            decision = decide(answer, req)
        except ValidationError as exc:
            e = exc.errors()[0]
            decision = Decision(None, f"bad request: {'.'.join(map(str, e['loc']))}: {e['msg']}")
        except SchedMateError as exc:  # every kind is a SKIP here: the plugin's one path is "leave it to Slurm"
            decision = Decision(None, f"SchedMate {type(exc).__name__}: {exc.one_line()}")
        except Exception as exc:  # noqa: BLE001 -- the job must still be submitted; logged here
            log.exception("slurm time-limit")
            decision = Decision(None, f"SchedMate internal error ({type(exc).__name__})")
        return PlainTextResponse(decision.line() + "\n")

    return api
