"""Metadata Extractor agent: a ReAct loop over the job's repository, checked against the code.

`MetadataExtractor.extract(repo, command, gpus=, nodes=)` runs the static extractor first (always:
it is cheap, it is the fallback and it is the cross-check), then a LangChain v1 agent
(`create_agent`) with the two repository tools and structured output
`ToolStrategy(WorkloadMetadata)`, bounded by a model-call limit, a tool-call limit and a wall-
clock deadline. The agent's proposal is then merged with the static result field by field:

* a proposed value must normalise under the schema and be *grounded* in what the agent read
  (`validation.grounded`): a literal on a line about that field; otherwise it is rejected;
* a grounded value that agrees with the static one is recorded as "agree"; where static found
  nothing, the LLM value is used ("llm"); where they disagree, static evidence from the command
  line, environment, configs, constants or argparse/dataclass defaults wins ("static"), and the
  LLM wins only over weak static evidence (README prose, library defaults, inferred task,
  name mentions) -- or always with `conflict_policy="llm"`;
* LLM down, timeout, step limit, invalid output: the static result, with the reason reported.

Tool choice. OpenAI-compatible servers with real function calling (vLLM, OpenAI) let the model
pick tools (`tool_choice="auto"`). llama.cpp's server only honours a *named* tool choice (it turns
it into a JSON grammar) and answers `required`/`auto` with plain text, so for it the agent runs
`tool_choice="scripted"`: the model is asked for `file_tree` first, then `file_read` (choosing the
file, constrained to the repository's files), then the `WorkloadMetadata` answer. The model still
decides every argument; the controller only fixes the order of action types.
"""

from __future__ import annotations

import contextvars
import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ModelCallLimitMiddleware, ToolCallLimitMiddleware
from langchain.agents.middleware.types import hook_config
from langchain.agents.structured_output import ToolStrategy
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from opentelemetry.trace import Tracer
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from schedmate.agents.advisor import budget
from schedmate.agents.advisor.static_extractor import FIELDS, MANDATORY, StaticExtraction, extract_static
from schedmate.agents.advisor.tools import RepoSandbox, make_repo_tools
from schedmate.agents.advisor.validation import grounded, normalise_field, values_equal
from schedmate.llm_errors import LLMError, LLMOutputError, LLMRequestError, LLMStatus, LLMUnavailable
from schedmate.llm_tracing import GenAIToolTracingHandler
from schedmate.structured import map_llm_exception
from schedmate.tracing import GEN_AI_AGENT_NAME, get_tracer
from schedmate.workload import WorkloadMetadata

__all__ = [
    "AgentAnswer", "AgentConfig", "ExtractionResult", "FieldDecision", "LLMStatus", "MetadataExtractor", "SYSTEM_PROMPT",
    "ScriptedToolChoice", "build_task", "merge_with_static",
]

# The agent answers in WorkloadMetadata's field layout, every field present and nullable and no extra
# keys: a fixed-order object that a grammar-constrained small model emits reliably (the full schema,
# with optional fields and `additionalProperties`, makes llama.cpp grammars produce broken JSON).
# Values are then normalised and validated field by field, and the merged result is validated as
# `WorkloadMetadata`.
AgentAnswer: type[BaseModel] = create_model(
    "WorkloadMetadata",
    __config__=ConfigDict(extra="ignore"),
    __doc__="Report the job's workload metadata (null for anything not found in the repository).",
    model_name=(str | None, Field(description="model trained, as named in the code")),
    task_type=(str | None, Field(description="task, e.g. image-classification, instruction-finetuning")),
    dataset=(str | None, Field(description="training dataset, name or path as written")),
    iterations=(int | None, Field(description="training length, in units of iteration_type")),
    iteration_type=(Literal["steps", "epochs"] | None, Field(description="steps or epochs")),  # type: ignore[arg-type,maybe-unrecognized-str-typeform]  # a type as a value: pydantic reads it at run time
    batch_size=(int | None, Field(description="batch size as the config states it")),
    learning_rate=(float | None, Field(description="learning rate")),
    num_workers=(int | None, Field(description="dataloader workers")),
    model_size_b=(float | None, Field(description="parameters, in billions")),
    valid_dataset=(str | None, Field(description="validation set, if named")),
)

