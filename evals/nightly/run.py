"""`schedmate eval nightly`: run the suites, judge against history and thresholds, report, export."""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from schedmate.errors import BadInput
from schedmate.evals.nightly.guards import Check, Verdict, compare, load_thresholds
from schedmate.evals.nightly.history import append_run, comparable, read_history
from schedmate.evals.nightly.suites import (
    SuiteResult,
    run_advisor_suite,
    run_failures_suite,
    run_loghub_suite,
    run_tracker_suite,
)

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DEVSET = REPO / "evals" / "devset"
SUITES = ("failures", "tracker", "advisor", "loghub")


@dataclass(frozen=True)
class NightlyConfig:
    data: Path
    out: Path
    config: Path | None = None  # thresholds YAML (default: evals/nightly/thresholds.yaml)
    history: Path | None = None  # default: <out>/history.jsonl
    quick: bool = False  # small generated corpora, failed logs only, ~200 Loghub lines per set, no dev sets: a test in < 60 s
    degrade: bool = False  # swap each system under test for its weak stand-in (must be flagged)
    devset: Path | None = None  # labelled logs in the dev-set format (failures/, progress/); default: the real one
    use_devset: bool = True
    loghub: Path | None = None  # default: <shared data>/loghub
    suites: tuple[str, ...] = SUITES
    limit: int | None = None
    corpus_logs: int | None = None  # logs to generate when --data holds none (default 20 quick, 80 full)
    pushgateway: str | None = None
    otlp: bool = False
    otlp_endpoint: str | None = None


@dataclass
class NightlyRun:
    record: dict[str, Any]
    results: list[SuiteResult]
    verdict: Verdict
    history: list[dict[str, Any]] = field(default_factory=list)  # same-profile runs incl. this one
    report: Path | None = None
    export_errors: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.record["passed"])


def _git_commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              timeout=5).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def ensure_log_corpus(data: Path, n: int, max_lines: int, say: Callable[[str], None], failed_fraction: float = 0.6) -> bool:
    """Generate a labelled log corpus into `data` when it holds none; True when one was written."""
    if data.exists() and not data.is_dir():
        raise BadInput(f"--data {data} is a file, not a corpus folder")
    if (data / "labels.jsonl").is_file():
        return False
    if (data / "logs").exists():
        raise BadInput(f"{data} has logs/ but no labels.jsonl; labelled logs need a labels file "
                         "(see evals/devset/README.md for the format of your own logs)")
    from schedmate.synthetic.logs.generator import generate_corpus

    say(f"generating a labelled corpus of {n} logs into {data}")
    generate_corpus(data, n, 0, min_lines=100, max_lines=max_lines, failed_fraction=failed_fraction)
    return True


def _profile(cfg: NightlyConfig, devset: Path | None) -> str:
    h = hashlib.sha1()
    labels = cfg.data / "labels.jsonl"
    h.update(labels.read_bytes() if labels.is_file() else b"")
    h.update(repr((cfg.quick, str(devset), cfg.limit, sorted(cfg.suites))).encode())
    return ("quick-" if cfg.quick else "full-") + h.hexdigest()[:10]


