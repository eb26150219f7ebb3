"""One small report layer for people: the main job's report and the nightly evaluation report.

A report is data (frozen dataclasses below) rendered by one Jinja2 template into a single
self-contained file: inline CSS, plots as base64 images, no scripts, no external URL, so it opens
from `file://` and can be mailed or archived as is. Order is fixed on purpose: the verdict first
(does it help, by how much, how sure), then sections of tables, plots, steps and quoted log lines.
Free text is markdown-ish and rendered with markdown-it (raw HTML off), so `**` and backticks
never reach the reader and log text cannot inject markup.

    report = Report("Nightly evaluation", Verdict("No regression", "good"), [Section("Tables", [Table(...)])])
    write_html(report, "out/report.html")
    write_markdown(report, "out/report.md")  # the same model as Markdown (`markdown.py`)
"""

from __future__ import annotations

from schedmate.htmlreport.markdown import render_markdown, write_markdown
from schedmate.htmlreport.model import (
    Block,
    Figure,
    LogQuote,
    Metric,
    Report,
    Section,
    Steps,
    Table,
    Text,
    Verdict,
)
from schedmate.htmlreport.render import figure_data_uri, image_data_uri, md_block, md_inline, render_html, write_html

__all__ = [
    "Block", "Figure", "LogQuote", "Metric", "Report", "Section", "Steps", "Table", "Text", "Verdict",
    "figure_data_uri", "image_data_uri", "md_block", "md_inline", "render_html", "render_markdown", "write_html",
    "write_markdown",
]
