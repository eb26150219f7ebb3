"""Label types of the real development set: short excerpts of logs that no one here wrote.

Generated corpora carry exact truth arrays (`loglabels.LogLabels`); a real excerpt carries what a
person could read off it, where it came from, and how sure the labeller was. One JSON object per
line in `labels*.jsonl` beside a `logs/` folder (several label files may share one folder, so
items can be added by different people without touching each other's files).

Why in the core and not under `evals/`: the labels are the vocabulary a user's own labelled logs
would use too (the nightly suites read the same format), and agents never import `evals`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from schedmate.errors import BadInput
from schedmate.taxonomy import Component, FailureCategory, FailureReason

__all__ = ["DevSetError", "ProgressItem", "RealFailureItem", "load_failure_items", "load_progress_items"]

Confidence = Literal["high", "medium", "low"]


class DevSetError(BadInput):
    """A label file that cannot be read: names the file and line."""


class _Item(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    file: str = Field(description="path of the excerpt, relative to the folder holding the label file")
    source_url: str = Field(pattern=r"^https?://", description="where the excerpt was published")
    source_title: str = ""
    confidence: Confidence = Field(description="how sure the labeller is of the labels below")
    notes: str = ""


class RealFailureItem(_Item):
    """A failed or normal run. `root_line` is 1-based in the excerpt; None for normal runs."""

    status: Literal["failed", "normal"]
    category: FailureCategory | None = None
    reason: FailureReason | None = Field(default=None, description="the closest Acme reason, if one fits")
    component: Component | None = None
    root_line: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _consistent(self) -> RealFailureItem:
        if self.status == "failed" and (self.category is None or self.root_line is None):
            raise ValueError("a failed item needs a category and a root_line")
        if self.status == "normal" and (self.category is not None or self.root_line is not None):
            raise ValueError("a normal item has no category and no root_line")
        return self


class ProgressItem(_Item):
    """A training progress log; the values are those of the last complete training progress line."""

    framework: str = Field(description="e.g. hf-trainer, megatron, deepspeed, lightning, fairseq, mmengine, yolo")
    last_line: int = Field(ge=1, description="1-based line number of the last complete training progress line")
    step_time_s: float | None = Field(default=None, gt=0, description="seconds per iteration, as printed or derived")
    loss: float | None = None
    throughput: float | None = Field(default=None, gt=0)
    throughput_unit: str | None = Field(default=None, description="e.g. samples/s, tokens/s, it/s")


_ItemT = TypeVar("_ItemT", bound=_Item)


def _iter(folder: Path, model: type[_ItemT]) -> Iterator[tuple[Path, _ItemT]]:
    for labels in sorted(folder.glob("labels*.jsonl")):
        for n, line in enumerate(labels.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                item = model.model_validate(json.loads(line))
            except (json.JSONDecodeError, ValidationError) as exc:
                raise DevSetError(f"{labels}:{n}: {exc}") from None
            path = folder / item.file
            if not path.is_file():
                raise DevSetError(f"{labels}:{n}: {item.id}: excerpt {item.file} is missing")
            yield path, item


def _load(folder: Path | str, model: type[_ItemT]) -> list[tuple[Path, _ItemT]]:
    items = list(_iter(Path(folder), model))
    seen: set[str] = set()
    for _, item in items:
        if item.id in seen:
            raise DevSetError(f"{folder}: duplicate id {item.id}")
        seen.add(item.id)
    return items


def load_failure_items(folder: Path | str) -> list[tuple[Path, RealFailureItem]]:
    """(excerpt path, labels) for every item under `folder` (e.g. `evals/devset/failures`)."""
    return _load(folder, RealFailureItem)


def load_progress_items(folder: Path | str) -> list[tuple[Path, ProgressItem]]:
    """(excerpt path, labels) for every item under `folder` (e.g. `evals/devset/progress`)."""
    return _load(folder, ProgressItem)
