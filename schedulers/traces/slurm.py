"""Row parsing shared by the Slurm-exported traces (Helios `cluster_log.csv`, Acme `trace_*.csv`).

Both record one row per job with a Slurm final state, a submit timestamp and a run time in
seconds (`duration` = end - start). Policy:
- COMPLETED → completed; CANCELLED (also `CANCELED`, `CANCELLED by <uid>`) → cancelled; FAILED,
  TIMEOUT, NODE_FAIL (and Slurm's other failure states) → failed, as both papers count them,
  with the original state kept in `attributes['state']` when it was not literally the result;
- states of jobs that had not ended (RUNNING, PENDING, ...) are skipped and counted;
- any other state is an error: the file is not the trace the header says it is;
- CPU-only jobs (`gpu_num` 0) are skipped and counted: this is a GPU scheduler;
- an empty `duration` with an empty `start_time` (never started) is skipped and counted; with
  both start and end times present it is computed from them.
"""

from __future__ import annotations

from typing import Any

from ..job import FinalStatus
from .csvtable import Table, nonempty, nonneg_float, nonneg_int, timestamp
from .errors import TraceFormatError
from .trace import Record, SkipLog

_FINAL = {
    "COMPLETED": FinalStatus.COMPLETED,
    "CANCELLED": FinalStatus.CANCELLED,
    "CANCELED": FinalStatus.CANCELLED,
    "FAILED": FinalStatus.FAILED,
    "TIMEOUT": FinalStatus.FAILED,
    "NODE_FAIL": FinalStatus.FAILED,
    "OUT_OF_MEMORY": FinalStatus.FAILED,
    "BOOT_FAIL": FinalStatus.FAILED,
    "DEADLINE": FinalStatus.FAILED,
}
_UNFINISHED = frozenset(
    {"PENDING", "RUNNING", "SUSPENDED", "REQUEUED", "CONFIGURING", "COMPLETING", "RESIZING",
     "PREEMPTED"}
)
_STATES = "a Slurm job state (" + ", ".join(list(_FINAL)[:6]) + ", ...)"


def parse_jobs(
    table: Table,
    skips: SkipLog,
    *,
    fmt: str,
    required: tuple[str, ...],
    vc_column: str | None,
    name_column: str | None,
    int_attributes: tuple[str, ...] = (),
    text_attributes: tuple[str, ...] = (),
) -> list[Record]:
    """Records of a Slurm-style job table; see the module docstring for the policy."""
    col = table.columns(required, fmt)
    i_id, i_gpus, i_state, i_submit, i_dur = (
        col[c] for c in ("job_id", "gpu_num", "state", "submit_time", "duration")
    )
    i_user = col.get("user")
    i_vc = col.get(vc_column) if vc_column else None
    i_name = col.get(name_column) if name_column else None
    i_start, i_end = col.get("start_time"), col.get("end_time")
    ints = [(c, col[c]) for c in int_attributes if c in col]
    texts = [(c, col[c]) for c in text_attributes if c in col]
    out: list[Record] = []
    for line, row in table.records(skips):
        job_id = nonempty(table, line, "job_id", row[i_id])
        gpus = nonneg_int(table, line, "gpu_num", row[i_gpus])
        raw_state = row[i_state].strip()
        key = raw_state.split(" ", 1)[0].upper()
        status = _FINAL.get(key)
        if status is None:
            if key in _UNFINISHED:
                skips.add(line, f"state {raw_state}: the job had not ended")
                continue
            raise TraceFormatError(table.path, line, "state", _STATES, row[i_state])
        if gpus == 0:
            skips.add(line, "CPU-only job (gpu_num 0)")
            continue
        submit = timestamp(table, line, "submit_time", row[i_submit])
        duration = _duration(table, line, row, i_dur, i_start, i_end)
        if duration is None:
            skips.add(line, "empty duration and start_time: the job never started")
            continue
        attributes: dict[str, Any] = {}
        if key != status.name:
            attributes["state"] = raw_state
        for name, i in ints:
            if row[i].strip():
                attributes[name] = nonneg_int(table, line, name, row[i])
        for name, i in texts:
            if row[i].strip():
                attributes[name] = row[i].strip()
        fields: dict[str, Any] = {"status": status}
        _set_text(fields, "user", row, i_user)
        _set_text(fields, "vc", row, i_vc)
        _set_text(fields, "name", row, i_name)
        if attributes:
            fields["attributes"] = attributes
        out.append((submit, job_id, line, gpus, duration, fields))
    return out


def _duration(
    table: Table, line: int, row: list[str], i_dur: int, i_start: int | None, i_end: int | None
) -> float | None:
    text = row[i_dur]
    if text.strip():
        return nonneg_float(table, line, "duration", text)
    start = row[i_start].strip() if i_start is not None else ""
    end = row[i_end].strip() if i_end is not None else ""
    if i_start is not None and not start:
        return None
    if start and end:
        seconds = timestamp(table, line, "end_time", end)
        seconds -= timestamp(table, line, "start_time", start)
        if seconds >= 0:
            return seconds
        raise TraceFormatError(table.path, line, "end_time", "an end_time after start_time", end)
    return nonneg_float(table, line, "duration", text)  # raises with the usual message


def _set_text(fields: dict[str, Any], key: str, row: list[str], i: int | None) -> None:
    if i is not None and row[i].strip():
        fields[key] = row[i].strip()


def required_columns(extra: tuple[str, ...]) -> tuple[str, ...]:
    """The columns every Slurm-style table needs, plus the format's own."""
    return ("job_id", "gpu_num", "state", "submit_time", "duration", *extra)
