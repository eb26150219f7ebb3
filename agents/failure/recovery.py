"""Automated recovery (spec §4.3): an allow-listed plan for infrastructure failures, dry-run
unless explicitly executed.

Safety model:
- **Allow-list.** A plan holds only `RunDiagnostic` (a diagnostic from the fixed `Diagnostic`
  enum), `CordonNode` and `ResubmitFromCheckpoint`. Pydantic rejects anything else, and
  `execute_plan` re-checks every action before running it.
- **Trusted parameters only.** Every parameter comes from `JobMeta`, which the *scheduler*
  fills (job id, the nodes of its placement, the latest checkpoint it knows). Nothing is ever
  taken from log text or from the LLM: the verdict contributes only enum values (category,
  component), which pick actions from fixed tables. Hosts named in the log are ignored.
- **Confirm before isolating.** A node is cordoned only when one of *our* diagnostics fails on
  it; with an uncertain verdict (LLM only, ungrounded) even the resubmission waits for a failed
  diagnostic. Framework and script failures get no action (the user must fix them), nor does an
  infrastructure verdict whose root-cause line the rules read as a script error (`KeyError`):
  a script error never yields a plan that touches nodes. Resubmission stops after
  `max_auto_resubmits` attempts.
- **Dry-run by default.** `execute_plan` runs actions only with `execute=True` and an executor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from schedmate.taxonomy import Component, FailureCategory

if TYPE_CHECKING:  # an annotation only: importing the LLM classifier loads langchain and openai (+34 MB)
    from schedmate.agents.failure.llm_classifier import FailureVerdict

NodeName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")]
JobId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")]
CheckpointRef = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_./:@+-]{1,1024}$")]
When = Literal["always", "diagnostic_failed"]


class ActionKind(StrEnum):
    RUN_DIAGNOSTIC = "run_diagnostic"
    CORDON_NODE = "cordon_node"
    RESUBMIT_FROM_CHECKPOINT = "resubmit_from_checkpoint"


ALLOWED_ACTIONS = frozenset(ActionKind)


class Diagnostic(StrEnum):
    """The only diagnostics a plan may run (each maps to a fixed command in the runner)."""

    NCCL_TESTS = "nccl-tests"  # all_reduce_perf across the node's GPUs
    DCGM_DIAG = "dcgm-diag"  # dcgmi diag -r 3
    NVLINK_STATUS = "nvlink-status"  # nvidia-smi nvlink --status / error counters
    IB_CHECK = "ib-check"  # ibstat / port counters of the node's HCAs
    NODE_HEALTH = "node-health"  # the cluster's node health check (kernel, mounts, daemons)
    STORAGE_CHECK = "storage-check"  # read/write probe of the job's filesystems from the node


# component → diagnostics that confirm it, and whether a failed diagnostic justifies a cordon
DIAGNOSTICS: dict[Component, tuple[Diagnostic, ...]] = {
    Component.GPU: (Diagnostic.DCGM_DIAG, Diagnostic.NCCL_TESTS),
    Component.NVLINK: (Diagnostic.NVLINK_STATUS, Diagnostic.NCCL_TESTS),
    Component.NETWORK: (Diagnostic.IB_CHECK, Diagnostic.NCCL_TESTS),
    Component.NODE: (Diagnostic.NODE_HEALTH,),
    Component.STORAGE: (Diagnostic.STORAGE_CHECK,),
    Component.MEMORY: (Diagnostic.NODE_HEALTH,),  # a host-memory kill: check the node, never cordon it for that
    Component.UNKNOWN: (Diagnostic.DCGM_DIAG, Diagnostic.NCCL_TESTS, Diagnostic.NODE_HEALTH),
}
CORDON_ON_FAILURE = frozenset({Component.GPU, Component.NVLINK, Component.NETWORK, Component.NODE, Component.UNKNOWN})


class _Action(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RunDiagnostic(_Action):
    kind: Literal[ActionKind.RUN_DIAGNOSTIC] = ActionKind.RUN_DIAGNOSTIC
    diagnostic: Diagnostic
    node: NodeName


class CordonNode(_Action):
    kind: Literal[ActionKind.CORDON_NODE] = ActionKind.CORDON_NODE
    node: NodeName
    when: When = "diagnostic_failed"


class ResubmitFromCheckpoint(_Action):
    kind: Literal[ActionKind.RESUBMIT_FROM_CHECKPOINT] = ActionKind.RESUBMIT_FROM_CHECKPOINT
    job_id: JobId
    checkpoint: CheckpointRef | None = None
    exclude_cordoned: bool = True
    when: When = "always"


_ACTION_TYPES = (RunDiagnostic, CordonNode, ResubmitFromCheckpoint)
RecoveryAction = Annotated[RunDiagnostic | CordonNode | ResubmitFromCheckpoint, Field(discriminator="kind")]


class JobMeta(BaseModel):
    """Trusted job metadata from the scheduler (never from the log)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    job_id: JobId
    nodes: tuple[NodeName, ...] = Field((), description="the scheduler's placement of the failed attempt")
    suspect_nodes: tuple[NodeName, ...] = Field((), description="scheduler-side evidence (e.g. the node whose rank exited first)")
    checkpoint: CheckpointRef | None = Field(None, description="latest checkpoint the scheduler knows")
    num_gpus: int | None = Field(None, ge=1)
    attempt: int = Field(0, ge=0, description="automatic resubmissions already made for this job")

    @model_validator(mode="after")
    def _suspects_in_placement(self) -> JobMeta:
        if not set(self.suspect_nodes) <= set(self.nodes):
            raise ValueError("suspect_nodes must be a subset of the placement `nodes`")
        return self


