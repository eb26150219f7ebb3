"""Which policies have a SchedMate adapter, and what the generic adapter arm needs of each.

A policy's adapter is found by name, beside the policies' own registry (`schedulers.registry`):

- bundled: the module `schedmate.adapters.<policy>` declares `ADAPTER = PolicyAdapter(...)` (no
  list to edit: adding `adapters/<name>.py` registers it);
- outside SchedMate: an entry point in the group `schedmate.adapters` (name = the policy's name,
  value = "package.module:ATTR", a `PolicyAdapter`).

A `PolicyAdapter` says how to build both arms (`baseline`: the policy as deployed without
SchedMate; `adapter`: the same policy reading an `InsightSource`) and what the policy needs of the
simulated world (`world`): the attributes its jobs must declare (Arena's and Suika's declared models,
Sia's applications, a user-stated length), the cluster it runs on and its simulator. The generic
experiment (`sim/experiments/adapter.py`, `schedmate experiment adapter --policy <name>`) replays any
registered policy with and without its adapter on the realistic world through these alone.

A `world` function reads only what a live cluster would know of a job (its id, GPU request, submit
time, the plan its code states: `planned_work`); the engine-side truth it may set is the run time
the policy's own model implies (e.g. Arena's iterations at its throughput). No adapter input is
derived from a job's outcome.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from schedmate.errors import BadInput

if TYPE_CHECKING:
    from schedmate.adapters.insights import InsightSource
    from schedmate.schedulers.cluster import ClusterSpec
    from schedmate.schedulers.engine import SimConfig, SimResult
    from schedmate.schedulers.job import JobSpec
    from schedmate.schedulers.policy import Policy

__all__ = ["ENTRY_POINT_GROUP", "PolicyAdapter", "PolicyWorld", "Simulate", "UnknownAdapter", "World", "adapter_for",
           "available", "detected", "homogeneous_world", "run_engine", "unit_draw"]

ENTRY_POINT_GROUP = "schedmate.adapters"
_PKG = "schedmate.adapters"
_NOT_ADAPTERS = frozenset({"insights", "registry", "standalone"})  # modules of this package that are no policy's adapter

Simulate = Callable[["Sequence[JobSpec]", "ClusterSpec", "Policy", "SimConfig"], "SimResult"]


def run_engine(specs: Sequence[JobSpec], cluster: ClusterSpec, policy: Policy, config: SimConfig) -> SimResult:
    """The plain event-driven engine (`schedulers.engine.Simulator`): the default simulator."""
    from schedmate.schedulers.engine import Simulator

    return Simulator(list(specs), cluster, policy, config).run()


def unit_draw(*parts: object) -> float:
    """A reproducible draw in [0, 1) from `parts` (e.g. a salt, the seed and a job id): what a
    `world` function uses to give jobs their declared attributes without an RNG's order."""
    import hashlib

    digest = hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def detected(job_id: str, seed: int, rate: float, salt: str = "") -> bool:
    """Deterministic thinning: the same job, seed and salt are detected at every rate ≥ its draw.

    Rates are nested (a job detected at d is detected at every d' > d), so a detection sweep
    changes only the jobs that cross the threshold.
    """
    if rate >= 1.0:
        return True
    if rate <= 0.0:
        return False
    return unit_draw(salt, seed, job_id) < rate


class UnknownAdapter(BadInput):
    """No adapter registered for that policy name."""


@dataclass(frozen=True)
class PolicyWorld:
    """One (policy, seed) run's setting, the same for both arms: the world's jobs with the
    attributes this policy reads, its cluster, the constructor options of both arms, the simulator."""

    jobs: list[JobSpec]
    cluster: ClusterSpec
    options: Mapping[str, Any] = field(default_factory=dict)
    simulate: Simulate = run_engine


