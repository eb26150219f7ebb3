"""Failures suite: the Failure Handler's locator + classifiers against the baselines and ablations.

Every failed log of the corpus is diagnosed by every system in one run (same logs, same line
classifier, whose template caches warm up over the run as in production):

- ``locator+rules``   `FailureHandler.diagnose` without an LLM (binary-search locator, signature
  rules on the 200-line window around the located line);
- ``locator+llm``     `FailureHandler.diagnose` with the LLM (rules cross-check: `combine`), and
  ``locator+llm-raw`` the LLM's own answer from that same call (no cross-check; no extra call);
- ``binary+rules``    the binary-search locator with exactly the baselines' classification (signature
  rules on the window): beside ``last-500`` and ``linear-scan`` it isolates what locating adds,
  whatever the handler's own classifier does;
- ``linear-scan``     baseline locator: classify chunk after chunk from the start, then rules;
- ``last-500``        baseline locator: the first failure line in the last 500 lines, then rules;
- ``no-locator-rules`` ablation: rules on the last 200 lines with no locator (focus = the first
  line of that tail a signature rule matches; none → no verdict);
- ``pure-llm-tail``   ablation ("pure LLM on the whole tail, no filter"): the LLM reads the last
  200 lines (prompt marker on the last line, no locator, no rules) and its raw answer counts;
- ``no-locator-llm``  ablation: rules on the tail cross-checked with that same LLM answer.

Scores (failed logs only; a missing verdict counts as "not infrastructure" and as wrong):
infrastructure-vs-not precision / recall / F1 / accuracy (paper Table 4), per-category F1 and
macro-F1, reason accuracy, component accuracy; first-error-line accuracy: ``exact`` (line ==
label `first_line`), ``exact_block`` (line anywhere in [block_start, first_line]: the root-cause
block, e.g. the `Traceback (most recent call last):` header that opens the exception, counts as
exact too), ``within5`` (|line − first_line| ≤ 5) and ``within5_block`` (line in
[block_start − 5, first_line + 5]); latency per log; classifier calls per located failure beside
the bound 2·log2(lines/chunk) (floored at 2: the tail probe plus one). Completed and running logs
give each locator's false-alarm rate.

Pools and hard cases: every score is also given per error-text pool (`pools` in the summary:
`dev`, the texts rules may be written from, and `heldout`, never to be read by rule authors; see
`synthetic.logs.pools`), and per hard case (`hard_cases`: hang, flood, other_rank, decoys,
restart, warn_level, none, and `root_beyond_last_500`; see `synthetic.logs.hard`), so a score is
never only the circular one. With `devset`, the same systems and model-free baselines run on the
real development set (`devset_failures.py`).

Latency fairness: each located system gets its own line classifier (own embedding and template
caches, warming up over the run as in production), so no system profits from lines another one
embedded first. Passing one `classifier` shares it (tests): latencies then favour later systems.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from schedmate.agents.failure import FailureHandler, FailureHandlerConfig, LLMFailureClassifier, combine
from schedmate.agents.failure.locator import FailureLocator, Located, LogIndex, classification_window
from schedmate.agents.failure.rules import RulesClassifier
from schedmate.embeddings.logtext import normalise_line
from schedmate.evals.harness.common import (
    Progress,
    default_classifiers,
    f1_scores,
    latency_summary,
    load_corpus,
    log_path,
    macro_f1,
    ratio,
)
from schedmate.evals.harness.devset_failures import run_devset_failures
from schedmate.llm_breaker import CallCounts, model_call_counts
from schedmate.llm_errors import LLMError
from schedmate.loglabels import LogLabels
from schedmate.logspec import LogStatus
from schedmate.taxonomy import ALLOWED_COMPONENTS, FailureCategory

CATEGORIES = [c.value for c in FailureCategory]
INFRA = FailureCategory.INFRASTRUCTURE.value
LOCATOR_SYSTEMS = ("locator+rules", "locator+llm", "binary+rules", "linear-scan", "last-500")
LLM_ASKED = ("ok", "invalid_output", "rejected", "unavailable")  # llm_status values of a diagnosis that asked the LLM


@dataclass
class Prediction:
    """One system's answer on one log."""

    line: int | None = None
    category: str | None = None
    reason: str | None = None
    component: str | None = None
    calls: int | None = None  # classifier calls of the locator
    lines_classified: int | None = None
    latency_s: float = 0.0
    llm_calls: int = 0
    status: str = "ok"  # ok | no_failure_found | llm_error: ... | no_verdict
    extra: dict[str, Any] = field(default_factory=dict)


