"""A real executor: jobs run as Ray tasks on (fake or real) GPU resources, placed and preempted by
the same policy objects the simulator drives.

The loop is the engine's, on a wall clock: jobs arrive, the policy's `schedule` (and `optimize`
every `round_interval`) reads a `ClusterView` of the live state and returns decisions, and the
executor carries them out on Ray:
- `Start`: a Ray task asking for the placement's GPUs (`resources={"fake_gpu": k}` on a CPU-only
  cluster, `num_gpus=k` on a real one; `gpu_slice` < 1 makes each policy GPU a fraction of a Ray
  GPU), pinned to the Ray node the placement names. The task runs the job's training script
  (`train_job`) as a subprocess whose stdout is the job's log.
- `Preempt`: `ray.cancel` (a KeyboardInterrupt in the task, which stops the training process; a
  forced cancel after `stop_grace_s`), then the job goes back to the queue with the progress its
  own checkpoint holds, and resumes from that checkpoint when started again.
- task end: exit 0 completes the job; anything else is a failure (`on_failure` may requeue it).
Logs feed the Metric Tracker and, for a failed job, the Failure Handler through the optional
`observe` / `diagnose` callables (e.g. a `RayServiceCore`'s `track` and `diagnose`).

Where it departs from the engine: progress between events is assumed to run at speed 1 (what
SRTF's `remaining` and Tiresias' attained service read); on a stop it is set from the job's
checkpoint. Only `Start`, `Preempt` and `Refresh` are carried out, and a placement must lie on one
Ray node; other decisions (resize, migrate, co-locate, cordon) raise `UnsupportedDecision` naming
the policy. Jobs larger than every node are cancelled at arrival, as the engine does.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from schedmate.deploy.ray.cluster import RayConfig
from schedmate.errors import BadInput, Unsupported
from schedmate.schedulers.cluster import ClusterSpec, NodeSpec
from schedmate.schedulers.decisions import Decision, Preempt, Refresh, Start
from schedmate.schedulers.job import JobSpec, JobState, Phase, Placement
from schedmate.schedulers.placement import Consolidate, Placer
from schedmate.schedulers.policy import ClusterView, Policy

__all__ = ["ExecEvent", "ExecResult", "ExecutorConfig", "ExecutorStalled", "RayExecutor", "TrainJob",
           "UnsupportedDecision", "ray_cluster_spec"]


_JOB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class UnsupportedDecision(Unsupported):
    """The policy asked for something the Ray executor cannot carry out (it names the policy)."""


class ExecutorStalled(RuntimeError):
    """Jobs wait, nothing runs, nothing is due: the policy will never start them (or time ran out)."""


@dataclass(frozen=True)
class TrainJob:
    """A job to run: `steps` steps of `step_time` seconds on `gpus` GPUs, `submit_at` seconds in."""

    job_id: str
    gpus: int
    steps: int
    step_time: float = 0.1
    submit_at: float = 0.0
    lr: float = 0.05
    seed: int = 0
    user: str | None = None

    def __post_init__(self) -> None:
        if not _JOB_ID.fullmatch(self.job_id):
            raise BadInput(f"job id {self.job_id!r}: letters, digits and ._- only (it names the job's files)")
        if self.gpus < 1 or self.steps < 1 or self.step_time < 0 or self.submit_at < 0:
            raise BadInput(f"job {self.job_id!r}: gpus >= 1, steps >= 1, step_time >= 0 and submit_at >= 0 are required")

    def spec(self) -> JobSpec:
        """What the policy sees: the nominal duration (steps x step time), as a trace would say."""
        return JobSpec(self.job_id, submit_time=self.submit_at, num_gpus=self.gpus,
                       duration=self.steps * self.step_time, user=self.user)

    def argv(self, checkpoint: Path) -> list[str]:
        return ["-m", "schedmate.deploy.ray.train_job", "--steps", str(self.steps), "--step-time",
                str(self.step_time), "--lr", str(self.lr), "--seed", str(self.seed), "--checkpoint", str(checkpoint)]


@dataclass(frozen=True)
class ExecutorConfig:
    ray: RayConfig = field(default_factory=RayConfig)
    gpu_slice: float = 1.0  # Ray GPU units per policy GPU (0.5: the policy packs half-GPUs)
    cpus_per_job: float = 0.25
    poll_s: float = 0.2  # longest sleep between looks at the clock
    stop_grace_s: float = 5.0  # after a cancel, before a forced one
    max_wall_s: float = 600.0

    def __post_init__(self) -> None:
        if not 0 < self.gpu_slice <= 64 or self.cpus_per_job < 0 or self.poll_s <= 0:
            raise BadInput("gpu_slice in (0, 64], cpus_per_job >= 0 and poll_s > 0 are required")


@dataclass(frozen=True)
class ExecEvent:
    t: float  # seconds since the executor started
    kind: str  # arrive / cancel / start / preempt / finish / fail / requeue
    job_id: str
    detail: str = ""


@dataclass
class ExecResult:
    policy: str
    jobs: dict[str, JobState]
    events: list[ExecEvent]
    logs: dict[str, Path]
    wall_s: float
    readings: dict[str, list[Any]] = field(default_factory=dict)  # `observe` answers per job, in order
    diagnoses: dict[str, Any] = field(default_factory=dict)  # `diagnose` answer of each failed job

    def count(self, kind: str) -> int:
        return sum(e.kind == kind for e in self.events)

    def of(self, job_id: str) -> list[ExecEvent]:
        return [e for e in self.events if e.job_id == job_id]

    def summary_line(self) -> str:
        jobs = self.jobs.values()
        jct = [j.end_time - j.spec.submit_time for j in jobs if j.end_time is not None and j.phase is Phase.COMPLETED]
        return (f"{self.policy}: {len(self.jobs)} jobs in {self.wall_s:.1f} s wall; completed "
                f"{sum(j.phase is Phase.COMPLETED for j in jobs)}, failed {sum(j.phase is Phase.FAILED for j in jobs)}, "
                f"cancelled {sum(j.phase is Phase.CANCELLED for j in jobs)}; {self.count('start')} starts, "
                f"{self.count('preempt')} preemptions; mean JCT {float(np.mean(jct)) if jct else math.nan:.2f} s")


def ray_cluster_spec(resource: str, gpu_slice: float = 1.0) -> tuple[ClusterSpec, list[str]]:
    """The alive Ray nodes that hold `resource`, as a `ClusterSpec` (GPUs = units / `gpu_slice`),
    and each node's Ray id, in the same order."""
    found = sorted((n["NodeID"], n["Resources"].get(resource, 0.0)) for n in ray.nodes() if n.get("Alive"))
    found = [(nid, int(units / gpu_slice + 1e-9)) for nid, units in found if units / gpu_slice >= 1 - 1e-9]
    if not found:
        raise ExecutorStalled(f"no alive Ray node offers the resource {resource!r}")
    spec = ClusterSpec(tuple(NodeSpec(name=f"ray-{nid[:8]}", gpus=g, gpu_type=resource) for nid, g in found))
    return spec, [nid for nid, _ in found]


