"""The Failure Handler on the real development set (`evals/devset/failures`, `schedmate.devset`):
short excerpts of published logs that no one here wrote, labelled by hand.

Why beside the generated corpus: the generator and the agents' rules are written by the same
team, so a generated score can be circular; real excerpts are the check. The same systems as on
the generated corpus (locator+rules, locator+llm when an LLM is given, binary+rules, linear-scan,
last-500, no-locator-rules) plus three baselines that need no model:

- ``majority``: always the most frequent category of the set's failed items (no line);
- ``keyword-regex``: the first line matching one of ten keywords decides the category (and is the
  line); a normal log is flagged when any keyword matches;
- ``last-error-line``: the line baseline: the last line containing "Error" (no category).

Scores over failed items: category accuracy, macro-F1 over the three categories, infrastructure
precision / recall / F1, root-cause line exact and within ±2 (labels are 1-based `root_line`;
predictions are 0-based line indices, so a hit is `pred + 1 == root_line`); over normal items the
share each system flags as failed. A missing verdict counts as wrong and "not infrastructure".
The set may be empty or partial while it is being collected: then only the counts are reported.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schedmate.devset import DevSetError, RealFailureItem, load_failure_items
from schedmate.evals.harness.common import f1_scores, macro_f1, ratio
from schedmate.taxonomy import FailureCategory

if TYPE_CHECKING:
    from schedmate.evals.harness.failures import Prediction, _Systems

DEFAULT_DEVSET = Path(__file__).resolve().parents[1] / "devset" / "failures"  # evals/devset/failures of this checkout
CATEGORIES = [c.value for c in FailureCategory]
INFRA = FailureCategory.INFRASTRUCTURE.value
_I, _F, _S = (c.value for c in (FailureCategory.INFRASTRUCTURE, FailureCategory.FRAMEWORK, FailureCategory.SCRIPT))

# Ten keywords a practitioner would grep for first, most specific first (the baseline is meant to be
# naive: no rules engine, no context). Written from general knowledge, not from the dev set.
KEYWORDS: tuple[tuple[str, str], ...] = (
    (r"Xid", _I),
    (r"ECC", _I),
    (r"NCCL", _I),
    (r"CUDA error", _I),
    (r"timed? ?out", _I),
    (r"out of memory", _F),
    (r"DataLoader", _F),
    (r"No such file", _S),
    (r"ModuleNotFoundError|ImportError", _S),
    (r"Error:", _S),
)
_KEYWORD_RES = [(re.compile(p, re.IGNORECASE if p != "Error:" else 0), c) for p, c in KEYWORDS]
_ERROR_RE = re.compile(r"Error")


def _batch(item_id: str) -> str:
    return item_id.split("-", 1)[0]


def _read_lines(path: Path) -> list[str]:
    return path.read_bytes().decode("utf-8", "replace").split("\n")


def keyword_regex(lines: list[str]) -> tuple[int | None, str | None]:
    """(0-based line, category) of the first line any keyword matches (the first keyword in
    `KEYWORDS` order that matches it decides), or (None, None)."""
    for i, line in enumerate(lines):
        for rx, cat in _KEYWORD_RES:
            if rx.search(line):
                return i, cat
    return None, None


def last_error_line(lines: list[str]) -> int | None:
    """0-based index of the last line containing "Error", or None."""
    for i in range(len(lines) - 1, -1, -1):
        if _ERROR_RE.search(lines[i]):
            return i
    return None


def _row(item: RealFailureItem, path: Path) -> dict[str, Any]:
    return {"id": item.id, "file": item.file, "status": item.status, "confidence": item.confidence,
            "category": item.category.value if item.category else None,
            "reason": item.reason.value if item.reason else None, "root_line": item.root_line}


def _pred(line: int | None, category: str | None, flagged: bool, latency: float = 0.0, status: str = "ok",
          reason: str | None = None, extra: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    out = {"line": line, "category": category, "reason": reason, "flagged": flagged, "latency_s": round(latency, 5), "status": status}
    for k in ("confidence", "bucket", "guess", "evidence", "remediation", "remediation_values"):
        if extra and k in extra:
            out[k] = extra[k]
    return out


def _from_prediction(p: Prediction) -> dict[str, Any]:
    flagged = p.line is not None or p.category is not None or p.status == "abstained"
    return _pred(p.line, p.category, flagged, p.latency_s, p.status, p.reason, p.extra)


THRESHOLDS = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def coverage_table(rows: list[dict[str, Any]], system: str) -> list[dict[str, Any]]:
    """Coverage vs accuracy of `system`'s category on the failed items: at each threshold, the share
    of items whose calibrated confidence reaches it (answered) and the category accuracy on those;
    an abstained item counts with its best guess here (the threshold decides, not the handler's)."""
    items = [(r["systems"][system].get("confidence"), r["systems"][system].get("guess") or r["systems"][system]["category"],
              r["category"]) for r in rows if r["status"] == "failed" and system in r["systems"]]  # fmt: skip
    out = []
    for t in THRESHOLDS:
        ans = [(g, truth) for c, g, truth in items if c is not None and c >= t]
        out.append({"threshold": t, "coverage": ratio(len(ans), len(items)),
                    "accuracy": ratio(sum(g == truth for g, truth in ans), len(ans)) if ans else None})  # fmt: skip
    return out


def calibration_outcomes(rows: list[dict[str, Any]], system: str) -> list[tuple[str, bool]]:
    """(bucket, category right?) of `system` on the failed items: what `Calibration.fit` reads."""
    return [(r["systems"][system]["bucket"], (r["systems"][system].get("guess") or r["systems"][system]["category"]) == r["category"])
            for r in rows if r["status"] == "failed" and r["systems"].get(system, {}).get("bucket")]  # fmt: skip


def _systems_on(sy: _Systems | None, path: Path, item: RealFailureItem, majority: str | None, with_llm: bool) -> dict[str, dict]:
    lines = _read_lines(path)
    out: dict[str, dict[str, Any]] = {}
    if sy is not None:
        pred, _ = sy.handler(path, item.id, with_llm=False)
        out["locator+rules"] = _from_prediction(pred)
        pred, _ = sy.handler(path, item.id, with_llm=False, learned=True)
        out["locator+learned"] = _from_prediction(pred)
        if with_llm:
            pred, raw = sy.handler(path, item.id, with_llm=True)
            out["locator+llm"] = _from_prediction(pred)
            if raw is not None:
                out["locator+llm-raw"] = _from_prediction(raw)
        out["binary+rules"] = _from_prediction(sy.baseline(path, "binary"))
        out["linear-scan"] = _from_prediction(sy.baseline(path, "linear"))
        out["last-500"] = _from_prediction(sy.baseline(path, "tail"))
        nl, _, _, _ = sy.no_locator_rules(path)
        out["no-locator-rules"] = _from_prediction(nl)
    t0 = time.perf_counter()
    line, cat = keyword_regex(lines)
    out["keyword-regex"] = _pred(line, cat, line is not None, time.perf_counter() - t0)
    t0 = time.perf_counter()
    line = last_error_line(lines)
    out["last-error-line"] = _pred(line, None, line is not None, time.perf_counter() - t0)
    out["majority"] = _pred(None, majority, True)
    return out


def _score(rows: list[dict[str, Any]], system: str) -> dict[str, Any]:
    failed = [r for r in rows if r["status"] == "failed" and system in r["systems"]]
    normal = [r for r in rows if r["status"] == "normal" and system in r["systems"]]
    out: dict[str, Any] = {"n_failed": len(failed), "n_normal": len(normal)}
    if failed:
        truth = [r["category"] for r in failed]
        pred = [r["systems"][system]["category"] for r in failed]
        macro, per = macro_f1(truth, pred, CATEGORIES)
        lines = [(r["systems"][system]["line"], r["root_line"]) for r in failed]
        out.update({
            "category_accuracy": ratio(sum(p == t for p, t in zip(pred, truth, strict=True)), len(failed)),
            "reason_accuracy": ratio(sum(r["systems"][system].get("reason") == r["reason"] for r in failed), len(failed)),
            "detected": ratio(sum(r["systems"][system]["flagged"] for r in failed), len(failed)),
            "category_macro_f1": macro,
            "category_f1": per,
            "infra": f1_scores(truth, pred, INFRA),
            "verdicts": sum(p is not None for p in pred),
            "line_found": ratio(sum(p is not None for p, _ in lines), len(failed)),
            "line_exact": ratio(sum(p is not None and p + 1 == t for p, t in lines), len(failed)),
            "line_within2": ratio(sum(p is not None and abs(p + 1 - t) <= 2 for p, t in lines), len(failed)),
        })  # fmt: skip
        if system == "majority":
            out["line_found"] = out["line_exact"] = out["line_within2"] = None  # no line: not a line system
        if system == "last-error-line":
            for k in ("category_accuracy", "category_macro_f1", "category_f1", "infra", "verdicts"):
                out[k] = None  # no category: a line baseline only
    if normal:
        out["normal_flagged"] = ratio(sum(bool(r["systems"][system]["flagged"]) for r in normal), len(normal))
    return out


def _remediation(folder: Path, rows: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    from schedmate.evals.harness.devset_remediation import load_remediation_labels, score_remediation

    labels, note = load_remediation_labels(folder)
    if not labels:
        return {"remediation": None, "remediation_note": note or "no remediation labels (remediation-*.jsonl)"}
    return {"remediation": score_remediation(rows, labels, names), "remediation_note": note,
            "remediation_labels": len(labels)}


def _threshold() -> float:
    from schedmate.agents.failure.confidence import load_calibration

    return load_calibration().threshold


def run_devset_failures(folder: str | Path, sy: _Systems | None, *, with_llm: bool = False,
                        limit: int | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Score the systems of `sy` (None: only the model-free baselines) and the baselines on the real
    dev set under `folder`. A missing or empty folder gives a summary with `n_items: 0` and a note;
    a malformed label file gives a summary with the loader's error (the generated report still runs)."""
    t0 = time.perf_counter()
    folder = Path(folder)
    summary: dict[str, Any] = {"folder": str(folder), "n_items": 0, "systems": {}, "note": None}
    if not folder.is_dir():
        summary["note"] = "no dev-set folder"
        return summary, []
    try:
        items = load_failure_items(folder)
    except DevSetError as exc:
        summary["note"] = f"dev set unreadable: {exc}"
        return summary, []
    if limit is not None:
        items = items[:limit]
    summary["n_items"] = len(items)
    if not items:
        summary["note"] = "dev set is empty"
        return summary, []
    failed_cats = [it.category.value for _, it in items if it.status == "failed" and it.category is not None]
    majority = Counter(failed_cats).most_common(1)[0][0] if failed_cats else None
    rows: list[dict[str, Any]] = []
    for path, item in items:
        row = _row(item, path)
        row["systems"] = _systems_on(sy, path, item, majority, with_llm)
        rows.append(row)
    names = list(rows[0]["systems"])
    summary.update({
        "n_failed": sum(r["status"] == "failed" for r in rows),
        "n_normal": sum(r["status"] == "normal" for r in rows),
        "category_mix": dict(Counter(r["category"] for r in rows if r["status"] == "failed")),
        "confidence_mix": dict(Counter(r["confidence"] for r in rows)),
        "majority_category": majority,
        "systems": {s: _score(rows, s) for s in names},
        "high_confidence": {s: _score([r for r in rows if r["confidence"] == "high"], s) for s in names},
        # per collection batch (the id's prefix: a, b, c, ...): a batch is blind for the code that
        # predates it, so its first score is the honest one
        "by_batch": {b: {s: _score([r for r in rows if _batch(r["id"]) == b], s) for s in names}
                     for b in sorted({_batch(r["id"]) for r in rows})},
        "keywords": [k for k, _ in KEYWORDS],
        # confidence that means something: coverage vs accuracy per threshold, and the calibration
        # outcomes (`agents.failure.confidence.Calibration.fit`) of the default handler
        "coverage": {s: coverage_table(rows, s) for s in ("locator+learned", "locator+rules") if s in names},
        "calibration_outcomes": calibration_outcomes(rows, "locator+learned") if "locator+learned" in names else [],
        "abstain_threshold": _threshold(),
        # what to change: remediation key and values against the blind remediation labels (if any)
        **_remediation(folder, rows, names),
        "wall_s": round(time.perf_counter() - t0, 2),
    })  # fmt: skip
    return summary, rows
