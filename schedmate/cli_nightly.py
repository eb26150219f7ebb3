"""Nightly evaluation suites (evals/nightly/), registered under `schedmate eval`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add this area's commands to the `schedmate` app (top level) or to `schedmate eval`."""
    eval_app.command("nightly")(nightly)


def nightly(
    data: Annotated[Path, typer.Option("--data", help="Labelled log corpus (labels.jsonl + logs/); generated here when "
                                                      "absent. Advisor job corpora are generated beside it.")],
    out: Annotated[Path, typer.Option("--out", help="Report folder: report.html, nightly.json, history.jsonl.")],
    config: Annotated[Path | None, typer.Option("--config", help="Thresholds YAML (default: evals/nightly/thresholds.yaml).")] = None,
    history: Annotated[Path | None, typer.Option("--history", help="History file (default: OUT/history.jsonl).")] = None,
    pushgateway: Annotated[str | None, typer.Option("--pushgateway", help="Prometheus Pushgateway URL for headline figures.")] = None,
    otlp: Annotated[bool, typer.Option("--otlp", help="Also export over OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT or --otlp-endpoint).")] = False,
    otlp_endpoint: Annotated[str | None, typer.Option("--otlp-endpoint", help="OTLP/HTTP base URL, e.g. http://collector:4318.")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="Small generated corpora (failed logs only), ~200 Loghub lines per set, no dev sets "
                                                        "(~45 s of CPU: a minute or two on 2 idle cores).")] = False,
    degrade: Annotated[bool, typer.Option("--degrade", help="Deliberately degraded run: each system under test is its weak "
                                                            "stand-in (majority class, last lines, same-user baseline).")] = False,
    devset: Annotated[Path | None, typer.Option("--devset", help="Your labelled logs in the dev-set format (failures/ and "
                                                                 "progress/, see evals/devset/README.md) (default: the "
                                                                 "real dev set; none with --quick).")] = None,
    no_devset: Annotated[bool, typer.Option("--no-devset", help="Skip the dev sets.")] = False,
    suites: Annotated[str, typer.Option(help="Comma-separated suites to run.")] = "failures,tracker,advisor,loghub",
    limit: Annotated[int | None, typer.Option(help="Only the first N logs per suite.")] = None,
) -> None:
    """Nightly regression run: all suites, report with plots, history and trends, thresholds; exit 1 on a regression."""
    from schedmate.cli import console, err, user_errors
    from schedmate.evals.nightly import NightlyConfig, run_nightly

    cfg = NightlyConfig(data=data, out=out, config=config, history=history, quick=quick, degrade=degrade,
                        devset=devset, use_devset=not no_devset, suites=tuple(s.strip() for s in suites.split(",") if s.strip()),
                        limit=limit, pushgateway=pushgateway, otlp=otlp, otlp_endpoint=otlp_endpoint)
    with user_errors(), console.status("nightly evaluation") as status:  # a bad option or file: one line, exit 2
        def say(m: str) -> None:
            status.update(m)
            err.log(m)

        run = run_nightly(cfg, say=say)
    rec = run.record
    figs = ", ".join(f"{k} {v:.3g}" for k, v in rec["metrics"].items() if v is not None)
    console.print(f"nightly {rec['run_id']}: {'PASS' if run.passed else 'REGRESSION'} "
                  f"({len(run.verdict.checks)} guards, {run.verdict.history_runs} earlier runs) | {figs}")
    for line in rec["regressions"]:
        console.print(f"[red]regression:[/] {line}")
    for e in run.export_errors:
        err.print(f"[yellow]warning:[/] {e}")
    console.print(f"wrote {run.report}")
    if not run.passed:
        raise typer.Exit(code=1)