ANSWER_TOOL = AgentAnswer.__name__
# Static evidence the LLM may overrule (when its own value is grounded): prose, framework defaults,
# inferred task, names merely mentioned. Values derived from the resolved configuration (iteration
# type, model size of a named public model) are not weak.
WEAK_KINDS = {"readme", "library_default", "inferred", "mention", "call_kwarg", "name:comment", "name:docstring",
              "name:shell"}

SYSTEM_PROMPT = """\
You are a helpful assistant that answers questions about a machine-learning training job by \
exploring its code repository with tools.

How to work (ReAct): think about what you still need, call ONE tool, read its observation, and \
repeat. Tools: `file_tree` lists the repository (data, checkpoints and binaries are hidden); \
`file_read` returns a text file. Start from the launch command: read the launch script it runs, \
then the training entry point and the configuration files it loads. Values given on the command \
line override configuration files, and configuration files override defaults in code. Ignore \
stale material (old configs, commented-out code, README notes about earlier runs).

What to report (WorkloadMetadata):
- model_name: the model trained (as named in the code, e.g. meta-llama/Meta-Llama-3-8B, resnet50)
- task_type: e.g. image-classification, instruction-finetuning, lm-pretraining, qa, object-detection
- dataset: the training dataset (name or path as written)
- iterations and iteration_type: the training length and its unit, "steps" or "epochs"
- optional: batch_size (as the config states it), learning_rate, num_workers (dataloader workers), \
model_size_b (billions of parameters), valid_dataset. Use null for anything you did not find; \
never guess.

Answer format: when you know enough, call the WorkloadMetadata tool with the values exactly as \
they appear in the files.
"""


def build_task(command: str, repo: Path | str, gpus: int | None, nodes: int | None) -> str:
    launch = ", ".join(f"{k}={v}" for k, v in (("ngpu", gpus), ("nnodes", nodes)) if v is not None) or "unknown"
    return (f"Training command: `{command}`\nRepository: {Path(repo).name} (working directory: the repository root)\n"
            f"Launch configuration: {launch}\n"
            "Question: what are the training, model and dataset metadata of this job?")


@dataclass(frozen=True)
class AgentConfig:
    max_model_calls: int = 6  # ReAct steps, final answer included
    max_tool_calls: int = 4
    timeout_s: float = 60.0
    tool_choice: Literal["auto", "scripted"] = "scripted"
    read_chars: int = 3000  # per file_read observation
    path_choices: bool = True  # file_read's path as an enum of the repository's files
    conflict_policy: Literal["static", "llm"] = "static"


class FieldDecision(BaseModel):
    model_config = ConfigDict(extra="forbid")

    field: str
    value: Any = None
    source: Literal["static", "llm", "agree", "none"]
    static_value: Any = None
    llm_value: Any = None
    llm_raw: Any = None
    reason: str = ""
    evidence: str = ""


