"""Case 1 (spec §8.1): Lucid vs Lucid+SchedMate, the ablations, baselines and a detection sweep.

Setup, following the spec and saying where it reads something into it:

- **Traces**: a 3-day window of the Helios-Venus derived trace's last 30 days, a 3-day window
  of Sia's Philly trace in October 2017 (days 27-30 from its first job), and the synthetic
  default (`synthetic_jobs`) for quick runs. One workload per job (`sim.workloads`):
  the simulator, Lucid's profiler and the interference model run the workload the job's
  generated code describes (`--workloads lucid-table` restores the old reading: a random
  `single_data.csv` row for the simulator while the advisor reads other code); requests above
  the cluster are capped at its size (as the paper's physical run capped at 128).
- **Cluster**: 8-GPU nodes, node 0 reserved for Lucid's profiler (one node, T_prof = 100 s,
  least-GPU-first, jobs ≤ 8 GPUs profiled); sized by `size_cluster` on plain Lucid so that its
  avg queuing is ≥ 30% of its avg JCT (the same cluster for every arm and seed; reported).
- **Warm-up bias**: 30% of jobs have their *profiled* GPU utilisation × U(0.3, 0.7)
  (`WarmupProfiler`); advisor profiles are historical, steady-state.
- **Interference** (`HeavyPairInterference`): measured `colocate_info.csv` speeds where the pair
  exists (Lucid's lookup: GPU count ignored, either order), else speed_i = 1/max(1, u_A+u_B)^1.5
  with u the steady-state SM utilisation (fraction). Lucid's "large models are benign" rule is
  not used: unmeasured pairs are exactly the ones the heavy model is for.
- **Arms**: `lucid`; `lucid+sm` (all three enhancements, θ 0.5); each enhancement alone; θ 0.65;
  `tiresias`, `qssf` (whole cluster, pool node included); detection sweep d ∈ `sweep`.
  Insight sources come from `make_source(specs, seed, d)`: the real `SimulationInsights` for
  reported results; `oracle_source` only for smoke runs (labelled as such in every output).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from schedmate.adapters.insights import InsightSource
from schedmate.adapters.lucid import Cancellation, Flags, LucidSchedMate
from schedmate.adapters.registry import PolicyWorld, homogeneous_world
from schedmate.errors import BadInput
from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.engine import SimConfig, SimResult, Simulator
from schedmate.schedulers.interference import ConstantInterference, MeasuredInterference
from schedmate.schedulers.job import JobSpec, JobState
from schedmate.schedulers.lucid import (
    EBMConfig,
    Lucid,
    Metrics,
    Profiler,
    WorkloadTable,
    assign_workloads,
    load_default_table,
)
from schedmate.schedulers.lucid.data import default_colocate_csv, workload_key
from schedmate.schedulers.metrics import summarize
from schedmate.schedulers.policies import make_policy
from schedmate.schedulers.policy import Policy
from schedmate.sim.artefacts import plan_artefact, steady_metrics
from schedmate.sim.experiments.common import (
    ExperimentResult,
    MakeSource,
    OracleInsights,
    RunRow,
    aggregate,
    load_window,
    plot_lines,
    shared_file,
    size_cluster,
    speedups,
    synthetic_jobs,
    wait_stats,
    write_experiment,
)
from schedmate.sim.experiments.quality import estimate_quality, merge_quality, quality_line, without_errors
from schedmate.sim.experiments.sources import use_history
from schedmate.sim.workloads import artefact_workloads
from schedmate.sim.world import EarlyStops, Histories, WorldModel, history_window, realise, stop_shares

__all__ = [
    "HeavyPairInterference",
    "artefact_world",
    "LucidSetup",
    "WarmupProfiler",
    "oracle_source",
    "prepare_jobs",
    "run_lucid_experiment",
]

TRACES = ("helios", "philly", "synthetic")
WORKLOADS = ("artefact", "lucid-table")
SWEEP = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
MAIN_ARMS = ("lucid", "lucid+sm")
ABLATION_ARMS = ("lucid+sm/bypass", "lucid+sm/duration", "lucid+sm/cancel", "lucid+sm/theta0.65")
BASELINE_ARMS = ("tiresias", "qssf")
ORACLE_ARMS = ("lucid+oracle",)


# ================================================================================= models


@dataclass
class WarmupProfiler(Profiler):
    """Lucid's profiler whose run may fall in warm-up: profiled GPU util × `warmup_bias`."""

    def measure(self, job: JobState) -> Metrics | None:
        metrics = super().measure(job)
        bias = job.spec.attributes.get("warmup_bias")
        if metrics is None or bias is None:
            return metrics
        return dataclasses.replace(metrics, gpu_util=metrics.gpu_util * float(bias))