class RecoveryPlan(BaseModel):
    """What to do about one failure. `actions` is empty for non-recoverable failures."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    job_id: JobId
    category: FailureCategory | None
    component: Component | None
    actions: tuple[RecoveryAction, ...] = ()
    notes: tuple[str, ...] = ()

    def check_trusted(self, meta: JobMeta) -> None:
        """Raise ValueError unless every action is allow-listed and uses only `meta`'s values."""
        nodes = set(meta.nodes)
        for action in self.actions:
            if type(action) not in _ACTION_TYPES or action.kind not in ALLOWED_ACTIONS:
                raise ValueError(f"action {getattr(action, 'kind', action)!r} is not allow-listed")
            if isinstance(action, (RunDiagnostic, CordonNode)) and action.node not in nodes:
                raise ValueError(f"node {action.node!r} is not in the job's placement")
            if isinstance(action, ResubmitFromCheckpoint) and (
                action.job_id != meta.job_id or action.checkpoint != meta.checkpoint
            ):
                raise ValueError("resubmission parameters differ from the job metadata")
        if self.job_id != meta.job_id:
            raise ValueError("plan is for another job")


@dataclass(frozen=True)
class RecoveryPolicy:
    max_nodes: int = 16  # diagnose at most this many nodes (suspects first, then placement order)
    max_auto_resubmits: int = 1


def plan_recovery(verdict: FailureVerdict, meta: JobMeta, policy: RecoveryPolicy = RecoveryPolicy()) -> RecoveryPlan:
    """The plan for `verdict`, built from fixed tables and `meta` only."""
    base = {"job_id": meta.job_id, "category": verdict.category, "component": verdict.component}
    ev = getattr(verdict, "evidence", None)
    said = f" ({ev.why}: {ev.line[:160]!r})" if ev is not None and ev.line else f" ({ev.why})" if ev is not None else ""
    if verdict.category is None:
        if getattr(verdict, "abstained", False):
            guess = verdict.guess_category.value if verdict.guess_category is not None else "unknown"
            note = (f"category unknown: calibrated confidence {verdict.calibrated:.2f} is below the threshold "
                    f"(best guess {guess}{said}); no automatic action")  # fmt: skip
            return RecoveryPlan(**base, notes=(note,))
        return RecoveryPlan(**base, notes=("failure not classified: no automatic action",))
    # the plan follows the category, i.e. who must act (logs.md §2.1b)
    if verdict.category is FailureCategory.FRAMEWORK:
        note = (f"framework failure{said}: pin or upgrade the dependency the lines name; "
                "no blind resubmit, no node action")  # fmt: skip
        return RecoveryPlan(**base, notes=(note,))
    if verdict.category is not FailureCategory.INFRASTRUCTURE:
        note = (f"{verdict.category.value} failure{said}: tell the job's owner what to change; "
                "never resubmit it unchanged, never touch nodes; the user must fix it")  # fmt: skip
        return RecoveryPlan(**base, notes=(note,))
    evidence = verdict.rules
    if evidence is not None and evidence.category is FailureCategory.SCRIPT and verdict.source != "rules":
        # the log's own root-cause line is a script error (`KeyError: 'k'`): whatever else called
        # it infrastructure (the LLM, a guess), no node is diagnosed, cordoned or resubmitted for it
        note = (f"the root-cause line is a script error ({evidence.reason.value}: {evidence.evidence[:120]!r}); "
                f"the {verdict.source} verdict 'infrastructure' contradicts it: no automatic action")  # fmt: skip
        return RecoveryPlan(**base, notes=(note,))
    component = verdict.component or Component.UNKNOWN
    nodes = list(dict.fromkeys([*meta.suspect_nodes, *meta.nodes]))[: policy.max_nodes]
    notes: list[str] = []
    actions: list[RunDiagnostic | CordonNode | ResubmitFromCheckpoint] = []
    if not nodes:
        notes.append("no placement in the job metadata: nothing to diagnose or cordon")
    for node in nodes:
        diagnostics = DIAGNOSTICS.get(component, DIAGNOSTICS[Component.UNKNOWN])
        actions.extend(RunDiagnostic(diagnostic=d, node=node) for d in diagnostics)
    if component in CORDON_ON_FAILURE:
        actions.extend(CordonNode(node=node) for node in nodes)
    uncertain = verdict.confidence == "low"
    if meta.attempt >= policy.max_auto_resubmits:
        notes.append(f"{meta.attempt} automatic resubmission(s) already: not resubmitting again")
    else:
        when: When = "diagnostic_failed" if uncertain and nodes else "always"
        if uncertain:
            notes.append("low-confidence verdict: resubmit only if a diagnostic confirms the fault")
        if meta.checkpoint is None:
            notes.append("no checkpoint known: the job restarts from the beginning")
        actions.append(ResubmitFromCheckpoint(job_id=meta.job_id, checkpoint=meta.checkpoint, when=when))
    plan = RecoveryPlan(**base, actions=tuple(actions), notes=tuple(notes))
    plan.check_trusted(meta)
    return plan


