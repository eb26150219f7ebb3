"""Ray scale-out against a real local Ray cluster (2 CPUs, 8 units of a custom `fake_gpu` resource).

- The advisor, tracker and failure handler as a pool of Ray actors answer advise / track /
  diagnose exactly as the in-process `ServiceCore` does, errors included, and serve API v1.
- The Ray executor runs short CPU training jobs as Ray tasks under a registry policy: SRTF evicts
  a long job for short ones (its training process is killed, it resumes from its checkpoint),
  Ray enforces the GPU resource, a diverging job fails with a real traceback that the handler
  diagnoses, and the tracker reads the step time off every log.
- A seed sweep mapped over Ray gives the serial run's rows.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .repo_files import write

ray = pytest.importorskip("ray")

from schedmate.deploy.ray.actors import RayServiceCore  # noqa: E402
from schedmate.deploy.ray.cluster import RayConfig, RayUnavailable, ray_cluster  # noqa: E402
from schedmate.deploy.ray.executor import (  # noqa: E402
    ExecutorConfig,
    RayExecutor,
    TrainJob,
    UnsupportedDecision,
)
from schedmate.deploy.ray.sweep import RayMap, SweepConfig, run_sweep  # noqa: E402
from schedmate.deploy.service.config import PathRefused, ServiceConfig  # noqa: E402
from schedmate.deploy.service.core import InputError, ServiceCore  # noqa: E402
from schedmate.deploy.service.models import AdviseRequest, DiagnoseRequest, TrackRequest  # noqa: E402
from schedmate.schedulers.decisions import Colocate  # noqa: E402
from schedmate.schedulers.job import Phase  # noqa: E402
from schedmate.schedulers.policy import Policy  # noqa: E402
from schedmate.schedulers.registry import make_policy  # noqa: E402

TRAIN = '''"""Fine-tune BERT-base on SQuAD."""
import argparse

p = argparse.ArgumentParser()
p.add_argument("--model", default="bert-base-uncased")
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--batch-size", type=int, default=32)
args = p.parse_args()
'''
OOM = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.35 GiB total capacity)"
NCCL = "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1191, unhandled system error, NCCL version 2.14.3"


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayConfig]:
    config = RayConfig("local", num_cpus=2, gpus=8)
    with ray_cluster(config) as resources:
        assert resources["fake_gpu"] == 8
        warm = ray.remote(num_cpus=0.25)(_nap)
        ray.get([warm.remote(0.5) for _ in range(6)])  # workers started now, not in the middle of a timed run
        yield config


def _nap(seconds: float) -> None:
    import time

    time.sleep(seconds)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("ray-jobs")
    repo = write(root / "repo", {"train.py": TRAIN})
    logs = {}
    for name, step_ms in (("a", 480), ("b", 120)):
        logs[name] = root / f"{name}.log"
        logs[name].write_text("".join(f"step {i}/500 | loss {4.0 - i * 0.01:.4f} | step_time {step_ms + i % 3} ms\n"
                                      for i in range(1, 60)))
    for name, line in (("oom", OOM), ("nccl", NCCL)):
        logs[name] = root / f"{name}.log"
        logs[name].write_text("step 1/500 | loss 4.0\nTraceback (most recent call last):\n  File \"train.py\", "
                              f"line 9, in <module>\n{line}\n")
    logs["empty"] = root / "empty.log"
    logs["empty"].write_text("")
    return {"root": root, "repo": repo, **logs}


@pytest.fixture(scope="module")
def service_config(files: dict[str, Path]) -> ServiceConfig:
    return ServiceConfig(allowed_roots=(files["root"], Path("/tmp").resolve()))


@pytest.fixture(scope="module")
def pool(cluster: RayConfig, service_config: ServiceConfig) -> Iterator[RayServiceCore]:
    core = RayServiceCore(service_config, actors=2)
    core.start_loading()  # each actor loads its own MiniLM, while the in-process core loads its own
    yield core
    core.close()


@pytest.fixture(scope="module")
def local_core(classifier: Any, service_config: ServiceConfig) -> ServiceCore:
    core = ServiceCore(service_config, classifier=classifier)
    core.load()
    return core


# --------------------------------------------------------------------------------------- actors


def _requests(files: dict[str, Path]) -> list[tuple[str, Any]]:
    return [
        ("advise", AdviseRequest(repo=str(files["repo"]), command="python train.py --epochs 3", gpus=4)),
        ("advise", AdviseRequest(repo=str(files["repo"]), command="bash run.sh", gpus=1)),
        *[("track", TrackRequest(log=str(files[k]))) for k in ("a", "b", "empty")],
        *[("diagnose", DiagnoseRequest(log=str(files[k]), job_id=f"j-{k}")) for k in ("oom", "nccl", "a")],
    ]


def test_actor_pool_answers_advise_track_diagnose_like_the_in_process_core(
        pool: RayServiceCore, local_core: ServiceCore, files: dict[str, Path]) -> None:
    pool.load()
    assert pool.ready and pool.readiness()["models"] == "ok"
    answers = []
    for op, req in _requests(files):
        remote, local = getattr(pool, op)(req), getattr(local_core, op)(req)
        timing = {"seconds"}  # a diagnosis' own wall time (the wire `Diagnosis.seconds`) differs run to run
        assert remote.model_dump(exclude=timing) == local.model_dump(exclude=timing), op
        answers.append(remote)
    advise, _, track_a, track_b, track_empty, oom, nccl, clean = answers
    assert advise.metadata["model_name"] and advise.fallback == "scheduler-default"  # no job store: says so
    assert track_a.step_time.value == pytest.approx(0.481, abs=0.002) and track_b.step_time.value < 0.2
    assert track_empty.signal is False and track_empty.fallback == "scheduler-default"
    assert oom.status == "failure_found" and "OutOfMemoryError" in oom.root_cause
    assert "NCCL" in nccl.root_cause and clean.status != "failure_found"


def test_a_batch_fans_out_over_the_pool_in_order(pool: RayServiceCore, local_core: ServiceCore,
                                                 files: dict[str, Path]) -> None:
    reqs = [TrackRequest(log=str(files[k])) for k in ("a", "b") * 4]
    assert [r.model_dump() for r in pool.map("track", reqs)] == [local_core.track(r).model_dump() for r in reqs]
    mixed = pool.map("track", [TrackRequest(log=str(files["a"])), TrackRequest(log=str(files["root"] / "gone.log"))])
    assert mixed[0].signal and isinstance(mixed[1], InputError) and mixed[1].http_status == 404


def test_actor_errors_are_the_in_process_errors(pool: RayServiceCore, files: dict[str, Path]) -> None:
    with pytest.raises(InputError) as missing:
        pool.track(TrackRequest(log=str(files["root"] / "gone.log")))
    assert missing.value.http_status == 404 and "not found" in str(missing.value)
    with pytest.raises(InputError) as directory:
        pool.diagnose(DiagnoseRequest(log=str(files["root"])))
    assert directory.value.http_status == 400
    with pytest.raises(PathRefused):
        pool.track(TrackRequest(log="/etc/hostname"))


def test_the_api_serves_from_the_actor_pool(pool: RayServiceCore, files: dict[str, Path],
                                            service_config: ServiceConfig) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from schedmate.deploy.service import create_app

    with TestClient(create_app(service_config, _Unclosed(pool), load_models=False)) as c:
        assert c.get("/ready").json()["actors"] == "2"
        body = c.post("/v1/track", json={"log": str(files["a"])}).json()
        assert body["signal"] is True and body["step_time"]["value"] == pytest.approx(0.481, abs=0.002)
        assert c.post("/v1/diagnose", json={"log": str(files["root"] / "gone.log")}).status_code == 404


class _Unclosed:
    """The pool as the app sees it, minus `close` (the module's fixture owns the actors)."""

    def __init__(self, core: RayServiceCore) -> None:
        self._core = core

    def __getattr__(self, name: str) -> Any:
        return getattr(self._core, name)

    def close(self) -> None:
        return None


# --------------------------------------------------------------------------------------- executor


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").is_file() and ") Z " not in Path(f"/proc/{pid}/stat").read_text()


