"""Lucid's Packing Analyze Model (sharing scores) and Affine-pair Binder (who may share GPUs).

**Sharing score** (0 = light, 1 = medium, 2 = heavy co-runner). Lucid labels each profiled
workload from its average co-located speed over all measured pairs: 2 below 0.85, 1 below 0.95,
0 otherwise (`auto_label`; `auto_labels` recomputes them from `colocate_info.csv`), keeps the
hand-checked labels in `single_data.csv`'s `label` column, and trains an interpretable decision
tree (Primo's PrDT, `prune_factor=1e-4`) on single-job metrics (speed, GPU util, GPU-memory util,
GPU memory) → label. At run time a job's score is the tree's prediction on its *profiled*
metrics. Here the tree is scikit-learn's `DecisionTreeClassifier` with minimal cost-complexity
pruning (`ccp_alpha=1e-4`), trained on the `label` column; a job without metrics has no score.

**Binder** (`Lucid.job_pair_picker_time_aware`): a queued job may be packed onto a running job
that currently runs alone only if all hold (`BinderRules`):

1. the new job asks for at most 8 GPUs (larger jobs are never packed);
2. both ask for the same number of GPUs;
3. their GPU memory fits one GPU together: gmem(new) + gmem(candidate) ≤ 24,576 MB (RTX 3090;
   Lucid's code tests `<`, which differs only at exact equality);
4. their sharing scores sum to at most 2;
5. priority(new) ≤ 2 × priority(candidate): the partner must not be much shorter (priority is
   the estimated GPU time, so the new job must not outlive its partner by much).

Candidates are scanned in start order and the first match wins; packing is strictly pairwise.
A job or candidate with unknown memory or score is never packed.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.tree import DecisionTreeClassifier

from .data import Metrics, WorkloadKey, WorkloadTable

GPU_MEMORY_LIMIT_MB = 24576.0
T = TypeVar("T")


# ============================================================================ sharing scores


def auto_label(avg_speed: float) -> int:
    """Lucid's automatic sharing label from a workload's mean co-located speed."""
    return 2 if avg_speed < 0.85 else 1 if avg_speed < 0.95 else 0


def auto_labels(table: WorkloadTable, colocate_csv: str | Path) -> dict[WorkloadKey, tuple[float, int]]:
    """(mean co-located speed, auto label) per table workload that appears in measured pairs.

    The mean is over every measured pair the workload is part of, on either side, as Lucid's
    analyzer computes it. Workloads never measured in a pair (ResNet50, BERT, ...) are left out.
    """
    sums: dict[WorkloadKey, list[float]] = {}
    with open(colocate_csv, newline="") as fh:
        for row in csv.DictReader(fh):
            for side in ("1", "2"):
                key = (row[f"model{side}"], row[f"dataset{side}"], int(row[f"batchsize{side}"]), int(row[f"amp{side}"]))
                acc = sums.setdefault(key, [0.0, 0.0])
                acc[0] += float(row[f"speed{side}"])
                acc[1] += 1
    out = {}
    for key in table.rows:
        if key in sums and sums[key][1]:
            avg = round(sums[key][0] / sums[key][1], 3)
            out[key] = (avg, auto_label(avg))
    return out


class PackingAnalyzer:
    """Decision tree: single-job metrics (speed, gpu_util, gmem_util, gmem) → sharing score."""

    FEATURES = ("speed", "gpu_util", "gmem_util", "gmem")

    def __init__(self, table: WorkloadTable, ccp_alpha: float = 1e-4, seed: int = 0) -> None:
        self.table = table
        self.ccp_alpha = ccp_alpha
        self.seed = seed
        x, y = self._xy()
        self.model = DecisionTreeClassifier(ccp_alpha=ccp_alpha, random_state=seed).fit(x, y)
        self._cache: dict[tuple[float, ...], int] = {}

    def _xy(self) -> tuple[np.ndarray, np.ndarray]:
        rows = list(self.table.rows.values())
        x = np.asarray([m.as_list() for m, _ in rows], dtype=float)
        y = np.asarray([label for _, label in rows], dtype=int)
        return x, y

    def score(self, metrics: Metrics) -> int:
        key = tuple(metrics.as_list())
        hit = self._cache.get(key)
        if hit is None:
            hit = int(self.model.predict(np.asarray([key], dtype=float))[0])
            self._cache[key] = hit
        return hit

    def training_accuracy(self) -> float:
        x, y = self._xy()
        return float((self.model.predict(x) == y).mean())

    def holdout_accuracy(self, test_size: float = 0.3, split_seed: int = 42) -> float:
        """Accuracy on a held-out split (Lucid's analyzer: 70/30, random_state 42)."""
        x, y = self._xy()
        xtr, xte, ytr, yte = train_test_split(x, y, test_size=test_size, random_state=split_seed)
        tree = DecisionTreeClassifier(ccp_alpha=self.ccp_alpha, random_state=self.seed).fit(xtr, ytr)
        return float((tree.predict(xte) == yte).mean())


# ============================================================================ binder


@dataclass(frozen=True, slots=True)
class PackInfo:
    """What the binder knows about one job (None: unknown, never packed)."""

    num_gpus: int
    gmem: float | None
    score: int | None
    priority: float


@dataclass(frozen=True, slots=True)
class BinderRules:
    max_gpus: int = 8
    gmem_limit_mb: float = GPU_MEMORY_LIMIT_MB
    max_score_sum: int = 2
    priority_ratio: float = 2.0

    def affine(self, new: PackInfo, cand: PackInfo) -> bool:
        """May `new` share the GPUs of `cand` (which runs alone)?"""
        if new.num_gpus > self.max_gpus or new.num_gpus != cand.num_gpus:
            return False
        if new.gmem is None or cand.gmem is None or new.score is None or cand.score is None:
            return False
        if new.gmem + cand.gmem > self.gmem_limit_mb:
            return False
        if new.score + cand.score > self.max_score_sum:
            return False
        return new.priority <= self.priority_ratio * cand.priority

    def pick_partner(self, new: PackInfo, candidates: Iterable[tuple[T, PackInfo]]) -> T | None:
        """The first candidate (in the given order, i.e. start order) affine to `new`."""
        for handle, info in candidates:
            if self.affine(new, info):
                return handle
        return None
