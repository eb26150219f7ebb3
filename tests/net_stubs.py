"""Loopback network stand-ins for fault tests: real sockets, nothing off this machine."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def stalled_endpoint(path: str = "/v1") -> Iterator[str]:
    """A URL on loopback whose server accepts connections and never answers (a stalled LLM)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    server.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}{path}"
    finally:
        stop.set()
        thread.join(2)
        for conn in held:
            conn.close()
        server.close()
