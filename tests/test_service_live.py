"""`LiveInsights` over the service in process: the standalone SchedMate policy, unchanged, on a tiny
trace whose jobs point at real repositories, with the job history kept by the service in Redis."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from schedmate.adapters.insights import InsightSource
from schedmate.adapters.standalone import StandaloneSchedMate
from schedmate.deploy.service import JobRef, LiveInsights, SchedMateClient
from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.engine import simulate
from schedmate.schedulers.job import JobSpec, JobState

from .repo_files import write
from .test_service import COMMAND, OOM, TRAIN, failed_log, files, make_client  # noqa: F401 -- fixtures

BERT_COMMAND = "python train.py --arch bert-large --data-dir /datasets/wikipedia --epochs 3"
GPT_COMMAND = "python train.py --arch gpt2-xl --data-dir /datasets/openwebtext --epochs 1"


class KnowsNothing(InsightSource):
    """The control: an InsightSource that never knows (the policy's own history model decides)."""


def spec(job_id: str, submit: float, duration: float, repo: Path, command: str) -> JobSpec:
    return JobSpec(job_id, submit, 4, duration, code_dir=str(repo), attributes={"command": command})


def test_standalone_policy_runs_unchanged_on_the_live_source(make_client: Any, files: dict[str, Path],  # noqa: F811 -- pytest fixtures imported from test_service
                                                             redis_url: str) -> None:
    http = make_client(redis_url=redis_url)
    source = LiveInsights(SchedMateClient(http=http))
    assert isinstance(source, InsightSource)
    root = files["root"]
    res = files["repo"]
    bert = write(root / "bert", {"train.py": TRAIN.replace("ResNet-50 image classifier on ImageNet", "BERT on Wikipedia")})
    gpt = write(root / "gpt", {"train.py": TRAIN.replace("ResNet-50 image classifier on ImageNet", "GPT-2 on OpenWebText")})
    # history made by this run: a BERT job of 500 s and a ResNet job of 50 s finish first; later
    # copies of them queue behind a long job, the BERT copy first. SJF on the service's estimates
    # (the finished twins' durations) must start the ResNet copy first.
    specs = [spec("hist-bert", 0, 500, bert, BERT_COMMAND), spec("hist-res", 1, 50, res, COMMAND),
             spec("blocker", 600, 1000, gpt, GPT_COMMAND),
             spec("late-bert", 700, 500, bert, BERT_COMMAND), spec("late-res", 701, 50, res, COMMAND)]
    control = {j.job_id: j for j in simulate(specs, ClusterSpec.homogeneous(1, 4), StandaloneSchedMate(KnowsNothing())).jobs}
    assert control["late-bert"].first_start < control["late-res"].first_start  # without SchedMate: arrival order
    policy = StandaloneSchedMate(source)
    result = simulate(specs, ClusterSpec.homogeneous(1, 4), policy)
    jobs = {j.job_id: j for j in result.jobs}
    assert all(j.end_time is not None for j in jobs.values())
    assert jobs["late-res"].first_start < jobs["late-bert"].first_start  # FIFO would run late-bert first
    # what the service now says about the two copies: their twins' (and their own) durations
    res_advice, bert_advice = source.advise(jobs["late-res"]), source.advise(jobs["late-bert"])
    assert res_advice is not None and bert_advice is not None
    assert set(res_advice.similar_ids) == {"hist-res", "late-res"}
    assert res_advice.duration_top3_s == pytest.approx(50.0) and bert_advice.duration_top3_s == pytest.approx(500.0)
    stats = source.stats()
    assert stats["recorded_arrivals"] == 5 and stats["recorded_finished"] == 5
    assert not any(k.endswith("_errors") for k in stats)
    records = http.post("/v1/jobs/end", json={"job_id": "late-res", "duration_s": 50.0}).json()["records"]
    assert records == 5


def test_live_diagnosis_and_resolver(make_client: Any, files: dict[str, Path]) -> None:  # noqa: F811 -- pytest fixtures imported from test_service
    line = failed_log(files["root"] / "attempt-1.log", OOM)
    source = LiveInsights(SchedMateClient(http=make_client()),
                          resolver=lambda job: JobRef(log=str(files["root"] / f"{job.job_id}.log")))
    job = JobState(JobSpec("attempt-1", 0.0, 8, 100.0))
    insight = source.diagnose(job, attempt=1)
    assert insight is not None and insight.reason == "OutOfMemoryError" and not insight.infrastructure
    assert line == 14
    assert source.advise(job) is None and source.stats()["no_artefact"] == 1  # the resolver gave no repo


def test_service_down_means_none_everywhere(files: dict[str, Path]) -> None:  # noqa: F811 -- pytest fixture imported from test_service
    from .test_service_uvicorn import free_port

    source = LiveInsights(SchedMateClient(f"http://127.0.0.1:{free_port()}", timeout_s=2.0))
    job = JobState(spec("j1", 0, 10, files["repo"], COMMAND))
    job.info["log"] = str(files["log"])
    assert source.advise(job) is None
    assert source.track(job, event_at=0.0, now=1.0) is None
    assert source.diagnose(job, attempt=0) is None
    source.record(job, finished=False)
    stats = source.stats()
    assert stats["advise_errors"] == stats["track_errors"] == stats["diagnose_errors"] == stats["record_errors"] == 1
    assert stats["advise_status_none"] == 1
