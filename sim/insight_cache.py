"""Agent results keyed by content hash, in memory and (optionally) in one JSON file on disk.

Why: the agents are the expensive part of a simulation (the static extractor tens of ms, the
tracker and failure handler up to seconds, the LLM tens of seconds per call), and identical
content always gets the identical answer. So every result is stored under the hash of what the
agent read (repository files + command; log bytes) and the agent mode (static / LLM model), and a
second run with the same cache file makes no agent call at all.

File format (`insight_cache.json`, UTF-8 JSON, written atomically by `flush`):

    {"format": "schedmate.insight-cache", "version": 1,
     "tables": {"extract":  {"<repo sha256>:<mode>": {...}},
                "track":    {"<log sha256>:<mode>":  {...}},
                "diagnose": {"<log sha256>:<mode>":  {...}},
                "latency":  {"<repo sha256>:retrieval": seconds}}}

Values are plain JSON objects (see `semantic_sim` for their fields).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CACHE_FILE", "CACHE_FORMAT", "ContentCache", "TABLES"]

CACHE_FORMAT = "schedmate.insight-cache"
CACHE_FILE = "insight_cache.json"
TABLES = ("extract", "track", "diagnose", "latency")  # latency: measured retrieval seconds per artefact


@dataclass
class ContentCache:
    """Tables of JSON values keyed by content hash; `path` None keeps them in memory only."""

    path: Path | None = None
    tables: dict[str, dict[str, Any]] = field(default_factory=lambda: {t: {} for t in TABLES})
    dirty: bool = False

    @classmethod
    def open(cls, cache_dir: Path | str | None) -> ContentCache:
        """The cache in `cache_dir/insight_cache.json` (created on first flush); a missing,
        unreadable or foreign file starts an empty cache rather than failing the run."""
        if cache_dir is None:
            return cls()
        path = Path(cache_dir) / CACHE_FILE
        tables: dict[str, dict[str, Any]] = {t: {} for t in TABLES}
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("format") == CACHE_FORMAT:
                for t in TABLES:
                    tables[t].update(data.get("tables", {}).get(t, {}))
        except (OSError, ValueError, AttributeError):
            pass
        return cls(path=path, tables=tables)

    def get(self, table: str, key: str) -> Any | None:
        return self.tables[table].get(key)

    def put(self, table: str, key: str, value: Any) -> None:
        self.tables[table][key] = value
        self.dirty = True

    def __len__(self) -> int:
        return sum(len(t) for t in self.tables.values())

    def flush(self) -> None:
        """Write the file atomically (temp file + rename) if anything changed, merged with what
        other sources sharing the file wrote since it was read (entries are content-addressed,
        so a merge never conflicts)."""
        if self.path is None or not self.dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        on_disk = ContentCache.open(self.path.parent).tables
        for t in TABLES:
            for key, value in on_disk.get(t, {}).items():
                self.tables[t].setdefault(key, value)
        payload = {"format": CACHE_FORMAT, "version": 1, "tables": self.tables}
        fd, tmp = tempfile.mkstemp(prefix=".insight_cache.", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(payload, fh, sort_keys=True)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self.dirty = False
