"""Slurm, for real: a job without --time gets SchedMate's estimate; the epilog reports job ends;
`schedmate diagnose --job ID` diagnoses a job that failed under Slurm.

The module starts a real single-node Slurm (munged, slurmctld, slurmd; 8 GPUs as gres on dummy
device files) in a temporary folder on free ports, with `schedmate slurm config`'s job_submit.lua
and EpilogSlurmctld installed, a real redis-server, and the SchedMate service (uvicorn, real
MiniLM) on loopback. Daemons are stopped by their pid files however the module ends. The pure
parts (scontrol parsing, the time-limit rule) are tested without Slurm first.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from schedmate.deploy.slurm.hook import Service, ask_time_limit
from schedmate.deploy.slurm.slurmjob import (
    SlurmJob,
    final_status,
    gpus_requested,
    launch_command,
    parse_duration,
    parse_show_job,
)
from schedmate.deploy.slurm.timelimit import Decision, time_limit

SHOW_JOB = """JobId=5 JobName=job.sh
   UserId=root(0) GroupId=root(0) MCS_label=N/A
   JobState=COMPLETING Reason=NonZeroExitCode Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=1:0
   RunTime=01:02:03 TimeLimit=00:07:00 TimeMin=N/A
   NumNodes=2 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   Command=/data/my jobs/job.sh
   WorkDir=/data/my jobs
   Comment=tuned lr=3e-4 for run 7\x20
   AdminComment=schedmate: time limit 7 min from SchedMate
   StdErr=/data/my jobs/err-5.log
   StdIn=/dev/null
   StdOut=/data/my jobs/out-5.log
   TresPerNode=gres:gpu:2
