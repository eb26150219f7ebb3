"""One error root (issue 25, item 2): the hierarchy, the CLI's one handler, the service's one table."""

from __future__ import annotations

import pytest
import typer
from fastapi import FastAPI
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from schedmate.errors import (
    HTTP_ANSWERS,
    BadInput,
    DependencyUnavailable,
    InvalidValue,
    NotFound,
    Overloaded,
    Refused,
    SchedMateError,
    TimedOut,
    Unsupported,
    http_answer,
)

# ------------------------------------------------------------------ the hierarchy


def _named_errors() -> dict[str, tuple[type, type]]:
    """Every error type the issue names (and a few more), with the kind it must now be."""
    from schedmate.agents.advisor.tools import SandboxError
    from schedmate.agents.chat.facts import ChatInputError, ChatUnavailable
    from schedmate.agents.failure.similar import UnknownFailure
    from schedmate.cli_checks import CliInputError
    from schedmate.cli_jobs import UserError
    from schedmate.deploy.ray.executor import UnsupportedDecision
    from schedmate.deploy.service.client import ServiceError
    from schedmate.deploy.service.config import PathRefused, ServiceConfigError
    from schedmate.deploy.service.core import DependencyDown, InputError
    from schedmate.deploy.service.limits import CallTimeout, QueueFull
    from schedmate.deploy.slurm.hook import ServiceCallError
    from schedmate.deploy.slurm.localcluster import SlurmStartError
    from schedmate.deploy.slurm.slurmjob import ScontrolError
    from schedmate.devset import DevSetError
    from schedmate.embeddings.redis_server import RedisServerError
    from schedmate.embeddings.store import StoreError, StoreUnavailable
    from schedmate.evals.harness.common import CorpusError
    from schedmate.history_ingest import RowError
    from schedmate.llm_errors import LLMError, LLMOutputError, LLMRequestError, LLMUnavailable
    from schedmate.llm_local import LocalLLMError
    from schedmate.schedulers.registry import UnknownPolicy
    from schedmate.schedulers.traces import TraceFormatError
    from schedmate.telemetry import TelemetryConfigError

    return {
        "UserError": (UserError, BadInput), "CliInputError": (CliInputError, BadInput),
        "ChatInputError": (ChatInputError, BadInput), "InputError": (InputError, BadInput),
        "ServiceConfigError": (ServiceConfigError, BadInput), "TelemetryConfigError": (TelemetryConfigError, BadInput),
        "DevSetError": (DevSetError, BadInput), "CorpusError": (CorpusError, BadInput), "RowError": (RowError, BadInput),
        "SandboxError": (SandboxError, BadInput), "TraceFormatError": (TraceFormatError, BadInput),
        "UnknownPolicy": (UnknownPolicy, BadInput), "PathRefused": (PathRefused, Refused),
        "UnknownFailure": (UnknownFailure, NotFound),
        "StoreError": (StoreError, DependencyUnavailable), "StoreUnavailable": (StoreUnavailable, DependencyUnavailable),
        "RedisServerError": (RedisServerError, DependencyUnavailable),
        "LLMError": (LLMError, SchedMateError), "LLMUnavailable": (LLMUnavailable, DependencyUnavailable),
        "LLMRequestError": (LLMRequestError, LLMError), "LLMOutputError": (LLMOutputError, LLMError),
        "LocalLLMError": (LocalLLMError, DependencyUnavailable),
        "ServiceError": (ServiceError, DependencyUnavailable), "ServiceCallError": (ServiceCallError, DependencyUnavailable),
        "ScontrolError": (ScontrolError, DependencyUnavailable), "SlurmStartError": (SlurmStartError, DependencyUnavailable),
        "DependencyDown": (DependencyDown, DependencyUnavailable), "ChatUnavailable": (ChatUnavailable, DependencyUnavailable),
        "QueueFull": (QueueFull, Overloaded), "CallTimeout": (CallTimeout, TimedOut),
        "UnsupportedDecision": (UnsupportedDecision, Unsupported),
    }  # fmt: skip


def test_every_named_error_type_is_still_importable_and_under_the_one_root() -> None:
    for name, (cls, kind) in _named_errors().items():
        assert issubclass(cls, kind) and issubclass(cls, SchedMateError), name


def test_the_four_user_error_types_are_one() -> None:
    named = _named_errors()
    assert named["UserError"][0] is named["CliInputError"][0] is named["InputError"][0] is BadInput
    assert issubclass(named["ChatInputError"][0], BadInput)  # the chat keeps its own name for its own catch


def test_bad_input_is_still_a_value_error_so_old_catchers_keep_working() -> None:
    assert issubclass(BadInput, ValueError) and issubclass(NotFound, LookupError)
    assert issubclass(DependencyUnavailable, RuntimeError) and issubclass(Unsupported, NotImplementedError)
    assert not issubclass(ValueError, SchedMateError)  # an internal ValueError is not a user error


def test_message_and_hint_are_one_line() -> None:
    exc = BadInput("--load must be\npositive", hint="e.g. --load 1.2")
    assert str(exc) == "--load must be\npositive" and exc.one_line() == "--load must be positive (e.g. --load 1.2)"
    assert DependencyUnavailable().one_line() == "DependencyUnavailable"


def test_errors_survive_pickling_as_themselves() -> None:  # Ray carries them back from actors
    import pickle

    back = pickle.loads(pickle.dumps(NotFound("log not found: /x")))
    assert type(back) is NotFound and str(back) == "log not found: /x" and back.http_status == 404


