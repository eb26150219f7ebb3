"""Case study: what SchedMate's Slurm time limits are worth under EASY backfilling, and what they cost.

`schedmate experiment slurm`. Slurm's backfill plans with time limits; a limit far above the run
time hides the gap a job could fill, one below it kills the job (TIMEOUT). Arms, each on EASY
backfilling (`schedulers/policies/easy.py`, FCFS priority, kill at the limit):

- `users`: users' `--time` requests (`deploy/slurm/user_requests.py`: modal round values,
  mostly large over-asks, a share at MaxTime; jobs without one get the partition default);
- `default`: nobody gives `--time`: every job gets the partition default (MaxTime, 7 days);
- `schedmate`: nobody gives `--time` and job_submit.lua sets the deployed rule, ceil(1.2 x
  max(p90, mean)) minutes of the advisor's estimate (`deploy/slurm/timelimit.time_limit`,
  the function `/v1/slurm/time-limit` answers with), capped at MaxTime; a job the advisor has no
  estimate for keeps the default;
- `schedmate+extend`: the same plus progress-aware extension (`deploy/slurm/extend.decide`,
  the rule the live extender runs, with its defaults: looked at 15 min before expiry, margin 1.2,
  5 min slack, cap +24 h);
- `schedmate+extend/min15` (sensitivity, not the deployed rule): the same with SchedMate's limit
  at least 15 minutes (one value, fixed before any run: the extender's look-ahead window, so a
  job's first progress lines can be seen before its limit can expire); it shows what the
  start-up kills cost, not a tuned optimum;
- `oracle`: each job's limit is its true run time rounded up to a minute (never killed).

A job killed at its limit loses its progress (no checkpoint: the cost's upper bound; the GPU-hours
lost with 30-minute checkpoints are reported beside it) and its user resubmits it `resubmit_s`
later with their own request (MaxTime if they had none), at least twice the limit that killed it;
the resubmission is never SchedMate's. A job killed at MaxTime resumes from a checkpoint.

**The world is the other case studies'** (`sim/world.py`): each evaluated job's plan comes
from an earlier window of the trace, its run time from its plan x its own step-time factor, and
failed/cancelled jobs stop early; the advisor's history is that earlier window as the world ran
it (never the evaluated jobs), and the advisor (`SemanticSources`: the real extractor, MiniLM,
Redis, `estimate_from_pool` through `agents.stack`'s defaults) reads each job's generated code.
Each job is advised once, at submission, from that history (the epilog's in-run records are not
added: both SchedMate arms get the same answers). The extension arm reads what the job's progress
lines would state (step, planned steps, step time: the world's own numbers, no tracker noise; a
job still in start-up has no progress line and is not extended); the live extender reads the same
from a real log with the Metric Tracker (`tests/test_slurm.py`).

Traces: `acme` (Acme-like synthetic, `standalone.load_jobs`), `philly` (the first `limit` jobs of
2-8 October 2017 in Sia's Philly trace), `synthetic` (small, for tests). The cluster (8-GPU nodes)
is sized on the users' arm so that its mean wait is >= 30% of its mean JCT; the same for every arm.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from schedmate.deploy.slurm.extend import ExtendConfig, Progress, decide
from schedmate.deploy.slurm.timelimit import DEFAULT_MARGIN, time_limit
from schedmate.deploy.slurm.user_requests import UserRequestModel
from schedmate.errors import BadInput
from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.engine import SimConfig, SimResult, Simulator
from schedmate.schedulers.job import JobSpec, JobState
from schedmate.schedulers.policies.easy import EasyBackfill, Kill
from schedmate.schedulers.policy import ClusterView
from schedmate.sim.experiments.common import MakeSource, size_cluster
from schedmate.sim.experiments.quality import estimate_quality, merge_quality, quality_line, without_errors
from schedmate.sim.experiments.sources import SemanticSources, use_history
from schedmate.sim.experiments.standalone import load_jobs
from schedmate.sim.world import WORLD_KEY, EarlyStops, Histories, WorldModel, history_window, realise, stop_shares

__all__ = ["ARMS", "SlurmSetup", "LimitPlan", "arm_rule", "run_slurm_experiment", "format_table"]

ARMS = ("users", "default", "schedmate", "schedmate+extend", "schedmate+extend/min15", "oracle")
SENSITIVITY_ARMS = ("schedmate+extend/min15",)  # not the deployed rule: a candidate, labelled as such
TRACES = ("acme", "philly", "synthetic")
BSLD_TAU_S = 10.0  # bounded slowdown's floor on run time (Feitelson's usual 10 s)


@dataclass(frozen=True)
class SlurmSetup:
    """Everything but the arm, fixed across arms and seeds."""

    requests: UserRequestModel = field(default_factory=UserRequestModel)
    margin: float = DEFAULT_MARGIN  # the deployed rule's margin on p90
    extend: ExtendConfig = field(default_factory=lambda: ExtendConfig(enabled=True))
    extend_every_s: float = 60.0  # the extender's pass interval (`schedmate slurm extend --every`)
    resubmit_s: float = 1800.0  # a user notices a TIMEOUT and resubmits (assumption)
    checkpoint_s: float = 1800.0  # for the "lost with checkpoints" figure only
    gpus_per_node: int = 8
    queue_target: float = 0.3  # sizing: users' arm mean wait / mean JCT


@dataclass(frozen=True)
class LimitPlan:
    """Per job: the user's request (None: no --time), SchedMate's limit (None: no estimate), the truth."""

    user: Mapping[str, float | None]
    schedmate: Mapping[str, float | None]
    truth: Mapping[str, float]
    full_run: Mapping[str, float]
    startup: Mapping[str, float]
    # jobs whose advisor p90 is its point estimate: no spread measured (one matched job)
    no_spread: frozenset[str] = frozenset()


@dataclass
class _Rule:
    """A `LimitRule` for one arm (see the module docstring)."""

    arm: str
    plan: LimitPlan
    setup: SlurmSetup
    check_before_s: float = 0.0
    check_every_s: float = 0.0
    resubmit_s: float = 0.0
    original: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.resubmit_s = self.setup.resubmit_s
        if self.arm.startswith("schedmate+extend"):
            self.check_before_s = self.setup.extend.check_before_s
            self.check_every_s = self.setup.extend_every_s

    def initial(self, job: JobState, view: ClusterView) -> tuple[float, str]:
        jid, req = job.job_id, self.setup.requests
        if self.arm == "users":
            own = self.plan.user.get(jid)
            return (own, "user") if own is not None else (req.default_s, "default")
        if self.arm == "oracle":
            return min(req.max_time_s, max(60.0, math.ceil(self.plan.truth[jid] / 60.0) * 60.0)), "oracle"
        if self.arm.startswith("schedmate"):
            limit = self.plan.schedmate.get(jid)
            if limit is not None and self.arm.endswith("/min15"):
                limit = min(max(limit, 900.0), req.max_time_s)
            # capped at MaxTime, SchedMate's limit is the partition's: a kill there is MaxTime's, in every arm
            if limit is not None and limit < req.max_time_s:
                self.original[jid] = limit
                return limit, "schedmate"
        return req.default_s, "default"

    def after_kill(self, job: JobState, view: ClusterView, limit: float) -> tuple[float, str]:
        """The user's own request, at least twice the limit that killed the job, at most MaxTime."""
        own = self.plan.user.get(job.job_id)
        top = self.setup.requests.max_time_s
        return min(top, max(own if own is not None else top, 2.0 * limit)), "user"

    def extend(self, job: JobState, view: ClusterView, limit: float, source: str) -> float | None:
        if source != "schedmate" or not self.arm.startswith("schedmate+extend") or job.first_start is None:
            return None
        elapsed = view.now - job.first_start  # SchedMate's limits hold for first attempts only
        progress = _progress(view.progress(job), self.plan.startup[job.job_id], self.plan.full_run[job.job_id])
        action, new, _ = decide(progress, elapsed_s=elapsed, limit_s=limit, original_s=self.original[job.job_id],
                                max_time_s=self.setup.requests.max_time_s, config=self.setup.extend)
        return new if action == "extend" else None


