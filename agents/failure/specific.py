"""The most specific statement of a failure: the errno line, not the generic wrapper that repeats it.

A failure often reaches the log twice: once where it happened, with the operating system's words
(`The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use)`), and
again in the exception that ends the run, which wraps it in a generic sentence (`RuntimeError: The
server socket has failed to listen on any local network address.`), sometimes with the specific
part appended. The root-cause line the locator finds is the wrapper; what the owner needs to read
is the errno. `most_specific` picks it:

- within the root line: the sentence that carries an error code, when the line holds several;
- else a line of the cascade just before the root line (or inside its block) that carries an error
  code the root line lacks and the same failure signature as the root line (so a benign `errno: 97
  - Address family not supported` warning about IPv6, or another failure's errno, is never taken).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from schedmate.agents.failure.rules import RulesClassifier, clean_line

__all__ = ["ERROR_CODE", "most_specific"]

# an error code the OS or a library printed: `errno: 98`, `[Errno 2]`, `code: -98, name: EADDRINUSE`,
# `(os error 2)`, `EADDRINUSE`
ERROR_CODE = re.compile(r"\berrno:?\s*-?\d+\b|\[Errno \d+\]|\bcode: -?\d+, name: E[A-Z]+\b|\(os error \d+\)"
                        r"|\bE(?:ADDRINUSE|ADDRNOTAVAIL|CONNREFUSED|CONNRESET|NOENT|ACCES|PERM|NOSPC|NOMEM|TIMEDOUT|HOSTUNREACH)\b")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_LOOKBACK = 10
_RULES = RulesClassifier()


def most_specific(lines: Sequence[str | bytes], root: int, block: int | None = None,
                  rules: RulesClassifier | None = None) -> tuple[int, str] | None:
    """(index in `lines`, text) of the most specific statement of the failure whose root-cause line
    is `lines[root]` (its block starting at `block`), or None when the root line is already it."""
    if not 0 <= root < len(lines):
        return None
    rules = rules or _RULES
    text = clean_line(lines[root]).text.strip()
    if ERROR_CODE.search(text):
        sentences = [s for s in _SENTENCE.split(text) if s.strip()]
        if len(sentences) > 1:
            first = next(s for s in sentences if ERROR_CODE.search(s))
            return (root, first.strip()) if first != sentences[0] else None
        return None
    named = rules.match(text)
    if named is None:
        return None
    start = max(0, min(root, block if block is not None else root) - _LOOKBACK)
    for j in range(root - 1, start - 1, -1):  # the nearest first
        cand = clean_line(lines[j])
        t = cand.text.strip()
        if cand.binary or not ERROR_CODE.search(t):
            continue
        rule = rules.match(t)
        if rule is not None and rule.reason is named.reason:  # the same failure, told with its error code
            return j, t
    return None
