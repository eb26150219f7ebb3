"""Case 2 (spec §8.2): Sia vs Sia+SchedMate on Sia's workloads, with a FIFO baseline.

    schedmate experiment sia --out OUT_DIR [--workloads philly/workload-1.csv,...] [--seeds 3]
        [--t-prof 120] [--t-prof-sweep 60,300] [--detection-rate 1] [--limit N] [--source agents|rule]

Cluster: Sia's 64 GPUs of 3 types (6×4 T4, 2×8 A100, 3×8 2080Ti). Workloads: `philly` and
`saturn` workload-1..3 (160 jobs each; `newtrace/workload-1.csv`, 960 jobs, on request), paths
relative to `<shared data>/sia/workloads`. Arms:

- `sia-fifo` (`sia-fifo+bf` with backfill): heterogeneity-unaware rigid FIFO (shows the Sia
  policy is real; without backfill it is sensitive to arrival order, hence to the jitter);
- `sia`: the Sia policy, every new job profiling on 1 GPU of each type for t_prof (spec §8.2;
  Sia's own simulator charges nothing), with `reserve_profiling` (each round leaves those GPUs
  free, so profiling costs GPU time and ≈ t_prof of delay instead of waiting for a gap);
- `sia+sm`: `SiaSchedMate` with the run's `InsightSource`, same t_prof for unmatched jobs;
- optional `sia-noprof` (Sia's simulator as published: t_prof = 0, the bound on what skipping
  profiling can gain) and a t_prof sweep (`sia@t<s>` and `sia+sm@t<s>` arms).

What a seed varies (the Sia simulation itself is deterministic): (1) every job's submit time is
shifted by U(0, `jitter_s`) (default one 60 s round), drawn from the seed and shared by all arms
of that seed, so the round phase each job meets and the order of near-simultaneous arrivals
change; (2) the insight source's detection draw (`make_source(specs, seed, rate)`); (3) the
engine seed. `jitter_s=0` replays the workload files exactly.

`make_source` builds the run's `InsightSource`; the default `rule_source` applies spec §8.2's
matching rule (an earlier job of the same application and batch size, thinned by the detection
rate) without any agent — a stand-in until the real `SimulationInsights` is plugged in; its
name is recorded in the results and the summary line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from schedmate.adapters.insights import AdvisorInsight, InsightSource
from schedmate.adapters.sia import SiaSchedMate
from schedmate.errors import BadInput
from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.engine import SimConfig, SimResult
from schedmate.schedulers.job import JobSpec, JobState
from schedmate.schedulers.metrics import summarize
from schedmate.schedulers.policy import Policy
from schedmate.schedulers.sia import SIA_CLUSTER, Sia, SiaFIFO, SiaThroughput, load_sia_jobs, simulate_sia
from schedmate.sim.experiments.common import (
    ExperimentResult,
    MakeSource,
    RunRow,
    aggregate,
    detected,
    shared_file,
    write_experiment,
)

__all__ = [
    "DEFAULT_WORKLOADS",
    "NEWTRACE",
    "SameConfigInsights",
    "SiaExperimentConfig",
    "jitter_submits",
    "rule_source",
    "run_sia_experiment",
]

DEFAULT_WORKLOADS = tuple(f"{t}/workload-{i}.csv" for t in ("philly", "saturn") for i in (1, 2, 3))
NEWTRACE = "newtrace/workload-1.csv"
SEED_MEANING = (
    "submit times shifted by U(0, jitter_s) per job (shared by all arms of a seed); "
    "the insight source's detection draw; the engine seed"
)


# ================================================================================= insight source


@dataclass
class SameConfigInsights(InsightSource):
    """RULE SOURCE, not the SchedMate agents: spec §8.2's match rule applied to the trace.

    A detected job (`detected(job_id, seed, rate, "advise")`) is matched to up to `k` earlier
    recorded jobs of this run with the same application and batch size, earliest first (they
    have run longest); undetected jobs get None. Only `advise` and `record` do anything.
    """

    seed: int = 0
    detection_rate: float = 1.0
    k: int = 3
    latency_s: float = 0.0  # 0: the adapter charges its default advisor latency (9 s)
    _seen: dict[tuple[str, int], list[str]] = field(default_factory=dict)
    _calls: dict[str, int] = field(default_factory=lambda: {"advise": 0, "detected": 0, "matched": 0, "recorded": 0})

    @staticmethod
    def key(spec: JobSpec) -> tuple[str, int]:
        return str(spec.attributes.get("application")), int(spec.attributes.get("batch_size") or 0)

    def advise(self, job: JobState) -> AdvisorInsight | None:
        self._calls["advise"] += 1
        if not detected(job.job_id, self.seed, self.detection_rate, "advise"):
            return None
        self._calls["detected"] += 1
        similar = tuple(j for j in self._seen.get(self.key(job.spec), ()) if j != job.job_id)[: self.k]
        self._calls["matched"] += bool(similar)
        return AdvisorInsight(similar, None, None, None, latency_s=self.latency_s)

    def record(self, job: JobState, *, finished: bool) -> None:
        if not finished:
            self._calls["recorded"] += 1
            self._seen.setdefault(self.key(job.spec), []).append(job.job_id)

    def stats(self) -> dict[str, Any]:
        return {"source": "rule: same application & batch size (spec 8.2), no agents", **self._calls}


def rule_source(specs: Sequence[JobSpec], seed: int, detection_rate: float) -> InsightSource:
    """`MakeSource` for `SameConfigInsights` (the default until the real source is plugged in)."""
    return SameConfigInsights(seed=seed, detection_rate=detection_rate)


# ================================================================================= configuration


@dataclass(frozen=True)
class SiaExperimentConfig:
    workloads: tuple[str, ...] = DEFAULT_WORKLOADS
    seeds: tuple[int, ...] = (0, 1, 2)
    arms: tuple[str, ...] = ("sia-fifo", "sia", "sia+sm")
    t_prof: float = 120.0
    t_prof_sweep: tuple[float, ...] = ()  # extra sia@t / sia+sm@t arms per value
    detection_rate: float = 1.0
    jitter_s: float = 60.0
    limit: int | None = None  # first N jobs of each workload (reduced runs)
    reserve_profiling: bool = True
    advisor_latency_s: float = 9.0
    cluster: str = SIA_CLUSTER
    time_limit: float = 10.0  # HiGHS seconds per round


def jitter_submits(specs: Sequence[JobSpec], seed: int, jitter_s: float) -> list[JobSpec]:
    """`specs` with each submit time shifted by U(0, jitter_s) drawn from `seed` (0: unchanged)."""
    if jitter_s <= 0:
        return list(specs)
    shifts = np.random.default_rng(seed).uniform(0.0, jitter_s, size=len(specs))
    return [replace(s, submit_time=s.submit_time + float(d)) for s, d in zip(specs, shifts)]


def _arm_t_prof(arm: str, default: float) -> tuple[str, float]:
    """'sia+sm@t300' -> ('sia+sm', 300.0); 'sia' -> ('sia', default)."""
    base, _, t = arm.partition("@t")
    return base, float(t) if t else default


def make_policy(arm: str, cfg: SiaExperimentConfig, source: InsightSource | None, throughput: SiaThroughput) -> Policy:
    base, t_prof = _arm_t_prof(arm, cfg.t_prof)
    common = dict(throughput=throughput, reserve_profiling=cfg.reserve_profiling, time_limit=cfg.time_limit)
    if base in ("sia-fifo", "sia-fifo+bf"):
        return SiaFIFO(backfill=base.endswith("+bf"), throughput=throughput)
    if base == "sia-noprof":
        return Sia(profile_seconds=0.0, throughput=throughput, time_limit=cfg.time_limit)
    if base == "sia":
        return Sia(profile_seconds=t_prof, **common)  # type: ignore[arg-type]  # `common` holds Sia's keyword arguments
    if base == "sia+sm":
        if source is None:
            raise ValueError("the sia+sm arm needs an insight source")
        return SiaSchedMate(source, advisor_latency_s=cfg.advisor_latency_s, profile_seconds=t_prof, **common)
    raise BadInput(f"unknown arm {arm!r}: sia-fifo[+bf], sia-noprof, sia, sia+sm (optionally @t<seconds>)")


def policy_extra(policy: Policy) -> dict[str, Any]:
    """Profiling GPU-hours, bootstrap share and (Sia+SM) the adapter's counters of one run."""
    stats = policy.run_stats()
    extra: dict[str, Any] = {
        "profiling_gpu_hours": stats.get("profiling_gpu_seconds", 0.0) / 3600.0,
        "profiled_jobs": stats.get("profiled_jobs", 0),
        "bootstrap_share": 0.0,
    }
    if "ilp_seconds" in stats:
        extra["ilp_seconds"] = stats["ilp_seconds"]
    if isinstance(policy, SiaSchedMate):
        info = policy.info()
        extra.update({k: v for k, v in info.items() if k not in ("source", "t_prof_s")})
    return extra


