"""The `schedmate` command. A `SchedMateError` (bad input, a dependency down, ...) prints one line
`error: <message>` and exits 2, never a traceback; any other exception is a bug and keeps its
traceback (exit 1). One handler does it for every command: `SchedMateGroup` (issue 25, item 2)."""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from typer.core import TyperGroup

from schedmate.schedulers.registry import BUILTIN as POLICY_NAMES  # names only: imports no policy

from .cli_experiment import register as register_experiment_commands
from .cli_jobs import register_job_commands
from .config import shared_data_dir
from .defaults import CLI_LLM_TIMEOUT_S
from .errors import BadInput, DependencyUnavailable, NotFound, SchedMateError

# Piped output (CI logs, files) gets a width that fits the comparison table instead of 80 columns.
console = Console(width=None if sys.stdout.isatty() else 140)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 140)
T = TypeVar("T")

DEFAULT_POLICIES = "fifo,sjf,srtf,qssf,tiresias"
ERROR_EXIT = 2
"""Exit status of a command that stopped on a `SchedMateError` (1 is a bug's, or a failed run's)."""


def report_error(exc: SchedMateError) -> typer.Exit:
    """The CLI's one error handler: `error: <message>` as one line on stderr (user text is not markup,
    no wrapping), and the exit to raise (status 2)."""
    err.print(f"[bold red]error:[/] {escape(exc.one_line())}", highlight=False, soft_wrap=True)
    return typer.Exit(code=ERROR_EXIT)