def _progress(done: float, startup: float, full: float) -> Progress | None:
    """What the job's progress lines state after `done` work-seconds: nothing during start-up;
    then step = seconds of training done, planned = the full run's, at 1 s per step."""
    if done <= startup:
        return None
    return Progress(step=int(done - startup), planned=int(math.ceil(full - startup)), step_time_s=1.0,
                    lines=max(1, int(done - startup)), last_line_age_s=0.0)


def arm_rule(arm: str, plan: LimitPlan, setup: SlurmSetup) -> _Rule:
    if arm not in ARMS:
        raise BadInput(f"unknown arm {arm!r}; choose from {', '.join(ARMS)}")
    return _Rule(arm, plan, setup)


# ================================================================================= world and advice


def _earlier(trace: str, *, n_jobs: int, limit: int | None) -> tuple[list[JobSpec], list[JobSpec]] | None:
    evaluated = load_jobs(trace, limit=limit, n_jobs=n_jobs, seed=0)
    earlier = load_jobs(trace, limit=limit, n_jobs=n_jobs, seed=0, earlier=True)
    if not evaluated or not earlier:
        return None
    return evaluated, earlier


def world_jobs(trace: str, seed: int, *, n_jobs: int, limit: int | None) -> tuple[list[JobSpec], list[JobSpec]] | None:
    """(evaluated jobs as the world runs them, with early stops; the earlier window as history)."""
    loaded = _earlier(trace, n_jobs=n_jobs, limit=limit)
    if loaded is None:
        return None
    evaluated, earlier = loaded
    model = WorldModel(early=EarlyStops.for_trace("philly" if trace != "acme" else "seren"))
    return realise(evaluated, seed, earlier, model), history_window(earlier, seed, model)


