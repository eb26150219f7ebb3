"""The log-following daemon (deploy/daemon/): `schedmate daemon --logs DIR`.

Prints one status line per job whose state changed (step time, slowdown, loss, diagnosis), and
with `--once` a final line of counters. Bad input (no such directory, Redis unreachable) is one
line and exit 2.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from schedmate.errors import BadInput, DependencyUnavailable, NotFound


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add this area's commands to the `schedmate` app (top level) or to `schedmate eval`."""

    @app.command("daemon")
    def daemon(
        logs: Annotated[Path, typer.Option(help="Directory of job logs to follow (one job per file name; "
                                           "rotated names like job.log.1 map to their job).")],
        redis_url: Annotated[str | None, typer.Option("--redis", help="Redis URL for offsets and results "
                                                      "(default: the embedded server, started if needed).")] = None,
        interval: Annotated[float, typer.Option(help="Seconds between directory polls.", min=0.01)] = 1.0,
        once: Annotated[bool, typer.Option("--once", help="Read what is there now, handle ends, print, exit.")] = False,
        idle: Annotated[float, typer.Option(help="Seconds without a new line before a job counts as idle "
                                            "(and is diagnosed if its last lines hold a failure signature).")] = 300.0,
        failure_method: Annotated[str, typer.Option(help="Failure Handler classifier: learned | rules | llm.")] = "learned",
        as_json: Annotated[bool, typer.Option("--json", help="JSON lines instead of text lines.")] = False,
    ) -> None:
        """Follow a directory of job logs: Metric Tracker per job, Failure Handler when one ends badly."""
        import redis

        from schedmate.deploy.daemon import DaemonConfig, DaemonState, JobConfig, LogDaemon

        if failure_method not in ("learned", "rules", "llm"):
            raise BadInput(f"--failure-method must be learned, rules or llm, not {failure_method!r}")
        if not logs.is_dir():
            raise NotFound(f"--logs {logs}: not a directory")
        url = redis_url or _embedded_redis()
        try:
            state = DaemonState.connect(url)
        except ValueError as exc:  # redis-py refusing the URL itself (no scheme, bad port)
            raise BadInput(f"--redis {url}: {exc}") from None
        except (redis.RedisError, OSError) as exc:  # redis' own errors are one line already
            raise DependencyUnavailable(f"cannot reach Redis at {url}: {type(exc).__name__}: {exc}") from None
        config = DaemonConfig(interval_s=interval, jobs=JobConfig(idle_s=idle), failure_method=failure_method)
        d = LogDaemon(logs, state, config=config)

        def emit(statuses: list[Any]) -> None:
            for st in statuses:
                stamp = time.strftime("%H:%M:%S")
                print(st.model_dump_json() if as_json else f"{stamp} {st.line()}", flush=True)

        if once:
            emit(d.run_once())
            s = d.stats()
            print(json.dumps({"stats": s}) if as_json else
                  f"files={s['files']} jobs={s['jobs']} lines={s['lines']} bytes={s['bytes_read']} "
                  f"lag_bytes={s['lag_bytes']} diagnoses={s['diagnoses']}", flush=True)  # fmt: skip
            d.close()
            return
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        try:
            d.run(stop, on_tick=emit)
        except KeyboardInterrupt:
            stop.set()


def _embedded_redis() -> str:
    """The embedded server's URL, started when none runs (RedisServerError, a DependencyUnavailable)."""
    from schedmate.embeddings import redis_server

    return redis_server.start(redis_server.default_data_dir()).url
