"""Arena+SchedMate (issue 12, item 5): bootstrap a new job's throughput model from similar past jobs.

Arena profiles every new job on a proxy plan before it may launch (T_prof = 8.5 min × #types/4, a
delay by default, one held GPU in the "arena-profhold" reading), and what it learns is κ·Thr_AP·(1+ε) per (GPU type, count) (proxy-plan
optimality κ ≈ 0.93 and profiler error ε). `ArenaSchedMate(source)` asks the Scheduling Advisor
at arrival (`InsightSource.advise`). When the advisor's similar jobs include jobs of this run that
finished, and whose *measured* throughput the adapter recorded, the new job's belief is seeded
from them and its profiling is skipped:

- a match counts only if it declared the same model (family, size, global batch: what the user
  submits in `LMJob`, never an outcome); a retrieval that matched code of another model gives
  nothing (the measured samples/s of another model say nothing about this one);
- measured configurations: the mean of the matches' measurements; an unmeasured count of a
  measured GPU type: Sia-style linear extrapolation from the nearest measured count of that type;
  unmeasured types: not believed (the search may not use them);
- no usable match (None, no match, nothing measured): Arena's own profiling and view stand, so
  with a source that knows nothing the run is Arena's, decision for decision.

**Measurement.** While a job runs, the engine asks `throughput` for its speed on the placement it
got; the adapter keeps what a tracker would read off the job's log, de-rated by the policy's own
constants (execution factor, locality penalty per halving) to Thr_AP units, with a per-(job,
configuration) tracker noise of `tracker_sigma`. It is history only: it enters the policy for
*later* jobs that the advisor matched, never for the job itself. The source is told about each job
at arrival (after advising, so a job never matches itself) and when it has finished.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from schedmate.adapters.insights import AdvisorInsight, InsightSource
from schedmate.adapters.registry import PolicyAdapter, PolicyWorld, unit_draw
from schedmate.schedulers.arena.config import ArenaConfig
from schedmate.schedulers.arena.policy import MIN_SPEED, Arena, JobInfo
from schedmate.schedulers.arena.search import halvings_of
from schedmate.schedulers.arena.views import job_rng
from schedmate.schedulers.job import JobSpec, JobState, Phase, Placement
from schedmate.schedulers.policy import ClusterView, Policy

if TYPE_CHECKING:
    from schedmate.schedulers.cluster import ClusterSpec
    from schedmate.schedulers.engine import SimConfig, SimResult

__all__ = ["ADAPTER", "TRACKER_SIGMA", "ArenaSMCounters", "ArenaSchedMate", "Measured", "bootstrap_view", "declared_models"]

Config = tuple[str, int]
ModelKey = tuple[str, float, int]
TRACKER_SIGMA = 0.03  # steady-state throughput read from a log over minutes: a few percent


@dataclass(frozen=True)
class Measured:
    """A finished job's measured Thr_AP per configuration it ran on, and the model it declared."""

    model: ModelKey
    thr: dict[Config, float]


@dataclass
class ArenaSMCounters:
    """What the adapter did, one count per arriving job."""

    arrivals: int = 0
    advised: int = 0  # the source answered
    matched: int = 0  # ... with similar jobs
    measured_matches: int = 0  # ... of which some finished with a measurement of the same model
    bootstrapped: int = 0  # the belief came from history, profiling skipped
    fallback: int = 0  # Arena profiled as usual
    profiling_saved_s: float = 0.0  # GPU-seconds of profiling skipped
    advisor_seconds: float = 0.0  # reported latency (not charged: arrival hook has no delay)


def bootstrap_view(grid: dict[Config, float], matches: list[Measured], *, extrapolate: bool = True) -> dict[Config, float] | None:
    """The belief over `grid`'s configurations from `matches` (module docstring); None if empty.
    Without `extrapolate`, only measured configurations are believed."""
    sums: dict[Config, list[float]] = {}
    for m in matches:
        for cfg, v in m.thr.items():
            if v > 0:
                sums.setdefault(cfg, []).append(v)
    measured = {cfg: float(np.mean(v)) for cfg, v in sums.items()}
    if not measured:
        return None
    out: dict[Config, float] = {}
    for g, n in grid:
        if (g, n) in measured:
            out[(g, n)] = measured[(g, n)]
            continue
        same = [c for (gg, c) in measured if gg == g]
        if same and extrapolate:
            near = min(same, key=lambda c: (abs(c - n), -c))
            out[(g, n)] = measured[(g, near)] * n / near
    return out or None


