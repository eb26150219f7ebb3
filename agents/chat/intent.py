"""Which tools a question needs: the intent classifier's reading (`intent_model`), else keyword rules.

`route_intent` asks the classifier (MiniLM nearest-centroid over hand-written example questions)
what the question asks: why / what to change / is it the node / will a retry help / how long until
it fails again / lines / similar / metrics / job. The keyword rules (`read_intent`) are the baseline
and the fallback when no embedder is at hand; a line number in the question (`lines 10-20`) is
parsed, not routed. Only the user's question is read here, never log text. A question the rules
match nothing in is read as "why did it fail?", so the first answer is always the diagnosis.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from schedmate.agents.chat.intent_model import INTENT_TOOLS, IntentClassifier

__all__ = ["Intent", "keyword_intent", "read_intent", "route_intent"]

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
    kind: str | None = None  # the classifier's intent (`intent_model.INTENTS`); None: keyword rules
    method: str = "keywords"  # who routed: "classifier" | "keywords"


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


def route_intent(question: str, classifier: IntentClassifier | None) -> tuple[Intent, str | None]:
    """The intent of `question` by the classifier (the line numbers it names kept), and a note when
    the keyword rules had to stand in (no classifier, or its embedder failed)."""
    rules = read_intent(question)
    if classifier is None:
        return rules, None
    try:
        routed = classifier.route(question)
    except Exception as exc:  # noqa: BLE001 -- routing is best effort; the keyword rules stand in
        return rules, f"intent classifier unavailable ({type(exc).__name__}): keyword rules routed the question"
    tools = INTENT_TOOLS[routed.intent]
    if rules.line is not None and "window" not in tools:
        tools = (*tools, "window")
    return Intent(tools=tools, line=rules.line, radius=rules.radius, kind=routed.intent, method="classifier"), None


_KEYWORD_INTENT = {"window": "lines", "plan": "fix", "similar": "similar", "metrics": "metrics", "job": "job"}


def keyword_intent(question: str) -> str:
    """The keyword rules' tools read as an intent (`intent_model.INTENTS`): the classifier's baseline."""
    tools = read_intent(question).tools
    return next((_KEYWORD_INTENT[t] for t in ("plan", "similar", "metrics", "job", "window") if t in tools), "why")
