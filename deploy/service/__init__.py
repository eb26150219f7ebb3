"""SchedMate as a service: a versioned HTTP API over the agents, its client, and a live InsightSource.

    schedmate serve --host 127.0.0.1 --port 8642          # uvicorn; OpenAPI at /openapi.json

    from schedmate.deploy.service import SchedMateClient, LiveInsights
    client = SchedMateClient("http://127.0.0.1:8642", token=...)
    source = LiveInsights(client)                          # plug into Lucid / Sia / standalone

Modules: `config` (typed settings), `models` (the wire format), `core` (the agents behind a lock,
with every dependency failure turned into the scheduler-default signal), `limits` (body size,
bounded work queue), `app` (the FastAPI factory), `client`, `live_source`, `cli` (`serve`).
"""

from typing import TYPE_CHECKING

from schedmate.lazy import lazy_exports

if TYPE_CHECKING:
    from schedmate.deploy.service.client import SchedMateClient, ServiceError
    from schedmate.deploy.service.config import ServiceConfig
    from schedmate.deploy.service.live_source import JobRef, LiveInsights

__all__ = ["JobRef", "LiveInsights", "SchedMateClient", "ServiceConfig", "ServiceError", "create_app"]

# imported on first use (PEP 562): `schedmate serve` is registered by every CLI start through
# `deploy.service.cli`, and the client's wire models load all agents (+ langchain, openai), which
# a command such as `history ingest` never needs (issue 27: its 500 MB budget)
_WHERE = {"SchedMateClient": "client", "ServiceError": "client", "ServiceConfig": "config",
          "JobRef": "live_source", "LiveInsights": "live_source"}


__getattr__ = lazy_exports(__name__, _WHERE)


def create_app(*args, **kwargs):
    """`app.create_app`, imported on use so the client side never imports FastAPI."""
    from schedmate.deploy.service.app import create_app as factory

    return factory(*args, **kwargs)
