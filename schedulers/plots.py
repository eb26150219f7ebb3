"""PNG plots of simulation results: JCT CDF per policy (as in the papers) and GPU use over time."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .engine import SimResult  # noqa: E402
from .metrics import job_records  # noqa: E402


def plot_jct_cdf(results: dict[str, SimResult], path: Path, title: str = "JCT CDF") -> Path:
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, result in results.items():
        jcts = np.sort([r.jct for r in job_records(result) if r.jct is not None])
        if jcts.size:
            ax.plot(np.maximum(jcts, 1.0), np.arange(1, jcts.size + 1) / jcts.size, label=name)
    ax.set_xscale("log")
    ax.set_xlabel("job completion time (s)")
    ax.set_ylabel("fraction of jobs")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_utilisation(results: dict[str, SimResult], path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for name, result in results.items():
        tl = result.timeline
        if tl.size:
            total = result.cluster.total_gpus
            ax.step(tl[:, 0] / 3600.0, tl[:, 1] / total, where="post", label=name, linewidth=0.8)
    ax.set_xlabel("time (h)")
    ax.set_ylabel("GPUs busy (fraction)")
    ax.set_ylim(0, 1.05)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
