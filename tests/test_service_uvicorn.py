"""`schedmate serve` for real: uvicorn in a subprocess on a free loopback port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

pytest.importorskip("uvicorn")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_answers_health_and_guards_v1_with_its_token(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "train.log"
    log.write_text("hello\n")
    env = {**os.environ, "SCHEDMATE_TOKEN": "t0ken"}
    proc = subprocess.Popen([sys.executable, "-m", "schedmate.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
                             "--no-redis", "--allow", str(tmp_path)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline, health = time.time() + 90, None
        while time.time() < deadline and proc.poll() is None:
            try:
                health = httpx.get(f"{base}/health", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.3)
        assert health is not None, f"server did not come up: {proc.stdout.read() if proc.poll() is not None else ''}"
        assert health.status_code == 200 and health.json() == {"status": "ok"}
        assert httpx.post(f"{base}/v1/track", json={"log": str(log)}, timeout=10).status_code == 401
        assert "/v1/diagnose" in httpx.get(f"{base}/openapi.json", timeout=10).json()["paths"]
        ready = httpx.get(f"{base}/ready", timeout=10).json()
        assert ready["redis"] == "not configured" and ready["models"] in ("loading", "ok")
    finally:
        proc.terminate()
        proc.wait(30)  # graceful shutdown within the timeout ...
    assert proc.returncode in (0, -signal.SIGTERM)  # ... uvicorn re-raises the signal it handled


def test_serve_refuses_a_public_bind_without_a_token() -> None:
    env = {k: v for k, v in os.environ.items() if k != "SCHEDMATE_TOKEN"}
    done = subprocess.run([sys.executable, "-m", "schedmate.cli", "serve", "--host", "0.0.0.0", "--no-redis"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "needs a token" in done.stderr
