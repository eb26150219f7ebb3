"""The nightly report's plots, each returned as a data URI for the self-contained HTML."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from schedmate.htmlreport import figure_data_uri  # noqa: E402


def confusion_plot(labels: Sequence[str], matrix: Sequence[Sequence[int]], title: str) -> str:
    m = np.asarray(matrix, dtype=float)
    fig, ax = plt.subplots(figsize=(1.4 + 1.05 * len(labels), 1.1 + 0.9 * len(labels)))
    ax.imshow(m, cmap="Blues", vmin=0, vmax=max(1.0, m.max()))
    ax.set_xticks(range(len(labels)), labels, rotation=25, ha="right")
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel("predicted")
    ax.set_ylabel("labelled")
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            ax.text(j, i, f"{int(m[i, j])}", ha="center", va="center", color="white" if m[i, j] > m.max() / 2 else "black")
    ax.set_title(title, fontsize=11)
    return figure_data_uri(fig)


def cdf_plot(series: Mapping[str, Sequence[float]], title: str, xlabel: str = "relative error |estimate − truth| / truth") -> str:
    fig, ax = plt.subplots(figsize=(6.2, 3.6))
    for name, xs in series.items():
        if not len(xs):
            continue
        x = np.sort(np.asarray(xs, dtype=float))
        x = np.maximum(x, 1e-4)  # a perfect estimate still shows on the log axis
        ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=f"{name} (n={len(x)})")
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction of items")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title, fontsize=11)
    return figure_data_uri(fig)


def latency_plot(series: Mapping[str, Sequence[float]], title: str) -> str:
    fig, ax = plt.subplots(figsize=(6.2, 3.6))
    vals = [np.asarray(v, dtype=float) * 1000 for v in series.values() if len(v)]
    if vals:
        hi = max(float(v.max()) for v in vals)
        bins = np.linspace(0, hi * 1.05 + 1e-9, 25)
        for name, v in zip([k for k, s in series.items() if len(s)], vals):
            ax.hist(v, bins=bins.tolist(), alpha=0.6, label=f"{name} (p95 {np.percentile(v, 95):.0f} ms)")
        ax.legend(fontsize=8)
    ax.set_xlabel("latency per item (ms)")
    ax.set_ylabel("items")
    ax.grid(alpha=0.3)
    ax.set_title(title, fontsize=11)
    return figure_data_uri(fig)


def trend_plot(runs: Sequence[dict[str, Any]], keys: Sequence[str], title: str) -> str:
    fig, ax = plt.subplots(figsize=(6.2, 3.4))
    xs = np.arange(1, len(runs) + 1)
    for k in keys:
        ys = [r["metrics"].get(k) for r in runs]
        ax.plot(xs, [np.nan if y is None else y for y in ys], marker="o", label=k.split(".", 1)[1])
    for i, r in enumerate(runs):
        if not r.get("passed"):
            ax.axvline(xs[i], color="#b42318", alpha=0.25, lw=6)
    ax.set_xticks(xs, [str(r.get("started", ""))[5:16].replace("T", " ") for r in runs], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("value")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title + " (red band: run with a regression)", fontsize=10)
    return figure_data_uri(fig)
