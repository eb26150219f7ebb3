"""Run several policies on the same trace and cluster, the unit of every comparison we report."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .cluster import ClusterSpec
from .engine import SimConfig, SimResult, Simulator
from .interference import InterferenceModel
from .job import JobSpec
from .metrics import Summary, write_outputs
from .placement import make_placer
from .plots import plot_jct_cdf, plot_utilisation
from .policies import make_policy

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Comparison:
    results: dict[str, SimResult]
    summaries: dict[str, Summary]
    files: list[Path]


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
    results: dict[str, SimResult] = {}
    for name in policies:
        policy = make_policy(name)
        report = (lambda done, total, _n=name: progress(_n, done, total)) if progress else None
        sim = Simulator(
            jobs, cluster, policy, config, placer=make_placer(placer), interference=interference, report=report
        )
        results[name] = sim.run()
    files: list[Path] = []
    if out_dir is not None:
        summaries = write_outputs(out_dir, results)
        files += [out_dir / "summary.json", out_dir / "summary.csv"]
        files.append(plot_jct_cdf(results, out_dir / "jct_cdf.png"))
        files.append(plot_utilisation(results, out_dir / "utilisation.png"))
    else:
        from .metrics import summarize

        summaries = {name: summarize(r) for name, r in results.items()}
    return Comparison(results, summaries, files)
