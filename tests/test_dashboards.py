"""The Grafana dashboards: generated from code, committed as that code writes them, and every panel
reads metrics (and labels) that `schedmate serve` really exposes on `/metrics`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("grafanalib")
pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from schedmate.dashboards.build import DASHBOARDS, metric_names, queries, render  # noqa: E402
from schedmate.deploy.service import ServiceConfig, create_app  # noqa: E402
from schedmate.deploy.service.core import ServiceCore  # noqa: E402
from schedmate.deploy.service.metrics import ServiceMetrics, exported_names  # noqa: E402
from schedmate.telemetry import Telemetry, TelemetryConfig  # noqa: E402
from schedmate.telemetry_genai import GenAISpanProcessor  # noqa: E402

from .llm_stub import StubLLM  # noqa: E402
from .repo_files import write  # noqa: E402
from .test_service import COMMAND, NCCL, TRAIN, failed_log, megatron_lines  # noqa: E402

COMMITTED = Path(__file__).resolve().parents[1] / "dashboards" / "json"


def unknown_metrics(model: dict[str, Any], exported: set[str]) -> list[tuple[str, str]]:
    """(panel, name) for each schedmate_* name a query reads that is not exported; a query that
    reads no schedmate_* metric at all is reported as (panel, "<none>")."""
    bad = []
    for title, expr in queries(model):
        names = metric_names(expr)
        bad += [(title, n) for n in sorted(names - exported)] or ([] if names else [(title, "<none>")])
    return bad


def labels_used(expr: str) -> set[str]:
    """Label names a query filters or groups by (`{label=...}`, `by (...)`), `le` excepted."""
    unquoted = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    used = {m for sel in re.findall(r"\{([^}]*)\}", unquoted) for m in re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", sel)}
    used |= {x.strip() for grp in re.findall(r"\bby\s*\(([^)]*)\)", unquoted) for x in grp.split(",") if x.strip()}
    return used - {"le"}


@pytest.fixture(scope="module")
def scraped(classifier: Any, tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    """The families of a `/metrics` scrape after the app answered each kind of call, LLM included."""
    root = tmp_path_factory.mktemp("dash") / "jobs"
    repo = write(root / "repo", {"train.py": TRAIN})
    t0 = time.time() - 100
    log = root / "stamped.log"
    log.write_text("\n".join(megatron_lines(20, 500.0, t0=t0) + megatron_lines(20, 1000.0, start=21, t0=t0 + 50)) + "\n")
    failed_log(root / "nccl.log", NCCL)
    stub = StubLLM().start()
    metrics = ServiceMetrics()
    tel = Telemetry.build(TelemetryConfig(), span_processors=[GenAISpanProcessor(metrics.observe_llm)])
    try:
        from schedmate.llm import LLMConfig, make_chat_model

        chat = make_chat_model(LLMConfig(backend="openai", model="stub", base_url=stub.url, max_retries=0, timeout_s=10),
                               tracer=tel.tracer_provider.get_tracer("test"))
        config = ServiceConfig(allowed_roots=(root,))
        core = ServiceCore(config, classifier=classifier, chat_model=chat)
        core.load()
        with TestClient(create_app(config, core, metrics=metrics)) as c:
            c.post("/v1/advise", json={"repo": str(repo), "command": COMMAND, "gpus": 4})
            c.post("/v1/track", json={"log": str(log), "job_id": "j1", "split_at": t0 + 40})
            c.post("/v1/diagnose", json={"log": str(root / "nccl.log")})
            c.post("/v1/track", json={"log": "/etc/passwd"})
            text = c.get("/metrics").text
    finally:
        stub.stop()
        tel.shutdown()
    return list(text_string_to_metric_families(text))


def test_committed_json_is_what_the_code_generates(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "schedmate.dashboards", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    made = sorted(p.name for p in tmp_path.glob("*.json"))
    assert made == sorted(f"{name}.json" for name in DASHBOARDS) == sorted(p.name for p in COMMITTED.glob("*.json"))
    for name in made:
        assert (tmp_path / name).read_text() == (COMMITTED / name).read_text(), f"regenerate {name}"


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_every_panel_queries_metrics_the_service_exports(name: str, scraped: list[Any]) -> None:
    model = json.loads((COMMITTED / f"{name}.json").read_text())
    panels = [p for p in model["panels"] if p["type"] != "row"]
    assert len(panels) >= 8 and all(p.get("targets") for p in panels)
    assert unknown_metrics(model, exported_names(scraped)) == []


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_every_label_a_panel_uses_is_a_label_of_its_metric(name: str, scraped: list[Any]) -> None:
    labels: dict[str, set[str]] = {}
    for family in scraped:
        for sample in family.samples:
            labels.setdefault(sample.name, set()).update(sample.labels)
    checked = 0
    for title, expr in queries(render(DASHBOARDS[name]())):
        have = [labels[n] for n in metric_names(expr) if n in labels]  # metrics the exercise produced a series of
        if have:
            checked += 1
            missing = labels_used(expr) - set().union(*have)
            assert not missing, (title, expr, missing)
    assert checked >= 10


def test_a_misspelt_or_missing_metric_is_reported() -> None:
    model = {"panels": [
        {"title": "ok", "targets": [{"expr": 'sum by (route) (rate(schedmate_a_count{route="schedmate_b"}[5m]))'}]},
        {"title": "typo", "targets": [{"expr": "rate(schedmate_http_requests_total[5m])"}]},
        {"title": "row", "type": "row", "panels": [{"title": "nested", "targets": [{"expr": "up"}]}]},
    ]}
    assert unknown_metrics(model, {"schedmate_a_count"}) == [("typo", "schedmate_http_requests_total"),
                                                              ("nested", "<none>")]


def test_metric_names_skip_label_values_and_functions() -> None:
    expr = ('histogram_quantile(0.9, sum by (le, route) (rate(schedmate_x_bucket{route=~"/v1/schedmate_y"}'
            "[$__rate_interval]))) / clamp_min(schedmate_z, 1)")
    assert metric_names(expr) == {"schedmate_x_bucket", "schedmate_z"}
    assert labels_used(expr) == {"route"}
