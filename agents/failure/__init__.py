"""Failure Handler (spec §4): locate the first error of a failed job's log, classify it, find
similar past failures, and plan an allow-listed recovery for infrastructure faults.

    handler = FailureHandler(LineClassifier(make_embedder()), chat_model=model, store_url=url)
    diagnosis = handler.diagnose("job.log", JobMeta(job_id="j1", nodes=("gpu-node-03",)))

Who classifies is `FailureHandlerConfig(method=...)`: "learned" (default; high-precision
signature rules, else the learned classifier over MiniLM embeddings of the root-cause window, the
LLM only breaking its ties), "rules" (signature rules only) or "llm" (rules cross-checked by the
LLM). See `decision`.

The taxonomy (category → reason → component) is `schedmate.taxonomy`, shared
with the log-corpus generator so labels and predictions use the same enums.

The names below are imported on first use (PEP 562): importing one submodule (`wire`, `similar`)
or the package must not load the classifiers' LLM client (langchain, openai: +34 MB RSS), which
`schedmate history ingest` and every other CLI command that never classifies do not need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from schedmate.lazy import lazy_exports

if TYPE_CHECKING:
    from schedmate.agents.failure.decision import METHODS, ClassifierMethod
    from schedmate.agents.failure.handler import Diagnosis, FailureHandler, FailureHandlerConfig
    from schedmate.agents.failure.learned import (
        Candidate,
        Example,
        LearnedFailureClassifier,
        LearnedVerdict,
        RootCauseWindow,
        load_examples,
        root_cause_window,
        shared_classifier,
    )
    from schedmate.agents.failure.llm_classifier import FailureVerdict, LLMFailureClassifier, LLMVerdict, combine
    from schedmate.agents.failure.locator import ClassificationView, FailureLineJudge, FailureLocator, Located, LogIndex
    from schedmate.agents.failure.recovery import (
        ActionKind,
        Diagnostic,
        JobMeta,
        RecoveryExecutor,
        RecoveryPlan,
        execute_plan,
        plan_recovery,
    )
    from schedmate.agents.failure.rules import RulesClassifier, RuleVerdict
    from schedmate.agents.failure.similar import SimilarFailure, SimilarFailureFinder

_WHERE = {
    "METHODS": "decision",
    "ClassifierMethod": "decision",
    "Diagnosis": "handler",
    "FailureHandler": "handler",
    "FailureHandlerConfig": "handler",
    "Candidate": "learned",
    "Example": "learned",
    "LearnedFailureClassifier": "learned",
    "LearnedVerdict": "learned",
    "RootCauseWindow": "learned",
    "load_examples": "learned",
    "root_cause_window": "learned",
    "shared_classifier": "learned",
    "FailureVerdict": "llm_classifier",
    "LLMFailureClassifier": "llm_classifier",
    "LLMVerdict": "llm_classifier",
    "combine": "llm_classifier",
    "ClassificationView": "locator",
    "FailureLineJudge": "locator",
    "FailureLocator": "locator",
    "Located": "locator",
    "LogIndex": "locator",
    "ActionKind": "recovery",
    "Diagnostic": "recovery",
    "JobMeta": "recovery",
    "RecoveryExecutor": "recovery",
    "RecoveryPlan": "recovery",
    "execute_plan": "recovery",
    "plan_recovery": "recovery",
    "RulesClassifier": "rules",
    "RuleVerdict": "rules",
    "SimilarFailure": "similar",
    "SimilarFailureFinder": "similar",
}

__all__ = [
    "METHODS",
    "ActionKind",
    "Candidate",
    "ClassificationView",
    "Example",
    "LearnedFailureClassifier",
    "LearnedVerdict",
    "ClassifierMethod",
    "RootCauseWindow",
    "load_examples",
    "root_cause_window",
    "shared_classifier",
    "Diagnosis",
    "Diagnostic",
    "FailureHandler",
    "FailureHandlerConfig",
    "FailureLineJudge",
    "FailureLocator",
    "FailureVerdict",
    "JobMeta",
    "LLMFailureClassifier",
    "LLMVerdict",
    "Located",
    "LogIndex",
    "RecoveryExecutor",
    "RecoveryPlan",
    "RuleVerdict",
    "RulesClassifier",
    "SimilarFailure",
    "SimilarFailureFinder",
    "combine",
    "execute_plan",
    "plan_recovery",
]


__getattr__ = lazy_exports(__name__, _WHERE)
