"""Arnold alone vs Arnold+SchedMate under infrastructure failures: cordon and re-place.

    schedmate experiment arnold-adapter --out OUT_DIR [--quick] [--seeds 3]
        [--detection-rate 1] [--infra-share 0.11]

Workload (`failure_trace`): an Arnold cluster of `minipods` × `nodes_per_minipod` 8-GPU nodes
(default 4 × 16 = 512 GPUs); whole-node background jobs (1/2/4 nodes, log-normal run times,
median 30 min) arriving as a Poisson process at `load` of the nodes for `span_h` hours, and
`lpjs` pre-training jobs (TP8 × PP2 × DP4 or DP8: 8 or 16 nodes, U(`lpj_hours`) of work),
submitted at uniform times over the first half of the span and announced `announce_s` ahead.

Failures (`failures_sim`, as the standalone experiment): application errors for the trace's
failure rate × 0.89 of the jobs, an infrastructure hazard per GPU-second calibrated so that
infrastructure failures are `infra_share` of failure events, hardware faults that leave the
node faulty (it fails every job placed on it after Exp(30 min) of run until cordoned: by the
policy, or by the operators after 3 failures; repaired in 4 h, a healthy node is back after its
300 s check). Checkpoints every 30 min; a job that is not restarted is resubmitted by its user
1 h later (infrastructure) or ends (application error).

Arms, on the same jobs, world seed and engine seed: `arnold` (`ArnoldRestart`: failed jobs restart
on their placement) and `arnold+sm` (`ArnoldSchedMate`: the Failure Handler's diagnosis of the
failed log the world wrote, `CauseDiagnosis` over `make_source`, `DiagnosisSources` in reported
runs; infrastructure → the failed
node is cordoned and the job re-placed). Measured: mean JCT (all jobs and LPJs), GPU-hours
wasted (progress lost back to checkpoints; GPU time of failed runs), repeated failures (failures
on an already-faulty node; failed attempts beyond each job's first). `--quick`: a 12 h span.

`failure_world` is the same failure world for the generic adapter arm (`adapters.arnold.ADAPTER`
names it; `schedmate experiment adapter --policy arnold`): the realistic world's jobs with this
study's failure model, checkpoints and resubmits, on an Arnold cluster of the arm's GPUs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from schedmate.adapters.arnold import ArnoldRestart, ArnoldSchedMate
from schedmate.adapters.registry import PolicyWorld
from schedmate.errors import BadInput
from schedmate.schedulers.arnold.config import GPUS_PER_NODE, LEAVES_PER_MINIPOD, NODES_PER_LEAF
from schedmate.schedulers.arnold.topology import arnold_cluster
from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.engine import SimConfig, SimResult
from schedmate.schedulers.job import JobSpec, ParallelPlan, Phase
from schedmate.schedulers.metrics import summarize
from schedmate.schedulers.policy import Policy
from schedmate.sim.experiments.common import ExperimentResult, MakeSource, RunRow, aggregate, write_experiment
from schedmate.sim.failures import CauseDiagnosis, FailureModel, FailureSimulator, FailureWorld, inject_failures

__all__ = ["ARMS", "ArnoldAdapterConfig", "DiagnosisSources", "FailureWorkload", "failure_trace", "failure_world",
           "run_arnold_adapter_experiment", "sized_cluster"]

ALONE, SM = "arnold", "arnold+sm"
ARMS = (ALONE, SM)
H = 3600.0


@dataclass(frozen=True)
class FailureWorkload:
    """The jobs of one run (module docstring)."""

    minipods: int = 4
    nodes_per_minipod: int = 16
    span_h: float = 24.0
    load: float = 0.5
    sizes: tuple[int, ...] = (1, 2, 4)
    probs: tuple[float, ...] = (0.5, 0.3, 0.2)
    median_s: float = 1800.0
    sigma: float = 1.0
    cap_s: float = 12 * H
    lpjs: int = 4
    lpj_dps: tuple[int, ...] = (4, 8)  # TP8 × PP2 × DP: 8 or 16 nodes
    lpj_hours: tuple[float, float] = (6.0, 12.0)
    announce_s: float = 1800.0


def failure_trace(w: FailureWorkload, seed: int) -> list[JobSpec]:
    """Background jobs (`bg<i>`) and LPJs (`lpj<i>`), sorted by submit time; deterministic by seed."""
    rng = np.random.default_rng([seed, 0xA7B0])
    nodes = w.minipods * w.nodes_per_minipod
    mean_nodes = float(np.dot(w.sizes, w.probs))
    mean_dur = w.median_s * math.exp(w.sigma**2 / 2)
    rate = w.load * nodes / (mean_nodes * mean_dur)
    jobs: list[JobSpec] = []
    t = 0.0
    while True:
        t += float(rng.exponential(1.0 / rate))
        if t >= w.span_h * H:
            break
        k = int(rng.choice(w.sizes, p=np.asarray(w.probs) / sum(w.probs)))
        dur = float(min(w.cap_s, rng.lognormal(math.log(w.median_s), w.sigma)))
        jobs.append(JobSpec(f"bg{len(jobs)}", round(t, 1), k * GPUS_PER_NODE, round(dur, 1)))
    for i in range(w.lpjs):
        dp = int(w.lpj_dps[int(rng.integers(len(w.lpj_dps)))])
        plan = ParallelPlan(tp=8, pp=2, dp=dp)
        submit = float(rng.uniform(0.0, w.span_h * H / 2))
        dur = float(rng.uniform(*w.lpj_hours)) * H
        jobs.append(JobSpec(f"lpj{i}", round(submit, 1), plan.gpus, round(dur, 1), plan=plan,
                            attributes={"lpj": True, "t_arrive": round(submit + w.announce_s, 1)}))
    return sorted(jobs, key=lambda j: (j.submit_time, j.job_id))


@dataclass(frozen=True)
class ArnoldAdapterConfig:
    seeds: tuple[int, ...] = (0, 1, 2)
    arms: tuple[str, ...] = ARMS
    workload: FailureWorkload = field(default_factory=FailureWorkload)
    failures: FailureModel = field(default_factory=FailureModel)
    detection_rate: float = 1.0
    checkpoint_s: float = 1800.0
    resubmit_s: float = 3600.0
    max_stuck: int = 2
    plots: bool = True

    @classmethod
    def quick(cls) -> ArnoldAdapterConfig:
        return cls(workload=FailureWorkload(span_h=12.0, lpjs=3), plots=False)


@dataclass
class DiagnosisSources:
    """`MakeSource` for this experiment: `SimulationInsights` (the real Failure Handler, rule-based
    unless an LLM is configured) with each job's artefact planned but no code extraction and no
    history, since only `diagnose` is asked. The models load once; diagnoses are cached by log
    content in `cache_dir`, so a rerun makes no handler call. Use as a context manager."""

    cache_dir: Path | None = None
    _models: dict[str, Any] | None = field(default=None, init=False, repr=False)
    _open: list[Any] = field(default_factory=list, init=False, repr=False)

    label = "SimulationInsights (real Failure Handler on the failed logs)"

    def __call__(self, specs: Sequence[JobSpec], seed: int, detection_rate: float) -> Any:
        from schedmate.sim.semantic import SimConfig as SourceConfig
        from schedmate.sim.semantic import SimulationInsights, load_agent_models

        if self._models is None:
            self._models = load_agent_models()
        source = SimulationInsights(SourceConfig(seed=seed, detection_rate=detection_rate, cache_dir=self.cache_dir),
                                    **self._models)
        source.prepare(specs, extract=False)
        self._open.append(source)
        return source

    def close(self) -> None:
        while self._open:
            self._open.pop().close()

    def __enter__(self) -> DiagnosisSources:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def sized_cluster(gpus: int) -> ClusterSpec:
    """An Arnold cluster of `gpus` GPUs in 8-GPU nodes: one minipod of leaves up to its 128 nodes
    (leaves of `NODES_PER_LEAF` nodes, smaller when the node count is not a multiple), whole
    minipods above (rounded down). At least one node."""
    nodes = max(1, gpus // GPUS_PER_NODE)
    per_minipod = NODES_PER_LEAF * LEAVES_PER_MINIPOD
    if nodes <= per_minipod:
        return arnold_cluster(1, nodes, math.gcd(nodes, NODES_PER_LEAF))
    return arnold_cluster(nodes // per_minipod)


def failure_world(jobs: Sequence[JobSpec], seed: int, gpus: int, *, config: ArnoldAdapterConfig | None = None) -> PolicyWorld:
    """Arnold's world for the generic adapter arm: `jobs` (requests capped at the cluster) with this
    study's failures (`inject_failures`, `config.failures`; the jobs' own stops are replaced by
    them, as in the standalone study) on `sized_cluster(gpus)`, both arms with its `max_stuck`.

    Its `simulate` runs `FailureSimulator` on a fresh `FailureWorld` per run, with the study's
    checkpoint and resubmit delays, and gives an `ArnoldSchedMate` the Failure Handler's reading of
    the failed logs that run's world writes: its source is wrapped in `CauseDiagnosis(source,
    world)` for the run, as the case study builds it. The adapter decides on the diagnosis only;
    the world's cause reaches it as `failure_truth`, read for its counters alone."""
    cfg = config or ArnoldAdapterConfig()
    cluster = sized_cluster(gpus)
    total = cluster.total_gpus
    capped = [s if s.num_gpus <= total else replace(s, num_gpus=total) for s in jobs]
    specs = inject_failures(capped, seed, cfg.failures)

    def simulate(run: Sequence[JobSpec], on: ClusterSpec, policy: Policy, sim: SimConfig) -> SimResult:
        world = FailureWorld.for_trace(run, seed, cfg.failures)
        if isinstance(policy, ArnoldSchedMate):
            policy.source = CauseDiagnosis(policy.source, world)
        sim = replace(sim, checkpoint_interval=cfg.checkpoint_s, resubmit_delay=cfg.resubmit_s)
        result = FailureSimulator(list(run), on, policy, sim, world=world).run()
        result.world_stats = {k: float(v) for k, v in world.stats().items() if isinstance(v, (int, float))}
        return result

    return PolicyWorld(specs, cluster, options={"seed": seed, "max_stuck": cfg.max_stuck}, simulate=simulate)


def _policy(arm: str, cfg: ArnoldAdapterConfig, seed: int, source: Callable[[], Any]) -> Policy:
    if arm == ALONE:
        return ArnoldRestart(seed=seed, max_stuck=cfg.max_stuck)
    if arm == SM:
        return ArnoldSchedMate(source(), seed=seed, max_stuck=cfg.max_stuck)
    raise BadInput(f"unknown arm {arm!r}; choose from {', '.join(ARMS)}")


def _extra(result: SimResult, policy: Policy, world: FailureWorld) -> dict[str, Any]:
    ws = world.stats()
    lpj = [j for j in result.jobs if j.spec.plan is not None and j.end_time is not None]
    out: dict[str, Any] = {
        "wasted_gpu_hours": sum(j.wasted_gpu_time for j in result.jobs) / H,
        "failed_run_gpu_hours": ws["gpu_hours_failed_attempts"],
        "failure_events": ws["failure_events"],
        "infra_failures": ws.get("infrastructure_failures", 0),
        "repeated_faulty_failures": ws.get("faulty_failures", 0),  # struck by a fault that persisted
        "repeat_failures": sum(max(0, len(c) - 1) for c in world.causes.values()),
        "nodes_turned_faulty": ws.get("nodes_turned_faulty", 0),
        "ops_cordons": ws.get("ops_cordons", 0),
        "healthy_nodes_cordoned": ws.get("cordons_of_healthy_nodes", 0),
        "jobs_failed_at_end": sum(j.phase is Phase.FAILED for j in result.jobs),
        "lpj_mean_jct": float(np.mean([j.end_time - j.spec.submit_time for j in lpj if j.end_time is not None])) if lpj else math.nan,
        "infra_share": ws["infra_share"],
        "infra_gpu_share": ws["infra_gpu_share"],
    }
    stats = policy.run_stats()
    out["restart"] = stats.get("restart", {})
    if isinstance(policy, ArnoldSchedMate):
        out["sm"] = stats["schedmate"]
        src = policy.source.stats()
        out["source"] = {k: v for k, v in src.items() if isinstance(v, (int, float, str, bool))}
    return out


def run_arnold_adapter_experiment(
    out_dir: Path | None,
    *,
    make_source: MakeSource,
    config: ArnoldAdapterConfig = ArnoldAdapterConfig(),
    progress: Callable[[str], None] | None = None,
) -> ExperimentResult:
    """Both arms per seed on a fresh failure world; writes `arnold-adapter.json`/`.csv`/plots."""
    cfg, w = config, config.workload
    cluster = arnold_cluster(w.minipods, w.nodes_per_minipod)
    rows: list[RunRow] = []
    results: dict[str, dict[str, SimResult]] = {}
    sources: dict[str, Any] = {}
    for seed in cfg.seeds:
        jobs = inject_failures(failure_trace(w, seed), seed, cfg.failures)
        for arm in cfg.arms:
            world = FailureWorld.for_trace(jobs, seed, cfg.failures)

            def source(jobs: list[JobSpec] = jobs, seed: int = seed, world: FailureWorld = world) -> Any:
                return CauseDiagnosis(make_source(jobs, seed, cfg.detection_rate), world)

            policy = _policy(arm, cfg, seed, source)
            sim_cfg = SimConfig(seed=seed, checkpoint_interval=cfg.checkpoint_s, resubmit_delay=cfg.resubmit_s,
                                record_timeline=False)
            result = FailureSimulator(jobs, cluster, policy, sim_cfg, world=world).run()
            summary = summarize(result)
            extra = _extra(result, policy, world)
            rows.append(RunRow("failures", arm, seed, cluster.total_gpus, summary, extra))
            if cfg.plots:
                results.setdefault(f"seed{seed}", {})[arm] = result
            if "source" in extra:
                sources[f"seed{seed}"] = extra["source"]
            if progress is not None:
                progress(f"seed {seed} {arm:10s} mean JCT {summary.mean_jct / H:6.2f} h  LPJ {extra['lpj_mean_jct'] / H:6.2f} h  "
                         f"wasted {extra['wasted_gpu_hours']:7.1f} GPU-h  failures {extra['failure_events']} "
                         f"(faulty-node {extra['repeated_faulty_failures']})  ({result.wall_seconds:.0f} s)")
    comparison = compare(rows, ALONE, SM)
    line = summary_line(comparison, cfg, sources)
    details = {"arnold_vs_arnold_sm": comparison, "source_stats": sources, "summary": line}
    files: list[Path] = []
    if out_dir is not None:
        files = write_experiment(out_dir, "arnold-adapter", rows, config=asdict(cfg), details=details,
                                 results=results or None)
    return ExperimentResult("arnold-adapter", out_dir, rows, aggregate(rows), files, line, details)


METRICS = ("mean_jct", "lpj_mean_jct", "wasted_gpu_hours", "failed_run_gpu_hours", "repeated_faulty_failures",
           "repeat_failures", "failure_events")


def _value(row: RunRow, metric: str) -> float:
    return float(getattr(row.summary, metric)) if metric == "mean_jct" else float(row.extra[metric])


def compare(rows: Sequence[RunRow], base: str, arm: str) -> dict[str, dict[str, float]]:
    """Seed means of each metric for both arms."""
    b = [r for r in rows if r.arm == base]
    a = [r for r in rows if r.arm == arm]
    if not a or not b:
        return {}
    return {m: {base: float(np.nanmean([_value(r, m) for r in b])), arm: float(np.nanmean([_value(r, m) for r in a]))}
            for m in METRICS}


def summary_line(c: dict[str, dict[str, float]], cfg: ArnoldAdapterConfig, sources: dict[str, Any]) -> str:
    if not c:
        return "Arnold adapter experiment: no arnold vs arnold+sm pair"
    names = sorted({str(s.get("source", "?")) for s in sources.values()}) or ["none"]

    def pair(m: str, scale: float = 1.0, unit: str = "", fmt: str = ".2f") -> str:
        return f"{c[m][ALONE] / scale:{fmt}}{unit} -> {c[m][SM] / scale:{fmt}}{unit}"

    return (f"Arnold+SM vs Arnold ({len(cfg.seeds)} seeds, detection {cfg.detection_rate:g}, source: {' | '.join(names)}): "
            f"mean JCT {pair('mean_jct', H, ' h')}, LPJ JCT {pair('lpj_mean_jct', H, ' h')}, "
            f"wasted {pair('wasted_gpu_hours', fmt='.0f')} GPU-h, failed-run GPU-h {pair('failed_run_gpu_hours', fmt='.0f')}, "
            f"faulty-node failures {pair('repeated_faulty_failures', fmt='.1f')}, repeat failures {pair('repeat_failures', fmt='.1f')}")
