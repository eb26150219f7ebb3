"""The SchedMate service (API v1) in process: real models, real Redis, FastAPI's TestClient.

Covers the answers (advise / track / diagnose / jobs / failures), auth on and off, the allowed
roots, the body limit, 429 under a full queue, 504 past the per-call timeout, and degradation:
Redis stopped mid-run (a real redis-server) gives scheduler-default answers or 503, never a 500,
and no job record is lost when it comes back.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from schedmate.embeddings import redis_server

from .repo_files import write

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from schedmate.deploy.service import ServiceConfig, create_app  # noqa: E402
from schedmate.deploy.service.config import ServiceConfigError  # noqa: E402
from schedmate.deploy.service.core import ServiceCore  # noqa: E402

TRAIN = '''"""Train a ResNet-50 image classifier on ImageNet."""
import argparse

import torch


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--arch", type=str, default="resnet50")
    p.add_argument("--data-dir", type=str, default="/datasets/imagenet")
    p.add_argument("-b", "--batch-size", type=int, default=256)
    p.add_argument("--epochs", type=int, default=90)
    return p.parse_args()


if __name__ == "__main__":
    args = get_args()
'''
COMMAND = "torchrun --nproc_per_node=4 train.py --arch resnet50 -b 64 --epochs 30"


def megatron_lines(n: int, ms: float = 500.0, start: int = 1, t0: float | None = None) -> list[str]:
    """Megatron-style progress lines; with `t0`, each line stamped one second after the last."""
    out = []
    for i in range(start, start + n):
        stamp = "" if t0 is None else time.strftime("[%Y-%m-%d %H:%M:%S] ", time.localtime(t0 + i - start))
        out.append(f"{stamp}iteration {i:>8}/    1000 | consumed samples: {i * 64} | elapsed time per iteration "
                   f"(ms): {ms + i % 3:.1f} | learning rate: 1.0E-04 | lm loss: {3.0 - i * 0.01:.4E} |")
    return out


OOM = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.35 GiB total capacity)"
NCCL = ("RuntimeError: NCCL communicator was aborted on rank 3. Original reason for failure was: "
        "NCCL error: remote process exited or there was a network error, NET/IB : Got completion with error 12")


def failed_log(path: Path, root_line: str, progress: int = 10) -> int:
    """A log whose failure's root-cause line is `root_line`; returns its 1-based line number."""
    lines = megatron_lines(progress) + ["Traceback (most recent call last):", '  File "train.py", line 30, in <module>',
                                        "    main()", root_line]
    path.write_text("\n".join(lines) + "\n")
    return len(lines)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "jobs"
    repo = write(root / "repo", {"train.py": TRAIN})
    log = root / "train.log"
    log.write_text("\n".join(megatron_lines(40)) + "\n")
    failed = root / "failed.log"
    failed_log(failed, OOM)
    return {"root": root, "repo": repo, "log": log, "failed": failed}


@pytest.fixture
def make_client(classifier: Any, files: dict[str, Path]) -> Iterator[Any]:
    """Build a TestClient over a loaded core (the session's MiniLM classifier) for a config."""
    made: list[Any] = []

    def build(**settings: Any) -> TestClient:
        config = ServiceConfig(**{"allowed_roots": (files["root"],), **settings})
        core = ServiceCore(config, classifier=classifier)
        core.load()
        client = TestClient(create_app(config, core))
        client.__enter__()
        made.append(client)
        return client

    yield build
    for client in made:
        client.__exit__(None, None, None)


def advise_body(files: dict[str, Path], **kw: Any) -> dict[str, Any]:
    return {"repo": str(files["repo"]), "command": COMMAND, "gpus": 4, **kw}


# ------------------------------------------------------------------------------- answers


