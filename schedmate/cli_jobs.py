"""Job-level commands: `schedmate advise | track | diagnose | history`.

What a user asks about ONE job on a live cluster (issue 13, item 1), as opposed to the simulator
commands in `cli.py`. Rich output by default, `--json` for scripts; bad input (missing file, a
directory given as a log, an unreadable file, a malformed history row) is one line and exit 2.

The job history is the Redis `JobStore` (`embeddings.store`): job fingerprints under the store's
default prefix, failure root-cause lines under `agents.failure.similar.FAILURE_PREFIX`. It lives
in a real `redis-server` for a data directory (`--history-dir`, default the one `schedmate redis
start` uses), started for the command when none runs there and stopped (with a save) after it;
`--redis-url` uses a server you run. Models load only when a command needs them.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from schedmate.agents.stack import DEFAULT_POOL_K, DEFAULT_THRESHOLD, DEFAULT_TOP_K, AgentStack, AgentStackConfig
from schedmate.embeddings.lazy_classifier import LazyClassifier
from schedmate.errors import BadInput, DependencyUnavailable, NotFound
from schedmate.logfile import readable_log

__all__ = ["advise_config", "agent_stack", "history_app", "register_job_commands"]

console = Console(width=None if sys.stdout.isatty() else 140)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 140)
history_app = typer.Typer(help="The job history (Redis job store) that `advise` and `diagnose` search.",
                          no_args_is_help=True)

from schedmate.history_ingest import JOB_STATES, PastJob  # noqa: E402,F401 -- moved; kept importable

HistoryDirOpt = Annotated[Path | None, typer.Option(
    "--history-dir", help="Data directory of the history's redis-server (default: `schedmate redis start`'s).")]
RedisUrlOpt = Annotated[str | None, typer.Option("--redis-url", help="Use this Redis instead (redis://host:port/db).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object (scripts).")]


UserError = BadInput
"""Bad input the user can fix (kept as a name): any `SchedMateError` is one line and exit 2 (`schedmate.cli`)."""


@contextmanager
def _user_errors() -> Iterator[None]:
    """Redis-py's own errors and the OS's refusals of a file the user named, as `SchedMateError`s (the
    CLI's one handler prints them); everything else passes through (a bug keeps its traceback)."""
    import redis

    try:
        yield
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        raise DependencyUnavailable(f"cannot reach Redis ({exc})", hint="is it running? `schedmate redis start`") from None
    except FileNotFoundError as exc:
        raise NotFound(str(exc)) from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise BadInput(str(exc)) from None


def _readable_file(path: Path, what: str) -> Path:
    if not path.exists():
        raise UserError(f"{what} not found: {path}")
    if path.is_dir():
        raise UserError(f"{what} is a directory, not a file: {path}")
    from schedmate.logfile import NotRegularFile, open_regular

    try:
        os.close(open_regular(path))  # never blocks: a FIFO or device is refused, not opened
    except NotRegularFile as exc:
        raise UserError(f"{what}: {exc}") from None
    except OSError as exc:
        raise UserError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    return path


def _cells(*values: Any) -> list[str]:
    """Table cells from user data: `[...]` in a snippet or a job id is text, not Rich markup."""
    return [escape(str(v)) for v in values]


def _print_json(data: Any) -> None:
    print(json.dumps(data, default=str, ensure_ascii=False))


def _dur(seconds: float | None) -> str:
    from schedmate.agents.advisor.estimator import format_duration

    return format_duration(seconds)


# ============================================================================== models and store


def advise_config(*, threshold: float = DEFAULT_THRESHOLD, top_k: int = DEFAULT_TOP_K) -> AgentStackConfig:
    """The agent stack's config for `advise` (its defaults; --threshold / --top-k override)."""
    return AgentStackConfig(threshold=threshold, top_k=top_k, pool_k=max(DEFAULT_POOL_K, 4 * top_k))


def agent_stack(config: AgentStackConfig | None = None, *, chat_model: Any = None, lazy: bool = False) -> AgentStack:
    """The agents of one command (`agents.stack`); with `lazy`, MiniLM loads only when a line
    classifier is first used (a log the regexes read never loads it)."""
    classifier = LazyClassifier(load_embedder) if lazy else None
    return AgentStack(config, classifier=classifier, chat_model=chat_model) if lazy else \
        AgentStack(config, embedder=load_embedder(), chat_model=chat_model)


def load_embedder() -> Any:
    """MiniLM from local weights (seconds to load; tests replace this function to share one)."""
    from schedmate.embeddings.embedder import make_embedder

    return make_embedder()


@dataclass(frozen=True)
class HistoryLocation:
    """Where the history lives: an explicit URL, or a data directory served by our redis-server."""

    redis_url: str | None = None
    data_dir: Path | None = None

    def describe(self) -> str:
        return self.redis_url or f"redis-server for {self.data_dir}"


def _location(history_dir: Path | None, redis_url: str | None, *, create: bool) -> HistoryLocation | None:
    """None when no history was ever built here (and `create` is false)."""
    from schedmate.embeddings import redis_server

    if redis_url:
        if history_dir is not None:
            raise UserError("give --history-dir or --redis-url, not both")
        if not redis_url.startswith(("redis://", "rediss://", "unix://")):
            raise UserError(f"--redis-url must be redis://host:port/db (or rediss://, unix://), not {redis_url!r}")
        return HistoryLocation(redis_url=redis_url)
    folder = history_dir or redis_server.default_data_dir()
    if folder.exists() and not folder.is_dir():
        raise UserError(f"history dir is not a directory: {folder}")
    built = folder.is_dir() and any((folder / n).exists() for n in ("appendonlydir", "dump.rdb", "server.json"))
    if not built and not create:
        return None
    return HistoryLocation(data_dir=folder)


@contextmanager
def _served(loc: HistoryLocation) -> Iterator[str]:
    """The URL of `loc`; a data directory's server is started for this command unless one runs."""
    from schedmate.embeddings import redis_server

    if loc.redis_url is not None:
        yield loc.redis_url
        return
    assert loc.data_dir is not None
    current = redis_server.status(loc.data_dir)
    if current.running and current.url:
        yield current.url
        return
    with redis_server.running_server(loc.data_dir) as info:
        yield info.url


def _record_ids(url: str, prefix: str) -> list[str]:
    """Every job id stored under `prefix` (the store's id set; `JobStore` has no listing call)."""
    import redis

    from schedmate.embeddings.store_search import StoreKeys

    client = redis.Redis.from_url(url, protocol=2, socket_timeout=5.0, socket_connect_timeout=5.0)
    try:
        return sorted(x.decode() if isinstance(x, bytes) else x for x in client.smembers(StoreKeys(prefix).ids))
    finally:
        client.close()


def _stored_dim(url: str, prefix: str) -> int | None:
    """The vector size a store was built with (None if empty): lets `history list` open it without a model."""
    import redis

    from schedmate.embeddings.store_search import StoreKeys

    client = redis.Redis.from_url(url, protocol=2, socket_timeout=5.0, socket_connect_timeout=5.0)
    try:
        raw = client.hget(StoreKeys(prefix).meta, "dim")
        return int(raw) if raw else None
    finally:
        client.close()


# ============================================================================== advise


@dataclass
class AdviceReport:
    """What `advise` shows: JSON-ready."""

    repo: str
    command: str
    gpus: int | None
    metadata: dict[str, Any]
    evidence: dict[str, str]
    extractor: str
    history: dict[str, Any] = field(default_factory=dict)
    similar: list[dict[str, Any]] = field(default_factory=list)
    estimate: dict[str, Any] | None = None
    why: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    advice: Any = None  # agents.advisor.wire.Advice: what `--json` prints, the service's /v1/advise answer


def _wire_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """Extracted fields as the wire carries them (an enum as its value), as the service does."""
    return {k: (v.value if hasattr(v, "value") else v) for k, v in fields.items()}


def _open_llm(stack: ExitStack, notes: list[str], config: Any = None) -> Any:
    """The local chat model (`config`, default the agent stack's), or None with a note saying why
    (the command then runs without it)."""
    from schedmate.llm import open_chat_model

    try:
        llm_config = config if config is not None else AgentStackConfig().with_llm().llm
        assert llm_config is not None  # with_llm() sets it
        return stack.enter_context(open_chat_model(llm_config))
    except Exception as exc:  # noqa: BLE001 -- no LLM is a degraded answer, not a failed command
        notes.append(f"LLM unavailable ({type(exc).__name__}: {str(exc)[:160]}): answered without it")
        return None


def _extract(repo: Path, command: str, gpus: int | None, nodes: int | None, llm: bool) -> tuple[Any, dict[str, str], str, list[str]]:
    """The advisor's extraction as the service runs it (`AgentStack.extractor()`: static only unless
    --llm opens the model), the static evidence of each field, a label and notes."""
    from schedmate.agents.advisor.static_extractor import extract_static

    static = extract_static(repo, command, gpus=gpus, nodes=nodes)
    evidence = {k: f"{e.source} ({e.kind}): {e.snippet.strip()[:120]}" for k, e in static.evidence.items()}
    notes = list(static.errors)
    config = AgentStackConfig().with_llm() if llm else AgentStackConfig()
    with ExitStack() as stack:
        chat = _open_llm(stack, notes, config.llm) if llm else None
        res = AgentStack(config, chat_model=chat).extractor().extract(repo, command, gpus=gpus, nodes=nodes, static=static)
    if chat is None:
        return res, evidence, "static", notes
    sources = res.sources()
    for k, v in res.fields.items():
        if v != static.fields.get(k):
            evidence[k] = f"LLM agent ({sources.get(k, 'llm')})"
    return res, evidence, f"static + LLM agent ({res.llm_status})", notes


def _advise(repo: Path, command: str, gpus: int | None, nodes: int | None, llm: bool, loc: HistoryLocation | None,
            config: Any) -> AdviceReport:
    from schedmate.agents.advisor.static_extractor import MANDATORY
    from schedmate.agents.advisor.wire import Advice

    res, evidence, extractor, notes = _extract(repo, command, gpus, nodes, llm)
    fields = dict(res.fields)
    report = AdviceReport(str(repo), command, gpus, fields, evidence, extractor, notes=notes,
                          advice=Advice(metadata=_wire_fields(fields), sources=res.sources(), llm_status=res.llm_status))
    missing = [f for f in MANDATORY if fields.get(f) is None]
    if missing:
        report.notes.append(f"not found in the code: {', '.join(missing)}")
    if loc is None:
        report.notes.append("no job history yet (build it with `schedmate history ingest`): metadata only")
        return report
    if len(missing) == len(MANDATORY):
        report.notes.append("no fingerprint could be extracted: nothing to match against the history")
        return report
    with _served(loc) as url:
        _match_history(report, url, fields, gpus, nodes, config)
    return report


def _match_history(report: AdviceReport, url: str, fields: dict[str, Any], gpus: int | None, nodes: int | None,
                   config: Any) -> None:
    """Similar past jobs and the deployed estimate (`agents.stack.estimate_job`) from the history at `url`."""
    from schedmate.agents.stack import AgentStack, estimate_job
    from schedmate.embeddings.store import DEFAULT_PREFIX, JobStore

    dim = _stored_dim(url, DEFAULT_PREFIX)
    total = len(_record_ids(url, DEFAULT_PREFIX)) if dim else 0
    report.history = {"location": url, "jobs": total}
    if not total:
        report.notes.append(f"the job history at {url} is empty: metadata only")
        return
    from schedmate.agents.advisor.wire import estimate_of, match_of  # the one conversion, as the service's

    stack = AgentStack(config, embedder=load_embedder())
    with JobStore.connect(url, stack.embedder.dim) as store:
        est = estimate_job(fields, gpus, nodes, stack.retriever(store), config)
    report.advice = report.advice.model_copy(update={"matches": [match_of(m) for m in est.similar],
                                                     "estimate": estimate_of(est) if est.estimated else None})
    for m in est.similar:
        rec = m.record
        if rec is None:
            continue
        report.similar.append({"job_id": m.job_id, "similarity": round(m.score, 4),
                               "duration_s": rec.outcome.duration, "sm_util": rec.outcome.sm_util,
                               "final_status": rec.outcome.final_status.value if rec.outcome.final_status else None,
                               "model_name": rec.workload.get("model_name"), "dataset": rec.workload.get("dataset"),
                               "gpus": rec.submitted.get("gpus"), "user": rec.submitted.get("user")})
    if est.similar:
        listed = ", ".join(f"{s['job_id']} ({s['similarity']:.3f}, {_dur(s['duration_s'])})" for s in report.similar)
        report.why.append(f"{len(est.similar)} past job(s) with fingerprint cosine >= {config.threshold}: {listed}")
    else:
        report.why.append(f"no past job with fingerprint cosine >= {config.threshold} among {total}")
    report.estimate = est.report()
    if report.estimate is None:
        report.notes.append("no estimate: no similar past job; the scheduler keeps its default")
        return
    report.why.extend(est.why)


def _render_advice(r: AdviceReport) -> None:
    table = Table("field", "value", "evidence", title=f"job metadata ({r.extractor})")
    for k, v in r.metadata.items():
        table.add_row(*_cells(k, "-" if v is None else v, r.evidence.get(k, "")))
    console.print(table)
    if r.similar:
        sim = Table("job", "similarity", "duration", "SM util", "status", "model", "dataset", "GPUs",
                    title=f"similar past jobs ({r.history.get('jobs')} in the history)")
        for s in r.similar:
            util = "-" if s["sm_util"] is None else f"{s['sm_util']:.0f} %"
            sim.add_row(*_cells(s["job_id"], f"{s['similarity']:.3f}", _dur(s["duration_s"]), util, s["final_status"],
                                s["model_name"], s["dataset"], s["gpus"]))
        console.print(sim)
    if r.estimate:
        e = r.estimate
        iv = e.get("interval_s")
        line = f"[bold]estimate[/] ({e['method']}): duration {_dur(e['duration_s'])}"
        if iv:
            line += f" [{_dur(iv[0])} .. {_dur(iv[1])}, {e['interval']}]"
        if e.get("sm_util") is not None:
            ui = e.get("sm_util_interval")
            line += f"; SM utilisation {e['sm_util']:.0f} %" + (f" [{ui[0]:.0f} .. {ui[1]:.0f} %]" if ui else "")
        console.print(line)
    for w in r.why:
        console.print(f"  why: {escape(w)}", highlight=False)
    for n in r.notes:
        console.print(f"[yellow]note:[/] {escape(n)}", highlight=False)


def advise(
    repo: Annotated[Path, typer.Argument(help="The job's repository (its code and configs).")],
    cmd: Annotated[str, typer.Option("--cmd", help='Launch command, e.g. "torchrun --nproc_per_node 8 train.py ..."')],
    gpus: Annotated[int | None, typer.Option(help="GPUs requested.", min=1)] = None,
    nodes: Annotated[int | None, typer.Option(help="Nodes requested.", min=1)] = None,
    llm: Annotated[bool, typer.Option("--llm", help="Also run the LLM extraction agent (local model).")] = False,
    threshold: Annotated[float, typer.Option(help="Fingerprint cosine a past job needs to count as similar.")] = DEFAULT_THRESHOLD,
    top_k: Annotated[int, typer.Option(help="Similar jobs to use at most.", min=1)] = DEFAULT_TOP_K,
    history_dir: HistoryDirOpt = None,
    redis_url: RedisUrlOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Metadata of a job before it runs, similar past jobs, and a duration / utilisation estimate with why."""
    with _user_errors():
        if not repo.exists():
            raise UserError(f"repository not found: {repo}")
        if not repo.is_dir():
            raise UserError(f"repository must be a directory: {repo}")
        if not cmd.strip():
            raise UserError("--cmd is empty")
        if not -1.0 <= threshold <= 1.0:
            raise UserError(f"--threshold is a cosine in [-1, 1], not {threshold}")
        loc = _location(history_dir, redis_url, create=False)
        report = _advise(repo, cmd, gpus, nodes, llm, loc, advise_config(threshold=threshold, top_k=top_k))
    if as_json:  # the Scheduling Advisor's `Advice` (agents/advisor/wire.py), as /v1/advise answers
        for kind, lines in (("why", report.why), ("note", report.notes)):
            for line in lines:
                err.print(f"{kind}: {escape(line)}", highlight=False)
        print(report.advice.model_dump_json())
    else:
        _render_advice(report)


# ============================================================================== track


def _track_summary(result: Any) -> dict[str, Any]:
    """The tracker's `TrackResult` (agents/tracker/wire.py: what the service and the chat answer too) as JSON."""
    from schedmate.agents.tracker.wire import track_result_of

    return track_result_of(result).model_dump(mode="json")


def _render_track(path: Path, s: dict[str, Any], *, stamp: str = "") -> None:
    for n in s.get("notes") or []:  # how the log was read (decompressed, decoded, a capped line)
        console.print(f"note: {n}", markup=False, highlight=False)
    if not s["signal"]:
        console.print(f"{stamp}{path}: no progress signal ({s['note']})", markup=False, highlight=False)
        return
    st, loss, tp = s["step_time"], s["loss"], s["throughput"]
    parts = [f"step time {_num(st['last'])} s (newest), {_num(st['value'])} s (steady)" if st else "step time -"]
    parts.append(f"loss {_num(loss['value'] if loss else None)}")
    if tp or s["steps_per_s"] is not None:
        parts.append(f"throughput {_num(tp['value'])} {tp['unit']}" if tp else f"throughput {_num(s['steps_per_s'])} steps/s")
    line = f"{escape(stamp)}[bold]{escape(path.name)}[/] line {s['newest_line']}: " + "; ".join(parts)
    ratio = s.get("slowdown")
    if ratio is not None:
        kind = "[red]slowdown[/]" if ratio > 1 else "[green]faster[/]"
        line += (f"; {kind} x{ratio:.2f} vs the earlier regime ({_num(s['earlier_step_time_s'])} s/step, "
                 f"new regime since line {s['regime_since_line']})")
    console.print(line, highlight=False)


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def _make_tracker(llm_model: Any) -> Any:
    config = AgentStackConfig() if llm_model is None else AgentStackConfig().with_llm()
    return agent_stack(config, chat_model=llm_model, lazy=True).tracker()


def _follow(path: Path, tracker: Any, interval: float, timeout: float | None, as_json: bool) -> None:
    """Poll the log; print a line whenever the reading changes, and a fail-slow alert (ratio, the
    line where the slowdown began) when the detector raises one. Ctrl-C (or `timeout`) ends cleanly."""
    from schedmate.agents.tracker.failslow import FailSlowMonitor
    from schedmate.agents.tracker.registry import JobLogRegistry
    from schedmate.agents.tracker.wire import failslow_alert_of

    reg = JobLogRegistry(tracker, attach_bytes=None)
    reg.register("job", path, start="begin")
    slow = FailSlowMonitor(path)
    deadline = None if timeout is None else time.monotonic() + timeout
    last: dict[str, Any] | None = None
    updates = 0
    try:
        while True:
            polled = reg.poll("job")
            if polled.missing:
                err.print(f"{path} is gone; waiting for it to reappear", markup=False)
            alerts = slow.poll()
            if last is None or polled.new_progress_lines or alerts:
                summary = _track_summary(reg.report("job", poll=False))
                # the newest fail-slow alert rides along in each JSON update
                if slow.detector.alerts and (alert := slow.detector.current()) is not None:
                    summary["failslow"] = failslow_alert_of(alert).model_dump(mode="json")
                if summary != last:
                    updates += 1
                    summary["update"] = updates
                    _print_json(summary) if as_json else _render_track(path, summary, stamp=f"[{time.strftime('%H:%M:%S')}] ")
                    last = {k: v for k, v in summary.items() if k != "update"}
            for alert in [] if as_json else alerts:
                console.print(f"[{time.strftime('%H:%M:%S')}] {path.name}: {alert.describe()}", markup=False,
                              highlight=False)
            if deadline is not None and time.monotonic() >= deadline:
                break
            time.sleep(interval)
    except KeyboardInterrupt:
        pass
    finally:
        reg.close()
        slow.close()
    if not as_json:
        err.print(f"stopped following {path} after {updates} update(s)", markup=False)


def track(
    log: Annotated[Path, typer.Argument(help="The job's training log.")],
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep reading as the log grows (Ctrl-C stops).")] = False,
    interval: Annotated[float, typer.Option(help="Seconds between polls with --follow.", min=0.05)] = 2.0,
    timeout: Annotated[float | None, typer.Option(help="Stop following after this many seconds.", min=0)] = None,
    llm: Annotated[bool, typer.Option("--llm", help="Let the local LLM read lines no regex reads.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object (one per update with --follow).")] = False,
) -> None:
    """Step time (newest line and steady estimate), loss, throughput, and any slowdown, from a training log.

    The slowdown compares the steady step time with the earlier regime's median when the log's
    step times shifted level (a step time that rose is a slowdown, one that fell usually warm-up)."""
    with _user_errors(), ExitStack() as stack:
        _readable_file(log, "log")
        notes: list[str] = []
        chat = _open_llm(stack, notes, AgentStackConfig().with_llm().llm) if llm else None
        for n in notes:
            err.print(f"[yellow]note:[/] {escape(n)}", highlight=False)
        tracker = _make_tracker(chat)
        view = stack.enter_context(readable_log(log))  # gzip/bz2/xz and UTF-16/32 read as they come
        if view.unreadable:
            raise UserError(f"{log}: {view.status_message()}")
        if follow:
            if view.converted:
                raise UserError(f"{log}: --follow reads a growing plain-text log, not a {view.notes[0].removeprefix('log read ')} one")
            _follow(log, tracker, interval, timeout, as_json)
            return
        summary = _track_summary(tracker.observe(view.path))
        summary["notes"] = view.notes + summary["notes"]
    _print_json(summary) if as_json else _render_track(log, summary)


# ============================================================================== diagnose


def _render_diagnosis(r: Any) -> None:
    """A `Diagnosis` (agents/failure/wire.py, the model `--json` prints) for a person."""
    if r.status != "failure_found":
        console.print(f"{r.log}: no failure found ({r.message})", markup=False, highlight=False)
        for n in r.notes:  # e.g. a capped line: the answer says what it could not read
            console.print(f"note: {n}", markup=False, highlight=False)
        return
    line_text = r.line_text or ""
    console.print(f"[bold]root cause[/] (line {r.line} of {r.total_lines}):", highlight=False)
    console.print(f"  {line_text}", markup=False, highlight=False)
    rc = r.root_cause
    if rc and rc != line_text.strip() and rc in line_text:
        console.print(f"  which says: {rc}", markup=False, highlight=False)  # its most specific sentence (the errno)
    console.print(f"[bold]category[/] {r.category}  [bold]reason[/] {r.reason_code}  [bold]component[/] "
                  f"{r.component}  (confidence {r.verdict_confidence}, {r.method}, LLM {r.llm_status})",
                  highlight=False)
    ce = r.category_evidence
    if ce:
        guess = f"; abstained, best guess {ce.category}" if r.abstained else ""
        conf = f", calibrated {r.confidence:.2f}" if r.confidence is not None else ""
        console.print(f"[bold]decided by[/] {escape(ce.rule)} ({ce.strength}{conf}{guess}): {escape(ce.why)}", highlight=False)
        if ce.line:
            console.print(f"  evidence: {ce.line[:200]}", markup=False, highlight=False)
    rem = r.remediation
    if rem:
        where = f", values from line {', '.join(map(str, rem.lines))}" if rem.lines and rem.values else ""
        console.print(f"[bold]what to change[/] ({escape(rem.key)}, for the {rem.who.replace('+', ' and the ')}"
                      f"{where}): {escape(rem.summary)}", highlight=False)
        for step in rem.steps:
            console.print(f"  - {step}", markup=False, highlight=False)
    if r.similar:
        t = Table("past job", "similarity", "category", "reason", "status", "resolved by", title="similar past failures")
        for s in r.similar:
            t.add_row(*_cells(s.job_id, f"{s.score:.3f}", s.category, s.reason, s.final_status, s.resolution or "-"))
        console.print(t)
    elif r.similar_status == "disabled":
        console.print("similar past failures: no history store (see `schedmate history ingest`)", highlight=False)
    elif r.similar_status != "ok":
        console.print(f"similar past failures: {r.similar_status}", highlight=False)
    else:
        console.print("similar past failures: none above the threshold", highlight=False)
    console.print("[bold]recovery plan[/] (dry run: nothing executed):")
    for step in r.plan_steps:
        console.print(f"  - {step}", markup=False, highlight=False)
    for n in r.plan_notes:
        console.print(f"  note: {n}", markup=False, highlight=False)
    for f in r.fallbacks:
        console.print(f"[yellow]fallback:[/] {escape(f)}", highlight=False)
    for n in r.notes:
        console.print(f"note: {n}", markup=False, highlight=False)


def diagnose(
    log: Annotated[Path | None, typer.Argument(help="The failed job's log (or --job).")] = None,
    slurm_job: Annotated[str | None, typer.Option("--job", help="A Slurm job id instead of LOG: its log as the SchedMate "
                                                   "epilog recorded it, else `scontrol show job`'s.")] = None,
    job_id: Annotated[str | None, typer.Option(help="Job id (default: the log's file name).")] = None,
    node: Annotated[list[str] | None, typer.Option("--node", help="A node the job ran on (repeat); the plan diagnoses them.")] = None,
    checkpoint: Annotated[str | None, typer.Option(help="Latest checkpoint, for the resubmission step.")] = None,
    method: Annotated[str, typer.Option(help="learned (default; fits its classifier in each run: 1-3 min on a "
                                             "busy 2-core CPU) | rules (signature rules only: seconds) | llm")] = "learned",
    llm: Annotated[bool, typer.Option("--llm", help="Local LLM breaks ties (method llm: cross-checks).")] = False,
    record: Annotated[bool, typer.Option("--record", help="Store this failure in the history for later searches.")] = False,
    history_dir: HistoryDirOpt = None,
    redis_url: RedisUrlOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON: the failure handler's `Diagnosis` (`category`, `reason_code`, `line`: 1-based root-cause line, ...)")] = False,
) -> None:
    """Root-cause line (quoted, with its number), category / reason / component, similar past failures
    and the dry-run recovery plan of a failed job's log."""
    from pydantic import ValidationError

    with _user_errors(), ExitStack() as stack:
        if (log is None) == (slurm_job is None):
            raise UserError("give the failed job's LOG or --job SLURM_JOB_ID (one of them)")
        if log is not None:
            _readable_file(log, "log")
        loc = _location(history_dir, redis_url, create=record)
        url = stack.enter_context(_served(loc)) if loc is not None else None
        found = _slurm_job_log(slurm_job, url) if slurm_job is not None else None
        if found is not None:
            log, job_id = _readable_file(Path(found.log), f"log of Slurm job {slurm_job}"), job_id or found.job_id
        assert log is not None
        if method not in ("learned", "rules", "llm"):
            raise UserError(f"--method must be learned, rules or llm, not {method!r}")
        if method == "llm" and not llm:
            raise UserError("--method llm needs --llm")
        from schedmate.agents.failure.recovery import JobMeta

        try:
            meta = JobMeta(job_id=job_id or _job_id_of(log), nodes=tuple(node or ()), checkpoint=checkpoint)
        except ValidationError as exc:
            raise UserError(f"bad job metadata: {exc.errors()[0]['loc'][0]}: {exc.errors()[0]['msg']}") from None
        notes: list[str] = []
        config = AgentStackConfig(failure_method=method, record_failures=record)  # type: ignore[arg-type]  # a CLI string; AgentStackConfig validates it
        config = config.with_llm() if llm else config
        chat = _open_llm(stack, notes, config.llm) if llm else None
        if method == "llm" and chat is None:
            raise UserError(f"--method llm needs the LLM: {notes[0]}")
        view = stack.enter_context(readable_log(log))  # gzip/bz2/xz and UTF-16/32 read as they come
        if view.unreadable:
            raise UserError(f"{log}: {view.status_message()}")
        handler = agent_stack(config, chat_model=chat).handler(store_url=url)
        d = handler.diagnose(view.path, meta)
        if d.status == "unreadable":
            raise UserError(f"{log}: {d.message}")
        from schedmate.agents.failure.wire import diagnosis_of

        wire = diagnosis_of(d)  # the model the service and the daemon answer too (1-based lines)
        wire = wire.model_copy(update={"log": str(log), "notes": view.notes + wire.notes,
                                       "fallbacks": notes + wire.fallbacks})
        result = wire.model_dump(mode="json")
        if found is not None:
            result["slurm"] = {"job_id": found.job_id, "log": found.log, "log_from": found.source}
    _print_json(result) if as_json else _render_diagnosis(wire)


def _slurm_job_log(job: str, url: str | None) -> Any:
    """The log of a Slurm job (deploy/slurm/lookup.py): recorded by the epilog, else scontrol's."""
    from schedmate.deploy.slurm.lookup import JobLogNotFound, find_job_log

    try:
        return find_job_log(job, url)
    except JobLogNotFound as exc:
        raise UserError(str(exc)) from None


def _job_id_of(path: Path) -> str:
    import re

    name = re.sub(r"[^A-Za-z0-9._:-]", "-", path.stem).lstrip("._:-")
    return name[:128] or "job"


# ============================================================================== history


HISTORY_FORMATS = """\
Formats (detected from the content):

JSONL, one past job per line, e.g.
  {"job_id": "j1", "repo": "repos/gpt", "command": "torchrun train.py",
   "gpus": 8, "nodes": 1, "user": "alice",
   "outcome": {"duration": 5400, "sm_util": 61, "final_status": "completed",
               "step_time_s": 0.42, "startup_s": 90},
   "root_cause": null}
  repo: relative to the file's folder; its fingerprint is read from the
  code as `advise` reads it. Instead of repo + command, `metadata` may give
  the fingerprint fields. outcome: the job store's JobOutcome fields
  (duration, sm_util, gpu_util, final_status, failure_category,
  failure_reason, step_time_s, startup_s, steps_total, ...). root_cause: a
  failed job's failing log line; it also files the job in the failure
  history that `diagnose` searches.

sacct export, '|'-separated with its header:
  sacct -a -X --parsable2 --format \\
    JobID,JobName,User,AllocTRES,Elapsed,State,ExitCode,WorkDir,SubmitLine
  Job steps (123.batch) and unfinished jobs are skipped. GPUs come from
  AllocTRES gres/gpu=N, nodes from node=N; the command is SubmitLine, else
  `sbatch JobName` when that script is in WorkDir. A job whose WorkDir
  cannot be read here has no fingerprint and is skipped (and listed).

Files are streamed (any size, progress on stderr). A row that cannot be
read is an error with its file:line; the other rows are still stored. A
job id already in the history (or earlier in the input) is refused: the
first record is kept. Exit 1 when any row was refused.
"""


@history_app.command("ingest", help="Add past jobs from a file, or every *.jsonl / *.txt / *.sacct / *.psv file in a folder.\n\n"
                     + HISTORY_FORMATS)
def history_ingest(
    source: Annotated[Path, typer.Argument(help="A JSONL or sacct export, or a folder of them.")],
    history_dir: HistoryDirOpt = None,
    redis_url: RedisUrlOpt = None,
    as_json: JsonOpt = False,
) -> None:
    from schedmate.embeddings.store import DEFAULT_PREFIX, JobStore
    from schedmate.history_ingest import RowError, ingest_files

    with _user_errors():
        if not source.exists():
            raise UserError(f"history source not found: {source}")
        files = sorted(p for p in source.iterdir() if p.is_file() and p.suffix in (".jsonl", ".txt", ".sacct", ".psv")) \
            if source.is_dir() else [source]
        if not files:
            raise UserError(f"no *.jsonl, *.txt, *.sacct or *.psv file in {source}")
        for f in files:
            _readable_file(f, "history file")
        loc = _location(history_dir, redis_url, create=True)
        assert loc is not None
        with _served(loc) as url:
            try:  # streamed (schedmate/history_ingest.py): progress on stderr, errors per row
                summary = ingest_files(files, url, lambda: load_embedder(),
                                       progress=lambda m: err.print(f"ingest {m}", highlight=False, markup=False))
            except RowError as exc:
                raise UserError(str(exc)) from None
            dim = _stored_dim(url, DEFAULT_PREFIX)
            total = 0
            if dim:
                with JobStore.connect(url, dim) as store:
                    total = store.count()
    result = summary.as_dict() | {"history_jobs": total, "location": loc.describe()}
    if as_json:
        _print_json(result)
    else:
        rows = summary.rows
        parts = [f"{summary.duplicates.total} duplicate job id(s) refused"] if summary.duplicates.total else []
        parts += [f"{summary.errors.total} row error(s)"] if summary.errors.total else []
        parts += [f"{summary.skipped.total} skipped"] if summary.skipped.total else []
        console.print(f"stored {summary.stored} of {rows} job row(s) from {len(files)} file(s) "
                      f"({summary.failures} with a root-cause line){'; ' + ', '.join(parts) if parts else ''}; "
                      f"the history now holds {total} job(s) at {loc.describe()}", highlight=False)
        for kind, notes in (("duplicate", summary.duplicates), ("error", summary.errors), ("skipped", summary.skipped)):
            for n in notes.kept:
                console.print(f"[yellow]{kind}[/] {escape(n)}", highlight=False)
            if notes.total > len(notes.kept):
                console.print(f"[yellow]{kind}[/] ... and {notes.total - len(notes.kept)} more", highlight=False)
    if summary.errors.total or summary.duplicates.total:
        raise typer.Exit(1)  # partly stored: a script must not read it as a clean ingest


@history_app.command("list")
def history_list(
    limit: Annotated[int, typer.Option(help="Show at most N jobs.", min=1)] = 50,
    history_dir: HistoryDirOpt = None,
    redis_url: RedisUrlOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The past jobs in the history: fingerprint, launch and outcome."""
    from schedmate.agents.failure.similar import FAILURE_PREFIX
    from schedmate.embeddings.store import DEFAULT_PREFIX, JobStore

    with _user_errors():
        loc = _location(history_dir, redis_url, create=False)
        rows: list[dict[str, Any]] = []
        total = failures = 0
        if loc is not None:
            with _served(loc) as url:
                ids = _record_ids(url, DEFAULT_PREFIX)
                failures = len(_record_ids(url, FAILURE_PREFIX))
                total = len(ids)
                dim = _stored_dim(url, DEFAULT_PREFIX)
                if dim:
                    with JobStore.connect(url, dim) as store:
                        records = store.get_many(ids[:limit])
                    for rec in records:
                        if rec is None:
                            continue
                        o = rec.outcome
                        rows.append({"job_id": rec.job_id, "user": rec.submitted.get("user"),
                                     "gpus": rec.submitted.get("gpus"), "model_name": rec.workload.get("model_name"),
                                     "dataset": rec.workload.get("dataset"), "iterations": rec.workload.get("iterations"),
                                     "iteration_type": rec.workload.get("iteration_type"), "duration_s": o.duration,
                                     "sm_util": o.sm_util, "step_time_s": o.step_time_s,
                                     "final_status": o.final_status.value if o.final_status else None})
    out = {"location": loc.describe() if loc else None, "jobs": total, "failures": failures, "shown": rows}
    if as_json:
        _print_json(out)
        return
    if loc is None:
        console.print("no job history yet: build it with `schedmate history ingest FILE`")
        return
    table = Table("job", "user", "GPUs", "model", "dataset", "plan", "duration", "SM util", "status",
                  title=f"{total} past job(s), {failures} failure line(s) at {out['location']}")
    for r in rows:
        plan = f"{r['iterations']} {r['iteration_type']}" if r["iterations"] else "-"
        util = "-" if r["sm_util"] is None else f"{r['sm_util']:.0f} %"
        table.add_row(*_cells(r["job_id"], r["user"] or "-", r["gpus"] or "-", r["model_name"], r["dataset"], plan,
                              _dur(r["duration_s"]), util, r["final_status"]))
    console.print(table)


@history_app.command("resolve")
def history_resolve(
    job: Annotated[str, typer.Argument(help="The failed job whose failure is in the history (`diagnose --record`, the "
                                            "epilog, the service's failure report).")],
    note: Annotated[str, typer.Option("--note", help="How it was resolved (what changed), at most 2000 characters.")],
    history_dir: HistoryDirOpt = None,
    redis_url: RedisUrlOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Record how a past failure was resolved: `diagnose` and `chat` show the note beside similar failures."""
    from schedmate.agents.failure.similar import FAILURE_PREFIX, record_resolution
    from schedmate.embeddings.store import JobStore, StoreError

    with _user_errors():
        loc = _location(history_dir, redis_url, create=False)
        if loc is None:
            raise UserError("no failure history yet: record failures with `schedmate diagnose LOG --record`")
        with _served(loc) as url:
            dim = _stored_dim(url, FAILURE_PREFIX)
            if not dim:
                raise UserError(f"the failure history at {loc.describe()} is empty: nothing to resolve")
            try:
                with JobStore.connect(url, dim, prefix=FAILURE_PREFIX) as store:
                    if store.get(job) is None and store.get(f"slurm-{job}") is not None:
                        job = f"slurm-{job}"  # a Slurm job id, as the epilog recorded it
                    rec = record_resolution(store, job, note)
            except StoreError as exc:  # UnknownFailure (NotFound) and a refused note (InvalidValue) pass as they are
                raise DependencyUnavailable(f"failure history unavailable: {exc}") from None
    out = {"job_id": job, "resolution": rec.workload["resolution"], "resolved_at": rec.workload["resolved_at"],
           "reason": rec.outcome.failure_reason, "location": loc.describe()}
    if as_json:
        _print_json(out)
        return
    console.print(f"recorded how job {job} ({out['reason'] or 'unclassified'}) was resolved at {out['location']}",
                  markup=False, highlight=False)


def register_job_commands(app: typer.Typer) -> None:
    """Add `advise`, `track`, `diagnose` and `history` to the `schedmate` app."""
    app.command("advise")(advise)
    app.command("track")(track)
    app.command("diagnose")(diagnose)
    app.add_typer(history_app, name="history")
