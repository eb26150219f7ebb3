"""What one progress line states (`Extraction`), and the number/unit primitives every reader
shares (`regex_extractors`, `formats`, `llm_extractor`)."""

from __future__ import annotations

from dataclasses import dataclass

NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
GROUPED = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?"  # `36,389` tokens/s: thousands separators (rates only)

TIME_SCALE_S: dict[str, float] = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "msec": 1e-3,
    "msecs": 1e-3,
    "s": 1.0,
    "sec": 1.0,
    "secs": 1.0,
    "second": 1.0,
    "seconds": 1.0,
    "min": 60.0,
    "mins": 60.0,
    "minute": 60.0,
    "minutes": 60.0,
}


@dataclass(frozen=True, slots=True)
class Extraction:
    """Metrics read from one line. `framework` names the extractor (or "llm")."""

    framework: str
    step: int | None = None
    step_time_s: float | None = None
    loss: float | None = None
    throughput: float | None = None
    throughput_unit: str | None = None
    total: int | None = None  # a progress bar's length (N/TOTAL): tells training from eval bars

    @property
    def has_metric(self) -> bool:
        """A step counter alone is not a metric (DeepSpeed's `step=N, skipped=..` lines)."""
        return self.step_time_s is not None or self.loss is not None or self.throughput is not None


__all__ = ["GROUPED", "NUM", "TIME_SCALE_S", "Extraction"]
