"""Render a `Report` as Markdown: the same model as the HTML page, for a repository, a PR comment or a terminal.

One model, one renderer per format: a report is built once (verdict first, then its sections) and
written as HTML (`write_html`) and as Markdown (`write_markdown`) from the same data, so the two never
disagree and no module writes Markdown by hand. Text is already markdown-ish and passes through;
table cells have `|` and line breaks escaped; quoted log lines sit in a fenced block longer than any
backtick run inside them, so log text is shown, never interpreted. A figure links its image file
(`Figure.path`, relative to the report) when it has one: its data URI would make the file megabytes.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from schedmate.htmlreport.model import Block, Figure, LogQuote, Report, Section, Steps, Table, Text, Verdict
from schedmate.htmlreport.render import fmt_value

__all__ = ["render_markdown", "write_markdown"]

_TICKS = re.compile(r"`+")


def render_markdown(report: Report) -> str:
    out = [f"# {report.title}", ""]
    if report.subtitle:
        out += [report.subtitle, ""]
    out += _verdict(report.verdict)
    for section in report.sections:
        out += _section(section)
    if report.footer:
        out += ["---", "", report.footer, ""]
    return "\n".join(out).rstrip("\n") + "\n"


def write_markdown(report: Report, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_markdown(report), encoding="utf-8")
    return path


def _verdict(v: Verdict) -> list[str]:
    out = [f"**Verdict ({v.tone}):** {v.headline}", ""]
    if v.detail:
        out += [v.detail, ""]
    if v.points:
        out += [f"- {p}" for p in v.points] + [""]
    if v.metrics:
        out += _table(["figure", "value", "note"], [[m.label, m.value, m.note] for m in v.metrics])
    return out


def _section(s: Section) -> list[str]:
    out = [f"## {s.title}", ""]
    if s.intro:
        out += [s.intro, ""]
    for b in s.blocks:
        out += _block(b)
    return out


def _block(b: Block) -> list[str]:
    if isinstance(b, Text):
        return [b.markdown, ""]
    if isinstance(b, Table):
        return ([f"*{b.caption}*", ""] if b.caption else []) + _table(b.columns, b.rows, b.highlight)
    if isinstance(b, Figure):
        return _figure(b)
    if isinstance(b, Steps):
        out = [f"**{b.title}**", ""] if b.title else []
        out += [f"{i}. {item}" for i, item in enumerate(b.items, 1)] + [""]
        return out + ([b.note, ""] if b.note else [])
    if isinstance(b, LogQuote):
        return _log(b)
    raise TypeError(f"no Markdown for a {type(b).__name__} block")  # a new block kind needs its rendering here


def _cell(v: Any) -> str:
    text = v if isinstance(v, str) else fmt_value(v)
    return text.replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _table(columns: Any, rows: Any, highlight: frozenset[int] = frozenset()) -> list[str]:
    out = ["| " + " | ".join(_cell(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    for i, row in enumerate(rows):
        cells = [_cell(c) for c in row]
        if i in highlight:  # SchedMate's rows, in bold as the HTML page highlights them
            cells = [f"**{c}**" if c else c for c in cells]
        out.append("| " + " | ".join(cells) + " |")
    return out + [""]


def _figure(f: Figure) -> list[str]:
    out = [f"**{f.title}**", ""] if f.title else []
    out += [f"![{f.title or f.caption or 'figure'}]({f.path or f.src})", ""]
    return out + ([f"*{f.caption}*", ""] if f.caption else [])


def _log(q: LogQuote) -> list[str]:
    width = max((len(f"{no}") for no, _ in q.lines), default=1)
    body = [f"{'>' if no == q.mark else ' '} {no:>{width}}  {text}" for no, text in q.lines]
    longest = max((len(m) for line in body for m in _TICKS.findall(line)), default=0)
    fence = "`" * max(3, longest + 1)
    out = [q.source, ""] if q.source else []
    return out + [f"{fence}text", *body, fence, ""]
