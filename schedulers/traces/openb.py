"""Alibaba "openb" GPU-sharing pod trace (FGD, ATC'23): `openb_pod_list_default.csv`.

Columns `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
deletion_time,scheduled_time`; times are seconds on a relative clock. Choices, and why:
- GPU pods only: `num_gpu` 0 pods are skipped and counted;
- a fractional share (`gpu_milli` < 1000) asks for one GPU; the share is kept in
  `attributes['gpu_milli']` for sharing-aware policies;
- submit = `creation_time`, duration = `deletion_time - scheduled_time` (the time it held GPUs);
  pods never scheduled (empty `scheduled_time`, the Pending ones) or never deleted are skipped
  and counted, since they have no run time;
- `pod_phase` Failed → FAILED, anything else that ran → COMPLETED; the phase, `qos`,
  `cpu_milli` and `memory_mib` go to `attributes`; `gpu_spec` (`A10|T4`) → `gpu_types`.
"""

from __future__ import annotations

from typing import Any

from ..job import FinalStatus
from .csvtable import Table, nonempty, nonneg_float, nonneg_int
from .errors import TraceFormatError
from .trace import Record, SkipLog

NAME = "openb"
REQUIRED = (
    "name", "num_gpu", "gpu_milli", "pod_phase", "creation_time", "deletion_time", "scheduled_time"
)
DESCRIPTION = "Alibaba openb pods: name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,..."
_PHASES = ("Running", "Succeeded", "Failed", "Pending", "Unknown")


def parse(table: Table, skips: SkipLog) -> list[Record]:
    col = table.columns(REQUIRED, NAME)
    i_name, i_gpus, i_milli, i_phase, i_created, i_deleted, i_sched = (col[c] for c in REQUIRED)
    i_spec, i_qos = col.get("gpu_spec"), col.get("qos")
    i_cpu, i_mem = col.get("cpu_milli"), col.get("memory_mib")
    out: list[Record] = []
    for line, row in table.records(skips):
        name = nonempty(table, line, "name", row[i_name])
        gpus = nonneg_int(table, line, "num_gpu", row[i_gpus])
        milli = nonneg_int(table, line, "gpu_milli", row[i_milli])
        phase = row[i_phase].strip()
        if phase not in _PHASES:
            raise TraceFormatError(
                table.path, line, "pod_phase", "a pod phase (" + ", ".join(_PHASES) + ")", phase
            )
        if gpus == 0:
            skips.add(line, "CPU-only pod (num_gpu 0)")
            continue
        submit = nonneg_float(table, line, "creation_time", row[i_created])
        if not row[i_sched].strip():
            skips.add(line, f"pod never scheduled ({phase})")
            continue
        if not row[i_deleted].strip():
            skips.add(line, "pod never deleted: no run time")
            continue
        scheduled = nonneg_float(table, line, "scheduled_time", row[i_sched])
        deleted = nonneg_float(table, line, "deletion_time", row[i_deleted])
        if deleted < scheduled:
            raise TraceFormatError(
                table.path, line, "deletion_time", "a time >= scheduled_time", row[i_deleted]
            )
        attributes: dict[str, Any] = {"pod_phase": phase}
        if milli < 1000:
            attributes["gpu_milli"] = milli
        if i_qos is not None and row[i_qos].strip():
            attributes["qos"] = row[i_qos].strip()
        if i_cpu is not None and row[i_cpu].strip():
            attributes["cpu_milli"] = nonneg_int(table, line, "cpu_milli", row[i_cpu])
        if i_mem is not None and row[i_mem].strip():
            attributes["memory_mib"] = nonneg_int(table, line, "memory_mib", row[i_mem])
        fields: dict[str, Any] = {
            "status": FinalStatus.FAILED if phase == "Failed" else FinalStatus.COMPLETED,
            "name": name,
            "attributes": attributes,
        }
        if i_spec is not None and row[i_spec].strip():
            fields["gpu_types"] = tuple(t for t in row[i_spec].strip().split("|") if t)
        out.append((submit, name, line, gpus, deleted - scheduled, fields))
    return out
