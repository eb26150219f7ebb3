"""Acme `trace_seren.csv` / `trace_kalos.csv` (Shanghai AI Lab, NSDI'24; InternLM/AcmeTrace).

Schema: `job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,
duration,queue,gpu_time`; Kalos adds `mem_per_pod_GB,shared_mem_per_pod,fail_time,stop_time`.
Times carry a zone (`2023-03-01 00:18:22+08:00`). There is no VC column. The LLM workload
`type` (Pretrain, SFT, Evaluation, Debug, ...), `cpu_num` and `node_num` go to `attributes`.
State mapping, CPU-only and unfinished jobs: see `slurm`.
"""

from __future__ import annotations

from .csvtable import Table
from .slurm import parse_jobs, required_columns
from .trace import Record, SkipLog

NAME = "acme"
REQUIRED = required_columns(("user", "type"))
DESCRIPTION = "Acme trace_seren/trace_kalos: job_id,user,node_num,gpu_num,cpu_num,type,state,..."


def parse(table: Table, skips: SkipLog) -> list[Record]:
    return parse_jobs(
        table,
        skips,
        fmt=NAME,
        required=REQUIRED,
        vc_column=None,
        name_column=None,
        int_attributes=("cpu_num", "node_num"),
        text_attributes=("type",),
    )
