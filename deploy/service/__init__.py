"""SchedMate as a service: a versioned HTTP API over the agents, its client, and a live InsightSource.

    schedmate serve --host 127.0.0.1 --port 8642          # uvicorn; OpenAPI at /openapi.json

    from schedmate.deploy.service import SchedMateClient, LiveInsights
    client = SchedMateClient("http://127.0.0.1:8642", token=...)
    source = LiveInsights(client)                          # plug into Lucid / Sia / standalone

Modules: `config` (typed settings), `models` (the wire format), `core` (the agents behind a lock,
with every dependency failure turned into the scheduler-default signal), `limits` (body size,
bounded work queue), `app` (the FastAPI factory), `client`, `live_source`, `cli` (`serve`).
"""

from schedmate.deploy.service.client import SchedMateClient, ServiceError
from schedmate.deploy.service.config import ServiceConfig
from schedmate.deploy.service.live_source import JobRef, LiveInsights

__all__ = ["JobRef", "LiveInsights", "SchedMateClient", "ServiceConfig", "ServiceError", "create_app"]


def create_app(*args, **kwargs):
    """`app.create_app`, imported on use so the client side never imports FastAPI."""
    from schedmate.deploy.service.app import create_app as factory

    return factory(*args, **kwargs)
