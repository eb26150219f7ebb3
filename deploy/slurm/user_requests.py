"""What users ask for with `--time`: a model of user run-time requests from the HPC literature.

What the published analyses of real batch logs agree on, and what the model takes from them:

- **Requests are modal.** Tsafrir, Etsion and Feitelson ("Modeling User Runtime Estimates",
  JSSPP 2005, LNCS 3834) found that about 20 distinct values cover about 90% of the jobs in each
  log they studied: round values (15 min, 1 h, 4 h, a day, ...). Here a request is rounded up to
  the next of `round_values_s`.
- **The maximum is the most popular single value**, and its share is the one site-specific input
  their model needs (given the maximal allowed value and the share of jobs using it, the model
  reproduces the logs' estimate distributions). `max_share` is that share.
- **Requests are upper bounds, mostly far above the run time**: users are killed at their limit,
  so they over-ask (Mu'alem & Feitelson, "Utilization, Predictability, Workloads, and User Runtime
  Estimates in Scheduling the IBM SP2 with Backfilling", IEEE TPDS 12(6), 2001; Lee et al., "Are
  User Runtime Estimates Inherently Inaccurate?", JSSPP 2004). Jobs that fail or are cancelled
  early run a small fraction of what was asked.

What is **assumed, not measured** (no GPU-cluster log here records requests): the over-ask factor
on the job's *full* planned run (log-uniform on [1, `overask_max`]), `max_share` = 0.2, the share
of jobs submitted without `--time` (`no_request_share`, which get the partition default), and the
partition's limits (MaxTime 7 days; DefaultTime unset, so Slurm uses MaxTime). A request is never
below the job's full run: users whose jobs got killed raised their requests, as the logs' run
times (already cut by the limits) show. That is generous to the users' arm: it loses no job.

Every draw is a hash of (seed, job id): the same job asks the same in every arm. All parameters
live in `UserRequestModel`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from schedmate.sim.artefacts import unit_hash

__all__ = ["ROUND_VALUES_S", "UserRequestModel"]

_MIN, _H, _D = 60.0, 3600.0, 86_400.0
ROUND_VALUES_S = (5 * _MIN, 10 * _MIN, 15 * _MIN, 30 * _MIN, _H, 2 * _H, 3 * _H, 4 * _H, 6 * _H, 8 * _H, 12 * _H,
                  _D, 2 * _D, 3 * _D, 4 * _D, 5 * _D, 7 * _D)
"""The round values users type (17 values up to 7 days: Tsafrir et al.'s ~20 modes)."""


@dataclass(frozen=True)
class UserRequestModel:
    """Users' `--time` requests and the partition's limits (module docstring: sources, assumptions)."""

    max_time_s: float = 7 * _D  # partition MaxTime
    default_time_s: float | None = None  # partition DefaultTime; None: unset, Slurm uses MaxTime
    no_request_share: float = 0.1  # jobs submitted without --time (assumption)
    max_share: float = 0.2  # jobs that ask for MaxTime (Tsafrir et al.'s one site input; value assumed)
    overask_max: float = 10.0  # the over-ask factor is log-uniform on [1, overask_max] (assumption)
    round_values_s: tuple[float, ...] = ROUND_VALUES_S

    @property
    def default_s(self) -> float:
        return self.max_time_s if self.default_time_s is None else min(self.default_time_s, self.max_time_s)

    def request(self, job_id: str, full_run_s: float, seed: int) -> float | None:
        """Seconds the user asks for (None: submitted without --time). `full_run_s` is the job's
        run if it completed (its plan as run): what the user has in mind, early stop or not."""
        if unit_hash("slurm-no-time", seed, job_id) < self.no_request_share:
            return None
        if unit_hash("slurm-max-time", seed, job_id) < self.max_share:
            return self.max_time_s
        factor = math.exp(math.log(self.overask_max) * unit_hash("slurm-overask", seed, job_id))
        want = max(1.0, full_run_s) * factor
        rounded = next((v for v in self.round_values_s if v >= want), self.max_time_s)
        return min(rounded, self.max_time_s)
