"""One agent stack: the advisor, the tracker and the failure handler built from one typed config.

Every entry point builds its agents here, with the same defaults: `schedmate advise | track |
diagnose | chat`, the service (`schedmate serve`, `ServiceCore`, and through it the Ray actors and
`/chat`), the log daemon, the demo pipeline and the simulator (`SimulationInsights`). A case study
therefore measures the setting a user runs.

    config = AgentStackConfig()                          # the deployed defaults (below)
    stack = AgentStack(config, embedder=..., classifier=..., chat_model=...)
    stack.tracker(); stack.handler(store_url=url); stack.extractor(); stack.retriever(store)
    est = estimate_job(fields, gpus, nodes, stack.retriever(store), config)   # -> JobEstimate

Defaults and where they come from:

- `threshold` 0.85, `top_k` 3: the retriever's spec defaults (`agents.advisor.retriever`), what
  `schedmate advise` and the service always used. The simulator used to match at 0.9999, a
  setting no deployment runs (issue 22);
- `pool_k` 12: the rate x plan pool (`max(12, 4 k)` in `schedmate advise`): the pool's tiers
  match on fields, so it is read without a similarity threshold;
- `estimator` "rate-plan": rate x plan over completed past runs, the mean of the matches when no
  completed match has a measured speed (`agents.advisor.estimator.estimate_from_pool`); "mean" is
  the paper's mean of matches alone, for ablations;
- `failure_method` "learned": the Failure Handler's default classifier (`FailureHandlerConfig`);
- `llm` None: no LLM (static extractor, regex tracker, learned handler). `with_llm()` turns it on
  with `DEFAULT_LLM_TIMEOUT_S` per request and no transport retries (a busy 2-core CPU needs more
  than the 30 s client default for a 3k-character window; a stalled endpoint costs one timeout);
- `diagnosis_budget_s` 300: the whole diagnosis, LLM included (`FailureHandlerConfig`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from schedmate.defaults import LLM_TIMEOUT_S

if TYPE_CHECKING:
    from schedmate.agents.advisor.estimator import JobEstimate
    from schedmate.llm import LLMConfig

__all__ = ["DEFAULT_LLM_TIMEOUT_S", "DEFAULT_POOL_K", "DEFAULT_THRESHOLD", "DEFAULT_TOP_K", "LLM_MODULES", "AgentStack", "AgentStackConfig",
           "default_llm_config", "estimate_job", "retrieve_pool"]

# light on purpose (the CLI reads these defaults at import): the agents load in the methods below.
# `agents.advisor.retriever.DEFAULT_THRESHOLD / DEFAULT_TOP_K` hold the same numbers (a test checks).
DEFAULT_THRESHOLD = 0.85
DEFAULT_TOP_K = 3
DEFAULT_POOL_K = 12
ESTIMATORS = ("rate-plan", "mean")  # = agents.advisor.estimator.ESTIMATORS
DEFAULT_LLM_TIMEOUT_S = LLM_TIMEOUT_S
LLM_MODULES = ("advisor", "tracker", "failure")


def default_llm_config(**overrides: Any) -> LLMConfig:
    """The local model as the stack uses it when the LLM is on (see the module docstring)."""
    from schedmate.llm import LLMConfig

    return LLMConfig(**{"timeout_s": DEFAULT_LLM_TIMEOUT_S, "max_retries": 0, **overrides})


@dataclass(frozen=True)
class AgentStackConfig:
    """How the agents answer; every entry point's default is `AgentStackConfig()`."""

    threshold: float = DEFAULT_THRESHOLD  # fingerprint cosine a past job needs to count as similar
    top_k: int = DEFAULT_TOP_K  # similar jobs the mean-of-matches fallback averages at most
    pool_k: int = DEFAULT_POOL_K  # past jobs the rate x plan estimator reads (best cosine first, no threshold)
    estimator: Literal["rate-plan", "mean"] = "rate-plan"
    failure_method: Literal["learned", "rules", "llm"] = "learned"
    record_failures: bool = False  # store each diagnosed failure for later similarity search
    diagnosis_budget_s: float | None = 300.0  # whole diagnosis, LLM call included (None: no bound)
    llm: LLMConfig | None = None  # None: no LLM anywhere
    llm_modules: tuple[str, ...] = LLM_MODULES  # which agents use the LLM when `llm` is set

    def __post_init__(self) -> None:
        if not -1.0 <= self.threshold <= 1.0:
            raise ValueError(f"threshold is a cosine in [-1, 1], not {self.threshold}")
        if self.top_k < 1 or self.pool_k < self.top_k:
            raise ValueError(f"need 1 <= top_k <= pool_k, got top_k={self.top_k}, pool_k={self.pool_k}")
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"estimator must be one of {ESTIMATORS}, not {self.estimator!r}")
        if self.failure_method not in ("learned", "rules", "llm"):
            raise ValueError(f"failure_method must be learned, rules or llm, not {self.failure_method!r}")
        unknown = set(self.llm_modules) - set(LLM_MODULES)
        if unknown:
            raise ValueError(f"unknown llm_modules {sorted(unknown)}")
        object.__setattr__(self, "llm_modules", tuple(self.llm_modules))

    def with_llm(self, llm: LLMConfig | None = None, **overrides: Any) -> AgentStackConfig:
        """This config with the LLM on (`default_llm_config` unless `llm` is given)."""
        return replace(self, llm=llm if llm is not None else default_llm_config(**overrides))

    def uses_llm(self, module: str) -> bool:
        return self.llm is not None and module in self.llm_modules

    def settings(self) -> dict[str, Any]:
        """JSON-ready settings (the LLM as its model name only): what entry points are compared by."""
        out = {k: getattr(self, k) for k in ("threshold", "top_k", "pool_k", "estimator", "failure_method",
                                             "record_failures", "diagnosis_budget_s")}
        out["llm"] = None if self.llm is None else (self.llm.model or self.llm.local_model_package)
        out["llm_modules"] = list(self.llm_modules)
        return out

    @classmethod
    def from_settings(cls, data: Mapping[str, Any]) -> AgentStackConfig:
        """Back from `settings()` (the LLM stays off: a saved run records only its name)."""
        known = {"threshold", "top_k", "pool_k", "estimator", "failure_method", "record_failures",
                 "diagnosis_budget_s", "llm_modules"}
        kw = {k: v for k, v in data.items() if k in known}
        if "llm_modules" in kw:
            kw["llm_modules"] = tuple(kw["llm_modules"])
        return cls(**kw)


