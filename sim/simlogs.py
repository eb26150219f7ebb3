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
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from schedmate.logspec import Framework, LogSpec, LogStatus
from schedmate.schedulers.job import JobState
from schedmate.sim.artefacts import Artefact, content_hash, failure_log_key, failure_log_spec, unit_hash

__all__ = [
    "FAILED_LOGS_KEY",
    "HOSTED_LOGS_KEY",
    "HOST_FORMAT",
    "RunningLog",
    "failed_log_text",
    "host_nodes",
    "node_hostname",
    "running_log",
    "split_lines",
    "write_failed_log",
]

FAILED_LOGS_KEY = "failed_logs"  # JobState.info[...]: {attempt: path of the log the attempt wrote}
HOSTED_LOGS_KEY = "failed_logs_hosts"  # {attempt: the same log with the job's own host names} (see CauseDiagnosis)
HOST_FORMAT = "gpu-node-{:03d}"  # the simulated cluster's host names: node n is gpu-node-00n


def node_hostname(node: int) -> str:
    """The host name of simulated node `node` (what its processes print: NCCL, torchrun, Slurm)."""
    return HOST_FORMAT.format(int(node))


def host_nodes(placement: Sequence[tuple[int, int]]) -> dict[str, int]:
    """{host name: node} of a placement: what a scheduler knows of the hosts its job ran on."""
    return {node_hostname(n): int(n) for n, _ in placement}

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
                    n_lines: int = 500, hosts: Sequence[str] | None = None, culprit_host: str | None = None) -> str:
    """The log a failed attempt wrote: the job's log style and world size with `reason` as its
    root cause (one of `variants` logs per style, world size and cause, so identical failures
    share a log and its cached diagnosis).

    With `hosts` (the job's host names, placement order) the generator's host names are
    replaced by the job's own, line for line: the generator's culprit host (the host of the
    rank that printed the root cause, or the node Slurm names) becomes `culprit_host` (the
    world's culprit node), its other hosts the job's other hosts in order (cycled when the log's
    world is larger than the placement; a placement split over more nodes than the log's world
    shows leaves the extra hosts unnamed). The text keeps every line, so its line numbers are
    those of the shared log."""
    text, ctx_hosts, culprit = _failed_log(art, reason, seed=seed, job_id=job_id, attempt=attempt,
                                           variants=variants, n_lines=n_lines)
    if not hosts:
        return text
    return _rename_hosts(text, ctx_hosts, culprit, list(hosts), culprit_host)


def _failed_log(art: Artefact, reason: str, *, seed: int, job_id: str, attempt: int, variants: int,
                n_lines: int) -> tuple[str, list[str], str | None]:
    """(text, the generator's host names in node order, the culprit's host name) of a shared failed log."""
    import numpy as np

    from schedmate.synthetic.logs.context import JobContext
    from schedmate.synthetic.logs.generator import _seed_sequence, generate_log

    variant = int(unit_hash("failure-log", seed, job_id, attempt) * max(1, variants))
    spec, gen_seed = failure_log_spec(failure_log_key(art, reason, variant), n_lines=n_lines)
    text, labels = generate_log(spec, gen_seed)
    # the generator's own context (same seed stream as generate_log): its host names, node by node
    ctx = JobContext.build(labels.spec, np.random.default_rng(_seed_sequence(gen_seed).spawn(8)[1]))
    culprit = labels.failure.host if labels.failure is not None else None
    return str(text), list(ctx.hosts), culprit


def _rename_hosts(text: str, ctx_hosts: list[str], culprit: str | None, hosts: list[str],
                  culprit_host: str | None) -> str:
    if culprit_host is None or culprit_host not in hosts:
        culprit_host = hosts[0]
    gen = list(dict.fromkeys(ctx_hosts))
    if culprit is not None and culprit not in gen:
        gen.append(culprit)
    others = [h for h in hosts if h != culprit_host] or [culprit_host]
    mapping: dict[str, str] = {}
    k = 0
    for h in gen:
        if h == culprit or (culprit is None and not mapping):
            mapping[h] = culprit_host
        else:
            mapping[h] = others[k % len(others)]
            k += 1
    if not mapping:
        return text
    # longest first, whole names only (node-3 is not the start of node-33)
    names = sorted(mapping, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w.-])(" + "|".join(re.escape(n) for n in names) + r")(?![\w])")
    return pattern.sub(lambda m: mapping[m.group(1)], text)