"""


# ------------------------------------------------------------------------------- pure parts


def test_scontrol_output_is_read_with_paths_and_comments_holding_spaces_and_equals() -> None:
    job = parse_show_job(SHOW_JOB)
    assert job is not None
    assert (job.job_id, job.state, job.reason, job.exit_code, job.signal) == ("5", "COMPLETING", "NonZeroExitCode", 1, 0)
    assert job.run_time_s == 3723.0 and job.num_nodes == 2 and job.user == "root"
    assert job.work_dir == "/data/my jobs" and job.std_out == "/data/my jobs/out-5.log"
    assert job.admin_comment == "schedmate: time limit 7 min from SchedMate"
    assert gpus_requested(job.tres_per_node, job.num_nodes) == 4
    assert parse_show_job("slurm_load_jobs error: Invalid job id specified") is None


@pytest.mark.parametrize(("state", "reason", "exit_code", "signal", "expected"), [
    ("COMPLETED", None, 0, 0, "completed"),
    ("TIMEOUT", "TimeLimit", 0, 15, "failed"),
    ("CANCELLED", None, 0, 0, "cancelled"),
    ("COMPLETING", "NonZeroExitCode", 1, 0, "failed"),  # epilog before Slurm settled the state
    ("COMPLETING", "TimeLimit", 0, 0, "failed"),
    ("COMPLETING", None, 0, 9, "cancelled"),
    ("COMPLETING", None, 0, 0, "completed"),
])
def test_final_status_from_state_or_while_completing_from_reason_and_exit_code(
        state: str, reason: str | None, exit_code: int, signal: int, expected: str) -> None:
    job = SlurmJob("1", state=state, reason=reason, exit_code=exit_code, signal=signal)
    assert final_status(job) == expected


def test_gpu_counts_durations_and_launch_command() -> None:
    assert gpus_requested("gres:gpu:2") == 2 and gpus_requested("gres/gpu:a100:4", 2) == 8
    assert gpus_requested("gres:gpu") == 1 and gpus_requested("cpu=4") is None and gpus_requested("") is None
    assert gpus_requested("gres:gpu:2", 0xFFFFFFFE) == 2  # NO_VAL nodes: one node
    assert parse_duration("1-02:00:00") == 93600 and parse_duration("05:30") == 330
    assert parse_duration("UNLIMITED") is None
    script = "#!/bin/bash\n# a comment\n#SBATCH --gres=gpu:2\n\npython train.py --epochs 3\n"
    assert launch_command(script) == "#SBATCH --gres=gpu:2\npython train.py --epochs 3"
    long = "#!/bin/bash\n" + "\n".join(f"echo {i:05d}" for i in range(3000))
    cut = launch_command(long)
    assert len(cut) <= 8192 and cut.endswith(cut.splitlines()[-1]) and cut.splitlines()[-1].startswith("echo ")


def test_time_limit_is_the_margin_times_the_upper_bound_capped_by_the_partition() -> None:
    est = {"duration_s": 3300.0, "duration_p90_s": 3540.0, "n_matches": 2}
    assert time_limit(est, margin=1.2).minutes == math.ceil(3540 * 1.2 / 60) == 71
    assert "p90 3540 s of 2 similar" in time_limit(est).note
    skewed = {"duration_s": 5000.0, "duration_p90_s": 4000.0, "n_matches": 3}
    assert time_limit(skewed, margin=1.0).minutes == math.ceil(5000 / 60)  # the mean when it is larger
    capped = time_limit(est, margin=1.2, max_minutes=60)
    assert capped.minutes == 60 and "MaxTime" in capped.note
    assert time_limit({"duration_s": 5.0, "duration_p90_s": 5.0}).minutes == 1  # at least a minute
    assert time_limit(None).minutes is None and time_limit({"duration_s": None}).minutes is None
    assert Decision(None, "why").line() == "SKIP why" and Decision(3, "a\nb").line() == "OK 3 a b"
    assert Decision.parse("OK 71 time limit 71 min\n") == Decision(71, "time limit 71 min")
    assert Decision.parse("SKIP no similar job") == Decision(None, "no similar job")
    assert Decision.parse('{"detail": "Not authenticated"}').minutes is None  # anything else: left to Slurm


def test_an_unreachable_or_stalled_service_leaves_the_job_to_slurm_within_the_timeout() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{closed.getsockname()[1]}"
    got = ask_time_limit(Service(dead, timeout_s=1.0), script="python train.py", work_dir="/tmp")
    assert got.minutes is None and "refused" in got.note.lower()
    with socket.socket() as stalled:  # accepts connections, never answers
        stalled.bind(("127.0.0.1", 0))
        stalled.listen(8)
        t0 = time.monotonic()
        got = ask_time_limit(Service(f"http://127.0.0.1:{stalled.getsockname()[1]}", timeout_s=0.5),
                             script="python train.py", work_dir="/tmp")
        assert got.minutes is None and "timed out" in got.note and time.monotonic() - t0 < 3.0


# ------------------------------------------------------------------------------- real Slurm

TRAIN = '''"""Train a ResNet-50 image classifier on ImageNet."""
import argparse


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--arch", type=str, default="resnet50")
    p.add_argument("--data-dir", type=str, default="/datasets/imagenet")
    p.add_argument("-b", "--batch-size", type=int, default=256)
    p.add_argument("--epochs", type=int, default=90)
    return p.parse_args()


if __name__ == "__main__":
    args = get_args()
    for epoch in range(1, 4):
        print(f"epoch {epoch}/{args.epochs} | step time 0.5 s | loss {3.0 / epoch:.3f}", flush=True)
'''
CRASH = '''"""Crashes on a missing config key."""
config = {"lr": 3e-4, "warmup": 100}
print("loading data", flush=True)
print("building the scheduler", flush=True)
schedule = config["lr_schedule"]
'''
PY = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable


def _skip_reason() -> str | None:
    from schedmate.deploy.slurm.localcluster import missing_binaries

    if missing := missing_binaries():
        return f"Slurm/munge not installed ({', '.join(missing)}): apt-get install slurm-wlm munge"
    if os.geteuid() != 0:
        return "a real slurmd needs root"
    if shutil.which("redis-server") is None:
        return "redis-server is not installed"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, redis_server: str, classifier: Any) -> Iterator[dict[str, Any]]:
    """Redis + the SchedMate service (uvicorn in a thread) + a real Slurm wired to it."""
    if (why := _skip_reason()) is not None:
        pytest.skip(why)
    import redis
    import uvicorn

    from schedmate.deploy.service import ServiceConfig, create_app
    from schedmate.deploy.service.core import ServiceCore
    from schedmate.deploy.slurm.config import HookConfig, slurm_conf_lines, write_files
    from schedmate.deploy.slurm.localcluster import LocalSlurm

    redis.Redis.from_url(redis_server, protocol=2).flushall()
    root = tmp_path_factory.mktemp("slurm")
    jobs = root / "jobs"
    jobs.mkdir()
    port = _free_port()
    config = ServiceConfig(port=port, allowed_roots=(jobs,), redis_url=redis_server)
    core = ServiceCore(config, classifier=classifier)
    core.load()
    server = uvicorn.Server(uvicorn.Config(create_app(config, core, load_models=False), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    cluster = LocalSlurm(root / "cluster")
    hook_log = root / "hook.log"
    try:
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.started, "the service did not start"
        cfg = HookConfig(url=f"http://127.0.0.1:{port}", python=sys.executable, timeout_s=5.0, log_file=hook_log,
                         slurm_conf=cluster.conf)
        epilog = cluster.conf_dir / "schedmate-epilog.sh"
        cluster.extra_conf = slurm_conf_lines(epilog)
        cluster.write_config()
        write_files(cfg, cluster.conf_dir, epilog)
        cluster.start()
        yield {"cluster": cluster, "jobs": jobs, "url": cfg.url, "redis": redis_server, "hook_log": hook_log,
               "hook": cfg}
    finally:
        cluster.stop()
        server.should_exit = True
        thread.join(15)


def _repo(root: Path, name: str, files: dict[str, str]) -> Path:
    repo = root / name
    repo.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        (repo / rel).write_text(text)
    return repo


def _show(cluster: Any, job_id: str) -> dict[str, str]:
    out = subprocess.run(["scontrol", "show", "job", "-o", job_id], env=cluster.env, capture_output=True, text=True,
                         timeout=10).stdout
    fields = {}
    for tok in out.split():
        k, sep, v = tok.partition("=")
        if sep:
            fields.setdefault(k, v)
    return fields


def _hook_record(log: Path, job_id: str, timeout_s: float = 60.0) -> dict[str, Any]:
    """The epilog's JSON line for `slurm-<job_id>` (the report is sent from a detached process)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if log.exists():
            for line in log.read_text().splitlines():
                rec = json.loads(line)
                if rec.get("event") == "epilog" and rec.get("job_id") == f"slurm-{job_id}" and "status" in rec:
                    return rec
        time.sleep(0.3)
    raise AssertionError(f"no epilog report for job {job_id}: {log.read_text() if log.exists() else '(no log)'}")


