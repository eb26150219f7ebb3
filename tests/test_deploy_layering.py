"""The service and the Slurm integration depend one way (issue 25 item 4): the service's Slurm
route (`deploy/service/slurm_route.py`) reads `deploy/slurm/`'s rule; nothing Slurm runs imports
the service, so there is no import cycle between them."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_nothing_under_deploy_slurm_imports_the_service() -> None:
    offenders = [f"{p.relative_to(ROOT)} imports {m}" for p in sorted((ROOT / "deploy" / "slurm").rglob("*.py"))
                 for m in _imports(p) if m.startswith("schedmate.deploy.service")]
    assert offenders == []


def test_the_service_still_answers_the_slurm_plugin() -> None:
    from schedmate.deploy.service.app import create_app
    from schedmate.deploy.service.config import ServiceConfig
    from schedmate.deploy.service.slurm_route import PATH

    assert PATH == "/v1/slurm/time-limit"
    assert PATH in create_app(ServiceConfig(), load_models=False).openapi()["paths"]