class ArenaSchedMate(Arena):
    """Arena whose new jobs start from similar jobs' measured throughput (module docstring)."""

    def __init__(self, source: InsightSource, config: ArenaConfig | None = None, variant: str | None = None,
                 *, tracker_sigma: float = TRACKER_SIGMA, extrapolate: bool = True, **overrides: Any) -> None:
        super().__init__(config, variant, **overrides)
        self.name = f"{self.name}+sm"
        self.source = source
        self.tracker_sigma = tracker_sigma
        self.extrapolate = extrapolate
        self.counters = ArenaSMCounters()
        self.history: dict[str, Measured] = {}  # finished jobs of this run, by id
        self.bootstrapped: set[str] = set()
        self._measuring: dict[str, dict[Config, float]] = {}

    # ------------------------------------------------------------------ arrival: advise, seed
    def on_arrival(self, job: JobState, view: ClusterView) -> None:
        first = job.job_id not in self.info
        insight: AdvisorInsight | None = None
        if first:
            c = self.counters
            c.arrivals += 1
            insight = self.source.advise(job)
            c.advised += insight is not None
            c.matched += insight is not None and insight.matched
            c.advisor_seconds += insight.latency_s if insight is not None else 0.0
            self.source.record(job, finished=False)
        super().on_arrival(job, view)
        if first:
            self._seed(job.job_id, self.info[job.job_id], insight, view)

    def _seed(self, job_id: str, info: JobInfo, insight: AdvisorInsight | None, view: ClusterView) -> None:
        c = self.counters
        key: ModelKey = (info.lm.family, info.lm.billions, info.lm.batch)
        ids = insight.similar_ids if insight is not None else ()
        matches = [self.history[i] for i in ids if i in self.history and self.history[i].model == key]
        belief = bootstrap_view(dict(info.table.ap), matches, extrapolate=self.extrapolate) if matches else None
        c.measured_matches += bool(matches)
        if belief is None:
            c.fallback += 1
            return
        info.allowed = self._allowed(info.table, info.request, belief)
        if info.ready_at is None or info.ready_at > view.now:  # still to profile: skip it
            c.profiling_saved_s += info.profile_s
            info.ready_at = view.now
            info.profile_s = 0.0
        c.bootstrapped += 1
        self.bootstrapped.add(job_id)

    # ------------------------------------------------------------------ measurement (history only)
    def throughput(self, job: JobState, placement: Placement, view: ClusterView) -> float:
        speed = super().throughput(job, placement, view)
        if job.phase is Phase.PROFILING or speed <= MIN_SPEED:
            return speed
        info = self.info[job.job_id]
        g = view.cluster.nodes[placement[0][0]].gpu_type
        n = sum(k for _, k in placement)
        h = halvings_of(placement, self._gpu(view)[g].per_node)
        ap = speed * info.norm / (self.config.exec_factor * self.config.locality_penalty**h)
        noise = float(np.exp(self.tracker_sigma * job_rng(self.config.seed + 0x7AC, f"{job.job_id}|{g}|{n}").normal()))
        self._measuring.setdefault(job.job_id, {})[(g, n)] = ap * noise
        return speed

    def on_finish(self, job: JobState, view: ClusterView) -> None:
        super().on_finish(job, view)
        seen = self._measuring.pop(job.job_id, None)
        if job.end_time is None:  # a failed attempt awaiting resubmission
            return
        info = self.info.get(job.job_id)
        if seen and info is not None and job.phase is Phase.COMPLETED:
            self.history[job.job_id] = Measured((info.lm.family, info.lm.billions, info.lm.batch), seen)
        self.source.record(job, finished=True)

    # ------------------------------------------------------------------ reports
    def info_counters(self) -> dict[str, Any]:
        return {**asdict(self.counters), "source": self.source.stats()}

    def run_stats(self) -> dict[str, Any]:
        return {**super().run_stats(), "schedmate": asdict(self.counters)}