def _verdict_fields(pred: Prediction, verdict: Any) -> None:
    if verdict is None:
        return
    pred.category = _val(verdict.category)
    pred.reason = _val(verdict.reason)
    pred.component = _val(verdict.component)


def _val(x: Any) -> str | None:
    return None if x is None else str(getattr(x, "value", x))


class _Systems:
    def __init__(self, classifiers: dict[str, Any], llm: BaseChatModel | None, config: FailureHandlerConfig, tail: int) -> None:
        self.config = config
        self.tail = tail
        self.rules_handler = FailureHandler(classifiers["locator+rules"], config=replace(config, method="rules"))
        self.learned_handler = FailureHandler(classifiers["locator+learned"], config=replace(config, method="learned"))
        self.llm_handler = (FailureHandler(classifiers["locator+llm"], chat_model=llm, config=replace(config, method="llm"))
                            if llm is not None else None)  # fmt: skip
        self.locator = self.rules_handler.locator
        c = config
        self.binary_locator = FailureLocator(classifiers["binary+rules"], chunk=c.chunk, window_chunks=c.window_chunks,
                                             lookback_chunks=c.lookback_chunks, tail_chunks=c.tail_chunks)  # fmt: skip
        self.linear_locator = FailureLocator(classifiers["linear-scan"], chunk=c.chunk, window_chunks=c.window_chunks,
                                             lookback_chunks=c.lookback_chunks, tail_chunks=c.tail_chunks)  # fmt: skip
        self.tail_locator = FailureLocator(classifiers["last-500"], chunk=c.chunk, window_chunks=c.window_chunks,
                                           lookback_chunks=c.lookback_chunks, tail_chunks=c.tail_chunks)  # fmt: skip
        self.rules = RulesClassifier()
        self.llm = (LLMFailureClassifier(llm, max_chars=config.llm_max_chars, retries=config.llm_retries)
                    if llm is not None else None)  # fmt: skip

    # -- locator-based systems ---------------------------------------------------------------------

    def handler(self, path: Path, log_id: str, with_llm: bool, learned: bool = False) -> tuple[Prediction, Prediction | None]:
        h = self.llm_handler if with_llm else self.learned_handler if learned else self.rules_handler
        assert h is not None
        t0 = time.perf_counter()
        d = h.diagnose(path, {"job_id": log_id})
        dt = time.perf_counter() - t0
        pred = Prediction(latency_s=dt, calls=d.classifier_calls, status=d.status)
        if d.remediation is not None:  # what to change (agents.failure.remediation), scored on the dev set
            pred.extra.update({"remediation": d.remediation.key, "remediation_values": dict(d.remediation.values)})
        if d.located is not None:
            pred.line = d.located.line_no
            pred.lines_classified = d.located.lines_classified
        if d.status == "failure_found":
            pred.status = "ok" if d.category is not None else "abstained" if d.abstained else "no_verdict"
            pred.category, pred.reason, pred.component = _val(d.category), _val(d.reason), _val(d.component)
            v = d.verdict
            if v is not None and v.evidence is not None:  # calibrated confidence and what decided the category
                pred.extra.update({"confidence": v.calibrated, "bucket": f"{v.evidence.strength}|{v.confidence}",
                                   "guess": _val(v.guess_category), "evidence": v.evidence.rule})  # fmt: skip
        raw = None
        if with_llm:
            # the handler asks the LLM only when its rules and learned classifier leave the case open
            pred.llm_calls = 1 if d.status == "failure_found" and d.llm_status in LLM_ASKED else 0
            pred.extra = {**pred.extra, "llm_status": d.llm_status, "source": d.verdict.source if d.verdict else None,
                          "agree": d.verdict.agree if d.verdict else None}  # fmt: skip
            raw = Prediction(line=pred.line, calls=pred.calls, lines_classified=pred.lines_classified, latency_s=dt,
                             llm_calls=pred.llm_calls, status=pred.status)  # fmt: skip
            llm_v = d.verdict.llm if d.verdict is not None else None
            if llm_v is not None:
                raw.category, raw.reason, raw.component = _val(llm_v.category), _val(llm_v.reason), _val(llm_v.component)
            elif d.status == "failure_found":
                raw.status = f"llm_{d.llm_status}"
        return pred, raw

    def baseline(self, path: Path, method: str) -> Prediction:
        t0 = time.perf_counter()
        with LogIndex.open(path) as index:
            loc = {"binary": self.binary_locator, "linear": self.linear_locator, "tail": self.tail_locator}[method]
            located: Located | None = (loc.locate(index) if method == "binary" else loc.locate_linear(index)
                                       if method == "linear" else loc.locate_tail(index, tail=500))  # fmt: skip
            pred = Prediction(calls=loc.last_calls if located is None else located.calls)
            if located is None:
                pred.status = "no_failure_found"
            else:
                pred.line, pred.lines_classified = located.line_no, located.lines_classified
                window, focus = classification_window(index, located, self.config.window_lines)
                verdict = self.rules.classify(window, focus)
                _verdict_fields(pred, verdict)
                if verdict is None:
                    pred.status = "no_verdict"
                else:
                    pred.component = _val(verdict.component)
        pred.latency_s = time.perf_counter() - t0
        return pred

    # -- ablations without a locator ---------------------------------------------------------------

    def tail_lines(self, path: Path) -> tuple[list[str], int]:
        with LogIndex.open(path) as index:
            n = len(index)
            start = max(0, n - self.tail)
            return [x.decode("utf-8", "replace") for x in index.lines(start, n)], start

    def no_locator_rules(self, path: Path) -> tuple[Prediction, list[str], int, Any]:
        t0 = time.perf_counter()
        tail, start = self.tail_lines(path)
        focus = next((i for i, x in enumerate(tail) if self.rules.match(normalise_line(x).text) is not None), None)
        pred = Prediction()
        verdict = None
        if focus is None:
            pred.status = "no_verdict"
        else:
            verdict = self.rules.classify(tail, focus)
            pred.line = start + focus
            _verdict_fields(pred, verdict)
            if verdict is not None:
                pred.component = _val(verdict.component)
        pred.latency_s = time.perf_counter() - t0
        return pred, tail, start, verdict

    def pure_llm_tail(self, tail: list[str], rules_verdict: Any, rules_latency: float) -> tuple[Prediction, Prediction]:
        assert self.llm is not None
        t0 = time.perf_counter()
        pure = Prediction(llm_calls=1)
        llm_v = None
        try:
            llm_v = self.llm.classify(tail, max(0, len(tail) - 1))
            pure.category, pure.reason, pure.component = _val(llm_v.category), _val(llm_v.reason), _val(llm_v.component)
        except LLMError as exc:
            pure.status = f"llm_error: {type(exc).__name__}"
        pure.latency_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        mixed = Prediction(llm_calls=1, line=None)
        verdict = combine(rules_verdict, llm_v, self.rules.reasons_in(tail) if llm_v is not None else set())
        _verdict_fields(mixed, verdict)
        if verdict.category is None:
            mixed.status = "no_verdict"
        mixed.latency_s = pure.latency_s + rules_latency + (time.perf_counter() - t1)
        mixed.extra = {"source": verdict.source}
        return pure, mixed


