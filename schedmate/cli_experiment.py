"""`schedmate experiment adapter --policy <name>`, `<policy>-adapter`, `failslow` and `sia-reference`:
any registered adapter on the realistic world, the SchedMate adapters' case studies on the reference
policies (Ares, Arnold, Arena, Suika), the fail-slow check, and Sia alone.

These were reachable only through `python -m` (`schedmate.sim.experiments.<name>`,
`schedmate.schedulers.sia`); each is now a
subcommand of `schedmate experiment`, with the same options and defaults, registered on the
experiment group by `register(experiment_app)` (`schedmate.cli`). `--seeds N --first-seed S`
runs the seeds S..S+N-1 (the old `--seeds 0,1,2` is `--seeds 3`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = ["register"]

Out = Annotated[Path | None, typer.Option("--out", help="Output folder (default results/experiment-<name>).")]
Seeds = Annotated[int, typer.Option(help="Seeds (repeats), from --first-seed on.")]
FirstSeed = Annotated[int, typer.Option(help="The first seed.")]
Rate = Annotated[float, typer.Option(help="Share of jobs SchedMate sees (detection rate).")]
History = Annotated[int, typer.Option(help="Prior historical jobs ingested before each run.")]
Pre = Annotated[bool, typer.Option("--precomputed/--no-precomputed",
                                   help="Save each run's insights under <out>/insights and replay them on reruns.")]
Source = Annotated[str, typer.Option(help="agents: SemanticSources (reported); declared-model: reference matching "
                                          "(an upper bound, Arena and Suika only).")]


def _seeds(first: int, n: int) -> tuple[int, ...]:
    if n < 1:
        raise typer.BadParameter(f"--seeds must be >= 1, got {n}")
    return tuple(range(first, first + n))


def _say(msg: str) -> None:
    typer.echo(msg, err=True)


def _agents(out: Path, history: int, precomputed: bool) -> Any:
    from schedmate.sim.experiments.sources import SemanticSources

    return SemanticSources(cache_dir=out / "cache", history=history,
                           precomputed=out / "insights" if precomputed else None)


def _run_with_source(out: Path, source: str, history: int, precomputed: bool,
                     run: Callable[[Any], Any]) -> None:
    """`run(make_source)` with the agents (closed afterwards) or the declared-model reference."""
    if source == "declared-model":
        from schedmate.sim.experiments.arena import DeclaredModelMatches

        result = run(DeclaredModelMatches.make)
    elif source == "agents":
        with _agents(out, history, precomputed) as make:
            result = run(make)
    else:
        raise typer.BadParameter(f"--source must be agents or declared-model, got {source!r}")
    typer.echo(result.summary)


def register(app: typer.Typer) -> None:
    """Add the adapter experiments and the fail-slow check to the `experiment` group."""

    @app.command("adapter")
    def adapter(
        policy: Annotated[str, typer.Option(help="A policy with a registered SchedMate adapter "
                                                 "(adapters/<policy>.py declares ADAPTER).")],
        out: Out = None, seeds: Seeds = 1, first_seed: FirstSeed = 0,
        trace: Annotated[str, typer.Option(help="The world's trace: synthetic, helios or philly.")] = "synthetic",
        jobs: Annotated[int, typer.Option(help="Jobs of the synthetic trace.", min=1)] = 120,
        gpus: Annotated[int, typer.Option(help="Cluster GPUs, where the policy's world brings no cluster of its own.",
                                          min=8)] = 32,
        detection_rate: Rate = 1.0, history: History = 500, precomputed: Pre = True,
    ) -> None:
        """Any registered policy with and without its SchedMate adapter on the realistic world (sim/)."""
        from schedmate.adapters.registry import adapter_for
        from schedmate.sim.experiments.adapter import AdapterArmConfig, run_adapter_experiment

        spec = adapter_for(policy)  # an unknown name is one line before any agent loads
        out = out or Path(f"results/experiment-adapter-{spec.policy}")
        cfg = AdapterArmConfig(policy=spec.policy, trace=trace, seeds=_seeds(first_seed, seeds), n_jobs=jobs, gpus=gpus,
                               detection_rate=detection_rate)
        with _agents(out, history, precomputed) as make:
            result = run_adapter_experiment(out, make_source=make, config=cfg, adapter=spec, progress=_say,
                                            source_label=make.label)
        typer.echo(result.summary)

    @app.command("ares-adapter")
    def ares_adapter(
        out: Out = None, seeds: Seeds = 3, first_seed: FirstSeed = 0,
        quick: Annotated[bool, typer.Option("--quick", help="rho = 1 only, no plots.")] = False,
        rhos: Annotated[str | None, typer.Option(help="Offered loads (default 1,2; quick: 1).")] = None,
        user_share: Annotated[float, typer.Option(help="Share of users who give a job length.")] = 0.3,
        user_sigma: Annotated[float, typer.Option(help="Log-normal noise of the users' lengths.")] = 0.0,
        early_stops: Annotated[str, typer.Option(help="Whose early-stop rates the world draws (Acme's clusters: "
                                                      "philly, helios, seren, kalos), or none.")] = "philly",
        detection_rate: Rate = 1.0, history: History = 500, precomputed: Pre = True,
    ) -> None:
        """Ares with and without SchedMate's advisor lengths (the adapter on Ares), in the simulated world."""
        from schedmate.sim.experiments.ares import EARLY_STOPS, AresAdapterConfig, run_ares_adapter_experiment

        if early_stops not in EARLY_STOPS:
            raise typer.BadParameter(f"--early-stops must be one of {', '.join(EARLY_STOPS)}, got {early_stops!r}")

        out = out or Path("results/experiment-ares-adapter")
        base = AresAdapterConfig.quick() if quick else AresAdapterConfig()
        cfg = replace(base, seeds=_seeds(first_seed, seeds), user_share=user_share, user_sigma=user_sigma,
                      detection_rate=detection_rate, early_stops=early_stops,
                      rhos=tuple(float(r) for r in rhos.split(",")) if rhos else base.rhos)
        with _agents(out, history, precomputed) as make:
            result = run_ares_adapter_experiment(out, make_source=make, config=cfg, progress=_say)
        typer.echo(result.summary)

    @app.command("arnold-adapter")
    def arnold_adapter(
        out: Out = None, seeds: Seeds = 3, first_seed: FirstSeed = 0,
        quick: Annotated[bool, typer.Option("--quick", help="A 12 h span with 3 LPJs, no plots.")] = False,
        detection_rate: Rate = 1.0,
        infra_share: Annotated[float | None, typer.Option(help="Infrastructure share of failures "
                                                                "(default: the failure model's).")] = None,
    ) -> None:
        """Arnold with and without the Failure Handler's diagnoses (the adapter on Arnold)."""
        from schedmate.sim.experiments.arnold import (
            ArnoldAdapterConfig,
            DiagnosisSources,
            run_arnold_adapter_experiment,
        )

        out = out or Path("results/experiment-arnold-adapter")
        base = ArnoldAdapterConfig.quick() if quick else ArnoldAdapterConfig()
        failures = base.failures if infra_share is None else replace(base.failures, infra_share=infra_share)
        cfg = replace(base, seeds=_seeds(first_seed, seeds), detection_rate=detection_rate, failures=failures)
        with DiagnosisSources(cache_dir=out / "cache") as make:
            result = run_arnold_adapter_experiment(out, make_source=make, config=cfg, progress=_say)
        typer.echo(result.summary)

    @app.command("arena-adapter")
    def arena_adapter(
        out: Out = None, seeds: Seeds = 3, first_seed: FirstSeed = 0,
        quick: Annotated[bool, typer.Option("--quick", help="R2 only, no plots.")] = False,
        clusters: Annotated[str | None, typer.Option(help="Comma-separated clusters, e.g. R2,R1 (quick: R2).")] = None,
        jobs: Annotated[int, typer.Option(help="Jobs per trace.")] = 240,
        load: Annotated[float, typer.Option(help="Offered load.")] = 1.3,
        detection_rate: Rate = 1.0, history: History = 500, precomputed: Pre = True, source: Source = "agents",
    ) -> None:
        """Arena with and without SchedMate's similar jobs (the adapter on Arena)."""
        from schedmate.sim.experiments.arena import ArenaAdapterConfig, run_arena_adapter_experiment

        out = out or Path("results/experiment-arena-adapter")
        base = ArenaAdapterConfig.quick() if quick else ArenaAdapterConfig()
        cfg = replace(base, seeds=_seeds(first_seed, seeds), n_jobs=jobs, load=load, detection_rate=detection_rate,
                      clusters=tuple(clusters.split(",")) if clusters else base.clusters)
        _run_with_source(out, source, history, precomputed,
                         lambda make: run_arena_adapter_experiment(out, make_source=make, config=cfg, progress=_say))

    @app.command("suika-adapter")
    def suika_adapter(
        out: Out = None, seeds: Seeds = 3, first_seed: FirstSeed = 0,
        quick: Annotated[bool, typer.Option("--quick", help="The busiest 4 h (60 jobs), no plots.")] = False,
        misfit_sigma: Annotated[float, typer.Option(help="Log-normal misfit of the declared shapes.")] = 0.4,
        detection_rate: Rate = 1.0, history: History = 500, precomputed: Pre = True, source: Source = "agents",
    ) -> None:
        """Suika with and without SchedMate's similar jobs (the adapter on Suika)."""
        from schedmate.sim.experiments.suika import SuikaAdapterConfig, run_suika_adapter_experiment

        out = out or Path("results/experiment-suika-adapter")
        base = SuikaAdapterConfig.quick() if quick else SuikaAdapterConfig()
        cfg = replace(base, seeds=_seeds(first_seed, seeds), misfit_sigma=misfit_sigma, detection_rate=detection_rate)
        _run_with_source(out, source, history, precomputed,
                         lambda make: run_suika_adapter_experiment(out, make_source=make, config=cfg, progress=_say))

    @app.command("failslow")
    def failslow(
        out: Out = None, seeds: Annotated[int, typer.Option(help="Seeds (0..N-1).")] = 3,
        jobs: Annotated[int, typer.Option(help="Jobs per seed.")] = 400,
        nodes: Annotated[int, typer.Option(help="8-GPU nodes.")] = 8,
    ) -> None:
        """Fail-slow: SJF with and without the detector, on degraded nodes (failslow_experiment.json)."""
        from schedmate.sim.experiments.failslow import run_experiment

        _seeds(0, seeds)
        out = out or Path("results/experiment-failslow")
        typer.echo(run_experiment(out, seeds=seeds, jobs=jobs, nodes=nodes)["summary_line"])

    @app.command("sia-reference")
    def sia_reference(
        workloads: Annotated[list[str], typer.Argument(help="Workload files (relative to <shared data>/sia/workloads "
                                                            "unless they exist as given).")],
        policies: Annotated[str, typer.Option(help="Comma-separated: sia, sia-fifo, sia-fifo+bf.")] = "sia,sia-fifo",
        limit: Annotated[int | None, typer.Option(help="First N jobs of each workload.")] = None,
        cluster: Annotated[str | None, typer.Option(help="Cluster spec (default Sia's 64 GPUs of 3 types).")] = None,
        profile_seconds: Annotated[float, typer.Option(help="Sia's profiling seconds per GPU type.")] = 0.0,
        json_out: Annotated[Path | None, typer.Option("--json", help="Write the rows as JSON here.")] = None,
    ) -> None:
        """Sia and its FIFO baseline alone on Sia workload files: mean/p99 JCT, makespan, wall time."""
        import json

        from schedmate.schedulers.sia.profiles import SIA_CLUSTER
        from schedmate.schedulers.sia.reference import run_reference

        rows = run_reference(workloads, policies=[p for p in policies.split(",") if p.strip()], limit=limit,
                             cluster=cluster or SIA_CLUSTER, profile_seconds=profile_seconds, say=typer.echo)
        if json_out is not None:
            json_out.write_text(json.dumps(rows, indent=2))
