"""The Failure Handler's result as every surface sends it: one `Diagnosis`, one `RecoveryPlan`.

The CLI's `--json`, the service's `/v1/diagnose` (`DiagnoseResponse` is this model plus the
service's fallback envelope), the daemon's job status, Ray (through the service core), the chat
and the reports all carry this model unchanged; `diagnosis_of` is the one place the handler's
internal `handler.Diagnosis` becomes it. The recovery plan is the handler's own allow-listed
`RecoveryPlan`; `plan_steps` (`schedmate.htmlreport.plans`) is its one description for people.

Line numbers on the wire are 1-based (`schedmate.wire.LINE_NUMBERS`). The locator works with
0-based indices (`Located.line_no`); only `diagnosis_of` converts them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from schedmate.agents.failure.recovery import ActionOutcome, RecoveryPlan
from schedmate.agents.failure.remediation import Remediation
from schedmate.agents.failure.similar import SimilarFailure
from schedmate.htmlreport.plans import plan_steps
from schedmate.llm_breaker import CallCounts
from schedmate.wire import LINE_NUMBERS

if TYPE_CHECKING:
    from schedmate.agents.failure import handler

__all__ = ["LINE_NUMBERS", "CategoryEvidence", "Diagnosis", "WireStatus", "diagnosis_of"]

# failure_found / no_failure_found / unreadable come from the handler; skipped (no handler
# configured) and error (the handler raised) only from a surface that could not run it (daemon)
WireStatus = Literal["failure_found", "no_failure_found", "unreadable", "skipped", "error"]


class CategoryEvidence(BaseModel):
    """What decided the category (logs.md §2.1b): the rule, why, the deciding line's text, how strong
    the evidence is, the category it points to (also when the handler abstained) and the reason's
    prior category."""

    model_config = ConfigDict(frozen=True)

    rule: str
    why: str
    line: str | None = None
    strength: str
    category: str | None = None
    prior_category: str | None = None


class Diagnosis(BaseModel):
    """The Failure Handler's answer for one log, as it crosses a boundary (JSON-ready, 1-based lines).

    Taxonomy values (`category`, `reason_code`, `component`) are the string values of
    `schedmate.taxonomy`'s enums, so a client built before a reason was added still reads the answer."""

    model_config = ConfigDict(frozen=True)

    job_id: str | None = None
    log: str | None = Field(None, description="the log diagnosed (a path, or the daemon's files)")
    status: WireStatus
    message: str = ""
    line: int | None = Field(None, ge=1, description=f"root-cause line, {LINE_NUMBERS}")
    block_line: int | None = Field(None, ge=1, description=f"first line of the failure block, {LINE_NUMBERS}")
    line_text: str | None = Field(None, description="the root-cause line as the log has it")
    total_lines: int = 0
    root_cause: str | None = Field(None, description="the sentence naming the failure (used for similarity)")
    category: str | None = Field(None, description="who must act: a FailureCategory value; None when abstained")
    reason_code: str | None = Field(None, description="a FailureReason value")
    component: str | None = Field(None, description="a Component value")
    infrastructure: bool | None = None
    confidence: float | None = Field(None, description="calibrated probability that the category is right")
    verdict_confidence: str | None = Field(None, description="the classifier's own label: high / medium / low / none")
    abstained: bool = False
    category_evidence: CategoryEvidence | None = None
    method: str | None = None
    llm_status: str = "skipped"
    remediation: Remediation | None = Field(None, description="what to change (advice only, never run)")
    similar: list[SimilarFailure] = []
    similar_status: str = "skipped"
    plan: RecoveryPlan | None = None
    action: str | None = Field(None, description="the plan's first action kind (dry-run)")
    actions: list[ActionOutcome] = Field([], description="what became of each action (`dry-run` unless executed)")
    dry_run: bool = True
    fallbacks: list[str] = []
    notes: list[str] = Field([], description="what happened to the log while it was read")
    llm_calls: CallCounts = CallCounts()
    seconds: float | None = None

    @property
    def plan_steps(self) -> list[str]:
        """The plan's actions as sentences a person follows (proposed, never executed here)."""
        return plan_steps(self.plan.model_dump(mode="json")) if self.plan is not None else []

    @property
    def plan_notes(self) -> list[str]:
        return list(self.plan.notes) if self.plan is not None else []


def diagnosis_of(d: handler.Diagnosis, *, first_line: int | None = 1) -> Diagnosis:
    """`d` as it crosses a boundary. `first_line`: the 1-based number of the first line the
    handler read (1 for a file; a tail's position in its log), or None when unknown: the wire then
    gives no line numbers rather than wrong ones."""
    loc, v = d.located, d.verdict
    ev = v.evidence if v is not None else None
    evidence = None
    if v is not None and ev is not None:
        guess, prior = v.guess_category, v.prior_category
        evidence = CategoryEvidence(rule=ev.rule, why=ev.why, line=ev.line or None, strength=ev.strength,
                                    category=guess.value if guess is not None else None,
                                    prior_category=prior.value if prior is not None else None)
    rem = d.remediation
    if rem is not None and first_line != 1:  # the handler numbered them from 1 in what it read
        rem = rem.model_copy(update={"lines": [n + first_line - 1 for n in rem.lines] if first_line else []})
    category = d.category.value if d.category is not None else None
    return Diagnosis(
        job_id=d.job_id, log=d.log_path, status=d.status, message=d.message,
        line=loc.line_no + first_line if loc is not None and first_line is not None else None,
        block_line=loc.block + first_line if loc is not None and first_line is not None else None,
        line_text=loc.text.rstrip("\r\n") if loc is not None else None, total_lines=d.total_lines,
        root_cause=d.root_cause, category=category, reason_code=d.reason.value if d.reason is not None else None,
        component=d.component.value if d.component is not None else None,
        infrastructure=category == "infrastructure" if category is not None else None,
        confidence=d.confidence, verdict_confidence=v.confidence if v is not None else None, abstained=d.abstained,
        category_evidence=evidence, method=d.method, llm_status=d.llm_status, remediation=rem,
        similar=list(d.similar), similar_status=d.similar_status, plan=d.plan,
        action=d.plan.actions[0].kind.value if d.plan is not None and d.plan.actions else None,
        actions=list(d.actions), dry_run=all(a.status == "dry-run" for a in d.actions),
        fallbacks=list(d.fallbacks), notes=list(d.notes), llm_calls=d.llm_calls, seconds=d.timings_s.get("total"),
    )  # fmt: skip
