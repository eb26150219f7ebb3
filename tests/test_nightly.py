"""`schedmate eval nightly`: report, history and trends, regression exit codes, monitoring pushes.

Runs use --quick and, where the behaviour under test does not need every suite, a subset of
suites, so each test stays short on a 2-core machine."""

from __future__ import annotations

import json
import re
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from schedmate.cli import app
from schedmate.evals.nightly.guards import MetricGuard, Thresholds, compare, load_thresholds
from schedmate.synthetic.logs.generator import generate_corpus

runner = CliRunner()
FAST = "failures,tracker"
pytestmark = pytest.mark.usefixtures("minilm_loaded_once")  # each run takes the loaded MiniLM, not the disk's


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("nightly-corpus")
    generate_corpus(d, 16, 0, min_lines=100, max_lines=1200, failed_fraction=0.6)
    return d


def nightly(*args: str) -> Any:
    return runner.invoke(app, ["eval", "nightly", "--quick", *args])


@pytest.fixture(scope="module")
def first_fast_run(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An out folder after one passing run of the FAST suites (history of one run); the tests that
    run again on top of it work on their own copy."""
    out = tmp_path_factory.mktemp("nightly-first") / "out"
    res = nightly("--data", str(corpus), "--out", str(out), "--suites", FAST)
    assert res.exit_code == 0, res.output
    return out


def continued(first: Path, tmp_path: Path) -> Path:
    """A private copy of `first_fast_run`'s out folder, to run again into."""
    out = tmp_path / "out"
    shutil.copytree(first, out)
    return out


def img_count(html: str) -> int:
    return len(re.findall(r'<img src="data:image/png;base64,', html))


def test_quick_run_of_every_suite_writes_a_self_contained_report(nightly_quick_run: Path) -> None:
    """`eval nightly --quick --data <16 generated logs> --out <new folder>` (tests/conftest.py; its
    page is also opened in a browser by tests/test_report_html.py)."""
    res = json.loads((nightly_quick_run / "result.json").read_text())
    assert res["exit_code"] == 0, res["output"]
    out = nightly_quick_run / "out"
    html = (out / "report.html").read_text()
    # verdict first, then guards and each suite with its plots
    assert html.index('id="verdict"') < html.index("Guards") < html.index("Failure Handler (")
    assert "confusion matrix" not in html  # plot titles live inside the images, not as text
    for suite in ("Failure Handler", "Metric Tracker", "Scheduling Advisor", "Line classifier on Loghub alerts"):
        assert suite in html
    # confusion matrix + latency (failures), CDF + latency (tracker), CDF (advisor), confusion (loghub, when present)
    assert img_count(html) >= 5
    assert "http://" not in html and "https://" not in html and "<script" not in html
    rec = json.loads((out / "nightly.json").read_text())
    assert rec["passed"] and rec["systems"]["failures"] == "locator+learned"
    assert rec["metrics"]["tracker.success_rate"] is not None and rec["metrics"]["advisor.duration_within_100"] is not None
    assert len((out / "history.jsonl").read_text().splitlines()) == 1


def test_second_run_compares_with_history_and_plots_trends(corpus: Path, first_fast_run: Path, tmp_path: Path) -> None:
    out = continued(first_fast_run, tmp_path)
    first = (out / "report.html").read_text()
    assert "Trends appear from the second run" in first
    res = nightly("--data", str(corpus), "--out", str(out), "--suites", FAST)
    assert res.exit_code == 0, res.output
    runs = [json.loads(x) for x in (out / "history.jsonl").read_text().splitlines()]
    assert len(runs) == 2 and runs[0]["profile"] == runs[1]["profile"]
    html = (out / "report.html").read_text()
    assert "Trends over the last 2 runs" in html and "against 1 earlier run" in html
    assert img_count(html) > img_count(first)  # the trend plots


def test_degraded_system_is_flagged_as_a_regression(corpus: Path, first_fast_run: Path, tmp_path: Path) -> None:
    out = continued(first_fast_run, tmp_path)
    res = nightly("--data", str(corpus), "--out", str(out), "--suites", FAST, "--degrade")
    assert res.exit_code == 1, res.output
    rec = json.loads((out / "nightly.json").read_text())
    assert rec["systems"]["failures"] == "majority" and not rec["passed"]
    assert any(r.startswith("failures.category_macro_f1") for r in rec["regressions"])
    assert "regression(s)" in (out / "report.html").read_text()
    # the degraded run is kept in history but never becomes the reference for the next run
    res = nightly("--data", str(corpus), "--out", str(out), "--suites", FAST)
    assert res.exit_code == 0, res.output


def test_a_threshold_the_system_cannot_meet_fails_the_run(corpus: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "strict.yaml"
    cfg.write_text("metrics:\n  tracker.success_rate: {better: higher, floor: 1.01}\n")
    res = nightly("--data", str(corpus), "--out", str(tmp_path / "out"), "--suites", "tracker", "--config", str(cfg))
    assert res.exit_code == 1, res.output
    assert "tracker.success_rate (floor)" in res.output


def test_bad_thresholds_file_is_one_line_error(corpus: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("metrics:\n  tracker.success_rate: {better: sideways}\n")
    res = nightly("--data", str(corpus), "--out", str(tmp_path / "out"), "--config", str(cfg))
    assert res.exit_code == 2 and "tracker.success_rate" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "out" / "history.jsonl").exists()


def test_guards_are_relative_to_history_and_the_in_run_baseline() -> None:
    cfg = Thresholds(metrics={"s.f1": MetricGuard(better="higher", max_drop=0.05, beat_baseline=True),
                              "s.lat": MetricGuard(better="lower", max_ratio=2.0)})
    past = [{"metrics": {"s.f1": v, "s.lat": 1.0}} for v in (0.80, 0.90, 0.85)]
    ok = compare({"s.f1": 0.81, "s.lat": 1.9}, {"s.f1": 0.5}, past, cfg)
    assert ok.passed and ok.history_runs == 3
    bad = compare({"s.f1": 0.79, "s.lat": 2.1}, {"s.f1": 0.8}, past, cfg)
    assert {(c.metric, c.kind) for c in bad.regressions} == {("s.f1", "history"), ("s.f1", "baseline"), ("s.lat", "history")}
    assert compare({"s.f1": None}, {}, past, cfg).passed  # not measurable is not a regression
    near_zero = Thresholds(metrics={"s.err": MetricGuard(better="lower", max_ratio=1.5, max_drop=0.02)})
    assert compare({"s.err": 0.01}, {}, [{"metrics": {"s.err": 0.0}}], near_zero).passed  # no hair trigger at 0
    assert not compare({"s.err": 0.05}, {}, [{"metrics": {"s.err": 0.0}}], near_zero).passed
    assert load_thresholds(None).metrics  # the shipped default parses


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def _record(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen.append({"method": self.command, "path": self.path, "body": body})
            self.send_response(200)
            self.end_headers()

        do_PUT = do_POST = _record

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def test_headline_figures_reach_a_pushgateway(corpus: Path, tmp_path: Path, recorder: tuple[str, list[dict[str, Any]]]) -> None:
    url, seen = recorder
    res = nightly("--data", str(corpus), "--out", str(tmp_path / "out"), "--suites", "tracker", "--pushgateway", url)
    assert res.exit_code == 0, res.output
    assert len(seen) == 1 and seen[0]["method"] == "PUT"
    assert seen[0]["path"].startswith("/metrics/job/schedmate_nightly/profile/quick-")
    body = seen[0]["body"].decode()
    assert re.search(r'schedmate_nightly_metric\{metric="success_rate",suite="tracker",system="tracker"\} [0-9.]+', body)
    assert "schedmate_nightly_passed 1.0" in body


def test_headline_figures_go_out_over_otlp(corpus: Path, tmp_path: Path, recorder: tuple[str, list[dict[str, Any]]]) -> None:
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

    url, seen = recorder
    res = nightly("--data", str(corpus), "--out", str(tmp_path / "out"), "--suites", "tracker", "--otlp",
                  "--otlp-endpoint", url)
    assert res.exit_code == 0, res.output
    posts = [s for s in seen if s["path"] == "/v1/metrics"]
    assert posts, seen
    req = ExportMetricsServiceRequest.FromString(posts[0]["body"])
    names = {m.name for rm in req.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
    assert "schedmate.nightly.metric" in names


def test_unreachable_pushgateway_warns_but_keeps_the_report(corpus: Path, tmp_path: Path) -> None:
    res = nightly("--data", str(corpus), "--out", str(tmp_path / "out"), "--suites", "tracker",
                  "--pushgateway", "http://127.0.0.1:9")
    assert res.exit_code == 0 and "pushgateway" in res.output
    assert (tmp_path / "out" / "report.html").is_file()


def test_a_missing_corpus_is_generated(tmp_path: Path) -> None:
    data = tmp_path / "new-corpus"
    res = nightly("--data", str(data), "--out", str(tmp_path / "out"), "--suites", "tracker")
    assert res.exit_code == 0, res.output
    assert (data / "labels.jsonl").is_file() and len(list((data / "logs").iterdir())) == 20


def test_logs_without_labels_are_refused(tmp_path: Path) -> None:
    (tmp_path / "d" / "logs").mkdir(parents=True)
    res = nightly("--data", str(tmp_path / "d"), "--out", str(tmp_path / "out"))
    assert res.exit_code == 2 and "labels.jsonl" in res.output
