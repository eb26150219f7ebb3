"""Remediation on the real dev set: does the diagnosis propose the fix a person would, with the values
the log gives? Labels are `evals/devset/failures/remediation-*.jsonl`, one line per item:

    {"id": "d-003", "remediation": "change_port", "values": {"port": "29500"}}

written blind (the labeller saw the log, never our answer) in the vocabulary of
`agents.failure.remediation.KEYS` (`install:<pypi-dist>` for a missing module).

Scores per system, over the items that have a remediation label:
- `key_accuracy`: share whose remediation key equals the label's;
- `values_accuracy`: among items whose label gives values, share whose key matches *and* every
  labelled value equals ours after normalisation (`normalise`: case, quotes and whitespace; a list
  compares as a set; an exception class without its module; a GPU without a `GPU ` / `PCI:` prefix).
Beside them two baselines: `majority-key` (the most frequent labelled key, no values) and
`reason-default` (the table's default for the predicted reason, no line read: what the line
detectors add over a lookup by reason).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from schedmate.evals.harness.common import ratio

__all__ = ["load_remediation_labels", "normalise", "score_remediation", "values_match"]


def load_remediation_labels(folder: Path) -> tuple[dict[str, dict[str, Any]], str | None]:
    """Labels by item id from `remediation-*.jsonl` under `folder`, and a note (None when all read)."""
    labels: dict[str, dict[str, Any]] = {}
    bad: list[str] = []
    for path in sorted(folder.glob("remediation-*.jsonl")):
        for n, raw in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw)
                labels[str(row["id"])] = {"remediation": str(row["remediation"]), "values": dict(row.get("values") or {})}
            except (ValueError, KeyError, TypeError) as exc:
                bad.append(f"{path.name}:{n}: {type(exc).__name__}")
    note = None if not bad else f"{len(bad)} malformed remediation label line(s), first {bad[0]}"
    return labels, note


def normalise(key: str, value: Any) -> Any:
    """A value as compared: lower case, no quotes or extra whitespace; lists as sets."""
    if isinstance(value, (list, tuple, set)):
        return frozenset(normalise(key, v) for v in value)
    text = re.sub(r"\s+", " ", str(value)).strip().strip("'\"`").strip().lower()
    if key == "exception":
        text = text.rsplit(".", 1)[-1]
    if key == "gpu":
        text = re.sub(r"^(?:gpu\s*|pci:)", "", text)
    if key == "port":
        text = text.lstrip(":")
    return text


def values_match(labelled: dict[str, Any], predicted: dict[str, Any]) -> bool:
    """Every labelled (non-empty) value equals ours after `normalise`."""
    want = {k: v for k, v in labelled.items() if v not in (None, "", [], {})}
    return all(k in predicted and normalise(k, predicted[k]) == normalise(k, v) for k, v in want.items())


def _one(rows: list[dict[str, Any]], labels: dict[str, dict[str, Any]], pick: Any) -> dict[str, Any]:
    scored = [(r, labels[r["id"]]) for r in rows if r["id"] in labels]
    keys_ok = [(pick(r) or {}).get("remediation") == lab["remediation"] for r, lab in scored]
    with_values = [(r, lab) for r, lab in scored if any(v not in (None, "", [], {}) for v in lab["values"].values())]
    vals_ok = [(pick(r) or {}).get("remediation") == lab["remediation"]
               and values_match(lab["values"], (pick(r) or {}).get("remediation_values") or {}) for r, lab in with_values]
    per_key: dict[str, dict[str, int]] = {}
    for (_r, lab), ok in zip(scored, keys_ok, strict=True):
        e = per_key.setdefault(lab["remediation"], {"n": 0, "correct": 0})
        e["n"] += 1
        e["correct"] += int(ok)
    return {"n": len(scored), "key_accuracy": ratio(sum(keys_ok), len(scored)) if scored else None,
            "n_with_values": len(with_values),
            "values_accuracy": ratio(sum(vals_ok), len(with_values)) if with_values else None,
            "per_key": dict(sorted(per_key.items()))}


def score_remediation(rows: list[dict[str, Any]], labels: dict[str, dict[str, Any]], systems: list[str]) -> dict[str, Any]:
    """Key and values accuracy of each system in `systems` that predicts a remediation, and the two
    baselines (module docstring), over the dev-set rows that have a remediation label."""
    from schedmate.agents.failure.remediation import remedy_of
    from schedmate.taxonomy import FailureReason

    out: dict[str, Any] = {}
    for name in systems:
        if any("remediation" in (r["systems"].get(name) or {}) for r in rows):
            out[name] = _one(rows, labels, lambda r, n=name: r["systems"].get(n))
    truth = [lab["remediation"] for i, lab in labels.items()]
    majority = Counter(truth).most_common(1)[0][0] if truth else None
    out["majority-key"] = _one(rows, labels, lambda r: {"remediation": majority})

    def by_reason(r: dict[str, Any]) -> dict[str, Any]:
        p = r["systems"].get("locator+learned") or {}
        if p.get("remediation") == "none":
            return {"remediation": "none"}
        reason = p.get("reason")
        return {"remediation": remedy_of(FailureReason(reason)).default if reason else "unknown"}

    if "locator+learned" in out:
        out["reason-default"] = _one(rows, labels, by_reason)
    return out
