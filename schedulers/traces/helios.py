"""Helios `cluster_log.csv` (SenseTime, SC'21; S-Lab-System-Group/HeliosData).

Public schema: `job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,
duration,queue` (Lucid's full Venus log adds `jobname`, read as the job name when present).
Times are `YYYY-MM-DD HH:MM:SS`; `duration` is end - start in seconds. State mapping, CPU-only
and unfinished jobs: see `slurm`. `cpu_num` and `node_num` go to `attributes`.
"""

from __future__ import annotations

from .csvtable import Table
from .slurm import parse_jobs, required_columns
from .trace import Record, SkipLog

NAME = "helios"
REQUIRED = required_columns(("user", "vc"))
DESCRIPTION = "Helios cluster_log.csv: job_id,user,vc,gpu_num,cpu_num,node_num,state,..."


def parse(table: Table, skips: SkipLog) -> list[Record]:
    return parse_jobs(
        table,
        skips,
        fmt=NAME,
        required=REQUIRED,
        vc_column="vc",
        name_column="jobname",
        int_attributes=("cpu_num", "node_num"),
    )
