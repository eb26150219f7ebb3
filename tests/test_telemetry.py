"""Telemetry: OTel configuration, GenAI spans and metrics, the logs bridge, and Prometheus `/metrics`.

Spans and OTel metrics are read with the SDK's in-memory exporter and reader; `/metrics` is read
from the app in process (TestClient) and scraped over HTTP from a real `schedmate serve`, whose
spans go, by `OTEL_*` variables alone, to the console exporter or to a loopback OTLP receiver.
"""

from __future__ import annotations

import gzip
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from schedmate.telemetry import Telemetry, TelemetryConfig, TelemetryConfigError
from schedmate.telemetry_genai import GenAISpanProcessor

from .llm_stub import USAGE, Reply, StubLLM
from .repo_files import write

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from schedmate.deploy.service import ServiceConfig, create_app  # noqa: E402
from schedmate.deploy.service.core import ServiceCore  # noqa: E402
from schedmate.deploy.service.metrics import ServiceMetrics  # noqa: E402

from .test_service import COMMAND, NCCL, TRAIN, failed_log, megatron_lines  # noqa: E402


@pytest.fixture
def telemetry() -> Iterator[tuple[Telemetry, InMemorySpanExporter, InMemoryMetricReader]]:
    """A process-local telemetry (never installed globally) with in-memory span and metric readers."""
    spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
    tel = Telemetry.build(TelemetryConfig(), span_processors=[SimpleSpanProcessor(spans)], metric_readers=[reader])
    yield tel, spans, reader
    tel.shutdown()


@pytest.fixture
def stub() -> Iterator[StubLLM]:
    server = StubLLM().start()
    yield server
    server.stop()


def chat_model(stub: StubLLM, tel: Telemetry) -> Any:
    from schedmate.llm import LLMConfig, make_chat_model

    return make_chat_model(LLMConfig(backend="openai", model="stub", base_url=stub.url, max_retries=0, timeout_s=10),
                           tracer=tel.tracer_provider.get_tracer("test"))


def histogram_points(reader: InMemoryMetricReader, name: str) -> list[Any]:
    data = reader.get_metrics_data()
    return [p for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics if m.name == name
            for p in m.data.data_points]


# ------------------------------------------------------------------------------ configuration


def test_the_flag_sets_every_signal_and_overrides_the_otel_variables() -> None:
    env = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "console"}
    assert TelemetryConfig.resolve("console", env) == TelemetryConfig(("console",), ("console",), ("console",))
    assert TelemetryConfig.resolve("none", env) == TelemetryConfig()