def test_srtf_evicts_a_long_job_for_short_ones_and_it_resumes_from_its_checkpoint(
        cluster: RayConfig, pool: RayServiceCore, tmp_path: Path) -> None:
    work = tmp_path / "jobs"  # under /tmp: the pool's allowed roots
    seen_at_preempt: dict[str, int] = {}

    def observe(job_id: str, log: Path) -> Any:
        pid_file = work / f"{job_id}.pid"
        if pid_file.is_file() and ex.state.jobs[job_id].phase is Phase.PREEMPTED:
            seen_at_preempt[job_id] = int(pid_file.read_text())
        return pool.track(TrackRequest(log=str(log)))

    jobs = [TrainJob("long8", 8, 70, 0.1), TrainJob("short4a", 4, 10, 0.1, submit_at=4.0),
            TrainJob("short4b", 4, 15, 0.1, submit_at=4.2),
            TrainJob("diverges2", 2, 200, 0.01, submit_at=4.5, lr=50.0), TrainJob("huge", 16, 5, 0.1, submit_at=0.5)]
    ex = RayExecutor(make_policy("srtf"), work, ExecutorConfig(ray=cluster), observe=observe,
                     diagnose=lambda j, log: pool.diagnose(DiagnoseRequest(log=str(log), job_id=j)))
    r = ex.run(jobs)

    phases = {j: s.phase for j, s in r.jobs.items()}
    assert phases == {"long8": Phase.COMPLETED, "short4a": Phase.COMPLETED, "short4b": Phase.COMPLETED,
                      "diverges2": Phase.FAILED, "huge": Phase.CANCELLED}
    # the eviction happened for real: at the short job's arrival, and its training process is gone
    kinds = [(e.kind, e.job_id) for e in r.events]
    assert kinds.index(("preempt", "long8")) < kinds.index(("start", "short4a"))
    assert r.jobs["long8"].restarts == 1 and not _pid_alive(seen_at_preempt["long8"])
    # ... and it resumed from its own checkpoint, every step done exactly once
    log = r.logs["long8"].read_text()
    resumed = [int(m) for m in re.findall(r"resumed from step (\d+)", log)]
    steps = [int(m) for m in re.findall(r"^step (\d+)/70", log, re.M)]
    assert resumed[0] == 0 and resumed[1] > 0 and sorted(set(steps)) == list(range(1, 71))
    # at most the step in flight redone; under load the eviction can land after the last step (nothing left to redo)
    after = steps.index(resumed[1]) + 1
    assert len(steps) - 70 <= 1 and (after == len(steps) or steps[after] == resumed[1] + 1)
    assert "fake_gpu', 8.0" in log and log.rstrip().endswith("job done: 70 steps")
    # GPUs held never exceed the 8 the node has (the policy's view and Ray's agree)
    held, peak = {}, 0
    for e in r.events:
        if e.kind == "start":
            held[e.job_id] = int(e.detail.split(":")[1].split()[0])
        elif e.kind in ("preempt", "finish", "fail"):
            held.pop(e.job_id, None)
        peak = max(peak, sum(held.values()))
    assert peak == 8
    # logs fed the tracker; the failed job's real traceback fed the handler
    assert r.readings["long8"][-1].step_time.value == pytest.approx(0.1, rel=0.2)
    diag = r.diagnoses["diverges2"]
    assert diag.status == "failure_found" and "FloatingPointError" in diag.root_cause
    assert "cancel" in [e.kind for e in r.of("huge")] and "16 GPUs" in r.jobs["huge"].cancel_reason


