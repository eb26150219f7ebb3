"""Ground truth of a generated log, and of a corpus (`labels.jsonl`, one `LogLabels` per line).

Line numbers are 0-based indices into `text.split("\\n")` (a tqdm line holding `\\r` redraws is one
line). Do not use `str.splitlines`, which also splits on `\\r`, and read files in binary or with
`open(path, newline="")`: text mode's universal newlines turn every `\\r` into a line break.

Truth arrays are per progress line, numpy arrays in memory and plain JSON lists on disk:
`progress_lines[i]` is the line, `steps[i]` the completed optimiser steps it reports, and
`step_time[i]` / `loss[i]` / `throughput[i]` the true values behind the numbers it prints (the
interval mean when the framework averages over its log interval, else the last step's value; see
`formats.py`); `time[i]` is the job time (s) when it was printed. Throughput is samples/s
(`global_batch_size / step_time`); tokens/s = throughput × `seq_length`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer, WithJsonSchema, model_validator

from schedmate.logspec import FailurePhase, Framework, HardCase, LogSpec, LogStatus, Pool
from schedmate.taxonomy import ALLOWED_COMPONENTS, Component, FailureCategory, FailureReason, category_of

LABELS_FILE = "labels.jsonl"
MANIFEST_FILE = "manifest.json"
LOGS_DIR = "logs"


def _vector(dtype: type) -> Callable[[Any], np.ndarray]:
    def convert(v: Any) -> np.ndarray:
        a: np.ndarray = np.asarray(v, dtype=dtype)
        if a.ndim != 1:
            raise ValueError("expected a 1-D array")
        return a

    return convert


def _to_list(a: np.ndarray) -> list:
    return a.tolist()


# written out (not built by a function) so that type checkers read them as types
IntArray = Annotated[
    np.ndarray,
    BeforeValidator(_vector(np.int64)),
    PlainSerializer(_to_list, return_type=list),
    WithJsonSchema({"type": "array", "items": {"type": "integer"}}),
]
FloatArray = Annotated[
    np.ndarray,
    BeforeValidator(_vector(np.float64)),
    PlainSerializer(_to_list, return_type=list),
    WithJsonSchema({"type": "array", "items": {"type": "number"}}),
]


class FailureLabel(BaseModel):
    """The one injected root cause."""

    category: FailureCategory
    reason: FailureReason
    component: Component
    first_line: int = Field(description="first line containing `signature` (the root-cause line)")
    block_start: int = Field(description="first line of the root-cause block (e.g. `Traceback (most recent call last):`)")
    block_end: int = Field(description="last line of the root-cause block")
    cascade_start: int = Field(description="first line of the cascade (later errors caused by the root cause)")
    signature: str = Field(description="substring of the first_line that no earlier line contains")
    time: float = Field(description="job seconds when first_line was printed")
    step: int | None = Field(description="last completed step before the failure (None: before training)")
    phase: FailurePhase
    rank: int | None = Field(description="rank that printed the root cause (None: node/launcher level)")
    host: str | None
    variant: str = Field(description="which real error text (template) was used")
    pool: Pool | None = Field(None, description="the error-text pool the template belongs to (`synthetic.logs.pools`)")
    hard: list[HardCase] = Field(default_factory=list, description="hard cases this log actually shows")
    earlier_lines: list[int] = Field(default_factory=list,
                                     description="first error lines of earlier, restarted attempts (not the label)")

    @model_validator(mode="after")
    def _consistent(self) -> FailureLabel:
        if category_of(self.reason) is not self.category:
            raise ValueError(f"{self.reason} is not a {self.category} reason")
        if self.component not in ALLOWED_COMPONENTS[self.reason]:
            raise ValueError(f"{self.component} is not a component of {self.reason}")
        if not self.block_start <= self.first_line <= self.block_end < self.cascade_start:
            raise ValueError("expected block_start <= first_line <= block_end < cascade_start")
        if any(x >= self.block_start for x in self.earlier_lines):
            raise ValueError("earlier attempts come before the final failure")
        return self


class SlowdownLabel(BaseModel):
    """A co-located job arrived: every step from `at_step` on is `factor` times slower."""

    at_step: int
    at_time: float = Field(description="job seconds when the slowed step started")
    at_line: int = Field(description="first progress line that reports a slowed step")
    factor: float


class TruthLabel(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    progress_lines: IntArray
    steps: IntArray
    step_time: FloatArray
    loss: FloatArray
    throughput: FloatArray
    time: FloatArray
    warmup_steps: int
    warmup_factor: float
    base_step_time: float = Field(description="median steady-state step time without slowdown")
    steady_step_time: float | None = Field(description="mean true step time after warm-up and before any slowdown")
    slowed_step_time: float | None = Field(description="mean true step time after the slowdown")
    slowdown: SlowdownLabel | None
    global_batch_size: int
    seq_length: int
    total_steps: int = Field(description="the run's planned steps (what `iteration N/TOTAL` shows)")
    steps_in_log: int
    steps_per_epoch: int
    log_interval: int
    throughput_unit: str = "samples/s"

    @model_validator(mode="after")
    def _same_length(self) -> TruthLabel:
        n = len(self.progress_lines)
        if any(len(a) != n for a in (self.steps, self.step_time, self.loss, self.throughput, self.time)):
            raise ValueError("truth arrays differ in length")
        return self


class LogLabels(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    id: str
    path: str | None = Field(description="path of the log relative to the corpus root (or absolute); None when in memory")
    framework: Framework
    variant: str
    n_lines: int
    n_bytes: int
    status: LogStatus
    seed: int
    failure: FailureLabel | None
    truth: TruthLabel
    spec: LogSpec = Field(description="the resolved spec: generate_log(spec, seed) rebuilds the log")

    @model_validator(mode="after")
    def _status(self) -> LogLabels:
        if (self.status is LogStatus.FAILED) != (self.failure is not None):
            raise ValueError("a failure label is present exactly when status is 'failed'")
        return self


class CorpusEntry(BaseModel):
    id: str
    path: str
    framework: Framework
    n_lines: int
    status: LogStatus
    category: FailureCategory | None = None
    reason: FailureReason | None = None


class CorpusManifest(BaseModel):
    version: int = 1
    root: str
    seed: int
    n: int
    settings: dict[str, Any]
    labels_path: str = LABELS_FILE
    n_lines_total: int
    seconds: float = Field(description="wall time the generation took")
    entries: list[CorpusEntry]


def iter_labels(directory: str | Path) -> Iterator[LogLabels]:
    """Stream the labels of a corpus, one log at a time."""
    with open(Path(directory) / LABELS_FILE, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield LogLabels.model_validate_json(line)


def load_labels(directory: str | Path) -> list[LogLabels]:
    """All labels of a corpus directory written by `generate_corpus`."""
    return list(iter_labels(directory))


def load_manifest(directory: str | Path) -> CorpusManifest:
    return CorpusManifest.model_validate(json.loads((Path(directory) / MANIFEST_FILE).read_text(encoding="utf-8")))
