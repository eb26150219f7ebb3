"""`schedmate simulate` end to end: engine, metrics and outputs (CSV, JSON, plots) on a full trace.

Replays the Helios-Venus-derived trace (125,303 jobs) under FIFO on 1,080 GPUs, as the engine
comparison with Lucid's simulator did, through the same steps as `compare_policies` (load, engine,
per-job records with finish-time fairness, CSV/JSON, both plots), timing each in wall and CPU
seconds: on a shared machine wall time mostly measures the neighbours, CPU time this process.
`--cli` also runs the real command in a subprocess (start-up and imports included), the figure a
user sees, with its own engine / metrics / outputs split (the command prints it). Every figure is
reported beside the engine's own time in the same run: `ratio_to_engine` (whole wall / engine
wall) and the engine's and the outputs' (metrics, CSV/JSON, plots) shares of the whole. Without
shared data it falls back to a synthetic trace of the same size.

    python bench/bench_simulate.py [--cli] [--limit N] [--out bench/results/simulate.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

_START_WALL, _START_CPU = time.perf_counter(), time.process_time()  # imports count, as in the CLI

from schedmate.config import shared_data_dir  # noqa: E402
from schedmate.schedulers.cluster import ClusterSpec  # noqa: E402
from schedmate.schedulers.engine import SimConfig, Simulator  # noqa: E402
from schedmate.schedulers.metrics import job_records, write_outputs  # noqa: E402
from schedmate.schedulers.placement import make_placer  # noqa: E402
from schedmate.schedulers.plots import plot_jct_cdf, plot_utilisation  # noqa: E402
from schedmate.schedulers.policies import make_policy  # noqa: E402
from schedmate.schedulers.traces import generate_trace, load_trace  # noqa: E402

HELIOS = "helios-venus-derived/helios_trace.csv"
T = TypeVar("T")


def timed(phases: dict[str, dict[str, float]], name: str, fn: Callable[[], T]) -> T:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    phases[name] = {"wall_s": round(time.perf_counter() - wall, 3), "cpu_s": round(time.process_time() - cpu, 3)}
    return out


_CLI_TIMES = re.compile(r"time: engine ([\d.]+) s, metrics ([\d.]+) s, CSV/JSON/plots ([\d.]+) s")


def shares(total_wall: float, engine_wall: float, output_wall: float) -> dict[str, float | None]:
    """The whole against the engine alone, and where the rest went (same run)."""
    if total_wall <= 0 or engine_wall <= 0:
        return {"ratio_to_engine": None, "engine_share": None, "output_share": None}
    return {"ratio_to_engine": round(total_wall / engine_wall, 2), "engine_share": round(engine_wall / total_wall, 3),
            "output_share": round(output_wall / total_wall, 3)}


def time_cli(trace: str, policy: str, cluster: str, limit: int | None, out: Path) -> dict[str, float | None]:
    """Wall and CPU seconds of `schedmate simulate` itself, run as a user would, and the engine /
    metrics / outputs split it prints (its own clock, so start-up and loading are the rest)."""
    cmd = [sys.executable, "-m", "schedmate.cli", "simulate", "--trace", trace, "--policies", policy,
           "--cluster", cluster, "--out", str(out)] + (["--limit", str(limit)] if limit else [])
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"schedmate simulate failed ({done.returncode}):\n{done.stderr[-2000:]}")
    wall, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out_: dict[str, float | None] = {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3)}
    if (m := _CLI_TIMES.search(done.stdout)) is not None:
        engine, metrics, outputs = (float(g) for g in m.groups())
        out_ |= {"engine_s": engine, "metrics_s": metrics, "outputs_s": outputs,
                 "startup_load_s": round(wall - engine - metrics - outputs, 3), **shares(wall, engine, metrics + outputs)}
    return out_


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", help=f"trace file (default: shared data {HELIOS})")
    ap.add_argument("--policy", default="fifo")
    ap.add_argument("--cluster", default="1080")
    ap.add_argument("--limit", type=int, help="only the N earliest-submitted jobs")
    ap.add_argument("--cli", action="store_true", help="also time `schedmate simulate` in a subprocess")
    ap.add_argument("--out", type=Path, default=Path("bench/results/simulate.json"))
    args = ap.parse_args()

    phases: dict[str, dict[str, float]] = {
        "imports": {"wall_s": round(time.perf_counter() - _START_WALL, 3), "cpu_s": round(time.process_time() - _START_CPU, 3)}
    }
    spec = ClusterSpec.parse(args.cluster)
    data = shared_data_dir()
    trace = args.trace or (str(data / HELIOS) if data else None)
    if trace is None:
        print("shared data not found: synthetic trace of 125,303 jobs instead", file=sys.stderr)
        jobs = timed(phases, "load", lambda: generate_trace(args.limit or 125_303, seed=0, cluster_gpus=spec.total_gpus, load=0.5).jobs)
    else:
        jobs = timed(phases, "load", lambda: load_trace(trace, limit=args.limit).jobs)
    sim = Simulator(jobs, spec, make_policy(args.policy), SimConfig(seed=0), placer=make_placer("consolidate"))
    result = timed(phases, "engine", sim.run)
    results = {args.policy: result}
    records = timed(phases, "metrics", lambda: {args.policy: job_records(result)})
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = Path(tmp)
        summary = timed(phases, "csv_json", lambda: write_outputs(out_dir, results, records))[args.policy]
        timed(phases, "plots", lambda: (plot_jct_cdf(results, out_dir / "jct_cdf.png", records=records),
                                         plot_utilisation(results, out_dir / "utilisation.png")))
        total_wall = round(time.perf_counter() - _START_WALL, 3)
        output_wall = sum(phases[k]["wall_s"] for k in ("metrics", "csv_json", "plots"))
        total: dict[str, float | None] = {"wall_s": total_wall, "cpu_s": round(time.process_time() - _START_CPU, 3),
                                          **shares(total_wall, phases["engine"]["wall_s"], output_wall)}
        cli = time_cli(trace, args.policy, args.cluster, args.limit, out_dir / "cli") if args.cli and trace else None

    out = {
        "benchmark": "simulate",
        "trace": trace or "synthetic",
        "policy": args.policy,
        "jobs": len(jobs),
        "gpus": spec.total_gpus,
        "events": result.events,
        "phases": phases,
        "total": total,
        "cli": cli,
        "mean_jct_s": round(summary.mean_jct, 1),
        "mean_ftf": round(summary.mean_ftf, 4),
        "unfair_fraction": round(summary.unfair_fraction, 4),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2))
    cli_txt = ""
    if cli:
        cli_txt = f"; CLI wall {cli['wall_s']:.1f} s (CPU {cli['cpu_s']:.1f} s)"
        if cli.get("engine_s") is not None:
            cli_txt += (f" = engine {cli['engine_s']:.1f} + metrics {cli['metrics_s']:.1f} + outputs {cli['outputs_s']:.1f}"
                        f" + start-up/load {cli['startup_load_s']:.1f} s: {cli['ratio_to_engine']}x the engine alone"
                        f" (engine {cli['engine_share']:.0%}, outputs {cli['output_share']:.0%} of the wall)")
    print(
        f"simulate: {len(jobs)} jobs {args.policy} {spec.total_gpus} GPUs: engine {phases['engine']['wall_s']:.1f} s, "
        f"metrics {phases['metrics']['wall_s']:.2f} s, CSV/JSON {phases['csv_json']['wall_s']:.2f} s, plots "
        f"{phases['plots']['wall_s']:.2f} s, total wall {total['wall_s']:.1f} s (CPU {total['cpu_s']:.1f} s; "
        f"{total['ratio_to_engine']}x the engine alone, engine {total['engine_share']:.0%}, outputs "
        f"{total['output_share']:.0%}){cli_txt}; "
        f"mean JCT {summary.mean_jct:.1f} s; load avg {out['machine']['load_avg_1m']} on {os.cpu_count()} CPUs -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