def test_half_gpu_slices_pack_two_jobs_per_ray_gpu(cluster: RayConfig, tmp_path: Path) -> None:
    ex = RayExecutor(make_policy("fifo"), tmp_path, ExecutorConfig(ray=cluster, gpu_slice=0.5))
    assert ex.state.cluster.total_gpus == 16  # the policy sees 16 half-GPUs on 8 fake_gpu units
    r = ex.run([TrainJob("x", 8, 8, 0.1), TrainJob("y", 8, 8, 0.1)])
    starts = [e for e in r.events if e.kind == "start"]
    assert [e.detail.split()[-1] for e in starts] == ["(fake_gpu=4)", "(fake_gpu=4)"]
    assert max(e.t for e in starts) < min(e.t for e in r.events if e.kind == "finish")  # side by side


def test_a_decision_the_executor_cannot_carry_out_names_the_policy(cluster: RayConfig, tmp_path: Path) -> None:
    class Sharer(Policy):
        name = "sharer"

        def schedule(self, view: Any) -> list[Any]:
            ids = [j.job_id for j in view.waiting()]
            return [Colocate(ids[0], ids[0])] if ids else []

    with pytest.raises(UnsupportedDecision, match="'sharer' asked for Colocate"):
        RayExecutor(Sharer(), tmp_path, ExecutorConfig(ray=cluster)).run([TrainJob("z", 1, 3, 0.01)])


