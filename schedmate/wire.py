"""What every wire model (`agents/*/wire.py`: a diagnosis, a track result) shares, stated once.

A result crosses a boundary (the CLI's `--json`, the service, the daemon, Ray, the chat, the
reports) as one typed pydantic model owned by the agent that produces it. Line numbers in those
models are 1-based, the number an editor or `less -N` shows; an agent's internal 0-based indices
are converted by the agent's own `wire` module, nowhere else.
"""

from __future__ import annotations

__all__ = ["LINE_NUMBERS"]

LINE_NUMBERS = "1-based: the number an editor shows for the line"
