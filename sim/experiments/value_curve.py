"""Value curve (issue 22, item 5): mean JCT against estimate quality and coverage.

SENSITIVITY ANALYSIS (labelled so in every output): the SchedMate arm of a case study is run
on `noisy_oracle_source(sigma, coverage)`, the TRUE duration of each simulated job
(`spec.duration`, what the case studies' oracle arms read) times exp(sigma * z), z ~ N(0, 1)
drawn once per (seed, job) and shared by every sigma, so the curves differ only by sigma. A job
gets an estimate when its hash draw is below `coverage` (nested: the 30% covered are among the
60%); uncovered jobs get no match and take the arm's own fallback. The median |ln(est/actual)|
of the source is sigma * 0.6745 (the median of |z|).

Axes: sigma in (0, 0.25, 0.5, 1, 1.5, 2), coverage in (0.3, 0.6, 1.0). Beside the curve:
the baselines and the oracle arm of the same case (run once per seed, they do not depend on
the source), and the real agents' point, read from the case study's own output JSON when it is
there (`--real PATH`, default `results/experiment-<case>/<case>.json`): its mean JCT for the
SchedMate arm and, when the JSON has the lead's `advisor_quality` block, its measured median
|ln(est/actual)| and coverage (share matched).

Cases (what "the SchedMate arm" is):
- `standalone`: `schedmate-srpt` (no handler: only the estimate differs) vs fifo / qssf /
  tiresias; oracle `oracle-srtf`. Failures as in `standalone` (FailureSimulator).
- `lucid`: `lucid+sm` vs lucid / tiresias / qssf; oracle `lucid+oracle`. The noisy source gives
  the true workload metrics (as `lucid+oracle`) with the noisy duration, so only the duration
  estimate varies; tracking is the oracle's.
- `sia`: Sia+SchedMate does not read a duration estimate (it copies a similar job's throughput
  model), so the sigma axis is flat by construction and is not run: the curve varies coverage
  only (the rule source's detection rate), and every sigma point repeats the coverage's value.

Outputs (`out/`): `value_curve.json` with keys
  `case`, `label` (SENSITIVITY ...), `sigmas`, `coverages`, `seeds`, `arm` (the SchedMate arm),
  `points` [{sigma, coverage, median_abs_ln (of the source, measured on the jobs), covered_share
  (measured), mean_jct (s, mean over seeds), per_seed: [s]}], `baselines` {arm: mean JCT s},
  `best_baseline` {arm, mean_jct}, `oracle` {arm, mean_jct, headroom_pct (1 - oracle/best, %)},
  `real_point` {mean_jct, median_abs_ln, covered_share, source} or null,
  `stops_helping` {coverage: the smallest sigma at which the arm no longer beats the best
  baseline, or null when it beats it at every sigma}, `summary` (one sentence),
  `wall_seconds`;
`value_curve.csv` (one row per point) and `value_curve.png` (mean JCT vs sigma, one line per
coverage; best baseline and oracle as horizontal lines; the real agents' point as a marker).
Runs are cached per (case, seed, point) in `out/cache/` (JSON), so a rerun reuses them.
`--quick`: the synthetic trace of each case, few jobs, 1 seed, sigma (0, 0.5, 1, 2) x coverage
(0.3, 1.0).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from schedmate.adapters.insights import AdvisorInsight, InsightSource
from schedmate.schedulers.job import JobSpec, JobState
from schedmate.sim.artefacts import unit_hash
from schedmate.sim.experiments.common import MakeSource, OracleInsights

__all__ = [
    "CASES",
    "COVERAGES",
    "LABEL",
    "SIGMAS",
    "NoisyOracleInsights",
    "noisy_estimate",
    "noisy_oracle_source",
    "run_value_curve",
]

SIGMAS = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0)
COVERAGES = (0.3, 0.6, 1.0)
QUICK_SIGMAS = (0.0, 0.5, 1.0, 2.0)
QUICK_COVERAGES = (0.3, 1.0)
CASES = ("standalone", "lucid", "sia")
LABEL = "noisy oracle (SENSITIVITY ONLY: true duration x exp(sigma z), share `coverage` of jobs)"
MEDIAN_ABS_Z = 0.6744897501960817  # median of |N(0, 1)|


def _z(seed: int, job_id: str) -> float:
    """One standard normal per (seed, job), the same for every sigma and coverage."""
    u = min(max(unit_hash("value-curve-z", seed, job_id), 1e-12), 1 - 1e-12)
    from statistics import NormalDist

    return NormalDist().inv_cdf(u)


def _covered(seed: int, job_id: str, coverage: float) -> bool:
    return unit_hash("value-curve-cover", seed, job_id) < coverage


def noisy_estimate(spec: JobSpec, seed: int, sigma: float, coverage: float) -> float | None:
    """The source's estimate for `spec` (None when the job is not covered)."""
    if not _covered(seed, spec.job_id, coverage):
        return None
    return float(spec.duration) * math.exp(sigma * _z(seed, spec.job_id))


