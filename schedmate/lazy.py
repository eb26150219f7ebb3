"""Package names imported on first use (PEP 562), so importing a package loads none of its heavy parts.

Why: `schedmate history ingest` and most CLI commands import `agents.failure` or `deploy.service`
for one light name; their other submodules pull the LLM client (langchain, openai) and the web
stack, tens of MB the command never uses (issue 27's memory budget).

    _WHERE = {"FailureHandler": "handler", ...}   # public name -> submodule
    __getattr__ = lazy_exports(__name__, _WHERE)
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: a name in `where` is imported from its submodule when
    first asked for and kept in the package; any other name is an AttributeError, as usual."""

    def attribute(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return attribute
