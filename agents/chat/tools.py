"""The chat's tools: deterministic reads of SchedMate's own data, each recording its evidence.

`ChatBackend` is what the tools need from the outside (the service core implements it in
`deploy/service/chat_route.py`, so the terminal and the web page share one set of agents
and one path allow-list). `ChatTools` runs them for one turn and keeps what they found in an
`Evidence`, from which the answer, its citations and its plan are built; the same functions are
offered to a capable model as LangChain tools, whose output quotes log text inside an
`<untrusted_log>` block the system prompt tells the model never to obey.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, Protocol

from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field

from schedmate.agents.chat.facts import (
    ChatInputError,
    ChatUnavailable,
    Citation,
    DiagnosisFacts,
    JobFacts,
    LogLine,
    MetricsFacts,
    SimilarCase,
    clean_text,
)

__all__ = ["ChatBackend", "ChatTools", "Evidence", "MAX_WINDOW", "quote_block", "read_window"]

MAX_WINDOW = 40  # lines one window may quote (either side of the centre at most half of it)
DEFAULT_RADIUS = 4
# the diagnosis' fields a model reads (a small local model's context is 2k tokens: no plan, no history)
_PROMPT_FACTS = {"status", "category", "reason_code", "component", "line", "message", "fallbacks", "category_evidence",
                 "remediation"}
_PROMPT_METRICS = {"signal", "step_time", "loss", "throughput", "note"}


class ChatBackend(Protocol):
    """SchedMate's agents as the chat reads them; every method may raise `ChatInputError` (bad
    input, shown to the user) or `ChatUnavailable` (a dependency down, noted in the answer)."""

    def resolve_log(self, raw: str) -> Path: ...

    def diagnose(self, log: Path, job_id: str) -> DiagnosisFacts: ...

    def similar(self, line: str, k: int) -> list[SimilarCase]: ...

    def metrics(self, log: Path) -> MetricsFacts: ...

    def job(self, job_id: str) -> JobFacts | None: ...


def read_window(path: Path, center: int, radius: int = DEFAULT_RADIUS) -> list[LogLine]:
    """Lines `center - radius .. center + radius` (1-based, clipped to the file), streamed: a
    multi-gigabyte log costs one pass, never its size in memory."""
    radius = max(0, min(radius, MAX_WINDOW // 2))
    first = max(1, center - radius)
    with path.open("rb") as fh:
        chunk = list(islice(fh, first - 1, center + radius))
    return [LogLine(number=first + i, text=clean_text(raw)) for i, raw in enumerate(chunk)]


def quote_block(lines: list[LogLine]) -> str:
    """Log lines for a prompt: numbered, inside a block the model is told is data, never orders
    (a line that tries to close the block early is defused)."""
    body = "\n".join(f"{ln.number}: {ln.text.replace('</untrusted_log', '<_untrusted_log')}" for ln in lines)
    return f"<untrusted_log>\n{body}\n</untrusted_log>"


@dataclass
class Evidence:
    """What the tools found during one turn (the answer is built from it alone)."""

    log: str | None = None
    job_id: str | None = None
    root_line: int | None = None  # known from an earlier turn
    diagnosis: DiagnosisFacts | None = None
    window: list[LogLine] = field(default_factory=list)
    similar: list[SimilarCase] | None = None
    metrics: MetricsFacts | None = None
    job: JobFacts | None = None
    notes: list[str] = field(default_factory=list)
    tools_run: list[str] = field(default_factory=list)
    citations: dict[int, Citation] = field(default_factory=dict)

    def cite(self, lines: list[LogLine], role: str = "context", focus: int | None = None) -> None:
        for ln in lines:
            kind = "root-cause" if ln.number == focus else role
            if ln.number not in self.citations or kind == "root-cause":
                self.citations[ln.number] = Citation(number=ln.number, text=ln.text, role=kind)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


class _WindowArgs(BaseModel):
    line: int | None = Field(None, ge=1, description="1-based line to centre on (default: the root-cause line)")
    radius: int = Field(DEFAULT_RADIUS, ge=0, le=MAX_WINDOW // 2, description="lines either side")


class _NoArgs(BaseModel):
    pass


class _JobArgs(BaseModel):
    job_id: str | None = Field(None, description="job id (default: the job this conversation is about)")


class ChatTools:
    """The tools over one backend for one turn; `evidence` holds what they found."""

    def __init__(self, backend: ChatBackend, *, log: str | None, job_id: str | None, root_line: int | None = None) -> None:
        self.backend = backend
        self.evidence = Evidence(log=log, job_id=job_id, root_line=root_line)

    # -- context ------------------------------------------------------------------------------

    def _log_path(self) -> Path | None:
        ev = self.evidence
        if ev.log is None and ev.job_id is not None:
            job = self.job_info()
            if job is not None and job.log:
                ev.log = job.log
        if ev.log is None:
            ev.note("no log to read: give a log file (--log) or a job whose history names its log (--job)")
            return None
        return self.backend.resolve_log(ev.log)

    @property
    def root_line(self) -> int | None:
        d = self.evidence.diagnosis
        return d.line if d is not None and d.line is not None else self.evidence.root_line

    # -- tools --------------------------------------------------------------------------------

    def diagnose(self) -> DiagnosisFacts | None:
        """Run the failure locator and classifier (with similar failures and the dry-run plan)."""
        ev = self.evidence
        if ev.diagnosis is not None:
            return ev.diagnosis
        path = self._log_path()
        if path is None:
            return None
        self._ran("diagnose")
        try:
            ev.diagnosis = self.backend.diagnose(path, ev.job_id or "adhoc")
        except ChatUnavailable as exc:
            ev.note(f"the failure handler is unavailable: {exc}")
            return None
        for text in [*ev.diagnosis.fallbacks, *ev.diagnosis.notes]:
            ev.note(text)
        if ev.diagnosis.line is not None:
            self.window(ev.diagnosis.line, DEFAULT_RADIUS, role="context")
        rem = ev.diagnosis.remediation
        for number in rem.lines if rem is not None else []:  # the lines the remediation's values were read from
            if number >= 1 and number not in ev.citations:
                try:
                    ev.cite(read_window(path, number, 0), "value")
                except OSError:
                    break
        return ev.diagnosis

    def window(self, line: int | None = None, radius: int = DEFAULT_RADIUS, role: str = "context") -> list[LogLine]:
        """Read the log around `line` (default: the root-cause line)."""
        path = self._log_path()
        if path is None:
            return []
        self._ran("log_window")
        center = line or self.root_line
        if center is None:
            d = self.diagnose()
            center = d.line if d is not None else None
        if center is None:
            self.evidence.note("no line to centre the window on: no failure line was found")
            return []
        try:
            lines = read_window(path, center, radius)
        except OSError as exc:
            raise ChatInputError(f"cannot read the log: {exc}") from None
        if not lines:
            self.evidence.note(f"line {center} is past the end of the log")
        self.evidence.window = lines
        self.evidence.cite(lines, role, focus=self.root_line)
        return lines

    def similar(self) -> list[SimilarCase] | None:
        """Past failures whose root-cause line looks like this one, and how they ended."""
        ev = self.evidence
        if ev.similar is not None:
            return ev.similar
        d = self.diagnose()
        if d is None or not d.root_cause:
            ev.note("no root-cause line to compare with past failures")
            return None
        self._ran("similar_failures")
        if d.similar:
            ev.similar = [SimilarCase.of(s) for s in d.similar]
            return ev.similar
        try:
            ev.similar = self.backend.similar(d.root_cause, 3)
        except ChatUnavailable as exc:
            ev.note(f"failure history unavailable: {exc}")
            return None
        return ev.similar

    def metrics(self) -> MetricsFacts | None:
        """Step time, loss and throughput read from the log (the Metric Tracker)."""
        ev = self.evidence
        path = self._log_path()
        if path is None:
            return None
        self._ran("job_metrics")
        try:
            ev.metrics = self.backend.metrics(path)
        except ChatUnavailable as exc:
            ev.note(f"the metric tracker is unavailable: {exc}")
            return None
        for metric in (ev.metrics.step_time, ev.metrics.loss, ev.metrics.throughput):
            if metric is not None and metric.lines:
                last = metric.lines[-1]
                self.evidence.cite(read_window(path, last, 0), "metric")
        return ev.metrics

    def job_info(self, job_id: str | None = None) -> JobFacts | None:
        """The job's record in the history (outcome, metrics) and the advisor's estimate for it."""
        ev = self.evidence
        job_id = job_id or ev.job_id
        if job_id is None:
            ev.note("no job id: the history and the advisor's estimate need one (--job)")
            return None
        if ev.job is not None and ev.job.job_id == job_id:
            return ev.job
        self._ran("job_info")
        try:
            job = self.backend.job(job_id)
        except ChatUnavailable as exc:
            ev.note(f"job history unavailable: {exc}")
            return None
        if job is None:
            ev.note(f"job {job_id} is not in the history")
            return None
        ev.job = job
        return job

    def plan(self) -> DiagnosisFacts | None:
        """Propose (never execute) the allow-listed recovery plan of the diagnosed failure."""
        d = self.diagnose()
        if d is not None:
            self._ran("recovery_plan")
        return d

    def _ran(self, name: str) -> None:
        if name not in self.evidence.tools_run:
            self.evidence.tools_run.append(name)

    # -- for a tool-calling model ---------------------------------------------------------------

    def langchain_tools(self) -> list[StructuredTool]:
        """The tools as a model calls them; each answers JSON facts, log lines quoted as data."""

        def wrap(fn: Callable[..., Any], name: str, description: str, schema: type[BaseModel]) -> StructuredTool:
            def run(**kwargs: Any) -> str:
                try:
                    return fn(**kwargs)
                except (ChatInputError, ChatUnavailable) as exc:
                    return json.dumps({"error": str(exc)})

            return StructuredTool.from_function(run, name=name, description=description, args_schema=schema)

        return [
            wrap(self._t_diagnose, "diagnose_failure", "Locate the failure's root-cause line in the log and classify "
                 "it (category, reason, component); also returns the dry-run recovery plan.", _NoArgs),
            wrap(self._t_window, "read_log_window", "Read numbered log lines around a line.", _WindowArgs),
            wrap(self._t_similar, "similar_failures", "Past failures with a similar root-cause line and how they "
                 "ended.", _NoArgs),
            wrap(self._t_metrics, "job_metrics", "Step time, loss and throughput read from the log.", _NoArgs),
            wrap(self._t_job, "job_info", "The job's history record and the advisor's duration estimate.", _JobArgs),
            wrap(self._t_plan, "propose_recovery", "The allow-listed recovery plan (proposed only, never run).",
                 _NoArgs),
        ]

    def _t_diagnose(self) -> str:
        d = self.diagnose()
        if d is None:
            return json.dumps({"error": "; ".join(self.evidence.notes) or "no diagnosis"})
        facts = d.model_dump(mode="json", include=_PROMPT_FACTS)
        return json.dumps(facts) + "\n" + quote_block(self.evidence.window)

    def _t_window(self, line: int | None = None, radius: int = DEFAULT_RADIUS) -> str:
        return quote_block(self.window(line, radius))

    def _t_similar(self) -> str:
        found = self.similar()
        return json.dumps([s.model_dump() for s in found] if found is not None else {"error": "; ".join(self.evidence.notes)})

    def _t_metrics(self) -> str:
        m = self.metrics()
        return m.model_dump_json(include=_PROMPT_METRICS) if m is not None else json.dumps({"error": "; ".join(self.evidence.notes)})

    def _t_job(self, job_id: str | None = None) -> str:
        j = self.job_info(job_id)
        return j.model_dump_json() if j is not None else json.dumps({"error": "; ".join(self.evidence.notes)})

    def _t_plan(self) -> str:
        d = self.plan()
        if d is None:
            return json.dumps({"error": "; ".join(self.evidence.notes) or "no diagnosis"})
        return json.dumps({"proposed_steps": d.plan_steps, "notes": d.plan_notes, "executed": False})

