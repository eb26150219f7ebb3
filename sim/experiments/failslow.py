"""Fail-slow in the simulator: nodes that degrade (a throttling GPU, a bad NIC) and the standalone
SchedMate-SJF with and without acting on the fail-slow detector.

    schedmate experiment failslow --out OUT [--seeds 3] [--jobs 400]

**The world** (`DegradedWorld`, a policy wrapper, so the engine is unchanged): during a
degradation `(node, start, end, factor)` every job with GPUs on that node runs at `factor` x its
speed; at each start and end the wrapper asks the engine to re-evaluate the speed of the jobs on
the node (`Refresh`), so the change lands in their speed history like any other.

**The source** (`SpeedLogInsights`): the job's log as it would read, rendered from its simulated
speed history alone (nanoGPT-style lines, a per-job solo step time, 2% jitter, warm-up after each
(re)start, from the attempt's start to `now`, at most ~1,500 lines: the log interval grows with
the run), read by the fail-slow detector. It never sees a speed, a node or a degradation: a job
that lands on an already degraded node shows no change in its log and is not caught.

Arms per seed: `sjf` (SchedMate-SJF, history-model estimates, no fail-slow action) and
`sjf+failslow` (the same, acting on the detector: cordon the suspect node, migrate or requeue;
`StandaloneConfig.failslow`), on the same jobs and degradations. Reported: mean / p99 JCT and the
fail-slow counters (detections, migrations, requeues, cordons).
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from schedmate.adapters.insights import NO_FAILSLOW, FailSlowSignal, InsightSource
from schedmate.adapters.standalone import StandaloneConfig, StandaloneSchedMate
from schedmate.agents.tracker.failslow import FailSlowDetector
from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.decisions import Decision, Refresh
from schedmate.schedulers.engine import simulate
from schedmate.schedulers.job import JobSpec, JobState
from schedmate.schedulers.placement import Placement
from schedmate.schedulers.policy import ClusterView, Policy

__all__ = ["Degradation", "DegradedWorld", "SpeedLogInsights", "draw_degradations", "draw_jobs", "run_experiment"]


@dataclass(frozen=True)
class Degradation:
    node: int
    start: float
    end: float
    factor: float  # speed multiplier while degraded (0.7 = 30% fewer steps/s)


class DegradedWorld(Policy):
    """Wraps a policy: nodes degrade as scheduled (module docstring); everything else forwarded."""

    def __init__(self, inner: Policy, degradations: Sequence[Degradation]) -> None:
        self.inner = inner
        self.name = inner.name
        self.round_interval = inner.round_interval
        self.progress_interval = inner.progress_interval
        self.degradations = list(degradations)
        self._edges = sorted({t for d in self.degradations for t in (d.start, d.end)})
        self._armed = False
        self._seen_edge = -1

    def factor(self, placement: Placement, now: float) -> float:
        nodes = {n for n, _ in placement}
        return min((d.factor for d in self.degradations if d.node in nodes and d.start <= now < d.end), default=1.0)

    # the world's side
    def throughput(self, job: JobState, placement: Placement, view: ClusterView) -> float:
        return self.inner.throughput(job, placement, view) * self.factor(placement, view.now)

    def _refreshes(self, view: ClusterView) -> list[Decision]:
        if not self._armed:
            self._armed = True
            for t in self._edges:
                view.wake_at(t)
        passed = [i for i, t in enumerate(self._edges) if t <= view.now]
        last = passed[-1] if passed else -1
        if last <= self._seen_edge:
            return []
        changed = {d.node for d in self.degradations
                   for t in (d.start, d.end) if self._edges.index(t) in range(self._seen_edge + 1, last + 1)}
        self._seen_edge = last
        return [Refresh(j.job_id) for j in view.running() if any(n in changed for n, _ in j.placement)]

    # forwarded
    def run_stats(self) -> dict[str, Any]:
        return self.inner.run_stats()

    def restart_cost(self, job: JobState, n_gpus: int, view: ClusterView) -> float | None:
        return self.inner.restart_cost(job, n_gpus, view)

    def admit(self, job: JobState, view: ClusterView) -> bool:
        return self.inner.admit(job, view)

    def schedule(self, view: ClusterView) -> Sequence[Decision]:
        return [*self._refreshes(view), *self.inner.schedule(view)]

    def optimize(self, view: ClusterView) -> Sequence[Decision]:
        return self.inner.optimize(view)

    def on_arrival(self, job: JobState, view: ClusterView) -> None:
        self.inner.on_arrival(job, view)

    def on_start(self, job: JobState, view: ClusterView) -> None:
        self.inner.on_start(job, view)

    def on_finish(self, job: JobState, view: ClusterView) -> None:
        self.inner.on_finish(job, view)

    def on_failure(self, job: JobState, view: ClusterView) -> bool:
        return self.inner.on_failure(job, view)

    def on_requeue(self, job: JobState, view: ClusterView) -> None:
        self.inner.on_requeue(job, view)

    def on_progress(self, job: JobState, view: ClusterView) -> None:
        self.inner.on_progress(job, view)


@dataclass
class SpeedLogInsights(InsightSource):
    """Fail-slow signals from a log rendered from the job's speed history (module docstring)."""

    seed: int = 0
    max_events: int = 1500
    counts: dict[str, int] = field(default_factory=lambda: {"failslow_calls": 0, "failslow_detected": 0})

    def stats(self) -> dict[str, Any]:
        return dict(self.counts)

    def render(self, job: JobState, now: float) -> list[str]:
        """The current attempt's log lines up to `now`."""
        log = [(t, sp) for t, sp, _ in job.speed_log if t <= now]
        start = max((i for i, (_, sp) in enumerate(log) if sp <= 0), default=-1) + 1
        segs = log[start:]
        if not segs:
            return []
        h = zlib.crc32(f"{self.seed}|{job.job_id}".encode())
        solo = 0.5 + 1.5 * (h % 1000) / 1000  # seconds per step at speed 1
        rng = np.random.default_rng([self.seed, h, len(segs)])
        steps_total = sum(max(0.0, (t1 - t0) * sp / solo)
                          for (t0, sp), (t1, _) in zip(segs, [*segs[1:], (now, 0.0)], strict=True))
        interval = max(1, math.ceil(steps_total / self.max_events))
        lines, step = [], 0
        for (t0, sp), (t1, _) in zip(segs, [*segs[1:], (now, 0.0)], strict=True):
            n = int((t1 - t0) * sp / solo / interval)
            if n <= 0:
                continue
            times = solo / sp * np.exp(rng.normal(0, 0.02, n))
            for t in times.tolist():
                step += interval
                warm = 1 + 2 * max(0.0, 1 - step / (10 * interval)) ** 2
                lines.append(f"iter {step}: loss 2.0, time {t * warm * 1000:.1f}ms")
        return lines

    def failslow(self, job: JobState, *, now: float, since: float | None = None) -> FailSlowSignal:
        self.counts["failslow_calls"] += 1
        alerts = FailSlowDetector().feed_many(self.render(job, now))
        if not alerts:
            return NO_FAILSLOW
        self.counts["failslow_detected"] += 1
        a = alerts[-1]
        return FailSlowSignal(True, ratio=a.ratio, confidence=a.confidence, since_line=a.since_line,
                              since_step=a.since_step, scope=a.scope, reason=a.describe())


