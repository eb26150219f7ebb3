"""Progress-aware extension of SchedMate-set time limits: a job still making progress is not killed.

A SchedMate limit (ceil(1.2 x p90) of similar past jobs) is too short for some jobs, and Slurm
kills a job at its limit with TIMEOUT. Before such a limit expires, the extender reads the job's
log with the Metric Tracker (its step, its planned steps and its step time) and, if the remaining
work will not fit and the job is still progressing, raises the limit with
`scontrol update JobId=ID TimeLimit=MIN` (run as SlurmUser or root: users may only lower limits).

The rules, all in `decide` (pure; the simulator's extension arm calls it too):

- **Only SchedMate's limits.** A job is a candidate only if its AdminComment carries the note
  job_submit.lua wrote (`... time limit N min from SchedMate ...`). A job whose user gave
  `--time` never has it, so it is never touched.
- **Only progressing jobs.** At least `min_lines` progress lines, and the newest no older than
  `stale_after_s`; a hung job (no progress lines, or none lately) keeps its limit and ends TIMEOUT.
- **Only what the log shows.** Remaining = (planned steps - step) x step time. Planned steps come
  from the progress line (`N/T`, a progress bar's total); without them the job is left alone.
  Log text is untrusted: it can only make the extender *ask for more time within the caps*, never
  run anything, and a made-up line cannot lift a limit past the caps.
- **Bounded.** New limit = ceil((elapsed + `margin` x remaining + `slack_s`) / 60) minutes, at
  most SchedMate's original limit + `max_extension_s` (the operator's cap) and the partition's
  MaxTime. Asked `check_before_s` before the limit expires, again after each extension.
- **Recorded.** The job's AdminComment gains `schedmate: extended to M min (step s/T, x s/step,
  ~R s left)`; every decision is one JSON line in the extender's log and counted in `counts`.
- **Dry-run unless enabled.** Without `enabled`, decisions are logged and counted, nothing changes.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from schedmate.deploy.slurm.slurmjob import ScontrolError, SlurmJob, parse_duration, parse_show_job

__all__ = ["ExtendConfig", "Extender", "Extension", "Progress", "decide", "original_minutes", "read_progress",
           "schedmate_limit"]

_SET_BY = re.compile(r"time limit (\d+) min from SchedMate")
_N_OF_T = re.compile(r"(?<![\d.])(\d+)\s*/\s*(\d+)(?![\d.])")
Action = Literal["extend", "keep"]


@dataclass(frozen=True)
class ExtendConfig:
    """The operator's settings (`schedmate slurm extend`)."""

    enabled: bool = False  # dry-run unless set
    check_before_s: float = 900.0  # look at a job when its limit is this close
    margin: float = 1.2  # on the remaining time the log implies (as the submit-time rule's margin)
    slack_s: float = 300.0  # added once: start-up of evaluation, checkpoint writing
    max_extension_s: float = 24 * 3600.0  # the operator's cap on time added to SchedMate's limit
    stale_after_s: float = 600.0  # newest progress line older than this: not progressing
    min_lines: int = 3  # progress lines needed to call a job progressing

    def __post_init__(self) -> None:
        if self.margin < 1.0 or self.check_before_s < 0 or self.slack_s < 0 or self.max_extension_s < 0:
            raise ValueError("margin must be >= 1 and the times non-negative")


@dataclass(frozen=True)
class Progress:
    """What a running job's log says: its newest step, planned steps and step time."""

    step: int
    planned: int | None
    step_time_s: float | None
    lines: int  # progress lines read
    last_line_age_s: float | None = None  # seconds since the log last grew (None: unknown)

    @property
    def remaining_s(self) -> float | None:
        if self.planned is None or self.step_time_s is None:
            return None
        return max(0, self.planned - self.step) * self.step_time_s


@dataclass(frozen=True)
class Extension:
    """One decision about one job (a JSON line in the extender's log)."""

    job_id: str
    action: Action
    reason: str
    limit_s: float | None = None
    new_limit_s: float | None = None
    remaining_s: float | None = None
    applied: bool = False


def schedmate_limit(admin_comment: str | None) -> bool:
    """Whether job_submit.lua set this job's limit (its note is in the AdminComment)."""
    return bool(admin_comment) and _SET_BY.search(admin_comment or "") is not None


