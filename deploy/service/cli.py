"""`schedmate serve`: the body of the command (registered in `schedmate.cli`); imports FastAPI and
uvicorn only when run, so the rest of the CLI starts as fast as before."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from schedmate.deploy.service.config import (
    DEFAULT_CALL_TIMEOUT_S,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_INFLIGHT,
    DEFAULT_PORT,
    TOKEN_ENV,
)
from schedmate.errors import DependencyUnavailable

__all__ = ["serve"]


def serve(
    host: Annotated[str, typer.Option(help="Bind address; anything but loopback needs a token.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = DEFAULT_PORT,
    token: Annotated[str | None, typer.Option(envvar=TOKEN_ENV, help=f"Bearer token for /v1 (or ${TOKEN_ENV}).",
                                              show_default=False)] = None,
    allow: Annotated[list[Path] | None, typer.Option(
        "--allow", help="Root under which repos and logs may be read (repeatable; default: the current directory).")
    ] = None,
    redis_url: Annotated[str | None, typer.Option(
        help="Job store; default: the embedded loopback redis-server (started if needed).")] = None,
    no_redis: Annotated[bool, typer.Option("--no-redis", help="Run without a job store (advice falls back).")] = False,
    max_inflight: Annotated[int, typer.Option(help="Calls admitted at once; more are answered 429.")] = DEFAULT_MAX_INFLIGHT,
    max_body: Annotated[int, typer.Option(help="Request body limit, bytes.")] = DEFAULT_MAX_BODY_BYTES,
    timeout: Annotated[float, typer.Option(help="Per-call timeout, seconds (then 504).")] = DEFAULT_CALL_TIMEOUT_S,
    llm_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint (…/v1) for the agents' LLM.")] = None,
    llm_model: Annotated[str | None, typer.Option(help="Model name at --llm-url.")] = None,
    llm_timeout: Annotated[float, typer.Option(help="LLM per-request timeout, seconds.")] = 20.0,
    threads: Annotated[int, typer.Option(help="torch threads for the embedder (1 is fastest for batch-1).")] = 1,
    otel: Annotated[str | None, typer.Option(
        help="Telemetry exporter for traces, metrics and logs: console, otlp or none (default: the OTEL_* "
             "variables; OTLP endpoint from OTEL_EXPORTER_OTLP_ENDPOINT).", show_default=False)] = None,
    ray_address: Annotated[str | None, typer.Option(
        "--ray", help="Answer with a pool of Ray actors: 'local' starts a cluster here, else a Ray address.",
        show_default=False)] = None,
    ray_actors: Annotated[int, typer.Option(help="Actors in the Ray pool (each loads its own models).")] = 2,
) -> None:
    """Serve the SchedMate API (v1) with uvicorn; OpenAPI at /openapi.json, /health and /ready."""
    import uvicorn

    from schedmate.deploy.service.app import create_app
    from schedmate.deploy.service.config import ServiceConfig
    from schedmate.deploy.service.metrics import ServiceMetrics
    from schedmate.telemetry import TelemetryConfig, telemetry_session
    from schedmate.telemetry_genai import GenAISpanProcessor

    llm = None
    if llm_url:
        from schedmate.llm import LLMConfig

        llm = LLMConfig(backend="openai", base_url=llm_url, model=llm_model or "default", timeout_s=llm_timeout,
                        max_retries=0)
    # validated before anything is started: ServiceConfigError and TelemetryConfigError are BadInputs
    config = ServiceConfig(host=host, port=port, token=token, allowed_roots=tuple(allow or [Path.cwd()]),
                           max_body_bytes=max_body, max_inflight=max_inflight, call_timeout_s=timeout,
                           redis_url=None if no_redis else redis_url, llm=llm)
    TelemetryConfig.resolve(otel)
    if config.redis_url is None and not no_redis:
        from schedmate.embeddings import redis_server

        try:
            config = replace(config, redis_url=redis_server.start(redis_server.default_data_dir()).url)
        except (OSError, redis_server.RedisServerError) as exc:  # one line naming the path, not a traceback
            where = f"data directory {exc.filename}: " if isinstance(exc, OSError) and exc.filename else ""
            why = ("a file is in the way (not a directory)" if isinstance(exc, FileExistsError | NotADirectoryError)
                   else exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc))
            raise DependencyUnavailable(f"{where}{why}", hint="set SCHEDMATE_HOME to a writable folder, or pass "
                                                              "--redis-url or --no-redis") from None
    if threads:
        import torch

        torch.set_num_threads(threads)
    roots = ", ".join(str(r) for r in config.allowed_roots)
    typer.echo(f"SchedMate API on http://{host}:{port} (auth {'on' if token else 'off'}; reads under {roots}; "
               f"store {config.redis_url or 'none'})", err=True)
    metrics = ServiceMetrics()  # GET /metrics; LLM calls reach it through their GenAI spans
    from contextlib import ExitStack

    with ExitStack() as stack:
        core = None
        if ray_address:  # the paper's deployment: one head fans the agents' work out over workers
            from schedmate.deploy.ray.actors import RayServiceCore
            from schedmate.deploy.ray.cluster import RayConfig, ray_cluster

            stack.enter_context(ray_cluster(RayConfig(address=ray_address)))  # RayUnavailable: one line, exit 2
            core = RayServiceCore(config, actors=ray_actors)  # no actors: BadInput
            typer.echo(f"answering with {ray_actors} Ray actor(s) at {ray_address}", err=True)
        telemetry = stack.enter_context(
            telemetry_session(otel, span_processors=[GenAISpanProcessor(metrics.observe_llm)]))
        telemetry.flush_on_signal()  # uvicorn re-raises SIGTERM after its graceful shutdown
        uvicorn.run(create_app(config, core, metrics=metrics), host=host, port=port,  # type: ignore[arg-type]  # RayServiceCore duck-types ServiceCore
                    log_level="warning", timeout_graceful_shutdown=10)