class SchedMateGroup(TyperGroup):
    """The root command group: every subcommand runs inside its `invoke`, so a `SchedMateError`
    from any of them (or from the code they call) is answered here, once."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except SchedMateError as exc:
            raise report_error(exc) from None


app = typer.Typer(
    name="schedmate",
    help="Semantic-aware add-on for GPU-cluster schedulers.",
    no_args_is_help=True,
    add_completion=False,
    cls=SchedMateGroup,
)


@contextmanager
def user_errors() -> Iterator[None]:
    """A file the user named that is missing, a directory or unreadable is bad input (`NotFound`,
    `BadInput`). Nothing else is translated: an internal `ValueError` is a bug and keeps its traceback."""
    try:
        yield
    except FileNotFoundError as exc:
        raise NotFound(str(exc)) from None
    except (IsADirectoryError, NotADirectoryError, PermissionError) as exc:
        raise BadInput(str(exc)) from None


@contextmanager
def progress_bar() -> Iterator[Callable[[str, int, int], None]]:
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=False) as progress:
        tasks: dict[str, int] = {}

        def update(name: str, done: int, total: int) -> None:
            if name not in tasks:
                tasks[name] = progress.add_task(f"simulating {name}", total=total)
            progress.update(tasks[name], completed=done)  # type: ignore[arg-type]  # `tasks` keeps add_task's TaskID as the int it is

        yield update


def _fmt_s(x: float) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x / 3600:.2f}h" if x >= 3600 else f"{x:.0f}s"


def summary_table(summaries: dict, title: str, warnings: Any = None) -> Table:
    """One row per policy; `cancelled` counts jobs that never ran (e.g. larger than the cluster), whose
    JCT is not in the JCT columns: `jobs` alone would count them as ordinary jobs. `warnings` (a
    `TraceWarnings`) counts and lists implausible jobs under the table."""
    caption = None
    if warnings:
        caption = "; ".join(f"{len(ids)} {what}: {', '.join(j for j, *_ in ids[:5])}" + (" ..." if len(ids) > 5 else "")
                            for what, ids in (("job(s) far outside the trace's span", warnings.time_outliers),
                                              ("job(s) larger than the cluster (cancelled)", warnings.oversized)) if ids)
    table = Table(title=title, caption=caption and f"warning: {escape(caption)}", caption_style="yellow")
    for col in ("policy", "jobs", "cancelled", "mean JCT", "median JCT", "p99 JCT", "mean queue", "makespan", "GPU util", "unfair", "restarts", "wall"):
        table.add_column(col, justify="left" if col == "policy" else "right")
    for name, s in summaries.items():
        table.add_row(
            name,
            str(s.jobs),
            f"[yellow]{s.cancelled}[/]" if s.cancelled else "0",
            _fmt_s(s.mean_jct),
            _fmt_s(s.median_jct),
            _fmt_s(s.p99_jct),
            _fmt_s(s.mean_queueing),
            _fmt_s(s.makespan),
            f"{s.gpu_utilisation:.1%}",
            "-" if math.isnan(s.unfair_fraction) else f"{s.unfair_fraction:.1%}",
            str(s.restarts),
            f"{s.wall_seconds:.1f} s",
        )
    return table


@app.command()
def simulate(
    trace: Annotated[str, typer.Option(help="Trace file, or 'synthetic[:profile]' for the calibrated generator.")] = "synthetic",
    policies: Annotated[str, typer.Option(help=f"Comma-separated policies ({', '.join(POLICY_NAMES)}, or any registered through the 'schedmate.policies' entry points); '+bf' adds backfilling.")] = DEFAULT_POLICIES,
    cluster: Annotated[str, typer.Option(help="Cluster: '64', '8x8', '6x4:T4,2x8:A100'.")] = "64",
    limit: Annotated[int | None, typer.Option(help="Use only the N earliest-submitted jobs.")] = None,
    jobs: Annotated[int, typer.Option(help="Jobs to generate for a synthetic trace.")] = 2000,
    load: Annotated[float, typer.Option(help="Offered load of a synthetic trace (GPU-time / capacity).")] = 1.2,
    fmt: Annotated[str | None, typer.Option("--format", help="Trace format; detected from the header when omitted.")] = None,
    placer: Annotated[str, typer.Option(help="consolidate | spread | topology")] = "consolidate",
    seed: Annotated[int, typer.Option(help="Seed for generators and the engine.")] = 0,
    colocate_info: Annotated[Path | None, typer.Option(help="Measured co-location speeds (Lucid colocate_info.csv).")] = None,
    out: Annotated[Path, typer.Option(help="Output folder for CSV, JSON and plots.")] = Path("results/simulate"),
) -> None:
    """Replay a trace through several policies side by side and print a comparison table."""
    from schedmate.schedulers.cluster import ClusterSpec
    from schedmate.schedulers.compare import compare_policies
    from schedmate.schedulers.engine import SimConfig
    from schedmate.schedulers.placement import PLACERS
    from schedmate.schedulers.traces import generate_trace, load_trace
    from schedmate.schedulers.traces.plausibility import check_plausibility

    from .cli_checks import check_choice, check_cluster, check_count, check_limit, check_out_dir, check_policies

    with user_errors():  # every argument is checked before the first simulation starts
        names = check_policies(policies)
        spec = ClusterSpec.parse(check_cluster(cluster))
        check_limit(limit)
        check_count(jobs, "--jobs", maximum=10_000_000)
        check_count(seed, "--seed", minimum=0, maximum=2**32 - 1)
        check_choice(placer, "--placer", tuple(PLACERS))
        check_out_dir(out)
        if not (math.isfinite(load) and load > 0):
            raise BadInput(f"--load must be a positive number, not {load}")
        if colocate_info is not None and not colocate_info.is_file():
            raise NotFound(f"--colocate-info {colocate_info}: no such file")
        if trace.startswith("synthetic"):
            profile = trace.partition(":")[2] or "seren"
            loaded = generate_trace(jobs, seed=seed, profile=profile, cluster_gpus=spec.total_gpus, load=load)
            if limit:
                loaded = type(loaded)(jobs=loaded.jobs[:limit], source=loaded.source, format=loaded.format)
        else:
            loaded = load_trace(trace, fmt, limit=limit)
        if loaded.skipped:
            err.print(f"[yellow]skipped {loaded.skipped} malformed row(s)[/] in {loaded.source}: {loaded.skipped_reasons[:3]}")
        # Lucid's lookup ignores GPU count (the measured pairs are all 1-GPU), as its simulator does.
        interference = None
        if colocate_info:  # imported only then: the Lucid package pulls in sklearn (1.8 s)
            from schedmate.schedulers.lucid.interference import LucidInterference

            interference = LucidInterference.from_csv(colocate_info)
        console.print(f"{len(loaded.jobs)} jobs from {loaded.source} on {spec.total_gpus} GPUs ({len(spec.nodes)} nodes)")
        for warning in check_plausibility(loaded.jobs, spec).lines():
            err.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
        with progress_bar() as update:
            comparison = compare_policies(
                loaded.jobs, spec, names, config=SimConfig(seed=seed), placer=placer,
                interference=interference, out_dir=out, progress=update,
            )
    console.print(summary_table(comparison.summaries, f"{loaded.source}: {len(loaded.jobs)} jobs, {spec.total_gpus} GPUs",
                                comparison.warnings))
    console.print(f"wrote {', '.join(str(f) for f in comparison.files)}")
    engine_s = sum(r.wall_seconds for r in comparison.results.values())
    console.print(
        f"time: engine {engine_s:.1f} s, metrics {comparison.metrics_seconds:.1f} s, "
        f"CSV/JSON/plots {comparison.output_seconds:.1f} s"
    )


@app.command("trace-info")
def trace_info(
    path: Annotated[str, typer.Argument(help="Trace file.")],
    fmt: Annotated[str | None, typer.Option("--format")] = None,
) -> None:
    """Validate a trace and print what it holds."""
    import numpy as np

    from schedmate.schedulers.traces import load_trace

    with user_errors():
        loaded = load_trace(path, fmt)
    durations = np.array([j.duration for j in loaded.jobs])
    gpus = np.array([j.num_gpus for j in loaded.jobs])
    table = Table(title=f"{loaded.source} ({loaded.format})")
    table.add_column("what")
    table.add_column("value", justify="right")
    for k, v in {
        "jobs": len(loaded.jobs),
        "skipped rows": loaded.skipped,
        "span": _fmt_s(loaded.jobs[-1].submit_time if loaded.jobs else 0.0),
        "median duration": _fmt_s(float(np.median(durations))) if durations.size else "-",
        "mean duration": _fmt_s(float(durations.mean())) if durations.size else "-",
        "mean GPUs": f"{gpus.mean():.2f}" if gpus.size else "-",
    }.items():
        table.add_row(k, str(v))
    console.print(table)
    for reason in loaded.skipped_reasons[:5]:
        err.print(f"[yellow]skipped:[/] {escape(reason)}")
    from schedmate.schedulers.traces.plausibility import check_plausibility

    for warning in check_plausibility(loaded.jobs).lines():
        err.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)


@app.command()
def demo(
    out: Annotated[Path, typer.Option(help="Output folder.")] = Path("results/demo"),
    jobs: Annotated[int, typer.Option(help="Synthetic jobs per case study.")] = 400,
    history: Annotated[int, typer.Option(help="Historical jobs ingested into Redis first.")] = 300,
    seed: int = 0,
    llm: Annotated[bool, typer.Option("--llm/--no-llm", help="Diagnose the failed job with the local LLM.")] = True,
    otel: Annotated[str | None, typer.Option(help="Telemetry exporter: console, otlp or none (default: OTEL_* variables).",
                                             show_default=False)] = None,
) -> None:
    """The main job on embedded defaults: the whole pipeline (history → agents → Lucid/standalone case
    studies → one failure diagnosed) and a report (report.md / report.html)."""
    from schedmate.sim.pipeline import MainJobConfig, run_main_job
    from schedmate.telemetry import TelemetryConfig, telemetry_session

    from .cli_checks import check_count, check_out_dir

    with user_errors():
        check_out_dir(out)
        check_count(jobs, "--jobs", maximum=1_000_000)
        check_count(history, "--history", minimum=0, maximum=1_000_000)
        check_count(seed, "--seed", minimum=0, maximum=2**32 - 1)
    t0 = time.perf_counter()
    TelemetryConfig.resolve(otel)  # an unknown exporter: TelemetryConfigError, a BadInput
    with telemetry_session(otel), err.status("SchedMate main job") as status:
        def say(msg: str) -> None:
            status.update(msg[:100])
            err.log(msg)

        report = run_main_job(out, MainJobConfig(jobs=jobs, history=history, seed=seed, llm=llm), progress=say)
    table = Table("step", "status", "s", "result", title="SchedMate main job")
    for name, step in report.steps.items():
        table.add_row(name, step["status"], str(step.get("seconds", "")), step.get("summary") or step.get("error", ""))
    console.print(table)
    console.print(f"report: {out / 'report.html'} ({time.perf_counter() - t0:.0f} s)")
    if not report.ok:
        raise typer.Exit(1)


redis_app = typer.Typer(help="The embedded Redis store (a real redis-server on loopback).", no_args_is_help=True)
app.add_typer(redis_app, name="redis")
register_job_commands(app)  # advise, track, diagnose, history (schedmate/cli_jobs.py)
from schedmate.deploy.service.cli import serve as serve_command  # noqa: E402 -- API v1 (deploy/service)

app.command("serve")(serve_command)
DataDirOpt = Annotated[Path | None, typer.Option("--data-dir", help="Data directory (default: the user's data dir).")]


def _data_dir_problem(exc: OSError, given: Path | None) -> str:
    """One line for a data directory the OS refuses (not a directory, read-only, no permission)."""
    where = exc.filename or given or "the data directory"
    why = "a file is in the way (not a directory)" if isinstance(exc, FileExistsError | NotADirectoryError) else (
        exc.strerror or str(exc))
    return f"data directory {where}: {why} (pass --data-dir, or set SCHEDMATE_HOME to a writable folder)"


@redis_app.command("start")
def redis_start(data_dir: DataDirOpt = None, port: Annotated[int | None, typer.Option(help="Port (default: a free one).")] = None) -> None:
    """Start redis-server on 127.0.0.1 with persistence (AOF) in the data directory."""
    from schedmate.embeddings import redis_server

    try:  # a server that does not start: RedisServerError, a DependencyUnavailable
        info = redis_server.start(data_dir or redis_server.default_data_dir(), port)
    except OSError as exc:  # an unwritable or non-directory data dir: one line naming the path
        raise BadInput(_data_dir_problem(exc, data_dir)) from None
    console.print(f"redis running at {info.url} (pid {info.pid}, data {info.data_dir})")


@redis_app.command("stop")
def redis_stop(data_dir: DataDirOpt = None) -> None:
    """Stop the server for the data directory (saving first)."""
    from schedmate.embeddings import redis_server

    try:
        stopped = redis_server.stop(data_dir or redis_server.default_data_dir())
    except OSError as exc:
        raise BadInput(_data_dir_problem(exc, data_dir)) from None
    console.print("stopped" if stopped else "not running")


@redis_app.command("status")
def redis_status(data_dir: DataDirOpt = None) -> None:
    """Say whether the server for the data directory runs and answers."""
    from schedmate.embeddings import redis_server

    try:
        st = redis_server.status(data_dir or redis_server.default_data_dir())
    except OSError as exc:
        raise BadInput(_data_dir_problem(exc, data_dir)) from None
    console.print(f"{'running' if st.running else 'not running'}: {st.detail}" + (f" ({st.url})" if st.url else ""))
    if not st.running:
        raise typer.Exit(code=1)


corpus_app = typer.Typer(help="Generate labelled corpora (training logs, job repositories).", no_args_is_help=True)
app.add_typer(corpus_app, name="corpus")


def _count_progress(label: str) -> tuple[Progress, Callable[[int, int | None], None]]:
    progress = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err)
    task = progress.add_task(label, total=None)

    def update(done: int, total: int | None) -> None:
        progress.update(task, completed=done, total=total)

    return progress, update


@corpus_app.command("generate")
def corpus_generate(
    out: Annotated[Path, typer.Option(help="Output folder (logs/ and labels.jsonl).")],
    n: Annotated[int, typer.Option(help="Number of logs.")] = 100,
    seed: Annotated[int, typer.Option(help="Seed: the same seed writes the same corpus.")] = 0,
    min_lines: Annotated[int, typer.Option(help="Shortest log, lines.")] = 100,
    max_lines: Annotated[int, typer.Option(help="Longest log, lines.")] = 20_000,
    failed_fraction: Annotated[float, typer.Option(help="Share of logs that end in a failure.")] = 0.5,
    pool: Annotated[str, typer.Option(help="Error-text pool: dev (rules may be written from it), heldout, or both "
                                           "(half and half, recorded per log).")] = "both",
    hard: Annotated[bool, typer.Option("--hard/--no-hard", help="Hard cases in failed logs (hangs, floods, restarts, "
                                                                 "decoys, ...; synthetic.logs.hard).")] = True,
) -> None:
    """Write realistic training logs with exact labels (metrics truth, failure root cause)."""
    from schedmate.synthetic.logs.generator import generate_corpus

    from .cli_checks import check_choice, check_count, check_fraction, check_out_dir

    with user_errors():  # arguments first: a bad --out must not cost the generation
        check_choice(pool, "--pool", ("dev", "heldout", "both"))
        check_out_dir(out)
        check_count(n, "--n", maximum=1_000_000)
        check_count(seed, "--seed", minimum=0, maximum=2**32 - 1)
        check_count(min_lines, "--min-lines", maximum=10_000_000)
        check_count(max_lines, "--max-lines", minimum=min_lines, maximum=10_000_000)
        check_fraction(failed_fraction, "--failed-fraction")
        progress, update = _count_progress("writing logs")
        with progress:
            generate_corpus(out, n, seed, min_lines=min_lines, max_lines=max_lines,
                            failed_fraction=failed_fraction, progress=update, pool=pool,
                            hard_mix=None if hard else {})
    console.print(f"wrote {n} logs under {out / 'logs'} with labels in {out / 'labels.jsonl'}")


@corpus_app.command("jobs")
def corpus_jobs(
    out: Annotated[Path, typer.Option(help="Output folder (jobs/<id>/ repositories and manifest.jsonl).")],
    n: Annotated[int, typer.Option(help="Number of jobs.")] = 100,
    seed: Annotated[int, typer.Option(help="Seed: the same seed writes the same corpus.")] = 0,
    users_mode: Annotated[str, typer.Option(help="family: users own experiments; shared: one codebase, many users.")
                          ] = "family",
) -> None:
    """Write realistic training repositories with their truth metadata and run histories."""
    from schedmate.synthetic.jobs import generate_job_corpus

    from .cli_checks import check_choice, check_count, check_out_dir

    with user_errors():
        check_out_dir(out)
        check_count(n, "--n", maximum=1_000_000)
        check_count(seed, "--seed", minimum=0, maximum=2**32 - 1)
        check_choice(users_mode, "--users-mode", ("family", "shared"))
        progress, update = _count_progress("writing jobs")
        with progress:
            manifest = generate_job_corpus(out, n, seed, progress=update, users_mode=users_mode)  # type: ignore[arg-type]  # a CLI string; the generator validates it
    console.print(f"wrote {len(manifest.records)} jobs under {out}")


eval_app = typer.Typer(help="Score the agents on labelled data (failures, metrics, advisor, fail-slow) and run the nightly suites.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")
EvalData = Annotated[Path, typer.Option("--data", help="Corpus folder (labels.jsonl + logs/).")]
EvalOut = Annotated[Path, typer.Option("--out", help="Where report.json / report.md go.")]
EvalLLM = Annotated[bool, typer.Option("--llm/--no-llm", help="Also run the LLM systems (embedded local model).")]
EvalLimit = Annotated[int | None, typer.Option(help="Only the first N logs.")]


def _warn_vanished(summary: dict[str, Any]) -> None:
    """Logs deleted while the eval ran were left out of the scores: say which."""
    gone = summary.get("vanished_logs") or []
    if gone:
        err.print(f"[yellow]warning:[/] {len(gone)} log(s) disappeared during the run and were not scored: "
                  f"{escape(', '.join(gone[:3]))}" + (" ..." if len(gone) > 3 else ""), highlight=False)


def _check_corpus(data: Path, out: Path, limit: int | None) -> None:
    """Before any scoring: --limit and --out are sane, and every label line and log file of the corpus
    is there (one line naming the file and line otherwise, exit 2)."""
    from schedmate.evals.harness.common import load_corpus

    from .cli_checks import check_limit, check_out_dir

    with user_errors():
        check_limit(limit)
        check_out_dir(out)
    if not (data / "labels.jsonl").is_file():
        raise NotFound(f"{data} holds no labels.jsonl", hint="make a corpus with `schedmate corpus generate`")
    load_corpus(data, limit)  # a bad label line or a missing log: CorpusError, a BadInput


def _run_eval(suite: str, data: Path, out: Path, llm: bool, limit: int | None) -> None:
    from contextlib import ExitStack

    from schedmate.evals.harness import run_failure_eval, run_metrics_eval

    _check_corpus(data, out, limit)
    progress, update = _count_progress(f"scoring {suite}")
    with ExitStack() as stack, progress:
        model = None
        if llm:
            from schedmate.llm import LLMConfig, open_chat_model

            # a 1.2k-token window takes ~45 s to read on a busy 2-core CPU: no short timeouts, no retries
            model = stack.enter_context(open_chat_model(LLMConfig(timeout_s=CLI_LLM_TIMEOUT_S, max_retries=0)))
        run = run_failure_eval if suite == "failures" else run_metrics_eval
        summary = run(data, out, llm=model, limit=limit, progress=update)
    console.print(summary["summary_line"])
    _warn_vanished(summary)
    console.print(f"wrote {out / 'report.json'}, {out / 'report.md'} and {out / 'report.html'}")


def _register_areas() -> None:
    """Each area owns its commands in its own module (schedmate/cli_<area>.py)."""
    from . import cli_chat, cli_daemon, cli_failslow, cli_nightly, cli_ray, cli_slurm

    for area in (cli_slurm, cli_daemon, cli_ray, cli_chat, cli_nightly, cli_failslow):
        area.register(app, eval_app)


_register_areas()


@eval_app.command("failures")
def eval_failures(
    data: EvalData,
    out: EvalOut = Path("results/eval"),
    llm: EvalLLM = False,
    limit: EvalLimit = None,
    devset: Annotated[Path | None, typer.Option(help="Real dev set (labels*.jsonl + logs/) reported beside the generated "
                                                     "corpus [default: evals/devset/failures].")] = None,
    no_devset: Annotated[bool, typer.Option("--no-devset", help="Skip the real dev set.")] = False,
    fit_calibration: Annotated[Path | None, typer.Option(
        help="Write the confidence table fitted on this dev set's failed items to this JSON file "
             "(the packaged one is agents/failure/data/calibration.json).")] = None,
) -> None:
    """Failure Handler: infra-vs-not P/R/F1, category macro-F1, first-line accuracy, baselines, ablations;
    per error-text pool (dev / held-out) and per hard case, beside the real dev set."""
    from contextlib import ExitStack

    from schedmate.evals.harness import DEFAULT_DEVSET, run_failure_eval

    _check_corpus(data, out, limit)
    folder = None if no_devset else (devset or DEFAULT_DEVSET)
    if folder is not None and devset is not None and not devset.is_dir():
        raise BadInput(f"--devset {devset} is not a folder")
    progress, update = _count_progress("scoring failures")
    with ExitStack() as stack, progress:
        model = None
        if llm:
            from schedmate.llm import LLMConfig, open_chat_model

            # a 1.2k-token window takes ~45 s to read on a busy 2-core CPU: no short timeouts, no retries
            model = stack.enter_context(open_chat_model(LLMConfig(timeout_s=CLI_LLM_TIMEOUT_S, max_retries=0)))
        summary = run_failure_eval(data, out, llm=model, limit=limit, progress=update, devset=folder)
    console.print(summary["summary_line"])
    dev = summary.get("devset") or {}
    for system, table in (dev.get("coverage") or {}).items():  # confidence: coverage vs accuracy (dev set)
        cells = "  ".join(f">={t['threshold']:.1f}: {t['coverage']:.1%} @ {t['accuracy'] or 0:.1%}" for t in table)
        console.print(f"dev set {system} coverage @ category accuracy  {cells}  (abstains below {dev.get('abstain_threshold')})")
    _warn_vanished(summary)
    console.print(f"wrote {out / 'report.json'}, {out / 'report.md'} and {out / 'report.html'}")
    if fit_calibration is not None:
        import json

        from schedmate.agents.failure.confidence import Calibration

        outcomes = [(str(k), bool(ok)) for k, ok in dev.get("calibration_outcomes") or []]
        if not outcomes:
            raise BadInput("--fit-calibration needs the real dev set's failed items (none were scored)")
        table = Calibration.fit(outcomes, threshold=float(dev.get("abstain_threshold") or 0.4),
                                fitted_on=f"{folder} ({len(outcomes)} failed items, locator+learned)")
        try:
            fit_calibration.write_text(json.dumps(table.to_json(), indent=1) + "\n", encoding="utf-8")
        except OSError as exc:
            raise BadInput(f"--fit-calibration {fit_calibration}: cannot write ({exc.strerror or exc})") from None
        console.print(f"wrote the calibration table fitted on {len(outcomes)} items to {fit_calibration}")


@eval_app.command("metrics")
def eval_metrics(
    data: EvalData,
    out: EvalOut = Path("results/eval"),
    llm: EvalLLM = False,
    limit: EvalLimit = None,
    devset: Annotated[Path | None, typer.Option(help="Real progress dev set (labels*.jsonl + logs/) reported beside the "
                                                     "generated corpus [default: evals/devset/progress].")] = None,
    no_devset: Annotated[bool, typer.Option("--no-devset", help="Skip the real dev set.")] = False,
) -> None:
    """Metric Tracker: step time on the generated corpus (success ±20%, RMSRE, clean/noisy halves) and on the
    real dev set (last step time / loss / throughput within ±10%), side by side, beside the baselines
    (regex only, last lines; with --llm also the tracker's LLM fallback and the pure-LLM baseline)."""
    from contextlib import ExitStack

    from schedmate.evals.harness import run_metrics_eval
    from schedmate.evals.harness.devset_metrics import DEFAULT_FOLDER, run_devset_metrics, write_devset_report

    _check_corpus(data, out, limit)
    if devset is not None and not devset.is_dir():
        raise BadInput(f"--devset {devset} is not a folder")
    folder = None if no_devset else (devset or DEFAULT_FOLDER)
    progress, update = _count_progress("scoring metrics")
    with ExitStack() as stack, progress:
        model = None
        if llm:
            from schedmate.llm import LLMConfig, open_chat_model

            # a 1.2k-token window takes ~45 s to read on a busy 2-core CPU: no short timeouts, no retries
            model = stack.enter_context(open_chat_model(LLMConfig(timeout_s=CLI_LLM_TIMEOUT_S, max_retries=0)))
        summary = run_metrics_eval(data, out, llm=model, limit=limit, progress=update)
        real = run_devset_metrics(folder, llm=model, progress=update, limit=limit) if folder is not None else None
    console.print(summary["summary_line"])
    _warn_vanished(summary)
    console.print(f"wrote {out / 'report.json'}, {out / 'report.md'} and {out / 'report.html'}")
    if real is None:
        return
    line = write_devset_report(out, *real)
    console.print(line)
    console.print(f"wrote {out / 'devset_metrics.json'} and {out / 'devset_metrics.md'}")
    gen, dev = summary["systems"], real[0]["systems"]
    rows: list[tuple[str, str | None, str | None]] = [
        ("tracker" + (" (regex + LLM fallback)" if llm else " (regex fast path)"), "tracker", "tracker" if llm else "regex"),
            ("regex-only (plain mean)", "regex-only", None), ("last-lines", "last-lines", "last-lines")]  # fmt: skip
    if llm:
        rows += [("regex fast path", None, "regex"), ("pure-llm", "pure-llm", "pure-llm"),
                 ("pure-llm+validation", None, "pure-llm+validation")]  # fmt: skip
    table = Table(title="Metric Tracker: generated corpus vs real dev set")
    for col in ("system", "generated: success ±20%", "generated: RMSRE", "real: step time ±10%", "real: loss ±10%",
                "real: throughput ±10%", "real: no signal"):  # fmt: skip
        table.add_column(col)

    def pct(x: float | None) -> str:
        return "–" if x is None else f"{100 * x:.1f}%"

    for label, g_name, d_name in rows:
        g = gen.get(g_name, {}).get("all", {}) if g_name else {}
        d = dev.get(d_name, {}).get("all") if d_name else None
        table.add_row(
            label, pct(g.get("success_rate")), "–" if g.get("rmsre") is None else f"{g['rmsre']:.3f}",
            pct(d["step_time"]["accuracy"]) if d else "–", pct(d["loss"]["accuracy"]) if d else "–",
            pct(d["throughput"]["accuracy"]) if d else "–", str(d["no_signal"]) if d else "–",
        )  # fmt: skip
    console.print(table)


@contextmanager
def _store_errors(what: str) -> Iterator[None]:
    """Redis failing mid-run (killed, out of memory) is one line naming the server, not a traceback; the
    evals start their own temporary redis-server, so the hint is to rerun, not `schedmate redis start`."""
    import redis

    from schedmate.embeddings.redis_server import RedisServerError
    from schedmate.embeddings.store import StoreError

    try:
        yield
    except RedisServerError as exc:
        raise DependencyUnavailable(f"{what} could not start its temporary redis-server: {exc}") from None
    except (StoreError, redis.ConnectionError, redis.TimeoutError) as exc:
        cause = str(exc).split("; is it running?")[0]
        raise DependencyUnavailable(
            f"{what} lost its temporary Redis mid-run ({cause}); the server was killed or ran out of memory "
            f"(see `dmesg`), nothing of this run was written", hint="run the command again") from None


@eval_app.command("advisor")
def eval_advisor(
    data: Annotated[Path, typer.Option("--data", help="A job corpus (manifest.jsonl), or a folder to generate one in.")],
    out: EvalOut = Path("results/eval-advisor"),
    history: Annotated[int, typer.Option(help="Historical jobs (when generating).")] = 500,
    new: Annotated[int, typer.Option(help="New jobs to advise.")] = 200,
    seed: Annotated[int | None, typer.Option(help="Corpus seed (when generating; never the dev seed).")] = None,
    threshold: Annotated[float | None, typer.Option(help="Cosine threshold T (default: chosen on the dev split).")] = None,
    agent_jobs: Annotated[int, typer.Option(help="Also run the local LLM agent on this many new jobs.")] = 0,
    threads: Annotated[str, typer.Option(help="Concurrent request counts for the throughput figure.")] = "1,2,4",
    users_mode: Annotated[str, typer.Option(help="Generated corpora: family (users own experiments) or shared "
                                                 "(one codebase, many users).")] = "family",
    rate_point: Annotated[str, typer.Option(help="Rate x plan point estimate: mean (expected duration), p50, plan "
                                                 "(full run), or dev (chosen on the dev split).")] = "mean",
    devset: Annotated[Path | None, typer.Option(help="Hand-written repositories with true metadata (jobs.jsonl); "
                                                    "'' to skip.")] = Path(__file__).resolve().parents[1] / "evals" / "devset" / "repos",
) -> None:
    """Scheduling Advisor: duration / SM-util error CDFs, within-100% share, field accuracy, baselines,
    and the extractor on the real development set beside the generated corpus."""
    from schedmate.evals.harness.advisor import AdvisorEvalConfig, run_advisor_eval, summary_line

    llm_cfg = agent_cfg = None
    if agent_jobs:
        from schedmate.agents.advisor.agent import AgentConfig
        from schedmate.llm import LLMConfig

        llm_cfg = LLMConfig(max_tokens=256, timeout_s=CLI_LLM_TIMEOUT_S, ctx=8192)
        agent_cfg = AgentConfig(timeout_s=CLI_LLM_TIMEOUT_S, max_tool_calls=3, max_model_calls=6)
    progress, update = _count_progress("advisor eval")
    steps = 0

    def say(msg: str) -> None:
        nonlocal steps
        steps += 1
        update(steps, None)
        progress.console.log(msg)

    from .cli_checks import check_count, check_out_dir

    kwargs: dict[str, Any] = {"seed": seed} if seed is not None else {}
    try:
        [int(t) for t in threads.split(",") if t]
    except ValueError:
        raise BadInput(f"--threads must be comma-separated counts such as 1,2,4, not {threads!r}") from None
    cfg = AdvisorEvalConfig(n_history=history, n_new=new, threshold=threshold, agent_jobs=agent_jobs, llm=llm_cfg,
                            agent=agent_cfg, threads=tuple(int(t) for t in threads.split(",") if t), progress=say,
                            users_mode=users_mode, rate_point=rate_point, **kwargs)
    if rate_point not in ("mean", "p50", "plan", "dev"):
        raise BadInput(f"--rate-point must be mean, p50, plan or dev, not {rate_point!r}")
    with user_errors():
        check_out_dir(out)
        check_count(history, "--history", maximum=1_000_000)
        check_count(new, "--new", maximum=1_000_000)
        check_count(agent_jobs, "--agent-jobs", minimum=0, maximum=new)
        if not cfg.threads or min(cfg.threads) < 1:
            raise BadInput(f"--threads must be positive counts such as 1,2,4, not {threads!r}")
    with progress, _store_errors("the advisor eval"):
        report = run_advisor_eval(data, out, cfg)
    console.print(summary_line(report))
    console.print(f"wrote {out}/advisor_eval.json and advisor_eval.md")
    if devset is not None and any(devset.glob("jobs*.jsonl")):
        from schedmate.evals.harness.devset_advisor import score_devset_repos

        try:
            real = score_devset_repos(devset)
        except BadInput as exc:  # a malformed label line: the report above is already written
            raise BadInput(f"dev set not scored: {exc.one_line()}") from None
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "devset_advisor.json").write_text(json.dumps(real, indent=2, default=str))
        console.print(f"real dev set ({real['items']} launch commands over {real['repos']} hand-written repositories): "
                      f"fields right {real['fields_right']:.1%}, all fields right on {real['jobs_all_right']:.1%} of jobs "
                      f"(generated corpus above); per field {real['field_accuracy']}; per batch "
                      + ", ".join(f"{k} {v['fields_right']:.1%} of fields ({v['items']} commands)" for k, v in real.get("by_split", {}).items())
                      + f" -> {out}/devset_advisor.json")
        if real.get("confidence"):
            from schedmate.evals.harness.devset_advisor import format_confidence_table

            console.print("extractor confidence, coverage vs accuracy on the dev set:\n" + format_confidence_table(real),
                          markup=False)