def original_minutes(admin_comment: str | None) -> int | None:
    """The limit SchedMate set at submission, from its note."""
    m = _SET_BY.search(admin_comment or "")
    return int(m.group(1)) if m else None


def decide(progress: Progress | None, *, elapsed_s: float, limit_s: float, original_s: float,
           max_time_s: float | None, config: ExtendConfig) -> tuple[Action, float | None, str]:
    """(action, new limit in seconds, why) for a job with a SchedMate-set limit (module docstring)."""
    left = limit_s - elapsed_s
    if left > config.check_before_s:
        return "keep", None, f"{left:.0f} s left: not due"
    if progress is None or progress.lines < config.min_lines:
        return "keep", None, "no progress lines in the log: a job that does not progress keeps its limit"
    if progress.last_line_age_s is not None and progress.last_line_age_s > config.stale_after_s:
        return "keep", None, f"no new progress line for {progress.last_line_age_s:.0f} s: not progressing"
    remaining = progress.remaining_s
    if remaining is None:
        return "keep", None, "the log states no planned steps or no step time: remaining work unknown"
    need = elapsed_s + config.margin * remaining + config.slack_s
    if need <= limit_s:
        return "keep", None, f"step {progress.step}/{progress.planned}: the remaining ~{remaining:.0f} s fit"
    cap = original_s + config.max_extension_s
    if max_time_s is not None:
        cap = min(cap, max_time_s)
    new = min(math.ceil(need / 60.0), math.floor(cap / 60.0)) * 60.0
    if new <= limit_s:
        return "keep", None, (f"step {progress.step}/{progress.planned} needs ~{need:.0f} s but the cap is "
                              f"{cap:.0f} s (operator cap or partition MaxTime)")
    return "extend", new, (f"step {progress.step}/{progress.planned}, {progress.step_time_s:.3g} s/step, "
                           f"~{remaining:.0f} s left")


def _planned(text: str, step: int, total: int | None) -> int | None:
    if total is not None and total >= step:
        return total
    for m in _N_OF_T.finditer(text):
        n, t = int(m.group(1)), int(m.group(2))
        if n == step and t >= n:
            return t
    return None


def default_tracker() -> Any:
    """The agent stack's Metric Tracker (deployed defaults) with the daemon's lazy classifier:
    MiniLM loads only if a line needs it, so a pass over well-formed progress logs stays cheap."""
    from schedmate.agents.stack import AgentStack
    from schedmate.deploy.daemon.daemon import LazyClassifier

    return AgentStack(classifier=LazyClassifier()).tracker()


def read_progress(path: Path, *, tracker: Any = None, now: float | None = None) -> Progress | None:
    """The Metric Tracker's reading of a log (`default_tracker` unless `tracker` is given): the
    newest step, planned steps (a progress bar's total or `step N/T`), the steady step time."""
    from schedmate.agents.tracker.tracker import NoSignal

    try:
        age = (time.time() if now is None else now) - path.stat().st_mtime
    except OSError:
        return None
    result = (tracker or default_tracker()).observe(path)
    if isinstance(result, NoSignal) or not getattr(result, "lines", None):
        return None
    stepped = [lm for lm in result.lines if lm.extraction.step is not None]
    if not stepped:
        return None
    newest = max(stepped, key=lambda lm: (lm.extraction.step, lm.line.lineno or 0))
    step = int(newest.extraction.step)
    return Progress(step=step, planned=_planned(newest.line.text, step, newest.extraction.total),
                    step_time_s=result.step_time_s, lines=len(result.lines), last_line_age_s=max(0.0, age))


# ----------------------------------------------------------------------------------------- live


Run = Callable[[Sequence[str]], str]


def _run_scontrol(args: Sequence[str], timeout_s: float = 10.0) -> str:
    try:
        done = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout_s)
    except FileNotFoundError:
        raise ScontrolError(f"{args[0]} is not on PATH") from None
    except subprocess.TimeoutExpired:
        raise ScontrolError(f"{' '.join(args[:3])} did not answer in {timeout_s:g} s") from None
    if done.returncode != 0:  # its last line says why
        lines = [ln.strip() for ln in (done.stderr or done.stdout).splitlines() if ln.strip()]
        raise ScontrolError(f"{' '.join(args[:3])}: {(lines[-1] if lines else 'failed')[:300]}")
    return done.stdout


