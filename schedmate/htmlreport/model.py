"""What a report holds. Plain frozen dataclasses: builders compute, the template only lays out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

Tone = Literal["good", "bad", "neutral", "warn"]


@dataclass(frozen=True)
class Metric:
    """One headline figure shown as a card ("mean JCT −12%", "infra F1 0.94")."""

    label: str
    value: str
    note: str = ""
    tone: Tone = "neutral"


@dataclass(frozen=True)
class Verdict:
    """The answer a reader came for, shown first: a one-line headline, how sure, key figures."""

    headline: str
    tone: Tone = "neutral"
    detail: str = ""  # markdown-ish: how sure, on what evidence
    metrics: Sequence[Metric] = ()
    points: Sequence[str] = ()  # markdown-ish bullet points under the headline


@dataclass(frozen=True)
class Text:
    kind: ClassVar[str] = "text"
    markdown: str


@dataclass(frozen=True)
class Table:
    """A table; cells are values or markdown-ish strings. Numbers are right-aligned.
    `highlight` marks rows (e.g. SchedMate's arms); `tones` colours single cells by (row, col)."""

    kind: ClassVar[str] = "table"
    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]
    caption: str = ""
    highlight: frozenset[int] = frozenset()
    tones: dict[tuple[int, int], Tone] = field(default_factory=dict)


@dataclass(frozen=True)
class Figure:
    """A plot as a data URI (see `figure_data_uri`), never a link to a file beside the report."""

    kind: ClassVar[str] = "figure"
    src: str
    title: str = ""
    caption: str = ""
    wide: bool = False
    path: str = ""  # the image file relative to the report, when there is one (Markdown links it)


@dataclass(frozen=True)
class Steps:
    """An ordered plan a person can follow (e.g. a dry-run recovery plan), each step markdown-ish."""

    kind: ClassVar[str] = "steps"
    items: Sequence[str]
    title: str = ""
    note: str = ""


@dataclass(frozen=True)
class LogQuote:
    """Log lines quoted with their numbers; `mark` is the line the finding points at."""

    kind: ClassVar[str] = "log"
    lines: Sequence[tuple[int, str]]
    source: str = ""
    mark: int | None = None


Block = Text | Table | Figure | Steps | LogQuote


@dataclass(frozen=True)
class Section:
    title: str
    blocks: Sequence[Block] = ()
    intro: str = ""  # markdown-ish
    grid: bool = False  # lay figures out two per row


@dataclass(frozen=True)
class Report:
    title: str
    verdict: Verdict
    sections: Sequence[Section] = ()
    subtitle: str = ""
    footer: str = ""  # markdown-ish: how to regenerate
