"""Published per-cluster statistics that the synthetic generator is calibrated to.

Source: AcmeTrace `data/cluster_summary.csv` (Hu et al., "Characterization of Large Language
Model Development in the Datacenter", NSDI'24), which summarises the Seren and Kalos (Acme),
Philly (Jeon et al., ATC'19) and Helios (Hu et al., SC'21) GPU jobs. The numbers the generator
needs are embedded below so the project runs without the reference data; a test checks them
against the CSV when `../shared/data/acme/cluster_summary.csv` is present. PAI's row has no
completion rates and is not offered.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .errors import TraceFormatError


@dataclass(frozen=True, slots=True)
class Calibration:
    """GPU-job statistics of one cluster (times in seconds; rates and shares in [0, 1])."""

    cluster: str
    avg_run_time: float
    med_run_time: float
    max_run_time: float
    avg_gpu_num: float
    med_gpu_num: float
    max_gpu: int
    complete_rate: float
    cancel_rate: float
    fail_rate: float
    complete_gpu_time_share: float
    cancel_gpu_time_share: float
    fail_gpu_time_share: float


SUMMARY_COLUMNS: MappingProxyType[str, str] = MappingProxyType(
    {
        "avg_run_time": "avg_run_time_gpu",
        "med_run_time": "med_run_time_gpu",
        "max_run_time": "max_run_time_gpu",
        "avg_gpu_num": "avg_gpu_num",
        "med_gpu_num": "med_gpu_num",
        "max_gpu": "max_gpu",
        "complete_rate": "complete_rate_gpu",
        "cancel_rate": "cancel_rate_gpu",
        "fail_rate": "fail_rate_gpu",
        "complete_gpu_time_share": "complete_rate_gpu_time",
        "cancel_gpu_time_share": "cancel_rate_gpu_time",
        "fail_gpu_time_share": "fail_rate_gpu_time",
    }
)
"""Calibration field → `cluster_summary.csv` column."""

CALIBRATIONS: MappingProxyType[str, Calibration] = MappingProxyType(
    {
        "seren": Calibration(
            "Seren", 1414.335, 122.0, 1209604.0, 5.68, 1.0, 1024,
            0.497, 0.075, 0.429, 0.212, 0.664, 0.124,
        ),
        "kalos": Calibration(
            "Kalos", 1259.689, 124.0, 625740.0, 26.77, 1.0, 1024,
            0.541, 0.062, 0.397, 0.313, 0.607, 0.08,
        ),
        "philly": Calibration(
            "Philly", 18006.055, 874.0, 4240676.0, 1.928, 1.0, 128,
            0.604, 0.09, 0.305, 0.321, 0.294, 0.386,
        ),
        "helios": Calibration(
            "Helios", 6651.681, 206.0, 4320009.0, 3.716, 1.0, 2048,
            0.624, 0.221, 0.155, 0.513, 0.394, 0.093,
        ),
    }
)  # fmt: skip
"""Embedded copies of the summary rows, keyed by lower-case cluster name."""


def calibration_from_summary(path: str | Path, cluster: str) -> Calibration:
    """Read one cluster's row (matched case-insensitively on `id`) from `cluster_summary.csv`."""
    path = Path(path)
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or ()
        missing = [c for c in ("id", *SUMMARY_COLUMNS.values()) if c not in header]
        if missing:
            raise TraceFormatError(path, 1, missing[0], "a cluster_summary.csv header")
        for row in reader:
            if row["id"].strip().lower() == cluster.lower():
                return _row_to_calibration(path, reader.line_num, row)
    raise ValueError(f"{path.name} has no row for cluster {cluster!r}")


def _row_to_calibration(path: Path, line: int, row: dict[str, str]) -> Calibration:
    values: dict[str, Any] = {"cluster": row["id"].strip()}  # Calibration's fields, read from the row
    for f in fields(Calibration):
        if f.name == "cluster":
            continue
        column = SUMMARY_COLUMNS[f.name]
        try:
            number = float(row[column])
        except (TypeError, ValueError):
            raise TraceFormatError(path, line, column, "a number", row[column]) from None
        values[f.name] = int(number) if f.name == "max_gpu" else number
    return Calibration(**values)