experiment_app = typer.Typer(
    help="The paper's case studies: a reference scheduler with and without SchedMate, real agents in the loop.",
    no_args_is_help=True)
app.add_typer(experiment_app, name="experiment")
ExpOut = Annotated[Path | None, typer.Option("--out", help="Output folder (default results/experiment-<name>).")]
ExpSeeds = Annotated[int, typer.Option(help="Seeds (repeats).")]
ExpLLM = Annotated[bool, typer.Option("--llm/--no-llm", help="Run the LLM agents (embedded local model; cached per artefact).")]
ExpLLMModules = Annotated[str, typer.Option("--llm-modules", help="With --llm: which agents use it (advisor,tracker,failure).")]
ExpCache = Annotated[Path | None, typer.Option("--cache-dir", help="Agent-result cache (default <out>/cache).")]
ExpPre = Annotated[bool, typer.Option("--precomputed/--no-precomputed",
                                      help="Save each run's insights under <out>/insights and replay them on reruns.")]
ExpHistory = Annotated[int, typer.Option(help="Prior historical jobs ingested before each run.")]


def _sources(out: Path, llm: bool, cache_dir: Path | None, precomputed: bool, history: int,
             llm_modules: str = "advisor,tracker,failure") -> Any:
    from schedmate.sim.experiments.sources import SemanticSources

    llm_cfg = None
    if llm:
        from schedmate.llm import LLMConfig

        llm_cfg = LLMConfig(max_tokens=256, timeout_s=CLI_LLM_TIMEOUT_S, ctx=8192)
    modules = tuple(m.strip() for m in llm_modules.split(",") if m.strip())
    return SemanticSources(cache_dir=cache_dir or out / "cache", history=history, llm=llm_cfg, llm_modules=modules,
                           precomputed=out / "insights" if precomputed else None)


