"""The Metric Tracker on the REAL development set (`evals/devset/progress`, `schedmate.devset`):
short excerpts of public training logs, labelled with the values of their last complete
training progress line.

Systems (one pass per excerpt):

- ``regex``      `MetricTracker(classifier, llm=None)`: the framework regexes/recognisers, dedup,
  newest-regime and MAD aggregation; no LLM (the classifier is not consulted without one); scored
  on its newest line's reading (`MetricEstimate.last`: the last step time, as the labels are);
- ``regex-smoothed`` the same tracker's steady window estimate (`MetricEstimate.value`, what its
  slowdown check compares), scored against the same last-line labels;
- ``tracker``    the same with the LLM fallback (only with an LLM);
- ``pure-llm``   the paper's baseline: the LLM reads the tail alone (`llm_baseline`), its answer
  taken as given; ``pure-llm+validation``: that answer read back from a training line of the
  tail (`validate_tail`), i.e. what the fallback's checks leave of it (only with an LLM);
- ``last-lines`` the naive tail reader: the regexes on the last 100 lines, plain mean of the
  newest 20 that state a step time (or an it/s rate).

Scoring, per labelled metric (and, for the trackers, whether the newest line behind the
step time is the labelled last training line: `newest_line_is_last_line`): a value within ±10% of the label (relative) is correct; no value
is `missed`; a throughput is compared only in the label's unit (an it/s label also accepts
1/step time). A step time is the system's step time, else 1/(it/s or steps/s). `wins[a][b]`:
excerpts where `a` got the step time right and `b` did not (where each system won). Items of
`low` labelling confidence are scored, and also reported apart (`high_medium`).

An empty or missing folder, or one being filled (a label file that does not parse yet), is
reported (`items`, `load_errors`), never fatal.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from pydantic import ValidationError

from schedmate.agents.tracker import MetricTracker, NoSignal, regex_extract
from schedmate.agents.tracker.llm_baseline import llm_tail_metrics
from schedmate.devset import DevSetError, ProgressItem, load_progress_items
from schedmate.embeddings.logtext import normalise_line
from schedmate.evals.harness.common import latency_summary, ratio
from schedmate.htmlreport import Block, Report, Section, Table, Verdict, write_html, write_markdown
from schedmate.llm_breaker import describe_llm, model_call_counts
from schedmate.structured import Method

TOLERANCE = 0.10
N_LINES = 20
LAST_LINES = 100
DEFAULT_FOLDER = Path(__file__).resolve().parents[1] / "devset" / "progress"  # evals/devset/progress of this checkout
METRICS = ("step_time", "loss", "throughput")

Progress = Callable[[int, int], None]


@dataclass
class Prediction:
    step_time_s: float | None = None
    loss: float | None = None
    throughput: float | None = None
    throughput_unit: str | None = None
    latency_s: float = 0.0
    no_signal: bool = False
    method: str | None = None
    format: str | None = None
    error: str | None = None
    llm_calls: int = 0
    newest_line: int | None = None  # 1-based line of the newest line behind the step time (trackers)
    rule: str | None = None  # which rule read the step time (`extraction.TimeRule`; trackers)
    confidence: float | None = None  # the step time's confidence (trackers)


def norm_unit(unit: str | None) -> str | None:
    """Unit spellings folded together (`samples/sec` = `samples/s`, `steps/s` = `it/s`, ...)."""
    if not unit:
        return None
    u = unit.strip().lower().replace("/sec", "/s").replace("per second", "/s").replace(" ", "")
    if u.startswith(("tok", "word", "wps", "tps")):
        return "tokens/s"
    if u.startswith(("sample", "ex", "ips", "seq")):
        return "samples/s" if not u.startswith("seq") else "sequences/s"
    if u.startswith(("img", "image")):
        return "images/s"
    if u.startswith(("it/", "step", "batch", "iter", "ups")):
        return "it/s"
    return u


def _step_time(st: float | None, rate: float | None, unit: str | None) -> float | None:
    if st is not None and st > 0:
        return st
    if rate is not None and rate > 0 and norm_unit(unit) == "it/s":
        return 1.0 / rate
    return None


# -- systems ---------------------------------------------------------------------------------------


def _tracker(tracker: MetricTracker, path: Path, *, reading: str = "last") -> Prediction:
    """`reading`: "last", the newest line's values (what the labels are); "smoothed", the steady
    window estimate the tracker also reports (for slowdown checks)."""
    t0 = time.perf_counter()
    res = tracker.observe(path)
    dt = time.perf_counter() - t0
    if isinstance(res, NoSignal):  # a TrackerReport is always ok
        return Prediction(latency_s=dt, no_signal=True, error=res.reason, llm_calls=res.stats.llm_calls)

    def pick(est: Any) -> float | None:
        if est is None:
            return None
        return est.last if reading == "last" and est.last is not None else est.value

    tp = res.throughput
    st = pick(res.step_time)
    return Prediction(
        _step_time(st, pick(tp), tp.unit if tp else None),
        res.loss.value if res.loss else None,
        pick(tp),
        tp.unit if tp else None,
        dt, False, res.method, res.step_time.format if res.step_time else (tp.format if tp else None),
        None, res.stats.llm_calls,
        next((src.lineno for src in est.lines[:1]), None) if (est := res.step_time or tp) else None,
        res.step_time.rule if res.step_time else None,
        res.step_time.confidence if res.step_time else None,
    )  # fmt: skip


def _last_lines(path: Path) -> Prediction:
    t0 = time.perf_counter()
    raws = path.read_bytes().split(b"\n")[-(LAST_LINES + 1) :]
    times: list[float] = []
    loss = rate = unit = None
    for raw in reversed(raws):
        line = normalise_line(raw)
        if line.binary or not line.text.strip():
            continue
        ex = regex_extract(line.text)
        if ex is None or not ex.has_metric:
            continue
        loss = ex.loss if loss is None else loss
        if rate is None and ex.throughput is not None:
            rate, unit = ex.throughput, ex.throughput_unit
        st = _step_time(ex.step_time_s, ex.throughput, ex.throughput_unit)
        if st is not None:
            times.append(st)
            if len(times) >= N_LINES:
                break
    mean = sum(times) / len(times) if times else None
    p = Prediction(mean, loss, rate, unit, time.perf_counter() - t0)
    p.no_signal = mean is None and loss is None and rate is None
    return p


def _pure_llm(model: BaseChatModel, path: Path, method: Method) -> tuple[Prediction, Prediction]:
    t0 = time.perf_counter()
    reading = llm_tail_metrics(model, path, method=method)
    dt = time.perf_counter() - t0
    if reading.raw is None:
        failed = Prediction(latency_s=dt, no_signal=True, error=reading.error, llm_calls=1)
        return failed, Prediction(**{**asdict(failed)})
    a = reading.raw
    raw = Prediction(_step_time(a.step_time_s, a.throughput, a.throughput_unit), a.loss, a.throughput,
                     a.throughput_unit, dt, method="llm", llm_calls=1)  # fmt: skip
    v = reading.validated
    if v is None:
        why = "; ".join(f"{r.field}: {r.reason}" for r in reading.rejections) or "nothing validated"
        return raw, Prediction(latency_s=dt, no_signal=True, error=why, llm_calls=1)
    checked = Prediction(_step_time(v.step_time_s, v.throughput, v.throughput_unit), v.loss, v.throughput,
                         v.throughput_unit, dt, method="llm", llm_calls=1)  # fmt: skip
    return raw, checked


# -- scoring ---------------------------------------------------------------------------------------


def _close(pred: float | None, truth: float) -> bool | None:
    if pred is None:
        return None
    return abs(pred - truth) <= TOLERANCE * abs(truth) + 1e-12


def judge(item: ProgressItem, p: Prediction) -> dict[str, bool | None]:
    """Per metric: True (within ±10%), False (wrong), None (missed); absent when not labelled."""
    out: dict[str, bool | None] = {}
    if item.step_time_s is not None:
        out["step_time"] = _close(p.step_time_s, item.step_time_s)
    if item.loss is not None:
        out["loss"] = _close(p.loss, item.loss)
    if item.throughput is not None:
        want = norm_unit(item.throughput_unit)
        value = p.throughput if norm_unit(p.throughput_unit) == want else None
        if value is None and want == "it/s" and p.step_time_s:
            value = 1.0 / p.step_time_s
        out["throughput"] = _close(value, item.throughput)
    return out


def _score(rows: list[dict[str, Any]], system: str) -> dict[str, Any]:
    sel = [r for r in rows if system in r["systems"]]
    out: dict[str, Any] = {"n": len(sel)}
    for metric in METRICS:
        judged = [r["systems"][system]["judged"].get(metric, "absent") for r in sel]
        judged = [j for j in judged if j != "absent"]
        right = sum(j is True for j in judged)
        out[metric] = {
            "labelled": len(judged),
            "correct": right,
            "wrong": sum(j is False for j in judged),
            "missed": sum(j is None for j in judged),
            "accuracy": ratio(right, len(judged)),
        }
    out["no_signal"] = sum(r["systems"][system]["no_signal"] for r in sel)
    lined = [r for r in sel if r["systems"][system]["newest_line"] is not None]
    out["newest_line_is_last_line"] = ratio(sum(r["systems"][system]["newest_line"] == r["last_line"] for r in lined), len(lined))
    out["latency"] = latency_summary([r["systems"][system]["latency_s"] for r in sel])
    out["llm_calls"] = sum(r["systems"][system]["llm_calls"] for r in sel)
    return out


def _wins(rows: list[dict[str, Any]], systems: Sequence[str]) -> dict[str, dict[str, int]]:
    def right(r: dict[str, Any], s: str) -> bool:
        return r["systems"].get(s, {}).get("judged", {}).get("step_time") is True

    labelled = [r for r in rows if r["step_time_s"] is not None]
    return {a: {b: sum(right(r, a) and not right(r, b) for r in labelled) for b in systems if b != a} for a in systems}


THRESHOLDS = (0.9, 0.8, 0.6, 0.4, 0.0)


def coverage_accuracy(rows: list[dict[str, Any]], system: str) -> list[dict[str, Any]]:
    """Abstaining below a confidence threshold: per threshold, the share of step-time-labelled
    items answered (coverage) and the share of those answered right (accuracy)."""
    labelled = [r for r in rows if r["step_time_s"] is not None and system in r["systems"]]
    out = []
    for t in THRESHOLDS:
        answered = [r for r in labelled if (c := r["systems"][system].get("confidence")) is not None and c >= t
                    and r["systems"][system]["judged"].get("step_time") is not None]  # fmt: skip
        right = sum(r["systems"][system]["judged"]["step_time"] is True for r in answered)
        out.append({"threshold": t, "answered": len(answered), "labelled": len(labelled),
                    "coverage": ratio(len(answered), len(labelled)), "accuracy": ratio(right, len(answered))})  # fmt: skip
    return out


def _by_rule(rows: list[dict[str, Any]], system: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        p = r["systems"].get(system, {})
        j = p.get("judged", {}).get("step_time")
        if r["step_time_s"] is None or p.get("rule") is None or j is None:
            continue
        d = out.setdefault(p["rule"], {"n": 0, "correct": 0})
        d["n"] += 1
        d["correct"] += j is True
    for d in out.values():
        d["accuracy"] = ratio(d["correct"], d["n"])
    return out


# -- loading ---------------------------------------------------------------------------------------


def load_items(folder: Path) -> tuple[list[tuple[Path, ProgressItem]], list[str]]:
    """The labelled excerpts; a folder being filled loads item by item, skipping (and naming)
    lines that do not parse yet or whose excerpt is missing."""
    if not folder.is_dir():
        return [], [f"{folder}: no such folder"]
    try:
        return load_progress_items(folder), []
    except DevSetError as exc:
        first = str(exc)
    items: list[tuple[Path, ProgressItem]] = []
    errors = [first]
    seen: set[str] = set()
    for labels in sorted(folder.glob("labels*.jsonl")):
        for n, line in enumerate(labels.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                item = ProgressItem.model_validate(json.loads(line))
            except (json.JSONDecodeError, ValidationError) as exc:
                errors.append(f"{labels.name}:{n}: {type(exc).__name__}")
                continue
            path = folder / item.file
            if not path.is_file() or item.id in seen:
                errors.append(f"{labels.name}:{n}: {item.id}: missing excerpt or duplicate id")
                continue
            seen.add(item.id)
            items.append((path, item))
    return items, errors


# -- run -------------------------------------------------------------------------------------------


def run_devset_metrics(
    folder: str | Path = DEFAULT_FOLDER,
    *,
    llm: BaseChatModel | None = None,
    classifier: Any = None,
    progress: Progress | None = None,
    limit: int | None = None,
    llm_method: Method = "function_calling",
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Score every system on the real excerpts; returns (summary, per-item rows). `llm_method`:
    how structured answers are asked for (`schedmate.structured`; "text" for plain chat models)."""
    t_start = time.perf_counter()
    llm_before = model_call_counts(llm)  # what this run's LLM calls did, for the report's LLM line
    folder = Path(folder)
    items, errors = load_items(folder)
    items = items[:limit] if limit is not None else items
    systems = ["regex", "regex-smoothed", "last-lines"] + (["tracker", "pure-llm", "pure-llm+validation"] if llm is not None else [])
    rows: list[dict[str, Any]] = []
    regex: MetricTracker | None = None
    full: MetricTracker | None = None
    if items:
        if classifier is None:
            from schedmate.evals.harness.common import default_classifier

            classifier = default_classifier()
        regex = MetricTracker(classifier, None, max_lines=N_LINES)
        full = MetricTracker(classifier, llm, max_lines=N_LINES, llm_method=llm_method) if llm is not None else None
    for i, (path, item) in enumerate(items):
        assert regex is not None
        preds: dict[str, Prediction] = {"regex": _tracker(regex, path), "regex-smoothed": _tracker(regex, path, reading="smoothed"),
                                        "last-lines": _last_lines(path)}
        if full is not None and llm is not None:
            preds["tracker"] = _tracker(full, path)
            preds["pure-llm"], preds["pure-llm+validation"] = _pure_llm(llm, path, llm_method)
        rows.append({
            "id": item.id, "framework": item.framework, "confidence": item.confidence, "file": item.file,
            "last_line": item.last_line, "step_time_s": item.step_time_s, "loss": item.loss,
            "throughput": item.throughput, "throughput_unit": item.throughput_unit,
            "systems": {k: {**asdict(p), "judged": judge(item, p)} for k, p in preds.items()},
        })  # fmt: skip
        if progress is not None:
            progress(i + 1, len(items))
    sure = [r for r in rows if r["confidence"] != "low"]
    frameworks = sorted({r["framework"] for r in rows})
    main = "tracker" if llm is not None else "regex"
    summary: dict[str, Any] = {
        "folder": str(folder),
        "items": len(rows),
        "load_errors": errors,
        "llm": llm is not None,
        "llm_calls": (None if llm_before is None or (now := model_call_counts(llm)) is None
                      else asdict(now - llm_before)),  # fmt: skip
        "tolerance": TOLERANCE,
        "systems": {s: {"all": _score(rows, s), "high_medium": _score(sure, s)} for s in systems},
        "by_framework": {f: _score([r for r in rows if r["framework"] == f], main) for f in frameworks},
        # per collection batch (the id's prefix: p, pc, ...): blind for the code that predates it
        "by_batch": {b: {s: _score([r for r in rows if r["id"].split("-", 1)[0] == b], s) for s in systems}
                     for b in sorted({r["id"].split("-", 1)[0] for r in rows})},
        "by_framework_system": main,
        "wins_step_time": _wins(rows, systems),
        "step_time_coverage": coverage_accuracy(rows, main),
        "step_time_by_rule": _by_rule(rows, main),
        "wall_s": round(time.perf_counter() - t_start, 2),
    }
    return summary, rows


