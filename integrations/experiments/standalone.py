"""Case 3 (spec §8.3): standalone SchedMate vs FIFO, QSSF and Tiresias, with failures.

Setup, and where it reads something into the spec:

- **Trace**: one week of Sia's Philly trace, Monday 2 October 2017 00:00 to Monday 9 October
  (11,387 jobs; `--limit` keeps the earliest N), or the synthetic default for quick runs.
  Requests above the cluster are capped at its size.
- **Failures** (`failures_sim.inject_failures`, per seed): 30.5% of jobs fail once at U(0, 1) of
  their run; infrastructure ≈ 11% of failures, ≈ 82% of their GPU time. Checkpoints every 30 min.
  Every arm runs the no-FH path for failures it does not handle: the attempt ends and the user
  resubmits the job 1 h later from its last checkpoint (`SimConfig.resubmit_delay`); JCT counts
  from the first submit. FIFO and QSSF still rank a resubmitted job by its original submit time
  (their priority keys); SchedMate ranks it by the resubmission time.
- **Cluster**: 8-GPU nodes, sized by `size_cluster` on FIFO (seed 0's failures) so its avg
  queuing is ≥ 30% of its avg JCT; the same cluster for every arm and seed (reported).
- **Arms**: `fifo`, `qssf` (history model per VC × GPU count, Philly has no users), `tiresias`
  (2 queues at 18,000 GPU-s, 60 s rounds), `schedmate` (SJF on the advisor's top-3 estimate),
  `schedmate+fh` (plus the Failure Handler: 10 s diagnosis + 300 s recovery, node cordoned).
- **Insight source**: `make_source(specs, seed, detection_rate)`, a fresh one per SchedMate arm
  (sources keep history). The lead plugs `semantic_sim.SimulationInsights` for reported runs;
  `calibrated_source` (spec §8's knobs: match rate, log-normal duration error, handler
  recall/precision) exists for the labelled sensitivity analysis and for quick runs. The label
  is written into every output.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from schedmate.integrations.experiments.common import (
    ExperimentResult,
    MakeSource,
    NullInsights,
    RunRow,
    aggregate,
    detected,
    load_window,
    queue_share,
    shared_file,
    size_cluster,
    synthetic_jobs,
    write_experiment,
)
from schedmate.integrations.failures_sim import FailureModel, failure_of, failure_shares, inject_failures
from schedmate.integrations.insights import AdvisorInsight, FailureInsight, InsightSource, TrackerReading
from schedmate.integrations.standalone import StandaloneConfig, StandaloneSchedMate, gpu_hours_lost
from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.engine import SimConfig, SimResult, Simulator
from schedmate.schedulers.job import JobSpec, JobState
from schedmate.schedulers.metrics import Summary, summarize
from schedmate.schedulers.policies import FIFO, QSSF, Tiresias
from schedmate.schedulers.policy import Policy

__all__ = [
    "ARMS",
    "CalibratedInsights",
    "StandaloneSetup",
    "calibrated_source",
    "load_jobs",
    "main",
    "null_source",
    "run_standalone_experiment",
]

ARMS = ("fifo", "qssf", "tiresias", "schedmate", "schedmate+fh")
TRACES = ("philly", "synthetic")
PHILLY_FIRST_SUBMIT = datetime(2017, 9, 4, 10, 30, 41)  # first job of sia/traces/philly.csv (t = 0)
WEEK_START = datetime(2017, 10, 2)  # a Monday: 2-8 October 2017 hold 11,387 jobs


# ================================================================================= insight sources


@dataclass
class CalibratedInsights:
    """SENSITIVITY ANALYSIS ONLY, never a headline result: spec §8's calibrated knobs.

    Advisor: a job is matched with probability `match_rate` × detection rate (nested draws);
    its top-3 estimate is the true full run time × exp(ε), ε ~ N(0, `sigma`²) (σ 0.65: 85.7% of
    estimates have a relative error below 100%, i.e. are below 2× the truth). Failure Handler (over `failures_sim`'s injected truth):
    an infrastructure failure is diagnosed as such with probability `recall` × detection rate;
    an application error is wrongly called infrastructure at the rate that gives `precision`
    at the injected infrastructure share. Undetected: None.
    """

    seed: int = 0
    detection_rate: float = 1.0
    match_rate: float = 0.8
    sigma: float = 0.65
    recall: float = 0.61
    precision: float = 0.757
    infra_share: float = 0.11
    latency_s: float = 9.0
    calls: dict[str, int] = field(default_factory=lambda: {"advise": 0, "matched": 0, "diagnose": 0, "said_infra": 0})

    @property
    def false_positive_rate(self) -> float:
        """P(app error called infrastructure) = r·p·(1 − P) / (P·(1 − p))."""
        p, r, prec = self.infra_share, self.recall, self.precision
        return r * p * (1.0 - prec) / (prec * (1.0 - p)) if prec > 0 and p < 1 else 0.0

    def advise(self, job: JobState) -> AdvisorInsight | None:
        self.calls["advise"] += 1
        if not detected(job.job_id, self.seed, self.match_rate * self.detection_rate, "advise"):
            return None
        self.calls["matched"] += 1
        rng = np.random.default_rng([self.seed, zlib.crc32(job.job_id.encode()), 1])
        est = job.spec.total_work * math.exp(self.sigma * float(rng.standard_normal()))
        return AdvisorInsight(("calibrated",) * 3, est, est, None, latency_s=self.latency_s)

    def track(self, job: JobState, *, event_at: float, now: float) -> TrackerReading | None:
        return None

    def diagnose(self, job: JobState, *, attempt: int) -> FailureInsight | None:
        self.calls["diagnose"] += 1
        truth = self.failure_truth(job, attempt)
        if truth is None:
            return None
        if truth.infrastructure:
            rate, salt = self.recall * self.detection_rate, f"diagnose-infra-{attempt}"
        else:
            rate, salt = self.false_positive_rate, f"diagnose-fp-{attempt}"
        says_infra = detected(job.job_id, self.seed, rate, salt)
        self.calls["said_infra"] += says_infra
        category = "infrastructure" if says_infra else (truth.category if not truth.infrastructure else "framework")
        return FailureInsight(says_infra, category, f"calibrated ({truth.reason})", latency_s=10.0)

    def failure_truth(self, job: JobState, attempt: int) -> FailureInsight | None:
        f = failure_of(job.spec)
        return None if f is None else FailureInsight(f.infrastructure, f.category, f.reason)

    def record(self, job: JobState, *, finished: bool) -> None:
        return None

    def stats(self) -> dict[str, Any]:
        return {"source": "calibrated (sensitivity only)", **self.calls}


def calibrated_source(**knobs: Any) -> MakeSource:
    """A `make_source` building `CalibratedInsights(seed, detection_rate, **knobs)`."""

    def make(specs: Sequence[JobSpec], seed: int, detection_rate: float) -> InsightSource:
        return CalibratedInsights(seed=seed, detection_rate=detection_rate, **knobs)

    return make


def null_source(specs: Sequence[JobSpec], seed: int, detection_rate: float) -> InsightSource:
    """SchedMate knows nothing: SJF on the history fallback alone, no diagnosis."""
    return NullInsights()


# ================================================================================= setup


@dataclass(frozen=True)
class StandaloneSetup:
    """Everything but the policy, fixed across arms and seeds (spec §8.3 defaults)."""

    checkpoint_s: float = 1800.0
    resubmit_s: float = 3600.0
    diagnosis_s: float = 10.0
    recovery_s: float = 300.0
    tiresias_threshold: float = 18_000.0
    tiresias_round_s: float = 60.0
    # every ordered arm (FIFO, QSSF, SchedMate) backfills: without it, SJF keeps a short but wide
    # job at the head while GPUs sit idle waiting for it (measured: 205 h vs 7.9 h mean JCT on
    # the synthetic trace), which would test head-of-line blocking, not duration estimates
    backfill: bool = True
    detection_rate: float = 1.0
    gpus_per_node: int = 8
    failures: FailureModel = field(default_factory=FailureModel)

    def sim_config(self, seed: int) -> SimConfig:
        return SimConfig(
            seed=seed, checkpoint_interval=self.checkpoint_s, resubmit_delay=self.resubmit_s, record_timeline=False
        )


def load_jobs(trace: str, *, days: float = 7.0, limit: int | None = None, n_jobs: int = 2000, seed: int = 0) -> list[JobSpec] | None:
    """The trace's jobs before failure injection (None when its file is absent)."""
    if trace == "synthetic":
        jobs = synthetic_jobs(n_jobs, seed, profile="philly", cluster_gpus=64, load=0.9, max_gpus=None)
    elif trace == "philly":
        path = shared_file("sia", "traces", "philly.csv")
        if path is None:
            return None
        offset = (WEEK_START - PHILLY_FIRST_SUBMIT).total_seconds() / 86_400.0
        jobs = load_window(path, days=days, offset_days=offset)
    else:
        raise ValueError(f"unknown trace {trace!r}; choose from {', '.join(TRACES)}")
    return jobs[:limit] if limit is not None else jobs


def _cap(jobs: Sequence[JobSpec], total: int) -> list[JobSpec]:
    return [s if s.num_gpus <= total else dataclasses.replace(s, num_gpus=total) for s in jobs]


def _policy(arm: str, setup: StandaloneSetup, source: Callable[[], InsightSource]) -> Policy:
    if arm == "fifo":
        return FIFO(backfill=setup.backfill)
    if arm == "qssf":
        return QSSF(backfill=setup.backfill)
    if arm == "tiresias":
        return Tiresias(threshold=setup.tiresias_threshold, round_seconds=setup.tiresias_round_s)
    if arm in ("schedmate", "schedmate+fh"):
        config = StandaloneConfig(
            failure_handler=arm == "schedmate+fh",
            diagnosis_s=setup.diagnosis_s,
            recovery_s=setup.recovery_s,
            user_resubmit_s=setup.resubmit_s,
            backfill=setup.backfill,
        )
        policy = StandaloneSchedMate(source(), config)
        policy.name = arm
        return policy
    raise ValueError(f"unknown arm {arm!r}; choose from {', '.join(ARMS)}")


def _simulate(jobs: Sequence[JobSpec], gpus: int, policy: Policy, setup: StandaloneSetup, seed: int) -> SimResult:
    cluster = ClusterSpec.homogeneous(max(1, gpus // setup.gpus_per_node), setup.gpus_per_node)
    return Simulator(_cap(jobs, cluster.total_gpus), cluster, policy, setup.sim_config(seed)).run()


def _extra(result: SimResult, summary: Summary, policy: Policy, setup: StandaloneSetup) -> dict[str, Any]:
    """Failure costs and SchedMate's counters. `failure_wait_h`: job-hours spent between a
    failure and the job's return to the queue (user resubmissions at `resubmit_s`, handled
    resumes at diagnosis + recovery): what the Failure Handler saves, unlike GPU-hours lost,
    which the checkpoint interval fixes (progress since the last checkpoint is lost either way)."""
    failed = sum(j.failures for j in result.jobs)
    wait = failed * setup.resubmit_s
    if isinstance(policy, StandaloneSchedMate):
        c = policy.counters
        wait = c.user_resubmits * setup.resubmit_s + c.resumed * (setup.diagnosis_s + setup.recovery_s)
    out: dict[str, Any] = {
        "gpu_hours_lost": gpu_hours_lost(result, policy),
        "queue_share": queue_share(summary),
        "failed_jobs": sum(j.failures > 0 for j in result.jobs),
        "failure_wait_h": wait / 3600.0,
    }
    if isinstance(policy, StandaloneSchedMate):
        states = [j.info.get("sm_estimate_source") for j in result.jobs]
        out["advisor_share"] = states.count("advisor") / len(states) if states else 0.0
        out["fh"] = policy.counters.as_dict()
        out["source"] = policy.source.stats()
    return out


# ================================================================================= experiment


def run_standalone_experiment(
    out_dir: Path | None,
    *,
    make_source: MakeSource,
    source_label: str,
    trace: str = "philly",
    days: float = 7.0,
    limit: int | None = None,
    n_jobs: int = 2000,
    seeds: int | Sequence[int] = 3,
    gpus: int | None = None,
    start_gpus: int | None = None,
    arms: Sequence[str] = ARMS,
    setup: StandaloneSetup = StandaloneSetup(),
    progress: Callable[[str], None] | None = None,
) -> ExperimentResult:
    """Run case 3 and write `standalone.json`, `standalone.csv`, per-seed job CSVs, JCT CDFs.

    `source_label` names the insight source in every output. `gpus` fixes the cluster and skips
    sizing; sizing starts at `start_gpus` (default: 2× the trace's mean GPU demand). `limit`
    keeps the earliest jobs of the Philly week; `n_jobs` sizes the synthetic trace.
    """
    say = progress or (lambda _msg: None)
    seed_list = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    base = load_jobs(trace, days=days, limit=limit, n_jobs=n_jobs, seed=seed_list[0])
    if not base:
        raise FileNotFoundError(f"trace {trace!r} is absent or empty (../shared/data; set SCHEDMATE_SHARED_DATA)")
    started = time.perf_counter()
    details: dict[str, Any] = {"source": source_label, "trace": trace, "jobs": len(base), "failures": {}}
    first = inject_failures(base, seed_list[0], setup.failures)
    if gpus is None:
        start = start_gpus or _demand_start(base, setup.gpus_per_node)

        def fifo(n: int) -> Summary:
            say(f"sizing: fifo on {n} GPUs")
            return summarize(_simulate(first, n, FIFO(backfill=setup.backfill), setup, seed_list[0]))

        sizing = size_cluster(fifo, start_gpus=start, gpus_per_node=setup.gpus_per_node)
        gpus = sizing.gpus
        details["sizing"] = dataclasses.asdict(sizing) | {"met": sizing.met, "baseline": "fifo"}
    else:
        details["sizing"] = {"gpus": gpus, "fixed": True}
    rows: list[RunRow] = []
    plots: dict[str, dict[str, SimResult]] = {}
    for seed in seed_list:
        jobs = first if seed == seed_list[0] else inject_failures(base, seed, setup.failures)
        details["failures"][f"seed{seed}"] = dataclasses.asdict(failure_shares(jobs))
        results: dict[str, SimResult] = {}
        for arm in arms:
            say(f"{trace} seed {seed}: {arm}")
            policy = _policy(arm, setup, lambda _j=jobs, _s=seed: make_source(_j, _s, setup.detection_rate))
            result = _simulate(jobs, gpus, policy, setup, seed)
            summary = summarize(result)
            results[arm] = result
            rows.append(RunRow(trace, arm, seed, gpus, summary, _extra(result, summary, policy, setup)))
        if seed == seed_list[0]:
            plots[f"{trace}_seed{seed}"] = results
    details["wall_seconds"] = round(time.perf_counter() - started, 1)
    details["reductions"] = _reductions(rows)
    details["pass"] = _passes(rows)
    summary = _summary_line(rows, details, len(seed_list), gpus)
    files: list[Path] = []
    if out_dir is not None:
        config = {
            "trace": trace, "days": days, "limit": limit, "n_jobs_synthetic": n_jobs, "seeds": seed_list,
            "arms": list(arms), "setup": dataclasses.asdict(setup), "source": source_label,
        }
        files = write_experiment(out_dir, "standalone", rows, config=config, details=details, results=plots)
        (out_dir / "summary.txt").write_text(summary + "\n")
        files.append(out_dir / "summary.txt")
    return ExperimentResult("standalone", out_dir, rows, aggregate(rows, _METRICS), files, summary, details)


_METRICS = ("mean_jct", "mean_queueing", "p99_jct", "makespan", "wasted_gpu_time", "gpu_hours_lost", "failure_wait_h")


def _demand_start(jobs: Sequence[JobSpec], per_node: int) -> int:
    """2× the mean GPU demand over the trace span (full run times), in whole nodes, ≥ 2 nodes."""
    span = max(1.0, max(j.submit_time for j in jobs) - min(j.submit_time for j in jobs))
    demand = sum(j.total_work * j.num_gpus for j in jobs) / span
    return max(2 * per_node, int(math.ceil(2.0 * demand / per_node)) * per_node)


def _mean(rows: Sequence[RunRow], arm: str, metric: str = "mean_jct") -> float:
    vals = [_metric(r, metric) for r in rows if r.arm == arm]
    return float(np.mean(vals)) if vals else math.nan


def _metric(row: RunRow, metric: str) -> float:
    value = row.extra.get(metric) if metric in row.extra else getattr(row.summary, metric)
    return float(value)


def _reductions(rows: Sequence[RunRow]) -> dict[str, list[float]]:
    """Per seed: 1 − arm / reference of mean JCT (positive: the arm is better), in percent."""
    pairs = {"schedmate_vs_qssf": ("schedmate", "qssf"), "schedmate_vs_tiresias": ("schedmate", "tiresias"),
             "schedmate_vs_fifo": ("schedmate", "fifo"), "fh_vs_schedmate": ("schedmate+fh", "schedmate"),
             "fh_vs_qssf": ("schedmate+fh", "qssf")}
    by = {(r.arm, r.seed): r.summary.mean_jct for r in rows}
    out: dict[str, list[float]] = {}
    for name, (arm, ref) in pairs.items():
        vals = [100.0 * (1.0 - by[(arm, s)] / by[(ref, s)]) for (a, s) in by if a == arm and (ref, s) in by and by[(ref, s)] > 0]
        if vals:
            out[name] = [round(v, 2) for v in vals]
    return out


def _passes(rows: Sequence[RunRow]) -> dict[str, bool] | None:
    """Spec §8.3's pass rule per seed: mean JCT SM+FH < SM < QSSF."""
    by = {(r.arm, r.seed): r.summary.mean_jct for r in rows}
    seeds = sorted({s for _, s in by})
    if not all((a, s) in by for a in ("qssf", "schedmate", "schedmate+fh") for s in seeds):
        return None
    return {f"seed{s}": by[("schedmate+fh", s)] < by[("schedmate", s)] < by[("qssf", s)] for s in seeds}


def _summary_line(rows: Sequence[RunRow], details: dict[str, Any], n_seeds: int, gpus: int) -> str:
    arms = list(dict.fromkeys(r.arm for r in rows))
    jct = ", ".join(f"{a} {_mean(rows, a) / 3600:.2f} h" for a in arms)
    lost = ", ".join(f"{a} {_mean(rows, a, 'gpu_hours_lost'):.0f}" for a in arms)
    wait = ", ".join(f"{a} {_mean(rows, a, 'failure_wait_h'):.0f}" for a in arms)
    red = details["reductions"]
    gains = "; ".join(f"{k} {np.mean(v):+.1f}%" for k, v in red.items())
    share = details.get("sizing", {}).get("queue_share")
    sizing = f", FIFO queue share {share:.0%}" if isinstance(share, float) else ""
    return (
        f"standalone experiment [{details['source']}; {details['trace']}, {details['jobs']} jobs, {gpus} GPUs{sizing}; "
        f"{n_seeds} seed(s)]: avg JCT {jct}; JCT reduction {gains}; GPU-h lost to failures {lost}; "
        f"job-h waiting after failures {wait}"
    )


# ================================================================================= command line


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m schedmate.integrations.experiments.standalone [--trace synthetic --limit N ...]`."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", choices=TRACES, default="philly")
    ap.add_argument("--days", type=float, default=7.0)
    ap.add_argument("--limit", type=int, default=None, help="keep the earliest N jobs of the Philly week")
    ap.add_argument("--n-jobs", type=int, default=2000, help="synthetic trace size")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--gpus", type=int, default=None, help="fix the cluster size (skip sizing)")
    ap.add_argument("--source", choices=("calibrated", "null"), default="calibrated")
    ap.add_argument("--detection-rate", type=float, default=1.0)
    ap.add_argument("--backfill", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--arms", default=",".join(ARMS), help="comma-separated subset of " + ",".join(ARMS))
    ap.add_argument("--out", type=Path, default=Path("results/standalone"))
    args = ap.parse_args(argv)
    make, label = {
        "calibrated": (calibrated_source(), "calibrated knobs (sensitivity only, not the real modules)"),
        "null": (null_source, "null (history fallback only)"),
    }[args.source]
    setup = StandaloneSetup(detection_rate=args.detection_rate, backfill=args.backfill)
    result = run_standalone_experiment(
        args.out, make_source=make, source_label=label, trace=args.trace, days=args.days, limit=args.limit,
        n_jobs=args.n_jobs, seeds=args.seeds, gpus=args.gpus, arms=[a.strip() for a in args.arms.split(",") if a.strip()],
        setup=setup, progress=lambda m: print(m, flush=True),
    )
    print(result.summary)
    for f in result.files:
        print(f"  wrote {f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