def _check_experiment(out: Path, seeds: int, *, limit: int | None = None, jobs: int | None = None,
                      gpus: int | None = None, rate: float | None = None,
                      first_seed: int = 0) -> None:
    """The arguments every case study shares, checked before any run (one line, exit 2)."""
    from .cli_checks import MAX_CLUSTER_GPUS, check_count, check_fraction, check_limit, check_out_dir

    with user_errors():
        check_out_dir(out)
        check_count(seeds, "--seeds", maximum=1000)
        check_count(first_seed, "--first-seed", minimum=0, maximum=2**32 - 1000)
        check_limit(limit)
        if jobs is not None:
            check_count(jobs, "--jobs", maximum=10_000_000)
        if gpus is not None:
            check_count(gpus, "--gpus", maximum=MAX_CLUSTER_GPUS)
        if rate is not None:
            check_fraction(rate, "--detection-rate")


def _say() -> Callable[[str], None]:
    return lambda msg: err.log(msg)


@experiment_app.command("lucid")
def experiment_lucid(
    out: ExpOut = None,
    traces: Annotated[str, typer.Option(help="Comma-separated: helios, philly, synthetic.")] = "helios,philly",
    seeds: ExpSeeds = 3,
    jobs: Annotated[int, typer.Option(help="Synthetic trace size.")] = 1000,
    sweep: Annotated[str, typer.Option(help="Detection rates for the sweep ('' for none).")] = "0,0.2,0.4,0.6,0.8,1",
    gpus: Annotated[int | None, typer.Option(help="Fix the cluster size (skip sizing).")] = None,
    arms: Annotated[str | None, typer.Option(help="Comma-separated arms (default: all; e.g. lucid,lucid+sm,tiresias,qssf).")] = None,
    llm: ExpLLM = False,
    llm_modules: ExpLLMModules = "advisor,tracker,failure",
    cache_dir: ExpCache = None,
    precomputed: ExpPre = True,
    history: ExpHistory = 500,
    workloads: Annotated[str, typer.Option(help="artefact: each job runs the workload its code describes; "
                                           "lucid-table: a random single_data.csv row (two workloads per job; comparison only).")] = "artefact",
) -> None:
    """Lucid vs Lucid+SchedMate (bypass profiling, advisor durations, packing cancellation), ablations, sweep."""
    from schedmate.sim.experiments.lucid import run_lucid_experiment

    out = out or Path("results/experiment-lucid")
    _check_experiment(out, seeds, jobs=jobs, gpus=gpus)
    names = [t.strip() for t in traces.split(",") if t.strip()]
    with _sources(out, llm, cache_dir, precomputed, history, llm_modules) as make:
        result = run_lucid_experiment(
            out, make_source=make, source_label=make.label, traces=names, seeds=seeds, n_jobs=jobs,
            sweep=tuple(float(x) for x in sweep.split(",") if x.strip()),
            cluster_gpus={n: gpus for n in names} if gpus else None, progress=_say(),
            arms=[a.strip() for a in arms.split(",")] if arms else None, workloads=workloads)
        console.print(f"agents: {_agent_counts(make.stats())}")
    console.print(str(result))