def test_otel_variables_choose_each_signal_and_unset_means_none() -> None:
    cfg = TelemetryConfig.resolve(None, {"OTEL_TRACES_EXPORTER": "otlp,console", "OTEL_LOGS_EXPORTER": "none"})
    assert cfg.traces == ("otlp", "console") and cfg.metrics == () and cfg.logs == ()
    assert TelemetryConfig.resolve(None, {"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}).traces == ()


@pytest.mark.parametrize(("flag", "env"), [("jaeger", {}), (None, {"OTEL_METRICS_EXPORTER": "prometheus"})])
def test_an_unknown_exporter_is_one_clear_error(flag: str | None, env: dict[str, str]) -> None:
    with pytest.raises(TelemetryConfigError, match="unknown exporter .* expected one of otlp, console, none"):
        TelemetryConfig.resolve(flag, env)


# ------------------------------------------------------------------------------ GenAI spans and metrics


def test_a_chat_call_is_a_genai_span_and_feeds_the_genai_client_metrics(telemetry: Any, stub: StubLLM) -> None:
    tel, spans, reader = telemetry
    chat_model(stub, tel).invoke("hello")
    (span,) = [s for s in spans.get_finished_spans() if s.name == "chat stub"]
    a = span.attributes
    assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.request.model"] == "stub"
    assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (USAGE["prompt_tokens"],
                                                                               USAGE["completion_tokens"])
    (duration,) = histogram_points(reader, "gen_ai.client.operation.duration")
    assert duration.count == 1 and duration.attributes["gen_ai.request.model"] == "stub"
    tokens = {p.attributes["gen_ai.token.type"]: p.sum for p in histogram_points(reader, "gen_ai.client.token.usage")}
    assert tokens == {"input": USAGE["prompt_tokens"], "output": USAGE["completion_tokens"]}


def test_a_failed_chat_call_is_an_error_span_and_an_error_duration(telemetry: Any, stub: StubLLM) -> None:
    tel, spans, reader = telemetry
    stub.push(Reply(status=500, error="boom"))
    with pytest.raises(Exception):  # noqa: B017,PT011 -- the client's own error type
        chat_model(stub, tel).invoke("hello")
    (span,) = [s for s in spans.get_finished_spans() if s.name == "chat stub"]
    assert span.status.status_code.name == "ERROR" and span.attributes["error.type"]
    (duration,) = histogram_points(reader, "gen_ai.client.operation.duration")
    assert duration.attributes["error.type"] == span.attributes["error.type"]


def test_advisor_agent_tool_and_chat_calls_nest_under_invoke_agent(telemetry: Any, stub: StubLLM,
                                                                    tmp_path: Path) -> None:
    from schedmate.agents.advisor.agent import AgentConfig, MetadataExtractor

    tel, spans, _ = telemetry
    repo = write(tmp_path / "repo", {"train.py": TRAIN})
    stub.push(Reply(args='{"path": "."}'))  # the stub names the request's first tool: file_tree
    MetadataExtractor(chat_model(stub, tel), AgentConfig(tool_choice="auto", timeout_s=20),
                      tracer=tel.tracer_provider.get_tracer("test")).extract(repo, COMMAND)
    done = spans.get_finished_spans()
    (agent,) = [s for s in done if s.name == "invoke_agent metadata_extractor"]
    assert agent.attributes["gen_ai.agent.name"] == "metadata_extractor"
    (tool,) = [s for s in done if s.name.startswith("execute_tool")]
    assert tool.name == "execute_tool file_tree" and tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.name"] == "file_tree" and tool.attributes["gen_ai.tool.call.id"] == "call_1"
    chats = [s for s in done if s.name == "chat stub"]
    assert len(chats) == 2  # the tool call, then the stub's plain-text answer ends the run
    for child in (tool, *chats):
        assert child.parent is not None and child.parent.span_id == agent.context.span_id
        assert child.context.trace_id == agent.context.trace_id


def test_the_logs_bridge_carries_the_active_span_ids(telemetry: Any) -> None:
    tel, _, _ = telemetry
    exported = InMemoryLogRecordExporter()
    tel.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(exported))
    logger = logging.getLogger("schedmate.test_telemetry")
    handler = tel.log_handler()
    logger.addHandler(handler)
    try:
        with tel.tracer_provider.get_tracer("test").start_as_current_span("step") as span:
            logger.warning("slow step on node %s", "n7")
    finally:
        logger.removeHandler(handler)
    (record,) = exported.get_finished_logs()
    assert record.log_record.body == "slow step on node n7"
    assert record.log_record.trace_id == span.get_span_context().trace_id
    assert record.log_record.span_id == span.get_span_context().span_id


# ------------------------------------------------------------------------------ Prometheus, in process


def scrape(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {(s.name, frozenset(s.labels.items())): s.value for f in text_string_to_metric_families(text)
            for s in f.samples}


def value(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


@pytest.fixture
def jobs(tmp_path: Path) -> dict[str, Any]:
    root = tmp_path / "jobs"
    repo = write(root / "repo", {"train.py": TRAIN})
    t0 = time.time() - 100
    stamped = root / "stamped.log"  # step time doubles at t0 + 40
    stamped.write_text("\n".join(megatron_lines(20, 500.0, t0=t0) + megatron_lines(20, 1000.0, start=21, t0=t0 + 50))
                       + "\n")
    failed = root / "nccl.log"
    failed_log(failed, NCCL)
    return {"root": root, "repo": repo, "stamped": stamped, "failed": failed, "t0": t0}


def test_metrics_record_latency_errors_failures_advice_step_times_and_llm_tokens(
        classifier: Any, jobs: dict[str, Any], stub: StubLLM, telemetry: Any) -> None:
    tel, spans, _ = telemetry
    metrics = ServiceMetrics(max_job_series=2)
    tel.tracer_provider.add_span_processor(GenAISpanProcessor(metrics.observe_llm))
    config = ServiceConfig(allowed_roots=(jobs["root"],))
    core = ServiceCore(config, classifier=classifier, chat_model=chat_model(stub, tel))
    core.load()
    t0 = jobs["t0"]
    with TestClient(create_app(config, core, metrics=metrics, tracer_provider=tel.tracer_provider)) as c:
        assert c.post("/v1/advise", json={"repo": str(jobs["repo"]), "command": COMMAND, "gpus": 4}).status_code == 200
        for job in ("j1", "j2", "j3"):  # three jobs, at most two step-time series
            got = c.post("/v1/track", json={"log": str(jobs["stamped"]), "job_id": job, "split_at": t0 + 40}).json()
        assert got["ratio"] == pytest.approx(0.5, rel=0.02)
        diag = c.post("/v1/diagnose", json={"log": str(jobs["failed"]), "job_id": "j9"}).json()
        assert c.post("/v1/track", json={"log": "/etc/passwd"}).status_code == 403
        text = c.get("/metrics").text
    s = scrape(text)
    assert value(s, "schedmate_http_request_duration_seconds_count", route="/v1/track", status="200") == 3
    assert value(s, "schedmate_http_request_duration_seconds_count", route="/v1/track", status="403") == 1
    assert value(s, "schedmate_errors_total", operation="track", kind="path_refused") == 1
    assert value(s, "schedmate_failures_total", category=diag["category"], component=diag["component"]) == 1
    assert value(s, "schedmate_diagnoses_total", status="failure_found") == 1
    assert value(s, "schedmate_advisor_requests_total") == 1 and value(s, "schedmate_advisor_matches_total") == 0
    assert value(s, "schedmate_fallback_answers_total", operation="advise") == 1  # no job store: no estimate
    steps = {dict(k[1])["job"]: v for k, v in s.items() if k[0] == "schedmate_job_step_seconds"}
    assert set(steps) == {"j2", "j3"} and steps["j3"] == pytest.approx(1.0, rel=0.02)  # the oldest was dropped
    assert value(s, "schedmate_job_slowdown_ratio_count") == 3
    assert value(s, "schedmate_job_slowdown_ratio_bucket", le="1.5") == 0  # 2x slower, every time
    assert value(s, "schedmate_work_queue_slots") == config.max_inflight
    assert value(s, "schedmate_work_queue_completed_total") == 6
    calls = value(s, "schedmate_llm_request_duration_seconds_count", operation="chat", model="stub", outcome="ok")
    assert calls >= 1  # the advisor agent asked the (stub) model
    assert value(s, "schedmate_llm_tokens_total", operation="chat", direction="input") == calls * USAGE["prompt_tokens"]
    assert value(s, "schedmate_llm_tokens_total", operation="chat", direction="output") == calls * USAGE[
        "completion_tokens"]
    (advise,) = [sp for sp in spans.get_finished_spans() if sp.name == "POST /v1/advise"]  # FastAPI's server span
    chats = [sp for sp in spans.get_finished_spans() if sp.name == "chat stub"]
    assert len(chats) == calls and all(sp.context.trace_id == advise.context.trace_id for sp in chats)


def test_advisor_error_is_scored_when_an_advised_job_ends() -> None:
    from schedmate.deploy.service.models import (
        AdviseRequest,
        AdviseResponse,
        EstimateOut,
        JobAck,
        JobEndRequest,
    )

    m = ServiceMetrics()
    m.observe("advise", AdviseRequest(repo="/r", command="c", job_id="a1"),
              AdviseResponse(estimate=EstimateOut(duration_s=200.0, n_matches=2)))
    m.observe("end", JobEndRequest(job_id="a1", duration_s=100.0), JobAck(job_id="a1", stored=True))
    m.observe("end", JobEndRequest(job_id="a1", duration_s=100.0), JobAck(job_id="a1", stored=True))  # scored once
    s = {(x.name, frozenset(x.labels.items())): x.value for f in m.registry.collect() for x in f.samples}
    assert value(s, "schedmate_advisor_duration_error_ratio_count") == 1
    assert value(s, "schedmate_advisor_duration_error_ratio_sum") == pytest.approx(2.0)  # estimated twice as long
    assert value(s, "schedmate_advisor_duration_error_ratio_bucket", le="1.5") == 0
    assert value(s, "schedmate_advisor_duration_error_ratio_bucket", le="2.0") == 1
    assert value(s, "schedmate_advisor_estimates_total") == 1


def test_metrics_follow_the_v1_token(classifier: Any, jobs: dict[str, Any]) -> None:
    config = ServiceConfig(allowed_roots=(jobs["root"],), token="s3cret")
    with TestClient(create_app(config, ServiceCore(config, classifier=classifier), load_models=False)) as c:
        assert c.get("/metrics").status_code == 401
        got = c.get("/metrics", headers={"Authorization": "Bearer s3cret"})
    assert got.status_code == 200 and got.headers["content-type"].startswith("text/plain")
    assert "schedmate_work_queue_busy 0.0" in got.text


def test_each_app_has_its_own_registry(classifier: Any, jobs: dict[str, Any]) -> None:
    config = ServiceConfig(allowed_roots=(jobs["root"],))
    a = create_app(config, ServiceCore(config, classifier=classifier), load_models=False)
    b = create_app(config, ServiceCore(config, classifier=classifier), load_models=False)
    with TestClient(a) as ca, TestClient(b) as cb:
        ca.get("/health")
        ca.get("/health")
        assert value(scrape(ca.get("/metrics").text), "schedmate_http_request_duration_seconds_count",
                     route="/health", status="200") == 2
        assert value(scrape(cb.get("/metrics").text), "schedmate_http_request_duration_seconds_count",
                     route="/health", status="200") == 0


# ------------------------------------------------------------------------------ the real server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class OTLPReceiver:
    """A loopback OTLP/HTTP receiver: keeps the span names of every protobuf trace export."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        self.spans: list[Any] = []
        self.paths: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                receiver.paths.append(self.path)
                if self.path == "/v1/traces":
                    req = ExportTraceServiceRequest.FromString(body)
                    receiver.spans += [s for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans]
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def serve(tmp_path: Path, env: dict[str, str], *args: str) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "schedmate.cli", "serve", "--port", str(port), "--no-redis",
                             "--allow", str(tmp_path), *args], env={**os.environ, **env}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while time.time() < deadline and proc.poll() is None:
        try:
            httpx.get(f"{base}/health", timeout=2)
            return proc, base
        except httpx.TransportError:
            time.sleep(0.3)
    proc.kill()
    raise AssertionError(f"server did not come up: {proc.communicate()[0][-2000:]}")


def stop(proc: subprocess.Popen[str]) -> str:
    proc.terminate()
    return proc.communicate(timeout=30)[0]


def test_serve_exposes_metrics_over_http_and_sends_spans_to_an_otlp_collector(tmp_path: Path) -> None:
    receiver = OTLPReceiver()
    log = tmp_path / "train.log"
    log.write_text("\n".join(megatron_lines(30)) + "\n")
    env = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "otlp", "OTEL_LOGS_EXPORTER": "otlp",
           "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "100",
           "OTEL_METRIC_EXPORT_INTERVAL": "600000", "OTEL_SERVICE_NAME": "schedmate-test"}
    proc, base = serve(tmp_path, env)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not httpx.get(f"{base}/ready", timeout=10).json()["ready"]:
            time.sleep(0.5)
        track = httpx.post(f"{base}/v1/track", json={"log": str(log), "job_id": "j1"}, timeout=60)
        assert track.status_code == 200 and track.json()["signal"] is True
        assert httpx.post(f"{base}/v1/track", json={"log": 7}, timeout=10).status_code == 422
        scraped = httpx.get(f"{base}/metrics", timeout=10)
        deadline = time.time() + 20
        while time.time() < deadline and not any(s.name == "POST /v1/track" for s in receiver.spans):
            time.sleep(0.2)
        assert "/v1/metrics" not in receiver.paths  # the export interval is 10 minutes ...
    finally:
        output = stop(proc)
        receiver.close()
    assert proc.returncode == -signal.SIGTERM, output[-2000:]
    assert "/v1/metrics" in receiver.paths  # ... so this is the final export, flushed on SIGTERM
    assert "/v1/logs" in receiver.paths  # FastAPI's record of the 422, through the logs pipeline
    assert scraped.status_code == 200, output[-2000:]
    s = scrape(scraped.text)
    assert value(s, "schedmate_http_request_duration_seconds_count", route="/v1/track", status="200") == 1
    assert value(s, "schedmate_job_step_seconds", job="j1") == pytest.approx(0.501, abs=0.002)
    assert value(s, "schedmate_tracker_results_total", signal="true") == 1
    assert "/v1/traces" in receiver.paths, output[-2000:]
    traces = {sp.trace_id for sp in receiver.spans if sp.name == "POST /v1/track"}
    assert len(traces) == 2  # the tracked log and the 422
    observe = [sp for sp in receiver.spans if sp.name == "metric_tracker.observe"]
    assert len(observe) == 1 and observe[0].trace_id in traces  # the tracker's span is in its request's trace


def test_otel_variables_alone_send_spans_to_the_console(tmp_path: Path) -> None:
    proc, base = serve(tmp_path, {"OTEL_TRACES_EXPORTER": "console"})
    try:
        assert httpx.get(f"{base}/health", timeout=10).status_code == 200
    finally:
        output = stop(proc)
    assert '"name": "GET /health"' in output and '"http.response.status_code": 200' in output


def test_serve_refuses_an_unknown_exporter_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "schedmate.cli", "serve", "--no-redis", "--otel", "zipkin"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.strip().splitlines()[-1].startswith("error: --otel: unknown exporter")