def test_advise_falls_back_without_history_then_estimates_from_finished_jobs(make_client: Any, files: dict[str, Path],
                                                                            redis_url: str) -> None:
    c = make_client(redis_url=redis_url)
    first = c.post("/v1/advise", json=advise_body(files)).json()
    assert first["metadata"]["model_name"] == "resnet-50" and first["metadata"]["iterations"] == 30
    assert first["estimate"] is None and first["fallback"] == "scheduler-default" and "similar" in first["reason"]
    for job_id, duration in (("a1", 100.0), ("a2", 300.0)):
        ack = c.post("/v1/jobs/register", json={"job_id": job_id, "repo": str(files["repo"]), "command": COMMAND,
                                                "gpus": 4}).json()
        assert ack["stored"] is True
        ack = c.post("/v1/jobs/end", json={"job_id": job_id, "duration_s": duration, "sm_util": 40.0}).json()
        assert ack["stored"] is True
    assert ack["records"] == 2
    other = write(files["root"] / "bert", {"train.py": TRAIN.replace("ResNet-50 image classifier on ImageNet",
                                                                     "BERT-large on Wikipedia")})
    c.post("/v1/jobs/register", json={"job_id": "b1", "repo": str(other), "command": "python train.py --arch bert-large "
                                      "--data-dir /datasets/wikipedia --epochs 3", "gpus": 64})
    c.post("/v1/jobs/end", json={"job_id": "b1", "duration_s": 9999.0})
    got = c.post("/v1/advise", json=advise_body(files)).json()
    assert got["fallback"] is None
    assert sorted(m["job_id"] for m in got["matches"]) == ["a1", "a2"]
    est = got["estimate"]
    assert est["duration_s"] == pytest.approx(200.0) and est["duration_top3_s"] == pytest.approx(200.0)
    assert est["duration_p50_s"] <= est["duration_p90_s"] and est["sm_util"] == pytest.approx(40.0)


def test_ending_an_unregistered_job_is_a_404(make_client: Any, redis_url: str) -> None:
    r = make_client(redis_url=redis_url).post("/v1/jobs/end", json={"job_id": "ghost", "duration_s": 1.0})
    assert r.status_code == 404 and "never registered" in r.json()["reason"]


def test_track_reports_step_time_loss_and_their_lines(make_client: Any, files: dict[str, Path]) -> None:
    got = make_client().post("/v1/track", json={"log": str(files["log"])}).json()
    assert got["signal"] is True and got["fallback"] is None
    assert got["step_time"]["unit"] == "s" and got["step_time"]["value"] == pytest.approx(0.501, abs=0.002)
    assert got["loss"]["last"] == pytest.approx(2.6) and got["step_time"]["lines"][0] == 40


def test_track_compares_throughput_before_and_after_a_time(make_client: Any, files: dict[str, Path]) -> None:
    t0 = time.time() - 100
    log = files["root"] / "stamped.log"
    log.write_text("\n".join(megatron_lines(20, 500.0, t0=t0) + megatron_lines(20, 1000.0, start=21, t0=t0 + 50)) + "\n")
    got = make_client().post("/v1/track", json={"log": str(log), "job_id": "j1", "split_at": t0 + 40}).json()
    assert got["ratio"] == pytest.approx(0.5, rel=0.02) and got["unit"] == "steps/s"


def test_track_without_progress_lines_is_the_scheduler_default(make_client: Any, files: dict[str, Path]) -> None:
    quiet = files["root"] / "quiet.log"
    quiet.write_text("loading data\nbuilding model\n")
    got = make_client().post("/v1/track", json={"log": str(quiet)}).json()
    assert got["signal"] is False and got["fallback"] == "scheduler-default" and got["reason"]


def test_diagnose_quotes_the_root_cause_line_and_its_number(make_client: Any, files: dict[str, Path]) -> None:
    line = failed_log(files["root"] / "nccl.log", NCCL)
    got = make_client().post("/v1/diagnose", json={"log": str(files["root"] / "nccl.log"), "job_id": "j7"}).json()
    assert got["status"] == "failure_found" and got["line"] == line and "NCCL" in got["root_cause"]
    assert got["category"] in ("infrastructure", "framework", "script") and got["plan"]["job_id"] == "j7"
    oom = make_client().post("/v1/diagnose", json={"log": str(files["failed"])}).json()
    assert oom["reason_code"] == "OutOfMemoryError" and oom["line"] == 14
    # what decided the category (logs.md §2.1b): a CUDA OOM on the device is the owner's batch
    assert oom["category"] == "script" and oom["category_evidence"]["rule"] == "cuda-oom-on-device"
    assert oom["category_evidence"]["line"] and oom["confidence"] is not None and oom["abstained"] is False


def test_failure_reports_become_searchable_history(make_client: Any, files: dict[str, Path], redis_url: str) -> None:
    c = make_client(redis_url=redis_url)
    assert c.post("/v1/failures/report", json={"job_id": "f1", "log": str(files["failed"])}).json()["stored"] is True
    got = c.post("/v1/failures/similar", json={"line": OOM.replace("2.00", "7.50").replace("GPU 0", "GPU 3")}).json()
    assert [s["job_id"] for s in got["similar"]] == ["f1"] and got["similar"][0]["reason"] == "OutOfMemoryError"
    assert c.post("/v1/failures/similar", json={"line": "x", "log": str(files["failed"])}).status_code == 422


