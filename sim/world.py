"""The simulated world: what each trace job set out to do, and how long it really ran.

A trace records when each job stopped, never what it planned. Rendering a completed job's code
from its run time hands the advisor the answer (issue 22: median |ln(est/actual)| 0.08 on
Philly). The world keeps the two apart, so that no agent input depends on a job's outcome:

1. **Plan: what the code states.** Drawn from a *reference window* (an earlier, disjoint window
   of the same trace, or an independent draw of the same generator), never from the evaluated
   jobs: the run times of the reference's completed jobs of the same user and size class
   (at least `min_group` of them; else the size class; else all), at a quantile that is a hash
   of (seed, job id), interpolated on the log scale. Swapping two evaluated jobs' outcomes
   changes no plan, hence no artefact byte (`tests/test_world.py`).
2. **Run time** = the artefact's start-up x g + the train and eval time its config implies
   (planned steps x the workload's step time, `expected_perf`) x f, with f = exp(N(0,
   `step_sigma`)) the job's own step-time factor and g = exp(N(0, `startup_sigma` = 0.5)) its
   start-up factor (image pulls, data staging, rendezvous: minutes-long jobs are mostly start-up,
   and a start-up known to the second would make them trivially predictable).
   `step_sigma` = 0.3 is an assumption, not a measurement: one
   config on a shared cluster runs at different speeds with placement, input pipeline, node
   generation and co-location (Lucid's `colocate_info.csv` alone moves a job's speed by 0-35%);
   the value curve (`experiment value-curve`) shows what estimate quality is worth on each axis.
3. **Early stops.** A job the trace marks failed or cancelled stops early. A trace with no
   status column gets the non-complete rate of its cluster from Acme's `cluster_summary.csv`
   (`EarlyStops.for_trace`: Philly 39.6%, Helios 37.6%, split into failed and cancelled as the
   table does), drawn by hash. Stop point: a failed job stops within its first minutes with
   probability `quick_share` = 0.6 (Acme, logs.md §2.1: most script failures happen within
   minutes of starting), at start-up + Exp(mean `quick_mean_s` = 300 s); otherwise, as every
   cancelled job (user cancellations, early stopping), at U(0, 1) of its run.

History comes from the same world: `realise` the reference window's jobs with the same rules
(their plans from the reference itself; they are never evaluated).

Pure functions of (seed, job, reference): no I/O, no models.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from statistics import NormalDist

from schedmate.schedulers.job import FinalStatus, JobSpec
from schedmate.sim.artefacts import Artefact, plan_artefact, unit_hash
from schedmate.synthetic.jobs.history import expected_perf
from schedmate.synthetic.jobs.mapping import size_class

__all__ = ["EarlyStops", "Histories", "PLANNED_RUN_KEY", "PlanPool", "WORLD_KEY", "WorldModel", "history_window", "realise",
           "realise_one", "realise_planned", "run_plan", "stop_shares"]

WORLD_KEY = "world"  # JobSpec.attributes[WORLD_KEY]: how the world made the job (engine-side truth)
# JobSpec.attributes[PLANNED_RUN_KEY]: seconds the job's code runs at its workload's nominal speed
# (start-up, train and eval as its config states them, no factor of its own): what a user who
# states a length can know. Plan-only, like `planned_work` (which the code only approximates).
PLANNED_RUN_KEY = "planned_run_s"
_NORMAL = NormalDist()


@dataclass(frozen=True)
class EarlyStops:
    """Share of jobs that stop early when the trace has no status column, and where they stop."""

    failed_share: float = 0.0
    cancelled_share: float = 0.0
    quick_share: float = 0.6  # of failures: in the first minutes (Acme: most script failures)
    quick_mean_s: float = 300.0  # mean time after start-up of a quick failure

    @classmethod
    def for_trace(cls, name: str) -> EarlyStops:
        """Acme's `cluster_summary.csv` rates (GPU jobs): fail / cancel."""
        rates = {"philly": (0.305, 0.09), "helios": (0.155, 0.221), "seren": (0.429, 0.075), "kalos": (0.397, 0.062)}
        fail, cancel = rates.get(name.lower(), (0.0, 0.0))
        return cls(failed_share=fail, cancelled_share=cancel)