def _calls_since(llm: Any, before: CallCounts | None) -> dict[str, int] | None:
    """The LLM calls made since `before` (made, answered, failed, timed out, skipped), or None."""
    after = model_call_counts(llm)
    return None if after is None or before is None else asdict(after - before)


def _bound(n_lines: int, chunk: int) -> float:
    return max(2.0, 2.0 * math.log2(max(1.0, n_lines / chunk)))


def _score(system: str, rows: list[dict[str, Any]], chunk: int) -> dict[str, Any]:
    preds = [r["systems"][system] for r in rows if system in r["systems"]]
    labs = [r for r in rows if system in r["systems"]]
    n = len(preds)
    if n == 0:
        return {"n": 0}
    true_cat = [r["category"] for r in labs]
    pred_cat = [p["category"] for p in preds]
    infra = f1_scores(true_cat, pred_cat, INFRA)
    macro, per_cat = macro_f1(true_cat, pred_cat, CATEGORIES)
    reason_ok = [p["reason"] == r["reason"] for p, r in zip(preds, labs, strict=True)]
    comp_ok = [p["component"] is not None and p["component"] in r["allowed_components"] for p, r in zip(preds, labs, strict=True)]
    out: dict[str, Any] = {
        "n": n,
        "verdicts": sum(p["category"] is not None for p in preds),
        "infra": infra,
        "category_accuracy": ratio(sum(p == t for p, t in zip(pred_cat, true_cat, strict=True)), n),
        "category_macro_f1": macro,
        "category_f1": per_cat,
        "reason_accuracy": ratio(sum(reason_ok), n),
        "component_accuracy": ratio(sum(comp_ok), n),
        "latency": latency_summary([p["latency_s"] for p in preds]),
        "llm_calls": sum(p["llm_calls"] for p in preds),
    }
    if any(p["line"] is not None for p in preds) or system in LOCATOR_SYSTEMS:
        hits: Counter[str] = Counter()
        for p, r in zip(preds, labs, strict=True):
            line = p["line"]
            if line is None:
                continue
            hits["found"] += 1
            hits["exact"] += line == r["first_line"]
            hits["exact_block"] += r["block_start"] <= line <= r["first_line"]
            hits["within5"] += abs(line - r["first_line"]) <= 5
            hits["within5_block"] += r["block_start"] - 5 <= line <= r["first_line"] + 5
            hits["early"] += line < r["block_start"] - 5
            hits["late"] += line > r["first_line"] + 5
        out["line"] = {k: ratio(hits[k], n) for k in ("found", "exact", "exact_block", "within5", "within5_block", "early", "late")}
    calls = [(p["calls"], r["n_lines"]) for p, r in zip(preds, labs, strict=True) if p["calls"] is not None and p["line"] is not None]
    if calls:
        bounds = [_bound(nl, chunk) for _, nl in calls]
        c = [x for x, _ in calls]
        out["classifier_calls"] = {
            "n_located": len(c),
            "mean": round(sum(c) / len(c), 2),
            "max": max(c),
            "mean_bound": round(sum(bounds) / len(bounds), 2),
            "within_bound": ratio(sum(x <= b for x, b in zip(c, bounds, strict=True)), len(c)),
            "mean_ratio_to_bound": round(sum(x / b for x, b in zip(c, bounds, strict=True)) / len(c), 3),
            "max_ratio_to_bound": round(max(x / b for x, b in zip(c, bounds, strict=True)), 3),
            "mean_lines_classified": round(sum(p["lines_classified"] or 0 for p in preds) / n, 1),
        }
    return out