def _run_job(argv: list[str], log_path: str, pid_path: str, placement: str) -> int:
    """Ray task body: the training process, stopped with the task when Ray cancels it."""
    env = dict(os.environ)
    assigned = ray.get_runtime_context().get_assigned_resources()
    env["SCHEDMATE_PLACEMENT"] = f"{placement} ray {sorted(assigned.items())}"
    with open(log_path, "ab") as log:
        proc = subprocess.Popen([sys.executable, *argv], stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
        Path(pid_path).write_text(str(proc.pid))
        try:
            while proc.poll() is None:
                time.sleep(0.05)
        except KeyboardInterrupt:  # ray.cancel: stop the job's process before the task ends
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            raise
    return int(proc.returncode)


class _Live:
    """The state a `ClusterView` and a `Plan` read (the attributes they take from the engine)."""

    def __init__(self, cluster: ClusterSpec, placer: Placer, seed: int) -> None:
        self.cluster = cluster
        self.placer = placer
        self.rng = np.random.default_rng(seed)
        self.free = cluster.capacity().copy()
        self.free_total = int(self.free.sum())
        self.cordoned = np.zeros(len(cluster.nodes), dtype=bool)
        self.waiting: dict[str, JobState] = {}
        self.running: dict[str, JobState] = {}
        self.jobs: dict[str, JobState] = {}
        self.now = 0.0
        self.wakes: set[float] = set()

    def base_speed(self, spec: JobSpec, placement: Placement) -> float:
        return sum(k for _, k in placement) / spec.num_gpus

    def request_wakeup(self, t: float) -> None:
        self.wakes.add(max(t, self.now))


@dataclass
class _Run:
    ref: Any
    started: float


class RayExecutor:
    """Runs `TrainJob`s under `policy` on the Ray cluster this process is connected to."""

    def __init__(self, policy: Policy, work_dir: Path, config: ExecutorConfig | None = None, *,
                 placer: Placer | None = None, seed: int = 0,
                 observe: Callable[[str, Path], Any] | None = None,
                 diagnose: Callable[[str, Path], Any] | None = None) -> None:
        if not ray.is_initialized():
            raise RuntimeError("Ray is not initialised: use deploy.ray.cluster.ray_cluster first")
        self.policy = policy
        self.config = config or ExecutorConfig()
        self.work_dir = Path(work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        cluster, self.node_ids = ray_cluster_spec(self.config.ray.gpu_resource, self.config.gpu_slice)
        self.state = _Live(cluster, placer or Consolidate(), seed)
        self.view = ClusterView(self.state)  # type: ignore[arg-type]  # _Live duck-types the engine's state
        self.observe, self.diagnose = observe, diagnose
        self._task = ray.remote(max_retries=0)(_run_job)
        self._runs: dict[str, _Run] = {}
        self._specs: dict[str, TrainJob] = {}
        self.events: list[ExecEvent] = []
        self.readings: dict[str, list[Any]] = {}
        self.diagnoses: dict[str, Any] = {}
        self._t0 = 0.0

    # ------------------------------------------------------------------------------- files

    def log_of(self, job_id: str) -> Path:
        return self.work_dir / f"{job_id}.log"

    def checkpoint_of(self, job_id: str) -> Path:
        return self.work_dir / f"{job_id}.ckpt.json"

    def pid_of(self, job_id: str) -> Path:
        return self.work_dir / f"{job_id}.pid"

    # ------------------------------------------------------------------------------- loop

    def run(self, jobs: Iterable[TrainJob]) -> ExecResult:
        """Run every job to an end (completed, failed or cancelled); returns what happened.
        An executor runs once (its policy keeps the state of that run)."""
        if self._specs:
            raise RuntimeError("this executor has run already: build a new one (and policy) for another run")
        st = self.state
        order = sorted(jobs, key=lambda j: (j.submit_at, j.job_id))
        for j in order:
            if j.job_id in self._specs:
                raise BadInput(f"duplicate job id {j.job_id!r}")
            self._specs[j.job_id] = j
            st.jobs[j.job_id] = JobState(j.spec())
            for stale in (self.log_of(j.job_id), self.checkpoint_of(j.job_id), self.pid_of(j.job_id)):
                stale.unlink(missing_ok=True)  # a rerun in the same folder starts from scratch
        arrivals = [st.jobs[j.job_id] for j in order]
        self._t0 = time.monotonic()
        ai, done, n = 0, 0, len(arrivals)
        interval = self.policy.round_interval
        next_round = interval if interval else math.inf
        try:
            while done < n:
                now = self._tick()
                if now > self.config.max_wall_s:
                    raise ExecutorStalled(f"{n - done} job(s) unfinished after {self.config.max_wall_s:.0f} s")
                changed = False
                for job in self._ended():
                    done += self._on_end(job)
                    changed = True
                while ai < n and arrivals[ai].spec.submit_time <= now:
                    done += self._arrive(arrivals[ai])
                    ai += 1
                    changed = True
                due = {t for t in st.wakes if t <= now}
                if due:
                    st.wakes -= due
                    changed = True
                if now >= next_round:
                    next_round = now + interval if interval else math.inf
                    if st.running or st.waiting:
                        self._apply(self.policy.optimize(self.view))
                if changed:
                    self._apply(self.policy.schedule(self.view))
                if done >= n:
                    break
                nxt = min(arrivals[ai].spec.submit_time if ai < n else math.inf, min(st.wakes, default=math.inf),
                          next_round)
                if not self._runs and st.waiting and nxt == math.inf:
                    raise ExecutorStalled(f"policy {self.policy.name!r} left {len(st.waiting)} job(s) waiting "
                                          f"with nothing running: {list(st.waiting)[:5]}")
                wait = max(0.0, min(self.config.poll_s, nxt - self._tick()))
                if self._runs:
                    ray.wait([r.ref for r in self._runs.values()], num_returns=1, timeout=wait)
                else:
                    time.sleep(wait)
        finally:
            for job_id in list(self._runs):
                self._stop(job_id)
        return ExecResult(self.policy.name, dict(st.jobs), list(self.events),
                          {j: self.log_of(j) for j in st.jobs}, self._tick(), self.readings, self.diagnoses)

    def _tick(self) -> float:
        self.state.now = time.monotonic() - self._t0
        return self.state.now

    def _event(self, kind: str, job_id: str, detail: str = "") -> None:
        self.events.append(ExecEvent(round(self.state.now, 3), kind, job_id, detail))

    # ------------------------------------------------------------------------------- arrivals

    def _arrive(self, job: JobState) -> int:
        """Queue the job (1 when it ended at once: too large for every node, or not admitted)."""
        st = self.state
        job.last_update = st.now
        biggest = int(st.cluster.capacity().max())
        if job.spec.num_gpus > biggest or not self.policy.admit(job, self.view):
            job.cancel_reason = (f"asks {job.spec.num_gpus} GPUs; the largest Ray node has {biggest}"
                                 if job.spec.num_gpus > biggest else "rejected by the policy at admission")
            job.phase, job.end_time = Phase.CANCELLED, st.now
            self._event("cancel", job.job_id, job.cancel_reason)
            self.policy.on_finish(job, self.view)
            return 1
        job.phase = Phase.QUEUED
        st.waiting[job.job_id] = job
        self._event("arrive", job.job_id, f"{job.spec.num_gpus} GPUs")
        self.policy.on_arrival(job, self.view)
        return 0

    # ------------------------------------------------------------------------------- decisions

    def _apply(self, decisions: Sequence[Decision] | None) -> None:
        for d in decisions or ():
            if isinstance(d, Start):
                self._start(d)
            elif isinstance(d, Preempt):
                self._preempt(d)
            elif isinstance(d, Refresh):
                continue  # speeds are whatever the job achieves
            else:
                raise UnsupportedDecision(f"policy {self.policy.name!r} asked for {type(d).__name__} "
                                          f"({d}); the Ray executor carries out Start and Preempt only")

    def _start(self, d: Start) -> None:
        st = self.state
        job = st.jobs[d.job_id]
        if not job.phase.is_waiting:
            raise UnsupportedDecision(f"policy {self.policy.name!r} started {d.job_id} while {job.phase.value}")
        if len(d.placement) != 1:
            raise UnsupportedDecision(f"policy {self.policy.name!r} placed {d.job_id} across {len(d.placement)} "
                                      "nodes; the Ray executor runs a job on one node")
        (node, k), = d.placement
        if k > st.free[node]:
            raise UnsupportedDecision(f"policy {self.policy.name!r} over-commits node {node} for {d.job_id}")
        spec = self._specs[d.job_id]
        cfg = self.config
        options: dict[str, Any] = {"num_cpus": cfg.cpus_per_job, **cfg.ray.gpu_request(k * cfg.gpu_slice),
                                   "scheduling_strategy": NodeAffinitySchedulingStrategy(self.node_ids[node], soft=False)}
        where = f"{st.cluster.nodes[node].name}:{k}"
        ref = self._task.options(**options).remote(spec.argv(self.checkpoint_of(d.job_id)), str(self.log_of(d.job_id)),
                                                   str(self.pid_of(d.job_id)), where)
        st.free[node] -= k
        st.free_total -= k
        restarting = job.first_start is not None
        job.placement, job.num_gpus, job.phase = d.placement, k, Phase.PROFILING if d.profiling else Phase.RUNNING
        job.last_update = job.overhead_until = st.now
        job.speed = 1.0
        job.restarts += restarting
        if job.first_start is None:
            job.first_start = st.now
        st.waiting.pop(job.job_id, None)
        st.running[job.job_id] = job
        self._runs[job.job_id] = _Run(ref, st.now)
        self._event("start", job.job_id, f"{where} ({cfg.ray.gpu_resource}={k * cfg.gpu_slice:g})"
                    + (" resumed" if restarting else ""))
        self.policy.on_start(job, self.view)

    def _preempt(self, d: Preempt) -> None:
        st = self.state
        job = st.jobs[d.job_id]
        if job.job_id not in self._runs:
            raise UnsupportedDecision(f"policy {self.policy.name!r} preempted {d.job_id}, which is not running")
        self._stop(job.job_id)
        self._release(job)
        if d.discard_progress:
            self.checkpoint_of(job.job_id).unlink(missing_ok=True)
            job.wasted_gpu_time += job.progress * job.spec.num_gpus
            job.progress = 0.0
        job.checkpoint = job.progress
        job.phase = Phase.PREEMPTED
        st.waiting[job.job_id] = job
        self._event("preempt", job.job_id, f"stopped at {job.progress:.2f} s of {job.spec.duration:.2f} s of work")
        self._observe(job.job_id)
        self.policy.on_requeue(job, self.view)

    def _stop(self, job_id: str) -> None:
        """Cancel the job's task and wait until it is gone (forced after the grace period)."""
        run = self._runs.pop(job_id)
        ray.cancel(run.ref)
        ready, _ = ray.wait([run.ref], timeout=self.config.stop_grace_s)
        if not ready:
            ray.cancel(run.ref, force=True)
            ray.wait([run.ref], timeout=self.config.stop_grace_s)

    def _release(self, job: JobState) -> None:
        """Take the job off its GPUs; its progress is what its checkpoint holds."""
        st = self.state
        dt = st.now - job.last_update
        job.run_time += dt
        job.attained_gpu_time += job.num_gpus * dt
        job.progress = min(job.spec.duration, self._checkpointed(job.job_id))
        for node, k in job.placement:
            st.free[node] += k
            st.free_total += k
        st.running.pop(job.job_id, None)
        job.placement, job.num_gpus, job.speed, job.last_update = (), 0, 0.0, st.now
        job.version += 1

    def _checkpointed(self, job_id: str) -> float:
        path = self.checkpoint_of(job_id)
        try:
            step = int(json.loads(path.read_text())["step"])
        except (OSError, ValueError, KeyError, TypeError):
            step = 0
        return step * self._specs[job_id].step_time

    # ------------------------------------------------------------------------------- ends

    def _ended(self) -> list[JobState]:
        if not self._runs:
            return []
        refs = {r.ref: job_id for job_id, r in self._runs.items()}
        ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=0)
        return [self.state.jobs[refs[r]] for r in ready]

    def _on_end(self, job: JobState) -> int:
        """A task finished by itself: 1 when the job reached its end, 0 when it was requeued."""
        st = self.state
        run = self._runs.pop(job.job_id)
        try:
            rc, why = ray.get(run.ref), ""
        except Exception as exc:  # noqa: BLE001 -- a crashed worker is a failed job, not a crashed executor
            rc, why = -1, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        self._release(job)
        self._observe(job.job_id)
        if rc == 0:
            job.progress = job.spec.duration
            self._end(job, Phase.COMPLETED, "exit 0")
            return 1
        job.failures += 1
        job.failed_once = True
        if self.diagnose is not None:
            self.diagnoses[job.job_id] = _guarded(self.diagnose, job.job_id, self.log_of(job.job_id))
        if self.policy.on_failure(job, self.view):
            job.checkpoint = job.progress
            job.phase = Phase.QUEUED
            st.waiting[job.job_id] = job
            self._event("requeue", job.job_id, f"exit {rc} {why}".strip())
            self.policy.on_requeue(job, self.view)
            return 0
        job.wasted_gpu_time = job.attained_gpu_time
        self._end(job, Phase.FAILED, f"exit {rc} {why}".strip())
        return 1

    def _end(self, job: JobState, phase: Phase, detail: str) -> None:
        job.phase, job.end_time = phase, self.state.now
        self.state.waiting.pop(job.job_id, None)
        self._event("finish" if phase is Phase.COMPLETED else "fail", job.job_id, detail)
        self.policy.on_finish(job, self.view)

    def _observe(self, job_id: str) -> None:
        if self.observe is not None:
            self.readings.setdefault(job_id, []).append(_guarded(self.observe, job_id, self.log_of(job_id)))


def _guarded(fn: Callable[[str, Path], Any], job_id: str, log: Path) -> Any:
    """An agent's answer, or the exception it raised: a tracker or handler that fails (its service
    down, the log outside its roots) must not stop the jobs."""
    try:
        return fn(job_id, log)
    except Exception as exc:  # noqa: BLE001 -- kept as the reading, for the caller to see
        return exc
