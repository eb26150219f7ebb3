"""`schedmate chat`: ask why a job failed, in the terminal (Rich; `--ask` answers once and exits).

The chat runs over the same core as `schedmate serve` (`deploy/service/chat_route.py`), so
the terminal and the web page give the same facts. Sessions live in the embedded redis-server
(`schedmate redis start`'s, started if needed) unless `--redis-url` or `--no-redis` says otherwise,
so `--session ID` continues a conversation across runs. Models: the embedded 270M model rephrases
the tools' facts (its wording is dropped when it contradicts them); `--llm-url` lets a capable
endpoint drive the tools; `--no-llm` answers with the tools' own phrasing.
"""

from __future__ import annotations

import json
import sys
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from schedmate.defaults import CHAT_LLM_TIMEOUT_S
from schedmate.errors import BadInput, NotFound

__all__ = ["register"]

console = Console(width=None if sys.stdout.isatty() else 140, highlight=False)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 140, highlight=False)


def load_core(config: Any) -> Any:
    """A loaded `ServiceCore` for `config` (MiniLM and the learned failure classifier; tests inject
    a core with the session's models by replacing this function)."""
    from schedmate.deploy.service.core import ServiceCore

    core = ServiceCore(config)
    core.load()
    return core


def render(answer: Any) -> None:
    """The answer, then its quoted lines (numbered; the root cause marked), plan and provenance."""
    console.print()
    console.print(escape(answer.text))
    if answer.thin_evidence:
        console.print(f"[yellow]thin evidence:[/yellow] {escape(answer.thin_evidence)}")
    if answer.citations:
        table = Table(title="quoted log lines", title_justify="left", show_header=False, box=None, pad_edge=False)
        table.add_column(justify="right", style="dim")
        table.add_column(overflow="fold")
        for c in answer.citations:
            style = "bold red" if c.role == "root-cause" else ("cyan" if c.role == "metric" else "")
            table.add_row(str(c.number), escape(c.text), style=style)
        console.print(table)
    if answer.plan_steps or answer.plan_notes:
        console.print("[bold]recovery plan[/bold] (proposed, dry-run: nothing was executed)")
        for i, step in enumerate(answer.plan_steps, 1):
            console.print(f"  {i}. {escape(step)}")
        for note in answer.plan_notes:
            console.print(f"  [dim]- {escape(note)}[/dim]")
    for note in [*answer.notes, *([answer.model_note] if answer.model_note else [])]:
        console.print(f"[dim]note: {escape(note)}[/dim]")
    asked = f"question read as “{answer.intent_kind}” ({answer.intent_method}); " if answer.intent_kind else ""
    console.print(f"[dim]{asked}answered by the {answer.answered_by}; tools: {', '.join(answer.tools_run) or 'none'}; "
                  f"session {answer.session_id}{'' if answer.persisted else ' (not saved)'}[/dim]")


def _listener(live: bool) -> Any:
    """Progress as it happens: each tool when it finishes, the model's tokens as they arrive."""
    state = {"tokens": False}

    def listen(kind: str, text: str) -> None:
        if not live:
            return
        if kind == "tool":
            err.print(f"[dim]· {escape(text)}[/dim]")
        elif kind == "token":
            if not state["tokens"]:
                err.print("[dim]model:[/dim] ", end="")
                state["tokens"] = True
            err.print(escape(text), end="", style="dim")
        elif kind == "status":
            if state["tokens"]:
                err.print()
                state["tokens"] = False
            err.print(f"[dim]{escape(text)}[/dim]")

    return listen


