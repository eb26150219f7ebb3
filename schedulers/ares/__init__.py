"""Ares (Liu et al., ACM TACO 2025): elastic fair queuing for DL jobs, after spec `ares.md`.

Pure model (no engine): `scaling` (curves at a fixed global batch), `virtual_time` (the WFQ clock
over linear GPS), `elastic` (scale-out caps and the earliest-virtual-finish allocation pass),
`fairness` (finish-time fairness against the R-scal / R-lin references) and `baselines` (the
spec's comparison allocators). On the engine: `policy` (`Ares` and the baseline arms), and the
reproduction check in `experiment` (`schedmate experiment ares --out OUT`).
"""

from .config import AresConfig
from .elastic import Contender, ares_allocate, fill_target, scale_cap
from .fairness import FairnessReport, FluidJob, fairness_report, reference_finish_times
from .policy import CURVE_KEY, EST_KEY, AllocationPolicy, Ares, EfsInt, FifoRigid, LasRigid, OptimusLike, SrtfRigid
from .scaling import ScalingCurve, linear_curve, log_curve, table_curve
from .virtual_time import VirtualClock, rlin_finish_times

__all__ = [
    "CURVE_KEY",
    "EST_KEY",
    "AllocationPolicy",
    "Ares",
    "AresConfig",
    "Contender",
    "EfsInt",
    "FairnessReport",
    "FifoRigid",
    "FluidJob",
    "LasRigid",
    "OptimusLike",
    "ScalingCurve",
    "SrtfRigid",
    "VirtualClock",
    "ares_allocate",
    "fairness_report",
    "fill_target",
    "linear_curve",
    "log_curve",
    "reference_finish_times",
    "rlin_finish_times",
    "scale_cap",
    "table_curve",
]