@experiment_app.command("sia")
def experiment_sia(
    out: ExpOut = None,
    seeds: ExpSeeds = 3,
    workloads: Annotated[str | None, typer.Option(help="Comma-separated workload files under sia/workloads/.")] = None,
    limit: Annotated[int | None, typer.Option(help="First N jobs of each workload.")] = None,
    detection_rate: Annotated[float, typer.Option("--detection-rate", help="Share of jobs SchedMate sees.")] = 1.0,
    t_prof: Annotated[float, typer.Option(help="Seconds of seed profiling per GPU type.")] = 120.0,
    first_seed: Annotated[int, typer.Option(help="Seeds run are first_seed .. first_seed+seeds-1.")] = 0,
    llm: ExpLLM = False,
    llm_modules: ExpLLMModules = "advisor,tracker,failure",
    cache_dir: ExpCache = None,
    precomputed: ExpPre = True,
    history: ExpHistory = 0,
    source: Annotated[str, typer.Option(help="agents (the real agents: reported runs) or rule (same application and "
                                             "batch size, spec §8.2, no agents).")] = "agents",
    newtrace: Annotated[bool, typer.Option("--newtrace", help="Also run newtrace/workload-1.csv (960 jobs).")] = False,
    arms: Annotated[str, typer.Option(help="Comma-separated arms.")] = "sia-fifo,sia,sia+sm",
    t_prof_sweep: Annotated[str, typer.Option(help="e.g. 60,300: extra sia@t / sia+sm@t arms.")] = "",
    jitter: Annotated[float, typer.Option(help="Submit-time jitter U(0, s) per seed.")] = 60.0,
) -> None:
    """Sia vs Sia+SchedMate (bootstrapping from similar jobs) vs a FIFO baseline on Sia's workloads."""
    from schedmate.sim.experiments.sia import (
        DEFAULT_WORKLOADS,
        NEWTRACE,
        SiaExperimentConfig,
        rule_source,
        run_sia_experiment,
    )

    out = out or Path("results/experiment-sia")
    _check_experiment(out, seeds, limit=limit, rate=detection_rate, first_seed=first_seed)
    chosen = tuple(w.strip() for w in workloads.split(",")) if workloads else DEFAULT_WORKLOADS
    cfg = SiaExperimentConfig(
        workloads=chosen + ((NEWTRACE,) if newtrace else ()), seeds=tuple(range(first_seed, first_seed + seeds)),
        arms=tuple(a.strip() for a in arms.split(",") if a.strip()),
        t_prof_sweep=tuple(float(t) for t in t_prof_sweep.split(",") if t.strip()), jitter_s=jitter,
        detection_rate=detection_rate, t_prof=t_prof, limit=limit)
    if source == "rule":
        console.print(str(run_sia_experiment(out, make_source=rule_source, config=cfg, progress=_say())))
        return
    if source != "agents":
        raise BadInput(f"--source must be agents or rule, got {source!r}")
    with _sources(out, llm, cache_dir, precomputed, history, llm_modules) as make:
        result = run_sia_experiment(out, make_source=make, config=cfg, progress=_say())
        console.print(f"agents: {_agent_counts(make.stats())}")
    console.print(str(result))


