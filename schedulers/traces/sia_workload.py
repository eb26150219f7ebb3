"""Sia workload files (`sia/workloads/*/workload-N.csv`).

Columns `name,time,application,num_replicas,batch_size`.

These list what was submitted, not how long it ran: in Sia a job's run time comes from its
goodput model (measured step times in `sia/traces/<app>/`) and the GPUs it is given. This loader
stays simple and leaves that model to later code:
- with `app_durations` (seconds per application), each job gets its application's duration, and
  an application missing from the table is an error (a silent default would skew the workload);
- without it, jobs get `duration=0` and `attributes['duration_unknown']=True`, so a consumer
  that needs run times can detect them and fill them in rather than simulate empty jobs.
`application` and `batch_size` go to `attributes`; `num_replicas` is the requested GPU count
(rows with 0 are skipped and counted). `name` is the job id and the job name.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from .csvtable import Table, nonempty, nonneg_float, nonneg_int
from .errors import TraceFormatError
from .trace import Record, SkipLog

NAME = "sia_workload"
REQUIRED = ("name", "time", "application", "num_replicas", "batch_size")
DESCRIPTION = "Sia workloads: name,time,application,num_replicas,batch_size (no durations)"


def parse(
    table: Table, skips: SkipLog, *, app_durations: Mapping[str, float] | None = None
) -> list[Record]:
    if app_durations is not None:
        for app, seconds in app_durations.items():
            if not (0.0 <= seconds < math.inf):
                raise ValueError(f"app_durations[{app!r}] must be a number >= 0, got {seconds}")
    col = table.columns(REQUIRED, NAME)
    i_name, i_time, i_app, i_gpus, i_batch = (col[c] for c in REQUIRED)
    out: list[Record] = []
    for line, row in table.records(skips):
        name = nonempty(table, line, "name", row[i_name])
        submit = nonneg_float(table, line, "time", row[i_time])
        app = nonempty(table, line, "application", row[i_app])
        gpus = nonneg_int(table, line, "num_replicas", row[i_gpus])
        batch = nonneg_int(table, line, "batch_size", row[i_batch])
        if gpus == 0:
            skips.add(line, "num_replicas is 0")
            continue
        attributes: dict[str, object] = {"application": app, "batch_size": batch}
        if app_durations is None:
            duration = 0.0
            attributes["duration_unknown"] = True
        elif app in app_durations:
            duration = float(app_durations[app])
        else:
            known = ", ".join(sorted(app_durations)) or "none given"
            raise TraceFormatError(
                table.path, line, "application", f"an application in app_durations ({known})", app
            )
        out.append((submit, name, line, gpus, duration, {"name": name, "attributes": attributes}))
    return out
