"""Scheduling Advisor: code -> workload fingerprint -> similar historical jobs -> estimates.

Public API (heavy modules load on first use):

- `extract_static(repo, command, gpus=, nodes=)` -> `StaticExtraction` (no LLM; per-field provenance)
- `MetadataExtractor(chat_model | None, AgentConfig())`.extract(repo, command, ...) -> `ExtractionResult`
  (ReAct agent with `file_tree` / `file_read`, validated and merged with the static result)
- `RepoSandbox`, `make_repo_tools` (the two tools, bound to one repository)
- `SimilarJobRetriever(store, embedder, threshold=T, top_k=k)`, `HistoricalJob`, `fingerprint_text`
- `estimate_from_matches(job, matches, fallback=...)` -> `Estimate`; `JobQuery`, `FallbackEstimator`
- `estimate_rate_from_matches(job, fields, pool, exits=EarlyExitModel)` -> `Estimate` (rate x plan)
- `EBMEstimator`, `SameUserGpusEstimator`, `MedianFallback` (baselines / fallbacks)
- `SchedulingAdvisor(retriever, extractor=, fallback=)`.advise(job, repo, command) / .record(...)

Its evaluation lives in `schedmate.evals.harness.advisor` (agents never import from `evals`).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "extract_static": "static_extractor", "StaticExtraction": "static_extractor", "FieldEvidence": "static_extractor",
    "RepoSandbox": "tools", "SandboxError": "tools", "make_repo_tools": "tools",
    "MetadataExtractor": "agent", "AgentConfig": "agent", "ExtractionResult": "agent", "FieldDecision": "agent",
    "SimilarJobRetriever": "retriever", "HistoricalJob": "retriever", "Retrieval": "retriever",
    "fingerprint_text": "retriever", "DEFAULT_THRESHOLD": "retriever", "DEFAULT_TOP_K": "retriever",
    "Estimate": "estimator", "JobQuery": "estimator", "FallbackEstimator": "estimator",
    "MedianFallback": "estimator", "estimate_from_matches": "estimator",
    "estimate_rate_from_matches": "estimator", "estimate_rate_plan": "rate_estimator", "Plan": "rate_estimator",
    "RateSample": "rate_estimator", "EarlyExitModel": "early_exit", "ExitRecord": "early_exit",
    "EBMEstimator": "baselines", "SameUserGpusEstimator": "baselines", "HistoryRow": "baselines",
    "parse_launch": "launch",
    "SchedulingAdvisor": "advisor", "Advice": "advisor",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