# ================================================================================= the experiment


def resolve_workload(name: str) -> Path | None:
    path = Path(name)
    return path if path.is_file() else shared_file("sia", "workloads", *Path(name).parts)


def run_sia_experiment(
    out_dir: Path | None,
    *,
    make_source: MakeSource = rule_source,
    config: SiaExperimentConfig = SiaExperimentConfig(),
    progress: Callable[[str], None] | None = None,
) -> ExperimentResult:
    """Run every (workload, seed, arm), write `sia.json`/`sia.csv`/plots to `out_dir` (if given)."""
    cfg = config
    cluster = ClusterSpec.parse(cfg.cluster)
    throughput = SiaThroughput()
    arms = list(cfg.arms) + [f"{a}@t{t:g}" for t in cfg.t_prof_sweep for a in ("sia", "sia+sm")]
    rows: list[RunRow] = []
    results: dict[str, dict[str, SimResult]] = {}
    sources: dict[str, dict[str, Any]] = {}
    missing: list[str] = []
    for wl in cfg.workloads:
        path = resolve_workload(wl)
        if path is None:
            missing.append(wl)
            continue
        base_jobs = load_sia_jobs(path, limit=cfg.limit, throughput=throughput)
        for seed in cfg.seeds:
            specs = jitter_submits(base_jobs, seed, cfg.jitter_s)
            label = f"{Path(wl).with_suffix('')}/seed{seed}"
            for arm in arms:
                needs_source = _arm_t_prof(arm, cfg.t_prof)[0] == "sia+sm"
                source = make_source(specs, seed, cfg.detection_rate) if needs_source else None
                policy = make_policy(arm, cfg, source, throughput)
                result = simulate_sia(specs, cluster, policy, SimConfig(seed=seed, record_timeline=False))
                summary = summarize(result)
                extra = policy_extra(policy)
                rows.append(RunRow(wl, arm, seed, cluster.total_gpus, summary, extra))
                results.setdefault(label, {})[arm] = result
                if isinstance(policy, SiaSchedMate):
                    sources[label] = policy.source.stats()
                if progress is not None:
                    progress(
                        f"{label:22s} {arm:12s} mean JCT {summary.mean_jct / 3600:6.3f} h  p99 {summary.p99_jct / 3600:6.2f} h  "
                        f"makespan {summary.makespan / 3600:6.2f} h  prof {extra['profiling_gpu_hours']:5.2f} GPU-h  "
                        f"boot {extra['bootstrap_share']:.2f}  ({summary.wall_seconds:.0f} s)"
                    )
    source_name = _source_name(sources)
    comparison = compare(rows, "sia", "sia+sm")
    line = summary_line(rows, comparison, cfg, source_name)
    details = {
        "seed_meaning": SEED_MEANING,
        "source": source_name,
        "source_stats": sources,
        "missing_workloads": missing,
        "sia_vs_sia_sm": comparison,
        "sia_fifo_vs_sia": compare(rows, "sia-fifo", "sia"),
        "summary": line,
    }
    files: list[Path] = []
    if out_dir is not None:
        files = write_experiment(
            out_dir, "sia", rows, config=asdict(cfg), details=details, results=results, cdf_arms=("sia-fifo", "sia", "sia+sm")
        )
        files.append(plot_table(rows, out_dir / "sia_table3.png"))
    return ExperimentResult("sia", out_dir, rows, aggregate(rows), files, line, details)