@dataclass(frozen=True)
class HeavyPairInterference:
    """Measured pair speeds where Lucid measured the pair, else the heavy-pair model."""

    measured: Mapping[tuple[Any, Any], tuple[float, float]]
    table: WorkloadTable
    gamma: float = 1.5
    default: ConstantInterference = field(default_factory=ConstantInterference)

    @classmethod
    def from_shared_data(cls, table: WorkloadTable, gamma: float = 1.5) -> HeavyPairInterference:
        path = default_colocate_csv()
        pairs = MeasuredInterference.from_csv(path).pairs if path is not None else {}
        return cls(pairs, table, gamma)

    def speeds(self, a: JobSpec, b: JobSpec) -> tuple[float, float]:
        ka, kb = workload_key(a.attributes), workload_key(b.attributes)
        if ka is not None and kb is not None:
            one_a, one_b = (ka[0], ka[1], 1, ka[2], ka[3]), (kb[0], kb[1], 1, kb[2], kb[3])
            if (one_a, one_b) in self.measured:
                return self.measured[(one_a, one_b)]
            if (one_b, one_a) in self.measured:
                sb, sa = self.measured[(one_b, one_a)]
                return sa, sb
        ua, ub = self._util(a), self._util(b)
        if ua is None or ub is None:
            return self.default.speeds(a, b)
        s = 1.0 / max(1.0, ua + ub) ** self.gamma
        return s, s

    def _util(self, spec: JobSpec) -> float | None:
        m = self.table.lookup(spec.attributes)
        return m.gpu_util / 100.0 if m is not None else None


def prepare_jobs(
    jobs: Sequence[JobSpec], table: WorkloadTable, seed: int, *, bias_share: float = 0.3, bias_range: tuple[float, float] = (0.3, 0.7)
) -> list[JobSpec]:
    """Jobs with a Lucid workload each (from `table`, unless they already name one) and, for
    `bias_share` of them, a profiling warm-up bias."""
    out = assign_workloads(jobs, table, seed=seed)
    rng = np.random.default_rng(seed + 7919)
    biased = rng.random(len(out)) < bias_share
    factors = rng.uniform(*bias_range, len(out))
    return [
        dataclasses.replace(s, attributes={**s.attributes, "warmup_bias": float(f)}) if b else s
        for s, b, f in zip(out, biased, factors, strict=True)
    ]


def cap_gpus(jobs: Sequence[JobSpec], total: int) -> list[JobSpec]:
    return [s if s.num_gpus <= total else dataclasses.replace(s, num_gpus=total) for s in jobs]


def oracle_source(table: WorkloadTable | None = None, latency_s: float = 0.0) -> MakeSource:
    """SMOKE ONLY: a `make_source` answering with ground truth (true duration, steady metrics of
    the job's workload: from `table`, or its artefact's when the table does not name it)."""

    def make(specs: Sequence[JobSpec], seed: int, detection_rate: float) -> InsightSource:
        def metrics_of(spec: JobSpec) -> dict[str, float] | None:
            m = table.lookup(spec.attributes) if table is not None else None
            if m is not None:
                return dataclasses.asdict(m)
            return steady_metrics(plan_artefact(spec, seed))

        return OracleInsights(seed=seed, detection_rate=detection_rate, metrics_of=metrics_of, latency_s=latency_s)

    return make


# ================================================================================= setup


@dataclass(frozen=True)
class LucidSetup:
    """Everything an arm needs besides its policy: fixed across arms of one (trace, seed)."""

    t_prof: float = 100.0
    prof_nodes: int = 1
    gpus_per_node: int = 8
    theta: float = 0.5
    theta_alt: float = 0.65
    detection_rate: float = 1.0  # passed to make_source for the non-sweep SchedMate arms
    ebm: EBMConfig = field(default_factory=EBMConfig.fast)
    bias_share: float = 0.3
    gamma: float = 1.5

    def lucid_options(self, table: WorkloadTable, seed: int) -> dict[str, Any]:
        profiler = WarmupProfiler(self.t_prof, self.prof_nodes, float(self.gpus_per_node), table)
        return {
            "table": table,
            "t_prof": self.t_prof,
            "prof_scale": self.prof_nodes,
            "prof_factor": float(self.gpus_per_node),
            "ebm": dataclasses.replace(self.ebm, random_state=seed),
            "seed": seed,
            "profiler": profiler,
        }


