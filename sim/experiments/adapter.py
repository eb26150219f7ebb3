"""The generic adapter arm: any registered policy with and without its SchedMate adapter.

    schedmate experiment adapter --policy ares [--trace synthetic] [--jobs 120] [--gpus 32] [--seeds 1]

World: the realistic one of the case studies (`sim.world`, as Lucid's case builds it: a window of
the trace as the world runs it, plans and artefacts from an earlier disjoint window, whose jobs are
the advisor's prior history). The policy's adapter (`adapters.registry.PolicyAdapter`, declared in
`adapters/<policy>.py`) then gives the jobs the attributes that policy reads (its `world`), the
cluster and the simulator; nothing here is specific to one policy. Arms, on the same jobs, cluster
and engine seed: `<policy>` (the reference as deployed without SchedMate) and `<policy>+sm` (the
adapter over `make_source`: `SemanticSources`, the real agents built by `agents/stack.py`, in
reported runs). Per run: the engine's summary, the adapter's own counters (`run_stats`), and, where
the adapter reads the advisor and the source keeps a log, its estimate quality against the world's
run times.

The policies' own case studies (`schedmate experiment <policy>-adapter`) stay: they replay each
paper's workload and report what only that policy measures (Arena's profiling, Suika's model error).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from schedmate.adapters.registry import PolicyAdapter, adapter_for
from schedmate.schedulers.engine import SimConfig, SimResult
from schedmate.schedulers.job import JobSpec
from schedmate.schedulers.metrics import summarize
from schedmate.sim.experiments.common import (
    ExperimentResult,
    MakeSource,
    RunRow,
    aggregate,
    compare_arms,
    write_experiment,
)
from schedmate.sim.experiments.quality import estimate_quality, merge_quality, quality_line, without_errors
from schedmate.sim.experiments.sources import use_history
from schedmate.sim.world import Histories

__all__ = ["AdapterArmConfig", "run_adapter_experiment"]

SM_SUFFIX = "+sm"


@dataclass(frozen=True)
class AdapterArmConfig:
    policy: str = "ares"
    trace: str = "synthetic"  # synthetic | helios | philly (`sim.experiments.lucid.world_window`)
    seeds: tuple[int, ...] = (0,)
    n_jobs: int = 120  # the synthetic trace's jobs
    window_days: float = 3.0
    gpus: int = 32  # the cluster, where the policy's world does not bring its own
    detection_rate: float = 1.0
    plots: bool = False


def world_jobs(cfg: AdapterArmConfig, seed: int) -> tuple[list[JobSpec], list[JobSpec]] | None:
    """(the evaluated window as the world runs it, the earlier window as history), or None when
    the trace file is absent: the world of Lucid's case (`sim.experiments.lucid.world_window`)."""
    from schedmate.sim.experiments.lucid import world_window

    return world_window(cfg.trace, cfg.n_jobs, seed, cfg.window_days)


def _scalars(stats: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in stats.items() if isinstance(v, (int, float, str, bool)) or isinstance(v, dict)}


