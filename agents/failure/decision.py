"""Who decides a failure's category: rules as a high-precision fallback, not the classifier.

`method="learned"` (the default, `FailureHandlerConfig.method`):

1. A *high-precision* signature rule matched the failure (`rules.HIGH_PRECISION`: Xid, ECC,
   NVLink, the NCCL watchdog, IB completions, NODE_FAIL, a full disk, CUDA OOM...) → the rules
   decide (`source="rules"`, high confidence).
2. Else the learned classifier (`learned.py`) decides when its calibrated category probability
   reaches its `min_confidence` (`source="learned"`; `high` from 0.85, else `medium`).
3. Else it is a tie between the learned top-2 reasons. A specific rule naming one of them breaks
   it (`rules-tiebreak`); else the LLM, when configured, may pick one of the two (`llm-tiebreak`):
   its answer counts only if its reason is one of them, or its category is exactly one of theirs.
   Otherwise the learned top-1 stands. Either way the confidence is `low`, so an infrastructure
   verdict only resubmits once a diagnostic confirms it. An LLM pick that would turn the verdict
   into an *infrastructure* one must be grounded (a signature for its reason on a log line of
   the window, not text addressed to a model), else it is ignored.

The LLM is never asked in cases 1 and 2, so it can never override a confident verdict; and
every answer is a taxonomy enum, so log text cannot name an action.

`method="rules"`: rules only (`llm_classifier.combine` without an LLM). `method="llm"`: the
earlier rules + LLM cross-check (`combine`), where an LLM answer decides when no rule matched;
kept so evaluations can report the three side by side.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Literal

from schedmate.agents.failure.learned import Candidate, LearnedVerdict
from schedmate.agents.failure.llm_classifier import Confidence, FailureVerdict, LLMVerdict, grounding_quote
from schedmate.agents.failure.rules import HIGH_PRECISION, RuleVerdict
from schedmate.taxonomy import ALLOWED_COMPONENTS, Component, FailureCategory, FailureReason, category_of, component_of

ClassifierMethod = Literal["learned", "rules", "llm"]
METHODS: tuple[ClassifierMethod, ...] = ("learned", "rules", "llm")
HIGH_PROBABILITY = 0.85


def is_high_precision(rules: RuleVerdict | None) -> bool:
    return rules is not None and rules.rule in HIGH_PRECISION


# Rules that read an exception class which *is* a taxonomy reason (`KeyError: ...` -> KeyError).
EXCEPTION_CLASS_RULES = frozenset({
    "attribute-error", "assertion-error", "value-error", "zero-division", "file-not-found", "permission", "type-error",
    "key-error", "import-error", "index-error", "name-error", "syntax-error", "called-process", "argument-error",
})


def settle(rules: RuleVerdict | None, learned: LearnedVerdict, *, class_on_root: bool = False) -> FailureVerdict | None:
    """Steps 1-2 and the rule tie-break of step 3; None when only the LLM could break the tie.

    `class_on_root`: the rules' evidence is the root-cause line itself. Then an exception class
    printed there that is a taxonomy reason wins over a learned guess naming *another* exception
    class (a `KeyError` line is never a `NameError` because its neighbours looked like one); a
    learned reason that is not a class (ModelLoadingError, an OOM) still stands, since a class
    is only the container the failure was raised in."""
    if rules is not None and is_high_precision(rules):
        component = _component(rules.reason, rules.component)
        agree = learned.reason is rules.reason if learned.reason is not None else None
        note = f"high-precision signature {rules.rule!r}: rules decide"
        return FailureVerdict(rules.category, rules.reason, component, "rules", "high", rules, None, agree, note,
                              probability=learned.probability, candidates=learned.candidates)
    if (class_on_root and rules is not None and rules.rule in EXCEPTION_CLASS_RULES and learned.reason is not None
            and learned.reason is not rules.reason and learned.reason in _CLASS_REASONS):
        confidence: Confidence = "high" if learned.confident and learned.probability >= HIGH_PROBABILITY else "medium"
        note = (f"the root-cause line prints {rules.reason.value}: the class wins over the learned guess "
                f"{learned.reason.value} ({learned.probability:.2f})")
        return FailureVerdict(rules.category, rules.reason, _component(rules.reason, rules.component), "rules",
                              confidence, rules, None, False, note, probability=learned.probability,
                              candidates=learned.candidates)
    if learned.confident:
        confidence = "high" if learned.probability >= HIGH_PROBABILITY else "medium"
        return _from_learned(learned, confidence, rules, None, f"learned, category probability {learned.probability:.2f}")
    top2 = learned.candidates[:2]
    if rules is not None and rules.specific and any(c.reason is rules.reason for c in top2):
        pick = next(c for c in top2 if c.reason is rules.reason)
        note = f"learned unsure ({learned.probability:.2f}); specific rule {rules.rule!r} picks one of its top two"
        return _from_candidate(pick, "rules-tiebreak", "low", rules, None, note, learned)
    return None


def tiebreak(
    rules: RuleVerdict | None,
    learned: LearnedVerdict,
    llm: LLMVerdict | None,
    window_reasons: Collection[FailureReason] | Mapping[FailureReason, str] | None = None,
) -> FailureVerdict:
    """Step 3 after `settle` returned None: the LLM may pick one of the learned top two.
    `window_reasons` (`RulesClassifier.reasons_in` of the window): what grounds an LLM pick
    that turns the verdict into an infrastructure one; None: such picks are never grounded."""
    top2 = learned.candidates[:2]
    ignored = "LLM answer outside the top two: ignored"
    if llm is not None:
        pick = next((c for c in top2 if c.reason is llm.reason), None)
        if pick is None:
            same = [c for c in top2 if c.category is llm.category]
            pick = same[0] if len(same) == 1 else None
        ungrounded = (
            pick is not None
            and pick.category is FailureCategory.INFRASTRUCTURE
            and learned.category is not FailureCategory.INFRASTRUCTURE
            and pick.reason not in (window_reasons or ())
        )
        if ungrounded:
            assert pick is not None
            ignored = f"LLM pick {pick.reason.value!r} (infrastructure) is grounded in no log line: ignored"
        elif pick is not None:
            quote = (f": {grounding_quote(llm, window_reasons)}"
                     if window_reasons and pick.reason in window_reasons else "")  # fmt: skip
            note = f"learned unsure ({learned.probability:.2f}); the LLM picked one of its top two{quote}"
            return _from_candidate(pick, "llm-tiebreak", "low", rules, llm, note, learned)
    note = f"learned unsure ({learned.probability:.2f}); " + (
        ignored if llm is not None else "no tie-breaker: the top reason stands"
    )
    return _from_learned(learned, "low", rules, llm, note)


# the reasons that are exception classes: what a printed class may overrule (`settle`)
_CLASS_REASONS = frozenset({
    FailureReason.ATTRIBUTE_ERROR, FailureReason.ASSERTION_ERROR, FailureReason.VALUE_ERROR,
    FailureReason.ZERO_DIVISION_ERROR, FailureReason.FILE_NOT_FOUND_ERROR, FailureReason.PERMISSION_ERROR,
    FailureReason.TYPE_ERROR, FailureReason.KEY_ERROR, FailureReason.IMPORT_ERROR, FailureReason.INDEX_ERROR,
    FailureReason.NAME_ERROR, FailureReason.SYNTAX_ERROR, FailureReason.CALLED_PROCESS_ERROR,
    FailureReason.ARGUMENT_ERROR, FailureReason.OS_ERROR, FailureReason.RUNTIME_ERROR,
})


def _from_learned(
    learned: LearnedVerdict, confidence: Confidence, rules: RuleVerdict | None, llm: LLMVerdict | None, note: str
) -> FailureVerdict:
    agree = None if llm is None else llm.reason is learned.reason
    return FailureVerdict(learned.category, learned.reason, learned.component, "learned", confidence, rules, llm, agree,
                          note, probability=learned.probability, candidates=learned.candidates)  # fmt: skip


def _from_candidate(
    pick: Candidate,
    source: Literal["rules-tiebreak", "llm-tiebreak"],
    confidence: Confidence,
    rules: RuleVerdict | None,
    llm: LLMVerdict | None,
    note: str,
    learned: LearnedVerdict,
) -> FailureVerdict:
    proposed = llm.component if llm is not None and llm.reason is pick.reason else None
    agree = None if llm is None else llm.reason is pick.reason
    return FailureVerdict(pick.category, pick.reason, _component(pick.reason, proposed), source, confidence, rules, llm,
                          agree, note, probability=learned.probability, candidates=learned.candidates)  # fmt: skip


def _component(reason: FailureReason, proposed: Component | None) -> Component:
    if category_of(reason) is not FailureCategory.INFRASTRUCTURE:
        return Component.SOFTWARE
    return proposed if proposed in ALLOWED_COMPONENTS[reason] else component_of(reason)