# --------------------------------------------------------------------------------------- sweeps


def _where(_: int) -> int:
    return os.getpid()


def test_a_seed_sweep_over_ray_equals_the_serial_run(cluster: RayConfig, tmp_path: Path) -> None:
    assert set(RayMap(cpus_per_item=0.5)(_where, [0, 1])) - {os.getpid()}  # the runs happen in Ray workers
    cfg = SweepConfig(policies=("fifo", "sjf", "tiresias"), seeds=(0, 1), jobs=100)
    serial = run_sweep(cfg, tmp_path / "serial")
    fanned = run_sweep(cfg, tmp_path / "ray", map_seeds=RayMap(cpus_per_item=0.5), where="ray")

    def rows(result: Any) -> list[dict[str, Any]]:
        return [{k: v for k, v in r.flat().items() if k != "wall_seconds"} for r in result.rows]

    assert len(serial.rows) == 6 and rows(fanned) == rows(serial)
    assert [(r.arm, r.seed) for r in fanned.rows] == [(p, s) for s in (0, 1) for p in cfg.policies]
    doc = json.loads((tmp_path / "ray" / "sweep.json").read_text())
    assert doc["details"]["where"] == "ray" and len(doc["rows"]) == 6
    assert len({r.summary.mean_jct for r in serial.rows}) > 1  # the seeds and policies differ


def test_cli_sweep_runs_on_the_cluster_and_bad_input_is_one_line(cluster: RayConfig, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from schedmate.cli import app

    runner = CliRunner()
    ok = runner.invoke(app, ["ray", "sweep", "--policies", "fifo,sjf", "--seeds", "2", "--jobs", "80", "--ray", "local",
                             "--out", str(tmp_path / "s")])
    assert ok.exit_code == 0, ok.output
    assert "4 runs" in ok.output and (tmp_path / "s" / "sweep.csv").is_file()
    bad = runner.invoke(app, ["ray", "sweep", "--policies", "fifo,nope", "--out", str(tmp_path / "b")])
    assert bad.exit_code == 2 and "unknown policy 'nope'" in bad.output
    (tmp_path / "jobs.json").write_text('{"not": "a list"}')
    bad_jobs = runner.invoke(app, ["ray", "execute", "--jobs", str(tmp_path / "jobs.json")])
    assert bad_jobs.exit_code == 2 and "cannot read jobs" in bad_jobs.output
    with pytest.raises(RayUnavailable):
        RayConfig(" ")


def test_an_experiment_fans_its_seed_points_out_over_ray_with_the_serial_answers(
        cluster: RayConfig, tmp_path: Path) -> None:
    from schedmate.schedulers.ares.experiment import AresExperimentConfig, run_ares_experiment

    cfg = AresExperimentConfig(seeds=(0, 1), rhos=(1.0,), n_jobs=24, gpus=16, plots=False)
    serial = run_ares_experiment(tmp_path / "serial", cfg)
    fanned = run_ares_experiment(tmp_path / "ray", cfg, map_points=RayMap(cpus_per_item=0.5))

    def same(rows: list[dict[str, object]]) -> list[dict[str, object]]:  # timings are measured, not simulated
        return [{k: v for k, v in r.items() if not k.endswith("seconds")} for r in rows]

    assert len(serial.rows) == len(fanned.rows) > 0
    assert same(fanned.rows) == same(serial.rows)
    assert {k: c["pass"] for k, c in fanned.criteria.items()} == {k: c["pass"] for k, c in serial.criteria.items()}
