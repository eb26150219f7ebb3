"""Run history: one JSON line per nightly run (append-only, so a crash mid-run loses nothing)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_history(path: Path) -> list[dict[str, Any]]:
    """Earlier runs, oldest first; a damaged line is skipped (and counted), never fatal."""
    if not path.is_file():
        return []
    runs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and isinstance(row.get("metrics"), dict):
            runs.append(row)
    return runs


def append_run(path: Path, run: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(run, default=str, sort_keys=True) + "\n")


def comparable(runs: list[dict[str, Any]], profile: str) -> list[dict[str, Any]]:
    """Passing, non-degraded runs of the same profile: the reference a new run is judged against."""
    return [r for r in runs if r.get("profile") == profile and r.get("passed") and not r.get("degrade")]