# ----------------------------------------------------------------------------------------- advisor


def retrieve_pool(retriever: Any, fields: Mapping[str, Any], gpus: int | None, nodes: int | None,
                  config: AgentStackConfig, *, exclude: Iterable[str] = ()) -> list[Any]:
    """The `pool_k` most similar past jobs (records attached, best first, no threshold)."""
    known = {k: v for k, v in fields.items() if v is not None}
    return retriever.query(known, gpus=gpus, nodes=nodes, threshold=-1.0, top_k=config.pool_k,
                           exclude=exclude).matches


def estimate_job(fields: Mapping[str, Any], gpus: int | None, nodes: int | None, retriever: Any,
                 config: AgentStackConfig | None = None, *, exclude: Iterable[str] = ()) -> JobEstimate:
    """The deployed estimate of one job: its pool from `retriever`, then `estimate_from_pool`.
    Store errors propagate (callers fall back to the scheduler's default and say why)."""
    from schedmate.agents.advisor.estimator import estimate_from_pool

    cfg = config or AgentStackConfig()
    pool = retrieve_pool(retriever, fields, gpus, nodes, cfg, exclude=exclude)
    return estimate_from_pool(fields, gpus, pool, threshold=cfg.threshold, top_k=cfg.top_k, estimator=cfg.estimator)


# ----------------------------------------------------------------------------------------- the stack


class AgentStack:
    """The agents of one process, built from one `AgentStackConfig`.

    Models are injected (tests and sweeps share one MiniLM) or built on first use; `chat_model` is
    the opened LLM (None: off, or the caller could not open it). Each `build`-style method returns
    a new agent; the caller owns it."""

    def __init__(self, config: AgentStackConfig | None = None, *, embedder: Any = None, classifier: Any = None,
                 chat_model: Any = None) -> None:
        self.config = config or AgentStackConfig()
        self._embedder = embedder
        self._classifier = classifier  # may load lazily: its embedder is asked for only when needed
        self.chat_model = chat_model

    @property
    def embedder(self) -> Any:
        if self._embedder is None and self._classifier is not None:
            self._embedder = self._classifier.embedder
        if self._embedder is None:
            from schedmate.embeddings.embedder import make_embedder

            self._embedder = make_embedder()
        return self._embedder

    @property
    def classifier(self) -> Any:
        if self._classifier is None:
            from schedmate.embeddings.classifier import LineClassifier

            self._classifier = LineClassifier(self.embedder)
        return self._classifier

    def chat(self, module: str) -> Any:
        """The LLM for `module` (None when off for it)."""
        return self.chat_model if module in self.config.llm_modules else None

    def retriever(self, store: Any) -> Any:
        from schedmate.agents.advisor.retriever import SimilarJobRetriever

        return SimilarJobRetriever(store, self.embedder, threshold=self.config.threshold, top_k=self.config.top_k)

    def extractor(self) -> Any:
        from schedmate.agents.advisor.agent import MetadataExtractor

        return MetadataExtractor(self.chat("advisor"))

    def advisor(self, store: Any, *, fallback: Any = None) -> Any:
        from schedmate.agents.advisor.advisor import SchedulingAdvisor

        return SchedulingAdvisor(self.retriever(store), extractor=self.extractor(), fallback=fallback,
                                 config=self.config)

    def tracker(self, *, classifier: Any = None) -> Any:
        """The Metric Tracker (`classifier` overrides the stack's, e.g. a lazily loading one)."""
        from schedmate.agents.tracker.tracker import MetricTracker

        return MetricTracker(classifier if classifier is not None else self.classifier, self.chat("tracker"))

    def handler(self, *, store_url: str | None = None, classifier: Any = None, prepare: bool = False) -> Any:
        """The Failure Handler; `prepare` fits the learned classifier now instead of at the first call."""
        from schedmate.agents.failure.handler import FailureHandler

        h = FailureHandler(classifier if classifier is not None else self.classifier, chat_model=self.chat("failure"),
                           store_url=store_url, config=self.handler_config())
        return h.prepare() if prepare else h

    def handler_config(self) -> Any:
        from schedmate.agents.failure.handler import FailureHandlerConfig

        return FailureHandlerConfig(method=self.config.failure_method, record_history=self.config.record_failures,
                                    time_budget_s=self.config.diagnosis_budget_s)

    def estimate(self, fields: Mapping[str, Any], gpus: int | None, nodes: int | None, store: Any, *,
                 exclude: Iterable[str] = ()) -> JobEstimate:
        return estimate_job(fields, gpus, nodes, self.retriever(store), self.config, exclude=exclude)