@dataclass
class NoisyOracleInsights(OracleInsights):
    """`OracleInsights` whose duration is the true one with log-normal noise, for a share of jobs."""

    sigma: float = 0.0
    coverage: float = 1.0

    def advise(self, job: JobState) -> AdvisorInsight | None:
        self.calls["advise"] += 1
        if not self._seen(job, "advise"):
            return None
        est = noisy_estimate(job.spec, self.seed, self.sigma, self.coverage)
        if est is None:
            return None
        self.calls["matched"] += 1
        metrics = dict(self.metrics_of(job.spec) or {})
        return AdvisorInsight(similar_ids=(f"oracle:{job.job_id}",), duration_s=est, duration_top3_s=est,
                              sm_util=metrics.get("gpu_util"), metrics=metrics, latency_s=self.latency_s)

    def stats(self) -> dict[str, Any]:
        return {"source": LABEL, "sigma": self.sigma, "coverage": self.coverage, **self.calls}


def noisy_oracle_source(sigma: float, coverage: float = 1.0, *, metrics_of: Callable[[JobSpec], Any] | None = None,
                        latency_s: float = 0.0) -> MakeSource:
    """SENSITIVITY ONLY: a `MakeSource` for `NoisyOracleInsights(sigma, coverage)`, shared by the
    three cases (`metrics_of`: the true steady metrics, for Lucid)."""
    if sigma < 0 or not 0.0 <= coverage <= 1.0:
        raise ValueError(f"sigma must be >= 0 and coverage in [0, 1], got {sigma}, {coverage}")

    def make(specs: Sequence[JobSpec], seed: int, detection_rate: float) -> InsightSource:
        kw: dict[str, Any] = {"metrics_of": metrics_of} if metrics_of is not None else {}
        return NoisyOracleInsights(seed=seed, detection_rate=detection_rate, latency_s=latency_s, sigma=sigma,
                                   coverage=coverage, **kw)

    make.label = LABEL  # type: ignore[attr-defined]  # a label on the factory function, read by the runner
    return make


def source_quality(specs: Sequence[JobSpec], seed: int, sigma: float, coverage: float) -> tuple[float | None, float]:
    """(median |ln(est/actual)| over covered jobs, covered share) of the source on `specs`."""
    errs, n = [], 0
    for s in specs:
        if s.duration <= 0:
            continue
        n += 1
        est = noisy_estimate(s, seed, sigma, coverage)
        if est is not None:
            errs.append(abs(math.log(est / s.duration)))
    return (float(np.median(errs)) if errs else None), (len(errs) / n if n else 0.0)


# ================================================================================= cases


@dataclass(frozen=True)
class _Case:
    arm: str
    baselines: tuple[str, ...]
    oracle: str
    sigma_axis: bool = True


_CASES = {
    "standalone": _Case("schedmate-srpt", ("fifo", "qssf", "tiresias"), "oracle-srtf"),
    "lucid": _Case("lucid+sm", ("lucid", "tiresias", "qssf"), "lucid+oracle"),
    "sia": _Case("sia+sm", ("sia-fifo", "sia"), "", sigma_axis=False),
}


