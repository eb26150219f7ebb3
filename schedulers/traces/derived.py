"""Four-column derived traces: `job_id,arrival_s,service_sec,gpu_count`.

Third-party reductions of Helios Venus (`helios-venus-derived/helios_trace.csv`) and of Alibaba
PAI v2020 (`alibaba-pai-v2020-derived/alibaba_trace_sub.csv`) share this schema, so one loader
serves both. What the reduction lost cannot be recovered: every job is COMPLETED (the Helios one
mixes completed, failed and cancelled jobs), run times were clamped at 48 h, and PAI's
`arrival_s` is the task's start, not its submission.

`gpu_count` 0 rows are skipped and counted; truncated rows too.
"""

from __future__ import annotations

from .csvtable import Table, nonempty, nonneg_float, nonneg_int
from .trace import NO_FIELDS, Record, SkipLog

NAME = "derived"
REQUIRED = ("job_id", "arrival_s", "service_sec", "gpu_count")
DESCRIPTION = "derived 4-column traces (Helios Venus, PAI): job_id,arrival_s,service_sec,gpu_count"


def parse(table: Table, skips: SkipLog) -> list[Record]:
    col = table.columns(REQUIRED, NAME)
    i_id, i_arr, i_svc, i_gpus = (col[c] for c in REQUIRED)
    out: list[Record] = []
    for line, row in table.records(skips):
        job_id = nonempty(table, line, "job_id", row[i_id])
        submit = nonneg_float(table, line, "arrival_s", row[i_arr])
        duration = nonneg_float(table, line, "service_sec", row[i_svc])
        gpus = nonneg_int(table, line, "gpu_count", row[i_gpus])
        if gpus == 0:
            skips.add(line, "gpu_count is 0")
            continue
        out.append((submit, job_id, line, gpus, duration, NO_FIELDS))
    return out
