"""Render a `Report` to one self-contained HTML file (Jinja2 template beside this module)."""

from __future__ import annotations

import base64
import io
import math
from functools import lru_cache
from numbers import Number
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markdown_it import MarkdownIt
from markupsafe import Markup

from schedmate.htmlreport.model import Report

_TEMPLATE = "report.html.j2"


@lru_cache(maxsize=1)
def _md() -> MarkdownIt:
    # commonmark without raw HTML: markup inside text (or a quoted log) is shown, never interpreted
    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def md_inline(text: Any) -> Markup:
    """Markdown-ish inline text (bold, code, links) as safe HTML; non-strings are formatted."""
    if text is None:
        return Markup("–")
    if not isinstance(text, str):
        return Markup(fmt_value(text))
    return Markup(_md().renderInline(text))


def md_block(text: str) -> Markup:
    return Markup(_md().render(text or ""))


def fmt_value(v: Any) -> str:
    """Numbers for people: 3 significant digits, thousands separators, '–' for missing."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, Number):
        x = float(v)  # type: ignore[arg-type]  # a numbers.Number that is not complex (the table holds measurements)
        return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"
    return str(v)


def is_number(v: Any) -> bool:
    if isinstance(v, Number) and not isinstance(v, bool):
        return True
    if isinstance(v, str):
        s = v.strip().replace(",", "").replace("%", "").replace("×", "").replace("−", "-").split(" ")[0]
        try:
            float(s.lstrip("+"))
            return True
        except ValueError:
            return False
    return False


def figure_data_uri(fig: Any, *, dpi: int = 110) -> str:
    """A matplotlib figure as a PNG data URI (closed afterwards, so loops do not leak memory)."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def image_data_uri(path: str | Path) -> str:
    """An image file (e.g. a plot an experiment saved) embedded as a data URI."""
    p = Path(path)
    mime = {".png": "image/png", ".svg": "image/svg+xml", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}.get(
        p.suffix.lower(), "application/octet-stream")
    return f"data:{mime};base64," + base64.b64encode(p.read_bytes()).decode("ascii")


@lru_cache(maxsize=1)
def _env() -> Environment:
    env = Environment(loader=FileSystemLoader(str(Path(__file__).parent)), autoescape=select_autoescape(["j2", "html"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["md"] = md_inline
    env.filters["mdblock"] = md_block
    env.filters["num"] = is_number
    return env


def render_html(report: Report) -> str:
    return _env().get_template(_TEMPLATE).render(r=report)


def write_html(report: Report, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(report), encoding="utf-8")
    return path
