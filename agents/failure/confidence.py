"""Category by evidence applied to a verdict, and a confidence that means something.

`finish(verdict, lines, block, root)` is the last step of every classification (`FailureHandler.
classify_window`, whatever the method): the classifiers named a reason, `evidence.decide` names
the category (who must act) and the component from the located lines, and the verdict keeps the
reason's Acme category as `prior_category` and the deciding evidence as `evidence`.

Its `calibrated` value is the probability that the category is right, read from a table fitted
on the labelled dev set (`agents/failure/data/calibration.json`, written by
`schedmate eval failures --data C --devset evals/devset/failures --fit-calibration FILE`, see `evals/harness/devset_failures.py`): verdicts are
grouped by the strength of their evidence and the classifier's own confidence (`bucket`), and each
group's dev-set accuracy is shrunk towards a fixed prior for that strength (`BASE`) by `SHRINK`
pseudo-items, so a bucket seen twice does not claim 100%. Below the table's `threshold` the
handler abstains: category None ("unknown"), the best guess kept in `guess_category`, and the
recovery plan takes no automatic action.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from schedmate.agents.failure.evidence import Evidence, decide
from schedmate.agents.failure.llm_classifier import FailureVerdict

CALIBRATION_PATH = Path(__file__).resolve().parent / "data" / "calibration.json"
# what each strength of evidence is worth before any data (logs.md §2.1b: an NCCL timeout of unknown
# cause is "low confidence"; a verdict with no evidence beyond the reason is the table's prior)
BASE: dict[str, float] = {"decisive": 0.85, "context": 0.7, "prior": 0.6, "unknown-cause": 0.45}
ADJUST: dict[str, float] = {"high": 0.05, "medium": 0.0, "low": -0.1, "none": -0.2}
SHRINK = 4.0
DEFAULT_THRESHOLD = 0.4


def bucket(strength: str, confidence: str) -> str:
    """The calibration group of a verdict: its evidence's strength and the classifier's confidence."""
    return f"{strength}|{confidence}"


def prior_probability(key: str) -> float:
    strength, confidence = key.split("|", 1)
    return min(0.97, max(0.05, BASE.get(strength, 0.5) + ADJUST.get(confidence, 0.0)))


@dataclass(frozen=True)
class Calibration:
    """Per bucket: (items, items whose category was right) on the dev set; `threshold` to abstain below."""

    counts: dict[str, tuple[int, int]] = field(default_factory=dict)
    threshold: float = DEFAULT_THRESHOLD
    fitted_on: str = ""

    def probability(self, key: str) -> float:
        n, right = self.counts.get(key, (0, 0))
        return round((right + SHRINK * prior_probability(key)) / (n + SHRINK), 3)

    def to_json(self) -> dict:
        return {"threshold": self.threshold, "fitted_on": self.fitted_on, "shrink": SHRINK,
                "counts": {k: list(v) for k, v in sorted(self.counts.items())}}  # fmt: skip

    @classmethod
    def from_json(cls, data: dict) -> Calibration:
        counts = {k: (int(v[0]), int(v[1])) for k, v in data.get("counts", {}).items()}
        return cls(counts, float(data.get("threshold", DEFAULT_THRESHOLD)), str(data.get("fitted_on", "")))

    @classmethod
    def fit(cls, outcomes: Sequence[tuple[str, bool]], threshold: float = DEFAULT_THRESHOLD, fitted_on: str = "") -> Calibration:
        """From (bucket, category right?) pairs."""
        counts: dict[str, list[int]] = {}
        for key, ok in outcomes:
            c = counts.setdefault(key, [0, 0])
            c[0] += 1
            c[1] += int(ok)
        return cls({k: (v[0], v[1]) for k, v in counts.items()}, threshold, fitted_on)


@lru_cache(maxsize=4)
def load_calibration(path: str | None = None) -> Calibration:
    """The fitted table (None: the packaged one); the priors alone when there is none."""
    p = Path(path) if path else CALIBRATION_PATH
    try:
        return Calibration.from_json(json.loads(p.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return Calibration()


def finish(verdict: FailureVerdict, lines: Sequence[str | bytes], block: int, root: int | None,
           calibration: Calibration | None = None) -> FailureVerdict:  # fmt: skip
    """The verdict with its category decided by evidence, calibrated, and abstained when too unsure."""
    if verdict.reason is None and verdict.category is None:
        return verdict
    reason_in, filled = verdict.reason, False
    rules = verdict.rules
    if reason_in is None and rules is not None and rules.specific:
        # the learned classifier named a category but no reason it was sure of; the exception class
        # or signature the rules read names the reason (a `KeyError:` line is a KeyError)
        reason_in, filled = rules.reason, True
    ev: Evidence | None = decide(lines, block, root, reason_in)
    if ev is None:
        return verdict
    if filled and ev.strength == "prior" and verdict.category is not None:
        # no evidence beyond the reason the rules filled in: the learned classifier's category read
        # the context, the rules' class only its Acme prior, so the category stays the learned one
        ev = Evidence(verdict.category, verdict.component or ev.component, None, "learned-context",
                      f"the learned classifier's category from the context; the rules name the reason {reason_in}",
                      "", None, "prior")  # fmt: skip
    calibration = calibration or load_calibration()
    reason = ev.reason or reason_in
    key = bucket(ev.strength, verdict.confidence)
    p = calibration.probability(key)
    abstain = p < calibration.threshold
    note = f"{verdict.note}; category by evidence: {ev.describe()}" if verdict.note else f"category by evidence: {ev.describe()}"
    if abstain:
        note += f"; calibrated confidence {p:.2f} < {calibration.threshold:.2f}: abstained (unknown)"
    return dataclasses.replace(
        verdict, category=None if abstain else ev.category, reason=reason, component=ev.component, evidence=ev,
        prior_category=verdict.category, calibrated=p, abstained=abstain, guess_category=ev.category, note=note,
    )  # fmt: skip


def evidence_fields(verdict: FailureVerdict | None) -> dict | None:
    """What decided a verdict's category (logs.md §2.1b) as plain fields for reports (CLI, service,
    chat): rule, why, the deciding line, the evidence's strength, the category it points to (also when
    the handler abstained) and the reason's Acme category (the prior); None without evidence."""
    ev = verdict.evidence if verdict is not None else None
    if verdict is None or ev is None:
        return None
    guess, prior = verdict.guess_category, verdict.prior_category
    return {"rule": ev.rule, "why": ev.why, "line": ev.line or None, "strength": ev.strength,
            "category": guess.value if guess is not None else None,
            "prior_category": prior.value if prior is not None else None}  # fmt: skip
