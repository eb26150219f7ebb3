"""PNG plots of simulation results: JCT CDF per policy (as in the papers) and GPU use over time."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .engine import SimResult  # noqa: E402
from .metrics import JobResult, job_records  # noqa: E402

# More points than any saved figure has pixel columns (7 in × 120 dpi = 840): thinning to this many
# leaves the image unchanged while drawing 100k-job runs in a fraction of the time.
MAX_POINTS = 4096


def thin_cdf(values: np.ndarray, max_points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """Sorted `values` and their CDF, keeping ranks evenly spaced (first and last always).

    Between two kept points the curve rises by at most 1/max_points of the axis, under a pixel.
    """
    n = values.size
    idx = np.unique(np.linspace(0, n - 1, min(n, max_points)).round().astype(int)) if n else np.arange(0)
    return values[idx], (idx + 1) / n


def thin_steps(x: np.ndarray, y: np.ndarray, max_bins: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """Keep the first, last, lowest and highest point of each of `max_bins` equal x-bins (M4).

    With x sorted and bins narrower than a pixel, the line through the kept points covers the
    same pixels as through all of them, peaks included; consecutive kept points across a bin edge
    are consecutive in the input, so a step plot stays exact there.
    """
    n = x.size
    if n <= 4 * max_bins or x[-1] <= x[0]:
        return x, y
    b = np.minimum(((x - x[0]) * (max_bins / (x[-1] - x[0]))).astype(np.int64), max_bins - 1)
    first = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
    last = np.r_[first[1:], n] - 1
    order = np.lexsort((y, b))  # by bin, then by value: a bin's lowest comes first, highest last
    keep = np.unique(np.concatenate([first, last, order[first], order[last]]))
    return x[keep], y[keep]


def plot_jct_cdf(
    results: dict[str, SimResult],
    path: Path,
    title: str = "JCT CDF",
    records: dict[str, list[JobResult]] | None = None,
) -> Path:
    """Pass `records` (from `job_records`) when they were already computed for the CSV."""
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, result in results.items():
        recs = records[name] if records is not None and name in records else job_records(result)
        jcts = np.sort(np.array([r.jct for r in recs if r.jct is not None], dtype=float))
        if jcts.size:
            x, frac = thin_cdf(jcts)
            ax.plot(np.maximum(x, 1.0), frac, label=name)
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
            x, busy = thin_steps(tl[:, 0], tl[:, 1])
            ax.step(x / 3600.0, busy / total, where="post", label=name, linewidth=0.8)
    ax.set_xlabel("time (h)")
    ax.set_ylabel("GPUs busy (fraction)")
    ax.set_ylim(0, 1.05)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