@dataclass
class Extender:
    """One pass over the running jobs (`run_pass`), as `schedmate slurm extend` runs it every minute."""

    config: ExtendConfig = field(default_factory=ExtendConfig)
    run: Run = _run_scontrol
    tracker: Any = None
    log_file: Path | None = None
    clock: Callable[[], float] = time.time
    counts: Counter[str] = field(default_factory=Counter)

    def running_jobs(self) -> list[SlurmJob]:
        ids = [x.strip() for x in self.run(["squeue", "-h", "-t", "RUNNING", "-o", "%i"]).split() if x.strip()]
        jobs = []
        for jid in ids:
            try:
                job = parse_show_job(self.run(["scontrol", "show", "job", jid]))
            except ScontrolError:
                continue  # ended between the two calls
            if job is not None:
                jobs.append(job)
        return jobs

    def max_time_s(self, partition: str | None) -> float | None:
        """The partition's MaxTime (None: UNLIMITED or unknown)."""
        if not partition:
            return None
        try:
            text = self.run(["scontrol", "show", "partition", partition.split(",")[0]])
        except ScontrolError:
            return None
        m = re.search(r"\bMaxTime=(\S+)", text)
        return parse_duration(m.group(1)) if m else None

    def __post_init__(self) -> None:
        if self.tracker is None:
            self.tracker = default_tracker()  # one tracker for every pass (its line-shape cache persists)

    def check(self, job: SlurmJob) -> Extension:
        """The decision for one running job (nothing changed yet)."""
        if not schedmate_limit(job.admin_comment):
            return Extension(job.job_id, "keep", "limit not set by SchedMate (the user gave --time): never touched")
        limit = parse_duration(job.time_limit)
        elapsed = job.run_time_s
        if limit is None or elapsed is None:
            return Extension(job.job_id, "keep", f"unreadable TimeLimit {job.time_limit!r} or RunTime")
        if limit - elapsed > self.config.check_before_s:
            return Extension(job.job_id, "keep", f"{limit - elapsed:.0f} s left: not due", limit)
        original = float(original_minutes(job.admin_comment) or 0) * 60.0 or limit
        log = Path(job.std_out) if job.std_out else None
        progress = read_progress(log, tracker=self.tracker, now=self.clock()) if log is not None and log.is_file() else None
        action, new, why = decide(progress, elapsed_s=elapsed, limit_s=limit, original_s=original,
                                  max_time_s=self.max_time_s(job.partition), config=self.config)
        return Extension(job.job_id, action, why, limit, new, progress.remaining_s if progress else None)

    def apply(self, job: SlurmJob, ext: Extension) -> Extension:
        """`scontrol update` the limit and note it in the AdminComment (when enabled)."""
        if ext.action != "extend" or ext.new_limit_s is None or not self.config.enabled:
            return ext
        minutes = int(ext.new_limit_s // 60)
        note = f"schedmate: extended to {minutes} min ({ext.reason})"
        comment = f"{job.admin_comment}; {note}" if job.admin_comment else note
        try:
            self.run(["scontrol", "update", f"JobId={job.job_id}", f"TimeLimit={minutes}",
                      f"AdminComment={comment[:1000]}"])
        except ScontrolError as exc:
            self.counts["update_errors"] += 1
            return Extension(ext.job_id, "keep", f"scontrol update failed: {exc}", ext.limit_s, None, ext.remaining_s)
        return Extension(ext.job_id, ext.action, ext.reason, ext.limit_s, ext.new_limit_s, ext.remaining_s, applied=True)

    def run_pass(self) -> list[Extension]:
        out = []
        for job in self.running_jobs():
            ext = self.apply(job, self.check(job))
            self.counts["checked"] += 1
            if ext.action == "extend":
                self.counts["extended" if ext.applied else "would_extend"] += 1
            out.append(ext)
            self._log(ext)
        return out

    def _log(self, ext: Extension) -> None:
        if self.log_file is None:
            return
        rec: dict[str, Any] = {"event": "extend", "at": round(self.clock(), 3), "dry_run": not self.config.enabled,
                               **asdict(ext)}
        with open(self.log_file, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec) + "\n")