def _source_name(sources: dict[str, dict[str, Any]]) -> str:
    names = {str(s.get("source", "unnamed")) for s in sources.values()}
    return " | ".join(sorted(names)) if names else "none (no sia+sm arm)"


def compare(rows: Sequence[RunRow], base: str, arm: str) -> dict[str, dict[str, float]]:
    """Per workload: 1 − arm/base of the seed-averaged mean JCT, p99 JCT and makespan."""
    out: dict[str, dict[str, float]] = {}
    for wl in dict.fromkeys(r.trace for r in rows):
        b = [r.summary for r in rows if r.trace == wl and r.arm == base]
        a = [r.summary for r in rows if r.trace == wl and r.arm == arm]
        if not a or not b:
            continue
        out[wl] = {
            m: 1.0 - float(np.mean([getattr(s, m) for s in a])) / float(np.mean([getattr(s, m) for s in b]))
            for m in ("mean_jct", "p99_jct", "makespan")
        }
    return out


def summary_line(
    rows: Sequence[RunRow], comparison: dict[str, dict[str, float]], cfg: SiaExperimentConfig, source: str
) -> str:
    if not comparison:
        return f"Sia experiment: {len(rows)} runs, no Sia vs Sia+SM pair (source: {source})"
    cuts = {m: float(np.mean([c[m] for c in comparison.values()])) for m in ("mean_jct", "p99_jct", "makespan")}
    wins = sum(c["mean_jct"] > 0 for c in comparison.values())
    boot = [r.extra.get("bootstrap_share", 0.0) for r in rows if r.arm == "sia+sm"]
    fifo = compare(rows, "sia-fifo", "sia")
    fifo_txt = f"; Sia vs FIFO mean JCT {_change(float(np.mean([c['mean_jct'] for c in fifo.values()])), 0)}" if fifo else ""
    return (
        f"Sia+SM vs Sia (t_prof {cfg.t_prof:g} s, detection {cfg.detection_rate:g}, {len(cfg.seeds)} seeds, source: {source}): "
        f"mean JCT {_change(cuts['mean_jct'])} (lower on {wins}/{len(comparison)} workloads), "
        f"p99 {_change(cuts['p99_jct'])}, makespan {_change(cuts['makespan'])}, "
        f"bootstrap share {100 * float(np.mean(boot)) if boot else 0:.0f}%{fifo_txt}; "
        "advisor estimates: no duration is used (Sia+SM copies a similar finished job's throughput model; "
        "Sia's artefacts are per application and batch, never planned from an outcome)"
    )


