"""Ray scale-out commands (deploy/ray/): `schedmate ray sweep | execute`.

`--ray ADDRESS` joins a running cluster ("auto", "host:port", "ray://host:port"); "local" starts
one in this process (CPU-only machines get `--gpus` units of a custom GPU resource). `sweep`
without `--ray` runs the same points serially, with the same rows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from schedmate.errors import BadInput

RayAddress = Annotated[str | None, typer.Option("--ray", help="Ray address ('auto', host:port, ray://host:port) or "
                                                "'local' to start a cluster here.")]
GpuResource = Annotated[str, typer.Option(help="Ray resource that stands for a GPU ('GPU' on real ones).")]

DEMO_JOBS: tuple[dict[str, Any], ...] = (
    {"job_id": "long8", "gpus": 8, "steps": 60, "step_time": 0.1},
    {"job_id": "short4a", "gpus": 4, "steps": 10, "step_time": 0.1, "submit_at": 2.5},
    {"job_id": "short4b", "gpus": 4, "steps": 15, "step_time": 0.1, "submit_at": 2.7},
    {"job_id": "diverges2", "gpus": 2, "steps": 200, "step_time": 0.01, "submit_at": 3.0, "lr": 50.0},
)
"""A long 8-GPU job, two short 4-GPU jobs that arrive while it runs (a preemptive policy evicts
it), and a job whose learning rate makes it diverge (a real numpy overflow ends it)."""


def load_jobs(path: Path | None) -> list[Any]:
    """`TrainJob`s from a JSON list of objects (the demo set when `path` is None)."""
    from schedmate.deploy.ray.executor import TrainJob

    if path is None:
        return [TrainJob(**j) for j in DEMO_JOBS]
    try:
        raw = json.loads(path.read_text())
        if not isinstance(raw, list):
            raise TypeError("top level is not a list")
        return [TrainJob(**j) for j in raw]
    except (OSError, ValueError, TypeError) as exc:
        raise BadInput(f"cannot read jobs from {path}: {exc} (want a JSON list of "
                       "{job_id, gpus, steps, step_time?, submit_at?, lr?, seed?})") from None


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add this area's commands to the `schedmate` app (top level) or to `schedmate eval`."""
    ray_app = typer.Typer(help="Scale out over Ray: seed sweeps, and jobs run as Ray tasks under a policy.",
                          no_args_is_help=True)
    app.add_typer(ray_app, name="ray")

    @ray_app.command("sweep")
    def sweep(
        policies: Annotated[str, typer.Option(help="Comma-separated policies (registry names, '+bf' allowed).")]
        = "fifo,sjf,tiresias",
        seeds: Annotated[int, typer.Option(help="Seeds (repeats).")] = 3,
        first_seed: Annotated[int, typer.Option(help="Seeds run are first_seed .. first_seed+seeds-1.")] = 0,
        jobs: Annotated[int, typer.Option(help="Jobs per synthetic trace.")] = 500,
        cluster: Annotated[str, typer.Option(help="Cluster: '64', '8x8', '6x4:T4,2x8:A100'.")] = "64",
        load: Annotated[float, typer.Option(help="Offered load of the synthetic trace.")] = 1.2,
        profile: Annotated[str, typer.Option(help="Synthetic trace calibration (seren, helios, philly, ...).")] = "seren",
        ray_address: RayAddress = None,
        num_cpus: Annotated[int | None, typer.Option(help="With --ray local: CPUs the cluster offers.")] = None,
        out: Annotated[Path, typer.Option(help="Output folder (sweep.json, sweep.csv).")] = Path("results/ray-sweep"),
    ) -> None:
        """Policies x seeds of the simulator, one Ray task per run (serial without --ray; same rows)."""
        from schedmate.cli import console, user_errors
        from schedmate.cli_checks import check_count
        from schedmate.deploy.ray.cluster import RayConfig, ray_cluster
        from schedmate.deploy.ray.sweep import RayMap, SweepConfig, run_sweep

        with user_errors():
            check_count(first_seed, "--first-seed", minimum=0, maximum=2**32 - 1000)
            cfg = SweepConfig(policies=tuple(p.strip() for p in policies.split(",") if p.strip()),
                              seeds=tuple(range(first_seed, first_seed + seeds)), jobs=jobs, cluster=cluster,
                              load=load, profile=profile)
            if ray_address is None:
                result = run_sweep(cfg, out)
            else:
                with ray_cluster(RayConfig(ray_address, num_cpus=num_cpus, gpus=0)) as res:
                    result = run_sweep(cfg, out, map_seeds=RayMap(),
                                       where=f"ray {ray_address} ({res.get('CPU', 0):g} CPUs)")
        console.print(result.summary)
        console.print(f"wrote {', '.join(str(f) for f in result.files)}")

    @ray_app.command("execute")
    def execute(
        policy: Annotated[str, typer.Option(help="Policy (registry name) that places and preempts the jobs.")] = "srtf",
        jobs_file: Annotated[Path | None, typer.Option("--jobs", help="JSON list of jobs (default: a 4-job demo).")]
        = None,
        ray_address: RayAddress = "local",
        gpus: Annotated[float, typer.Option(help="With --ray local: GPU units the node offers.")] = 8.0,
        gpu_resource: GpuResource = "fake_gpu",
        gpu_slice: Annotated[float, typer.Option(help="Ray GPU units per policy GPU (0.5: half-GPU slices).")] = 1.0,
        agents: Annotated[int, typer.Option(help="Tracker/handler actors that read the logs (0: none; each "
                                            "loads MiniLM).")] = 0,
        out: Annotated[Path, typer.Option(help="Job logs, checkpoints and execute.json.")] = Path("results/ray-execute"),
    ) -> None:
        """Run short CPU training jobs as Ray tasks on GPU resources, placed and preempted by a policy."""
        from schedmate.cli import console, user_errors
        from schedmate.deploy.ray.cluster import RayConfig, ray_cluster
        from schedmate.deploy.ray.executor import ExecutorConfig, RayExecutor
        from schedmate.schedulers.registry import make_policy

        with user_errors():
            todo = load_jobs(jobs_file)
            chosen = make_policy(policy)
            rcfg = RayConfig(ray_address or "local", gpus=gpus, gpu_resource=gpu_resource)
            with ray_cluster(rcfg):
                pool = _agents(out, agents) if agents else None
                try:
                    ex = RayExecutor(chosen, out, ExecutorConfig(ray=rcfg, gpu_slice=gpu_slice),
                                     observe=_tracker(pool) if pool else None,
                                     diagnose=_handler(pool) if pool else None)
                    result = ex.run(todo)
                finally:
                    if pool is not None:
                        pool.close()
        doc: dict[str, Any] = {"policy": result.policy, "wall_s": result.wall_s, "summary": result.summary_line(),
               "events": [e.__dict__ for e in result.events],
               "jobs": {j: {"phase": s.phase.value, "restarts": s.restarts, "first_start": s.first_start,
                            "end_time": s.end_time, "log": str(result.logs[j])} for j, s in result.jobs.items()},
               "step_time": {j: _last_step_time(r) for j, r in result.readings.items()},
               "diagnoses": {j: getattr(d, "category", str(d)) for j, d in result.diagnoses.items()}}
        out.mkdir(parents=True, exist_ok=True)
        (out / "execute.json").write_text(json.dumps(doc, indent=2, default=str))
        for e in result.events:
            console.print(f"{e.t:7.2f}s  {e.kind:8s} {e.job_id:12s} {e.detail}")
        console.print(result.summary_line())
        if result.readings:
            console.print("tracker step time (s): " + ", ".join(f"{j} {v}" for j, v in doc["step_time"].items()))
        if result.diagnoses:
            console.print("failure handler: " + ", ".join(f"{j} {v}" for j, v in doc["diagnoses"].items()))
        console.print(f"wrote {out / 'execute.json'}")


def _agents(out: Path, n: int) -> Any:
    from schedmate.deploy.ray.actors import RayServiceCore
    from schedmate.deploy.service.config import ServiceConfig

    out.mkdir(parents=True, exist_ok=True)
    pool = RayServiceCore(ServiceConfig(allowed_roots=(out,)), actors=n)
    pool.load()
    return pool


def _tracker(pool: Any) -> Any:
    from schedmate.deploy.service.models import TrackRequest

    return lambda job_id, log: pool.track(TrackRequest(log=str(log.resolve())))


def _handler(pool: Any) -> Any:
    from schedmate.deploy.service.models import DiagnoseRequest

    return lambda job_id, log: pool.diagnose(DiagnoseRequest(log=str(log.resolve()), job_id=job_id))


def _last_step_time(readings: list[Any]) -> float | None:
    last = readings[-1] if readings else None
    st = getattr(last, "step_time", None)
    return round(st.value, 4) if st is not None else None
