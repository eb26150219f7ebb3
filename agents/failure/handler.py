"""`FailureHandler.diagnose(log_path, job_meta) -> Diagnosis`: locate → classify → similar → plan.

Classification follows `FailureHandlerConfig.method` (see `decision`): `learned` (default:
high-precision rules, else the learned classifier, the LLM only breaking its ties), `rules`
(signature rules only) or `llm` (rules cross-checked with the LLM, the earlier behaviour).
`diagnose_lines` diagnoses text held in memory; `classify_window` classifies an already
located window, for evaluations that bring their own locator.

Every step has its own OpenTelemetry span under `failure.diagnose` and its own timing. Every
dependency may be missing or down, and the diagnosis says which fallback was taken instead of
raising:
- no LLM configured or LLM down / answering garbage → rules only (`llm_status`, `fallbacks`);
- no store or Redis down → no similar failures (`similar_status`, `fallbacks`);
- unreadable file (missing, a FIFO, device or directory: refused without blocking) →
  `status="unreadable"`; empty, binary, truncated or clean log → `status="no_failure_found"`;
  a log truncated, rotated or rewritten while it is read → a diagnosis of what was read, with
  `notes` saying what changed;
- an LLM endpoint that failed or stalled repeatedly → its circuit is open and the LLM is skipped
  at once (`llm_status="circuit_open"`); the whole diagnosis has a time budget
  (`time_budget_s`) that bounds the LLM call (`"timeout"` when none is left). `llm_calls`
  counts the calls made, answered, failed, timed out and skipped.
Only a malformed `job_meta` raises (it is the caller's trusted input, so a bad one is a bug), and
`schedmate.cancel.Cancelled` when the request's caller gave up (504): the diagnosis then stops at
its next step boundary instead of finishing for nobody.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from opentelemetry.trace import Span, Tracer
from pydantic import BaseModel, ConfigDict

from schedmate.agents.failure.confidence import finish
from schedmate.agents.failure.decision import METHODS, ClassifierMethod, settle, tiebreak
from schedmate.agents.failure.learned import LearnedFailureClassifier, shared_classifier
from schedmate.agents.failure.llm_classifier import FailureVerdict, LLMFailureClassifier, LLMVerdict, combine
from schedmate.agents.failure.locator import (
    FailureLocator,
    Located,
    LogIndex,
    classification_view,
    is_cascade,
    is_signal,
)
from schedmate.agents.failure.recovery import (
    ActionOutcome,
    JobMeta,
    RecoveryExecutor,
    RecoveryPlan,
    RecoveryPolicy,
    execute_plan,
    plan_recovery,
)
from schedmate.agents.failure.remediation import Remediation, remediate, remediation_for
from schedmate.agents.failure.rules import RulesClassifier, clean_line, root_cause_text
from schedmate.agents.failure.similar import SimilarFailure, SimilarFailureFinder
from schedmate.agents.failure.specific import most_specific
from schedmate.cancel import check_cancelled
from schedmate.embeddings.classifier import LineClassifier
from schedmate.embeddings.store import StoreUnavailable
from schedmate.llm_breaker import CallCounts, llm_deadline, time_left
from schedmate.llm_errors import LLMError, LLMOutputError, LLMRequestError, LLMSkipped, LLMStatus, LLMUnavailable
from schedmate.taxonomy import Component, FailureCategory, FailureReason
from schedmate.tracing import get_tracer

Status = Literal["failure_found", "no_failure_found", "unreadable"]
SimilarStatus = Literal["ok", "disabled", "unavailable", "error", "skipped"]


@dataclass(frozen=True)
class FailureHandlerConfig:
    method: ClassifierMethod = "learned"  # who classifies: "learned" | "rules" | "llm" (module `decision`)
    window_lines: int = 200  # context the classifiers read, centred on the located line
    chunk: int = 256
    window_chunks: int = 2
    lookback_chunks: int = 2
    tail_chunks: int = 8
    llm_max_chars: int = 3_000  # prompt budget for the window (Gemma's default context is 2k tokens)
    llm_retries: int = 1
    similar_k: int = 3
    similar_threshold: float = 0.8
    record_history: bool = False  # store each diagnosed failure for later similarity search
    time_budget_s: float | None = 300.0  # whole diagnosis; bounds the LLM call (None: no bound)
    recovery: RecoveryPolicy = field(default_factory=RecoveryPolicy)


class Diagnosis(BaseModel):
    """Everything the handler found out about one failed job (JSON-serialisable)."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    log_path: str
    status: Status
    method: ClassifierMethod = "learned"
    message: str = ""
    located: Located | None = None
    root_cause: str | None = None  # the line naming the failure (exception/signature), used for similarity
    category: FailureCategory | None = None
    reason: FailureReason | None = None
    component: Component | None = None
    verdict: FailureVerdict | None = None
    llm_status: LLMStatus = "skipped"
    similar: list[SimilarFailure] = []
    similar_status: SimilarStatus = "skipped"
    plan: RecoveryPlan | None = None
    actions: list[ActionOutcome] = []
    fallbacks: list[str] = []
    timings_s: dict[str, float] = {}
    classifier_calls: int = 0
    total_lines: int = 0
    llm_calls: CallCounts = CallCounts()  # LLM calls this diagnosis made, answered, timed out, skipped
    notes: list[str] = []  # what happened to the log while it was read (truncated, rotated, too long)
    # which evidence decided the category (logs.md §2.1b): `rule: why ('line')`, and the line itself
    category_evidence: str | None = None
    evidence_line: str | None = None
    confidence: float | None = None  # calibrated probability that the category is right
    abstained: bool = False  # below the calibrated threshold: category None ("unknown")
    # what the owner or operator should change, values read from the lines (advice only: never run)
    remediation: Remediation | None = None

    @property
    def recoverable(self) -> bool:
        return self.category is FailureCategory.INFRASTRUCTURE