def _arm_policy(arm: str, setup: LucidSetup, table: WorkloadTable, seed: int, source: Callable[[float], InsightSource]) -> Policy:
    opts = setup.lucid_options(table, seed)
    if arm == "lucid":
        return Lucid(**opts)
    if arm in BASELINE_ARMS:
        return make_policy(arm)
    if arm == "lucid+oracle":  # Lucid+SM on true durations and metrics: the headroom over the real agents
        policy = LucidSchedMate(oracle_source(table)([], seed, 1.0), cancellation=Cancellation(theta=setup.theta), **opts)
        policy.name = arm
        return policy
    flags, theta, rate = Flags(), setup.theta, setup.detection_rate
    if arm == "lucid+sm/bypass":
        flags = Flags.only("bypass_profiling")
    elif arm == "lucid+sm/duration":
        flags = Flags.only("advisor_duration")
    elif arm == "lucid+sm/cancel":
        flags = Flags.only("packing_cancellation")
    elif arm == "lucid+sm/theta0.65":
        theta = setup.theta_alt
    elif arm.startswith("lucid+sm/global-fallback"):  # unmatched jobs' EBM estimates scaled by one factor (before issue 22)
        flags = Flags(fallback_by_class=False)
        if "/d=" in arm:  # e.g. lucid+sm/global-fallback/d=0.5: only half the jobs seen, the rest on the EBM
            rate = float(arm.rsplit("=", 1)[1])
    elif arm.startswith("lucid+sm/d="):
        rate = float(arm.split("=", 1)[1])
    elif arm != "lucid+sm":
        raise BadInput(f"unknown arm {arm!r}")
    policy = LucidSchedMate(source(rate), flags=flags, cancellation=Cancellation(theta=theta), **opts)
    policy.name = arm
    return policy


