"""See through what people and tools wrap around a log line before the rules read it.

Real failure logs reach us pasted into issue threads and collected by log shippers, so the line
that names the failure is often hidden behind a logging record prefix (`2024-01-02 10:11:12,345 -
INFO -`, `I0102 10:11:12.345678 1234 file.cc:12]`, `[E ProcessGroupNCCL.cpp:475]`, a pid or a
uuid), markdown (`> `, ```` ``` ````, `**Error**`, `` `KeyError` ``), or glued to another rank's
output (`step 10 loss 2.3[rank0]: Traceback ...`). Launcher rank/host prefixes are handled by
`logtext.strip_rank_prefix` and `rules.clean_line`; this module removes the rest and keeps the
record's level, so "printed at WARNING level" is a fact the judge weighs, not a reason to drop a
line unread.

Also here: `looks_like_instruction`, the structural guard that keeps text addressed to a model
("SYSTEM: ignore previous instructions ...") out of every classifier's view.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, overload

# Level names a record prefix may carry, mapped to one spelling.
_LEVELS = {
    "TRACE": "debug", "DEBUG": "debug", "INFO": "info", "NOTICE": "info", "WARN": "warning", "WARNING": "warning",
    "ERROR": "error", "ERR": "error", "CRITICAL": "critical", "FATAL": "critical", "SEVERE": "critical",
    "I": "info", "W": "warning", "E": "error", "F": "critical", "D": "debug",
}  # fmt: skip
WARNING_LEVELS = frozenset({"warning"})
QUIET_LEVELS = frozenset({"debug", "info", "warning"})  # records that do not say "this failed"

_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_DAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_CLOCK = r"\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?"
_SEP = r"(?:\s*(?:[-|:]\s)?\s*|$)"  # what separates prefix parts: spaces, ` - `, ` | `, `: `

# One prefix layer each; tried repeatedly at the start of the line.
_PREFIX_PARTS: tuple[str, ...] = (
    # timestamps: ISO / `2024-01-02 10:11:12,345`, `12/01/2024 10:00:01`, `[10:11:12]`, syslog
    # `Mar  4 02:11:09 host`, `dmesg -T` `[Mon Mar  4 02:11:09 2024]`, dmesg `[ 8871.412]`, epoch `1704190272.123`
    r"\[?\d{4}-\d{2}-\d{2}(?:[T ]" + _CLOCK + r"(?:Z|[+-]\d{2}:?\d{2})?)?\]?",
    r"\[?\d{1,2}/\d{1,2}/\d{2,4}[ ,]+" + _CLOCK + r"(?:\s*[AP]M)?\]?",
    r"\[" + _CLOCK + r"\]",
    r"\[(?:" + _DAY + r" )?" + _MONTH + r" +\d{1,2} " + _CLOCK + r"(?: \d{4})?\]",
    _MONTH + r" +\d{1,2} " + _CLOCK + r"(?: [A-Za-z][\w.-]*(?= \S+:))?",
    r"[A-Za-z][\w.-]+\[\d{2,}\]:",  # syslog / journald tag `python[4411]:`
    r"\[ *\d+\.\d+\]",
    r"\d{10}(?:\.\d+)?(?= )",
    # glog / c10: `I0102 10:11:12.345678 1234 file.cc:12]`, `[W socket.cpp:663]`, `[E ProcessGroupNCCL.cpp:475]`
    r"(?P<glog>[IWEF])\d{4} " + _CLOCK + r"(?: +\d+)?(?: [\w./-]+:\d+\])?",
    r"\[(?P<c10>[IWEF])(?: [\w./-]+:\d+| \d+ [\w./-]+:\d+)?\]",
    r"\[(?P<c10b>[IWEF])\d{3,4} " + _CLOCK + r"(?: +\d+)? [\w./-]+:\d+\]",
    # TensorFlow / absl after their own timestamp: `W tensorflow/core/kernels/data/iterator_ops.cc:512]`
    r"(?P<absl>[IWEF]) [\w./-]+\.\w+:\d+\]",
    # stream tags a runner puts on a child's output: `[stderr]`, `[stdout]:`, `<stderr>:`
    r"\[(?:stdout|stderr)\]:?|<(?:stdout|stderr)>:",
    # level words: `[WARNING]`, `WARNING:`, `INFO:root:`, `ERROR:torch.distributed...:`, `| INFO |`, `INFO  `
    r"\[(?P<lvlb>TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|CRITICAL|FATAL)\]:?",
    r"(?P<lvlc>TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|CRITICAL|FATAL|SEVERE):(?:[\w.<>-]+:(?=\S))?",
    r"(?P<lvlw>TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|CRITICAL|FATAL)(?= )",
    r"(?P<lvll>[Ee]rror|[Ww]arning|[Ii]nfo|[Ff]atal)(?=: )",
    # process ids and uuids: `[pid 1234]`, `pid=1234`, `(pid=1234)`, `<1234>`, `PID 1234:`, a leading uuid
    r"[\[(]?(?:pid|PID)[=: ]\d+[\])]?:?",
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    # a logger name between separators after a level (`- __main__ -`, `| trainer |`): only as the
    # part right after a level, see `strip_record_prefix`
)
_PREFIX_RE = re.compile(r"^(?:" + "|".join(f"(?:{p})" for p in _PREFIX_PARTS) + r")" + _SEP)
_LOGGER_RE = re.compile(r"^(?:[\w.<>]+(?:\[\d+\])?|\[[\w.<>-]+\])\s+[-|]\s+|^[\w.]+\.py:\d+\]?\s*[-|:]?\s+")

# Markdown around pasted logs.
_FENCE_RE = re.compile(r"^\s*(?:```|~~~)[\w+-]*\s*$")
_QUOTE_RE = re.compile(r"^\s*(?:>\s?)+")
_EMPHASIS_RE = re.compile(r"(\*\*|__)(.+?)\1")
_CODE_SPAN_RE = re.compile(r"^`+([^`].*?)`+\s*$")

# A launcher tag or traceback header glued onto the end of another line: two ranks writing at once.
# Not right after another prefix (`[rank1]:[rank0]: ...`, `[default0]:Traceback`): that is nesting.
_MIDLINE_RE = re.compile(
    r"(?<=[^\s:\]>])(?=\[(?:rank|default)\d+\]:|\[\d+,\d+\]<std(?:out|err)>:|Traceback \(most recent call last\):)"
)
_MIDLINE_BYTES_RE = re.compile(_MIDLINE_RE.pattern.encode())
_LEAD_TAG_RE = re.compile(r"^(?:\[(?:rank|default)\d+\]:|\[\d+,\d+\]<std(?:out|err)>:)")
_LEAD_TAG_BYTES_RE = re.compile(_LEAD_TAG_RE.pattern.encode())

# Text addressed to a model, not written by a program (prompt injection in untrusted log text).
_INSTRUCTION_RE = re.compile(
    r"\b(?:ignore|disregard|forget|override)\b[^.\n]{0,40}\b(?:previous|prior|above|earlier|all|your)\b[^.\n]{0,20}"
    r"\b(?:instructions?|prompts?|rules?|context)\b"
    r"|\b(?:classify|label|categori[sz]e|diagnose|report|treat)\b (?:this|it|the (?:job|failure|log|error))\b[^.\n]{0,30}\bas\b"
    r"|^\W*(?:system|assistant|user|developer)\s*(?:prompt|message)?\s*:"
    r"|\byou are (?:now|an?|the) (?:ai|assistant|model|classifier|root)\b|\bnew instructions\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class SeenLine:
    """A line with its record prefix and decoration removed; `level` as the prefix stated it."""

    text: str
    level: str | None = None
    decorated: bool = False  # markdown or a record prefix was removed


def strip_markdown(text: str) -> tuple[str, bool]:
    """Remove block quotes, code fences, emphasis and a line-wide code span."""
    if _FENCE_RE.match(text):
        return "", True
    out = _QUOTE_RE.sub("", text, count=1) if text.lstrip().startswith(">") and not text.lstrip().startswith(">>>") else text
    if "**" in out or "__" in out:
        out = _EMPHASIS_RE.sub(r"\2", out)
    if out.startswith("`"):
        m = _CODE_SPAN_RE.match(out)
        out = m.group(1) if m else out
    return out, out != text


def strip_record_prefix(text: str) -> SeenLine:
    """Remove timestamp / level / logger / pid / uuid layers at the start of `text` (at most 6)."""
    level: str | None = None
    rest = text
    for _ in range(6):
        m = _PREFIX_RE.match(rest)
        if m is None or m.end() == 0:
            break
        named = next((g for g in ("glog", "c10", "c10b", "absl", "lvlb", "lvlc", "lvlw", "lvll") if m.group(g)), None)
        rest = rest[m.end() :]
        if named is not None:
            level = _LEVELS.get(m.group(named).upper(), level)
            lm = _LOGGER_RE.match(rest)  # `- __main__ -` after the level
            if lm is not None:
                rest = rest[lm.end() :]
    return SeenLine(rest, level, rest != text)


def see_through(text: str) -> SeenLine:
    """Markdown, then record prefixes (they nest either way round once: `> 10:11:12 ERROR x`)."""
    plain, decorated = strip_markdown(text)
    seen = strip_record_prefix(plain)
    if seen.decorated:
        again, more = strip_markdown(seen.text)
        return SeenLine(again, seen.level, True)
    return SeenLine(seen.text, seen.level, decorated)


@overload
def split_interleaved(raw: str) -> list[str]: ...
@overload
def split_interleaved(raw: bytes) -> list[bytes]: ...
def split_interleaved(raw: str | bytes) -> list[Any]:
    """Split one physical line where another rank's tagged output (or a traceback header) was
    glued onto it. Most lines have no such point and come back as `[raw]`.

    A tag equal to the one the line starts with is not another rank: the launcher re-tagged one
    rank's output at a write boundary (`[1,3]<stderr>:RuntimeError[1,3]<stderr>:: NCCL ...`), so
    the tag is dropped and the text joined."""
    matches = _MIDLINE_BYTES_RE.finditer(raw) if isinstance(raw, bytes) else _MIDLINE_RE.finditer(raw)
    cuts = [m.start() for m in matches]
    if not cuts:
        return [raw]
    lead = _LEAD_TAG_BYTES_RE.match(raw) if isinstance(raw, bytes) else _LEAD_TAG_RE.match(raw)
    if lead is not None:
        tag = lead.group(0)
        same = [c for c in cuts if raw[c : c + len(tag)] == tag]
        if same:
            kept: list[Any] = []  # pieces of `raw`: all str or all bytes
            prev = 0
            for c in same:
                kept.append(raw[prev:c])
                prev = c + len(tag)
            kept.append(raw[prev:])
            joined = raw[:0].join(kept)
            return split_interleaved(joined) if has_interleaving(joined) and joined != raw else [joined]
    bounds = [0, *cuts, len(raw)]
    return [raw[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if raw[a:b].strip()]


def has_interleaving(raw: str | bytes) -> bool:
    if isinstance(raw, bytes):
        return _MIDLINE_BYTES_RE.search(raw) is not None
    return _MIDLINE_RE.search(raw) is not None


def looks_like_instruction(text: str) -> bool:
    """Text written to steer a model ("ignore previous instructions", "classify this as ...",
    "SYSTEM: ..."). No program prints this; classifiers never read it."""
    return _INSTRUCTION_RE.search(text) is not None