class ExtractionResult(BaseModel):
    """The combined fingerprint, per-field decisions and what the agent did."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    fields: dict[str, Any]
    decisions: dict[str, FieldDecision]
    llm_status: LLMStatus
    llm_error: str = ""
    model_calls: int = 0
    tool_calls: list[dict[str, Any]] = []
    files_read: list[str] = []
    latency_s: float = 0.0
    static_s: float = 0.0
    llm_proposal: dict[str, Any] | None = None
    skipped: list[str] = []  # files the static extractor's budget left unread (`budget.Budget`)

    @property
    def metadata(self) -> WorkloadMetadata | None:
        if any(self.fields.get(f) is None for f in MANDATORY):
            return None
        try:
            return WorkloadMetadata.model_validate({k: v for k, v in self.fields.items() if v is not None})
        except ValidationError:
            return None

    @property
    def fallback(self) -> bool:
        """True when the LLM contributed nothing (down, timed out, or every value rejected)."""
        return all(d.source in ("static", "none") for d in self.decisions.values())

    def sources(self) -> dict[str, str]:
        return {f: d.source for f, d in self.decisions.items()}


# ----------------------------------------------------------------------------------------- model wrapper


class ScriptedToolChoice(BaseChatModel):
    """Wraps a chat model whose server only honours a *named* tool choice (llama.cpp).

    Each call forces one tool by how many observations the conversation holds: `file_tree` first,
    then `file_read` until `reads` observations exist, then the answer tool. A structured-output
    validation error (the answer was rejected) asks for the answer again.
    """

    inner: BaseChatModel
    reads: int = 3
    answer_tool: str = ANSWER_TOOL
    bound_tools: list[Any] = []

    @property
    def _llm_type(self) -> str:
        return f"scripted-{getattr(self.inner, '_llm_type', 'chat')}"

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> ScriptedToolChoice:
        return self.model_copy(update={"bound_tools": list(tools)})

    def _choice(self, messages: list[BaseMessage]) -> str:
        names = {_tool_name(t) for t in self.bound_tools}
        observations = sum(isinstance(m, ToolMessage) for m in messages)
        if observations == 0 and "file_tree" in names:
            return "file_tree"
        if observations <= self.reads and "file_read" in names:
            return "file_read"
        return self.answer_tool if self.answer_tool in names else sorted(n for n in names if n)[0]

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        choice = self._choice(messages)
        bound = self.inner.bind_tools(self.bound_tools, tool_choice={"type": "function", "function": {"name": choice}})  # type: ignore[arg-type]  # OpenAI's dict form; the base class types only str
        msg = bound.invoke([_with_text(m) for m in messages], stop=stop)
        if not isinstance(msg, AIMessage):
            msg = AIMessage(content=str(getattr(msg, "content", msg)))
        return ChatResult(generations=[ChatGeneration(message=msg)])


def _tool_name(tool: Any) -> str | None:
    if isinstance(tool, dict):
        return tool.get("name") or tool.get("function", {}).get("name")
    if isinstance(tool, type):
        return tool.__name__
    return getattr(tool, "name", None)


def _with_text(message: BaseMessage) -> BaseMessage:
    """Tool-calling AI turns get a text body: llama.cpp's server rejects assistant turns whose
    content is null (what OpenAI clients send for a pure tool call)."""
    if isinstance(message, AIMessage) and message.tool_calls and not message.content:
        text = "; ".join(f"Action: {c['name']}({json.dumps(c['args'])})" for c in message.tool_calls)
        return message.model_copy(update={"content": text})
    return message


class _Deadline(AgentMiddleware):
    """Ends the run before the next model call once the wall-clock deadline has passed."""

    def __init__(self, deadline: float) -> None:
        super().__init__()
        self.deadline = deadline
        self.hit = False

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        if time.monotonic() >= self.deadline:
            self.hit = True
            return {"jump_to": "end", "messages": [AIMessage(content="deadline reached")]}
        return None


# ----------------------------------------------------------------------------------------- merging


def merge_with_static(static: StaticExtraction, proposal: dict[str, Any] | None, observed: str, *,
                      policy: Literal["static", "llm"] = "static") -> dict[str, FieldDecision]:
    """Per-field decision between the static value and the LLM's grounded proposal."""
    decisions: dict[str, FieldDecision] = {}
    proposal = proposal or {}
    it_type = normalise_field("iteration_type", proposal.get("iteration_type"))
    for fld in FIELDS:
        s_val = static.fields.get(fld)
        s_ev = static.evidence.get(fld)
        raw = proposal.get(fld)
        base = FieldDecision(field=fld, value=s_val, source="static" if s_val is not None else "none",
                             static_value=s_val, llm_raw=raw,
                             evidence=f"{s_ev.source}: {s_ev.snippet}" if s_ev else "")
        if not proposal:
            decisions[fld] = base.model_copy(update={"reason": "no LLM answer"})
            continue
        l_val = normalise_field(fld, raw)
        if fld == "iteration_type":
            continue  # decided with iterations below
        if l_val is None:
            decisions[fld] = base.model_copy(update={"reason": "LLM gave no valid value" if raw is None else
                                                     f"invalid LLM value {raw!r}"})
            continue
        where = grounded(fld, raw, l_val, observed, iteration_type=it_type, static_value=s_val)
        upd: dict[str, Any] = {"llm_value": l_val}
        if where is None:
            decisions[fld] = base.model_copy(update={**upd, "reason": f"rejected: {raw!r} not found in the files read"})
            continue
        if s_val is not None and values_equal(fld, l_val, s_val):
            decisions[fld] = base.model_copy(update={**upd, "source": "agree", "reason": "LLM and static agree"})
            continue
        weak = s_ev is None or s_ev.kind in WEAK_KINDS
        if s_val is None or weak or policy == "llm":
            why = "static found nothing" if s_val is None else ("static evidence is weak" if weak else "policy=llm")
            decisions[fld] = base.model_copy(update={**upd, "value": l_val, "source": "llm", "evidence": where,
                                                     "reason": f"LLM value grounded ({why})"})
        else:
            assert s_ev is not None  # else the static evidence counts as weak
            decisions[fld] = base.model_copy(update={
                **upd, "reason": f"conflict: static {s_val!r} from {s_ev.kind} ({s_ev.source}) outranks LLM {l_val!r}"})
    # iteration_type follows whichever source won iterations
    it = decisions["iterations"]
    s_type = static.fields.get("iteration_type")
    if it.source == "llm" and it_type is not None:
        decisions["iteration_type"] = FieldDecision(field="iteration_type", value=it_type, source="llm",
                                                    static_value=s_type, llm_value=it_type,
                                                    llm_raw=proposal.get("iteration_type"), reason="with iterations")
    else:
        src: Literal["static", "agree", "none"] = "none" if s_type is None else (
            "agree" if it.source == "agree" and it_type == s_type else "static")
        decisions["iteration_type"] = FieldDecision(field="iteration_type", value=s_type, source=src,
                                                    static_value=s_type, llm_value=it_type,
                                                    llm_raw=proposal.get("iteration_type"),
                                                    reason="with iterations" if proposal else "no LLM answer")
    return decisions