def _per_reason(rows: list[dict[str, Any]], systems: Sequence[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for reason in sorted({r["reason"] for r in rows}):
        sel = [r for r in rows if r["reason"] == reason]
        entry: dict[str, Any] = {"n": len(sel), "category": sel[0]["category"]}
        for s in systems:
            got = [r for r in sel if s in r["systems"]]
            if got:
                entry[s] = ratio(sum(r["systems"][s]["reason"] == reason for r in got), len(got))
        out[reason] = entry
    return out


def run_failures(
    data_dir: str | Path,
    *,
    llm: BaseChatModel | None = None,
    limit: int | None = None,
    progress: Progress | None = None,
    classifier: Any = None,
    include_clean: bool = True,
    tail_lines: int = 200,
    config: FailureHandlerConfig | None = None,
    devset: str | Path | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Score every system on the corpus, overall and per error-text pool (`dev` / `heldout`), and,
    when `devset` names a folder, on the real dev set too (`summary["devset"]`, its per-item rows
    under `summary["devset_rows"]`); returns (summary, per-log rows of the generated corpus)."""
    t_start = time.perf_counter()
    llm_before = model_call_counts(llm)  # what this run's LLM calls did, for the report's LLM line
    config = config or FailureHandlerConfig()
    labels = load_corpus(data_dir, limit)
    t_cls = time.perf_counter()
    # One classifier (with its own embedding and template caches) per located system, so no system's
    # latency profits from lines another one embedded first; a given `classifier` is shared by all.
    names = ["locator+rules", "locator+learned", "locator+llm", "binary+rules", "linear-scan", "last-500"]
    classifiers = ({n: classifier for n in names} if classifier is not None
                   else default_classifiers([n for n in names if llm is not None or n != "locator+llm"]))  # fmt: skip
    load_s = time.perf_counter() - t_cls
    sy = _Systems(classifiers, llm, config, tail_lines)
    rows: list[dict[str, Any]] = []
    clean: dict[str, Counter] = {"locator": Counter(), "last-500": Counter(), "linear-scan": Counter()}
    clean_lat: dict[str, list[float]] = {k: [] for k in clean}
    vanished: list[str] = []  # logs deleted after `load_corpus` checked them: the rest is still scored
    for i, lab in enumerate(labels):
        path = log_path(data_dir, lab)
        if not path.is_file():
            vanished.append(str(path))
            continue
        if lab.status is LogStatus.FAILED:
            rows.append(_diagnose_failed(sy, lab, path, llm is not None))
        elif include_clean:
            _clean_log(sy, path, clean, clean_lat)
        if progress is not None:
            progress(i + 1, len(labels))
    systems = ["locator+rules", "locator+learned", "binary+rules", "linear-scan", "last-500", "no-locator-rules"]
    if llm is not None:
        systems[2:2] = ["locator+llm", "locator+llm-raw"]
        systems += ["pure-llm-tail", "no-locator-llm"]
    summary: dict[str, Any] = {
        "data_dir": str(data_dir),
        "logs": len(labels) - len(vanished),
        "vanished_logs": vanished,
        "failed_logs": len(rows),
        "clean_logs": sum(1 for lab in labels
                          if lab.status is not LogStatus.FAILED and str(log_path(data_dir, lab)) not in vanished),
        "llm": llm is not None,
        "llm_calls": _calls_since(llm, llm_before),
        "chunk": config.chunk,
        "window_lines": config.window_lines,
        "tail_lines": tail_lines,
        "n_lines": _size_summary([r["n_lines"] for r in rows]),
        "category_mix": dict(Counter(r["category"] for r in rows)),
        "systems": {s: _score(s, rows, config.chunk) for s in systems},
        "per_reason": _per_reason(rows, systems),
        "classifier_load_s": round(load_s, 3),
        "wall_s": None,
    }
    summary["pools"] = {}
    for pool in ("dev", "heldout"):
        sel = [r for r in rows if r.get("pool") == pool]
        summary["pools"][pool] = {"failed_logs": len(sel), "category_mix": dict(Counter(r["category"] for r in sel)),
                                  "systems": {s: _score(s, sel, config.chunk) for s in systems}}  # fmt: skip
    summary["hard_cases"] = _hard_summary(rows, systems, config.chunk)
    if include_clean:
        summary["false_alarms"] = {
            k: {"n": v["n"], "false_alarm_rate": ratio(v["found"], v["n"]), "latency": latency_summary(clean_lat[k])}
            for k, v in clean.items()
        }
    if devset is not None:
        dev_summary, dev_rows = run_devset_failures(devset, sy, with_llm=llm is not None)
        summary["devset"] = dev_summary
        summary["devset_rows"] = dev_rows
    summary["wall_s"] = round(time.perf_counter() - t_start, 2)
    return summary, rows


def _hard_summary(rows: list[dict[str, Any]], systems: Sequence[str], chunk: int) -> dict[str, Any]:
    """Scores on the failed logs showing each hard case, on those without any, and on those whose
    root cause is more than 500 lines from the end (what a tail reader cannot see)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        for h in r.get("hard") or []:
            groups.setdefault(h, []).append(r)
    groups["none"] = [r for r in rows if not r.get("hard")]
    groups["root_beyond_last_500"] = [r for r in rows if r["n_lines"] - r["first_line"] > 500]
    out: dict[str, Any] = {}
    for name, sel in groups.items():
        entry: dict[str, Any] = {"n": len(sel)}
        for s in systems:
            m = _score(s, sel, chunk)
            if m.get("n"):
                entry[s] = {"infra_f1": m["infra"]["f1"], "category_accuracy": m["category_accuracy"],
                            "within5": (m.get("line") or {}).get("within5")}  # fmt: skip
        out[name] = entry
    return out


def _size_summary(sizes: list[int]) -> dict[str, int | None]:
    if not sizes:
        return {"min": None, "median": None, "max": None}
    s = sorted(sizes)
    return {"min": s[0], "median": s[len(s) // 2], "max": s[-1]}


def _diagnose_failed(sy: _Systems, lab: LogLabels, path: Path, with_llm: bool) -> dict[str, Any]:
    f = lab.failure
    assert f is not None
    row: dict[str, Any] = {
        "id": lab.id, "n_lines": lab.n_lines, "framework": lab.framework.value, "category": f.category.value,
        "reason": f.reason.value, "component": f.component.value, "first_line": f.first_line,
        "block_start": f.block_start, "phase": f.phase.value,
        "allowed_components": sorted(c.value for c in ALLOWED_COMPONENTS[f.reason]),
        "pool": (f.pool or lab.spec.pool or None) and str(f.pool or lab.spec.pool),
        "hard": [str(h) for h in f.hard], "template": f.variant,
    }  # fmt: skip
    systems: dict[str, Prediction] = {}
    systems["locator+rules"], _ = sy.handler(path, lab.id, with_llm=False)
    systems["locator+learned"], _ = sy.handler(path, lab.id, with_llm=False, learned=True)
    if with_llm:
        systems["locator+llm"], raw = sy.handler(path, lab.id, with_llm=True)
        assert raw is not None
        systems["locator+llm-raw"] = raw
    systems["binary+rules"] = sy.baseline(path, "binary")
    systems["linear-scan"] = sy.baseline(path, "linear")
    systems["last-500"] = sy.baseline(path, "tail")
    nl, tail, _, rules_v = sy.no_locator_rules(path)
    systems["no-locator-rules"] = nl
    if with_llm:
        systems["pure-llm-tail"], systems["no-locator-llm"] = sy.pure_llm_tail(tail, rules_v, nl.latency_s)
    row["systems"] = {k: asdict(v) for k, v in systems.items()}
    return row


def _clean_log(sy: _Systems, path: Path, counts: dict[str, Counter], lat: dict[str, list[float]]) -> None:
    with LogIndex.open(path) as index:
        for key, fn in (("locator", sy.locator.locate), ("last-500", lambda ix: sy.tail_locator.locate_tail(ix, tail=500)),
                        ("linear-scan", sy.linear_locator.locate_linear)):  # fmt: skip
            t0 = time.perf_counter()
            found = fn(index)
            lat[key].append(time.perf_counter() - t0)
            counts[key]["n"] += 1
            counts[key]["found"] += found is not None