def summary_line(summary: dict[str, Any]) -> str:
    if not summary["items"]:
        return f"devset metrics: no items under {summary['folder']}" + (f" ({summary['load_errors'][0]})" if summary["load_errors"] else "")
    parts = []
    for name, s in summary["systems"].items():
        m = s["all"]
        parts.append(f"{name}: step time ±10% {_pct(m['step_time']['accuracy'])} loss {_pct(m['loss']['accuracy'])} "
                     f"throughput {_pct(m['throughput']['accuracy'])}")  # fmt: skip
    return f"devset metrics: {summary['items']} real logs | " + " | ".join(parts)


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def devset_report(summary: dict[str, Any]) -> Report:
    """The summary as one `Report` (Markdown and HTML through the shared renderers)."""
    intro = (f"Folder `{summary['folder']}`: {summary['items']} labelled excerpts; "
             f"{describe_llm(summary['llm'], summary.get('llm_calls'))}; correct = within ±{int(100 * summary['tolerance'])}% "
             f"of the last training line's value; wall {summary['wall_s']} s.")
    if summary["load_errors"]:
        intro += f"\n\nLoad problems ({len(summary['load_errors'])}): " + "; ".join(summary["load_errors"][:5])
    rows = []
    for name, s in summary["systems"].items():
        m = s["all"]
        st = m["step_time"]
        mean = m["latency"]["mean_s"]
        rows.append([name, m["n"], f"{_pct(st['accuracy'])} ({st['correct']}/{st['labelled']})", st["missed"],
                     _pct(m["loss"]["accuracy"]), _pct(m["throughput"]["accuracy"]), m["no_signal"],
                     "–" if mean is None else f"{1000 * mean:.1f}", m["llm_calls"]])
    blocks: list[Block] = [Table(["system", "items", "step time ±10%", "missed", "loss ±10%", "throughput ±10%", "no signal",
                                  "mean ms", "LLM calls"], rows)]
    if summary["by_framework"]:
        blocks.append(Table(["framework", "n", "step time ±10%", "loss ±10%", "throughput ±10%"],
                            [[fw, m["n"], _pct(m["step_time"]["accuracy"]), _pct(m["loss"]["accuracy"]),
                              _pct(m["throughput"]["accuracy"])] for fw, m in summary["by_framework"].items()],
                            caption=f"By framework ({summary['by_framework_system']}):"))
    cov = summary.get("step_time_coverage") or []
    if cov and cov[0]["labelled"]:
        blocks.append(Table(["confidence >=", "answered", "coverage", "accuracy"],
                            [[f"{c['threshold']:.1f}", f"{c['answered']}/{c['labelled']}", _pct(c["coverage"]),
                              _pct(c["accuracy"])] for c in cov],
                            caption=f"Step time by confidence ({summary['by_framework_system']}; abstain below the threshold):"))
        rules = summary.get("step_time_by_rule") or {}
        if rules:
            blocks.append(Table(["rule", "n", "step time ±10%"],
                                [[name, d["n"], _pct(d["accuracy"])] for name, d in sorted(rules.items(), key=lambda kv: -kv[1]["n"])]))
    wins = summary["wins_step_time"]
    if wins:
        names = list(wins)
        blocks.append(Table(["", *names], [[a, *("" if a == b else str(wins[a][b]) for b in names)] for a in names],
                            caption="Where each won (step time right in the row's system, not in the column's):"))
    line = summary.get("summary_line") or summary_line(summary)
    return Report("SchedMate Metric Tracker: real development set", Verdict(line.split(" | ")[0], points=[line]),
                  [Section("Metrics on the real development set", blocks, intro=intro)],
                  footer="Regenerate with `schedmate eval metrics --out DIR` (the real dev set is on by default); every figure is in `devset_metrics.json`.")


def write_devset_report(out_dir: str | Path, summary: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """devset_metrics.json (summary), devset_metrics_items.jsonl (rows), devset_metrics.md/.html; the one-line summary."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    line = summary_line(summary)
    (out / "devset_metrics.json").write_text(json.dumps({**summary, "summary_line": line}, indent=1) + "\n", encoding="utf-8")
    with open(out / "devset_metrics_items.jsonl", "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    people = devset_report({**summary, "summary_line": line})
    write_markdown(people, out / "devset_metrics.md")
    write_html(people, out / "devset_metrics.html")
    return line


__all__ = ["DEFAULT_FOLDER", "Prediction", "coverage_accuracy", "devset_report", "judge", "load_items", "norm_unit", "run_devset_metrics",
           "summary_line", "write_devset_report"]  # fmt: skip
