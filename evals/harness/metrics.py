"""Metrics suite: the Metric Tracker's step time against the corpus truth, beside two baselines.

Systems (one pass per log, newest lines first, `N` = 20 lines):

- ``tracker``     `MetricTracker(classifier, llm).observe(path)`: core line classifier, regex fast
  path, LLM fallback when an LLM is given (else regex only), dedup, MAD outlier removal;
- ``regex-only``  no classifier, no LLM, no outlier removal: the framework regexes on every line
  from the end of the file, plain mean of the first `N` lines that state a time or a rate;
- ``last-lines``  the naive tail reader: the same regexes on the last 100 lines only;
- ``pure-llm``    (only with an LLM) the paper's baseline: the LLM reads the log's tail alone
  (`agents.tracker.llm_baseline`), its answer taken as given (slow on CPU: one call per log).

The real development set (`evals/devset/progress`) is scored by `devset_metrics.py`.

Truth: the mean true step time of the log's last `N` progress events (distinct steps) = the
"current" step time a scheduler asks for at the log's end. A step time is read directly, or
derived from a rate: it/s → 1/r, samples/s → global_batch/r, tokens/s → global_batch·seq/r
(the scheduler knows its job's batch shape; TFLOP/s is not converted).

Success (per log): the log has progress lines and the estimate is within ±20% of the truth
(relative error ≤ 0.2), or the log has none and the system says "no signal". RMSRE =
sqrt(mean(rel_err²)) over the logs with progress where the system gave an estimate (failures
to extract do not enter it; they are counted in the success rate); ``rmsre_success`` is the
same over the successes only. Clean/noisy halves: split at the median `spec.noise_level`
(share of training-phase lines that are not progress) of the evaluated logs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.language_models import BaseChatModel

from schedmate.agents.tracker import MetricTracker, NoSignal, regex_extract
from schedmate.agents.tracker.llm_baseline import llm_tail_metrics
from schedmate.agents.tracker.regex_extractors import Extraction
from schedmate.embeddings.logtext import normalise_line
from schedmate.evals.harness.common import (
    Progress,
    default_classifier,
    latency_summary,
    load_corpus,
    log_path,
    ratio,
    rmsre,
)
from schedmate.llm_breaker import model_call_counts
from schedmate.loglabels import LogLabels

SUCCESS_TOLERANCE = 0.2
N_LINES = 20
LAST_LINES = 100
SYSTEMS = ("tracker", "regex-only", "last-lines")
LLM_SYSTEMS = ("pure-llm",)


@dataclass
class MetricPrediction:
    step_time: float | None = None
    via: str | None = None  # step_time | it/s | samples/s | tokens/s
    latency_s: float = 0.0
    no_signal: bool = False
    llm_calls: int = 0
    method: str | None = None


def truth_step_time(lab: LogLabels, n: int = N_LINES) -> float | None:
    """Mean true step time over the last `n` distinct progress events, None when no progress."""
    tr = lab.truth
    if len(tr.progress_lines) == 0:
        return None
    steps: np.ndarray = np.asarray(tr.steps)
    keep = np.ones(len(steps), dtype=bool)
    keep[:-1] = steps[1:] != steps[:-1]  # last entry of each event (an event may span lines)
    st: np.ndarray = np.asarray(tr.step_time)[keep][-n:]
    return float(st.mean()) if len(st) else None


def step_time_from(step_time: float | None, rate: float | None, unit: str | None, lab: LogLabels) -> tuple[float | None, str | None]:
    if step_time is not None and step_time > 0:
        return step_time, "step_time"
    if rate is None or rate <= 0 or unit is None:
        return None, None
    u = unit.lower()
    if u in ("it/s", "steps/s", "step/s"):
        return 1.0 / rate, u
    if u.startswith("samples"):
        return lab.truth.global_batch_size / rate, u
    if u.startswith("tokens"):
        return lab.truth.global_batch_size * lab.truth.seq_length / rate, u
    return None, None


def _tracker(tracker: MetricTracker, path: Path, lab: LogLabels) -> MetricPrediction:
    t0 = time.perf_counter()
    res = tracker.observe(path)
    dt = time.perf_counter() - t0
    if isinstance(res, NoSignal) or not res.ok:
        return MetricPrediction(latency_s=dt, no_signal=True, llm_calls=res.stats.llm_calls)
    st = res.step_time.value if res.step_time else None
    tp = res.throughput
    value, via = step_time_from(st, tp.value if tp else None, tp.unit if tp else None, lab)
    return MetricPrediction(value, via, dt, value is None, res.stats.llm_calls, res.method)


def _regex_lines(raws: Sequence[bytes], lab: LogLabels, n: int) -> tuple[float | None, str | None]:
    """Plain mean of the step times read from the newest `n` lines stating a time or a rate."""
    vals: dict[str, list[float]] = {}
    got = 0
    for raw in reversed(raws):
        if not raw:
            continue
        line = normalise_line(raw)
        if line.binary:
            continue
        ex: Extraction | None = regex_extract(line.text)
        if ex is None:
            continue
        v, via = step_time_from(ex.step_time_s, ex.throughput, ex.throughput_unit, lab)
        if v is None:
            continue
        vals.setdefault(via or "", []).append(v)
        got += 1
        if got >= n:
            break
    if not vals:
        return None, None
    via = "step_time" if "step_time" in vals else max(vals, key=lambda k: len(vals[k]))
    return float(np.mean(vals[via])), via


def _regex_only(path: Path, lab: LogLabels) -> MetricPrediction:
    t0 = time.perf_counter()
    raws = path.read_bytes().split(b"\n")
    v, via = _regex_lines(raws, lab, N_LINES)
    return MetricPrediction(v, via, time.perf_counter() - t0, v is None)


def _last_lines(path: Path, lab: LogLabels) -> MetricPrediction:
    t0 = time.perf_counter()
    with open(path, "rb") as fh:
        size = fh.seek(0, 2)
        block = 1 << 16
        data = b""
        while True:
            start = max(0, size - block)
            fh.seek(start)
            data = fh.read(size - start)
            if start == 0 or data.count(b"\n") > LAST_LINES + 1:
                break
            block *= 4
    raws = data.split(b"\n")[-(LAST_LINES + 1):]
    v, via = _regex_lines(raws, lab, N_LINES)
    return MetricPrediction(v, via, time.perf_counter() - t0, v is None)


def _pure_llm(model: BaseChatModel, path: Path, lab: LogLabels) -> MetricPrediction:
    t0 = time.perf_counter()
    reading = llm_tail_metrics(model, path)
    dt = time.perf_counter() - t0
    a = reading.raw
    if a is None:
        return MetricPrediction(latency_s=dt, no_signal=True, llm_calls=1, method="llm")
    value, via = step_time_from(a.step_time_s, a.throughput, a.throughput_unit, lab)
    return MetricPrediction(value, via, dt, value is None, 1, "llm")


def _score(rows: list[dict[str, Any]], system: str) -> dict[str, Any]:
    n = len(rows)
    if n == 0:
        return {"n": 0}
    ok = 0
    rel_all: list[float] = []
    rel_ok: list[float] = []
    signal = [r for r in rows if r["truth_step_time"] is not None]
    false_signal = missed = 0
    for r in rows:
        p = r["systems"][system]
        truth = r["truth_step_time"]
        if truth is None:
            ok += p["step_time"] is None
            false_signal += p["step_time"] is not None
            continue
        if p["step_time"] is None:
            missed += 1
            continue
        rel = abs(p["step_time"] - truth) / truth
        rel_all.append(rel)
        if rel <= SUCCESS_TOLERANCE:
            ok += 1
            rel_ok.append(rel)
    return {
        "n": n,
        "with_progress": len(signal),
        "success_rate": ratio(ok, n),
        "success_rate_with_progress": ratio(len(rel_ok), len(signal)),
        "rmsre": rmsre(rel_all),
        "rmsre_success": rmsre(rel_ok),
        "median_rel_err": round(float(np.median(rel_all)), 4) if rel_all else None,
        "estimates": len(rel_all),
        "missed": missed,
        "false_signal": false_signal,
        "latency": latency_summary([r["systems"][system]["latency_s"] for r in rows]),
        "llm_calls": sum(r["systems"][system]["llm_calls"] for r in rows),
    }


def run_metrics(
    data_dir: str | Path,
    *,
    llm: BaseChatModel | None = None,
    limit: int | None = None,
    progress: Progress | None = None,
    classifier: Any = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Score the tracker and the baselines on every log of the corpus; returns (summary, rows)."""
    t_start = time.perf_counter()
    llm_before = model_call_counts(llm)  # what this run's LLM calls did, for the report's LLM line
    labels = load_corpus(data_dir, limit)
    t_cls = time.perf_counter()
    classifier = classifier if classifier is not None else default_classifier()
    load_s = time.perf_counter() - t_cls
    tracker = MetricTracker(classifier, llm, max_lines=N_LINES)
    rows: list[dict[str, Any]] = []
    vanished: list[str] = []  # logs deleted after `load_corpus` checked them: the rest is still scored
    for i, lab in enumerate(labels):
        path = log_path(data_dir, lab)
        if not path.is_file():
            vanished.append(str(path))
            continue
        preds = {"tracker": _tracker(tracker, path, lab), "regex-only": _regex_only(path, lab),
                 "last-lines": _last_lines(path, lab)}  # fmt: skip
        if llm is not None:
            preds["pure-llm"] = _pure_llm(llm, path, lab)
        rows.append({
            "id": lab.id, "framework": lab.framework.value, "variant": lab.variant, "status": lab.status.value,
            "n_lines": lab.n_lines, "noise_level": lab.spec.noise_level, "truth_step_time": truth_step_time(lab),
            "systems": {k: asdict(v) for k, v in preds.items()},
        })  # fmt: skip
        if progress is not None:
            progress(i + 1, len(labels))
    levels = [r["noise_level"] for r in rows if r["noise_level"] is not None]
    cut = float(np.median(levels)) if levels else math.inf
    clean = [r for r in rows if (r["noise_level"] or 0.0) <= cut]
    noisy = [r for r in rows if (r["noise_level"] or 0.0) > cut]
    frameworks = sorted({r["framework"] for r in rows})
    summary: dict[str, Any] = {
        "data_dir": str(data_dir),
        "logs": len(rows),
        "vanished_logs": vanished,
        "llm": llm is not None,
        "llm_calls": (None if llm_before is None or (now := model_call_counts(llm)) is None
                      else asdict(now - llm_before)),  # fmt: skip
        "n_lines": N_LINES,
        "success_tolerance": SUCCESS_TOLERANCE,
        "noise_split": {"median_noise_level": None if not levels else round(cut, 4), "clean": len(clean), "noisy": len(noisy)},
        "systems": {s: {"all": _score(rows, s), "clean": _score(clean, s), "noisy": _score(noisy, s)}
                    for s in SYSTEMS + (LLM_SYSTEMS if llm is not None else ())},
        "tracker_by_framework": {f: _score([r for r in rows if r["framework"] == f], "tracker") for f in frameworks},
        "classifier_load_s": round(load_s, 3),
        "wall_s": round(time.perf_counter() - t_start, 2),
    }
    return summary, rows