def _simulate(jobs: Sequence[JobSpec], gpus: int, policy: Policy, interference: Any, seed: int) -> SimResult:
    cluster = ClusterSpec.homogeneous(max(2, gpus // 8), 8)
    config = SimConfig(seed=seed, record_timeline=False)
    return Simulator(cap_gpus(jobs, cluster.total_gpus), cluster, policy, config, interference=interference).run()


def _extra(policy: Policy) -> dict[str, Any]:
    info = policy.run_stats()
    out: dict[str, Any] = {}
    if "profiler" in info:
        out["profiler_gpu_s"] = info["profiler"]["gpu_seconds"]
        out["profiled"] = info["profiler"]["profiled"]
        out["packed"] = info["packed"]
    if "schedmate" in info:
        out["sm"] = info["schedmate"]
        out["source"] = info["source"]
    return out


# ================================================================================= experiment


def _load_trace(name: str, n_jobs: int, seed: int, window_days: float, *, earlier: bool = False) -> list[JobSpec] | None:
    """The evaluated window, or with `earlier` the disjoint window just before it (same length;
    for the synthetic trace an independent draw of the same generator)."""
    back = -window_days if earlier else 0.0
    if name == "synthetic":
        return synthetic_jobs(n_jobs, seed + (10_007 if earlier else 0), profile="helios", cluster_gpus=64, load=1.0, max_gpus=8)
    if name == "helios":
        path = shared_file("helios-venus-derived", "helios_trace.csv")
        return load_window(path, days=window_days, last_days=30, offset_days=back) if path else None
    if name == "philly":
        path = shared_file("sia", "traces", "philly.csv")
        return load_window(path, days=window_days, offset_days=27.0 + back) if path else None
    raise BadInput(f"unknown trace {name!r}; choose from {', '.join(TRACES)}")


def world_window(trace: str, n_jobs: int, seed: int, window_days: float,
                 model: WorldModel | None = None) -> tuple[list[JobSpec], list[JobSpec]] | None:
    """(the evaluated window as the world runs it, the earlier window's jobs as history), or None
    when the trace file is absent (`sim.world`: plans from the earlier window only)."""
    evaluated = _load_trace(trace, n_jobs, seed, window_days)
    earlier = _load_trace(trace, n_jobs, seed, window_days, earlier=True)
    if evaluated is None or not earlier:
        return None
    model = model or WorldModel(early=EarlyStops.for_trace(trace))
    return realise(evaluated, seed, earlier, model), history_window(earlier, seed, model)


def run_lucid_experiment(
    out_dir: Path | None,
    *,
    make_source: MakeSource,
    source_label: str,
    traces: Sequence[str] = ("helios", "philly"),
    seeds: int | Sequence[int] = 3,
    n_jobs: int = 1000,
    window_days: float = 3.0,
    cluster_gpus: Mapping[str, int] | None = None,
    start_gpus: Mapping[str, int] | None = None,
    sweep: Sequence[float] = SWEEP,
    arms: Sequence[str] | None = None,
    setup: LucidSetup = LucidSetup(),
    table: WorkloadTable | None = None,
    workloads: str = "artefact",
    progress: Callable[[str], None] | None = None,
) -> ExperimentResult:
    """Run case 1 and write `lucid.json`, `lucid.csv`, per-seed job CSVs and plots to `out_dir`.

    `source_label` names the insight source in every output (e.g. "SimulationInsights" or
    "oracle (smoke only)"). `cluster_gpus` fixes a trace's cluster and skips sizing;
    `start_gpus` is where sizing starts (default 256, 64 for synthetic). `n_jobs` applies to
    the synthetic trace; `arms` defaults to all (main, ablations, baselines, sweep).
    `workloads`: "artefact" (default: each job runs the workload its generated code describes,
    `sim.workloads`) or "lucid-table" (a random `single_data.csv` row per job, Lucid's
    measured data, while the advisor reads code of another workload: kept for comparison only).
    """
    if workloads not in WORKLOADS:
        raise BadInput(f"unknown workloads {workloads!r}; choose from {', '.join(WORKLOADS)}")
    if workloads == "lucid-table":
        table = table if table is not None else load_default_table()
        if table is None:
            raise RuntimeError("Lucid's single_data.csv is needed (../shared/data/lucid; set SCHEDMATE_SHARED_DATA)")

    def workload_of(specs: Sequence[JobSpec], seed: int) -> tuple[list[JobSpec], WorkloadTable]:
        """(jobs with their workload, the table the simulator, profiler and interference use)."""
        if workloads == "artefact":
            specs, tab = artefact_workloads(specs, seed, gamma=setup.gamma)
        else:
            assert table is not None
            tab = table
        return prepare_jobs(specs, tab, seed, bias_share=setup.bias_share), tab
    say = progress or (lambda _msg: None)
    seed_list = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    sweep_arms = tuple(f"lucid+sm/d={d:g}" for d in sweep)
    arm_list = list(arms) if arms is not None else [*MAIN_ARMS, *ABLATION_ARMS, *BASELINE_ARMS, *ORACLE_ARMS, *sweep_arms]
    rows: list[RunRow] = []
    details: dict[str, Any] = {"source": source_label, "skipped_traces": {}, "sizing": {}, "trace_jobs": {}}
    plots: dict[str, dict[str, SimResult]] = {}
    started = time.perf_counter()
    histories = Histories()
    use_history(make_source, histories)  # history from the earlier window, never the evaluated one
    quality: dict[str, dict[str, list[dict[str, Any]]]] = {}
    details["world"] = {"rules": "sim/world.py", **dataclasses.asdict(WorldModel())}
    for trace in traces:
        first_world = world_window(trace, n_jobs, seed_list[0], window_days)
        if first_world is None:
            details["skipped_traces"][trace] = "trace file (or its earlier window) absent under ../shared/data"
            continue
        base = first_world[0]
        gpus = (cluster_gpus or {}).get(trace)
        if gpus is None:
            first, first_table = workload_of(base, seed_list[0])
            first_interference = HeavyPairInterference.from_shared_data(first_table, setup.gamma)

            def baseline(n: int, jobs: list[JobSpec] = first, trace: str = trace, table: Any = first_table,
                         interference: Any = first_interference) -> Any:
                say(f"{trace}: sizing with lucid on {n} GPUs")
                return wait_stats(_simulate(jobs, n, Lucid(**setup.lucid_options(table, seed_list[0])),
                                            interference, seed_list[0])).share

            start = (start_gpus or {}).get(trace, 64 if trace == "synthetic" else 256)
            sizing = size_cluster(baseline, start_gpus=start)
            gpus = sizing.gpus
            details["sizing"][trace] = dataclasses.asdict(sizing) | {"met": sizing.met}
        else:
            details["sizing"][trace] = {"gpus": gpus, "fixed": True}
        for seed in seed_list:
            evaluated, history = (first_world if seed == seed_list[0] else
                                  world_window(trace, n_jobs, seed, window_days) or ([], []))
            jobs, seed_table = workload_of(evaluated, seed)
            histories.add(jobs, seed, history)
            details.setdefault("world_stops", {})[f"{trace}/seed{seed}"] = stop_shares(jobs)
            interference = HeavyPairInterference.from_shared_data(seed_table, setup.gamma)
            details["trace_jobs"][f"{trace}/seed{seed}"] = len(jobs)
            results: dict[str, SimResult] = {}
            for arm in arm_list:
                reuse = _same_as(arm, setup, arm_list)
                if reuse is not None and reuse in results:
                    results[arm] = results[reuse]
                    rows.append(dataclasses.replace(next(r for r in reversed(rows) if r.arm == reuse and r.trace == trace and r.seed == seed), arm=arm))
                    continue
                say(f"{trace} seed {seed}: {arm}")
                policy = _arm_policy(arm, setup, seed_table, seed, partial(make_source, jobs, seed))
                result = _simulate(jobs, gpus, policy, interference, seed)
                results[arm] = result
                waits = wait_stats(result)
                extra = {"mean_wait": waits.mean_wait, "wait_share": waits.share, **_extra(policy)}
                source = policy.source if isinstance(policy, LucidSchedMate) else None
                log = source.advice_log() if source is not None else None
                if log is not None:
                    q = estimate_quality(log, jobs)
                    quality.setdefault(trace, {}).setdefault(arm, []).append(q)
                    extra["advisor_quality"] = without_errors(q)
                rows.append(RunRow(trace, arm, seed, gpus, summarize(result), extra))
                if source is not None:  # a per-run source's work dirs and caches, once its stats are read
                    source.close()
            if seed == seed_list[0]:
                plots[f"{trace}_seed{seed}"] = results
    details["wall_seconds"] = round(time.perf_counter() - started, 1)
    details["advisor_quality"] = {t: {a: without_errors(merge_quality(qs)) for a, qs in arms_q.items()}
                                  for t, arms_q in quality.items()}
    details["speedup_lucid_over_sm"] = speedups(rows, "lucid", "lucid+sm")
    details["profiler_gpu_s_saved_measured"] = _profiler_saving(rows)
    summary = _summary_line(rows, details, len(seed_list))
    files: list[Path] = []
    if out_dir is not None:
        config = {
            "traces": list(traces), "seeds": seed_list, "n_jobs_synthetic": n_jobs, "window_days": window_days,
            "arms": arm_list, "sweep": list(sweep), "setup": dataclasses.asdict(setup), "source": source_label,
            "workloads": workloads,
        }
        cdf = [a for a in ("lucid", "lucid+sm", "lucid+sm/theta0.65", "tiresias", "qssf") if a in arm_list]
        files = write_experiment(out_dir, "lucid", rows, config=config, details=details, results=plots, cdf_arms=cdf)
        files += _sweep_plots(out_dir, rows, sweep)
        (out_dir / "summary.txt").write_text(summary + "\n")
        files.append(out_dir / "summary.txt")
    return ExperimentResult("lucid", out_dir, rows, aggregate(rows), files, summary, details)


def _same_as(arm: str, setup: LucidSetup, arms: Sequence[str]) -> str | None:
    """A sweep point identical to an arm already run (same source rate, all enhancements)."""
    if arm.startswith("lucid+sm/d=") and float(arm.split("=", 1)[1]) == setup.detection_rate and "lucid+sm" in arms:
        return "lucid+sm"
    return None


def _profiler_saving(rows: Sequence[RunRow]) -> dict[str, list[float]]:
    """Per trace, per seed: profiler GPU-s of Lucid minus that of Lucid+SM (measured)."""
    by = {(r.trace, r.arm, r.seed): r.extra.get("profiler_gpu_s") for r in rows}
    out: dict[str, list[float]] = {}
    for (trace, arm, seed), v in by.items():
        base = by.get((trace, "lucid", seed))
        if arm == "lucid+sm" and v is not None and base is not None:
            out.setdefault(trace, []).append(round(base - v, 1))
    return out


def _sweep_plots(out_dir: Path, rows: Sequence[RunRow], sweep: Sequence[float]) -> list[Path]:
    files = []
    for trace in sorted({r.trace for r in rows}):
        ys = []
        for d in sweep:
            vals = [r.summary.mean_jct for r in rows if r.trace == trace and r.arm == f"lucid+sm/d={d:g}"]
            ys.append(float(np.mean(vals)) / 3600.0 if vals else None)
        if all(y is None for y in ys):
            continue
        lucid = [r.summary.mean_jct for r in rows if r.trace == trace and r.arm == "lucid"]
        series = {"Lucid+SchedMate": ys}
        if lucid:
            series["Lucid"] = [float(np.mean(lucid)) / 3600.0] * len(sweep)
        files.append(plot_lines(out_dir / f"detection_sweep_{trace}.png", sweep, series, xlabel="detection rate d", ylabel="avg JCT (h)", title=f"Detection-rate sweep — {trace}"))
    return files


def _summary_line(rows: Sequence[RunRow], details: Mapping[str, Any], n_seeds: int) -> str:
    parts = []
    for trace in dict.fromkeys(r.trace for r in rows):
        def mean(arm: str, metric: str = "mean_jct", trace: str = trace) -> float:
            vals = [getattr(r.summary, metric) if metric != "mean_wait" else r.extra.get(metric, math.nan) for r in rows if r.trace == trace and r.arm == arm]
            return float(np.mean(vals)) if vals else math.nan

        sp = details["speedup_lucid_over_sm"].get(trace, [])
        ev = [r.extra.get("sm", {}).get("evictions", 0) for r in rows if r.trace == trace and r.arm == "lucid+sm"]
        saved = details["profiler_gpu_s_saved_measured"].get(trace, [])
        gpus = next(r.gpus for r in rows if r.trace == trace)
        parts.append(
            f"{trace} ({gpus} GPUs): avg JCT Lucid {mean('lucid') / 3600:.2f} h vs Lucid+SM {mean('lucid+sm') / 3600:.2f} h "
            f"(avg wait {mean('lucid', 'mean_wait') / 3600:.2f} h vs {mean('lucid+sm', 'mean_wait') / 3600:.2f} h) "
            f"(speedup {np.mean(sp) if sp else math.nan:.2f}x, min {min(sp) if sp else math.nan:.2f}x), "
            f"evictions {np.mean(ev) if ev else 0:.0f}, profiler GPU-h saved {np.mean(saved) / 3600 if saved else 0:.1f}"
        )
        q = details.get("advisor_quality", {}).get(trace, {}).get("lucid+sm")
        if q is not None:
            parts[-1] += f"; {quality_line(q)}"
        if "lucid+oracle" in {r.arm for r in rows if r.trace == trace}:
            parts[-1] += f"; Lucid+SM with oracle durations {mean('lucid+oracle') / 3600:.2f} h"
    return f"lucid experiment [{details['source']}; {n_seeds} seed(s)]: " + "; ".join(parts)


# ================================================================ the generic adapter arm's world


def artefact_world(jobs: Sequence[JobSpec], seed: int, gpus: int) -> PolicyWorld:
    """Lucid's world for the generic adapter arm (`adapters.lucid.ADAPTER` names it), as this case
    study sets it: each job runs the workload its generated code describes (`artefact_workloads`:
    model, dataset, batch, AMP from the artefact, planned from `planned_work`), 30% of jobs have a
    warm-up-biased profile, and co-located pairs slow down by Lucid's measured pairs or the
    heavy-pair model. Both arms take the case study's Lucid options (profiler node, T_prof 100 s,
    the fast EBM)."""
    setup = LucidSetup()
    base = homogeneous_world(jobs, seed, max(16, gpus))
    specs, table = artefact_workloads(base.jobs, seed, gamma=setup.gamma)
    specs = prepare_jobs(specs, table, seed, bias_share=setup.bias_share)
    interference = HeavyPairInterference.from_shared_data(table, setup.gamma)

    def simulate(run: Sequence[JobSpec], cluster: ClusterSpec, policy: Policy, config: SimConfig) -> SimResult:
        return Simulator(list(run), cluster, policy, config, interference=interference).run()

    return PolicyWorld(specs, base.cluster, options=setup.lucid_options(table, seed), simulate=simulate)