def limit_plan(jobs: Sequence[JobSpec], seed: int, setup: SlurmSetup, advice: Mapping[str, Any]) -> LimitPlan:
    """Each job's user request, SchedMate limit (from `advice`: job id -> AdvisorInsight | None) and truth."""
    req = setup.requests
    user, sm, truth, full, startup = {}, {}, {}, {}, {}
    no_spread: set[str] = set()
    max_min = int(req.max_time_s // 60)
    for s in jobs:
        world = s.attributes.get(WORLD_KEY) or {}
        full[s.job_id] = float(world.get("full_run_s", s.duration))
        startup[s.job_id] = float(world.get("startup_s", 0.0))
        truth[s.job_id] = s.duration
        user[s.job_id] = req.request(s.job_id, full[s.job_id], seed)
        ins = advice.get(s.job_id)
        est = None if ins is None else {"duration_s": ins.duration_s, "duration_p90_s": ins.duration_p90_s,
                                        "n_matches": len(ins.similar_ids)}
        decision = time_limit(est, margin=setup.margin, max_minutes=max_min)
        sm[s.job_id] = None if decision.minutes is None else decision.minutes * 60.0
        if est is not None and est["duration_s"] and est["duration_p90_s"] and est["duration_p90_s"] <= est["duration_s"]:
            no_spread.add(s.job_id)
    return LimitPlan(user, sm, truth, full, startup, frozenset(no_spread))


def advise_all(source: Any, jobs: Sequence[JobSpec]) -> dict[str, Any]:
    """The advisor's answer for each job, asked once at submission in submit order."""
    return {s.job_id: source.advise(JobState(s)) for s in sorted(jobs, key=lambda s: (s.submit_time, s.job_id))}


# ================================================================================= metrics


def arm_metrics(result: SimResult, policy: EasyBackfill, setup: SlurmSetup,
                startup: Mapping[str, float] | None = None, no_spread: frozenset[str] = frozenset()) -> dict[str, Any]:
    ends = [(j, j.first_start, j.end_time) for j in result.jobs]
    done = [(j, s, e) for j, s, e in ends if s is not None and e is not None]
    jobs = [j for j, _, _ in done]
    wait = np.array([s - j.spec.submit_time for j, s, _ in done], dtype=np.float64)
    jct = np.array([e - j.spec.submit_time for j, _, e in done], dtype=np.float64)
    run = np.array([j.spec.duration for j in jobs], dtype=np.float64)
    bsld = np.maximum(1.0, jct / np.maximum(run, BSLD_TAU_S))
    first = min(j.spec.submit_time for j in result.jobs)
    last = max(j.spec.submit_time for j in result.jobs)
    sm_kills = [k for k in policy.kills if k.source == "schedmate"]
    in_startup = [k for k in sm_kills if startup is not None and k.run_s <= startup.get(k.job_id, 0.0)]
    stats = policy.run_stats()
    n = len(result.jobs)
    return {
        "jobs": n, "unfinished": n - len(jobs),
        "mean_wait_h": float(wait.mean()) / 3600, "p99_wait_h": float(np.percentile(wait, 99)) / 3600,
        "mean_jct_h": float(jct.mean()) / 3600, "p99_jct_h": float(np.percentile(jct, 99)) / 3600,
        "mean_bsld": float(bsld.mean()),
        # busy GPUs while jobs still arrive (the drain after the last arrival is one long job's tail)
        "utilisation": _busy_share(result.timeline, first, last, result.cluster.total_gpus),
        "useful_share": float(sum(j.spec.gpu_time for j in jobs)) / max(1e-9, result.busy_gpu_seconds),
        "killed_by_schedmate": len({k.job_id for k in sm_kills}),
        "killed_by_schedmate_share": len({k.job_id for k in sm_kills}) / max(1, n),
        "killed_by_other_limits": len({k.job_id for k in policy.kills if k.source != "schedmate"}),
        # killed before the job's first progress line (its start-up outlasted the limit): no extender can tell
        # such a job from a hung one
        "killed_in_startup": len(in_startup),
        # ... of which the advisor's p90 was its point estimate (one matched job: no spread measured)
        "killed_in_startup_no_spread": sum(1 for k in in_startup if k.job_id in no_spread),
        "gpu_h_lost_schedmate": _lost(sm_kills) / 3600,
        "gpu_h_lost_schedmate_ckpt": _lost(sm_kills, setup.checkpoint_s) / 3600,
        "gpu_h_total": float(sum(j.spec.gpu_time for j in result.jobs)) / 3600,
        "extended_jobs": stats["extended_jobs"], "extensions": stats["extensions"],
        "backfilled": stats["counts"].get("backfilled", 0),
        "limit_sources": {k[6:]: v for k, v in stats["counts"].items() if k.startswith("limit_")},
        "sim_wall_s": round(result.wall_seconds, 2),
    }


def _busy_share(timeline: np.ndarray, t0: float, t1: float, gpus: int) -> float:
    """Mean busy share of the GPUs over [t0, t1] (the timeline's busy count is a step function)."""
    if len(timeline) == 0 or t1 <= t0:
        return math.nan
    t, busy = timeline[:, 0], timeline[:, 1]
    edges = np.clip(np.append(t, t1), t0, t1)
    return float(np.sum(busy * np.diff(edges)) / (gpus * (t1 - t0)))


def _lost(kills: Sequence[Kill], checkpoint_s: float | None = None) -> float:
    if checkpoint_s:
        return float(sum(k.gpus * (k.run_s % checkpoint_s) for k in kills))
    return float(sum(k.gpus * k.run_s for k in kills))


def _simulate(jobs: Sequence[JobSpec], gpus: int, rule: _Rule, setup: SlurmSetup, seed: int) -> tuple[SimResult, EasyBackfill]:
    cluster = ClusterSpec.homogeneous(max(1, gpus // setup.gpus_per_node), setup.gpus_per_node)
    capped = [s if s.num_gpus <= cluster.total_gpus else dataclasses.replace(s, num_gpus=cluster.total_gpus) for s in jobs]
    policy = EasyBackfill(rule=rule)
    policy.name = f"easy/{rule.arm}"
    result = Simulator(capped, cluster, policy, SimConfig(seed=seed)).run()
    return result, policy


# ================================================================================= experiment


@dataclass
class SlurmResult:
    out_dir: Path | None
    rows: list[dict[str, Any]]
    aggregate: list[dict[str, Any]]
    details: dict[str, Any]
    summary: str

    def __str__(self) -> str:
        return self.summary


def run_slurm_experiment(
    out_dir: Path | None,
    *,
    make_source: MakeSource,
    source_label: str,
    traces: Sequence[str] = ("acme",),
    seeds: int | Sequence[int] = 3,
    n_jobs: int = 2000,
    limit: int | None = 2000,
    gpus: int | None = None,
    arms: Sequence[str] = ARMS,
    setup: SlurmSetup = SlurmSetup(),
    progress: Callable[[str], None] | None = None,
) -> SlurmResult:
    """Run the case study; writes `slurm.json` and `summary.txt` to `out_dir` when given."""
    say = progress or (lambda _m: None)
    seed_list = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    for arm in arms:
        arm_rule(arm, LimitPlan({}, {}, {}, {}, {}), setup)  # unknown arms fail before any run
    started = time.perf_counter()
    histories = Histories()
    use_history(make_source, histories)
    rows: list[dict[str, Any]] = []
    details: dict[str, Any] = {"source": source_label, "sizing": {}, "skipped_traces": {}, "advisor_quality": {},
                               "world_stops": {}, "requests": {}, "setup": _jsonable(dataclasses.asdict(setup))}
    for trace in traces:
        if trace not in TRACES:
            raise BadInput(f"unknown trace {trace!r}; choose from {', '.join(TRACES)}")
        n = n_jobs if trace != "synthetic" else min(n_jobs, 400)
        cluster_gpus = gpus
        quality: list[dict[str, Any]] = []
        for seed in seed_list:
            world = world_jobs(trace, seed, n_jobs=n, limit=limit if trace == "philly" else None)
            if world is None:
                details["skipped_traces"][trace] = "trace file (or its earlier window) absent under ../shared/data"
                break
            jobs, history = world
            histories.add(jobs, seed, history)
            details["world_stops"][f"{trace}/seed{seed}"] = stop_shares(jobs)
            say(f"{trace} seed {seed}: advising {len(jobs)} jobs")
            source = make_source(jobs, seed, 1.0)
            try:
                advice = advise_all(source, jobs)
                log = source.advice_log()
                if log is not None:
                    quality.append(estimate_quality(log, jobs))
            finally:
                if not isinstance(make_source, SemanticSources):  # it closes what it made
                    source.close()
            plan = limit_plan(jobs, seed, setup, advice)
            details["requests"][f"{trace}/seed{seed}"] = _request_stats(plan, setup)
            if cluster_gpus is None:
                cluster_gpus = _size(trace, jobs, plan, setup, seed, details, say)
            for arm in arms:
                say(f"{trace} seed {seed}: {arm} on {cluster_gpus} GPUs")
                result, policy = _simulate(jobs, cluster_gpus, arm_rule(arm, plan, setup), setup, seed)
                rows.append({"trace": trace, "arm": arm, "seed": seed, "gpus": cluster_gpus,
                             **arm_metrics(result, policy, setup, plan.startup, plan.no_spread)})
        if quality:
            details["advisor_quality"][trace] = without_errors(merge_quality(quality))
    details["wall_seconds"] = round(time.perf_counter() - started, 1)
    agg = aggregate(rows)
    summary = format_table(agg, details)
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        config = {"traces": list(traces), "seeds": seed_list, "n_jobs": n_jobs, "limit": limit, "gpus": gpus,
                  "arms": list(arms), "source": source_label}
        doc = {"config": config, "aggregate": agg, "rows": rows, "details": details}
        (out_dir / "slurm.json").write_text(json.dumps(doc, indent=1, default=str))
        (out_dir / "summary.txt").write_text(summary + "\n")
    return SlurmResult(out_dir, rows, agg, details, summary)


def _size(trace: str, jobs: Sequence[JobSpec], plan: LimitPlan, setup: SlurmSetup, seed: int,
          details: dict[str, Any], say: Callable[[str], None]) -> int:
    def share(g: int) -> float:
        say(f"{trace}: sizing with the users' arm on {g} GPUs")
        result, policy = _simulate(jobs, g, arm_rule("users", plan, setup), setup, seed)
        m = arm_metrics(result, policy, setup)
        return m["mean_wait_h"] / m["mean_jct_h"] if m["mean_jct_h"] > 0 else 0.0

    start = 1024 if trace != "synthetic" else 64
    sizing = size_cluster(share, start_gpus=start, target=setup.queue_target, gpus_per_node=setup.gpus_per_node)
    details["sizing"][trace] = {**dataclasses.asdict(sizing), "met": sizing.met}
    return sizing.gpus


def _request_stats(plan: LimitPlan, setup: SlurmSetup) -> dict[str, Any]:
    asked = [(plan.user[j], plan.truth[j]) for j in plan.user if plan.user[j] is not None]
    sm = [(plan.schedmate[j], plan.truth[j]) for j in plan.schedmate if plan.schedmate[j] is not None]
    n = max(1, len(plan.user))

    def med_ratio(pairs: list[tuple[float | None, float]]) -> float | None:
        return float(np.median([a / max(1.0, t) for a, t in pairs if a is not None])) if pairs else None

    return {
        "no_request_share": round(1 - len(asked) / n, 4),
        "at_max_share": round(sum(1 for a, _ in asked if a == setup.requests.max_time_s) / n, 4),
        "distinct_requests": len({a for a, _ in asked}),
        "median_request_over_run": med_ratio(asked),
        "schedmate_limit_share": round(len(sm) / n, 4),
        "median_schedmate_over_run": med_ratio(sm),
        "schedmate_below_run_share": round(sum(1 for a, t in sm if a is not None and a < t) / n, 4),
    }


_METRICS = ("mean_wait_h", "p99_wait_h", "mean_jct_h", "p99_jct_h", "mean_bsld", "utilisation", "killed_by_schedmate",
            "killed_by_schedmate_share", "killed_by_other_limits", "killed_in_startup", "killed_in_startup_no_spread",
            "gpu_h_lost_schedmate", "gpu_h_lost_schedmate_ckpt", "extended_jobs", "backfilled", "gpu_h_total")


def aggregate(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Mean and min/max over seeds per (trace, arm), in the arms' order."""
    out = []
    keys = list(dict.fromkeys((r["trace"], r["arm"]) for r in rows))
    for trace, arm in keys:
        group = [r for r in rows if r["trace"] == trace and r["arm"] == arm]
        rec: dict[str, Any] = {"trace": trace, "arm": arm, "seeds": len(group), "gpus": group[0]["gpus"]}
        for m in _METRICS:
            vals = [float(r[m]) for r in group]
            rec[m] = float(np.mean(vals))
            rec[f"{m}_min"], rec[f"{m}_max"] = min(vals), max(vals)
        out.append(rec)
    return out


def format_table(agg: Sequence[Mapping[str, Any]], details: Mapping[str, Any]) -> str:
    """The arms table per trace, the headline check, and the advisor's estimate quality beside it."""
    lines = [f"slurm experiment [{details.get('source')}]"]
    for trace in dict.fromkeys(r["trace"] for r in agg):
        rows = [r for r in agg if r["trace"] == trace]
        lines.append(f"{trace}: {rows[0]['gpus']} GPUs, {rows[0]['seeds']} seed(s), EASY backfilling; mean over seeds")
        lines.append(f"  {'arm':<24}{'wait h':>8}{'p99 wait':>9}{'JCT h':>8}{'p99 JCT':>9}{'BSLD':>8}{'util':>7}"
                     f"{'SM-killed':>10}{'lost GPU-h':>11}{'extended':>9}")
        for r in rows:
            lines.append(f"  {r['arm']:<24}{r['mean_wait_h']:>8.2f}{r['p99_wait_h']:>9.1f}{r['mean_jct_h']:>8.2f}"
                         f"{r['p99_jct_h']:>9.1f}{r['mean_bsld']:>8.1f}{r['utilisation']:>7.1%}"
                         f"{r['killed_by_schedmate_share']:>10.2%}{r['gpu_h_lost_schedmate']:>11.1f}"
                         f"{r['extended_jobs']:>9.0f}")
        by = {r["arm"]: r for r in rows}
        for arm, label in (("schedmate+extend", "SchedMate limits + extension"),
                           ("schedmate+extend/min15", "sensitivity, limits >= 15 min + extension")):
            if "users" not in by or arm not in by:
                continue
            u, s = by["users"], by[arm]
            cut = 1 - s["mean_wait_h"] / u["mean_wait_h"] if u["mean_wait_h"] > 0 else math.nan
            ok = cut >= 0.30 and s["killed_by_schedmate_share"] <= 0.01
            lines.append(f"  {label} vs users' requests: mean wait cut {cut:.0%} (target >= 30%), "
                         f"{s['killed_by_schedmate_share']:.2%} of jobs killed by a SchedMate limit (target <= 1%; "
                         f"{s['gpu_h_lost_schedmate']:.1f} of {s['gpu_h_total']:.0f} GPU-h lost, "
                         f"{s['gpu_h_lost_schedmate_ckpt']:.1f} with 30-min checkpoints; "
                         f"{s['killed_in_startup']:.0f} of {s['killed_by_schedmate']:.0f} killed jobs per seed had "
                         f"printed no progress line yet, {s['killed_in_startup_no_spread']:.0f} of those with p90 = "
                         f"the estimate: one matched job, no spread): {'met' if ok else 'NOT met'}")
        q = details.get("advisor_quality", {}).get(trace)
        if q is not None:
            lines.append(f"  {quality_line(q)}")
    return "\n".join(lines)


def _jsonable(d: Any) -> Any:
    return json.loads(json.dumps(d, default=str))
