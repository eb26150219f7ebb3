"""One wire schema per result: the Failure Handler's `Diagnosis` (agents/failure/wire.py) is what the
CLI's `--json`, the service, the daemon and the chat give for a log, the Metric Tracker's
`TrackResult` (agents/tracker/wire.py) what the CLI, the service and the chat give, the Scheduling
Advisor's `Advice` (agents/advisor/wire.py) what the service and the chat give; lines 1-based.

The CLI, the service, the daemon and the chat run the real agents (signature rules, MiniLM
classifier) on the same log here; their answers must be the same model with the same values."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from schedmate.agents.advisor.wire import Advice, Estimate, Match
from schedmate.agents.failure.wire import Diagnosis
from schedmate.agents.tracker.wire import Metric, TrackResult
from schedmate.wire import LINE_NUMBERS

SNAPSHOTS = Path(__file__).parent / "data"
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity "
       "of 79.15 GiB of which 1.02 GiB is free.")
PROGRESS = 250  # more than the daemon's 200-line tail: its line numbers must still be the log's
ROOT_LINE = PROGRESS + 4  # 1-based: the OOM line, after the traceback header and two frame lines
# what only says how or where a surface ran (timings, the daemon's file list and tail length)
RUN_FIELDS = {"seconds", "log", "llm_calls"}


def failed_log(path: Path) -> Path:
    lines = [f"INFO step {i}/5000 loss={4.0 - i * 1e-3:.3f} time: 0.250s" for i in range(PROGRESS)]
    lines += ["Traceback (most recent call last):", '  File "/workspace/train.py", line 88, in <module>',
              "    loss.backward()", OOM, "srun: error: gpu-node-07: task 3: Exited with exit code 1"]
    path.write_text("\n".join(lines) + "\n")
    return path


def _normalised(schema: Any) -> Any:
    """The schema with enum value lists left out: a new failure reason or component changes the
    taxonomy, not the wire's shape (adding a reason must not touch this test)."""
    if isinstance(schema, dict):
        return {k: "<enum>" if k == "enum" else _normalised(v) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_normalised(v) for v in schema]
    return schema


# --------------------------------------------------------------------------------- the model


def test_every_surface_uses_the_one_model_of_each_result() -> None:
    from schedmate.agents.chat.facts import DiagnosisFacts, EstimateFacts, MetricFacts, MetricsFacts
    from schedmate.deploy.daemon.model import Diagnosed
    from schedmate.deploy.service.models import (
        AdviseResponse,
        DiagnoseResponse,
        EstimateOut,
        JobAck,
        MatchOut,
        MetricOut,
        TrackResponse,
    )

    assert DiagnosisFacts is Diagnosis and MetricsFacts is TrackResult and MetricFacts is Metric is MetricOut
    assert issubclass(TrackResponse, TrackResult)
    assert issubclass(AdviseResponse, Advice) and EstimateFacts is Estimate is EstimateOut and MatchOut is Match
    assert set(TrackResponse.model_fields) - set(TrackResult.model_fields) == {"fallback", "reason", "degraded", "latency_s"}
    assert issubclass(DiagnoseResponse, Diagnosis) and issubclass(Diagnosed, Diagnosis)
    # the service adds only its envelope, the daemon only why and when it diagnosed
    assert set(DiagnoseResponse.model_fields) - set(Diagnosis.model_fields) == {"fallback", "reason", "degraded", "latency_s"}
    assert set(Diagnosed.model_fields) - set(Diagnosis.model_fields) == {"trigger", "at"}
    assert JobAck.model_fields["diagnosis"].annotation == DiagnoseResponse | None


def test_line_numbers_on_the_wire_are_1_based() -> None:
    props = Diagnosis.model_json_schema()["properties"]
    for name in ("line", "block_line"):
        assert LINE_NUMBERS in props[name]["description"]
        assert {"type": "integer", "minimum": 1} in props[name]["anyOf"]
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        Diagnosis(status="failure_found", line=0)


@pytest.mark.parametrize(("model", "snapshot"), [(Diagnosis, "wire_diagnosis_schema.json"),
                                                 (TrackResult, "wire_track_schema.json"),
                                                 (Advice, "wire_advice_schema.json")])
def test_the_json_schema_is_stable(model: type[Any], snapshot: str) -> None:
    """A change of the wire's shape is deliberate: regenerate the snapshots with
    `SCHEDMATE_UPDATE_SCHEMA=1 pytest tests/test_wire_schemas.py` and say so in the change."""
    got, path = _normalised(model.model_json_schema()), SNAPSHOTS / snapshot
    if os.environ.get("SCHEDMATE_UPDATE_SCHEMA"):
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    assert got == json.loads(path.read_text())


