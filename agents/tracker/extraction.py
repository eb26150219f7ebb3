"""What one progress line states (`Extraction`), and the number/unit primitives every reader
shares (`regex_extractors`, `formats`, `llm_extractor`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

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
    "h": 3600.0,
    "hr": 3600.0,
    "hrs": 3600.0,
    "hour": 3600.0,
    "hours": 3600.0,
}

# Which rule produced a step time, from the most direct to the least:
# - named_per_step: a key names a per-step duration (`step_time`, `iter time`, `elapsed time per iteration (ms)`)
# - per_step_unit: the value's unit is per step (`52ms/step`, `2.83s/it`, `0.71 s/itr`)
# - framework: a framework reader whose field is documented as the step time
# - inverse_rate: 1 / a steps-per-second rate (`3.9it/s`, `ups`, `train_steps_per_second`)
# - bare_time: a duration named only `time`/`dt` beside a step counter (detectron2, mmengine)
# - interval: an interval's time divided by its steps (`time for the last 100 updates: 1m 2s`,
#   `28.9s/100 iters`, a per-log-interval wall time divided by the steps between two lines)
# - unnamed_duration: a duration with no key, listed beside the loss (`loss 2.31 (125.5 ms)`)
# - batch_over_rate: batch size / samples-per-second, both stated on the line
# - cumulative_slope: the slope of a clock since the start over the step counter
# - timestamps: the slope of the lines' timestamps over their step counters (nothing printed)
# - llm: a value the LLM read and validation confirmed
TimeRule = Literal[
    "named_per_step", "per_step_unit", "framework", "inverse_rate", "bare_time", "interval",
    "unnamed_duration", "batch_over_rate", "cumulative_slope", "timestamps", "llm",
]  # fmt: skip
# How directly each rule reads a step time (1 = printed as one, per step); a value's confidence
# starts from this (`tracker._confidence`). Ordered by how often each rule's reading was right
# on the dev set, and by how many assumptions each adds to the printed figure.
RULE_DIRECTNESS: dict[str, float] = {
    "named_per_step": 1.0, "per_step_unit": 1.0, "framework": 1.0, "inverse_rate": 0.95, "bare_time": 0.9,
    "interval": 0.85, "unnamed_duration": 0.75, "batch_over_rate": 0.7, "cumulative_slope": 0.7,
    "timestamps": 0.6, "llm": 0.7,
}  # fmt: skip


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
    time_rule: TimeRule | None = None  # how the step time was read (None: no step time, or unknown)
    # the wall time of one logging interval whose length in steps the line does not state
    # (`loss 2.31 (1m 2s 3ms)` every 50 steps): divided by the steps between two lines by the tracker
    interval_s: float | None = None
    # a clock since the start of the run (fairseq `wall=1118`, OpenNMT-py's trailing `890 sec`): never
    # a step time itself; when nothing else gives one, the tracker takes its slope over the step counter
    clock_s: float | None = None

    @property
    def has_metric(self) -> bool:
        """A step counter alone is not a metric (DeepSpeed's `step=N, skipped=..` lines)."""
        return (
            self.step_time_s is not None or self.loss is not None or self.throughput is not None
            or self.interval_s is not None
        )  # fmt: skip


__all__ = ["GROUPED", "NUM", "RULE_DIRECTNESS", "TIME_SCALE_S", "Extraction", "TimeRule"]
