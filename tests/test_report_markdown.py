"""One report model, two renderers: the Markdown of a `Report` says what its HTML page says, in the
same order, and quotes log text without letting it become Markdown."""

from __future__ import annotations

from pathlib import Path

from schedmate.htmlreport import (
    Figure,
    LogQuote,
    Metric,
    Report,
    Section,
    Steps,
    Table,
    Text,
    Verdict,
    render_html,
    render_markdown,
    write_markdown,
)


def _report() -> Report:
    return Report(
        "Main job", Verdict("SchedMate helps Lucid", "good", "How sure: one seed.", [Metric("mean JCT", "-12%", "CI -15% to -9%", "good")]),
        [Section("Case 1", [
            Table(["arm", "mean JCT"], [["`lucid`", 3.25], ["`lucid+sm`", "a | b\nc"]], caption="Per arm", highlight=frozenset({1})),
            Figure("data:image/png;base64,AAAA", title="JCT", path="lucid/jct.png"),
            Figure("data:image/png;base64,BBBB", title="inline only")]),
         Section("A failed job", [
             Text("SchedMate found **NetworkError**."),
             LogQuote([(1233, "NCCL WARN ```` **not bold** <b>"), (1234, "RuntimeError: NCCL error")], source="`train.log`", mark=1234),
             Steps(["Run `ib-check` on node `n1`."], title="Recovery plan", note="dry run")])],
        subtitle="The whole pipeline.", footer="Regenerate with `schedmate demo`.")


def test_markdown_follows_the_html_pages_order() -> None:
    md, html = render_markdown(_report()), render_html(_report())
    heads = ["SchedMate helps Lucid", "Case 1", "A failed job", "Regenerate with"]
    assert [md.index(h) for h in heads] == sorted(md.index(h) for h in heads)
    assert all(h in html for h in heads)
    assert md.startswith("# Main job\n") and "**Verdict (good):** SchedMate helps Lucid" in md
    assert "| mean JCT | -12% | CI -15% to -9% |" in md  # the headline figures as a table


def test_tables_escape_cells_and_keep_the_highlight() -> None:
    md = render_markdown(_report())
    assert "| `lucid` | 3.25 |" in md
    assert "| **`lucid+sm`** | **a \\| b c** |" in md  # a pipe or line break in a cell cannot break the table


def test_log_lines_are_fenced_numbered_and_marked() -> None:
    md = render_markdown(_report())
    lines = md.splitlines()
    start = lines.index("`````text")  # a fence longer than the log's own backticks
    assert lines[start + 1] == "  1233  NCCL WARN ```` **not bold** <b>"
    assert lines[start + 2] == "> 1234  RuntimeError: NCCL error"
    assert lines[start + 3] == "`````"


def test_figures_link_their_file_and_steps_are_numbered(tmp_path: Path) -> None:
    path = write_markdown(_report(), tmp_path / "out" / "report.md")
    md = path.read_text()
    assert "![JCT](lucid/jct.png)" in md and "base64,AAAA" not in md  # linked, not megabytes of base64
    assert "![inline only](data:image/png;base64,BBBB)" in md  # no file: the data URI is all there is
    assert "**Recovery plan**\n\n1. Run `ib-check` on node `n1`.\n\ndry run" in md