def draw_jobs(n: int, seed: int, *, nodes: int, load: float = 0.9) -> list[JobSpec]:
    """Single-node jobs (1-8 GPUs), log-normal durations (median 1 h), Poisson arrivals at `load`."""
    rng = np.random.default_rng([seed, 1])
    gpus = rng.choice([1, 2, 4, 8], size=n, p=[0.4, 0.25, 0.2, 0.15])
    dur = np.exp(rng.normal(math.log(3600), 1.0, n)).clip(600, 48 * 3600)
    rate = load * nodes * 8 / float((gpus * dur).mean())
    t = np.cumsum(rng.exponential(1 / rate, n))
    return [JobSpec(f"j{i:04d}", float(t[i]), int(gpus[i]), float(dur[i])) for i in range(n)]


def draw_degradations(jobs: Sequence[JobSpec], seed: int, *, nodes: int, share: float = 0.25) -> list[Degradation]:
    """`share` of the nodes degrade once, to 0.5-0.85x speed, for 2-8 h, somewhere in the trace."""
    rng = np.random.default_rng([seed, 2])
    horizon = max(j.submit_time for j in jobs)
    picks = rng.choice(nodes, size=max(1, int(share * nodes)), replace=False)
    out = []
    for node in picks.tolist():
        start = float(rng.uniform(0.05, 0.8) * horizon)
        out.append(Degradation(node, start, start + float(rng.uniform(2, 8)) * 3600, float(rng.uniform(0.5, 0.85))))
    return out


