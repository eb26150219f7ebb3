"""Lucid (Hu et al., ASPLOS'23) as small modules: profiler, packing analyzer and binder, EBM
duration estimator, throughput-aware throttle, and the `Lucid` policy composing them.

Measured data (`single_data.csv`, `colocate_info.csv`) is read from ../shared/data/lucid by path;
without it Lucid still runs, measuring nothing and never packing.
"""

from .data import Metrics, WorkloadTable, assign_workloads, load_default_table
from .estimator import DurationEstimator, EBMConfig
from .interference import LucidInterference
from .packing import BinderRules, PackInfo, PackingAnalyzer, auto_label, auto_labels
from .policy import Lucid, LucidJob
from .profiler import ENGINE_CAN_DISCARD, Profiler, ProfileRun
from .throttle import SubmissionForecaster, Throttle

__all__ = [
    "ENGINE_CAN_DISCARD",
    "BinderRules",
    "DurationEstimator",
    "EBMConfig",
    "Lucid",
    "LucidJob",
    "LucidInterference",
    "Metrics",
    "PackInfo",
    "PackingAnalyzer",
    "ProfileRun",
    "Profiler",
    "SubmissionForecaster",
    "Throttle",
    "WorkloadTable",
    "assign_workloads",
    "auto_label",
    "auto_labels",
    "load_default_table",
]
