"""Run several policies on the same trace and cluster, the unit of every comparison we report."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .cluster import ClusterSpec
from .engine import SimConfig, SimResult, Simulator
from .interference import InterferenceModel
from .job import JobSpec
from .metrics import Summary, job_records, summarize, write_outputs
from .placement import make_placer
from .plots import plot_jct_cdf, plot_utilisation
from .policies import make_policy
from .traces.plausibility import TraceWarnings, check_plausibility

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Comparison:
    """Results per policy; `metrics_seconds` (per-job records, all policies) and `output_seconds`
    (CSV, JSON, plots) say where the wall time beyond the engine went; `warnings` lists implausible
    jobs (far-off submit times, jobs larger than the cluster), also written to `warnings.json`."""

    results: dict[str, SimResult]
    summaries: dict[str, Summary]
    files: list[Path]
    metrics_seconds: float = 0.0
    output_seconds: float = 0.0
    warnings: TraceWarnings = TraceWarnings()


def compare_policies(
    jobs: Sequence[JobSpec],
    cluster: ClusterSpec,
    policies: Sequence[str],
    *,
    config: SimConfig | None = None,
    placer: str = "consolidate",
    interference: InterferenceModel | None = None,
    out_dir: Path | None = None,
    progress: Progress | None = None,
) -> Comparison:
    """Simulate each policy (fresh state each time) and write CSV/JSON/PNG when `out_dir` is set."""
    warnings = check_plausibility(jobs, cluster)
    results: dict[str, SimResult] = {}
    for name in policies:
        policy = make_policy(name)
        report = (lambda done, total, _n=name: progress(_n, done, total)) if progress else None
        sim = Simulator(
            jobs, cluster, policy, config, placer=make_placer(placer), interference=interference, report=report
        )
        results[name] = sim.run()
    started = time.perf_counter()
    records = {name: job_records(r) for name, r in results.items()}  # once: CSV and plot share them
    metrics_done = time.perf_counter()
    files: list[Path] = []
    if out_dir is not None:
        summaries = write_outputs(out_dir, results, records)
        files += [out_dir / "summary.json", out_dir / "summary.csv"]
        files.append(plot_jct_cdf(results, out_dir / "jct_cdf.png", records=records))
        files.append(plot_utilisation(results, out_dir / "utilisation.png"))
        if warnings:
            (out_dir / "warnings.json").write_text(json.dumps(warnings.as_dict(), indent=2))
            files.append(out_dir / "warnings.json")
    else:
        summaries = {name: summarize(r, records[name]) for name, r in results.items()}
    return Comparison(
        results,
        summaries,
        files,
        metrics_seconds=metrics_done - started,
        output_seconds=time.perf_counter() - metrics_done,
        warnings=warnings,
    )