def test_a_diagnosis_survives_its_own_json() -> None:
    from schedmate.agents.failure.recovery import Diagnostic, RecoveryPlan, RunDiagnostic

    plan = RecoveryPlan(job_id="j1", category=None, component=None,
                        actions=(RunDiagnostic(diagnostic=Diagnostic.DCGM_DIAG, node="n1"),))
    d = Diagnosis(status="failure_found", line=7, category="infrastructure", reason_code="ECCError", plan=plan)
    assert Diagnosis.model_validate_json(d.model_dump_json()) == d
    assert d.plan_steps == ["Run `dcgm-diag` on node `n1`: DCGM GPU diagnostic (`dcgmi diag -r 3`)."]


# ------------------------------------------------------------------- the same log, three surfaces


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("wire") / "logs"
    folder.mkdir()
    return failed_log(folder / "job-42.log")


@pytest.fixture(scope="module")
def from_cli(log: Path, classifier: Any) -> dict[str, Any]:
    from schedmate import cli_jobs
    from schedmate.cli import app

    mp = pytest.MonkeyPatch()
    mp.setattr(cli_jobs, "load_embedder", lambda: classifier.embedder)
    try:
        result = CliRunner().invoke(app, ["diagnose", str(log), "--method", "rules", "--job-id", "job-42", "--json"])
    finally:
        mp.undo()
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def core(log: Path, classifier: Any) -> Any:
    from schedmate.agents.stack import AgentStackConfig
    from schedmate.deploy.service.config import ServiceConfig
    from schedmate.deploy.service.core import ServiceCore

    config = ServiceConfig(allowed_roots=(log.parent,), agents=AgentStackConfig(failure_method="rules"))
    made = ServiceCore(config, classifier=classifier)
    made.load()
    return made


def _post(core: Any, route: str, body: dict[str, Any]) -> dict[str, Any]:
    from fastapi.testclient import TestClient

    from schedmate.deploy.service.app import create_app

    with TestClient(create_app(core.config, core)) as client:
        r = client.post(route, json=body)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture(scope="module")
def from_service(core: Any, log: Path) -> dict[str, Any]:
    return _post(core, "/v1/diagnose", {"log": str(log), "job_id": "job-42"})


def test_the_cli_and_the_service_answer_the_same_diagnosis(from_cli: dict[str, Any], from_service: dict[str, Any]) -> None:
    cli, service = Diagnosis.model_validate(from_cli), Diagnosis.model_validate(from_service)
    assert cli.status == "failure_found" and cli.reason_code == "OutOfMemoryError" and cli.category == "script"
    assert cli.line == ROOT_LINE and cli.block_line == ROOT_LINE - 3 and cli.line_text == OOM
    # the similar-failure search has no store in the CLI run (disabled) and one the service cannot
    # reach (unavailable): said in each answer, the diagnosis itself is the same
    same = RUN_FIELDS | {"similar_status", "fallbacks"}
    assert cli.model_dump(exclude=same) == service.model_dump(exclude=same)
    assert from_service["reason_code"] == "OutOfMemoryError" and from_service["line"] == ROOT_LINE  # README API fields


def test_the_daemon_stores_the_same_diagnosis_with_the_logs_line_numbers(
        log: Path, from_cli: dict[str, Any], redis_url: str, classifier: Any) -> None:
    from schedmate.deploy.daemon import DaemonConfig, DaemonState, LogDaemon

    state = DaemonState.connect(redis_url)
    clock = [time.time()]
    daemon = LogDaemon(log.parent, state, config=DaemonConfig(interval_s=0.02, failure_method="rules"),
                       classifier=classifier, clock=lambda: clock[0])
    daemon.run_once()
    state.request_end("job-42", "failed")
    daemon.run_once()
    stored = state.job("job-42")
    assert stored is not None and stored.diagnosis is not None, state.jobs()
    daemon_d, cli = stored.diagnosis, Diagnosis.model_validate(from_cli)
    # the daemon reads the job's 200-line tail, yet numbers lines as the log does
    assert daemon_d.line == cli.line == ROOT_LINE and daemon_d.block_line == cli.block_line
    answer = {"status", "line_text", "root_cause", "category", "reason_code", "component", "infrastructure",
              "remediation", "plan", "action", "abstained", "confidence", "category_evidence"}
    assert daemon_d.model_dump(include=answer) == cli.model_dump(include=answer)
    assert daemon_d.total_lines < cli.total_lines  # it diagnosed the tail, not the whole file


def test_the_chat_reads_the_services_diagnosis_without_its_envelope(core: Any, log: Path,
                                                                     from_service: dict[str, Any]) -> None:
    from schedmate.deploy.service.chat_route import CoreBackend

    chat = CoreBackend(core).diagnose(log, "job-42")
    assert type(chat) is Diagnosis and chat.line == ROOT_LINE
    assert chat.model_dump(exclude=RUN_FIELDS) == Diagnosis.model_validate(from_service).model_dump(exclude=RUN_FIELDS)
    assert chat.plan_steps == [] and chat.plan_notes  # a script failure: no action, a note saying who must act


