"""Fail-slow detection evaluation, registered under `schedmate eval`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from schedmate.errors import BadInput

DEFAULT_SEED = 1  # scoring seed; the detector was tuned on synthetic.failslow.DEV_SEED, never this one


def eval_failslow(
    data: Annotated[Path, typer.Option("--data", help="A fail-slow episode set (labels.jsonl + logs/), or a folder "
                                                      "to generate one in.")],
    out: Annotated[Path, typer.Option("--out", help="Where report.json goes.")] = Path("results/eval-failslow"),
    seed: Annotated[int, typer.Option(help="Generation seed (when generating; not the dev seed).")] = DEFAULT_SEED,
    slow: Annotated[int, typer.Option(help="Slow episodes (when generating).", min=1)] = 120,
    healthy: Annotated[int, typer.Option(help="Healthy episodes (when generating).", min=1)] = 60,
    devset: Annotated[Path | None, typer.Option(help="Real progress logs used as negatives [default: "
                                                     "evals/devset/progress].")] = None,
    no_devset: Annotated[bool, typer.Option("--no-devset", help="Skip the real dev set.")] = False,
) -> None:
    """Fail-slow detector vs the fixed-threshold baseline: detection rate, false positives per 1,000
    job-hours, detection delay (iterations, seconds), rank-localisation accuracy."""
    from schedmate.cli import user_errors
    from schedmate.cli_checks import check_count
    from schedmate.evals.harness.failslow import DEFAULT_DEVSET, run_failslow_eval
    from schedmate.synthetic.failslow import DEV_SEED, GenConfig, generate_set

    console, err = Console(), Console(stderr=True)
    check_count(seed, "--seed", minimum=0, maximum=2**32 - 1)
    if data.exists() and not (data / "labels.jsonl").is_file():
        raise BadInput(f"{data} exists but holds no labels.jsonl", hint="give an episode set or a new folder")
    if not data.exists():
        if seed == DEV_SEED:
            err.print(f"note: seed {seed} is the dev seed the detector was tuned on; its scores are optimistic",
                      markup=False)
        generate_set(data, seed, GenConfig(n_slow=slow, n_healthy=healthy))
        console.print(f"generated {slow + healthy} episodes (seed {seed}) in {data}", markup=False)
    if devset is not None and not devset.is_dir():
        raise BadInput(f"--devset {devset} is not a folder")
    with user_errors():  # a bad label line is a BadInput naming it; an unreadable log one line too
        report = run_failslow_eval(data, out, devset=None if no_devset else (devset or DEFAULT_DEVSET))
    console.print(report["summary_line"], markup=False, highlight=False)
    console.print(f"wrote {out / 'report.json'}", markup=False)


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add this area's commands to the `schedmate` app (top level) or to `schedmate eval`."""
    eval_app.command("failslow")(eval_failslow)
