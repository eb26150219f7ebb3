"""Data flows one way: agents, adapters and deployments never read the evaluation code or a generator's
tables, so a score on a generated corpus is not the generator grading itself."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def _modules(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("folder", ["agents", "embeddings", "adapters", "sim", "deploy", "schedmate", "schedulers"])
def test_core_folders_never_import_the_evaluation_code(folder: str) -> None:
    offenders = [f"{p.relative_to(ROOT)} imports {m}" for p in _modules(folder) for m in _imports(p)
                 if m == "schedmate.evals" or m.startswith("schedmate.evals.")]
    # the CLI (cli.py and its per-area modules cli_<area>.py) is the one place allowed to start an evaluation run
    offenders = [o for o in offenders if not o.startswith(("schedmate/cli.py", "schedmate/cli_"))]
    assert offenders == []


@pytest.mark.parametrize("folder", ["agents", "embeddings", "adapters", "deploy"])
def test_agents_never_read_a_generators_tables(folder: str) -> None:
    offenders = [f"{p.relative_to(ROOT)} imports {m}" for p in _modules(folder) for m in _imports(p)
                 if m == "schedmate.synthetic" or m.startswith("schedmate.synthetic.")]
    assert offenders == []


@pytest.mark.parametrize("folder", ["agents", "embeddings", "adapters", "schedulers"])
def test_the_scheduler_side_never_imports_the_simulated_world(folder: str) -> None:
    """Adapters run on live clusters too: a world only the simulator builds is named by the adapter
    ("schedmate.sim...:fn", `PolicyAdapter.world`), never imported by it."""
    offenders = [f"{p.relative_to(ROOT)} imports {m}" for p in _modules(folder) for m in _imports(p)
                 if m == "schedmate.sim" or m.startswith("schedmate.sim.")]
    assert offenders == []


def test_the_layering_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from schedmate.synthetic.jobs.schema import MODEL_ALIASES\nimport schedmate.evals.harness\n")
    assert {"schedmate.synthetic.jobs.schema", "schedmate.evals.harness"} <= _imports(bad)