def run_nightly(cfg: NightlyConfig, say: Callable[[str], None] = lambda _m: None) -> NightlyRun:
    """Run everything; never raises for a failing suite (that is a regression), only for bad input."""
    from schedmate.config import shared_data_dir

    thresholds = load_thresholds(cfg.config)  # a bad config fails before minutes of work
    if not cfg.suites:
        raise BadInput(f"no suite selected; choose from {', '.join(SUITES)}")
    unknown = set(cfg.suites) - set(SUITES)
    if unknown:
        raise BadInput(f"unknown suite(s) {sorted(unknown)}; choose from {', '.join(SUITES)}")
    cfg.out.mkdir(parents=True, exist_ok=True)
    history_path = cfg.history or cfg.out / "history.jsonl"
    started = datetime.now(UTC)
    t0 = time.perf_counter()
    generated = ensure_log_corpus(cfg.data, cfg.corpus_logs or (20 if cfg.quick else 80), 1500 if cfg.quick else 20_000, say)
    devset = (cfg.devset or (None if cfg.quick else DEFAULT_DEVSET)) if cfg.use_devset else None
    if devset is not None and not devset.is_dir():
        raise BadInput(f"--devset {devset} is not a folder")
    shared = shared_data_dir()
    loghub = cfg.loghub or (shared / "loghub" if shared else None)

    runners: dict[str, Callable[[], SuiteResult]] = {
        "failures": lambda: run_failures_suite(cfg.data, limit=cfg.limit, degrade=cfg.degrade, say=say,
                                               devset=devset / "failures" if devset else None,
                                               include_clean=not cfg.quick),  # clean logs: false alarms only
        "tracker": lambda: run_tracker_suite(cfg.data, limit=cfg.limit, degrade=cfg.degrade, say=say,
                                             devset=devset / "progress" if devset else None),
        "advisor": lambda: run_advisor_suite(cfg.data, cfg.out / "advisor", quick=cfg.quick, degrade=cfg.degrade, say=say),
        "loghub": lambda: run_loghub_suite(loghub, lines=200 if cfg.quick else None, degrade=cfg.degrade, say=say),
    }
    results: list[SuiteResult] = []
    for name in SUITES:
        if name not in cfg.suites:
            continue
        try:
            results.append(runners[name]())
        except Exception as exc:  # noqa: BLE001 -- a crashed suite is a failed night, reported, not a traceback
            say(f"{name} suite failed: {type(exc).__name__}: {exc}")
            results.append(SuiteResult(name, name, "", "", error=f"{type(exc).__name__}: {exc}",
                                       note=traceback.format_exc(limit=4)))
    metrics = {f"{r.name}.{k}": v for r in results for k, v in r.metrics.items()}
    baselines = {f"{r.name}.{k}": v for r in results for k, v in r.baseline.items()}
    profile = _profile(cfg, devset)
    past = read_history(history_path)
    verdict = compare(metrics, baselines, comparable(past, profile), thresholds)
    for r in results:
        if r.error:
            verdict.checks.append(Check(f"{r.name}.suite", None, "ran", None, False, f"suite failed: {r.error}"))
    record = {
        "run_id": started.strftime("%Y%m%dT%H%M%S") + "-" + profile[-6:], "started": started.isoformat(timespec="seconds"),
        "ended_unix": time.time(), "seconds": round(time.perf_counter() - t0, 1), "commit": _git_commit(),
        "profile": profile, "quick": cfg.quick, "degrade": cfg.degrade, "data": str(cfg.data),
        "generated_corpus": generated, "devset": str(devset) if devset else None,
        "systems": {r.name: r.system for r in results}, "items": {r.name: r.items for r in results},
        "metrics": metrics, "baselines": baselines, "passed": verdict.passed,
        "regressions": [f"{c.metric} ({c.kind}): {c.why}" for c in verdict.regressions],
    }
    append_run(history_path, record)
    run = NightlyRun(record, results, verdict, [r for r in read_history(history_path) if r.get("profile") == profile])
    if cfg.pushgateway:
        from schedmate.evals.nightly.export import push_prometheus

        try:
            push_prometheus(cfg.pushgateway, record)
        except Exception as exc:  # noqa: BLE001 -- monitoring down must not hide the report
            run.export_errors.append(f"pushgateway {cfg.pushgateway}: {type(exc).__name__}: {exc}")
    if cfg.otlp:
        from schedmate.evals.nightly.export import push_otlp

        try:
            push_otlp(record, cfg.otlp_endpoint)
        except Exception as exc:  # noqa: BLE001
            run.export_errors.append(f"OTLP: {type(exc).__name__}: {exc}")
    from schedmate.evals.nightly.report import write_nightly_report

    (cfg.out / "nightly.json").write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")
    run.report = write_nightly_report(run, cfg.out / "report.html", command=_command(cfg))
    return run


def _command(cfg: NightlyConfig) -> str:
    parts = ["schedmate eval nightly", f"--data {cfg.data}", f"--out {cfg.out}"]
    if cfg.quick:
        parts.append("--quick")
    if cfg.degrade:
        parts.append("--degrade")
    if cfg.config:
        parts.append(f"--config {cfg.config}")
    return " ".join(parts)