# ----------------------------------------------------------------------------------------- extractor


class MetadataExtractor:
    """Static extraction, then (if a model is given) the ReAct agent, merged and validated."""

    def __init__(self, model: BaseChatModel | None, config: AgentConfig | None = None, *,
                 tracer: Tracer | None = None) -> None:
        self.model = model
        self.config = config or AgentConfig()
        self._tracer = get_tracer(tracer)

    def extract(self, repo: Path | str, command: str, *, gpus: int | None = None, nodes: int | None = None,
                static: StaticExtraction | None = None) -> ExtractionResult:
        t0 = time.perf_counter()
        with self._tracer.start_as_current_span("invoke_agent metadata_extractor") as span:
            span.set_attribute("gen_ai.operation.name", "invoke_agent")
            span.set_attribute(GEN_AI_AGENT_NAME, "metadata_extractor")
            if static is None:
                static = extract_static(repo, command, gpus=gpus, nodes=nodes)
            static_s = time.perf_counter() - t0
            if self.model is None:
                return self._result(static, None, "", "disabled", "", 0, None, t0, static_s)
            token = budget.cancel_token()
            if token is not None and token.cancelled:  # the caller gave up: no model calls for nobody
                return self._result(static, None, "", "timeout", "cancelled: the caller stopped waiting", 0, None,
                                    t0, static_s)
            sandbox = RepoSandbox(Path(repo), max_read_chars=self.config.read_chars)
            status, error, messages, calls = self._run_agent(sandbox, command, repo, gpus, nodes)
            proposal = _proposal(messages)
            if status == "ok" and proposal is None:
                status = "step_limit" if calls >= self.config.max_model_calls else "invalid_output"
            span.set_attribute("schedmate.advisor.llm_status", status)
            observed = build_task(command, repo, gpus, nodes) + "\n" + sandbox.observed_text()
            return self._result(static, proposal, observed, status, error, calls, sandbox, t0, static_s, messages)

    def _run_agent(self, sandbox: RepoSandbox, command: str, repo: Path | str, gpus: int | None,
                   nodes: int | None) -> tuple[LLMStatus, str, list[BaseMessage], int]:
        cfg = self.config
        tools = make_repo_tools(sandbox, path_choices=cfg.path_choices)
        model = self.model
        assert model is not None
        if cfg.tool_choice == "scripted":
            model = ScriptedToolChoice(inner=model, reads=max(0, cfg.max_tool_calls - 1))
        deadline = _Deadline(time.monotonic() + cfg.timeout_s)
        # langchain's middleware generics are invariant in the agent state: the list is typed loosely
        middleware: list[Any] = [
            ModelCallLimitMiddleware(run_limit=cfg.max_model_calls, exit_behavior="end"),
            ToolCallLimitMiddleware(run_limit=cfg.max_tool_calls, exit_behavior="continue"),
            deadline,
        ]
        agent = create_agent(
            model, tools, system_prompt=SYSTEM_PROMPT,
            response_format=ToolStrategy(AgentAnswer, handle_errors=True),
            middleware=middleware,
        )
        box: dict[str, Any] = {}
        collected: list[BaseMessage] = []

        def run() -> None:
            try:
                for chunk in agent.stream({"messages": [HumanMessage(build_task(command, repo, gpus, nodes))]},
                                          config={"recursion_limit": 4 * cfg.max_model_calls + 10,
                                                  "callbacks": [GenAIToolTracingHandler(self._tracer)]},
                                          stream_mode="values"):
                    collected[:] = chunk.get("messages", [])
                    box["state"] = chunk
            except BaseException as exc:  # noqa: BLE001 -- reported as a status
                box["error"] = exc

        # the caller's OTel context travels with the run, so chat and tool spans nest under invoke_agent
        thread = threading.Thread(target=contextvars.copy_context().run, args=(run,), name="advisor-agent",
                                  daemon=True)
        thread.start()
        thread.join(cfg.timeout_s + 1.0)
        messages = list(collected)
        calls = int((box.get("state") or {}).get("run_model_call_count", 0))
        if thread.is_alive():
            deadline.deadline = 0.0  # stop at the next step; the running request ends by its own timeout
            return "timeout", f"no answer within {cfg.timeout_s:.0f} s", messages, calls
        if "error" in box:
            err = box["error"]
            mapped = map_llm_exception(err) if not isinstance(err, LLMError) else err
            if isinstance(mapped, LLMUnavailable):
                return "unavailable", str(mapped)[:300], messages, calls
            if isinstance(mapped, LLMRequestError):
                return "request_error", str(mapped)[:300], messages, calls
            if isinstance(mapped, LLMOutputError):
                return "invalid_output", str(mapped)[:300], messages, calls
            name = type(err).__name__
            if name == "GraphRecursionError":
                return "step_limit", str(err)[:300], messages, calls
            return "error", f"{name}: {err}"[:300], messages, calls
        if deadline.hit:
            return "timeout", f"deadline of {cfg.timeout_s:.0f} s reached", messages, calls
        state = box.get("state") or {}
        if state.get("structured_response") is None and calls >= cfg.max_model_calls:
            return "step_limit", f"no answer within {cfg.max_model_calls} model calls", messages, calls
        return "ok", "", messages, calls

    def _result(self, static: StaticExtraction, proposal: dict[str, Any] | None, observed: str, status: LLMStatus,
                error: str, calls: int, sandbox: RepoSandbox | None, t0: float, static_s: float,
                messages: Sequence[BaseMessage] = ()) -> ExtractionResult:
        decisions = merge_with_static(static, proposal, observed, policy=self.config.conflict_policy)
        tool_calls = [{"name": c["name"], "args": c["args"]} for m in messages if isinstance(m, AIMessage)
                      for c in m.tool_calls]
        return ExtractionResult(
            fields={f: d.value for f, d in decisions.items()}, decisions=decisions, llm_status=status,
            llm_error=error, model_calls=calls, tool_calls=tool_calls,
            files_read=sandbox.files_read() if sandbox else [], latency_s=time.perf_counter() - t0,
            static_s=static_s, llm_proposal=proposal, skipped=list(static.skipped),
        )


def _proposal(messages: Sequence[BaseMessage]) -> dict[str, Any] | None:
    """Raw arguments of the last answer-tool call (validated or not)."""
    for m in reversed(messages):
        if isinstance(m, AIMessage):
            for call in reversed(m.tool_calls):
                if call.get("name") == ANSWER_TOOL and isinstance(call.get("args"), dict):
                    return dict(call["args"])
            for bad in m.invalid_tool_calls or ():
                if bad.get("name") == ANSWER_TOOL and isinstance(args := bad.get("args"), str):
                    try:
                        obj = json.loads(args)
                    except json.JSONDecodeError:
                        continue
                    if isinstance(obj, dict):
                        return obj
    return None
