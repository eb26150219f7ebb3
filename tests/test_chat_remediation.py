"""Chat answers the question asked (issue 28): what to change, is it the node, will a retry help, how long
until it fails again, each citing lines and saying which part is the log's and which the remediation
table's; questions routed by the MiniLM intent classifier (not keyword rules); resolved past failures
and their notes shown by chat and `diagnose`.

Real components: the session's MiniLM classifier behind a `ServiceCore`, a real redis-server for
conversations and the failure history.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from typer.testing import CliRunner

from schedmate.agents.chat import ChatAgent, RedisSessionStore
from schedmate.agents.chat.intent import keyword_intent
from schedmate.agents.chat.intent_model import INTENTS, IntentClassifier, load_examples, load_heldout
from schedmate.deploy.service.chat_route import CoreBackend
from schedmate.deploy.service.config import ServiceConfig
from schedmate.deploy.service.core import InputError, ServiceCore
from schedmate.deploy.service.models import FailureReportRequest, ResolveFailureRequest

HERE = Path(__file__).resolve().parents[1]
PORT_LOG = (HERE / "evals" / "devset" / "failures" / "logs" / "d-003.log").read_text()
PROGRESS = [f"step {i} | loss {2.5 - i * 0.01:.3f} | step_time 0.41 s | 1930 tokens/s" for i in range(1, 40)]
OOM = [*PROGRESS, "Traceback (most recent call last):", '  File "train.py", line 88, in <module>', "    loss.backward()",
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 144.00 MiB (GPU 0; 31.75 GiB total capacity; "
       "30.26 GiB already allocated; 11.75 MiB free; 30.33 GiB reserved in total by PyTorch)"]
FLASH = ["loading config", "Traceback (most recent call last):", '  File "train.py", line 3, in <module>',
         "    from flash_attn import flash_attn_func", "ModuleNotFoundError: No module named 'flash_attn'"]
FIX = "what should I do to fix it?"
@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("chat-remediation")
    for name, lines in (("oom.log", OOM), ("flash.log", FLASH), ("port.log", [PORT_LOG.strip()]),
                        ("port-again.log", [PORT_LOG.strip()])):
        (root / name).write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture(scope="module")
def core(classifier: Any, redis_server: str, logs: Path) -> Iterator[ServiceCore]:
    # the session's server is shared by every file a test worker runs: start this module from empty
    redis.Redis.from_url(redis_server, protocol=2).flushall()
    c = ServiceCore(ServiceConfig(allowed_roots=(logs,), redis_url=redis_server), classifier=classifier)
    c.load()
    yield c
    c.close()


@pytest.fixture(scope="module")
def intents(classifier: Any) -> IntentClassifier:
    return IntentClassifier(classifier.embedder.embed)


def chat(core: ServiceCore, url: str, intents: IntentClassifier | None) -> ChatAgent:
    return ChatAgent(CoreBackend(core), RedisSessionStore(url), intents=intents)


# ------------------------------------------------------------------------------- routing


def test_the_intent_classifier_beats_the_keyword_rules_on_held_out_questions(intents: IntentClassifier) -> None:
    held = load_heldout()
    assert {i for i, _ in held} == set(INTENTS) and not {q for _, q in held} & {q for _, q in load_examples()}
    routed = sum(intents.route(q).intent == i for i, q in held) / len(held)
    keywords = sum(keyword_intent(q) == i for i, q in held) / len(held)
    assert routed >= 0.8 and routed > keywords + 0.2, (routed, keywords)
    assert intents.leave_one_out() >= 0.8


def test_a_question_routes_by_meaning_and_keeps_its_line_numbers(intents: IntentClassifier) -> None:
    from schedmate.agents.chat.intent import route_intent

    intent, note = route_intent("show me lines 10-20 please", intents)
    assert note is None and intent.kind == "lines" and intent.line == 15 and "window" in intent.tools
    broken = IntentClassifier(lambda texts: (_ for _ in ()).throw(RuntimeError("models still loading")))
    fallback, note = route_intent("why did it fail?", broken)
    assert fallback.method == "keywords" and note is not None and "keyword rules" in note


# ------------------------------------------------------------------------------- answers


def test_what_to_do_on_a_cuda_oom_proposes_a_smaller_batch_with_the_figure(core: ServiceCore, redis_server: str,
                                                                           intents: IntentClassifier, logs: Path) -> None:
    a = chat(core, redis_server, intents).ask("oom-fix", FIX, log=str(logs / "oom.log"))
    assert a.intent_kind == "fix" and a.intent_method == "classifier"
    assert "From the log: line 43" in a.text and "From the remediation table (shrink_batch" in a.text
    assert "144.00 MiB" in a.text and "batch" in a.text and "%" in a.text and "checkpointing" in a.text
    assert a.diagnosis is not None and a.diagnosis.remediation is not None
    assert any(c.number == 43 for c in a.citations)


def test_what_to_do_on_a_missing_flash_attn_is_installing_flash_attn(core: ServiceCore, redis_server: str,
                                                                     intents: IntentClassifier, logs: Path) -> None:
    a = chat(core, redis_server, intents).ask("flash-fix", FIX, log=str(logs / "flash.log"))
    assert "install:flash-attn" in a.text and "pip install flash-attn" in a.text and "line 5" in a.text


def test_what_to_do_on_a_port_in_use_names_the_port_and_master_port(core: ServiceCore, redis_server: str,
                                                                   intents: IntentClassifier, logs: Path) -> None:
    a = chat(core, redis_server, intents).ask("port-fix", FIX, log=str(logs / "port.log"))
    assert "29500" in a.text and "MASTER_PORT" in a.text and "change_port" in a.text
    assert "errno: 98 - Address already in use" in a.text.split("From the remediation table")[0]  # the log's part


def test_is_it_the_node_and_will_a_retry_help(core: ServiceCore, redis_server: str, intents: IntentClassifier,
                                              logs: Path) -> None:
    agent = chat(core, redis_server, intents)
    node = agent.ask("oom-node", "is the node broken?", log=str(logs / "oom.log"))
    assert node.intent_kind == "node" and node.text.startswith("No:") and "From the log: line 43" in node.text
    retry = agent.ask("oom-retry", "will a retry help?", log=str(logs / "oom.log"))
    assert retry.intent_kind == "retry" and retry.text.startswith("No:") and "shrink_batch" in retry.text
    port = agent.ask("port-retry", "would resubmitting it as is work?", log=str(logs / "port.log"))
    assert port.text.startswith("Only with another port")


def test_how_long_until_it_fails_again_reads_the_progress_lines(core: ServiceCore, redis_server: str,
                                                               intents: IntentClassifier, logs: Path) -> None:
    a = chat(core, redis_server, intents).ask("oom-when", "how long until it fails again?", log=str(logs / "oom.log"))
    assert a.intent_kind == "recurrence" and "From the log's progress lines: step time 0.41 s" in a.text, a.text
    assert "same point" in a.text, a.text


# ------------------------------------------------------------------------------- resolutions


def test_a_resolved_past_failure_and_its_note_are_shown_by_chat_and_diagnose(
        core: ServiceCore, redis_server: str, intents: IntentClassifier, logs: Path, monkeypatch: pytest.MonkeyPatch,
        classifier: Any) -> None:
    core.report_failure(FailureReportRequest(job_id="old-port", log=str(logs / "port.log")))
    with pytest.raises(InputError):
        core.resolve_failure(ResolveFailureRequest(job_id="never-recorded", note="x"))
    done = core.resolve_failure(ResolveFailureRequest(job_id="old-port", note="MASTER_PORT=29517: a stale torchrun held 29500"))
    assert done.resolution.startswith("MASTER_PORT=29517") and done.resolved_at
    a = chat(core, redis_server, intents).ask("port-again", FIX, log=str(logs / "port-again.log"))
    assert "resolved failures like it: job old-port" in a.text and "a stale torchrun held 29500" in a.text

    from schedmate import cli_jobs
    from schedmate.cli import app

    monkeypatch.setattr(cli_jobs, "load_embedder", lambda: classifier.embedder)
    runner = CliRunner()
    got = runner.invoke(app, ["history", "resolve", "old-port", "--note", "freed the port; now MASTER_PORT=29601",
                              "--redis-url", redis_server, "--json"])
    assert got.exit_code == 0, got.output
    assert json.loads(got.stdout)["resolution"] == "freed the port; now MASTER_PORT=29601"
    missing = runner.invoke(app, ["history", "resolve", "nope", "--note", "x", "--redis-url", redis_server])
    assert missing.exit_code == 2 and "no failure of job 'nope'" in missing.output
    out = runner.invoke(app, ["diagnose", str(logs / "port-again.log"), "--method", "rules", "--redis-url", redis_server,
                              "--json"])
    assert out.exit_code == 0, out.output
    d = json.loads(out.stdout)
    assert d["remediation"]["key"] == "change_port" and d["remediation"]["values"] == {"port": "29500"}
    assert [s["resolution"] for s in d["similar"] if s["job_id"] == "old-port"] == ["freed the port; now MASTER_PORT=29601"]


def test_the_resolve_route_answers_404_for_an_unknown_failure_and_records_a_known_one(
        core: ServiceCore, logs: Path) -> None:
    from fastapi.testclient import TestClient

    from schedmate.deploy.service.app import create_app

    core.report_failure(FailureReportRequest(job_id="route-port", log=str(logs / "port.log")))
    with TestClient(create_app(core.config, core)) as client:
        missing = client.post("/v1/failures/resolve", json={"job_id": "route-nope", "note": "x"})
        assert missing.status_code == 404 and "no failure of job" in missing.json()["reason"]
        empty = client.post("/v1/failures/resolve", json={"job_id": "route-port", "note": ""})
        assert empty.status_code == 422
        ok = client.post("/v1/failures/resolve", json={"job_id": "route-port", "note": "freed 29500"})
        assert ok.status_code == 200 and ok.json()["resolution"] == "freed 29500"
        d = client.post("/v1/diagnose", json={"log": str(logs / "port-again.log"), "job_id": "route-again"}).json()
        assert d["remediation"]["key"] == "change_port"
