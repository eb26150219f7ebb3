"""Co-location interference: how fast each of two jobs sharing the same GPUs runs.

Speeds are fractions of the job's solo speed. `MeasuredInterference` loads pairs in the format of
Lucid's `colocate_info.csv` (model, dataset, gpus, batch size, AMP → speed1, speed2); a pair it
has not measured falls back to a constant.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from .job import JobSpec


class InterferenceModel(Protocol):
    def speeds(self, a: JobSpec, b: JobSpec) -> tuple[float, float]: ...


@dataclass(frozen=True)
class ConstantInterference:
    """Both jobs slow down by the same factor: the simplest honest default."""

    factor: float = 0.6

    def speeds(self, a: JobSpec, b: JobSpec) -> tuple[float, float]:
        return self.factor, self.factor


Key = tuple[str, str, int, int, int]


def workload_key(spec: JobSpec) -> Key | None:
    a = spec.attributes
    if "model" not in a:
        return None
    return (
        str(a["model"]),
        str(a.get("dataset", "")),
        int(spec.num_gpus),
        int(a.get("batch_size", 0)),
        int(bool(a.get("amp", 0))),
    )


@dataclass(frozen=True)
class MeasuredInterference:
    """Measured pair speeds, looked up in either order; clamped to (0, 1] (above 1 is noise)."""

    pairs: dict[tuple[Key, Key], tuple[float, float]]
    default: ConstantInterference = field(default_factory=ConstantInterference)

    @classmethod
    def from_csv(cls, path: str | Path, default_factor: float = 0.6) -> MeasuredInterference:
        pairs: dict[tuple[Key, Key], tuple[float, float]] = {}
        with open(path, newline="") as fh:
            reader = csv.DictReader(fh)
            needed = {"model1", "dataset1", "gpu_num1", "batchsize1", "amp1", "speed1", "speed2"}
            missing = needed - set(reader.fieldnames or ())
            if missing:
                raise ValueError(f"{path}: missing columns {sorted(missing)}")
            for line, row in enumerate(reader, start=2):
                try:
                    k1 = (row["model1"], row["dataset1"], int(row["gpu_num1"]), int(row["batchsize1"]), int(row["amp1"]))
                    k2 = (row["model2"], row["dataset2"], int(row["gpu_num2"]), int(row["batchsize2"]), int(row["amp2"]))
                    s1, s2 = _clamp(float(row["speed1"])), _clamp(float(row["speed2"]))
                except (KeyError, ValueError) as exc:
                    raise ValueError(f"{path}:{line}: bad co-location row ({exc})") from None
                pairs[(k1, k2)] = (s1, s2)
        return cls(pairs, ConstantInterference(default_factor))

    def speeds(self, a: JobSpec, b: JobSpec) -> tuple[float, float]:
        ka, kb = workload_key(a), workload_key(b)
        if ka is not None and kb is not None:
            if (ka, kb) in self.pairs:
                return self.pairs[(ka, kb)]
            if (kb, ka) in self.pairs:
                sb, sa = self.pairs[(kb, ka)]
                return sa, sb
        return self.default.speeds(a, b)


def _clamp(x: float) -> float:
    return min(1.0, max(0.05, x))
