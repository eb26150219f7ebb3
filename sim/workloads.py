"""One workload per job: the code a simulated job's advisor reads is the workload the simulator runs.

Lucid's case used to give each trace job a random row of Lucid's `single_data.csv` for the
simulator and its profiler, while the advisor read generated code of an unrelated workload: two
workloads per job, so an advised profile could only disagree with the truth. Here the job's
artefact (`artefacts.plan_artefact`, from its planned work) *is* its workload:

- the job's Lucid attributes name the artefact (model = artefact key, dataset, per-device batch,
  AMP from its precision), so the engine's interference model and Lucid's profiler look up the
  same row;
- the row's single-job metrics are the workload's steady state (`artefacts.steady_metrics`, the
  same numbers the history's measured metrics scatter around);
- the sharing label is Lucid's own `auto_label` rule applied to the run's interference model:
  the mean co-located speed of the workload against every other workload of the table under the
  heavy-pair model (speed = 1 / max(1, u_A + u_B)^γ), since no measured pair exists for them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from schedmate.schedulers.job import JobSpec
from schedmate.schedulers.lucid import Metrics, WorkloadTable
from schedmate.schedulers.lucid.packing import auto_label
from schedmate.sim.artefacts import DEFAULT_RATIO, DEFAULT_VARIANTS, Artefact, plan_artefact, steady_metrics

__all__ = ["artefact_workloads", "lucid_attributes"]


def lucid_attributes(art: Artefact) -> dict[str, str | int]:
    cfg = art.config
    amp = 1 if str(getattr(cfg, "precision", "fp32")).lower() in ("bf16", "fp16", "amp", "mixed") else 0
    return {"model": art.key, "dataset": str(cfg.dataset), "batch_size": int(cfg.per_device_batch), "amp": amp}


def artefact_workloads(specs: Sequence[JobSpec], seed: int, *, gamma: float = 1.5, ratio: float = DEFAULT_RATIO,
                       variants: int = DEFAULT_VARIANTS) -> tuple[list[JobSpec], WorkloadTable]:
    """Copies of `specs` whose Lucid attributes name their own artefact, and the table of those
    workloads (metrics + sharing labels). Jobs that already name a model keep it."""
    out: list[JobSpec] = []
    metrics: dict[tuple[str, str, int, int], Metrics] = {}
    for spec in specs:
        if "model" in spec.attributes:
            out.append(spec)
            continue
        art = plan_artefact(spec, seed, ratio=ratio, variants=variants)
        attrs = lucid_attributes(art)
        key = (str(attrs["model"]), str(attrs["dataset"]), int(attrs["batch_size"]), int(attrs["amp"]))
        if key not in metrics:
            m = steady_metrics(art)
            metrics[key] = Metrics(m["speed"], m["gpu_util"], m["gmem_util"], m["gmem"])
        out.append(dataclasses.replace(spec, attributes={**spec.attributes, **attrs}))
    keys = sorted(metrics)
    util = np.array([metrics[k].gpu_util / 100.0 for k in keys])
    rows = {}
    for i, k in enumerate(keys):
        others = np.delete(util, i) if len(util) > 1 else util
        mean_speed = float(np.mean(1.0 / np.maximum(1.0, util[i] + others) ** gamma))
        rows[k] = (metrics[k], auto_label(mean_speed))
    return out, WorkloadTable(rows, source=f"artefact workloads (seed {seed})")