def plot_table(rows: Sequence[RunRow], path: Path) -> Path:
    """Paper Table 3 as bars: seed-averaged mean JCT, p99 JCT and makespan per workload and arm."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    workloads = list(dict.fromkeys(r.trace for r in rows))
    arms = list(dict.fromkeys(r.arm for r in rows))
    metrics = (("mean_jct", "avg JCT (h)"), ("p99_jct", "p99 JCT (h)"), ("makespan", "makespan (h)"))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    x = np.arange(len(workloads))
    width = 0.8 / max(len(arms), 1)
    for ax, (m, title) in zip(axes, metrics):
        for i, arm in enumerate(arms):
            vals = [
                np.mean([getattr(r.summary, m) for r in rows if r.trace == wl and r.arm == arm] or [np.nan]) / 3600
                for wl in workloads
            ]
            ax.bar(x + i * width, vals, width, label=arm)
        ax.set_xticks(x + width * (len(arms) - 1) / 2, [Path(w).with_suffix("").as_posix() for w in workloads], rotation=30, ha="right")
        ax.set_title(title)
    axes[0].legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _change(cut: float, digits: int = 1) -> str:
    """A relative cut (0.1 = 10% lower) as a signed change: "−10.0%", or "+9.5%" when it rose."""
    return f"{'−' if cut >= 0 else '+'}{abs(100 * cut):.{digits}f}%"
