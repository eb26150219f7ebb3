"""The advisor, tracker and failure handler as Ray actors, behind `ServiceCore`'s API.

`RayServiceCore` is a drop-in for `ServiceCore` (same methods, same request and response models,
same exceptions), so `create_app(config, RayServiceCore(config))` serves API v1 from a pool of
actors: the head node answers HTTP, the actors (one `ServiceCore` each, models loaded once per
actor, wherever Ray places it) do the work. `map` fans a batch of requests out over the pool.

Routing: a `track` call with a `job_id` always goes to the same actor (a stable hash of the id),
because that actor's tracker keeps the log tailed between calls (before/after comparisons);
everything else goes round-robin. Each actor runs one call at a time (the models are not
thread-safe), so the pool size is the parallelism.
"""

from __future__ import annotations

import itertools
import pickle
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import ray

from schedmate.deploy.service.config import ServiceConfig
from schedmate.deploy.service.core import DependencyDown, ServiceCore
from schedmate.errors import BadInput

__all__ = ["OPERATIONS", "RayServiceCore"]

OPERATIONS = ("advise", "track", "diagnose", "register", "end", "report_failure", "similar_failures", "job_record")
"""`ServiceCore` methods an actor answers (one request in, one answer out)."""


@dataclass(frozen=True)
class _Failure:
    """An exception raised in an actor, carried back as data: `DependencyDown` takes two constructor
    arguments, so it does not survive pickling as itself (every other `SchedMateError` does)."""

    kind: str
    args: tuple[Any, ...]

    @staticmethod
    def of(exc: BaseException) -> _Failure:
        if isinstance(exc, DependencyDown):
            return _Failure("dependency", (exc.dependency, exc.reason))
        try:
            pickle.dumps(exc)
            return _Failure("raise", (exc,))
        except Exception:  # noqa: BLE001 -- an unpicklable exception still reports its type and text
            return _Failure("other", (f"{type(exc).__name__}: {exc}",))

    def rebuild(self) -> BaseException:
        if self.kind == "dependency":
            return DependencyDown(*self.args)
        if self.kind == "raise":
            return self.args[0]
        return RuntimeError(self.args[0])


class _CoreActor:
    """One `ServiceCore` inside a Ray worker (its own models, its own tracked logs)."""

    def __init__(self, config: ServiceConfig) -> None:
        self.core = ServiceCore(config)

    def load(self) -> str | None:
        try:
            self.core.load()
            return None
        except Exception as exc:  # noqa: BLE001 -- the driver reports it for this actor
            return f"{type(exc).__name__}: {exc}"

    def readiness(self) -> dict[str, str]:
        return self.core.readiness()

    def call(self, op: str, req: Any) -> tuple[bool, Any]:
        if op not in OPERATIONS:
            return False, _Failure("other", (f"unknown operation {op!r}",))
        try:
            return True, getattr(self.core, op)(req)
        except Exception as exc:  # noqa: BLE001 -- re-raised on the driver as the original type
            return False, _Failure.of(exc)

    def close(self) -> None:
        self.core.close()


class RayServiceCore:
    """`ServiceCore`'s API answered by `actors` Ray actors (Ray must be initialised)."""

    def __init__(self, config: ServiceConfig, *, actors: int = 2, cpus_per_actor: float = 0.5,
                 timeout_s: float | None = None) -> None:
        if actors < 1:
            raise BadInput("a pool needs at least one actor")
        if not ray.is_initialized():
            raise RuntimeError("Ray is not initialised: use deploy.ray.cluster.ray_cluster first")
        self.config = config
        self.timeout_s = timeout_s if timeout_s is not None else config.call_timeout_s
        remote = ray.remote(num_cpus=cpus_per_actor, max_restarts=1)(_CoreActor)
        self._actors: list[Any] = [remote.remote(config) for _ in range(actors)]  # Ray actor handles
        self._next = itertools.cycle(range(actors))
        self._ready = False
        self._load_error: str | None = None
        self._loading: list[Any] | None = None

    @property
    def size(self) -> int:
        return len(self._actors)

    # ----------------------------------------------------------------------- lifecycle

    def start_loading(self) -> None:
        """Start loading the models in every actor, in parallel, and return at once."""
        if self._loading is None:
            self._loading = [a.load.remote() for a in self._actors]

    def load(self) -> None:
        """Load the models in every actor (waits for `start_loading`); the first failure is raised."""
        self.start_loading()
        assert self._loading is not None  # start_loading set it
        errors = [e for e in ray.get(self._loading) if e]
        if errors:
            self._load_error = errors[0]
            raise RuntimeError(f"{len(errors)} of {self.size} actors failed to load: {errors[0]}")
        self._ready, self._load_error = True, None

    @property
    def ready(self) -> bool:
        return self._ready

    def readiness(self) -> dict[str, str]:
        """The first actor's checks, with `models` ok only when every actor has loaded."""
        checks = dict(ray.get(self._actors[0].readiness.remote(), timeout=self.timeout_s))
        checks["models"] = "ok" if self._ready else (f"failed: {self._load_error}" if self._load_error else "loading")
        checks["actors"] = str(self.size)
        return checks

    def close(self) -> None:
        for actor in self._actors:
            try:
                ray.get(actor.close.remote(), timeout=10)
            except Exception:  # noqa: BLE001 -- a dead actor has nothing left to close
                pass
            ray.kill(actor)
        self._actors = []

    # ----------------------------------------------------------------------- calls

    def _actor_for(self, op: str, req: Any) -> Any:
        job_id = getattr(req, "job_id", None)
        if op == "track" and job_id:
            return self._actors[zlib.crc32(job_id.encode()) % self.size]
        return self._actors[next(self._next) % self.size]

    def _unwrap(self, answer: tuple[bool, Any]) -> Any:
        ok, value = answer
        if ok:
            return value
        raise value.rebuild()

    def call(self, op: str, req: Any) -> Any:
        """One request, answered by one actor (exceptions re-raised as `ServiceCore` raises them)."""
        return self._unwrap(ray.get(self._actor_for(op, req).call.remote(op, req), timeout=self.timeout_s))

    def map(self, op: str, reqs: Sequence[Any]) -> list[Any | BaseException]:
        """Many requests at once over the pool, answers in order; a failed request's slot holds its
        exception instead of failing the batch."""
        refs = [self._actor_for(op, r).call.remote(op, r) for r in reqs]
        out: list[Any | BaseException] = []
        for ok, value in ray.get(refs, timeout=None):
            out.append(value if ok else value.rebuild())
        return out

    def advise(self, req: Any) -> Any:
        return self.call("advise", req)

    def track(self, req: Any) -> Any:
        return self.call("track", req)

    def diagnose(self, req: Any) -> Any:
        return self.call("diagnose", req)

    def register(self, req: Any) -> Any:
        return self.call("register", req)

    def end(self, req: Any) -> Any:
        return self.call("end", req)

    def report_failure(self, req: Any) -> Any:
        return self.call("report_failure", req)

    def similar_failures(self, req: Any) -> Any:
        return self.call("similar_failures", req)

    def job_record(self, job_id: str) -> Any:
        return self.call("job_record", job_id)
