"""Finish-time fairness against fluid fair-share references (spec §2.2–§2.3, §6.4).

FTF_j = (f_j − a_j) / (f̃_j − a_j); a job is unfairly served when FTF_j > 1 exactly (§7.9). f̃_j
comes from a fluid reference that depends on the trace only, so it is computed once per trace
and shared by every policy:

- R-scal (headline): every present job gets M/N_t GPUs capped at G_j, progresses at thr(min(s,
  G_j)), and freed capacity is not redistributed. With alignment a job enters at
  ⌈a_j/R⌉·R + o_j, so round quantisation and restart cost alone never mark a job unfair.
- R-lin: linear GPS over GPU-time (the scheduling reference, §3.1); secondary column only.

`fluid_finish_times` is the event-driven solver shared by the references and the fluid MaxMin
baseline: rates change only when a job enters or leaves.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .config import FtfReference
from .scaling import ScalingCurve
from .virtual_time import rlin_finish_times

__all__ = [
    "FairnessReport",
    "FluidJob",
    "FluidSystem",
    "ScalingGps",
    "fairness_report",
    "fluid_finish_times",
    "reference_finish_times",
    "waterfill",
]

_REL_EPS = 1e-9
_FLOAT_SLACK = 1e-9  # absorbs float noise only (a tie with the reference is fair), not a tolerance


@dataclass(frozen=True, slots=True)
class FluidJob:
    """A job as the references see it: trace facts only. `work` = seconds at the demanded DoP."""

    job_id: str
    arrival: float
    demand: int
    work: float
    curve: ScalingCurve
    restart_s: float = 0.0

    @property
    def gpu_time(self) -> float:
        """L_j = d_j · T_j(d_j), GPU·s."""
        return self.demand * self.work


RateFn = Callable[[Sequence[FluidJob]], Sequence[float]]
"""Rates (work-seconds per second) of the jobs present, given in entry order."""


class FluidSystem:
    """A fluid fair-share system stepped event by event: rates change only when jobs enter or leave.

    `advance(until)` runs it to `until` (∞: until it empties), recording finishes in `done`;
    `predict()` gives the finish time of every present job if nothing else entered.
    """

    def __init__(self, rates: RateFn, t: float = 0.0) -> None:
        self.rates = rates
        self.t = t
        self.present: list[FluidJob] = []
        self.left: dict[str, float] = {}
        self.done: dict[str, float] = {}

    def add(self, job: FluidJob, work: float | None = None) -> None:
        w = job.work if work is None else work
        if w <= 0:
            self.done[job.job_id] = self.t
            return
        self.present.append(job)
        self.left[job.job_id] = w

    def advance(self, until: float) -> None:
        while self.present:
            r = np.asarray(self.rates(self.present), dtype=float)
            rem = np.array([self.left[j.job_id] for j in self.present])
            with np.errstate(divide="ignore"):
                to_finish = np.where(r > 0, rem / np.where(r > 0, r, 1.0), math.inf)
            first = int(to_finish.argmin())
            dt = min(float(to_finish[first]), until - self.t)
            if dt == math.inf:
                raise ValueError("fluid system stalled: no present job progresses")
            self.t += dt
            rem = rem - r * dt
            keep: list[FluidJob] = []
            for i, job in enumerate(self.present):
                if (i == first and dt >= to_finish[i]) or rem[i] <= _REL_EPS * job.work:
                    self.done[job.job_id] = self.t
                    del self.left[job.job_id]
                else:
                    self.left[job.job_id] = float(rem[i])
                    keep.append(job)
            self.present = keep
            if self.t >= until:
                return
        if until != math.inf:
            self.t = max(self.t, until)

    def predict(self) -> dict[str, float]:
        """Finish times of the present jobs if no other job entered."""
        ghost = FluidSystem(self.rates, self.t)
        for job in self.present:
            ghost.add(job, self.left[job.job_id])
        ghost.advance(math.inf)
        return ghost.done


def fluid_finish_times(jobs: Sequence[FluidJob], entries: Mapping[str, float], rates: RateFn) -> dict[str, float]:
    """Event-driven fluid system: each job present from `entries[id]` until its work is done."""
    system = FluidSystem(rates)
    for job in sorted(jobs, key=lambda j: (entries[j.job_id], j.job_id)):
        system.advance(entries[job.job_id])
        system.add(job)
    system.advance(math.inf)
    return system.done


def _rscal_rates(gpus: int) -> RateFn:
    def rates(present: Sequence[FluidJob]) -> list[float]:
        share = gpus / len(present)
        return [j.curve.speed(min(share, j.curve.max_gpus), j.demand) for j in present]

    return rates


class ScalingGps:
    """The artifact's priority reference (`priority_reference="scaling_gps"`, spec §7.5).

    A scaling-aware, G_j-capped, non-redistributing GPS (R-scal without alignment) over the jobs
    arrived so far, fed with estimated work. On every arrival it re-predicts every present job's
    finish time; Ares orders by those predictions, which may reorder existing jobs (not one-shot).
    """

    def __init__(self, gpus: int) -> None:
        self.system = FluidSystem(_rscal_rates(gpus))

    def arrive(self, job: FluidJob, at: float) -> dict[str, float]:
        self.system.advance(at)
        self.system.add(job)
        return self.system.predict()


def reference_finish_times(
    jobs: Sequence[FluidJob], gpus: int, mode: FtfReference = "scal_aligned", round_s: float = 60.0
) -> dict[str, float]:
    """f̃_j for every job under the chosen reference (compute once per trace, §6.4)."""
    if mode == "lin":
        return rlin_finish_times(((j.job_id, j.arrival, j.gpu_time) for j in jobs), gpus)
    if mode == "scal_aligned":
        entries = {j.job_id: _align(j.arrival, round_s) + j.restart_s for j in jobs}
    elif mode == "scal":
        entries = {j.job_id: j.arrival for j in jobs}
    else:
        raise ValueError(f"unknown reference {mode!r}")
    return fluid_finish_times(jobs, entries, _rscal_rates(gpus))


def _align(t: float, round_s: float) -> float:
    return math.ceil(t / round_s - 1e-9) * round_s if round_s > 0 else t


def waterfill(caps: Sequence[float], total: float) -> list[float]:
    """Max-min fair shares of `total` among jobs each capped at `caps[i]` (freed share redistributed)."""
    out = [0.0] * len(caps)
    left = float(total)
    order = sorted(range(len(caps)), key=lambda i: caps[i])
    for pos, i in enumerate(order):
        share = left / (len(order) - pos)
        out[i] = min(float(caps[i]), share)
        left -= out[i]
    return out


@dataclass(frozen=True)
class FairnessReport:
    """Per-trace fairness of one schedule (§2.2): FTF per job and its summaries."""

    ftf: dict[str, float]
    unfair_fraction: float
    worst_ftf: float
    mean_ftf: float
    p99_ftf: float


def fairness_report(
    finish: Mapping[str, float], arrival: Mapping[str, float], reference: Mapping[str, float]
) -> FairnessReport:
    """FTF of every finished job that has a reference; unfair means FTF > 1 exactly (§7.9)."""
    ftf = {}
    for job_id, f in finish.items():
        ref = reference.get(job_id)
        if ref is None or ref <= arrival[job_id]:
            continue
        ftf[job_id] = (f - arrival[job_id]) / (ref - arrival[job_id])
    if not ftf:
        nan = float("nan")
        return FairnessReport({}, nan, nan, nan, nan)
    values = np.array(list(ftf.values()))
    return FairnessReport(
        ftf=ftf,
        unfair_fraction=float((values > 1.0 + _FLOAT_SLACK).mean()),
        worst_ftf=float(values.max()),
        mean_ftf=float(values.mean()),
        p99_ftf=float(np.percentile(values, 99)),
    )