# ------------------------------------------------------------------ the generic adapter arm


def _run_costed(specs: Sequence[JobSpec], cluster: ClusterSpec, policy: Policy, config: SimConfig) -> SimResult:
    """Arena's simulator: profiling and restarts cost what the policy's `downtime` says."""
    from schedmate.schedulers.arena.sim import run_costed

    if not isinstance(policy, Arena):
        raise TypeError(f"Arena's simulator runs Arena policies, not {type(policy).__name__}")
    return run_costed(specs, cluster, policy, policy.downtime, config)


def declared_models(jobs: Sequence[JobSpec], seed: int, gpus: int) -> PolicyWorld:
    """Arena's world attribute: each job declares an LM workload (family, size, global batch; a draw
    per seed and job with the §5.1 artifact weights, as `schedulers.arena.workload.generate`) on a
    request of at most its GPUs, on the spec's R2 cluster (64 GPUs of 4 types; `gpus` is not used).
    The engine's truth: its iterations are the world's run time at Thr_AP of its request."""
    from schedmate.schedulers.arena.hardware import R2, build_cluster, gpu_types_of
    from schedmate.schedulers.arena.model import BATCHES, COUNTS, SIZES, PerfTable, make_model, perf_table
    from schedmate.schedulers.arena.policy import ATTR, LMJob
    from schedmate.schedulers.arena.workload import BATCH_W, DECLARED_KEY, FAMILY_W, SIZE_W, TYPE_W, declared

    cluster = build_cluster(R2)
    by_type = gpu_types_of(cluster)
    cap = {g: sum(n.gpus for n in cluster.nodes if n.gpu_type == g) for g in by_type}
    types = [t for t in TYPE_W if t in by_type]
    fams = list(FAMILY_W)

    def p(w: Sequence[float]) -> np.ndarray:
        a = np.asarray(w, dtype=float)
        return a / a.sum()

    tables: dict[tuple[str, float, int], PerfTable] = {}
    out: list[JobSpec] = []
    for s in jobs:
        rng = np.random.default_rng([seed, 0xA2E7, int(unit_draw("arena-model", s.job_id) * 2**32)])
        for _ in range(1000):
            fam = fams[int(rng.choice(len(fams), p=p(list(FAMILY_W.values()))))]
            size = SIZES[fam][min(int(rng.choice(len(SIZE_W), p=p(SIZE_W))), len(SIZES[fam]) - 1)]
            batch = BATCHES[fam][int(rng.choice(len(BATCH_W), p=p(BATCH_W)))]
            gtype = types[int(rng.choice(len(types), p=p([TYPE_W[t] for t in types])))]
            n = max(c for c in COUNTS if c <= max(1, min(s.num_gpus, cap[gtype])))
            key = (fam, size, batch)
            if key not in tables:
                tables[key] = perf_table(make_model(fam, size), batch, by_type)
            if tables[key].ap[(gtype, n)] > 0:
                break
        else:
            raise RuntimeError(f"no Arena workload runs job {s.job_id} on R2")  # not reached: 1-GPU wrn always runs
        table = tables[key]
        thr = table.ap[(gtype, n)]
        iters = max(1, round(s.duration * thr / batch))
        lm = LMJob(fam, size, batch, gtype, n, iters, 1)
        attrs = {**s.attributes, ATTR: lm, DECLARED_KEY: declared(lm, table.plans[(gtype, n)])}
        out.append(replace(s, num_gpus=n, duration=iters * batch / thr, name=f"{fam}-{size:g}B", attributes=attrs))
    return PolicyWorld(out, cluster, options={"config": ArenaConfig(seed=seed)}, simulate=_run_costed)


ADAPTER = PolicyAdapter(policy="arena", adapter=ArenaSchedMate, world=declared_models)
