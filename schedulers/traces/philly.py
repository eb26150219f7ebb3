"""Sia's Philly trace (`sia/traces/philly.csv`): `timestamp,duration,num_gpus,gpu_time,cluster`.

82,247 jobs from Microsoft's Philly cluster (2017) as the Sia artifact ships them. The file has
no job ids, no users and no final states, and it is not sorted by time.

Choices, and why:
- job ids are `philly-<line>`, the source line, so a job can be found in the file;
- `cluster` (a VC hash) becomes `vc`; every job is COMPLETED because the file carries no state;
- `duration` 0 is kept: it is a legal run time and dropping it would change the job mix;
- `num_gpus` 0 rows are skipped and counted (a JobSpec needs at least one GPU);
- the file's one malformed row (an empty line at the end) is skipped and counted.
`gpu_time` is redundant (duration x num_gpus) and is not read.
"""

from __future__ import annotations

from .csvtable import Table, nonneg_float, nonneg_int, timestamp
from .trace import NO_FIELDS, Record, SkipLog

NAME = "philly"
REQUIRED = ("timestamp", "duration", "num_gpus", "cluster")
DESCRIPTION = "Sia's Philly jobs: timestamp,duration,num_gpus,gpu_time,cluster"


def parse(table: Table, skips: SkipLog) -> list[Record]:
    col = table.columns(REQUIRED, NAME)
    i_ts, i_dur, i_gpus, i_vc = (col[c] for c in REQUIRED)
    out: list[Record] = []
    for line, row in table.records(skips):
        submit = timestamp(table, line, "timestamp", row[i_ts])
        duration = nonneg_float(table, line, "duration", row[i_dur])
        gpus = nonneg_int(table, line, "num_gpus", row[i_gpus])
        if gpus == 0:
            skips.add(line, "num_gpus is 0")
            continue
        vc = row[i_vc].strip()
        fields = {"vc": vc} if vc else NO_FIELDS
        out.append((submit, f"philly-{line}", line, gpus, duration, fields))
    return out