def write_failed_log(job: JobState, attempt: int, art: Artefact, reason: str, folder: Path, *, seed: int,
                     variants: int = 2, n_lines: int = 500, culprit_node: int | None = None,
                     hosts_for_source: bool = False) -> Path:
    """World side of a failure: write the attempt's log under `folder` and note its path in
    `job.info[FAILED_LOGS_KEY]`, where a source finds it as a live one finds a job's log file.

    The log carries the job's host names (`node_hostname` of its placement; the root cause on
    `culprit_node`'s host) and is noted under `HOSTED_LOGS_KEY`. The source reads that same log
    when `hosts_for_source`; otherwise it reads the shared log of the same failure with the
    generator's host names, which differs from the hosted one in host names only, line for line
    (so identical failures share a log and its cached diagnosis: one handler run per shared log
    instead of one per failure). The path returned is the one the source reads."""
    text, ctx_hosts, culprit = _failed_log(art, reason, seed=seed, job_id=job.job_id, attempt=attempt,
                                           variants=variants, n_lines=n_lines)
    hosts = list(host_nodes(job.placement))
    hosted = _rename_hosts(text, ctx_hosts, culprit, hosts,
                           None if culprit_node is None else node_hostname(culprit_node)) if hosts else text
    hosted_path = _write(Path(folder), hosted)
    job.info.setdefault(HOSTED_LOGS_KEY, {})[attempt] = str(hosted_path)
    path = hosted_path if hosts_for_source else _write(Path(folder), text)
    job.info.setdefault(FAILED_LOGS_KEY, {})[attempt] = str(path)
    return path


def _write(folder: Path, text: str) -> Path:
    path = folder / f"failed-{content_hash(text.encode('utf-8'))[:20]}.log"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return path


# ----------------------------------------------------------------------------------- which node a log names

_RANK_PREFIX = re.compile(r"^\s*(?:\[rank(\d+)\]:|\[1,(\d+)\]<std(?:out|err)>:|(\d+): )")
_NCCL_RANK = re.compile(r"\[(?:PG \d+ )?Rank (\d+)\]")
_TASK = re.compile(r"task (\d+)\b")
_RANK_FIELD = re.compile(r"^\s*rank\s*:\s*(\d+)")
CONTEXT_LINES = 20  # lines either side of the root line searched for a host name


def node_named(lines: Sequence[str], line_no: int | None, block_line: int | None,
               hosts: Mapping[str, int]) -> tuple[int | None, str]:
    """The node a failed log points to, read from the lines a diagnosis located, and how it was
    found. Scheduler side: only the text and the job's own host names (`hosts`, name -> node)
    are used, never the world's cause.

    In order: a host named on the root line (`line_no`: NCCL's `host:pid:tid`, Slurm's `Node
    failure on host`, pdsh's `host: ` prefix); the rank that printed the root line (`[rankN]:`,
    `[1,N]<stderr>:`, `N: `) and a line of the log that puts that rank on a host (torchrun's
    failure summary `host : ... rank : N`, `srun: error: host: task N`, a line of that rank
    naming a host); the host named nearest the root line within `CONTEXT_LINES` (block first);
    the one host of the job the log names at all; the job's only node. (None, "none") when the
    log does not say."""
    if not hosts:
        return None, "none"
    names = sorted(hosts, key=len, reverse=True)
    pat = re.compile(r"(?<![\w.-])(" + "|".join(re.escape(n) for n in names) + r")(?![\w])")

    def named(text: str) -> str | None:
        m = pat.search(text)
        return m.group(1) if m else None

    if line_no is not None and 0 <= line_no < len(lines):
        root = lines[line_no]
        h = named(root)
        if h is not None:
            return hosts[h], "root_line"
        m = _RANK_PREFIX.match(root)
        rank = next((int(g) for g in m.groups() if g is not None), None) if m else None
        if rank is None:  # NCCL's and c10d's own `[Rank N]` / `[PG 0 Rank N]`
            r = _NCCL_RANK.search(root)
            rank = int(r.group(1)) if r else None
        if rank is not None:
            h = _host_of_rank(lines, rank, pat)
            if h is not None:
                return hosts[h], "rank_map"
        start = block_line if block_line is not None and block_line <= line_no else line_no
        for d in range(CONTEXT_LINES + 1):  # nearest first; the block and the lines after it before the ones before
            for i in (line_no + d, start - d):
                if 0 <= i < len(lines):
                    h = named(lines[i])
                    if h is not None:
                        return hosts[h], "context"
    seen = {m.group(1) for x in lines if (m := pat.search(x)) is not None}
    if len(seen) == 1:
        return hosts[seen.pop()], "only_host"
    if len(set(hosts.values())) == 1:
        return next(iter(hosts.values())), "placement"
    return None, "none"


def _host_of_rank(lines: Sequence[str], rank: int, pat: re.Pattern[str]) -> str | None:
    for i, line in enumerate(lines):
        m = _RANK_FIELD.match(line)  # torchrun's failure summary: host : X / rank : N
        if m and int(m.group(1)) == rank:
            for j in range(max(0, i - 3), i):
                h = pat.search(lines[j])
                if h:
                    return h.group(1)
        if line.startswith("srun: error:"):
            t = _TASK.search(line)
            h = pat.search(line)
            if t and h and int(t.group(1)) == rank:
                return h.group(1)
        p = _RANK_PREFIX.match(line)
        if p and next((int(g) for g in p.groups() if g is not None), None) == rank:
            h = pat.search(line)
            if h:
                return h.group(1)
    return None
