"""Lucid's measured workloads: the single-job table (`single_data.csv`) and where the data lives.

Lucid profiled 66 workload configurations (model, dataset, batch size, AMP) alone on an RTX 3090
and recorded speed, GPU utilisation, GPU-memory utilisation and GPU memory, plus a hand-checked
sharing label. The table is read from `../shared/data/lucid/single_data.csv` by path, never
copied into the repository. Without it the profiler measures nothing, every sharing score is
unknown and Lucid simply never packs (`load_default_table` says why, once).

`assign_workloads` gives each job of a trace one of the table's workloads, as Lucid did for its
Helios trace (its model/dataset/batch-size/AMP columns are synthetic assignments too).
"""

from __future__ import annotations

import csv
import dataclasses
import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from schedmate.config import shared_data_dir

from ..job import JobSpec

log = logging.getLogger(__name__)

WorkloadKey = tuple[str, str, int, int]
"""(model, dataset, batch size, AMP 0/1): how Lucid names a profiled workload."""

METRIC_FIELDS = ("speed", "gpu_util", "gmem_util", "gmem")
MISSING_DATA = "Lucid's measured data ({name}) was not found under ../shared/data/lucid (set SCHEDMATE_SHARED_DATA); {then}"
CONSEQUENCE = {
    "single_data.csv": "the profiler will record no metrics, so Lucid will not pack",
    "colocate_info.csv": "co-located jobs will run at the constant default speed",
}


@dataclass(frozen=True, slots=True)
class Metrics:
    """Single-job measurements from a profiling run (what Lucid's profiler reports)."""

    speed: float  # iterations (or samples) per second, alone on one GPU
    gpu_util: float  # SM utilisation, %
    gmem_util: float  # memory-controller utilisation, %
    gmem: float  # GPU memory, MB

    def as_list(self) -> list[float]:
        return [self.speed, self.gpu_util, self.gmem_util, self.gmem]


def workload_key(attributes: Mapping[str, Any]) -> WorkloadKey | None:
    """The workload a job runs, from its attributes (`batch_size`, or Lucid's `batchsize`)."""
    if "model" not in attributes:
        return None
    batch = attributes.get("batch_size", attributes.get("batchsize", 0))
    try:
        return (str(attributes["model"]), str(attributes.get("dataset", "")), int(batch), int(bool(int(attributes.get("amp", 0)))))
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class WorkloadTable:
    """Profiled workloads: key → (metrics, Lucid's sharing label 0/1/2)."""

    rows: dict[WorkloadKey, tuple[Metrics, int]]
    source: str = "<memory>"

    @classmethod
    def from_csv(cls, path: str | Path) -> WorkloadTable:
        rows: dict[WorkloadKey, tuple[Metrics, int]] = {}
        with open(path, newline="") as fh:
            reader = csv.DictReader(fh)
            needed = {"model", "dataset", "batchsize", "amp", "label", *METRIC_FIELDS}
            missing = needed - set(reader.fieldnames or ())
            if missing:
                raise ValueError(f"{path}: missing columns {sorted(missing)}")
            for line, row in enumerate(reader, start=2):
                try:
                    key = (row["model"], row["dataset"], int(row["batchsize"]), int(row["amp"]))
                    metrics = Metrics(*(float(row[f]) for f in METRIC_FIELDS))
                    label = int(float(row["label"]))
                except ValueError as exc:
                    raise ValueError(f"{path}:{line}: bad workload row ({exc})") from None
                if not all(math.isfinite(x) for x in metrics.as_list()) or label not in (0, 1, 2):
                    raise ValueError(f"{path}:{line}: non-finite metric or label outside 0/1/2")
                rows[key] = (metrics, label)
        if not rows:
            raise ValueError(f"{path}: no workload rows")
        return cls(rows, str(path))

    def __len__(self) -> int:
        return len(self.rows)

    def lookup(self, attributes: Mapping[str, Any]) -> Metrics | None:
        key = workload_key(attributes)
        row = self.rows.get(key) if key is not None else None
        return row[0] if row is not None else None

    def label(self, key: WorkloadKey) -> int:
        return self.rows[key][1]


def lucid_data_dir() -> Path | None:
    shared = shared_data_dir()
    path = shared / "lucid" if shared is not None else None
    return path if path is not None and path.is_dir() else None


def lucid_file(name: str) -> Path | None:
    """`../shared/data/lucid/<name>` when it exists, else None."""
    base = lucid_data_dir()
    path = base / name if base is not None else None
    return path if path is not None and path.is_file() else None


_warned: set[str] = set()


def warn_missing(name: str) -> None:
    if name not in _warned:
        _warned.add(name)
        log.warning(MISSING_DATA.format(name=name, then=CONSEQUENCE.get(name, "it is ignored")))


def load_default_table() -> WorkloadTable | None:
    """`single_data.csv` from the shared data, or None (with one warning) when it is absent."""
    path = lucid_file("single_data.csv")
    if path is None:
        warn_missing("single_data.csv")
        return None
    return WorkloadTable.from_csv(path)


def default_colocate_csv() -> Path | None:
    return lucid_file("colocate_info.csv")


def assign_workloads(jobs: Iterable[JobSpec], table: WorkloadTable, seed: int = 0) -> list[JobSpec]:
    """Copies of `jobs` with a workload drawn uniformly from `table` in `attributes`.

    Keys follow `schedulers.interference.workload_key` (model, dataset, batch_size, amp), so the
    engine's interference model and Lucid's profiler read the same fields. Existing attributes
    are kept; a job that already names a model keeps its workload.
    """
    keys = sorted(table.rows)
    rng = np.random.default_rng(seed)
    out: list[JobSpec] = []
    for spec in jobs:
        if "model" in spec.attributes:
            out.append(spec)
            continue
        model, dataset, batch, amp = keys[int(rng.integers(len(keys)))]
        attrs = {**spec.attributes, "model": model, "dataset": dataset, "batch_size": batch, "amp": amp}
        out.append(dataclasses.replace(spec, attributes=attrs))
    return out