# ------------------------------------------------------------------------------- boundaries


def test_paths_outside_the_allowed_roots_are_refused(make_client: Any, files: dict[str, Path], tmp_path: Path) -> None:
    c = make_client()
    outside = tmp_path / "outside.log"
    outside.write_text("\n".join(megatron_lines(5)) + "\n")
    (files["root"] / "link.log").symlink_to(outside)
    for path in (str(outside), str(files["root"] / "link.log"), str(files["root"] / ".." / "outside.log"), "train.log"):
        r = c.post("/v1/track", json={"log": path})
        assert r.status_code == 403, path
        assert r.json()["fallback"] == "scheduler-default" and "Traceback" not in r.text
    assert c.post("/v1/track", json={"log": str(files["root"] / "none.log")}).status_code == 404
    assert c.post("/v1/diagnose", json={"log": str(files["root"])}).status_code == 400
    assert c.post("/v1/advise", json=advise_body(files, repo=str(files["log"]))).status_code == 400


def test_token_auth_when_set_and_open_loopback_when_not(make_client: Any, files: dict[str, Path]) -> None:
    body = {"log": str(files["log"])}
    secured = make_client(token="s3cret")
    assert secured.post("/v1/track", json=body).status_code == 401
    assert secured.post("/v1/track", json=body, headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert secured.post("/v1/track", json=body, headers={"Authorization": "Bearer s3cret"}).status_code == 200
    assert secured.get("/health").status_code == 200
    assert make_client().post("/v1/track", json=body).status_code == 200
    with pytest.raises(ServiceConfigError, match="token"):
        ServiceConfig(host="0.0.0.0")
    assert ServiceConfig(host="0.0.0.0", token="t").token == "t"


def test_request_bodies_above_the_limit_are_413(make_client: Any, files: dict[str, Path]) -> None:
    c = make_client(max_body_bytes=2048)
    r = c.post("/v1/advise", json=advise_body(files, command="python train.py " + "x" * 4000))
    assert r.status_code == 413 and r.json()["fallback"] == "scheduler-default"
    assert c.post("/v1/advise", json=advise_body(files)).status_code == 200


def test_full_work_queue_answers_429_and_recovers(make_client: Any, files: dict[str, Path]) -> None:
    c = make_client(max_inflight=1)
    core = c.app.state.core
    body = {"log": str(files["log"])}
    got: dict[str, int] = {}
    with core._lock:  # the models are busy: the one admitted call waits inside its slot
        first = threading.Thread(target=lambda: got.update(first=c.post("/v1/track", json=body).status_code))
        first.start()
        deadline = time.time() + 10
        while c.app.state.queue.busy < 1 and time.time() < deadline:
            time.sleep(0.01)
        r = c.post("/v1/track", json=body)
        assert r.status_code == 429 and r.headers["Retry-After"] == "1"
        assert r.json() == {"fallback": "scheduler-default", "reason": "all 1 work slots are busy", "retry_after_s": 1.0}
    first.join(10)
    assert got["first"] == 200
    assert c.post("/v1/track", json=body).status_code == 200


def test_call_past_its_timeout_is_504_and_frees_its_slot_when_done(make_client: Any, files: dict[str, Path]) -> None:
    c = make_client(call_timeout_s=0.3, max_inflight=2)
    queue = c.app.state.queue
    with c.app.state.core._lock:
        r = c.post("/v1/diagnose", json={"log": str(files["failed"])})
        assert r.status_code == 504 and r.json()["fallback"] == "scheduler-default"
        assert queue.busy == 1  # the thread still waits for the models: its slot stays taken
    deadline = time.time() + 10
    while queue.busy and time.time() < deadline:
        time.sleep(0.01)
    assert queue.busy == 0 and queue.timed_out == 1


def test_models_not_loaded_yet_is_503_and_health_stays_200(files: dict[str, Path]) -> None:
    config = ServiceConfig(allowed_roots=(files["root"],))
    with TestClient(create_app(config, ServiceCore(config), load_models=False)) as c:
        assert c.get("/health").json() == {"status": "ok"}
        ready = c.get("/ready")
        assert ready.status_code == 503 and ready.json()["models"] == "loading"
        r = c.post("/v1/track", json={"log": str(files["log"])})
        assert r.status_code == 503 and r.json()["fallback"] == "scheduler-default" and "models" in r.json()["reason"]
        assert "/v1/advise" in c.get("/openapi.json").json()["paths"]


def test_internal_error_is_a_500_with_the_default_signal_and_no_traceback(make_client: Any, files: dict[str, Path],
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    c = make_client()

    def broken(_req: Any) -> None:
        raise KeyError("bug")

    monkeypatch.setattr(c.app.state.core, "track", broken)  # the route looks the method up per call
    r = c.post("/v1/track", json={"log": str(files["log"])})
    assert r.status_code == 500 and r.json()["fallback"] == "scheduler-default"
    assert r.json()["reason"].startswith("internal error (KeyError)") and "Traceback" not in r.text


# ------------------------------------------------------------------------------- Redis down


def test_redis_down_degrades_every_answer_and_loses_no_record(make_client: Any, files: dict[str, Path],
                                                              tmp_path: Path) -> None:
    from .conftest import require_redis_server

    require_redis_server()
    data = tmp_path / "redis"
    info = redis_server.start(data)
    try:
        c = make_client(redis_url=info.url)
        reg = {"repo": str(files["repo"]), "command": COMMAND, "gpus": 4}
        for i in range(3):
            c.post("/v1/jobs/register", json={"job_id": f"r{i}", **reg})
            assert c.post("/v1/jobs/end", json={"job_id": f"r{i}", "duration_s": 100.0 + i}).json()["records"] == i + 1
        assert c.post("/v1/advise", json=advise_body(files)).json()["estimate"] is not None
        redis_server.stop(data)

        advice = c.post("/v1/advise", json=advise_body(files))
        assert advice.status_code == 200
        assert advice.json()["estimate"] is None and advice.json()["fallback"] == "scheduler-default"
        assert "unavailable" in advice.json()["reason"] and advice.json()["metadata"]["model_name"] == "resnet-50"
        diag = c.post("/v1/diagnose", json={"log": str(files["failed"])})
        assert diag.status_code == 200 and diag.json()["reason_code"] == "OutOfMemoryError"
        assert c.post("/v1/track", json={"log": str(files["log"])}).json()["signal"] is True
        down = c.post("/v1/jobs/register", json={"job_id": "r9", **reg})
        assert down.status_code == 503 and down.json()["fallback"] == "scheduler-default"
        assert down.headers["Retry-After"] == "5" and "redis unavailable" in down.json()["reason"]
        assert c.post("/v1/failures/similar", json={"line": OOM}).status_code == 503
        ready = c.get("/ready")
        assert ready.status_code == 503 and ready.json()["redis"].startswith("down")

        redis_server.start(data, info.port)
        assert c.get("/ready").status_code == 200
        ack = c.post("/v1/jobs/register", json={"job_id": "r9", **reg}).json()
        assert ack["stored"] is True and ack["records"] == 4  # the three before the outage survived it
        assert c.post("/v1/advise", json=advise_body(files)).json()["estimate"]["n_matches"] == 3
    finally:
        redis_server.stop(data)


# ------------------------------------------------------------------------------- LLM down


def test_llm_down_leaves_static_and_regex_answers_with_the_reason(classifier: Any, files: dict[str, Path]) -> None:
    from schedmate.llm import LLMConfig, make_chat_model

    from .test_service_uvicorn import free_port

    dead = LLMConfig(backend="openai", base_url=f"http://127.0.0.1:{free_port()}/v1", model="m", timeout_s=2.0,
                     max_retries=0)
    config = ServiceConfig(allowed_roots=(files["root"],))
    core = ServiceCore(config, classifier=classifier, chat_model=make_chat_model(dead))
    core.load()
    odd = files["root"] / "odd.log"
    custom = "Trn | stp#000099 | obj 2.000 | wall 0.500 sec"  # a format no regex knows: the LLM is asked
    odd.write_text("\n".join(megatron_lines(20) + [custom]) + "\n")
    with TestClient(create_app(config, core)) as c:
        advice = c.post("/v1/advise", json=advise_body(files))
        assert advice.status_code == 200 and advice.json()["llm_status"] not in ("ok", "disabled")
        assert advice.json()["metadata"]["model_name"] == "resnet-50" and any("LLM" in d for d in advice.json()["degraded"])
        track = c.post("/v1/track", json={"log": str(odd)})
        assert track.status_code == 200 and track.json()["llm_status"] == "unavailable"
        assert any("LLM" in d for d in track.json()["degraded"])
        assert track.json()["signal"] is True and track.json()["step_time"]["value"] == pytest.approx(0.501, abs=0.002)
        assert c.post("/v1/diagnose", json={"log": str(files["failed"])}).json()["reason_code"] == "OutOfMemoryError"
