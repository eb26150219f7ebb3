"""A tiny OpenAI-compatible chat server for tests: canned tool calls, text, garbage, delays, errors.

Runs in a thread (`StubLLM`) or as a process (`python -m schedmate.tests.llm_stub --port N`,
used to exercise the embedded-server lifecycle without llama.cpp).
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One canned answer: tool-call `args`, or `text`, after `delay_s`, or an HTTP `status`."""

    args: str | None = None
    text: str | None = None
    delay_s: float = 0.0
    status: int = 200
    error: str = "stub error"
    finish: str | None = None


USAGE = {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}
RESPONSE_MODEL = "stub-model-2025"


def completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    """An OpenAI chat.completion for `reply`, naming the request's first tool if it has one."""
    if reply.args is not None:
        tools = body.get("tools") or [{"function": {"name": "tool"}}]
        call = {"id": "call_1", "type": "function", "function": {"name": tools[0]["function"]["name"], "arguments": reply.args}}
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": reply.text or ""}, "stop"
    finish = reply.finish or finish
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 0,
        "model": RESPONSE_MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": USAGE,
    }


class StubLLM:
    """Thread-hosted stub on 127.0.0.1; queue replies with `push`, inspect `requests` after."""

    def __init__(self, default: Reply | None = None, port: int = 0) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.default = default or Reply(text="hello")
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def push(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def next_reply(self) -> Reply:
        return self.replies.popleft() if self.replies else self.default

    def start(self) -> StubLLM:
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._server.serve_forever(poll_interval=0.05)  # shutdown() waits up to one poll

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler(stub: StubLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout tests)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": "stub-model", "object": "model"}]})
            else:
                self._send(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            stub.requests.append(body)
            reply = stub.next_reply()
            if reply.delay_s:
                time.sleep(reply.delay_s)
            if reply.status != 200:
                self._send(reply.status, {"error": {"message": reply.error, "type": "stub"}})
            else:
                self._send(200, completion(body, reply))

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--startup-delay", type=float, default=0.0)
    args = parser.parse_args()
    time.sleep(args.startup_delay)
    stub = StubLLM(port=args.port)
    print(f"stub listening on {args.port}", flush=True)
    stub.serve_forever()


if __name__ == "__main__":
    main()