def _runner(case: str, *, quick: bool, out: Path) -> Callable[[Sequence[str], MakeSource, float, int], dict[str, float]]:
    """A function (arms, make_source, detection rate, seed) -> {arm: mean JCT} for `case`, with
    the cluster fixed after the first call (sizing runs once)."""
    fixed: dict[str, Any] = {}

    if case == "standalone":
        from schedmate.sim.experiments.standalone import run_standalone_experiment

        def run(arms: Sequence[str], make: MakeSource, rate: float, seed: int) -> dict[str, float]:
            res = run_standalone_experiment(
                None, make_source=make, source_label=LABEL, trace="synthetic" if quick else "acme",
                n_jobs=300 if quick else 2000, seeds=[seed], gpus=fixed.get("gpus"), arms=list(arms),
                resubmit_delays=(), detection_rates=(), trace_seed=0)  # one trace, a world per seed (as the case study)
            fixed.setdefault("gpus", res.details.get("sizing", {}).get("gpus"))
            return {r.arm: float(r.summary.mean_jct) for r in res.rows}

        return run
    if case == "lucid":
        from schedmate.sim.experiments import lucid as L

        def run(arms: Sequence[str], make: MakeSource, rate: float, seed: int) -> dict[str, float]:
            trace = "synthetic" if quick else "helios"
            res = L.run_lucid_experiment(
                None, make_source=make, source_label=LABEL, traces=[trace], seeds=[seed],
                n_jobs=200 if quick else 1000, sweep=(), arms=list(arms),
                cluster_gpus={trace: fixed["gpus"]} if "gpus" in fixed else None)
            if "gpus" not in fixed and res.rows:
                fixed["gpus"] = res.rows[0].gpus
            return {r.arm: float(r.summary.mean_jct) for r in res.rows}

        return run
    if case == "sia":
        from schedmate.sim.experiments.sia import SiaExperimentConfig, rule_source, run_sia_experiment

        def run(arms: Sequence[str], make: MakeSource, rate: float, seed: int) -> dict[str, float]:
            cfg = SiaExperimentConfig(seeds=(seed,), arms=tuple(arms), detection_rate=rate,
                                      limit=40 if quick else None)
            res = run_sia_experiment(None, make_source=rule_source, config=cfg)
            vals: dict[str, list[float]] = {}
            for r in res.rows:
                vals.setdefault(r.arm, []).append(float(r.summary.mean_jct))
            return {a: float(np.mean(v)) for a, v in vals.items()}

        return run
    raise ValueError(f"unknown case {case!r}; choose from {', '.join(CASES)}")


def _lucid_metrics(seed: int) -> Callable[[JobSpec], Any] | None:
    """Lucid's oracle metrics (the true steady profile of the job's workload)."""
    from schedmate.sim.artefacts import plan_artefact, steady_metrics

    return lambda spec: steady_metrics(plan_artefact(spec, seed))


# ================================================================================= the curve


