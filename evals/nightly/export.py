"""Headline figures out to monitoring: a Prometheus Pushgateway, or OTLP/HTTP metrics."""

from __future__ import annotations

from typing import Any

JOB = "schedmate_nightly"


def push_prometheus(url: str, run: dict[str, Any], *, timeout_s: float = 10.0) -> None:
    """One push per run: `schedmate_nightly_metric{suite,metric,system}` plus pass/regression counts."""
    from prometheus_client import CollectorRegistry, Gauge, push_to_gateway

    reg = CollectorRegistry()
    g = Gauge("schedmate_nightly_metric", "Headline figure of a nightly suite", ["suite", "metric", "system"], registry=reg)
    for key, value in run["metrics"].items():
        if value is not None:
            suite, metric = key.split(".", 1)
            g.labels(suite, metric, run["systems"].get(suite, "")).set(float(value))
    Gauge("schedmate_nightly_passed", "1 when no guard failed", registry=reg).set(1.0 if run["passed"] else 0.0)
    Gauge("schedmate_nightly_regressions", "Guards that failed", registry=reg).set(len(run["regressions"]))
    Gauge("schedmate_nightly_last_run_timestamp_seconds", "When the run ended", registry=reg).set(run["ended_unix"])
    push_to_gateway(url, job=JOB, registry=reg, grouping_key={"profile": run["profile"]}, timeout=timeout_s)


def push_otlp(run: dict[str, Any], endpoint: str | None = None) -> None:
    """The same figures as OTLP gauges (`OTEL_EXPORTER_OTLP_ENDPOINT` or `endpoint`, HTTP/protobuf)."""
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource

    exporter = OTLPMetricExporter(endpoint=endpoint.rstrip("/") + "/v1/metrics" if endpoint else None, timeout=10)
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000)
    provider = MeterProvider(metric_readers=[reader], resource=Resource.create({"service.name": JOB}))
    try:
        meter = provider.get_meter(JOB)
        gauge = meter.create_gauge("schedmate.nightly.metric", description="Headline figure of a nightly suite")
        for key, value in run["metrics"].items():
            if value is not None:
                suite, metric = key.split(".", 1)
                gauge.set(float(value), {"suite": suite, "metric": metric, "system": run["systems"].get(suite, ""),
                                         "profile": run["profile"]})
        meter.create_gauge("schedmate.nightly.passed").set(1 if run["passed"] else 0, {"profile": run["profile"]})
        provider.force_flush(timeout_millis=15_000)
    finally:
        provider.shutdown()