def homogeneous_world(jobs: Sequence[JobSpec], seed: int, gpus: int) -> PolicyWorld:
    """The default: the world's jobs as they are, on `gpus` GPUs in 8-GPU nodes (requests capped)."""
    from dataclasses import replace

    from schedmate.schedulers.cluster import ClusterSpec

    per_node = 8
    nodes = max(1, gpus // per_node)
    total = nodes * per_node
    return PolicyWorld([s if s.num_gpus <= total else replace(s, num_gpus=total) for s in jobs],
                       ClusterSpec.homogeneous(nodes, per_node))


def stated_plans_world(jobs: Sequence[JobSpec], seed: int, gpus: int, *, key: str, share: float, salt: str,
                       times_gpus: bool = False) -> PolicyWorld:
    """`homogeneous_world` where a `share` of users (a `salt`-ed draw per seed and job) state what
    their job's code runs at nominal speed (`planned_run_s`, else the plan `planned_work`; no
    outcome; × its GPUs when `times_gpus`) as attribute `key`; the others state none."""
    from dataclasses import replace

    base = homogeneous_world(jobs, seed, gpus)
    out = []
    for s in base.jobs:
        attrs = {k: v for k, v in s.attributes.items() if k != key}
        plan = s.attributes.get("planned_run_s") or s.attributes.get("planned_work")
        if plan is not None and unit_draw(salt, seed, s.job_id) < share:
            attrs[key] = float(plan) * (s.num_gpus if times_gpus else 1)
        out.append(replace(s, attributes=attrs))
    return replace(base, jobs=out)


World = Callable[["Sequence[JobSpec]", int, int], PolicyWorld]  # (world jobs, seed, GPUs) -> the policy's world


@dataclass(frozen=True)
class PolicyAdapter:
    """A policy's SchedMate adapter, as the generic adapter arm runs it (module docstring).

    `world` is a function, or "package.module:function" for a world that only the simulator can
    build (Lucid's case study): the adapter then names it without importing the simulator."""

    policy: str  # the reference policy's name in `schedulers.registry`
    adapter: Callable[..., Policy]  # adapter(source, **options): the policy reading SchedMate's insights
    baseline: Callable[..., Policy] | None = None  # the policy without SchedMate (default: the registry's class)
    world: World | str = homogeneous_world
    reads: tuple[str, ...] = ("advise",)  # which `InsightSource` answers the adapter asks for (reported)
    counters: tuple[str, ...] = ()  # the world's counters (`SimResult.world_stats`) reported for both arms

    def build_world(self, jobs: Sequence[JobSpec], seed: int, gpus: int) -> PolicyWorld:
        """This policy's world from the world's jobs (`world`, imported on first use if named)."""
        fn: Any = self.world
        if isinstance(fn, str):
            module_path, _, attr = fn.partition(":")
            try:
                fn = importlib.import_module(module_path)
                for part in attr.split("."):
                    fn = getattr(fn, part)
            except (ImportError, AttributeError) as exc:
                raise UnknownAdapter(f"the world of {self.policy!r} ({self.world!r}) cannot be loaded: {exc}") from exc
        if not callable(fn):
            raise UnknownAdapter(f"the world of {self.policy!r} ({self.world!r}) is not a function")
        world = fn(jobs, seed, gpus)
        if not isinstance(world, PolicyWorld):
            raise UnknownAdapter(f"the world of {self.policy!r} ({self.world!r}) did not return a PolicyWorld")
        return world

    def build_baseline(self, **options: Any) -> Policy:
        if self.baseline is not None:
            return self.baseline(**options)
        from schedmate.schedulers.registry import policy_class

        return policy_class(self.policy)(**options)

    def build_adapter(self, source: InsightSource, **options: Any) -> Policy:
        return self.adapter(source, **options)


def _entry_points() -> dict[str, str]:
    return {ep.name.lower(): ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _declared(obj: object, where: str) -> PolicyAdapter:
    if not isinstance(obj, PolicyAdapter):
        raise UnknownAdapter(f"{where} is not a PolicyAdapter")
    return obj


def adapter_for(name: str) -> PolicyAdapter:
    """The adapter registered for policy `name` (case-insensitive): `schedmate.adapters.<name>`'s
    `ADAPTER`, else the `schedmate.adapters` entry point of that name."""
    key = name.strip().lower()
    module_name = key.replace("-", "_")
    if module_name.isidentifier() and module_name not in _NOT_ADAPTERS:
        try:
            module = importlib.import_module(f"{_PKG}.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{_PKG}.{module_name}":
                raise  # the adapter exists but one of its imports does not: a bug, not bad input
        else:
            if hasattr(module, "ADAPTER"):
                return _declared(module.ADAPTER, f"{_PKG}.{module_name}.ADAPTER")
    target = _entry_points().get(key)
    if target is None:
        raise UnknownAdapter(f"no SchedMate adapter for policy {name!r}; registered: {', '.join(available()) or 'none'}")
    module_path, _, attr = target.partition(":")
    obj: Any = importlib.import_module(module_path)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return _declared(obj, target)


def available() -> list[str]:
    """Every policy name with a registered adapter (bundled modules that declare `ADAPTER`, then
    entry points), sorted. Imports the bundled adapter modules."""
    import schedmate.adapters as package

    names = set(_entry_points())
    for info in pkgutil.iter_modules(package.__path__):
        if info.name in _NOT_ADAPTERS:
            continue
        module = importlib.import_module(f"{_PKG}.{info.name}")
        adapter = getattr(module, "ADAPTER", None)
        if isinstance(adapter, PolicyAdapter):
            names.add(adapter.policy)
    return sorted(names)