def run_value_curve(case: str, out: Path, *, seeds: int = 1, quick: bool = False, real: Path | None = None,
                    sigmas: Sequence[float] | None = None, coverages: Sequence[float] | None = None,
                    progress: Callable[[str], None] | None = None,
                    runner: Callable[[Sequence[str], MakeSource, float, int], dict[str, float]] | None = None,
                    jobs_of: Callable[[int], Sequence[JobSpec]] | None = None) -> dict[str, Any]:
    """Run the curve for `case` and write `value_curve.json`/`.csv`/`.png` to `out` (module
    docstring). `runner` / `jobs_of` replace the case's simulation (tests)."""
    say = progress or (lambda _m: None)
    spec = _CASES[case]
    sig = tuple(sigmas) if sigmas is not None else (QUICK_SIGMAS if quick else SIGMAS)
    cov = tuple(coverages) if coverages is not None else (QUICK_COVERAGES if quick else COVERAGES)
    run = runner or _runner(case, quick=quick, out=out)
    if jobs_of is None and case == "standalone" and runner is None:
        from schedmate.sim.experiments.standalone import load_jobs

        def jobs_of(seed: int) -> Sequence[JobSpec]:
            return load_jobs("synthetic" if quick else "acme", n_jobs=300 if quick else 2000, seed=0) or []
    out.mkdir(parents=True, exist_ok=True)
    cache_dir = out / "cache"
    cache_dir.mkdir(exist_ok=True)
    tag = f"{case}|quick={quick}"
    started = time.perf_counter()

    def cached(key: str, fn: Callable[[], dict[str, float]]) -> dict[str, float]:
        path = cache_dir / f"{hashlib.sha256(f'{tag}|{key}'.encode()).hexdigest()[:16]}.json"
        if path.is_file() and runner is None:
            return json.loads(path.read_text())
        val = fn()
        if runner is None:
            path.write_text(json.dumps(val))
        return val

    metrics_of = None
    base: dict[str, list[float]] = {}
    per_point: dict[tuple[float, float], list[float]] = {}
    quality: dict[tuple[float, float], list[tuple[float | None, float]]] = {}
    for seed in range(seeds):
        if case == "lucid":
            metrics_of = _lucid_metrics(seed)
        fixed_arms = [*spec.baselines, *([spec.oracle] if spec.oracle else [])]
        say(f"{case} seed {seed}: baselines {', '.join(fixed_arms)}")
        def baselines_run(arms: list[str] = fixed_arms, seed: int = seed) -> dict[str, float]:
            return run(arms, noisy_oracle_source(0.0, 1.0), 1.0, seed)

        b = cached(f"seed{seed}|baselines", baselines_run)
        for a, mean_jct in b.items():
            base.setdefault(a, []).append(mean_jct)
        for c in cov:
            if not spec.sigma_axis:
                say(f"{case} seed {seed}: coverage {c:g}")
                def coverage_run(c: float = c, seed: int = seed) -> dict[str, float]:
                    return run([spec.arm], noisy_oracle_source(0.0, c), c, seed)

                v = cached(f"seed{seed}|cov{c:g}", coverage_run)
            for s in sig:
                if spec.sigma_axis:
                    say(f"{case} seed {seed}: sigma {s:g} coverage {c:g}")
                    make = noisy_oracle_source(s, c, metrics_of=metrics_of)
                    def sigma_run(make: Any = make, seed: int = seed) -> dict[str, float]:
                        return run([spec.arm], make, 1.0, seed)

                    v = cached(f"seed{seed}|s{s:g}|c{c:g}", sigma_run)
                per_point.setdefault((s, c), []).append(v[spec.arm])
                if jobs_of is not None:
                    quality.setdefault((s, c), []).append(source_quality(jobs_of(seed), seed, s, c))
    points: list[dict[str, Any]] = []
    for (s, c), vals in sorted(per_point.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        q = quality.get((s, c), [])
        med = [m for m, _ in q if m is not None]
        points.append({
            "sigma": s, "coverage": c, "mean_jct": float(np.mean(vals)), "per_seed": vals,
            "median_abs_ln": float(np.mean(med)) if med else (s * MEDIAN_ABS_Z if spec.sigma_axis else None),
            "covered_share": float(np.mean([x for _, x in q])) if q else c,
            "median_abs_ln_measured": bool(med),
        })
    baselines = {a: float(np.mean(v)) for a, v in base.items() if a != spec.oracle}
    best = min(baselines, key=lambda a: baselines[a])
    oracle = None
    if spec.oracle and spec.oracle in base:
        o = float(np.mean(base[spec.oracle]))
        oracle = {"arm": spec.oracle, "mean_jct": o, "headroom_pct": 100.0 * (1.0 - o / baselines[best])}
    stops: dict[str, float | None] = {}
    for c in cov:
        row = sorted((p for p in points if p["coverage"] == c), key=lambda p: p["sigma"])
        stops[f"{c:g}"] = next((p["sigma"] for p in row if p["mean_jct"] >= baselines[best]), None)
    real_point = _real_point(case, spec.arm, real, trace=_trace_of(case, quick))
    doc: dict[str, Any] = {
        "case": case, "arm": spec.arm,
        "label": LABEL if spec.sigma_axis else "rule source (same-config donors) at detection rate = coverage "
                                               "(SENSITIVITY ONLY; sia+sm reads no duration estimate)", "sigmas": list(sig), "coverages": list(cov),
        "seeds": seeds, "quick": quick, "sigma_axis": spec.sigma_axis,
        "points": points, "baselines": baselines, "best_baseline": {"arm": best, "mean_jct": baselines[best]},
        "oracle": oracle, "real_point": real_point, "stops_helping": stops,
    }
    doc["summary"] = _summary(doc)
    doc["wall_seconds"] = round(time.perf_counter() - started, 1)
    _write(out, doc)
    return doc


def _trace_of(case: str, quick: bool) -> str | None:
    """The trace the curve runs for `case` (the real point must come from the same one)."""
    if case == "sia":
        return None
    return "synthetic" if quick else {"standalone": "acme", "lucid": "helios"}[case]


def _real_point(case: str, arm: str, real: Path | None, *, trace: str | None = None) -> dict[str, Any] | None:
    path = real if real is not None else Path(f"results/experiment-{case}/{case}.json")
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    rows = [r for r in doc.get("rows", []) if r.get("arm") == arm and isinstance(r.get("mean_jct"), (int, float))
            and (trace is None or r.get("trace") in (None, trace))]
    if not rows:
        return None
    # `advisor_quality` (sim/experiments/quality.py): {arm: {completed|early_ended|all: {...}}}
    # at the top of standalone.json; per trace under details in lucid.json ({trace: {arm: ...}})
    aq = doc.get("advisor_quality") or (doc.get("details") or {}).get("advisor_quality") or {}
    if isinstance(aq, dict) and arm not in aq:
        aq = aq.get(trace) if isinstance(aq.get(trace), dict) else next(
            (v for v in aq.values() if isinstance(v, dict) and arm in v), {})
    block = aq.get(arm) if isinstance(aq, dict) else None
    comp = block.get("completed") if isinstance(block, dict) else None
    return {
        "mean_jct": float(np.mean([r["mean_jct"] for r in rows])), "seeds": len(rows), "source": str(path),
        "median_abs_ln": comp.get("median_abs_log_ratio") if isinstance(comp, dict) else None,
        "covered_share": comp.get("matched_share") if isinstance(comp, dict) else None,
    }


def _summary(doc: dict[str, Any]) -> str:
    best = doc["best_baseline"]
    parts = [f"value curve ({doc['case']}, {doc['seeds']} seed(s), {doc['label'].split(' (')[0]}): best baseline "
             f"{best['arm']} {best['mean_jct'] / 3600:.2f} h"]
    if doc["oracle"]:
        parts.append(f"oracle {doc['oracle']['arm']} {doc['oracle']['mean_jct'] / 3600:.2f} h "
                     f"(headroom {doc['oracle']['headroom_pct']:+.1f}% over the best baseline)")
    if doc["sigma_axis"]:
        stops = "; ".join(f"coverage {c}: " + (f"stops beating {best['arm']} at sigma {s:g}" if s is not None
                                               else f"beats {best['arm']} at every sigma up to {max(doc['sigmas']):g}")
                          for c, s in doc["stops_helping"].items())
        parts.append(f"{doc['arm']} " + stops)
    else:
        vals = "; ".join(f"coverage {p['coverage']:g}: {p['mean_jct'] / 3600:.2f} h" for p in doc["points"]
                         if p["sigma"] == doc["sigmas"][0])
        parts.append(f"{doc['arm']} reads no duration estimate (sigma axis flat); {vals}")
    rp = doc["real_point"]
    if rp:
        q = f", median |ln| {rp['median_abs_ln']:.2f}" if isinstance(rp.get("median_abs_ln"), (int, float)) else ""
        parts.append(f"real agents {rp['mean_jct'] / 3600:.2f} h{q}")
    else:
        parts.append("real agents' point: no case-study JSON found")
    return "; ".join(parts)


def _write(out: Path, doc: dict[str, Any]) -> None:
    (out / "value_curve.json").write_text(json.dumps(doc, indent=2))
    lines = ["case,sigma,coverage,median_abs_ln,covered_share,mean_jct_s,best_baseline_s,oracle_s"]
    o = doc["oracle"]["mean_jct"] if doc["oracle"] else ""
    for p in doc["points"]:
        lines.append(f"{doc['case']},{p['sigma']},{p['coverage']},{p['median_abs_ln'] if p['median_abs_ln'] is not None else ''},"
                     f"{p['covered_share']},{p['mean_jct']:.3f},{doc['best_baseline']['mean_jct']:.3f},{o}")
    (out / "value_curve.csv").write_text("\n".join(lines) + "\n")
    (out / "summary.txt").write_text(doc["summary"] + "\n")
    plot_value_curve(doc, out / "value_curve.png")


def plot_value_curve(doc: dict[str, Any], path: Path) -> Path:
    """Mean JCT (h) vs sigma, one line per coverage; best baseline and oracle as horizontal lines;
    the real agents' point as a marker (at its measured median |ln| / 0.6745 when known)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for c in doc["coverages"]:
        row = sorted((p for p in doc["points"] if p["coverage"] == c), key=lambda p: p["sigma"])
        ax.plot([p["sigma"] for p in row], [p["mean_jct"] / 3600 for p in row], marker="o",
                label=f"{doc['arm']}, coverage {c:.0%}")
    best = doc["best_baseline"]
    ax.axhline(best["mean_jct"] / 3600, color="k", ls="--", lw=1, label=f"best baseline ({best['arm']})")
    if doc["oracle"]:
        ax.axhline(doc["oracle"]["mean_jct"] / 3600, color="g", ls=":", lw=1.2, label=f"oracle ({doc['oracle']['arm']})")
    rp = doc["real_point"]
    if rp:
        x = rp["median_abs_ln"] / MEDIAN_ABS_Z if isinstance(rp.get("median_abs_ln"), (int, float)) else 0.0
        ax.plot([x], [rp["mean_jct"] / 3600], marker="*", ms=14, color="r", ls="none", label="real agents")
    ax.set_xlabel("estimate noise sigma (median |ln(est/actual)| = 0.674 sigma)")
    ax.set_ylabel("mean JCT (h)")
    ax.set_title(f"Value curve: {doc['case']} (sensitivity, noisy oracle)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