def _jct(jobs: Sequence[JobState]) -> dict[str, float]:
    j = np.array([x.end_time - x.spec.submit_time for x in jobs if x.end_time is not None])
    return {"mean_jct_h": round(float(j.mean()) / 3600, 4), "p99_jct_h": round(float(np.percentile(j, 99)) / 3600, 4)}


def run_experiment(out: Path, *, seeds: int = 3, jobs: int = 400, nodes: int = 8) -> dict[str, Any]:
    cluster = ClusterSpec.parse(f"{nodes}x8")
    rows: list[dict[str, Any]] = []
    for seed in range(seeds):
        specs = draw_jobs(jobs, seed, nodes=nodes)
        degr = draw_degradations(specs, seed, nodes=nodes)
        for arm, act in (("sjf", False), ("sjf+failslow", True)):
            source = SpeedLogInsights(seed=seed)
            inner = StandaloneSchedMate(source, StandaloneConfig(failslow=act))
            world = DegradedWorld(inner, degr)
            res = simulate(specs, cluster, world)
            rows.append({"seed": seed, "arm": arm, **_jct(res.jobs), **inner.failslow_counts,
                         "degradations": len(degr), "source": source.stats()})
    agg: dict[str, Any] = {}
    for arm in ("sjf", "sjf+failslow"):
        rs = [r for r in rows if r["arm"] == arm]
        agg[arm] = {k: round(float(np.mean([r[k] for r in rs])), 4) for k in ("mean_jct_h", "p99_jct_h", "detected",
                                                                               "migrated", "requeued", "cordons")}
    base, fs = agg["sjf"]["mean_jct_h"], agg["sjf+failslow"]["mean_jct_h"]
    better = sum(a["mean_jct_h"] < b["mean_jct_h"] for a, b in zip([r for r in rows if r["arm"] == "sjf+failslow"],
                                                                    [r for r in rows if r["arm"] == "sjf"], strict=True))
    report = {"config": {"seeds": seeds, "jobs": jobs, "cluster": f"{nodes}x8"}, "aggregate": agg, "rows": rows,
              "mean_jct_change": round(fs / base - 1, 4), "better_seeds": better}
    out.mkdir(parents=True, exist_ok=True)
    (out / "failslow_experiment.json").write_text(json.dumps(report, indent=2, default=str))
    report["summary_line"] = (f"fail-slow experiment ({seeds} seeds, {jobs} jobs, {nodes}x8 GPUs, 25% of nodes degrade "
                              f"to 0.5-0.85x for 2-8 h): mean JCT SJF {base:.3f} h -> SJF+fail-slow {fs:.3f} h "
                              f"({100 * (fs / base - 1):+.1f}%, better in {better}/{seeds} seeds); p99 "
                              f"{agg['sjf']['p99_jct_h']:.2f} -> {agg['sjf+failslow']['p99_jct_h']:.2f} h; per run "
                              f"{agg['sjf+failslow']['detected']:.1f} detections, {agg['sjf+failslow']['migrated']:.1f} "
                              f"migrations, {agg['sjf+failslow']['requeued']:.1f} requeues")
    return report
