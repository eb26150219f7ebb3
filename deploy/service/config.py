"""Typed settings of the service (one object instead of a dozen keyword arguments)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from schedmate.agents.stack import AgentStackConfig
from schedmate.defaults import SERVICE_PORT, TOKEN_ENV
from schedmate.errors import BadInput, Refused
from schedmate.llm_local import is_loopback

if TYPE_CHECKING:
    from schedmate.llm import LLMConfig

__all__ = ["DEFAULT_PORT", "TOKEN_ENV", "ServiceConfig", "ServiceConfigError"]

DEFAULT_PORT = SERVICE_PORT
DEFAULT_MAX_BODY_BYTES = 64 << 10  # requests carry paths and a command line, never file contents
DEFAULT_MAX_INFLIGHT = 8  # calls admitted at once (running + waiting for the models); more: 429
DEFAULT_CALL_TIMEOUT_S = 30.0


class ServiceConfigError(BadInput):
    """The settings cannot be served safely (e.g. a non-loopback bind without a token)."""


@dataclass(frozen=True)
class ServiceConfig:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    token: str | None = None  # bearer token for /v1; required unless bound to loopback
    allowed_roots: tuple[Path, ...] = ()  # repos and logs are read only under these (empty: none)
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_inflight: int = DEFAULT_MAX_INFLIGHT
    call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S
    redis_url: str | None = None  # None: no job store (answers say so and fall back)
    redis_timeout_s: float = 1.0
    jobs_prefix: str = "schedmate"  # embeddings.store.DEFAULT_PREFIX: the history `schedmate history` builds
    failures_prefix: str = "schedmate-failures"  # agents.failure.similar.FAILURE_PREFIX
    # the agents (threshold, k, estimator, failure method, ...): the deployed defaults of `agents.stack`
    agents: AgentStackConfig = field(default_factory=AgentStackConfig)
    llm: LLMConfig | None = None  # None: static extractor, regex tracker, rules/learned handler
    tracked_jobs: int = 1024  # logs tailed for before/after comparisons (oldest dropped first)

    def __post_init__(self) -> None:
        if self.token is not None:  # a blank token would be accepted here and match no client's header
            if not self.token.strip():
                raise ServiceConfigError(f"the token (--token or {TOKEN_ENV}) is empty or whitespace: no client could "
                                         "authenticate; set a real token or unset it")
            object.__setattr__(self, "token", self.token.strip())
        if not is_loopback(self.host) and not self.token:
            raise ServiceConfigError(
                f"binding to {self.host!r} (not loopback) needs a token: pass --token or set {TOKEN_ENV}")
        if self.max_body_bytes < 1024 or self.max_inflight < 1 or self.call_timeout_s <= 0:
            raise ServiceConfigError("max_body_bytes >= 1024, max_inflight >= 1 and call_timeout_s > 0 are required")
        object.__setattr__(self, "allowed_roots", tuple(Path(r).resolve() for r in self.allowed_roots))

    @property
    def stack_config(self) -> AgentStackConfig:
        """The agents' config, with this service's LLM endpoint when one is set."""
        return self.agents if self.llm is None else replace(self.agents, llm=self.llm)

    @property
    def threshold(self) -> float:
        return self.agents.threshold

    @property
    def top_k(self) -> int:
        return self.agents.top_k

    def resolve_path(self, raw: str, *, kind: str) -> Path:
        """`raw` resolved (symlinks followed) if it lies under an allowed root; else `PathRefused`."""
        path = Path(raw).expanduser()
        if not path.is_absolute():
            raise PathRefused(f"{kind} path must be absolute: {raw!r}")
        resolved = path.resolve()
        if not any(resolved.is_relative_to(root) for root in self.allowed_roots):
            raise PathRefused(f"{kind} path {raw!r} is outside the allowed roots")
        return resolved


class PathRefused(Refused):
    """A path given to the API lies outside the configured roots (or is not absolute)."""
