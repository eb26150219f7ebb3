"""`schedmate slurm doctor` / `slurm config --check`, and an epilog that is never silent (issue 27).

The doctor runs what slurmctld runs, as the user it runs it as: an interpreter SlurmUser cannot
execute is reported (the case that made the epilog fail with "Permission denied" and exit 0), a
reachable service and installed files pass. The epilog exits non-zero when its hook cannot start
or cannot authenticate, so slurmctld logs it.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schedmate.cli import app
from schedmate.deploy.slurm import hook
from schedmate.deploy.slurm.config import HookConfig, epilog_script, slurm_conf_lines, write_files
from schedmate.deploy.slurm.doctor import run_checks

runner = CliRunner()


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 -- the stdlib's name
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
        self.wfile.write(b'{"status":"ok"}')

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def service() -> Iterator[str]:
    """An HTTP endpoint answering /health like `schedmate serve` (the doctor only asks /health)."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


def _installed(tmp_path: Path, url: str, python: str = sys.executable) -> HookConfig:
    conf = tmp_path / "etc" / "slurm.conf"
    conf.parent.mkdir(parents=True)
    cfg = HookConfig(url=url, python=python, log_file=tmp_path / "hook.log", slurm_conf=conf)
    paths = write_files(cfg, conf.parent)
    conf.write_text("ClusterName=t\n" + "\n".join(slurm_conf_lines(paths["epilog"])) + "\n")
    return cfg


def test_doctor_passes_when_the_epilog_and_the_submit_call_work(tmp_path: Path, service: str) -> None:
    cfg = _installed(tmp_path, service)
    me = __import__("pwd").getpwuid(os.geteuid()).pw_name
    checks = run_checks(cfg, user=me)
    assert [c.status for c in checks if c.status != "ok"] == [], checks
    names = {c.name for c in checks}
    assert {"epilog: interpreter", "epilog: service", "epilog: log file", "submit-time call"} <= names


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to SlurmUser needs root")
def test_doctor_reports_an_interpreter_slurmuser_cannot_run(tmp_path: Path, service: str) -> None:
    private = tmp_path / "private"  # a virtualenv in a folder SlurmUser cannot enter
    private.mkdir(mode=0o700)
    (private / "python").symlink_to(sys.executable)
    cfg = _installed(tmp_path, service, python=str(private / "python"))
    res = runner.invoke(app, ["slurm", "doctor", "--url", service, "--python", str(private / "python"),
                              "--slurm-conf", str(cfg.slurm_conf), "--log-file", str(tmp_path / "hook.log"),
                              "--slurm-user", "nobody"])
    assert res.exit_code == 1
    assert f"FAIL  epilog hook: {private / 'python'} as nobody:" in res.output and "Permission denied" in res.output
    assert "epilog hook" in res.output.splitlines()[-1]  # (the 0700 test folder also hides the installed files)
    same = runner.invoke(app, ["slurm", "config", "--check", "--url", service, "--python", str(private / "python"),
                               "--slurm-conf", str(cfg.slurm_conf), "--log-file", str(tmp_path / "hook.log"),
                               "--slurm-user", "nobody"])
    assert same.exit_code == 1 and "FAIL  epilog hook" in same.output


def test_doctor_says_what_is_not_installed(tmp_path: Path, service: str) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=t\n")
    checks = {c.name: c for c in run_checks(HookConfig(url=service, slurm_conf=conf), user="root")}
    assert checks["slurm.conf"].status == "FAIL" and "JobSubmitPlugins=lua" in checks["slurm.conf"].detail
    assert checks["epilog script"].status == "FAIL" and "not installed" in checks["epilog script"].detail


def test_the_epilog_exits_non_zero_when_its_hook_cannot_start(tmp_path: Path) -> None:
    script = tmp_path / "epilog.sh"
    script.write_text(epilog_script(HookConfig(python=str(tmp_path / "no-such-python"), slurm_conf=tmp_path / "s.conf")))
    res = subprocess.run(["sh", str(script)], env=os.environ | {"SLURM_JOB_ID": "42"}, capture_output=True, text=True,
                         timeout=30)
    assert res.returncode == 127
    assert "schedmate-epilog: cannot record job 42: the hook exited 127" in res.stderr


def test_the_hook_fails_loudly_on_an_unreadable_token_file(tmp_path: Path) -> None:
    log = tmp_path / "hook.log"
    rc = hook.main(["--token-file", str(tmp_path / "missing"), "--log-file", str(log), "epilog", "--job", "7"])
    assert rc == 3
    assert "token file" in json.loads(log.read_text().splitlines()[-1])["error"]


def test_localcluster_up_runs_jobs_on_fake_gpus_and_down_stops_it(tmp_path: Path, service: str) -> None:
    from schedmate.deploy.slurm.localcluster import missing_binaries

    if missing_binaries() or os.geteuid() != 0:
        pytest.skip("needs root and slurm-wlm + munge")
    root = tmp_path / "cluster"
    root.mkdir(mode=0o755)
    tmp_path.chmod(0o755)  # munged wants the socket's folders reachable
    up = runner.invoke(app, ["slurm", "localcluster", "up", "--root", str(root), "--gpus", "2", "--url", service])
    try:
        assert up.exit_code == 0, up.output
        assert f"export SLURM_CONF={root / 'etc' / 'slurm.conf'}" in up.output
        assert "File=" in (root / "etc" / "gres.conf").read_text()
        env = os.environ | {"SLURM_CONF": str(root / "etc" / "slurm.conf")}
        info = subprocess.run(["sinfo", "-h", "-o", "%G %t"], env=env, capture_output=True, text=True, timeout=30)
        assert info.stdout.split() == ["gpu:2", "idle"]
        checks = {c.name: c.status for c in run_checks(HookConfig(url=service, slurm_conf=root / "etc" / "slurm.conf",
                                                                   log_file=root / "log" / "schedmate-hook.log"))}
        assert set(checks.values()) == {"ok"}, checks
    finally:
        down = runner.invoke(app, ["slurm", "localcluster", "down", "--root", str(root)])
    assert down.exit_code == 0 and "stopped" in down.output