def test_a_job_without_time_limit_gets_the_estimate_and_its_end_grows_the_history(stack: dict[str, Any],
                                                                                 classifier: Any) -> None:
    import httpx

    cluster, url = stack["cluster"], stack["url"]
    repo = _repo(stack["jobs"], "resnet", {"train.py": TRAIN, "job.sh": (
        f"#!/bin/bash\n#SBATCH --gres=gpu:2\n{PY} train.py --arch resnet50 -b 64 --epochs 30\n")})
    command = launch_command((repo / "job.sh").read_text())
    durations = [3000.0, 3600.0]  # two past runs of the same job, finished
    for i, d in enumerate(durations):
        ack = httpx.post(f"{url}/v1/jobs/register", json={"job_id": f"past-{i}", "repo": str(repo), "command": command,
                                                          "gpus": 2}, timeout=30).json()
        assert ack["stored"] is True
        httpx.post(f"{url}/v1/jobs/end", json={"job_id": f"past-{i}", "duration_s": d}, timeout=30).raise_for_status()

    expected = math.ceil(1.2 * float(np.percentile(durations, 90)) / 60)  # 71 min
    from typer.testing import CliRunner

    from schedmate.cli import app

    shown = CliRunner().invoke(app, ["slurm", "estimate", str(repo / "job.sh"), "--url", url, "--json"])
    assert shown.exit_code == 0 and json.loads(shown.stdout)["minutes"] == expected, shown.output  # what sbatch gets
    job_id = cluster.sbatch(repo / "job.sh", "-o", "out-%j.log")
    fields = _show(cluster, job_id)
    assert parse_duration(fields["TimeLimit"]) == expected * 60, fields["TimeLimit"]
    assert f"AdminComment=schedmate: time limit {expected} min from SchedMate: 1.2 x p90 3540 s of 2 similar" \
        in _show_text(cluster, job_id)

    explicit = cluster.sbatch(repo / "job.sh", "--time=5", "-o", "out-%j.log")
    assert _show(cluster, explicit)["TimeLimit"] == "00:05:00"  # a user's own limit is never touched

    assert cluster.wait_state(job_id) == "COMPLETED"
    rec = _hook_record(stack["hook_log"], job_id)
    assert rec["status"] == "completed" and rec["stored"] is True and rec["records"] >= 3
    assert rec["log"] == str(repo / f"out-{job_id}.log")
    import redis

    from schedmate.embeddings.store import JobStore

    with JobStore.connect(stack["redis"], classifier.embedder.dim) as store:
        kept = store.get(f"slurm-{job_id}")
    assert kept is not None and kept.outcome.final_status.value == "completed"
    assert kept.outcome.duration is not None and kept.outcome.duration < 60 and kept.workload["model_name"] == "resnet-50"
    assert redis.Redis.from_url(stack["redis"]).scard("schedmate:ids") >= 3