@runtime_checkable
class SchedulerAdapter(Protocol):
    """What recovery needs from the host scheduler / cluster manager."""

    def cordon_node(self, node: str, reason: str) -> None: ...

    def resubmit_from_checkpoint(
        self, job_id: str, checkpoint: str | None, exclude_nodes: Sequence[str]
    ) -> str | None: ...


@runtime_checkable
class DiagnosticRunner(Protocol):
    """Runs one allow-listed diagnostic on one node; True when the node passes."""

    def run_diagnostic(self, diagnostic: Diagnostic, node: str) -> bool: ...


@dataclass
class RecoveryExecutor:
    scheduler: SchedulerAdapter
    diagnostics: DiagnosticRunner


@dataclass(frozen=True, slots=True)
class ActionOutcome:
    kind: ActionKind
    target: str  # node or job id (trusted values only)
    status: Literal["dry-run", "done", "passed", "failed", "skipped", "error"]
    detail: str = ""


def execute_plan(plan: RecoveryPlan, meta: JobMeta, executor: RecoveryExecutor | None = None, *,
                 execute: bool = False) -> list[ActionOutcome]:  # fmt: skip
    """Run `plan` (only with `execute=True` and an executor), else report what would run.

    Diagnostics run first; a `diagnostic_failed` cordon runs only for a node whose diagnostic
    failed; a `diagnostic_failed` resubmission only if some diagnostic failed. Errors raised by
    the executor are reported per action, never raised.
    """
    plan.check_trusted(meta)
    if not execute or executor is None:
        return [ActionOutcome(a.kind, _target(a), "dry-run", _describe(a)) for a in plan.actions]
    out: list[ActionOutcome] = []
    failed_nodes: set[str] = set()
    cordoned: list[str] = []
    reason = f"schedmate: {plan.category.value if plan.category else 'unknown'} failure, component " \
             f"{plan.component.value if plan.component else 'unknown'}, job {plan.job_id}"  # fmt: skip
    for action in sorted(plan.actions, key=lambda a: list(ActionKind).index(a.kind)):
        try:
            if isinstance(action, RunDiagnostic):
                ok = executor.diagnostics.run_diagnostic(action.diagnostic, action.node)
                if not ok:
                    failed_nodes.add(action.node)
                out.append(ActionOutcome(action.kind, action.node, "passed" if ok else "failed", action.diagnostic.value))
            elif isinstance(action, CordonNode):
                if action.when == "diagnostic_failed" and action.node not in failed_nodes:
                    out.append(ActionOutcome(action.kind, action.node, "skipped", "diagnostics passed"))
                    continue
                executor.scheduler.cordon_node(action.node, reason)
                cordoned.append(action.node)
                out.append(ActionOutcome(action.kind, action.node, "done"))
            else:
                if action.when == "diagnostic_failed" and not failed_nodes:
                    detail = "no diagnostic confirmed the fault"
                    out.append(ActionOutcome(action.kind, action.job_id, "skipped", detail))
                    continue
                exclude = cordoned if action.exclude_cordoned else []
                new_id = executor.scheduler.resubmit_from_checkpoint(action.job_id, action.checkpoint, exclude)
                out.append(ActionOutcome(action.kind, action.job_id, "done", f"new job {new_id}" if new_id else ""))
        except Exception as exc:  # noqa: BLE001 -- reported per action; recovery must not crash the handler
            out.append(ActionOutcome(action.kind, _target(action), "error", f"{type(exc).__name__}: {exc}"[:200]))
    return out


def _target(action: RunDiagnostic | CordonNode | ResubmitFromCheckpoint) -> str:
    return action.job_id if isinstance(action, ResubmitFromCheckpoint) else action.node


def _describe(action: RunDiagnostic | CordonNode | ResubmitFromCheckpoint) -> str:
    """What a dry run would do, in the words every surface uses for a plan's step (`plan_step`)."""
    from schedmate.htmlreport.plans import plan_step

    return plan_step(action.model_dump(mode="json"))
