"""Every error path is one line or one HTTP status (issue 27): a NUL byte or an impossible path is
a 400 on every route that takes a path, a data directory the OS refuses is one line naming it
(`redis start/status/stop`, `serve`), and a whitespace-only token is refused at start.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from schedmate.cli import app

runner = CliRunner()


@pytest.fixture
def client(tmp_path: Path) -> Iterator[Any]:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from schedmate.deploy.service import ServiceConfig, create_app
    from schedmate.deploy.service.core import ServiceCore

    config = ServiceConfig(allowed_roots=(tmp_path,), redis_url=None)
    with TestClient(create_app(config, ServiceCore(config), load_models=False)) as c:
        yield c


@pytest.mark.parametrize(("route", "field"), [("/v1/diagnose", "log"), ("/v1/track", "log"),
                                              ("/v1/advise", "repo"), ("/v1/failures/report", "log")])
def test_a_nul_byte_in_a_path_is_a_400_on_every_route(client: Any, tmp_path: Path, route: str, field: str) -> None:
    body = {field: f"{tmp_path}/x\x00.log", "job_id": "j1"} | ({"command": "python train.py"} if field == "repo" else {})
    r = client.post(route, json=body)
    assert r.status_code == 400 and r.json()["reason"] == f"{field} path holds a NUL byte"


def test_a_name_too_long_is_a_400_not_a_500(client: Any, tmp_path: Path) -> None:
    r = client.post("/v1/diagnose", json={"log": f"{tmp_path}/{'a' * 300}.log"})
    assert r.status_code == 400 and "invalid log path" in r.json()["reason"]


@pytest.mark.parametrize("cmd", [["redis", "start"], ["redis", "status"], ["redis", "stop"]])
def test_a_data_directory_the_os_refuses_is_one_line_naming_it(tmp_path: Path, cmd: list[str]) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("")
    res = runner.invoke(app, [*cmd, "--data-dir", str(blocker / "redis")])
    text = res.output.strip()
    assert res.exit_code == 2 and len(text.splitlines()) == 1 and "Traceback" not in text
    assert text.startswith(f"error: data directory {blocker / 'redis'}") and "not a directory" in text


def test_schedmate_home_in_the_way_is_one_line_for_status(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "home"
    blocker.write_text("")
    monkeypatch.setenv("SCHEDMATE_HOME", str(blocker))
    res = runner.invoke(app, ["redis", "status"])
    assert res.exit_code == 2 and res.output.strip() == (
        f"error: data directory {blocker}: a file is in the way (not a directory) (pass --data-dir, or set "
        "SCHEDMATE_HOME to a writable folder)")


def test_serve_with_an_unusable_home_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "home"
    blocker.write_text("")
    monkeypatch.setenv("SCHEDMATE_HOME", str(blocker))
    res = runner.invoke(app, ["serve", "--port", "1"])
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1
    assert res.output.startswith(f"error: data directory {blocker}: a file is in the way")


@pytest.mark.parametrize("token", ["", "   ", "\t\n"])
def test_a_whitespace_token_is_refused_by_the_config(token: str) -> None:
    from schedmate.deploy.service.config import ServiceConfig, ServiceConfigError

    with pytest.raises(ServiceConfigError, match="empty or whitespace"):
        ServiceConfig(token=token)


def test_serve_refuses_a_whitespace_schedmate_token_at_start(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    env = os.environ | {"SCHEDMATE_TOKEN": "   ", "SCHEDMATE_HOME": str(tmp_path)}
    cli = str(Path(sys.executable).with_name("schedmate"))
    res = subprocess.run([cli, "serve", "--no-redis", "--port", "0"], env=env, capture_output=True, text=True,
                         timeout=120)  # a server that started instead would be killed here and fail the test
    assert res.returncode == 2 and res.stderr.strip().splitlines() == [
        "error: the token (--token or SCHEDMATE_TOKEN) is empty or whitespace: no client could authenticate; "
        "set a real token or unset it"]


def test_a_token_with_surrounding_blanks_still_authenticates() -> None:
    from schedmate.deploy.service.config import ServiceConfig

    assert ServiceConfig(token=" s3cret\n").token == "s3cret"