@experiment_app.command("standalone")
def experiment_standalone(
    out: ExpOut = None,
    trace: Annotated[str, typer.Option(help="acme (Acme-like synthetic, primary), philly (a week of Oct 2017) or "
                                            "synthetic (small Philly-profile smoke trace).")] = "acme",
    seeds: ExpSeeds = 3,
    limit: Annotated[int | None, typer.Option(help="Earliest N jobs of the Philly week.")] = None,
    jobs: Annotated[int, typer.Option(help="Synthetic trace size (acme, synthetic).")] = 2000,
    gpus: Annotated[int | None, typer.Option(help="Fix the cluster size (skip sizing).")] = None,
    arms: Annotated[str | None, typer.Option(help="Comma-separated arms (default: all).")] = None,
    resubmit_delays: Annotated[str, typer.Option(help="No-handler resubmission delays D (s) for the handler sweep "
                                                      "('' for none).")] = "600,1800,3600,14400",
    detection_rates: Annotated[str, typer.Option(help="Detection rates for the handler sweep ('' for none).")] = "0,0.5,1",
    llm: ExpLLM = False,
    llm_modules: ExpLLMModules = "advisor,tracker,failure",
    cache_dir: ExpCache = None,
    precomputed: ExpPre = True,
    history: ExpHistory = 500,
    source: Annotated[str, typer.Option(help="agents (the real agents: reported runs); calibrated (spec §8's "
                                             "knobs, SENSITIVITY ONLY) or null (history fallback only).")] = "agents",
    days: Annotated[float, typer.Option(help="Philly window length (days).")] = 7.0,
    detection_rate: Annotated[float, typer.Option("--detection-rate", help="Share of jobs SchedMate sees "
                                                                            "(headline rows).")] = 1.0,
) -> None:
    """Standalone SchedMate (SJF and SRPT on the 3 most similar jobs, + Failure Handler) vs FIFO, QSSF, Tiresias
    and oracles, with infrastructure hazards, faulty nodes and application errors."""
    from schedmate.sim.experiments.standalone import (
        ARMS,
        FAIL_RATES,
        StandaloneSetup,
        calibrated_source,
        null_source,
        run_standalone_experiment,
    )
    from schedmate.sim.failures import FailureModel

    def floats(text: str) -> list[float]:
        return [float(x) for x in text.split(",") if x.strip()]

    out = out or Path("results/experiment-standalone")
    _check_experiment(out, seeds, limit=limit, jobs=jobs, gpus=gpus, rate=detection_rate)
    chosen = [a.strip() for a in arms.split(",") if a.strip()] if arms else list(ARMS)
    setup = StandaloneSetup(detection_rate=detection_rate, failures=FailureModel(fail_rate=FAIL_RATES.get(trace, 0.305)))
    if source in ("calibrated", "null"):
        make_other, label = ((calibrated_source(), "calibrated knobs (SENSITIVITY ONLY, not the real modules)")
                             if source == "calibrated" else (null_source, "null (history fallback only)"))
        result = run_standalone_experiment(out, make_source=make_other, source_label=label, trace=trace, days=days,
                                           limit=limit, n_jobs=jobs, seeds=seeds, gpus=gpus, arms=chosen, setup=setup,
                                           resubmit_delays=floats(resubmit_delays),
                                           detection_rates=floats(detection_rates), progress=_say())
        console.print(str(result))
        return
    if source != "agents":
        raise BadInput(f"--source must be agents, calibrated or null, got {source!r}")
    with _sources(out, llm, cache_dir, precomputed, history, llm_modules) as make:
        result = run_standalone_experiment(out, make_source=make, source_label=make.label, trace=trace, days=days,
                                           limit=limit, n_jobs=jobs, seeds=seeds, gpus=gpus, arms=chosen, setup=setup,
                                           resubmit_delays=floats(resubmit_delays),
                                           detection_rates=floats(detection_rates), progress=_say())
        console.print(f"agents: {_agent_counts(make.stats())}")
    console.print(str(result))