@dataclass(frozen=True)
class WorldModel:
    step_sigma: float = 0.3  # per-job step-time factor, log-normal (see the module docstring)
    startup_sigma: float = 0.5  # per-job start-up factor, log-normal: image pulls, data staging, rendezvous
    min_group: int = 20  # reference jobs a (user, size class) group needs to set a user's plans
    early: EarlyStops = field(default_factory=EarlyStops)


@dataclass(frozen=True)
class PlanPool:
    """Sorted log run times of a reference window's completed jobs, by group."""

    by_user: dict[tuple[str, str], tuple[float, ...]]
    by_class: dict[str, tuple[float, ...]]
    everything: tuple[float, ...]
    min_group: int = 20

    @classmethod
    def fit(cls, reference: Sequence[JobSpec], *, min_group: int = 20) -> PlanPool:
        done = [s for s in reference if s.status is FinalStatus.COMPLETED and s.duration > 0] or [
            s for s in reference if s.duration > 0]
        if not done:
            raise ValueError("the reference window has no job with a run time to plan from")
        users: dict[tuple[str, str], list[float]] = defaultdict(list)
        classes: dict[str, list[float]] = defaultdict(list)
        for s in done:
            x = math.log(max(s.duration, 1.0))
            users[(s.user or "-", size_class(s.num_gpus))].append(x)
            classes[size_class(s.num_gpus)].append(x)
        return cls(by_user={k: tuple(sorted(v)) for k, v in users.items() if len(v) >= min_group},
                   by_class={k: tuple(sorted(v)) for k, v in classes.items()},
                   everything=tuple(sorted(x for v in classes.values() for x in v)), min_group=min_group)

    def group(self, spec: JobSpec) -> tuple[float, ...]:
        cls_ = size_class(spec.num_gpus)
        return (self.by_user.get((spec.user or "-", cls_)) or
                (self.by_class.get(cls_) if len(self.by_class.get(cls_, ())) >= self.min_group else None) or
                self.everything)

    def plan(self, spec: JobSpec, seed: int) -> float:
        """Seconds of planned work for `spec`: a quantile of its group, interpolated in log space."""
        xs = self.group(spec)
        u = unit_hash("plan", seed, spec.job_id)
        pos = u * (len(xs) - 1)
        i = int(pos)
        x = xs[i] if i + 1 >= len(xs) else xs[i] + (pos - i) * (xs[i + 1] - xs[i])
        return float(math.exp(x))


def _normal(*parts: object) -> float:
    return _NORMAL.inv_cdf(min(max(unit_hash(*parts), 1e-12), 1 - 1e-12))


def _stop(spec: JobSpec, seed: int, early: EarlyStops) -> FinalStatus:
    if spec.status is not FinalStatus.COMPLETED or early.failed_share + early.cancelled_share <= 0:
        return spec.status
    u = unit_hash("early-stop", seed, spec.job_id)
    if u < early.failed_share:
        return FinalStatus.FAILED
    if u < early.failed_share + early.cancelled_share:
        return FinalStatus.CANCELLED
    return FinalStatus.COMPLETED


def realise_one(spec: JobSpec, seed: int, pool: PlanPool, model: WorldModel = WorldModel()) -> tuple[JobSpec, Artefact]:
    """The job as the world runs it, and its artefact (rendered from the plan alone)."""
    return run_plan(spec, seed, pool.plan(spec, seed), model)


