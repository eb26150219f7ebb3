"""Shared constants are defined once, in `schedmate/defaults.py` (issue 25 item 4): the service's
URL and port, the token's environment variable, the LLM request timeouts."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from schedmate import defaults
from schedmate.agents.stack import DEFAULT_LLM_TIMEOUT_S, default_llm_config
from schedmate.deploy.service.client import SchedMateClient
from schedmate.deploy.service.config import DEFAULT_PORT, TOKEN_ENV
from schedmate.deploy.slurm.hook import DEFAULT_URL

ROOT = Path(__file__).resolve().parent.parent
CORE = ("adapters", "agents", "deploy", "embeddings", "schedmate", "schedulers", "sim")


def test_every_module_reads_the_one_definition() -> None:
    assert defaults.SERVICE_URL == f"http://127.0.0.1:{DEFAULT_PORT}" == DEFAULT_URL
    assert TOKEN_ENV == defaults.TOKEN_ENV == "SCHEDMATE_TOKEN"
    assert DEFAULT_LLM_TIMEOUT_S == defaults.LLM_TIMEOUT_S == default_llm_config().timeout_s
    assert inspect.signature(SchedMateClient).parameters["base_url"].default == defaults.SERVICE_URL


def _string_literals(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [(n.lineno, n.value) for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def test_no_core_module_spells_the_service_url_or_the_token_variable_again() -> None:
    offenders = []
    for folder in CORE:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == ROOT / "schedmate" / "defaults.py":
                continue
            for line, text in _string_literals(path):
                if text in (defaults.SERVICE_URL, defaults.TOKEN_ENV):
                    offenders.append(f"{path.relative_to(ROOT)}:{line} {text!r}")
    assert offenders == []