def run_adapter_experiment(
    out_dir: Path | None,
    *,
    make_source: MakeSource,
    config: AdapterArmConfig = AdapterArmConfig(),
    adapter: PolicyAdapter | None = None,
    progress: Callable[[str], None] | None = None,
    source_label: str | None = None,
) -> ExperimentResult:
    """Both arms per seed; writes `adapter-<policy>.json`/`.csv` to `out_dir`. `adapter` defaults to
    the one registered for `config.policy` (`adapters.registry.adapter_for`)."""
    cfg = config
    spec = adapter or adapter_for(cfg.policy)
    base_arm, sm_arm = spec.policy, spec.policy + SM_SUFFIX
    histories = Histories()
    use_history(make_source, histories)  # history from the earlier window, never the evaluated one
    rows: list[RunRow] = []
    results: dict[str, dict[str, SimResult]] = {}
    quality: list[dict[str, Any]] = []
    skipped: list[int] = []
    for seed in cfg.seeds:
        made = world_jobs(cfg, seed)
        if made is None:
            skipped.append(seed)
            continue
        evaluated, history = made
        world = spec.build_world(evaluated, seed, cfg.gpus)
        histories.add(world.jobs, seed, history)
        for arm in (base_arm, sm_arm):
            source = make_source(world.jobs, seed, cfg.detection_rate) if arm == sm_arm else None
            policy = (spec.build_adapter(source, **world.options) if source is not None
                      else spec.build_baseline(**world.options))
            policy.name = arm
            result = world.simulate(world.jobs, world.cluster, policy, SimConfig(seed=seed, record_timeline=False))
            summary = summarize(result)
            extra: dict[str, Any] = {"policy": _scalars(policy.run_stats())}
            for k in spec.counters:  # a counter the world never incremented is a zero
                extra[f"world.{k}"] = float(result.world_stats.get(k, 0.0))
            if source is not None:
                extra["source"] = {k: v for k, v in source.stats().items() if isinstance(v, (int, float, str, bool))}
                log = source.advice_log() if "advise" in spec.reads else None  # no advice asked: no quality
                if log is not None:
                    q = estimate_quality(log, world.jobs)
                    quality.append(q)
                    extra["advisor_quality"] = without_errors(q)
            rows.append(RunRow(cfg.trace, arm, seed, world.cluster.total_gpus, summary, extra))
            if cfg.plots:
                results.setdefault(f"{cfg.trace}/seed{seed}", {})[arm] = result
            if progress is not None:
                progress(f"{cfg.trace} seed {seed} {arm:14s} mean JCT {summary.mean_jct / 3600:7.3f} h  "
                         f"p99 {summary.p99_jct / 3600:7.2f} h  ({summary.wall_seconds:.0f} s)")
    comparison = compare_arms(rows, base_arm, sm_arm, both=[f"world.{k}" for k in spec.counters])
    merged = without_errors(merge_quality(quality)) if quality else {}
    line = summary_line(spec, cfg, comparison, merged, source_label=source_label or _source_label(rows))
    details = {"policy": spec.policy, "reads": list(spec.reads), "comparison": comparison,
               "advisor_quality": merged, "skipped_seeds": skipped, "summary": line}
    name = f"adapter-{spec.policy}"
    files: list[Path] = []
    if out_dir is not None:
        files = write_experiment(out_dir, name, rows, config=asdict(cfg), details=details, results=results or None)
    return ExperimentResult(name, out_dir, rows, aggregate(rows), files, line, details)


def _source_label(rows: Sequence[RunRow]) -> str:
    """The sources the rows name, when the caller did not say which it passed."""
    names = sorted({str(r.extra["source"].get("source", "?")) for r in rows if "source" in r.extra})
    return " | ".join(names) or "none"


def summary_line(spec: PolicyAdapter, cfg: AdapterArmConfig, comparison: dict[str, dict[str, float]],
                 quality: dict[str, Any], *, source_label: str) -> str:
    """One line: mean JCT of both arms and its change, the world's counters the adapter names
    (seed means, both arms) and the advisor's estimate quality."""
    base, sm = spec.policy, spec.policy + SM_SUFFIX
    if not comparison:
        return f"{sm} vs {base} ({cfg.trace}): no run (trace absent?)"
    parts = [f"{t}: mean JCT {c[f'{base}_mean_jct_h']:.3f} h -> {c[f'{sm}_mean_jct_h']:.3f} h "
             f"({100 * c['jct_change']:+.1f}%, better on {c['seeds_better']:.0f}/{c['seeds']:.0f} seeds)"
             + "".join(f", {k} {c[f'{base}_world.{k}']:.1f} -> {c[f'{sm}_world.{k}']:.1f}" for k in spec.counters)
             for t, c in comparison.items()]
    advisor = f"; {quality_line(quality)}" if quality else ""
    return (f"{sm} vs {base} (realistic world, {len(cfg.seeds)} seed(s), detection {cfg.detection_rate:g}, "
            f"source: {source_label}): " + "; ".join(parts) + advisor)