def test_the_cli_the_service_and_the_chat_read_the_same_track_result_with_the_logs_line_numbers(
        core: Any, log: Path) -> None:
    from schedmate.cli import app
    from schedmate.deploy.service.chat_route import CoreBackend

    result = CliRunner().invoke(app, ["track", str(log), "--json"])
    assert result.exit_code == 0, result.output
    cli = TrackResult.model_validate_json(result.stdout)
    service = TrackResult.model_validate(_post(core, "/v1/track", {"log": str(log)}))
    chat = CoreBackend(core).metrics(log)
    assert service.signal and service.step_time is not None and service.loss is not None
    assert chat == service == cli
    assert cli.step_time is not None and cli.steps_per_s == pytest.approx(1 / cli.step_time.value)
    assert cli.newest_line == PROGRESS  # the newest progress line, counted from 1
    text = log.read_text().splitlines()
    for metric, word in ((service.step_time, "time: 0.250s"), (service.loss, "loss=")):
        assert metric.lines and all(word in text[n - 1] for n in metric.lines)  # line n is the file's n-th line
    assert max(service.step_time.lines) == PROGRESS  # the newest progress line, counted from 1


# ----------------------------------------------------------------------- the same repo, CLI and service


def test_the_cli_and_the_service_give_the_same_advice_for_the_same_repo_and_history(
        tmp_path: Path, redis_url: str, classifier: Any) -> None:
    from schedmate import cli_jobs
    from schedmate.cli import app
    from schedmate.deploy.service.config import ServiceConfig
    from schedmate.deploy.service.core import ServiceCore
    from tests.test_cli_jobs import history_jsonl, make_repo

    mp = pytest.MonkeyPatch()
    mp.setattr(cli_jobs, "load_embedder", lambda: classifier.embedder)
    repo, command = make_repo(tmp_path / "new"), "torchrun --nproc_per_node 8 train.py --max_steps 6000"
    try:
        ingest = CliRunner().invoke(app, ["history", "ingest", str(history_jsonl(tmp_path)), "--redis-url", redis_url])
        assert ingest.exit_code == 0, ingest.output
        result = CliRunner().invoke(app, ["advise", str(repo), "--cmd", command, "--gpus", "8", "--redis-url", redis_url,
                                          "--json"])
    finally:
        mp.undo()
    assert result.exit_code == 0, result.output
    cli = Advice.model_validate_json(result.stdout)  # the wire model, nothing besides it
    assert set(json.loads(result.stdout)) == set(Advice.model_fields)
    core = ServiceCore(ServiceConfig(allowed_roots=(tmp_path,), redis_url=redis_url), classifier=classifier)
    core.load()
    answer = _post(core, "/v1/advise", {"repo": str(repo), "command": command, "gpus": 8})
    assert not answer["fallback"] and answer["estimate"] is not None, answer
    service = Advice.model_validate({k: v for k, v in answer.items() if k in Advice.model_fields})
    assert cli.estimate is not None and sorted(m.job_id for m in cli.matches) == ["j1", "j2"]
    assert cli == service


# ------------------------------------------------------------------------------ fail-slow alert


def _slowed_log(path: Path, n: int = 400, slow_from: int = 250, factor: float = 1.5) -> Path:
    lines = [f"iter {step}: loss {2.0 + 1 / step:.4f}, time {500 * (factor if step >= slow_from else 1) * (1 + 0.01 * (step % 3)):.2f}ms"
             for step in range(1, n + 1)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_fail_slow_alert_on_the_wire_numbers_its_lines_from_1(tmp_path: Path) -> None:
    from schedmate.agents.tracker.failslow import detect_lines
    from schedmate.agents.tracker.wire import FailSlowAlert, failslow_alert_of
    from schedmate.cli import app

    log = _slowed_log(tmp_path / "slow.log")
    alerts = detect_lines(log.read_text().splitlines())
    assert alerts, "a 50% job-wide slowdown must be flagged"
    wire = failslow_alert_of(alerts[0])
    assert wire.ratio == pytest.approx(1.5, abs=0.1) and wire.scope == "job" and wire.summary == alerts[0].describe()
    assert abs(wire.since_line - 250) <= 2  # line n is the file's n-th line: step n (the slowdown starts at step 250)
    # `track --follow --json` carries the same model in each update once the alert is raised
    result = CliRunner().invoke(app, ["track", str(log), "--follow", "--interval", "0.1", "--timeout", "1", "--json"])
    assert result.exit_code == 0, result.output
    last = json.loads(result.stdout.splitlines()[-1])
    assert FailSlowAlert.model_validate(last["failslow"]).since_line == wire.since_line
    assert TrackResult.model_validate(last).failslow == FailSlowAlert.model_validate(last["failslow"])
