"""Where a Slurm job's log is, for `schedmate diagnose --job ID`.

First what the epilog recorded in SchedMate's history (the failure history, then the job history:
both keep the log path under `submitted.log`), then Slurm itself (`scontrol show job ID`: StdErr
of a failed job when separate, else StdOut), which works only while slurmctld still remembers the
job (MinJobAge, 300 s by default).
"""

from __future__ import annotations

from dataclasses import dataclass

from schedmate.deploy.slurm.hook import job_key
from schedmate.deploy.slurm.slurmjob import ScontrolError, final_status, show_job
from schedmate.errors import NotFound

__all__ = ["JobLog", "JobLogNotFound", "find_job_log"]


class JobLogNotFound(NotFound):
    """Neither the history nor Slurm knows where the job's log is (the message says what was tried)."""


@dataclass(frozen=True)
class JobLog:
    job_id: str  # SchedMate's id (slurm-N)
    log: str
    source: str  # "failure history", "job history" or "scontrol"


def _recorded(url: str, key: str) -> JobLog | None:
    import redis

    from schedmate.agents.failure.similar import FAILURE_PREFIX
    from schedmate.embeddings.store import DEFAULT_PREFIX, JobStore
    from schedmate.embeddings.store_search import StoreKeys

    client = redis.Redis.from_url(url, protocol=2, socket_timeout=5.0, socket_connect_timeout=5.0)
    try:
        dims = {prefix: client.hget(StoreKeys(prefix).meta, "dim") for prefix in (FAILURE_PREFIX, DEFAULT_PREFIX)}
    finally:
        client.close()
    for prefix, source in ((FAILURE_PREFIX, "failure history"), (DEFAULT_PREFIX, "job history")):
        dim = dims[prefix]
        if not dim:
            continue
        with JobStore.connect(url, int(dim), prefix=prefix) as store:
            record = store.get(key)
        log = record.submitted.get("log") if record is not None else None
        if log:
            return JobLog(key, str(log), source)
    return None


def find_job_log(job_id: str, history_url: str | None) -> JobLog:
    """The log of Slurm job `job_id` (`123` or `slurm-123`); `JobLogNotFound` says what was tried."""
    key = job_key(job_id)
    tried = []
    if history_url is not None:
        found = _recorded(history_url, key)
        if found is not None:
            return found
        tried.append(f"no log recorded for {key} in the history at {history_url}")
    else:
        tried.append("no job history here")
    try:
        job = show_job(key.removeprefix("slurm-"))
    except ScontrolError as exc:
        tried.append(str(exc))
    else:
        log = job.log_for(final_status(job))
        if log:
            return JobLog(key, log, "scontrol")
        tried.append(f"scontrol shows no StdOut for job {job.job_id}")
    raise JobLogNotFound(f"cannot find the log of Slurm job {job_id}: " + "; ".join(tried))
