"""The nightly suites: each runs one agent's existing evaluation (evals/harness) and reduces it to
a few headline figures of the system under test and of an in-run baseline, plus what the report
plots (confusion matrix, relative errors, latencies).

Headline figures are computed here from the harness's per-item rows with one definition for every
system (sklearn), so the system under test, its baseline and the `--degrade` stand-in are scored
alike. `degrade=True` swaps the system under test for a real weak system (majority class, the
last-lines tracker, the same-user advisor baseline): a deliberately degraded configuration whose
figures the guards must flag.
"""

from __future__ import annotations

import csv
import json
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import confusion_matrix, f1_score

Say = Callable[[str], None]


@dataclass
class SuiteResult:
    """One suite's outcome. `metrics`/`baseline` share keys; None = not measurable on this data."""

    name: str
    title: str
    system: str
    baseline_name: str
    metrics: dict[str, float | None] = field(default_factory=dict)
    baseline: dict[str, float | None] = field(default_factory=dict)
    items: int = 0
    seconds: float = 0.0
    note: str = ""
    error: str | None = None
    table: list[dict[str, Any]] = field(default_factory=list)  # per system: name + metrics
    confusion: tuple[list[str], list[list[int]]] | None = None
    rel_errors: dict[str, list[float]] = field(default_factory=dict)
    latencies: dict[str, list[float]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


def _p95(xs: Sequence[float]) -> float | None:
    return float(np.percentile(xs, 95)) if len(xs) else None


def _r(x: float | None, nd: int = 4) -> float | None:
    return None if x is None else round(float(x), nd)


# ------------------------------------------------------------------------------------ failures


def failure_scores(rows: Sequence[dict[str, Any]], pred: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, float | None]:
    """Infra-vs-not F1, category macro-F1, first-line within ±5, p95 latency over failed logs."""
    failed = [r for r in rows if r.get("category")]
    if not failed:
        return {"infra_f1": None, "category_macro_f1": None, "line_within5": None, "latency_p95_s": None}
    truth = [r["category"] for r in failed]
    preds = [pred(r) for r in failed]
    cats = [p.get("category") or "none" for p in preds]
    infra_t = [t == "infrastructure" for t in truth]
    infra_p = [c == "infrastructure" for c in cats]
    within = [p.get("line") is not None and abs(int(p["line"]) - int(r["first_line"])) <= 5 for p, r in zip(preds, failed)]
    lat = [float(p["latency_s"]) for p in preds if p.get("latency_s") is not None]
    return {
        # no infrastructure failure among the labels: F1 is undefined there, not 0
        "infra_f1": _r(f1_score(infra_t, infra_p, zero_division=0.0)) if any(infra_t) else None,
        "category_macro_f1": _r(f1_score(truth, cats, labels=sorted(set(truth)), average="macro", zero_division=0.0)),
        "line_within5": _r(float(np.mean(within))),
        "latency_p95_s": _r(_p95(lat)),
    }


def run_failures_suite(data: Path, *, limit: int | None, devset: Path | None, degrade: bool, say: Say,
                       include_clean: bool = True) -> SuiteResult:
    from schedmate.evals.harness.failures import run_failures

    t0 = time.perf_counter()
    say("failures suite: diagnosing the corpus' logs")
    summary, rows = run_failures(data, llm=None, limit=limit, devset=devset, include_clean=include_clean)
    failed = [r for r in rows if r.get("category")]
    majority = Counter(r["category"] for r in failed).most_common(1)[0][0] if failed else None

    def system(name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
        if name == "majority":
            return lambda r: {"category": majority, "line": None, "latency_s": 0.0}
        return lambda r: r["systems"].get(name) or {}

    names = ["locator+learned", "locator+rules", "last-500", "linear-scan", "no-locator-rules", "majority"]
    table = [{"system": n, **failure_scores(rows, system(n))} for n in names if n == "majority" or
             any(n in r["systems"] for r in failed)]
    sut = "majority" if degrade else "locator+learned"
    labels = sorted({r["category"] for r in failed} | {system(sut)(r).get("category") or "none" for r in failed})
    cm = confusion_matrix([r["category"] for r in failed], [system(sut)(r).get("category") or "none" for r in failed],
                          labels=labels).tolist() if failed else []
    res = SuiteResult("failures", "Failure Handler", sut, "last-500",
                      metrics=failure_scores(rows, system(sut)), baseline=failure_scores(rows, system("last-500")),
                      items=len(failed), table=table, confusion=(labels, cm),
                      latencies={n: [float(r["systems"][n]["latency_s"]) for r in failed if n in r["systems"]]
                                 for n in ("locator+learned", "last-500")},
                      note=f"{len(failed)} failed logs" + (f" and {summary.get('clean_logs', 0)} clean ones (false alarms)"
                                                           if include_clean else " (clean logs skipped in --quick)")
                           + "; a root-cause line counts when within ±5 lines of the labelled one")  # fmt: skip
    dev = summary.get("devset")
    if dev and dev.get("n_items"):
        m = (dev.get("systems") or {}).get("majority" if degrade else "locator+learned") or {}
        b = (dev.get("systems") or {}).get("last-500") or {}
        res.metrics["devset_category_accuracy"] = _r(m.get("category_accuracy")) if not degrade else None
        res.baseline["devset_category_accuracy"] = _r(b.get("category_accuracy"))
        # what to change: remediation key and filled values against the blind labels; baseline: the
        # table's default for the predicted reason (no line read)
        rem = dev.get("remediation") or {}
        if (r := rem.get("locator+learned")) and r.get("n"):
            base = rem.get("reason-default") or {}
            res.metrics["devset_remediation_key_accuracy"] = _r(r.get("key_accuracy")) if not degrade else None
            res.metrics["devset_remediation_values_accuracy"] = _r(r.get("values_accuracy")) if not degrade else None
            res.baseline["devset_remediation_key_accuracy"] = _r(base.get("key_accuracy"))
            res.baseline["devset_remediation_values_accuracy"] = _r(base.get("values_accuracy"))
        res.note += f"; real dev set: {dev['n_items']} items"
    res.seconds = round(time.perf_counter() - t0, 1)
    return res


# ------------------------------------------------------------------------------------- tracker


def run_tracker_suite(data: Path, *, limit: int | None, devset: Path | None, degrade: bool, say: Say) -> SuiteResult:
    from schedmate.evals.harness.metrics import run_metrics

    t0 = time.perf_counter()
    say("tracker suite: reading step times from the corpus' logs")
    summary, rows = run_metrics(data, llm=None, limit=limit)
    systems = summary["systems"]
    sut = "last-lines" if degrade else "tracker"

    def head(name: str) -> dict[str, float | None]:
        a = (systems.get(name) or {}).get("all") or {}
        return {"success_rate": _r(a.get("success_rate")), "rmsre": _r(a.get("rmsre")),
                "latency_p95_s": _r((a.get("latency") or {}).get("p95_s"))}

    def rel(name: str) -> list[float]:
        out = []
        for r in rows:
            t, e = r.get("truth_step_time"), (r["systems"].get(name) or {}).get("step_time")
            if t and e is not None:
                out.append(abs(float(e) - float(t)) / float(t))
        return out

    res = SuiteResult("tracker", "Metric Tracker", sut, "regex-only", metrics=head(sut), baseline=head("regex-only"),
                      items=len(rows), table=[{"system": n, **head(n)} for n in systems],
                      rel_errors={n: rel(n) for n in systems},
                      latencies={n: [float(r["systems"][n]["latency_s"]) for r in rows if n in r["systems"]]
                                 for n in ("tracker", "regex-only")},
                      note=f"{len(rows)} logs; success = step time within ±{int(100 * summary.get('success_tolerance', 0.2))}% "
                           "of the truth (a log without progress must give no signal)")  # fmt: skip
    if devset is not None and devset.is_dir():
        from schedmate.evals.harness.devset_metrics import run_devset_metrics

        say("tracker suite: the real dev set")
        dev, _ = run_devset_metrics(devset, limit=limit)
        d = dev.get("systems") or {}
        pick = "last-lines" if degrade else "regex"
        acc = lambda n: _r((((d.get(n) or {}).get("all") or {}).get("step_time") or {}).get("accuracy"))  # noqa: E731
        res.metrics["devset_step_time_accuracy"] = acc(pick)
        res.baseline["devset_step_time_accuracy"] = acc("last-lines")
        res.note += f"; real dev set: {dev.get('n_items', dev.get('items', '?'))} excerpts"
    res.seconds = round(time.perf_counter() - t0, 1)
    return res


# ------------------------------------------------------------------------------------- advisor


def run_advisor_suite(data: Path, out: Path, *, quick: bool, degrade: bool, say: Say) -> SuiteResult:
    from schedmate.evals.harness.advisor import AdvisorEvalConfig, run_advisor_eval

    t0 = time.perf_counter()
    say("advisor suite: duration and utilisation estimates on a job corpus")
    cfg = (AdvisorEvalConfig(n_history=40, n_new=16, dev_history=30, dev_new=12, threads=(1,), ebm_outer_bags=1,
                             ebm_kwargs={"interactions": 0}, progress=say)
           if quick else AdvisorEvalConfig(threads=(1,), progress=say))  # fmt: skip
    report = run_advisor_eval(data, out, cfg)
    results = report["results"]
    sut = "same_user_gpus" if degrade else "schedmate"

    def head(name: str) -> dict[str, float | None]:
        d = (results.get(name) or {}).get("duration") or {}
        u = (results.get(name) or {}).get("sm_util") or {}
        return {"duration_within_100": _r(d.get("within_100")), "duration_median_rel_err": _r(d.get("median")),
                "sm_util_median_rel_err": _r(u.get("median"))}

    rel: dict[str, list[float]] = {"schedmate": [], "lucid_ebm": [], "same_user_gpus": []}
    jobs = Path(out) / "advisor_jobs.jsonl"
    for line in jobs.read_text(encoding="utf-8").splitlines() if jobs.is_file() else []:
        j = json.loads(line)
        t = j.get("truth_duration_s")
        if "agent" in j or not t:
            continue
        ests = {"schedmate": (j.get("schedmate") or {}).get("duration_s"),
                "lucid_ebm": (j.get("lucid_ebm") or [None])[0], "same_user_gpus": (j.get("same_user_gpus") or [None])[0]}
        for k, e in ests.items():
            if e is not None:
                rel[k].append(abs(float(e) - float(t)) / float(t))
    head_sut = head(sut)
    head_sut["latency_p90_s"] = _r(((report.get("latency_s") or {}).get("total") or {}).get("p90"))
    res = SuiteResult("advisor", "Scheduling Advisor", sut, "lucid_ebm", metrics=head_sut, baseline=head("lucid_ebm"),
                      items=int((report.get("corpus") or {}).get("eval", {}).get("new", 0)),
                      table=[{"system": n, **head(n)} for n in ("schedmate", "schedmate_rate", "lucid_ebm", "same_user_gpus")],
                      rel_errors=rel,
                      note=f"{(report.get('corpus') or {}).get('eval', {}).get('history')} past jobs, "
                           f"{(report.get('corpus') or {}).get('eval', {}).get('new')} new jobs; "
                           f"static field accuracy {((report.get('extraction') or {}).get('static_new') or {}).get('mean_scored', 0):.1%}")  # fmt: skip
    res.extra["latency"] = report.get("latency_s")
    res.seconds = round(time.perf_counter() - t0, 1)
    return res


# -------------------------------------------------------------------------------------- loghub

LOGHUB_SETS = ("BGL", "Thunderbird")
KEYWORDS = re.compile(  # the trivial baseline (same as bench/bench_loghub.py)
    r"\b(?:error|errors|fail(?:ed|ure|ing)?|fatal|critical|panic|exception|abort(?:ed)?|timeout|timed out"
    r"|interrupt|corrupt(?:ed)?|denied|refused|unable|cannot|can't|killed|segfault|warn(?:ing)?)\b", re.IGNORECASE)


def _alert_scores(truth: Sequence[bool], pred: Sequence[bool]) -> dict[str, float | None]:
    """F1 on alerts (None when the sample holds no alert: Thunderbird's 2k sample has none) and
    the false-alarm rate on normal lines."""
    normal = [p for t, p in zip(truth, pred) if not t]
    return {"f1": _r(f1_score(truth, pred, zero_division=0.0)) if any(truth) else None,
            "false_alarm_rate": _r(sum(normal) / len(normal)) if normal else None}


def run_loghub_suite(root: Path | None, *, lines: int | None, degrade: bool, say: Say) -> SuiteResult:
    """The line classifier as an alert detector on Loghub's labelled BGL / Thunderbird samples
    (transfer: nothing was tuned on Loghub). A line is an alert when the classifier says `error`."""
    from schedmate.embeddings.classifier import Category, LineClassifier
    from schedmate.embeddings.embedder import make_embedder

    t0 = time.perf_counter()
    sut = "majority" if degrade else "classifier"
    res = SuiteResult("loghub", "Line classifier on Loghub alerts", sut, "keywords")
    files = [root / n / f"{n}_2k.log_structured.csv" for n in LOGHUB_SETS] if root else []
    files = [f for f in files if f.is_file()]
    if not files:
        res.note = f"skipped: no Loghub *_2k.log_structured.csv under {root or '<no shared data dir>'}"
        return res
    say("loghub suite: classifying labelled system-log lines")
    classifier = LineClassifier(make_embedder())
    truth_all: list[bool] = []
    pred_all: dict[str, list[bool]] = {"classifier": [], "keywords": [], "majority": []}
    lat: list[float] = []
    for f in files:
        with f.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
        if lines and len(rows) > lines:  # an even sample over the file: alerts come in bursts
            rows = rows[:: -(-len(rows) // lines)]
        contents = [r["Content"] for r in rows]
        truth = [r["Label"] != "-" for r in rows]
        s = time.perf_counter()
        labels = classifier.classify_lines(contents)
        lat.append((time.perf_counter() - s) / max(1, len(rows)))
        preds = {"classifier": [lab.category is Category.ERROR for lab in labels],
                 "keywords": [bool(KEYWORDS.search(c)) for c in contents], "majority": [False] * len(rows)}
        for k, v in preds.items():
            pred_all[k] += v
            res.table.append({"system": f"{k} ({f.parent.name})", **_alert_scores(truth, v),
                              "alerts": sum(truth), "lines": len(rows)})
        name = f.parent.name.lower()
        for key, val in _alert_scores(truth, preds[sut]).items():
            res.metrics[f"{name}_{key}"] = val
        for key, val in _alert_scores(truth, preds["keywords"]).items():
            res.baseline[f"{name}_{key}"] = val
        truth_all += truth
    cm = confusion_matrix(truth_all, pred_all[sut], labels=[False, True]).tolist()
    res.confusion = (["normal", "alert"], cm)
    res.metrics["ms_per_line"] = _r(1000 * float(np.mean(lat)), 3)
    res.items = len(truth_all)
    res.note = f"{len(truth_all)} lines ({sum(truth_all)} alerts) from {', '.join(f.parent.name for f in files)}" + (
        f", an even sample of about {lines} from each" if lines else "")
    res.seconds = round(time.perf_counter() - t0, 1)
    return res
