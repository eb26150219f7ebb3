"""Finish-time fairness of any engine run, against the spec's references (§2.2–§2.3, §6.4).

`schedulers.metrics` reports Themis' FTF against the mean number of active jobs; Ares's paper
measures against a fluid fair share of the trace instead. `ftf_metrics` computes that for any
`SimResult` (any policy), so Ares and its baselines are scored against one reference per trace.
A job's scaling curve and restart cost come from its spec (rigid and the engine's default when
absent).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..engine import SimConfig, SimResult
from ..job import JobSpec, Phase
from .config import FtfReference
from .fairness import FairnessReport, FluidJob, fairness_report, reference_finish_times
from .policy import CURVE_KEY
from .scaling import ScalingCurve, linear_curve

__all__ = ["fluid_jobs", "ftf_metrics"]


def fluid_jobs(specs: Iterable[JobSpec], default_restart_s: float = SimConfig.restart_cost) -> list[FluidJob]:
    """The trace as the fluid references see it (completed-length jobs; work = duration at demand)."""
    out = []
    for s in specs:
        curve = s.attributes.get(CURVE_KEY)
        curve = curve if isinstance(curve, ScalingCurve) else linear_curve(s.num_gpus)
        restart = s.attributes.get("restart_cost")
        restart_s = float(restart if restart is not None else default_restart_s)
        out.append(FluidJob(s.job_id, s.submit_time, s.num_gpus, s.duration, curve, restart_s))
    return out


def ftf_metrics(
    result: SimResult, reference: FtfReference = "scal_aligned", round_s: float = 60.0, *, gpus: int | None = None
) -> FairnessReport:
    """FTF per completed job, unfair fraction (FTF > 1), worst, mean and P99 FTF of one run."""
    specs = [j.spec for j in result.jobs]
    ref = reference_finish_times(fluid_jobs(specs), gpus or result.cluster.total_gpus, reference, round_s)
    finish = {j.job_id: j.end_time for j in result.jobs if j.phase is Phase.COMPLETED and j.end_time is not None}
    arrival = {s.job_id: s.submit_time for s in specs}
    return fairness_report(finish, arrival, ref)
