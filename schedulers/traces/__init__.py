"""Job traces: loaders for public GPU-cluster traces, and a calibrated synthetic generator.

`load_trace(path)` detects the format from the header; `generate_trace(n, seed)` needs no data.
Both return a `LoadedTrace` whose jobs are sorted by submit time, the first at t=0.
"""

from .errors import TraceFormatError
from .loader import FORMATS, TraceFormat, detect_format, iter_formats, load_trace
from .synthetic import (
    CALIBRATIONS,
    ArrivalModel,
    Calibration,
    calibration_from_summary,
    generate_trace,
)
from .trace import LoadedTrace

__all__ = [
    "CALIBRATIONS",
    "FORMATS",
    "ArrivalModel",
    "Calibration",
    "LoadedTrace",
    "TraceFormat",
    "TraceFormatError",
    "calibration_from_summary",
    "detect_format",
    "generate_trace",
    "iter_formats",
    "load_trace",
]
