"""Reports as a person sees them: each report opened from file:// in headless Chromium (Debian's
chromium + chromedriver via Selenium), a full-page screenshot saved under test-artifacts/, and the
visible text checked for leftover markdown markers. Log quotes are excluded from that check: they
show log text verbatim, by design."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from schedmate.htmlreport import LogQuote, Metric, Report, Section, Steps, Table, Text, Verdict, render_html

ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
needs_browser = pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="Debian chromium and chromium-driver are not installed")
needs_redis = pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM  # type: ignore[assignment]
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1300,1000"):
        opts.add_argument(a)
    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def look(driver: object, page: Path, shot: str) -> str:
    """Open the page, save a full-page screenshot, return the visible text outside log quotes."""
    d = driver  # selenium WebDriver
    d.get(page.resolve().as_uri())  # type: ignore[attr-defined]
    height = d.execute_script("return document.documentElement.scrollHeight")  # type: ignore[attr-defined]
    d.set_window_size(1300, min(int(height) + 40, 16000))  # type: ignore[attr-defined]
    ARTIFACTS.mkdir(exist_ok=True)
    assert d.save_screenshot(str(ARTIFACTS / shot))  # type: ignore[attr-defined]
    broken = d.execute_script(  # type: ignore[attr-defined]
        "return [...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).length")
    assert broken == 0, "an image did not load from the file itself"
    return d.execute_script(  # type: ignore[attr-defined]
        "document.querySelectorAll('.log').forEach(e => e.remove()); return document.body.innerText")


def assert_no_markdown_markers(text: str) -> None:
    assert "**" not in text and "`" not in text, [ln for ln in text.splitlines() if "**" in ln or "`" in ln][:5]


def test_markdown_is_rendered_and_log_text_is_inert() -> None:
    html = render_html(Report("T", Verdict("**Yes**, `x` helps", "good", metrics=[Metric("m", "1")]), [Section("S", [
        Table(["a"], [["**b**"]]), Steps(["run `ib-check`"]), Text("see `this`"),
        LogQuote([(7, "<script>alert(1)</script> **not bold**")], mark=7)])]))
    assert "<strong>Yes</strong>" in html and "<code>ib-check</code>" in html and "<code>this</code>" in html
    assert "<script>alert" not in html and "&lt;script&gt;" in html  # log text is shown, never run
    assert "**not bold**" in html  # quoted verbatim, line number kept
    assert '<span class="no">7</span>' in html


def test_a_recovery_plan_reads_as_steps() -> None:
    from schedmate.htmlreport.plans import plan_steps

    steps = plan_steps({"actions": [
        {"kind": "run_diagnostic", "diagnostic": "dcgm-diag", "node": "n1"},
        {"kind": "cordon_node", "node": "n1", "when": "diagnostic_failed"},
        {"kind": "resubmit_from_checkpoint", "job_id": "j7", "checkpoint": "s3://b/ckpt-900", "exclude_cordoned": True,
         "when": "always"},
        {"kind": "drain_rack", "rack": "r4"}]})
    assert steps[0].startswith("Run `dcgm-diag` on node `n1`")
    assert steps[1].startswith("If a diagnostic on it fails, cordon node `n1`")
    assert steps[2] == "Resubmit job `j7` from checkpoint `s3://b/ckpt-900`, avoiding cordoned nodes."
    assert steps[3] == "Drain rack: rack `r4`."  # an unknown action is still shown, never dropped
    assert plan_steps(None) == []


@pytest.fixture(scope="module")
def nightly_report(minilm_loaded_once: None, nightly_quick_run: Path) -> Path:
    """The page of the session's one quick nightly run of every suite (tests/conftest.py; the run
    and its trends are checked in tests/test_nightly.py)."""
    res = json.loads((nightly_quick_run / "result.json").read_text())
    assert res["exit_code"] == 0, res["output"]
    return nightly_quick_run / "out" / "report.html"


@needs_browser
def test_nightly_report_in_a_browser(browser: object, nightly_report: Path) -> None:
    text = look(browser, nightly_report, "nightly-report.png")
    assert text.index("VERDICT") < text.index("Guards") < text.index("Trends")
    assert "No regression" in text or "regression(s)" in text
    assert_no_markdown_markers(text)


@pytest.fixture(scope="module")
def main_report(main_job_run: Path) -> Path:
    """The report of the session's one small main-job run (tests/conftest.py; its steps are
    checked in tests/test_pipeline.py)."""
    steps = json.loads((main_job_run / "report.json").read_text())["steps"]
    assert all(step["status"] == "ok" for step in steps.values()), steps
    return main_job_run / "report.html"


@needs_redis
@needs_browser
def test_main_job_report_in_a_browser(browser: object, main_report: Path) -> None:
    html = main_report.read_text()
    assert "data:image/png;base64," in html and 'src="lucid/' not in html  # plots travel inside the file
    assert '<ol class="steps">' in html and '"kind"' not in html  # the plan as steps, not JSON
    assert 'class="ln mark"' in html  # the root-cause line, quoted with its number
    text = look(browser, main_report, "main-job-report.png")
    assert text.index("VERDICT") < text.index("Case 1") < text.index("A failed job")
    assert "95% CI" in text and "mean JCT" in text.split("Case 1")[0]  # by how much, how sure: before the tables
    assert "Run ib-check on node gpu-node-07" in text
    assert_no_markdown_markers(text)
