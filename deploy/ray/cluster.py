"""Joining a Ray cluster, or starting a local one, for the length of a `with` block.

`address` is what `ray.init` takes ("auto", "host:port", "ray://host:port"), or "local" to start a
single-node cluster in this process. A local cluster on a CPU-only machine advertises
`gpus` units of the custom resource `gpu_resource` ("fake_gpu" by default), so tasks that ask for
`resources={"fake_gpu": k}` are placed against it exactly as GPU tasks are on real nodes; name
the resource "GPU" on a machine with GPUs (Ray detects them; nothing is faked).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from schedmate.errors import DependencyUnavailable

__all__ = ["DEFAULT_GPU_RESOURCE", "LOCAL", "RayConfig", "RayUnavailable", "ray_cluster"]

LOCAL = "local"
DEFAULT_GPU_RESOURCE = "fake_gpu"


class RayUnavailable(DependencyUnavailable, ValueError):
    """The Ray cluster named by the user cannot be joined or started (bad address, none running)."""


@dataclass(frozen=True)
class RayConfig:
    """Where the work runs. `num_cpus` and `gpus` only shape a cluster started here ("local")."""

    address: str = LOCAL
    num_cpus: int | None = None
    gpus: float = 8.0
    gpu_resource: str = DEFAULT_GPU_RESOURCE

    def __post_init__(self) -> None:
        if not self.address.strip():
            raise RayUnavailable("empty Ray address: give 'local', 'auto' or host:port")
        if self.gpus < 0 or (self.num_cpus is not None and self.num_cpus < 1):
            raise RayUnavailable("gpus must be >= 0 and num_cpus >= 1")

    @property
    def is_local(self) -> bool:
        return self.address.strip().lower() == LOCAL

    def gpu_request(self, k: float) -> dict[str, Any]:
        """`ray.remote` options asking for `k` GPUs of this cluster's kind (0: none)."""
        if k <= 0:
            return {}
        return {"num_gpus": k} if self.gpu_resource == "GPU" else {"resources": {self.gpu_resource: k}}


@contextmanager
def ray_cluster(config: RayConfig) -> Iterator[dict[str, float]]:
    """Ray initialised for the block; yields the cluster's total resources.

    A Ray already initialised in this process (e.g. a test fixture's) is used as is and left
    running; one started or joined here is shut down on exit.
    """
    import ray

    if ray.is_initialized():
        yield dict(ray.cluster_resources())
        return
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if config.is_local:
        kwargs["num_cpus"] = config.num_cpus
        if config.gpu_resource != "GPU":
            kwargs["resources"] = {config.gpu_resource: config.gpus}
    else:
        kwargs["address"] = config.address
        _check_reachable(config.address)
    try:
        ray.init(**kwargs)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        hint = ("; a cluster with token authentication (Ray's default) needs RAY_AUTH_MODE=token and its token "
                "(~/.ray/auth_token or RAY_AUTH_TOKEN)" if not config.is_local and "RAY_AUTH_MODE" not in os.environ
                else "")
        raise RayUnavailable(f"cannot join Ray at {config.address!r}: {first}{hint}") from exc
    try:
        yield dict(ray.cluster_resources())
    finally:
        ray.shutdown()


def _check_reachable(address: str, timeout_s: float = 3.0) -> None:
    """Fail in seconds on a host:port where nothing listens (`ray.init` retries for minutes)."""
    target = address.strip().removeprefix("ray://")
    if target.lower() == "auto":
        return  # Ray itself says at once when no local cluster runs
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit():
        raise RayUnavailable(f"Ray address {address!r} is not 'local', 'auto', host:port or ray://host:port")
    try:
        socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise RayUnavailable(f"nothing answers at {address!r} ({exc.strerror or type(exc).__name__}): "
                             "start one with `ray start --head` or use --ray local") from exc
