"""Lazy policy registry: names map to `"module:Class"` strings, imported on first use.

Building FIFO never imports Sia (HiGHS, measured profiles) or Lucid (the EBM). A new bundled policy
is one file plus one line in `BUILTIN`; a package outside SchedMate adds its own through the entry
point group `schedmate.policies` (name = "package.module:Class"), e.g. in its pyproject.toml:

    [project.entry-points."schedmate.policies"]
    mine = "my_pkg.policy:MyPolicy"

Built-in names win over entry points of the same name. A `+bf` suffix turns on backfilling for a
policy whose constructor takes `backfill` (read from its signature, not from a list of names).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, cast

from schedmate.errors import BadInput

if TYPE_CHECKING:
    from .policy import Policy

ENTRY_POINT_GROUP = "schedmate.policies"
_PKG = "schedmate.schedulers"

BUILTIN: dict[str, str] = {
    "fifo": f"{_PKG}.policies.fifo:FIFO",
    "sjf": f"{_PKG}.policies.sjf:SJF",
    "stated-sjf": f"{_PKG}.policies.stated_sjf:StatedSJF",
    "srtf": f"{_PKG}.policies.srtf:SRTF",
    "qssf": f"{_PKG}.policies.qssf:QSSF",
    "tiresias": f"{_PKG}.policies.tiresias:Tiresias",
    "easy": f"{_PKG}.policies.easy:EasyBackfill",
    "easy-conservative": f"{_PKG}.policies.easy:ConservativeBackfill",
    "lucid": f"{_PKG}.lucid.policy:Lucid",
    "sia": f"{_PKG}.sia.policy:Sia",
    "sia-fifo": f"{_PKG}.sia.baseline:SiaFIFO",
    "ares": f"{_PKG}.ares.policy:Ares",
    "arnold": f"{_PKG}.arnold.policy:ArnoldPolicy",
    "arena": f"{_PKG}.arena.policy:Arena",
    "suika": f"{_PKG}.suika.policy:Suika",
}
"""Bundled policies: name → "module:Class" (nothing here is imported until it is asked for)."""


class UnknownPolicy(BadInput):
    """No policy of that name, or a variant it does not have (a `ValueError`: bad user input)."""


def _entry_point_targets() -> dict[str, str]:
    return {ep.name.lower(): ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def available(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every registered name → target: entry points, then built-ins (which win), then `extra`."""
    return {**_entry_point_targets(), **BUILTIN, **(extra or {})}


def load(target: str) -> Callable[..., Policy]:
    """Import `"module:Class"` and return the class (or factory)."""
    module, sep, attr = target.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"policy target {target!r} is not 'module:Class'")
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return cast("Callable[..., Policy]", obj)  # whatever the target names: the caller's promise


def policy_class(name: str) -> Callable[..., Policy]:
    """The class registered under `name` (case-insensitive), imported now."""
    key = name.strip().lower()
    target = BUILTIN.get(key) or _entry_point_targets().get(key)
    if target is None:
        names = ", ".join(sorted(available()))
        raise UnknownPolicy(f"unknown policy {name!r}; choose from {names} (add +bf to backfill)")
    return load(target)


def supports_backfill(factory: Callable[..., Policy]) -> bool:
    """Whether the constructor (or a base class's, reached through `**kwargs`) takes `backfill`."""
    inits = [c.__dict__["__init__"] for c in factory.__mro__ if "__init__" in c.__dict__] if isinstance(factory, type) else [factory]
    for init in inits:
        try:
            params = inspect.signature(init).parameters
        except (TypeError, ValueError):
            return False
        if "backfill" in params:
            return True
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            return False
    return False


def make_policy(name: str, **options: object) -> Policy:
    """Build a policy by name; a `+bf` suffix turns on backfilling where the policy has it."""
    base, _, suffix = name.strip().lower().partition("+")
    factory = policy_class(base)
    if suffix:
        if suffix != "bf" or not supports_backfill(factory):
            raise UnknownPolicy(f"policy {base!r} has no {suffix!r} variant")
        options = {**options, "backfill": True}
    return factory(**options)
