"""The §6 reproduction workload: seeded synthetic LM jobs with the artifact generator's mix.

240 jobs over 6 h: Poisson-like arrivals at a base rate with two 30-min bursts at 3× (sampled
exactly `n_jobs` times from that rate profile), or with `arrivals=PHILLY` the submission times of a
6-h Philly slice (`philly.py`; the spec's first choice when the trace is available); model family / size / batch / requested GPUs and
type from the artifact weights (§5.1), resampled until AP runs the request; lognormal runtimes
(σ = 1, clipped to [5 min, 8 h]) on the request, the median scaled to the target offered load;
`n_iters = runtime·Thr_AP(req)/B`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedmate.errors import BadInput

from ..cluster import ClusterSpec
from ..job import JobSpec, ParallelPlan
from .hardware import gpu_types_of
from .model import BATCHES, COUNTS, SEQ_LEN, SIZES, PerfTable, make_model, perf_table
from .philly import philly_slice, philly_submits
from .policy import ATTR, LMJob

H = 3600.0
FAMILY_W = {"wrn": 15, "gpt": 25, "moe": 60}
SIZE_W = (10, 15, 25, 20, 15, 10)
BATCH_W = (50, 10, 5)
COUNT_CUM = (10, 25, 45, 65, 80)
TYPE_W = {"A100": 15, "V100": 15, "A40": 30, "A10": 30}
POISSON, PHILLY = "poisson", "philly"  # WorkloadSpec.arrivals


@dataclass(frozen=True)
class WorkloadSpec:
    n_jobs: int = 240
    window_s: float = 6 * H
    load: float = 1.3
    base_rate_h: float = 35.0
    burst_factor: float = 3.0
    burst_s: float = 1800.0
    sigma: float = 1.0
    clip_s: tuple[float, float] = (300.0, 8 * H)
    priorities: int = 1  # λ drawn uniformly from 1..priorities (1: the artifact setting)
    arrivals: str = POISSON  # POISSON: base rate + two bursts; PHILLY: a Philly slice (§6, `philly.py`)
    slice_slack: float = 0.1  # PHILLY: the window holds n_jobs .. n_jobs·(1 + slack) arrivals


DECLARED_KEY = "declared_workload"  # = sim.artefacts.DECLARED_KEY (core does not import sim)


def declared(lm: LMJob, plan: ParallelPlan) -> dict[str, object]:
    """What the job's submission states (model, global batch, request and the AP plan on it): the
    simulated world renders its code from this, never from the job's outcome (issue 26)."""
    return {"model": f"{lm.family}-{lm.billions:g}B", "kind": "cnn" if lm.family == "wrn" else "lm",
            "params_b": lm.billions, "global_batch": lm.batch, "gpus": lm.req_gpus, "tp": plan.tp, "pp": plan.pp,
            "seq_len": None if lm.family == "wrn" else SEQ_LEN}


def _weights(w: tuple[float, ...] | list[float] | np.ndarray) -> np.ndarray:
    a = np.asarray(w, dtype=float)
    return a / a.sum()


def arrivals(rng: np.random.Generator, w: WorkloadSpec) -> np.ndarray:
    """`n_jobs` sorted arrival times: a Philly slice (`w.arrivals == PHILLY`), else drawn from the
    base-plus-two-bursts rate profile."""
    if w.arrivals == PHILLY:
        return philly_slice(philly_submits(), rng, w.n_jobs, w.window_s, w.slice_slack)
    if w.arrivals != POISSON:
        raise BadInput(f"unknown arrivals {w.arrivals!r}; choose {POISSON!r} or {PHILLY!r}")
    starts = np.sort(rng.uniform(0.0, w.window_s - w.burst_s, size=2))
    grid = np.linspace(0.0, w.window_s, 721)
    rate = np.full(grid.size - 1, w.base_rate_h)
    mid = (grid[:-1] + grid[1:]) / 2
    for s in starts:
        rate[(mid >= s) & (mid < s + w.burst_s)] *= w.burst_factor
    cell = rng.choice(rate.size, size=w.n_jobs, p=rate / rate.sum())
    t = grid[cell] + rng.uniform(0.0, grid[1] - grid[0], size=w.n_jobs)
    return np.sort(np.round(t, 1))


def _runtimes(rng: np.random.Generator, gpus: np.ndarray, w: WorkloadSpec, total_gpus: int) -> np.ndarray:
    """Lognormal(σ) runtimes with the median scaled (bisection) to the target offered load."""
    z = rng.normal(0.0, w.sigma, size=gpus.size)
    target = w.load * total_gpus * w.window_s
    lo, hi = 1.0, 1e6
    for _ in range(60):
        med = (lo * hi) ** 0.5
        load = float((gpus * np.clip(med * np.exp(z), *w.clip_s)).sum())
        lo, hi = (med, hi) if load < target else (lo, med)
    return np.clip(((lo * hi) ** 0.5) * np.exp(z), *w.clip_s)


def generate(cluster: ClusterSpec, seed: int, w: WorkloadSpec | None = None) -> list[JobSpec]:
    """The seeded workload on `cluster` (request types restricted to the cluster's types)."""
    w = w or WorkloadSpec()
    rng = np.random.default_rng(seed)
    gpus_by_type = gpu_types_of(cluster)
    cap = {g: sum(n.gpus for n in cluster.nodes if n.gpu_type == g) for g in gpus_by_type}
    types = [t for t in TYPE_W if t in gpus_by_type] or sorted(gpus_by_type)
    type_p = _weights([TYPE_W.get(t, 1) for t in types])
    fams = list(FAMILY_W)
    count_p = _weights(np.diff((0, *COUNT_CUM)))
    tables: dict[tuple[str, float, int], PerfTable] = {}
    jobs = []
    for _ in range(w.n_jobs):
        while True:
            fam = fams[rng.choice(3, p=_weights(list(FAMILY_W.values())))]
            size_i = min(int(rng.choice(len(SIZE_W), p=_weights(SIZE_W))), len(SIZES[fam]) - 1)
            batch = BATCHES[fam][int(rng.choice(3, p=_weights(BATCH_W)))]
            count_i = int(rng.choice(len(COUNTS), p=count_p))
            if count_i > size_i + 2:
                continue
            gtype, n = types[int(rng.choice(len(types), p=type_p))], COUNTS[count_i]
            if n > cap[gtype]:
                continue
            key = (fam, SIZES[fam][size_i], batch)
            if key not in tables:
                tables[key] = perf_table(make_model(fam, key[1]), batch, gpus_by_type)
            if tables[key].ap[(gtype, n)] > 0:
                break
        jobs.append((key, gtype, n))
    times = arrivals(rng, w)
    run = _runtimes(rng, np.array([n for _, _, n in jobs], dtype=float), w, cluster.total_gpus)
    prio = rng.integers(1, w.priorities + 1, size=w.n_jobs)
    out = []
    for i, ((fam, size, batch), gtype, n) in enumerate(jobs):
        table = tables[(fam, size, batch)]
        thr = table.ap[(gtype, n)]
        iters = max(1, round(run[i] * thr / batch))
        lm = LMJob(fam, size, batch, gtype, n, iters, int(prio[i]))
        out.append(JobSpec(f"a{i:04d}", float(times[i]), n, iters * batch / thr, name=f"{fam}-{size:g}B",
                           attributes={ATTR: lm, DECLARED_KEY: declared(lm, table.plans[(gtype, n)])}))
    return out