def score_intents(embed: Any) -> dict[str, Any]:
    """The intent classifier on its held-out questions and leave-one-out on its examples, beside the
    keyword rules on the same questions (`agents/chat/data/intents*.jsonl`)."""
    from schedmate.agents.chat.intent import keyword_intent
    from schedmate.agents.chat.intent_model import IntentClassifier, load_heldout

    clf = IntentClassifier(embed)
    held = load_heldout()
    routed = [clf.route(q).intent == i for i, q in held]
    rules = [keyword_intent(q) == i for i, q in held]
    loo = clf.leave_one_out()
    rules_loo = sum(keyword_intent(q) == i for i, q in clf.examples) / len(clf.examples)
    return {"examples": len(clf.examples), "heldout": len(held),
            "classifier_heldout_accuracy": round(sum(routed) / len(held), 4),
            "keywords_heldout_accuracy": round(sum(rules) / len(held), 4),
            "classifier_leave_one_out_accuracy": round(loo, 4), "keywords_examples_accuracy": round(rules_loo, 4)}


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add this area's commands to the `schedmate` app (top level) or to `schedmate eval`."""

    @eval_app.command("chat-intents")
    def eval_chat_intents(
        as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    ) -> None:
        """The chat's intent classifier (MiniLM nearest-centroid) vs the keyword rules: accuracy on held-out
        questions and leave-one-out on the examples."""
        from schedmate.cli_jobs import load_embedder

        out = score_intents(load_embedder().embed)
        if as_json:
            console.print_json(json.dumps(out))
            return
        console.print(f"chat intents: classifier {out['classifier_heldout_accuracy']:.1%} on {out['heldout']} held-out "
                      f"questions (leave-one-out on {out['examples']} examples {out['classifier_leave_one_out_accuracy']:.1%}); "
                      f"keyword rules {out['keywords_heldout_accuracy']:.1%} held-out, {out['keywords_examples_accuracy']:.1%} "
                      "on the examples")

    @app.command("chat")
    def chat(
        log: Annotated[Path | None, typer.Option("--log", help="The failed job's log file.")] = None,
        job: Annotated[str | None, typer.Option("--job", help="A job id in the history (its log is read from it).")] = None,
        ask: Annotated[str | None, typer.Option("--ask", help='Answer this question and exit, e.g. "why did it fail?".')] = None,
        session: Annotated[str | None, typer.Option("--session", help="Continue this conversation (default: a new one).")] = None,
        no_llm: Annotated[bool, typer.Option("--no-llm", help="No model: the tools' own phrasing only.")] = False,
        llm_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint (…/v1) whose model drives the tools.")] = None,
        llm_model: Annotated[str | None, typer.Option(help="Model name at --llm-url.")] = None,
        redis_url: Annotated[str | None, typer.Option(help="Redis for sessions and history (default: the embedded one).")] = None,
        no_redis: Annotated[bool, typer.Option("--no-redis", help="No Redis: this run's memory only, no history.")] = False,
        as_json: Annotated[bool, typer.Option("--json", help="Print each answer as one JSON object.")] = False,
    ) -> None:
        """Chat about a failed job: root-cause line quoted with its number, similar past failures, metrics,
        the advisor's estimate, and a proposed (never executed) recovery plan."""
        from schedmate.agents.chat import ChatInputError

        if log is not None and job is not None:
            raise BadInput("give --log or --job, not both")
        if log is None and job is None and session is None:
            raise BadInput("give --log FILE or --job ID (or --session ID to continue a conversation)")
        if log is not None and not log.is_file():
            raise NotFound(f"log not found or not a regular file: {log}")
        if redis_url and no_redis:
            raise BadInput("give --redis-url or --no-redis, not both")
        session_id = session or f"cli-{uuid.uuid4().hex[:12]}"
        with ExitStack() as stack:  # a ChatInputError (a BadInput) ends the command: one line, exit 2
            agent = _build_agent(stack, redis_url, no_redis, no_llm, llm_url, llm_model, quiet=as_json)
            log_arg = str(log.resolve()) if log is not None else None
            if ask is not None:
                _turn(agent, session_id, ask, log_arg, job, as_json)
                return
            first = True
            while (question := _prompt(first)) is not None:
                try:
                    _turn(agent, session_id, question, log_arg if first else None, job if first else None, as_json)
                    first = False
                except ChatInputError as exc:
                    err.print(f"[red]error:[/red] {escape(str(exc))}")


def _turn(agent: Any, session_id: str, question: str, log: str | None, job: str | None, as_json: bool) -> None:
    answer = agent.ask(session_id, question, log=log, job_id=job, listen=_listener(not as_json))
    if as_json:
        print(json.dumps(answer.model_dump(mode="json")))
    else:
        render(answer)


def _prompt(first: bool) -> str | None:
    if first:
        err.print("[dim]Ask about the job (empty line or Ctrl-D ends).[/dim]")
    try:
        text = console.input("[bold blue]you>[/bold blue] ").strip()
    except (EOFError, KeyboardInterrupt):
        return None
    return text or None


def _build_agent(stack: ExitStack, redis_url: str | None, no_redis: bool, no_llm: bool, llm_url: str | None,
                 llm_model: str | None, *, quiet: bool) -> Any:
    from schedmate.deploy.service.chat_route import make_agent
    from schedmate.deploy.service.config import ServiceConfig

    if redis_url is None and not no_redis:
        from schedmate.embeddings import redis_server

        redis_url = redis_server.start(redis_server.default_data_dir()).url
    config = ServiceConfig(allowed_roots=(Path("/"),), redis_url=None if no_redis else redis_url)
    model, mode = None, "tools"
    if not no_llm:
        from schedmate.llm import LLMConfig, open_chat_model

        if llm_url:
            llm = LLMConfig(backend="openai", base_url=llm_url, model=llm_model or "default", max_retries=0,
                            max_tokens=512)
            mode = "drive"
        else:
            llm = LLMConfig(max_tokens=120, timeout_s=CHAT_LLM_TIMEOUT_S)  # a busy 2-core CPU: tens of seconds
            mode = "phrase"
        try:
            model = stack.enter_context(open_chat_model(llm))
        except Exception as exc:  # noqa: BLE001 -- no model is a fallback, not an error
            err.print(f"[yellow]no model ({type(exc).__name__}: {escape(str(exc))[:160]}): the tools answer alone[/yellow]")
            model, mode = None, "tools"
    if not quiet:
        err.print("[dim]loading models…[/dim]")
    core = load_core(config)
    stack.callback(core.close)
    return make_agent(core, config, chat_model=model, mode=mode)