@experiment_app.command("slurm")
def experiment_slurm(
    out: ExpOut = None,
    trace: Annotated[str, typer.Option(help="Comma-separated: acme (Acme-like synthetic), philly (first --limit jobs "
                                            "of 2-8 Oct 2017), synthetic (small smoke trace).")] = "acme",
    seeds: ExpSeeds = 3,
    jobs: Annotated[int, typer.Option(help="Synthetic trace size (acme, synthetic).")] = 2000,
    limit: Annotated[int | None, typer.Option(help="Earliest N jobs of the Philly week.")] = 2000,
    gpus: Annotated[int | None, typer.Option(help="Fix the cluster size (skip sizing).")] = None,
    arms: Annotated[str | None, typer.Option(help="Comma-separated arms (default: users, default, schedmate, "
                                                  "schedmate+extend, oracle).")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="300 jobs per trace (smoke runs and tests).")] = False,
    cache_dir: ExpCache = None,
    precomputed: ExpPre = True,
    history: ExpHistory = 500,
) -> None:
    """Slurm time limits under EASY backfilling: users' requests vs the partition default vs SchedMate's limits
    (with and without progress-aware extension) vs the oracle; jobs killed by a SchedMate limit and GPU-hours lost."""
    from schedmate.sim.experiments.slurm import ARMS, TRACES, run_slurm_experiment

    out = out or Path("results/experiment-slurm")
    _check_experiment(out, seeds, limit=limit, jobs=jobs, gpus=gpus)
    n = 300 if quick else jobs
    chosen = [a.strip() for a in arms.split(",") if a.strip()] if arms else list(ARMS)
    names = [t.strip() for t in trace.split(",") if t.strip()]
    for name, known, what in [*((a, ARMS, "arm") for a in chosen), *((t, TRACES, "trace") for t in names)]:
        if name not in known:
            raise BadInput(f"unknown {what} {name!r}; choose from {', '.join(known)}")
    with _sources(out, False, cache_dir, precomputed, history) as make:
        result = run_slurm_experiment(out, make_source=make, source_label=make.label, traces=names, seeds=seeds,
                                      n_jobs=n, limit=300 if quick else limit, gpus=gpus, arms=chosen,
                                      progress=_say())
        console.print(f"agents: {_agent_counts(make.stats())}")
    console.print(str(result), markup=False, highlight=False)