# ------------------------------------------------------------------ the HTTP table


@pytest.mark.parametrize(("kind", "status"), [
    (BadInput, 400), (Refused, 403), (NotFound, 404), (InvalidValue, 422), (Overloaded, 429), (Unsupported, 501),
    (DependencyUnavailable, 503), (TimedOut, 504), (SchedMateError, 500),
])  # fmt: skip
def test_each_kind_has_its_status(kind: type[SchedMateError], status: int) -> None:
    assert http_answer(kind("x")).status == status == kind("x").http_status


def test_a_subclass_without_an_entry_takes_its_nearest_kinds_answer() -> None:
    from schedmate.deploy.service.core import DependencyDown
    from schedmate.deploy.service.limits import QueueFull
    from schedmate.llm_errors import LLMOutputError, LLMUnavailable

    assert DependencyDown("redis", "down").http_status == 503 and LLMUnavailable("no model").http_status == 503
    assert QueueFull("busy").http_status == 429 and http_answer(QueueFull("busy")).retry_after_s == 1.0
    assert LLMOutputError("bad", raw="", errors=[], attempts=1).http_status == 500  # the model's fault, not the user's
    assert set(HTTP_ANSWERS) <= {BadInput, Refused, NotFound, InvalidValue, Overloaded, Unsupported,
                                 DependencyUnavailable, TimedOut, SchedMateError}


def test_the_service_answers_every_kind_through_the_table() -> None:
    from schedmate.deploy.service.http_errors import internal_error, response_for

    app = FastAPI()
    kinds = {"bad": BadInput("no"), "refused": Refused("outside"), "missing": NotFound("gone"),
             "busy": Overloaded("full"), "nope": Unsupported("not here"), "down": DependencyUnavailable("redis down"),
             "slow": TimedOut("late")}

    @app.get("/{what}")
    def answer(what: str) -> object:
        if what == "bug":
            return internal_error(KeyError("secret detail"))
        return response_for(kinds[what])

    client = TestClient(app)
    for what, exc in kinds.items():
        r = client.get(f"/{what}")
        assert r.status_code == exc.http_status and r.json()["reason"] == str(exc), what
        assert r.json()["fallback"] == "scheduler-default"
    assert client.get("/busy").headers["retry-after"] == "1" and client.get("/down").headers["retry-after"] == "5"
    bug = client.get("/bug")
    assert bug.status_code == 500 and "KeyError" in bug.json()["reason"] and "secret" not in bug.json()["reason"]


# ------------------------------------------------------------------ the CLI handler


def _app_raising(exc: BaseException) -> typer.Typer:
    from schedmate.cli import SchedMateGroup

    app = typer.Typer(cls=SchedMateGroup)

    @app.command()
    def boom() -> None:
        raise exc

    @app.command()
    def fine() -> None:
        typer.echo("ok")

    return app


@pytest.mark.parametrize("exc", [BadInput("--jobs must be positive"), NotFound("trace.csv: no such file"),
                                 DependencyUnavailable("cannot reach Redis", hint="schedmate redis start"),
                                 Unsupported("no such format")])
def test_any_schedmate_error_is_one_line_on_stderr_and_exit_2(exc: SchedMateError) -> None:
    r = CliRunner().invoke(_app_raising(exc), ["boom"])
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [f"error: {exc.one_line()}"]


def test_an_internal_value_error_is_a_bug_not_a_user_error() -> None:
    r = CliRunner().invoke(_app_raising(ValueError("internal invariant broken")), ["boom"])
    assert r.exit_code == 1 and isinstance(r.exception, ValueError) and "error:" not in r.stderr


def test_the_real_cli_answers_bad_numbers_and_files_with_one_line(tmp_path) -> None:
    from schedmate.cli import app

    runner = CliRunner()
    for args, words in (
        (["simulate", "--load", "-1", "--out", str(tmp_path / "o")], "--load must be a positive number"),
        (["simulate", "--cluster", "8x0", "--out", str(tmp_path / "o")], "has no GPUs"),
        (["simulate", "--trace", str(tmp_path / "missing.csv"), "--out", str(tmp_path / "o")], "missing.csv"),
        (["trace-info", str(tmp_path), "--format", "nope"], "unknown trace format"),
        (["corpus", "generate", "--out", str(tmp_path / "c"), "--seed", "-1"], "--seed must be between 0"),
        (["experiment", "ares", "--first-seed", "-1", "--out", str(tmp_path / "a")], "--first-seed must be"),
    ):
        r = runner.invoke(app, args)
        lines = r.stderr.strip().splitlines()
        assert r.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], (args, r.stderr)


def test_the_real_cli_lets_an_internal_value_error_through(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """A ValueError from inside the simulation (not from the user's input) used to print as a user
    error; it now keeps its traceback and exit status 1."""
    import schedmate.schedulers.compare as compare
    from schedmate.cli import app

    def broken(*_a: object, **_k: object) -> None:
        raise ValueError("an engine invariant, not the user's input")

    monkeypatch.setattr(compare, "compare_policies", broken)
    r = CliRunner().invoke(app, ["simulate", "--jobs", "5", "--out", str(tmp_path / "o")])
    assert r.exit_code == 1 and isinstance(r.exception, ValueError) and "error:" not in r.stderr
