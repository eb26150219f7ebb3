"""What a running simulated job's log says, written from its simulated history.

This is the simulated *world's* side: the job's process writes its log as it runs, at whatever
speed the simulator gave it (`JobState.speed_log`: co-location, restarts, GPU type). An
`InsightSource` never receives a speed, a slowdown or a duration; it asks for the log as written
by a given time and hands that text to the Metric Tracker, as a live deployment reads a file.

The text is rendered by the one training-log generator (`synthetic.logs.generate_log`): real
framework formats, per-step jitter, warm-up after a (re)start, rank prefixes, warnings and other
noise. Step time on the log = the workload's solo step time / the job's simulated speed; the
number of progress lines after an event is what the elapsed simulated time allows, so how long it
takes until a slowdown is visible (detection lag) is real, not a constant.

Two simplifications, stated: the log shows the current attempt only (a restart starts a new log
window), and speed changes before the asked-about event are folded into one pre-event speed (the
time-weighted mean over the window shown), since the generator renders one change point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pathlib import Path

from schedmate.integrations.artefacts import Artefact, content_hash, failure_log_key, failure_log_spec, unit_hash
from schedmate.logspec import Framework, LogSpec, LogStatus
from schedmate.schedulers.job import JobState

__all__ = ["FAILED_LOGS_KEY", "RunningLog", "failed_log_text", "running_log", "split_lines", "write_failed_log"]

FAILED_LOGS_KEY = "failed_logs"  # JobState.info[...]: {attempt: path of the log the attempt wrote}

WINDOW_EVENTS = 40  # progress events shown before the event (a tailing tracker keeps recent ones)
MAX_AFTER_EVENTS = 400  # and at most this many after it


@dataclass(frozen=True)
class RunningLog:
    """The log text as written by `now`; `event_line` = first line written after `event_at`."""

    text: str
    event_line: int
    lines_before: int
    progress_after: int  # progress lines written after the event (the tracker must find them)


def _attempt_start(job: JobState, t: float) -> int:
    """Index in `speed_log` where the attempt running at time t began (after its last stop)."""
    start = 0
    for i, (t0, speed, _) in enumerate(job.speed_log):
        if t0 > t:
            break
        if speed <= 0.0:
            start = i + 1
    return start


def _mean_speed(job: JobState, t0: float, t1: float) -> float:
    if t1 <= t0:
        return 0.0
    return (job.progress_at(t1) - job.progress_at(t0)) / (t1 - t0)


def split_lines(text: str) -> list[str]:
    """Lines as the generator numbers them: split on "\\n" only (a tqdm redraw's "\\r" is not a line end)."""
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    return out + [parts[-1]] if parts[-1] else out


def running_log(art: Artefact, job: JobState, *, event_at: float, now: float, seed: int) -> RunningLog | None:
    """The job's log around `event_at` as written by `now`; None when the current attempt had
    not written a progress line before the event (nothing to compare against)."""
    from schedmate.synthetic.logs.generator import generate_log

    log = job.speed_log
    if not log or now <= event_at:
        return None
    first = _attempt_start(job, event_at)
    if first >= len(log) or log[first][0] > event_at:
        return None
    t_start = log[first][0]
    step = max(art.step_time_s, 1e-3)
    interval = max(1, art.log_interval)
    steps_before = (job.progress_at(event_at) - job.progress_at(t_start)) / step
    steps_after = (job.progress_at(now) - job.progress_at(event_at)) / step
    if steps_before < interval:
        return None
    from_start = steps_before <= WINDOW_EVENTS * interval
    nb = int(steps_before) if from_start else WINDOW_EVENTS * interval
    na = min(int(steps_after), MAX_AFTER_EVENTS * interval)
    window_t0 = t_start if from_start else max(t_start, event_at - nb * step / max(_mean_speed(job, t_start, event_at), 1e-9))
    v_before = _mean_speed(job, window_t0, event_at)
    v_after = _mean_speed(job, event_at, now)
    if v_before <= 0.0:
        return None
    factor = v_before / v_after if v_after > 0 else 1.0
    attempt = len([1 for _, s, _ in log[:first] if s <= 0.0])
    noise = 0.1 + 0.5 * unit_hash("log-noise", seed, job.job_id)
    base = LogSpec(
        framework=Framework(art.log_framework), status=LogStatus.RUNNING, world_size=art.gpus, log_interval=interval,
        base_step_time=step / v_before, warmup_steps=None if from_start else 0, noise_level=round(noise, 3),
        global_batch_size=max(1, art.config.global_batch), seq_length=art.config.seq_len or None,
    )
    gen_seed = int(unit_hash("running-log", seed, job.job_id, attempt) * 2**62)
    events = math.ceil((nb + na) / interval) + 1
    n_lines = int(events / (1.0 - noise) * 1.3) + 60
    labels = None
    for _ in range(4):  # size the file so it holds the window (line planning ignores the slowdown)
        _, labels = generate_log(base.model_copy(update={"n_lines": n_lines, "slowdown_factor": 1.0}), gen_seed)
        if labels.truth.steps_in_log >= nb + na + interval:
            break
        n_lines = int(n_lines * 1.6 * (nb + na + interval) / max(labels.truth.steps_in_log, 1))
    assert labels is not None
    total = labels.truth.steps_in_log
    if total <= nb or factor <= 1.0 + 1e-9:
        # 1.0, not None: None lets LogSpec draw a random slowdown the simulation never had
        spec = base.model_copy(update={"n_lines": n_lines, "slowdown_factor": 1.0})
    else:
        spec = base.model_copy(update={"n_lines": n_lines, "slowdown_factor": round(factor, 6),
                                       "slowdown_at": min(max(nb / total, 1e-6), 1 - 1e-6)})
    text, labels = generate_log(spec, gen_seed)
    assert isinstance(text, str)
    lines = split_lines(text)
    steps = labels.truth.steps
    plines = labels.truth.progress_lines
    # the event: the first progress line reporting a step after the first nb steps
    after_idx = [i for i, s in enumerate(steps.tolist()) if s > nb]
    event_line = int(plines[after_idx[0]]) if after_idx else len(lines)
    if labels.truth.slowdown is not None:
        event_line = int(labels.truth.slowdown.at_line)
    # cut where the process is now: just before the first progress line beyond nb + na steps
    beyond = [i for i, s in enumerate(steps.tolist()) if s > nb + na]
    cut = int(plines[beyond[0]]) if beyond else len(lines)
    cut = max(cut, event_line)
    written_after = sum(1 for i in after_idx if int(plines[i]) < cut)
    return RunningLog(text="".join(lines[:cut]), event_line=event_line, lines_before=event_line,
                      progress_after=written_after)


# ----------------------------------------------------------------------------------- failed attempts


def failed_log_text(art: Artefact, reason: str, *, seed: int, job_id: str, attempt: int, variants: int = 2,
                    n_lines: int = 500) -> str:
    """The log a failed attempt wrote: the job's log style and world size with `reason` as its
    root cause (one of `variants` logs per style, world size and cause, so identical failures
    share a log and its cached diagnosis)."""
    from schedmate.synthetic.logs.generator import generate_log

    variant = int(unit_hash("failure-log", seed, job_id, attempt) * max(1, variants))
    spec, gen_seed = failure_log_spec(failure_log_key(art, reason, variant), n_lines=n_lines)
    return str(generate_log(spec, gen_seed)[0])


def write_failed_log(job: JobState, attempt: int, art: Artefact, reason: str, folder: Path, *, seed: int,
                     variants: int = 2, n_lines: int = 500) -> Path:
    """World side of a failure: write the attempt's log under `folder` and note its path in
    `job.info[FAILED_LOGS_KEY]`, where a source finds it as a live one finds a job's log file."""
    text = failed_log_text(art, reason, seed=seed, job_id=job.job_id, attempt=attempt, variants=variants,
                           n_lines=n_lines)
    path = Path(folder) / f"failed-{content_hash(text.encode('utf-8'))[:20]}.log"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    job.info.setdefault(FAILED_LOGS_KEY, {})[attempt] = str(path)
    return path