class FailureHandler:
    """Failure Handler over one line classifier; LLM, history store and executor are optional."""

    def __init__(
        self,
        classifier: LineClassifier,
        *,
        chat_model: BaseChatModel | None = None,
        similar: SimilarFailureFinder | None = None,
        store_url: str | None = None,
        executor: RecoveryExecutor | None = None,
        execute: bool = False,
        config: FailureHandlerConfig | None = None,
        tracer: Tracer | None = None,
        learned: LearnedFailureClassifier | None = None,
    ) -> None:
        self.config = config or FailureHandlerConfig()
        if self.config.method not in METHODS:
            raise ValueError(f"unknown method {self.config.method!r}; expected one of {METHODS}")
        self.classifier = classifier
        self._learned = learned
        self._tracer = get_tracer(tracer)
        c = self.config
        self.locator = FailureLocator(
            classifier, chunk=c.chunk, window_chunks=c.window_chunks, lookback_chunks=c.lookback_chunks,
            tail_chunks=c.tail_chunks, tracer=self._tracer,
        )  # fmt: skip
        self.rules = RulesClassifier()
        self.llm = (
            LLMFailureClassifier(chat_model, max_chars=c.llm_max_chars, retries=c.llm_retries, tracer=self._tracer)
            if chat_model is not None
            else None
        )
        self._similar = similar
        self._store_url = store_url
        self.executor = executor
        self.execute = execute

    # -- public API ---------------------------------------------------------------------------

    @property
    def learned(self) -> LearnedFailureClassifier:
        """The learned classifier (shared per embedder, fitted on first use)."""
        if self._learned is None:
            self._learned = shared_classifier(self.classifier.embedder)
        return self._learned

    def prepare(self) -> FailureHandler:
        """Fit the learned classifier now (embedding the bank takes tens of seconds on a CPU), so
        the first diagnosis does not pay for it; a no-op for the other methods or when fitted."""
        if self.config.method == "learned":
            self.learned.ensure_fitted()
        return self

    def diagnose_lines(self, lines: Sequence[str | bytes], job_meta: JobMeta | Mapping[str, Any], log_path: str = "<memory>") -> Diagnosis:
        """`diagnose` for a log already held in memory, one entry per line."""
        meta = job_meta if isinstance(job_meta, JobMeta) else JobMeta.model_validate(job_meta)
        timings: dict[str, float] = {}
        base: dict[str, Any] = {"job_id": meta.job_id, "log_path": log_path, "timings_s": timings, "method": self.config.method}
        t_all = time.perf_counter()
        with (
            self._tracer.start_as_current_span("failure.diagnose"),
            llm_deadline(self.config.time_budget_s),
            LogIndex.from_lines(lines) as index,
        ):
            diagnosis = self._diagnose(index, meta, base, timings)
        return diagnosis.model_copy(update={"timings_s": {**timings, "total": _since(t_all)}})

    def classify_window(
        self,
        lines: Sequence[str | bytes],
        block: int,
        root: int | None = None,
        fallbacks: list[str] | None = None,
        calls: list[CallCounts] | None = None,
    ) -> tuple[FailureVerdict, LLMStatus]:
        """Classify the failure at `lines[block]` (its first line) whose root-cause line is
        `lines[root]` (default: `block`, a traceback header there is followed to its exception)
        with this handler's method. Returns the verdict and what became of the LLM; the LLM
        calls made are appended to `calls`."""
        fallbacks = fallbacks if fallbacks is not None else []
        root = block if root is None else root
        verdict, status = self._classify_reason(lines, block, root, fallbacks, calls)
        # the classifiers named the reason; the category (who must act) is decided from the evidence
        # in the lines, the Acme table only the prior (logs.md §2.1b), then calibrated (`confidence`)
        return finish(verdict, lines, block, root), status

    def _classify_reason(self, lines: Sequence[str | bytes], block: int, root: int, fallbacks: list[str],
                         calls: list[CallCounts] | None) -> tuple[FailureVerdict, LLMStatus]:  # fmt: skip
        rules = self.rules.classify(lines, block)
        method = self.config.method
        if method == "rules":
            return combine(rules, None), "disabled" if self.llm is None else "skipped"
        if method == "llm":
            llm, status = self._ask_llm(lines, block, fallbacks, calls)
            reasons = self.rules.reasons_in(lines) if llm else set()
            return combine(rules, llm, reasons), status
        learned = self.learned.classify(lines, root)
        if learned.confident and is_cascade(clean_line(lines[root]).text):
            # only the launcher's report of a failure was found (`srun: error: ... exit code 1`):
            # it names no cause, so no answer read from it may count as confident
            learned = dataclasses.replace(learned, confident=False)
        on_root = rules is not None and block + rules.offset == root
        verdict = settle(rules, learned, class_on_root=on_root)
        if verdict is not None:
            return verdict, "disabled" if self.llm is None else "skipped"
        llm, status = self._ask_llm(lines, block, fallbacks, calls)
        return tiebreak(rules, learned, llm, self.rules.reasons_in(lines) if llm else set()), status

    def diagnose(self, log_path: str | os.PathLike[str], job_meta: JobMeta | Mapping[str, Any]) -> Diagnosis:
        meta = job_meta if isinstance(job_meta, JobMeta) else JobMeta.model_validate(job_meta)
        timings: dict[str, float] = {}
        base: dict[str, Any] = {
            "job_id": meta.job_id, "log_path": str(log_path), "timings_s": timings, "method": self.config.method,
        }  # fmt: skip
        t_all = time.perf_counter()
        with self._tracer.start_as_current_span("failure.diagnose") as root:
            root.set_attribute("schedmate.job_id", meta.job_id)
            try:
                index = LogIndex.open(log_path)
            except (OSError, ValueError) as exc:
                timings["total"] = _since(t_all)
                root.set_attribute("schedmate.failure.status", "unreadable")
                return Diagnosis(**base, status="unreadable", message=f"cannot read log: {type(exc).__name__}: {exc}")
            with index, llm_deadline(self.config.time_budget_s):
                diagnosis = self._diagnose(index, meta, base, timings)
                notes = list(index.check_changes())
            update: dict[str, Any] = {"timings_s": {**timings, "total": _since(t_all)}}
            if notes:
                update |= {"notes": notes, "fallbacks": [*diagnosis.fallbacks, *notes]}
            diagnosis = diagnosis.model_copy(update=update)
            root.set_attribute("schedmate.failure.status", diagnosis.status)
            if diagnosis.category is not None:
                root.set_attribute("schedmate.failure.category", diagnosis.category.value)
        return diagnosis

    # -- steps --------------------------------------------------------------------------------

    def _diagnose(self, index: LogIndex, meta: JobMeta, base: dict[str, Any], timings: dict[str, float]) -> Diagnosis:
        fallbacks: list[str] = []
        calls: list[CallCounts] = []
        base["total_lines"] = len(index)
        with self._step("failure.locate", timings, "locate") as span:
            try:
                located = self.locator.locate(index)
            except Exception as exc:  # noqa: BLE001 -- a hostile log must not crash the scheduler
                span.set_attribute("error.type", type(exc).__name__)
                return Diagnosis(**base, status="unreadable", message=f"locator failed: {type(exc).__name__}: {exc}")
            span.set_attribute("schedmate.failure.found", located is not None)
        if located is None:
            reason = "empty log" if len(index) == 0 else "no failure line in the log's tail"
            return Diagnosis(**base, status="no_failure_found", message=reason, classifier_calls=self.locator.last_calls,
                             remediation=remediation_for("none", basis="none"))
        base.update(located=located, classifier_calls=located.calls)

        with self._step("failure.classify", timings, "classify") as span:
            view = classification_view(index, located, self.config.window_lines)
            verdict, llm_status = self.classify_window(view.lines, view.block, view.root, fallbacks, calls)
            if self.config.method == "learned" and verdict.source != "rules":
                root_cause = clean_line(view.lines[view.root]).text.strip()
            else:
                root_cause = root_cause_text(view.lines, view.block, verdict.rules)
            # the errno line, not the generic wrapper that repeats it (`specific`)
            if (spec := most_specific(view.lines, view.root, view.block, self.rules)) is not None:
                at, root_cause = spec
                if at != view.root:
                    raw = view.lines[at]
                    located = dataclasses.replace(located, line_no=view.start + at,
                                                  text=raw if isinstance(raw, str) else raw.decode("utf-8", "replace"))
                    base["located"] = located
            span.set_attribute("schedmate.failure.method", self.config.method)
            span.set_attribute("schedmate.failure.source", verdict.source)
            span.set_attribute("schedmate.failure.llm_status", llm_status)
            if verdict.reason is not None:
                span.set_attribute("schedmate.failure.reason", verdict.reason.value)

            remediation = remediate(view.lines, view.root, verdict.reason, verdict.category, block=view.block,
                                    first_line=view.start + 1)
            root_text = clean_line(view.lines[view.root]).text
            if remediation.basis != "line" and is_cascade(root_text) and not is_signal(root_text, self.rules):
                # only the launcher's report was found: nothing in it says what to change
                remediation = remediation_for("unknown", basis="none")

        with self._step("failure.similar", timings, "similar"):
            similar, similar_status = self._find_similar(root_cause, meta, verdict, fallbacks)

        with self._step("failure.recovery", timings, "recovery") as span:
            plan = plan_recovery(verdict, meta, self.config.recovery)
            actions = execute_plan(plan, meta, self.executor, execute=self.execute)
            span.set_attribute("schedmate.failure.actions", len(plan.actions))
            span.set_attribute("schedmate.failure.executed", bool(self.execute and self.executor))

        return Diagnosis(
            **base,
            status="failure_found",
            message=verdict.note,
            root_cause=root_cause,
            category=verdict.category,
            reason=verdict.reason,
            component=verdict.component,
            verdict=verdict,
            category_evidence=verdict.evidence.describe() if verdict.evidence is not None else None,
            evidence_line=verdict.evidence.line or None if verdict.evidence is not None else None,
            confidence=verdict.calibrated,
            abstained=verdict.abstained,
            remediation=remediation,
            llm_status=llm_status,
            similar=similar,
            similar_status=similar_status,
            plan=plan,
            actions=actions,
            fallbacks=fallbacks,
            llm_calls=sum(calls, CallCounts()),
        )

    def _ask_llm(
        self, window: Sequence[str | bytes], focus: int, fallbacks: list[str], calls: list[CallCounts] | None = None
    ) -> tuple[LLMVerdict | None, LLMStatus]:
        if self.llm is None:
            return None, "disabled"
        calls = calls if calls is not None else []
        breaker, endpoint = getattr(self.llm.model, "breaker", None), getattr(self.llm.model, "endpoint", "")
        before = breaker.counts(endpoint) if breaker is not None else None
        verdict, status = self._ask_llm_once(window, focus, fallbacks)
        if breaker is not None and before is not None:
            calls.append(breaker.counts(endpoint) - before)
        else:  # a model without a breaker: one call per question, as far as we can tell
            calls.append(_counts_of(status))
        return verdict, status

    def _ask_llm_once(self, window: Sequence[str | bytes], focus: int, fallbacks: list[str]) -> tuple[LLMVerdict | None, LLMStatus]:
        assert self.llm is not None
        left = time_left()
        if left is not None and left <= 0:
            fallbacks.append("LLM skipped: the diagnosis' time budget is spent: rules only")
            return None, "timeout"
        try:
            return self.llm.classify(window, focus), "ok"
        except LLMSkipped as exc:
            if exc.reason == "budget":
                fallbacks.append("LLM skipped: the diagnosis' time budget is spent: rules only")
                return None, "timeout"
            fallbacks.append(f"LLM skipped ({_short(exc)}): rules only")
            return None, "circuit_open"
        except LLMUnavailable as exc:
            fallbacks.append(f"LLM unavailable ({_short(exc)}): rules only")
            return None, "unavailable"
        except LLMOutputError as exc:
            fallbacks.append(f"LLM gave no valid answer ({_short(exc)}): rules only")
            return None, "invalid_output"
        except LLMRequestError as exc:
            fallbacks.append(f"LLM rejected the request ({_short(exc)}): rules only")
            return None, "rejected"
        except LLMError as exc:
            fallbacks.append(f"LLM failed ({_short(exc)}): rules only")
            return None, "unavailable"

    def _finder(self) -> SimilarFailureFinder | None:
        if self._similar is None and self._store_url is not None:
            self._similar = SimilarFailureFinder.connect(
                self._store_url, self.classifier.embedder, k=self.config.similar_k,
                threshold=self.config.similar_threshold, tracer=self._tracer,
            )  # fmt: skip
        return self._similar

    def _find_similar(
        self, root_cause: str, meta: JobMeta, verdict: FailureVerdict, fallbacks: list[str]
    ) -> tuple[list[SimilarFailure], SimilarStatus]:
        try:
            finder = self._finder()
            if finder is None:
                return [], "disabled"
            found = finder.find(root_cause, exclude_job=meta.job_id)
            if self.config.record_history:
                finder.record(
                    meta.job_id, root_cause,
                    category=verdict.category.value if verdict.category else None,
                    reason=verdict.reason.value if verdict.reason else None,
                    component=verdict.component.value if verdict.component else None,
                )  # fmt: skip
            return found, "ok"
        except StoreUnavailable as exc:
            fallbacks.append(f"history store unavailable ({_short(exc)}): no similar failures")
            return [], "unavailable"
        except Exception as exc:  # noqa: BLE001 -- similarity is advisory; never fail the diagnosis
            fallbacks.append(f"similar-failure search failed ({type(exc).__name__}: {_short(exc)})")
            return [], "error"

    @contextmanager
    def _step(self, name: str, timings: dict[str, float], key: str) -> Iterator[Span]:
        check_cancelled(key)  # a request answered 504 stops here, not after the remaining steps
        t0 = time.perf_counter()
        with self._tracer.start_as_current_span(name) as span:
            try:
                yield span
            finally:
                timings[key] = _since(t0)


def _counts_of(status: LLMStatus) -> CallCounts:
    if status == "ok" or status in ("invalid_output", "rejected"):
        return CallCounts(made=1, answered=1)
    if status == "unavailable":
        return CallCounts(made=1, failed=1)
    if status in ("circuit_open", "timeout"):
        return CallCounts(skipped=1)
    return CallCounts()


def _since(t0: float) -> float:
    return round(time.perf_counter() - t0, 4)


def _short(exc: BaseException, limit: int = 160) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:limit]
