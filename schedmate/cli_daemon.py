"""The log-following daemon (integrations/daemon/)."""

from __future__ import annotations

import typer


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add this area's commands to the `schedmate` app (top level) or to `schedmate eval`."""
