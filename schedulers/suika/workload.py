"""Which model a job trains, and the spec's fallback trace (§5.2): Poisson arrivals over 8 h,
LogNormal lengths scaled to an offered load, Table 1 models in a S:M:L mix. With
`arrivals=PHILLY` the submission times are those of the busiest 8 h of Philly (the spec's preferred
trace, as in Rubick and the Suika paper), thinned at random to `num_jobs`; lengths, mix and load
stay the fallback's (the file does not give Philly's GPU count, which the paper's down-sampling
"in proportion to cluster size" needs).

A job names its model in `spec.attributes["suika_model"]` and its default plan in `spec.plan`
(Megatron degrees); a generic trace job gets the closest catalogue model (`assign_model`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from schedmate.errors import BadInput

from ..arena.philly import busiest_window, philly_submits
from ..job import JobSpec, ParallelPlan
from .model import CATALOGUE, DEFAULT_MICRO_BATCH, DEFAULT_N_MICRO, DEFAULT_SEQ, ModelSpec

MODEL_KEY = "suika_model"
RESTART_KEY = "restart_cost"  # the engine's per-job restart cost: 0, the policy charges its own
H = 3600.0
POISSON, PHILLY = "poisson", "philly"  # TraceConfig.arrivals


@dataclass(frozen=True, slots=True)
class JobModel:
    """A job's model and the degrees of its default plan (the basic demand is pp*dp*tp)."""

    model: ModelSpec
    pp: int
    dp: int
    tp: int

    @property
    def gpus(self) -> int:
        return self.pp * self.dp * self.tp


def assign_model(num_gpus: int) -> JobModel:
    """The largest catalogue default that fits `num_gpus`, data-parallel widened to exactly that
    count (at most m = 24 replicas, one per sample of a micro-batch); XL models only if nothing
    smaller fits. A `ValueError` if no model does."""
    fits = [
        m for m in CATALOGUE.values()
        if m.gpus <= num_gpus and num_gpus % (m.pp * m.tp) == 0 and num_gpus // (m.pp * m.tp) <= DEFAULT_MICRO_BATCH
    ]
    if not fits:
        raise ValueError(f"no Suika catalogue model runs on exactly {num_gpus} GPUs")
    model = max(fits, key=lambda m: (m.size_class != "XL", m.gpus, m.params))
    return JobModel(model, model.pp, num_gpus // (model.pp * model.tp), model.tp)


def job_model(spec: JobSpec) -> JobModel:
    """The model a job trains: named in its attributes with its plan, else `assign_model`."""
    name = spec.attributes.get(MODEL_KEY)
    if name in CATALOGUE:
        model = CATALOGUE[name]
        plan = spec.plan
        if plan is not None:
            return JobModel(model, plan.pp, plan.dp, plan.tp)
        if model.gpus == spec.num_gpus:
            return JobModel(model, model.pp, model.dp, model.tp)
    return assign_model(spec.num_gpus)


DECLARED_KEY = "declared_workload"  # = sim.artefacts.DECLARED_KEY (core does not import sim)


def declared(model: ModelSpec, pp: int, tp: int) -> dict[str, object]:
    """What the job's submission states (model, global batch, default plan): the simulated world
    renders its code from this, never from the job's outcome (issue 26)."""
    return {"model": model.name, "kind": "lm", "params_b": model.params_b, "global_batch": DEFAULT_MICRO_BATCH * DEFAULT_N_MICRO,
            "gpus": model.gpus, "tp": tp, "pp": pp, "seq_len": DEFAULT_SEQ}


def prepare(jobs: Sequence[JobSpec]) -> list[JobSpec]:
    """Give every job a model and a default plan matching its GPU count, and engine restart cost 0
    (each arm charges its own redeployment model, §3.9)."""
    out = []
    for spec in jobs:
        jm = job_model(spec)
        attrs = {**spec.attributes, MODEL_KEY: jm.model.name, RESTART_KEY: 0.0, DECLARED_KEY: declared(jm.model, jm.pp, jm.tp)}
        out.append(replace(spec, attributes=attrs, plan=ParallelPlan(jm.tp, jm.pp, jm.dp)))
    return out


@dataclass(frozen=True, slots=True)
class TraceConfig:
    """§5.2 fallback trace: about 120 jobs over 8 h on 64 GPUs at offered load 0.9, S:M:L = 3:1:1."""

    num_gpus: int = 64
    hours: float = 8.0
    num_jobs: int = 120
    load: float = 0.9
    median_minutes: float = 20.0
    sigma: float = 1.2
    clip_minutes: tuple[float, float] = (2.0, 360.0)
    mix: tuple[tuple[str, float], ...] = (("S", 3.0), ("M", 1.0), ("L", 1.0))
    gap_scale: float = 1.0  # arrival gaps divided by this (sensitivity sweep (b))
    arrivals: str = POISSON  # POISSON: uniform over the span; PHILLY: the busiest 8 h of Philly, thinned


def _submits(cfg: TraceConfig, rng: np.random.Generator, span: float) -> np.ndarray:
    """`num_jobs` sorted submission offsets: uniform over the span (Poisson), or the busiest
    `span` of Philly thinned uniformly at random."""
    if cfg.arrivals == POISSON:
        return np.sort(rng.uniform(0.0, span, cfg.num_jobs))
    if cfg.arrivals != PHILLY:
        raise BadInput(f"unknown arrivals {cfg.arrivals!r}; choose {POISSON!r} or {PHILLY!r}")
    window = busiest_window(philly_submits(), span)
    if window.size < cfg.num_jobs:
        raise BadInput(f"the busiest {cfg.hours:g} h of Philly hold {window.size} jobs, fewer than {cfg.num_jobs}")
    return window[np.sort(rng.choice(window.size, size=cfg.num_jobs, replace=False))]


def generate_trace(cfg: TraceConfig, seed: int) -> list[JobSpec]:
    """A seeded trace; lengths are at the default plan, scaled so sum(basic x length) = load x GPU-time."""
    rng = np.random.default_rng(seed)
    span = cfg.hours * H
    submits = _submits(cfg, rng, span) / cfg.gap_scale
    lo, hi = (x * 60.0 for x in cfg.clip_minutes)
    lengths = np.clip(rng.lognormal(math.log(cfg.median_minutes * 60.0), cfg.sigma, cfg.num_jobs), lo, hi)
    classes = [c for c, _ in cfg.mix]
    weights = np.array([w for _, w in cfg.mix], dtype=float)
    picks = rng.choice(len(classes), size=cfg.num_jobs, p=weights / weights.sum())
    models = []
    for k in picks:
        pool = sorted((m for m in CATALOGUE.values() if m.size_class == classes[k] and m.gpus <= cfg.num_gpus), key=lambda m: m.name)
        models.append(pool[int(rng.integers(len(pool)))])
    demand = sum(m.gpus * d for m, d in zip(models, lengths))
    factor = cfg.load * cfg.num_gpus * cfg.hours * H / demand
    return [
        JobSpec(
            job_id=f"j{i:04d}",
            submit_time=float(round(submits[i], 1)),
            num_gpus=m.gpus,
            duration=float(round(lengths[i] * factor, 1)),
            name=m.name,
            attributes={MODEL_KEY: m.name, RESTART_KEY: 0.0, DECLARED_KEY: declared(m, m.pp, m.tp)},
            plan=ParallelPlan(m.tp, m.pp, m.dp),
            global_batch=192,
        )
        for i, m in enumerate(models)
    ]
