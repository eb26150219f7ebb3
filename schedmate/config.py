"""Where things live: shared reference data, the user's data directory, repository paths.

Nothing here reads global mutable state; each function resolves from the environment when called.
"""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_data_dir

REPO_ROOT = Path(__file__).resolve().parent.parent


def shared_data_dir() -> Path | None:
    """The read-only reference data folder (`../shared/data`), or None when it is absent.

    `SCHEDMATE_SHARED_DATA` overrides the default location beside the repository.
    """
    env = os.environ.get("SCHEDMATE_SHARED_DATA")
    candidates = [Path(env)] if env else [REPO_ROOT.parent / "shared" / "data"]
    for path in candidates:
        if path.is_dir():
            return path
    return None


def data_dir() -> Path:
    """The user's SchedMate data directory (Redis data, caches, reports). Created on demand."""
    path = Path(os.environ.get("SCHEDMATE_HOME") or user_data_dir("schedmate"))
    path.mkdir(parents=True, exist_ok=True)
    return path
