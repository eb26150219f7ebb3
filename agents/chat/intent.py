"""Which tools a question needs, read with keyword rules (the embedded 270M model cannot route).

Only the user's question is read here, never log text. A question that matches nothing is read
as "why did it fail?" when there is a log, so the first answer is always the diagnosis.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Intent", "read_intent"]

_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("diagnose", re.compile(r"\b(why|fail\w*|cause|root|error|crash\w*|wrong|happen\w*|broke\w*|diagnos\w*|died|"
                            r"category|classif\w*)\b", re.I)),
    ("window", re.compile(r"\b(lines?|around|context|show|quote|before it|after it|surrounding)\b", re.I)),
    ("similar", re.compile(r"\b(similar|seen|before|past|previous|history|other jobs?|resolved|last time|again)\b",
                           re.I)),
    ("plan", re.compile(r"\b(fix|recover\w*|what (do|should|can) (i|we)|next|action|plan|resubmit\w*|cordon\w*|"
                        r"retry|restart)\b", re.I)),
    ("metrics", re.compile(r"\b(metrics?|step ?time|loss|throughput|speed|slow\w*|progress|iteration|tokens?/s)\b",
                           re.I)),
    ("job", re.compile(r"\b(how long|estimate\w*|duration|runtime|advis\w*|predict\w*|utili[sz]ation|history of the "
                       r"job)\b", re.I)),
)
_LINE = re.compile(r"\blines?\s*#?\s*(\d{1,9})(?:\s*(?:-|–|to)\s*(\d{1,9}))?", re.I)


@dataclass(frozen=True)
class Intent:
    """The tools to run, and a line (with a radius) the user asked to see."""

    tools: tuple[str, ...]
    line: int | None = None
    radius: int | None = None
    guessed: bool = False  # nothing matched: read as "why did it fail?"


def read_intent(question: str) -> Intent:
    """The tools `question` asks for, in a fixed order (diagnosis first)."""
    tools = [name for name, pattern in _RULES if pattern.search(question)]
    line = radius = None
    if m := _LINE.search(question):
        a, b = int(m.group(1)), int(m.group(2)) if m.group(2) else None
        if b is not None and b >= a:
            line, radius = (a + b) // 2, (b - a + 1) // 2
        elif a >= 1:
            line = a
        if "window" not in tools:
            tools.append("window")
    if "window" in tools and tools == ["diagnose", "window"] and line is None and re.search(r"\bshow\b", question, re.I):
        tools = ["window"]  # "show me the error lines" is a request to see, not to classify again
    guessed = not tools
    return Intent(tools=tuple(tools or ("diagnose",)), line=line, radius=radius, guessed=guessed)