def run_plan(spec: JobSpec, seed: int, plan: float, model: WorldModel = WorldModel()) -> tuple[JobSpec, Artefact]:
    """The job as the world runs it when it sets out to do `plan` seconds of work (rules 2-3 of
    the module docstring), and its artefact, rendered from the plan alone."""
    blind = replace(spec, attributes={**spec.attributes, "planned_work": plan})
    art = plan_artefact(blind, seed)
    perf = expected_perf(art.config)
    factor = math.exp(model.step_sigma * _normal("step-factor", seed, spec.job_id))
    startup = perf.startup_s * math.exp(model.startup_sigma * _normal("startup-factor", seed, spec.job_id))
    full = startup + (perf.train_s + perf.eval_s) * factor
    status = _stop(spec, seed, model.early)
    run = full
    cause = "completed"
    if status is not FinalStatus.COMPLETED:
        u = unit_hash("stop-point", seed, spec.job_id)
        quick = status is FinalStatus.FAILED and unit_hash("quick", seed, spec.job_id) < model.early.quick_share
        if quick:
            run = min(full, startup - model.early.quick_mean_s * math.log(max(1e-12, 1.0 - u)))
            cause = "failed-early"
        else:
            run = full * max(u, 1e-3)
            cause = "failed" if status is FinalStatus.FAILED else "cancelled"
    nominal = perf.startup_s + perf.train_s + perf.eval_s  # what the code runs at nominal speed: what its user expects
    world = {"plan_s": round(plan, 3), "full_run_s": round(full, 3), "startup_s": round(startup, 3), "step_factor": round(factor, 5),
             "stop": cause, "trace_duration_s": spec.duration, "trace_status": spec.status.value}
    attrs = {**spec.attributes, "planned_work": plan, PLANNED_RUN_KEY: round(nominal, 3), WORLD_KEY: world}
    out = replace(spec, duration=max(1.0, run), status=status, work=None, attributes=attrs)
    return out, art


def realise(specs: Sequence[JobSpec], seed: int, reference: Sequence[JobSpec], model: WorldModel = WorldModel()) -> list[JobSpec]:
    """`specs` as the world runs them (same order, same ids and submit times); plans from
    `reference` (an earlier window: never the evaluated jobs themselves)."""
    pool = PlanPool.fit(reference, min_group=model.min_group)
    if any(s.status is not FinalStatus.COMPLETED for s in specs):
        model = replace(model, early=replace(model.early, failed_share=0.0, cancelled_share=0.0))  # the trace says who stopped
    return [realise_one(s, seed, pool, model)[0] for s in specs]


def realise_planned(specs: Sequence[JobSpec], seed: int, model: WorldModel = WorldModel()) -> list[JobSpec]:
    """Jobs of a *generator* as the world runs them. A generator (the Ares spec's §6.1 trace, say)
    draws what each job sets out to do before anything happens to it, so its `duration` is the
    plan, not an outcome: each job's plan is its own drawn duration, and its run time, start-up
    and early stop come from the rules above. Swapping two jobs' realised outcomes changes no
    plan, hence no artefact byte. Trace jobs, whose duration *is* their outcome, take `realise`."""
    return [run_plan(s, seed, max(1.0, s.duration), model)[0] for s in specs]


def stop_shares(specs: Sequence[JobSpec]) -> dict[str, float]:
    """Shares of early stops in a realised window (for reports)."""
    stops = [str((s.attributes.get(WORLD_KEY) or {}).get("stop", "?")) for s in specs]
    n = max(1, len(stops))
    return {k: round(sum(1 for x in stops if x == k) / n, 4) for k in ("completed", "failed-early", "failed", "cancelled")}


def history_window(reference: Sequence[JobSpec], seed: int, model: WorldModel = WorldModel(),
                   *, prefix: str = "hist") -> list[JobSpec]:
    """An earlier window's jobs as the world ran them, to ingest as history: plans from the
    window itself (it is never evaluated), ids prefixed so they never collide with evaluated
    jobs, in submit order."""
    jobs = [replace(s, job_id=f"{prefix}-{s.job_id}") for s in sorted(reference, key=lambda s: (s.submit_time, s.job_id))]
    return realise(jobs, seed, jobs, model)  # renamed first: no hash draw shared with an evaluated id


class Histories:
    """The history each evaluated window starts with, looked up by (its job ids, seed): the
    `history_for` hook of `SemanticSources`, filled by the experiment that built the windows."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, int], list[JobSpec]] = {}

    @staticmethod
    def _key(specs: Sequence[JobSpec]) -> str:
        import hashlib

        return hashlib.sha256("\x1f".join(s.job_id for s in specs).encode()).hexdigest()

    def add(self, evaluated: Sequence[JobSpec], seed: int, history: Sequence[JobSpec]) -> None:
        self._by_key[(self._key(evaluated), seed)] = list(history)

    def __call__(self, specs: Sequence[JobSpec], seed: int) -> list[JobSpec]:
        return list(self._by_key.get((self._key(specs), seed), []))
