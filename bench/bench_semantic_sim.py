"""SimulationInsights benchmark: a synthetic trace prepared and advised end to end, twice.

Run 1 starts from an empty content cache: artefacts are planned, every distinct repository is
written and read by the static extractor, a synthetic history of the same size is ingested into
a real Redis (loopback server started here), every job is advised (MiniLM + KNN), and a sample
of jobs is tracked (slowdown 0.5) and diagnosed. Run 2 repeats everything with the cache file
from run 1: it must make zero agent calls. Reports wall times per stage, distinct artefacts,
match rate, duration error of matched jobs (share within 100%), and the cache counters.

    python bench/bench_semantic_sim.py [--jobs 2000] [--seed 1] [--out bench/results/semantic_sim.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from schedmate.embeddings.redis_server import running_server
from schedmate.schedulers.job import JobState
from schedmate.schedulers.traces import generate_trace
from schedmate.sim.artefacts import InfraCalibration, failure_truth
from schedmate.sim.semantic import SimConfig, SimulationInsights, synthetic_history
from schedmate.sim.simlogs import write_failed_log


def one_run(specs: list[Any], history: list[Any], url: str, cache: Path, seed: int, sample: int,
            prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    t_all = time.perf_counter()
    with SimulationInsights(SimConfig(seed=seed, redis_url=url, cache_dir=cache, store_prefix=prefix)) as src:
        t0 = time.perf_counter()
        rep = src.prepare(specs)
        out["prepare_s"] = round(time.perf_counter() - t0, 2)
        out["distinct_artefacts"] = rep.distinct_artefacts
        t0 = time.perf_counter()
        out["history_ingested"] = src.ingest_history(history)
        out["ingest_s"] = round(time.perf_counter() - t0, 2)
        t0 = time.perf_counter()
        advice = [src.advise(JobState(s)) for s in specs]
        out["advise_s"] = round(time.perf_counter() - t0, 2)
        matched = [(a, s) for a, s in zip(advice, specs, strict=True) if a is not None and a.duration_s is not None]
        errs = np.array([abs(a.duration_s - s.duration) / max(s.duration, 1.0) for a, s in matched])
        out["match_rate"] = round(len(matched) / len(specs), 4)
        out["matched_within_100pct"] = round(float(np.mean(errs <= 1.0)), 4) if len(errs) else None
        out["matched_median_rel_error"] = round(float(np.median(errs)), 4) if len(errs) else None
        t0 = time.perf_counter()
        picks = [JobState(s) for s in specs[:: max(1, len(specs) // sample)][:sample]]
        for j in picks:  # simulated history: solo at speed 1, then co-located at half speed from t = 4000 s
            j.speed_log = [(0.0, 1.0, 0.0), (4000.0, 0.5, 4000.0)]
        ratios = [r.ratio for j in picks if (r := src.track(j, event_at=4000.0, now=1e6)) is not None]
        out["track_s"] = round(time.perf_counter() - t0, 2)
        out["track_answered"] = f"{len(ratios)}/{len(picks)}"
        out["track_ratio_mean"] = round(float(np.mean(ratios)), 4) if ratios else None
        t0 = time.perf_counter()
        agree = infra = 0
        cal = src.stats()["infra_calibration"]
        logs = Path(tempfile.mkdtemp(prefix="bench-failed-"))
        for j in picks:  # the world draws the cause and writes the log; the source only reads it
            t = failure_truth(j.spec, 0, seed, InfraCalibration(**cal)) if cal else None
            art = src.artefact(j.job_id)
            if t is None or art is None:
                continue
            write_failed_log(j, 0, art, t.reason, logs, seed=seed)
            d = src.diagnose(j, attempt=0)
            agree += d is not None and d.category == t.category
            infra += t.category == "infrastructure"
        out["diagnose_s"] = round(time.perf_counter() - t0, 2)
        out["diagnose_agree"] = f"{agree}/{len(picks)} (truth infra: {infra})"
        st = src.stats()
        out["counters"] = {k: st[k] for k in ("agent_runs", "cache_hits", "cache_misses", "extract_runs", "track_runs",
                                              "diagnose_runs", "llm_calls", "store_errors")}
        out["infra_calibration"] = st["infra_calibration"]
    out["total_s"] = round(time.perf_counter() - t_all, 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--history", type=int, default=None, help="synthetic history jobs (default: --jobs)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sample", type=int, default=50, help="jobs tracked and diagnosed")
    ap.add_argument("--out", type=Path, default=Path("bench/results/semantic_sim.json"))
    args = ap.parse_args()
    specs = generate_trace(args.jobs, args.seed).jobs
    history = synthetic_history(specs, args.history or args.jobs, seed=args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="bench-semantic-sim-"))
    try:
        with running_server(tmp / "redis") as server:
            runs = [one_run(specs, history, server.url, tmp / "cache", args.seed, args.sample, f"bench-{i}")
                    for i in range(2)]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report = {"jobs": args.jobs, "history": len(history), "seed": args.seed, "trace": "generate_trace(seren)",
              "machine": {"python": platform.python_version(), "cpu": platform.processor() or platform.machine()},
              "cold": runs[0], "from_cache": runs[1]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