def _show_text(cluster: Any, job_id: str) -> str:
    return subprocess.run(["scontrol", "show", "job", job_id], env=cluster.env, capture_output=True, text=True,
                          timeout=10).stdout


def test_a_job_with_no_similar_history_keeps_slurms_default_and_the_reason_is_logged(stack: dict[str, Any]) -> None:
    cluster = stack["cluster"]
    repo = _repo(stack["jobs"], "other", {"job.sh": "#!/bin/bash\necho nothing to learn from\n"})
    job_id = cluster.sbatch(repo / "job.sh", "-o", "out-%j.log")
    assert _show(cluster, job_id)["TimeLimit"] == "UNLIMITED"  # the partition's own default
    assert "schedmate: time limit left to Slurm: SKIP" in cluster.log_tail("slurmctld.log", 200)
    import httpx

    outside = httpx.post(f"{stack['url']}/v1/slurm/time-limit", json={"work_dir": "/etc", "script": "#!/bin/sh\nls\n"},
                         timeout=30)  # a folder the service may not read: refused, as one SKIP line
    assert outside.status_code == 200 and outside.text.startswith("SKIP SchedMate PathRefused")
    bad = httpx.post(f"{stack['url']}/v1/slurm/time-limit", json={"work_dir": str(repo)}, timeout=30)
    assert bad.status_code == 200 and bad.text.startswith("SKIP bad request: script")


def test_a_stalled_service_delays_a_submission_by_at_most_the_bound_and_leaves_the_job_alone(
        stack: dict[str, Any]) -> None:
    from schedmate.deploy.slurm.config import job_submit_lua

    cluster = stack["cluster"]
    lua = cluster.conf_dir / "job_submit.lua"
    good = lua.read_text()
    repo = stack["jobs"] / "resnet"  # has similar history: only the stall keeps it from an estimate
    with socket.socket() as stalled:  # accepts connections, never answers
        stalled.bind(("127.0.0.1", 0))
        stalled.listen(16)
        hook = replace(stack["hook"], url=f"http://127.0.0.1:{stalled.getsockname()[1]}", timeout_s=1.0)
        lua.write_text(job_submit_lua(hook))  # slurmctld reloads the script when it changes
        try:
            t0 = time.monotonic()
            job_id = cluster.sbatch(repo / "job.sh", "-o", "stalled-%j.log")
            took = time.monotonic() - t0
        finally:
            lua.write_text(good)
    assert _show(cluster, job_id)["TimeLimit"] == "UNLIMITED"
    assert took < hook.submit_budget_s + 2.0, took
    assert "timed out" in cluster.log_tail("slurmctld.log", 50)


