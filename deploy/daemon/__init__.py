"""The log-following daemon (issue 14, item 1): follows a directory of job logs, feeds the Metric
Tracker incrementally and, when a job ends badly, the Failure Handler; offsets and results live
in Redis so a restart neither loses nor re-reads a line.

    state = DaemonState.connect("redis://127.0.0.1:6379/0")
    LogDaemon("/shared/jobs/logs", state).run(stop_event)      # or .run_once()
    state.job("job-42")  # -> JobStatus(step_time_s=..., slowdown=..., diagnosis=...)

Modules: `identity` (which file is this: inode + content anchors), `follower` (polling,
rotation/copy/truncation/deletion, bounded reads; lines cut by the tracker's line reader
`schedmate.agents.tracker.lines`, logs decoded as they come), `jobs`
(tracker feeding, end detection, diagnosis), `state` (Redis layout and read API), `daemon`
(threads, bounded queue, Redis outages).
"""

from schedmate.deploy.daemon.daemon import DaemonConfig, LazyClassifier, LogDaemon
from schedmate.deploy.daemon.follower import FollowConfig, Follower
from schedmate.deploy.daemon.identity import job_id_from_name
from schedmate.deploy.daemon.jobs import FAILED_STATUSES, JobBook, JobConfig
from schedmate.deploy.daemon.model import Batch, Diagnosed, FileState, JobStatus
from schedmate.deploy.daemon.state import DaemonState

__all__ = [
    "FAILED_STATUSES",
    "Batch",
    "DaemonConfig",
    "DaemonState",
    "Diagnosed",
    "FileState",
    "FollowConfig",
    "Follower",
    "JobBook",
    "JobConfig",
    "JobStatus",
    "LazyClassifier",
    "LogDaemon",
    "job_id_from_name",
]