@experiment_app.command("value-curve")
def experiment_value_curve(
    case: Annotated[str, typer.Option(help="standalone, lucid or sia.")] = "standalone",
    out: ExpOut = None,
    seeds: ExpSeeds = 1,
    quick: Annotated[bool, typer.Option("--quick", help="Synthetic trace, few jobs, 4 sigmas x 2 coverages.")] = False,
    real: Annotated[Path | None, typer.Option(help="The case study's JSON for the real agents' point "
                                                   "(default results/experiment-<case>/<case>.json).")] = None,
) -> None:
    """Mean JCT against estimate noise (sigma) and coverage, on a noisy oracle (SENSITIVITY ONLY), beside the
    best baseline, the oracle and the real agents' point: value_curve.json/.csv/.png."""
    from schedmate.sim.experiments.value_curve import CASES, run_value_curve

    if case not in CASES:
        raise BadInput(f"--case must be one of {', '.join(CASES)}, got {case!r}")
    out = out or Path(f"results/value-curve-{case}")
    _check_experiment(out, seeds)
    doc = run_value_curve(case, out, seeds=seeds, quick=quick, real=real, progress=_say())
    console.print(doc["summary"], markup=False)
    console.print(f"wrote {out / 'value_curve.json'}, value_curve.csv, value_curve.png ({doc['wall_seconds']} s)")


RefQuick = Annotated[bool, typer.Option("--quick", help="The short version of the check (under 3 minutes on 2 cores).")]


def _criteria_line(doc: dict[str, Any]) -> str:
    crit = doc.get("criteria") or {}
    passed = sum(1 for c in crit.values() if isinstance(c, dict) and c.get("pass"))
    failed = [k for k, c in crit.items() if isinstance(c, dict) and not c.get("pass")]
    return f"spec criteria passed {passed}/{len(crit)}" + (f"; not met: {', '.join(failed)}" if failed else "")


RayOpt = Annotated[str | None, typer.Option(
    "--ray", help="Run the independent (seed, point) runs as Ray tasks: 'local' starts a cluster here, else a Ray "
                  "address. Same answers as without.", show_default=False)]


@contextmanager
def ray_points(address: str | None) -> Iterator[Any]:
    """A `map_points` over the Ray cluster at `address` for the block (None: run here, in order)."""
    if not address:
        yield None
        return
    from contextlib import ExitStack

    from schedmate.deploy.ray.cluster import RayConfig, ray_cluster
    from schedmate.deploy.ray.sweep import RayMap

    with ExitStack() as stack:
        stack.enter_context(ray_cluster(RayConfig(address, gpus=0)))  # RayUnavailable: a DependencyUnavailable
        yield RayMap()


@experiment_app.command("ares")
def experiment_ares(
    out: ExpOut = None, seeds: ExpSeeds = 3, first_seed: int = 0, quick: RefQuick = False, ray_address: RayOpt = None,
    jobs: Annotated[int | None, typer.Option(help="Jobs per trace (default 160).")] = None,
    gpus: Annotated[int | None, typer.Option(help="Cluster GPUs, a multiple of 4 (default 64).")] = None,
) -> None:
    """Ares (elastic fair queuing) against the spec's baselines: JCT, finish-time fairness, criteria."""
    from schedmate.schedulers.ares.experiment import AresExperimentConfig, run_ares_experiment

    out = out or Path("results/experiment-ares")
    _check_experiment(out, seeds, first_seed=first_seed, jobs=jobs, gpus=gpus)
    cfg = AresExperimentConfig.quick() if quick else AresExperimentConfig()
    cfg = replace(cfg, seeds=tuple(range(first_seed, first_seed + seeds)))
    if jobs:
        cfg = replace(cfg, n_jobs=jobs)
    if gpus:
        cfg = replace(cfg, gpus=gpus)
    with ray_points(ray_address) as map_points:
        result = run_ares_experiment(out, cfg, progress=lambda m: console.log(m), map_points=map_points)
    console.print(str(result))
    console.print(f"{_criteria_line(json.loads((out / 'ares.json').read_text()))}; wrote {out}/ares.json")


@experiment_app.command("arnold")
def experiment_arnold(out: ExpOut = None, seeds: ExpSeeds = 3, first_seed: int = 0, quick: RefQuick = False) -> None:
    """Arnold (topology-aware placement for LLM pre-training) against the spec's placers and policies."""
    from schedmate.schedulers.arnold.experiment import run_arnold_experiment

    out = out or Path("results/experiment-arnold")
    _check_experiment(out, seeds, first_seed=first_seed)
    doc = run_arnold_experiment(out, tuple(range(first_seed, first_seed + seeds)), quick)
    console.print(f"{_criteria_line(doc)}; wrote {out}/arnold.json")


@experiment_app.command("arena")
def experiment_arena(
    out: ExpOut = None, seeds: ExpSeeds = 3, first_seed: int = 0, quick: RefQuick = False, ray_address: RayOpt = None,
) -> None:
    """Arena (co-designed scheduling and adaptive parallelism) against FCFS, Gavel, EF-LS and Sia."""
    from schedmate.schedulers.arena.experiment import run_arena_experiment

    out = out or Path("results/experiment-arena")
    _check_experiment(out, seeds, first_seed=first_seed)
    with ray_points(ray_address) as map_points:
        doc = run_arena_experiment(out, tuple(range(first_seed, first_seed + seeds)), quick, map_points=map_points)
    console.print(f"{_criteria_line(doc)}; wrote {out}/arena.json")


@experiment_app.command("suika")
def experiment_suika(
    out: ExpOut = None, seeds: ExpSeeds = 3, first_seed: int = 0, quick: RefQuick = False, ray_address: RayOpt = None,
    half_trace: Annotated[bool, typer.Option(
        "--half-trace", help="Replay the busiest 4 h (60 jobs) instead of §5.2's 8 h: faster, but not the trace the spec's bands are for.",
    )] = False,
) -> None:
    """Suika (incremental rescheduling of 3D-parallel jobs) against Suika-DP, Sia, Rubick and non-elastic FIFO.

    `--quick` skips the sweeps and keeps §5.2's trace, so its criteria are the spec's."""
    from schedmate.schedulers.suika.experiment import run_suika_experiment

    out = out or Path("results/experiment-suika")
    _check_experiment(out, seeds, first_seed=first_seed)
    with ray_points(ray_address) as map_points:
        doc = run_suika_experiment(out, tuple(range(first_seed, first_seed + seeds)), quick, half_trace=half_trace,
                                   map_points=map_points)
    console.print(f"{_criteria_line(doc)}; wrote {out}/suika.json")


register_experiment_commands(experiment_app)  # the adapter experiments and the fail-slow check (cli_experiment.py)


def _agent_counts(stats: dict[str, Any]) -> str:
    keys = ("jobs", "distinct_artefacts", "agent_runs", "cache_hits", "advise_matched", "advise_unmatched",
            "track_runs", "diagnose_runs", "llm_calls")
    return ", ".join(f"{k} {stats[k]}" for k in keys if k in stats)


@app.command("data-dir")
def data_dir_cmd() -> None:
    """Print where the shared reference data is looked for."""
    path = shared_data_dir()
    console.print(str(path) if path else "not found (set SCHEDMATE_SHARED_DATA)")


if __name__ == "__main__":
    app()