def test_slurm_config_prints_the_lines_the_plugin_and_the_epilog_to_install(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from schedmate.cli import app

    got = CliRunner().invoke(app, ["slurm", "config", "--url", "http://10.0.0.5:8642", "--slurm-conf",
                                   str(tmp_path / "slurm.conf"), "--margin", "1.5"])
    assert got.exit_code == 0, got.output
    assert "JobSubmitPlugins=lua" in got.stdout and f"EpilogSlurmctld={tmp_path / 'schedmate-epilog.sh'}" in got.stdout
    assert 'local URL = "http://10.0.0.5:8642/v1/slurm/time-limit"' in got.stdout and "local MARGIN = 1.5" in got.stdout
    assert "hook --url http://10.0.0.5:8642" in got.stdout  # the epilog reports to the same service
    assert f"export SLURM_CONF={tmp_path / 'slurm.conf'}" in got.stdout and "epilog --background" in got.stdout
    wrote = CliRunner().invoke(app, ["slurm", "config", "--slurm-conf", str(tmp_path / "slurm.conf"), "--write"])
    assert wrote.exit_code == 0 and (tmp_path / "job_submit.lua").exists()
    assert os.access(tmp_path / "schedmate-epilog.sh", os.X_OK)


def test_a_failed_job_is_reported_by_the_epilog_and_diagnosed_by_its_slurm_id(stack: dict[str, Any],
                                                                               monkeypatch: pytest.MonkeyPatch,
                                                                               classifier: Any) -> None:
    from typer.testing import CliRunner

    from schedmate import cli_jobs
    from schedmate.cli import app

    cluster = stack["cluster"]
    repo = _repo(stack["jobs"], "crash", {"crash.py": CRASH, "job.sh": f"#!/bin/bash\n{PY} crash.py\n"})
    job_id = cluster.sbatch(repo / "job.sh", "-o", "out-%j.log")
    assert cluster.wait_state(job_id) == "FAILED"
    log = repo / f"out-{job_id}.log"
    lines = log.read_text().splitlines()
    root_line = next(i for i, text in enumerate(lines, 1) if text.startswith("KeyError"))

    rec = _hook_record(stack["hook_log"], job_id)
    assert rec["status"] == "failed" and rec["exit_code"] == 1 and rec["log"] == str(log)
    assert rec["failure_stored"] is True  # no fingerprint: not job history, but kept as a failure
    assert rec["diagnosis"]["line"] == root_line and "lr_schedule" in rec["diagnosis"]["root_cause"]

    monkeypatch.setattr(cli_jobs, "load_embedder", lambda: classifier.embedder)
    monkeypatch.setenv("SLURM_CONF", str(cluster.conf))
    got = CliRunner().invoke(app, ["diagnose", "--job", job_id, "--json", "--method", "rules", "--redis-url",
                                   stack["redis"]])
    assert got.exit_code == 0, got.output
    out = json.loads(got.stdout)
    assert out["slurm"] == {"job_id": f"slurm-{job_id}", "log": str(log), "log_from": "failure history"}
    assert out["line"] == root_line and out["line_text"] == "KeyError: 'lr_schedule'" and out["category"] == "script"

    # without a history at hand, the log is found through scontrol while Slurm remembers the job
    later = cluster.sbatch(repo / "job.sh", "-o", "late-%j.log")
    assert cluster.wait_state(later) == "FAILED"
    no_history = stack["jobs"] / "no-history"  # a history folder never built: Slurm itself is asked
    got = CliRunner().invoke(app, ["diagnose", "--job", later, "--json", "--method", "rules", "--history-dir",
                                   str(no_history)])
    assert got.exit_code == 0, got.output
    out = json.loads(got.stdout)
    assert out["slurm"]["log_from"] == "scontrol" and out["slurm"]["log"] == str(repo / f"late-{later}.log")
    assert out["line_text"] == "KeyError: 'lr_schedule'"

    by_hand = CliRunner().invoke(app, ["slurm", "epilog", "--job", later, "--url", stack["url"]])  # as the epilog does
    assert by_hand.exit_code == 0, by_hand.output
    report = json.loads(by_hand.stdout)
    assert report["status"] == "failed" and report["slurm_state"] == "FAILED" and report["failure_stored"] is True


def test_diagnose_needs_a_log_or_a_job_and_says_so_in_one_line() -> None:
    from typer.testing import CliRunner

    from schedmate.cli import app

    got = CliRunner().invoke(app, ["diagnose", "--json"])
    assert got.exit_code == 2 and "LOG or --job" in got.output


# ------------------------------------------------------------------------------- progress-aware extension

def test_the_extension_rule_extends_only_a_progressing_job_whose_remaining_work_does_not_fit() -> None:
    from schedmate.deploy.slurm.extend import ExtendConfig, Progress, decide

    cfg = ExtendConfig(enabled=True, check_before_s=900, margin=1.2, slack_s=300, max_extension_s=3600)
    going = Progress(step=400, planned=1000, step_time_s=6.0, lines=50, last_line_age_s=5.0)  # 3600 s left

    def run(p: Progress | None, elapsed: float = 3000, limit: float = 3600, max_time: float | None = None) -> Any:
        return decide(p, elapsed_s=elapsed, limit_s=limit, original_s=3600, max_time_s=max_time, config=cfg)

    assert run(going, elapsed=1000)[0] == "keep" and "not due" in run(going, elapsed=1000)[2]
    action, new, why = run(going)  # needs 3000 + 1.2 x 3600 + 300 = 7620 s; the operator's cap: 3600 + 3600
    assert (action, new) == ("extend", 7200.0) and "step 400/1000" in why
    assert run(going, max_time=5400)[:2] == ("extend", 5400.0)  # the partition's MaxTime
    capped = run(going, max_time=3600)
    assert capped[0] == "keep" and "cap" in capped[2]
    assert run(None)[0] == "keep" and "no progress lines" in run(None)[2]  # hung: never extended
    assert "not progressing" in run(replace(going, last_line_age_s=3600))[2]
    assert "remaining work unknown" in run(replace(going, planned=None))[2]
    assert "fit" in run(replace(going, step=990))[2]
    assert decide(going, elapsed_s=3000, limit_s=3600, original_s=3600, max_time_s=None,
                  config=replace(cfg, max_extension_s=7200))[1] == 7620  # the operator's cap allows it


def test_the_extender_never_touches_a_users_limit_and_changes_nothing_in_dry_run(tmp_path: Path) -> None:
    from schedmate.deploy.slurm.extend import ExtendConfig, Extender

    log = tmp_path / "out.log"
    log.write_text("".join(f"step {i}/500 | loss={3 - i / 100:.2f} | step_time=2000ms\n" for i in range(1, 11)))
    calls: list[list[str]] = []

    def scontrol(args: Any) -> str:
        calls.append(list(args))
        return "PartitionName=main MaxTime=UNLIMITED\n"

    base = SlurmJob("7", state="RUNNING", run_time_s=50.0, time_limit="00:01:00", std_out=str(log), partition="main")
    user = Extender(ExtendConfig(enabled=True), run=scontrol).check(base)  # no SchedMate note: the user gave --time
    assert user.action == "keep" and "never touched" in user.reason and calls == []
    ours = replace(base, admin_comment="schedmate: time limit 1 min from SchedMate: 1.2 x p90 40 s of 2 similar")
    dry = Extender(ExtendConfig(enabled=False), run=scontrol)
    ext = dry.apply(ours, dry.check(ours))
    assert ext.action == "extend" and not ext.applied and ext.new_limit_s is not None and ext.new_limit_s > 60
    assert not any(c[:2] == ["scontrol", "update"] for c in calls)  # dry-run: nothing changed
    live = Extender(ExtendConfig(enabled=True), run=scontrol)
    assert live.apply(ours, live.check(ours)).applied
    update = next(c for c in calls if c[:2] == ["scontrol", "update"])
    assert update[2:4] == ["JobId=7", f"TimeLimit={int(ext.new_limit_s // 60)}"]
    assert update[4].startswith("AdminComment=schedmate: time limit 1 min from SchedMate") and "extended to" in update[4]


PROGRESS_TRAIN = '''"""Fine-tune GPT-2 on WikiText-103 (causal language modelling)."""
import argparse
import os
import time


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--model-name", type=str, default="gpt2")
    p.add_argument("--dataset", type=str, default="wikitext-103")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--max-steps", type=int, default=75)
    return p.parse_args()


args = get_args()
print("loading gpt2 and wikitext-103 ...", flush=True)
if os.environ.get("HANG"):
    time.sleep(100000)  # stuck before its first step (a hung rendezvous): no progress line, ever
for step in range(1, args.max_steps + 1):
    time.sleep(1.0)
    print(f"step {step}/{args.max_steps} | loss={3.0 - step * 0.01:.3f} | step_time=1000ms", flush=True)
print("training done", flush=True)
'''


@pytest.fixture(scope="module")
def extended(stack: dict[str, Any]) -> dict[str, Any]:
    """Two jobs under SchedMate limits of 1 min (from two past runs of 30 s and 40 s): one prints
    progress for ~75 s, one hangs before its first step; the extender (enabled, checking from 50 s
    before expiry) runs every 2 s until both have ended."""
    import httpx

    from schedmate.deploy.slurm.extend import ExtendConfig, Extender
    from schedmate.deploy.slurm.slurmjob import ScontrolError

    cluster, url = stack["cluster"], stack["url"]
    repo = _repo(stack["jobs"], "gpt2", {"train.py": PROGRESS_TRAIN, "job.sh": (
        f"#!/bin/bash\n#SBATCH --gres=gpu:1\n{PY} train.py --model-name gpt2 --max-steps 75\n")})
    command = launch_command((repo / "job.sh").read_text())
    for i, d in enumerate((30.0, 40.0)):
        ack = httpx.post(f"{url}/v1/jobs/register", json={"job_id": f"gpt2-past-{i}", "repo": str(repo),
                                                          "command": command, "gpus": 1}, timeout=30).json()
        assert ack["stored"] is True
        httpx.post(f"{url}/v1/jobs/end", json={"job_id": f"gpt2-past-{i}", "duration_s": d}, timeout=30).raise_for_status()

    def scontrol(args: Any) -> str:
        done = subprocess.run(list(args), env=cluster.env, capture_output=True, text=True, timeout=10)
        if done.returncode != 0:
            raise ScontrolError(done.stderr.strip())
        return done.stdout

    going = cluster.sbatch(repo / "job.sh", "-o", "going-%j.log")
    hung = cluster.sbatch(repo / "job.sh", "-o", "hung-%j.log", "--export=ALL,HANG=1")
    submitted = {j: _show(cluster, j) for j in (going, hung)}
    extender = Extender(ExtendConfig(enabled=True, check_before_s=50, slack_s=30, max_extension_s=600), run=scontrol,
                        log_file=repo / "extender.log")
    decisions: list[Any] = []
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        decisions += extender.run_pass()
        states = {j: _show(cluster, j).get("JobState") for j in (going, hung)}
        if all(s in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT") for s in states.values()):
            break
        time.sleep(2.0)
    final = {j: _show(cluster, j) for j in (going, hung)}
    return {"going": going, "hung": hung, "submitted": submitted, "final": final, "decisions": decisions,
            "extender": extender, "text": {j: _show_text(cluster, j) for j in (going, hung)}, "repo": repo}


def test_a_progressing_job_under_a_too_short_schedmate_limit_is_extended_and_completes(extended: dict[str, Any]) -> None:
    job = extended["going"]
    assert extended["submitted"][job]["TimeLimit"] == "00:01:00"  # SchedMate's limit from the 30 s / 40 s past runs
    assert extended["final"][job]["JobState"] == "COMPLETED", extended["final"][job]
    limit = parse_duration(extended["final"][job]["TimeLimit"])
    assert limit is not None and 120 <= limit <= 60 + 600  # raised, within the operator's cap
    assert "; schedmate: extended to" in extended["text"][job]  # what the user sees in scontrol show job
    mine = [d for d in extended["decisions"] if d.job_id == job and d.action == "extend"]
    assert len(mine) == 1 and mine[0].applied and "step" in mine[0].reason
    assert extended["extender"].counts["extended"] >= 1
    logged = [json.loads(ln) for ln in (extended["repo"] / "extender.log").read_text().splitlines()]
    assert any(r["job_id"] == job and r["applied"] for r in logged)
    assert "training done" in (extended["repo"] / f"going-{job}.log").read_text()


def test_a_hung_job_is_not_extended_and_ends_with_timeout(extended: dict[str, Any]) -> None:
    job = extended["hung"]
    assert extended["submitted"][job]["TimeLimit"] == "00:01:00"
    assert extended["final"][job]["JobState"] == "TIMEOUT", extended["final"][job]
    assert extended["final"][job]["TimeLimit"] == "00:01:00"
    assert "extended" not in extended["text"][job]
    seen = [d for d in extended["decisions"] if d.job_id == job]
    assert seen and all(d.action == "keep" for d in seen)
    assert any("no progress lines" in d.reason for d in seen)
