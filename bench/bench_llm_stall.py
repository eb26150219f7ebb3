"""A stalled LLM endpoint (accepts connections, never answers) under the library defaults.

The first diagnosis pays one request timeout (transport retries never follow a timeout); the
circuit breaker then skips the endpoint, so the next diagnoses cost what the rules cost. Baseline
in the same run: the same diagnoses with no LLM configured.

    python bench/bench_llm_stall.py [--diagnoses 3] [--timeout 30]
"""

from __future__ import annotations

import argparse
import json
import socket
import threading
import time
from dataclasses import asdict
from pathlib import Path

from schedmate.agents.failure import FailureHandler, FailureHandlerConfig
from schedmate.embeddings.classifier import LineClassifier
from schedmate.embeddings.embedder import make_embedder
from schedmate.llm import LLMConfig, make_chat_model

LOG = [f"step {i} loss 2.{i % 10}" for i in range(50)] + ["ERROR: worker exited unexpectedly during step 50"]


def stalled_endpoint() -> tuple[str, socket.socket]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    return f"http://127.0.0.1:{server.getsockname()[1]}/v1", server


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--diagnoses", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=30.0, help="LLM request timeout (library default 30 s)")
    ap.add_argument("--out", type=Path, default=Path("bench/results/llm_stall.json"))
    args = ap.parse_args()
    url, server = stalled_endpoint()
    classifier = LineClassifier(make_embedder())
    runs: dict[str, list[dict[str, object]]] = {}
    arms = {
        "no LLM (baseline)": FailureHandler(classifier, config=FailureHandlerConfig(method="learned")),
        "stalled LLM": FailureHandler(classifier, chat_model=make_chat_model(
            LLMConfig(backend="openai", model="m", base_url=url, api_key="k", timeout_s=args.timeout)),
            config=FailureHandlerConfig(method="llm")),
    }
    for arm, handler in arms.items():
        for _ in range(args.diagnoses):
            t0 = time.perf_counter()
            d = handler.diagnose_lines(LOG, {"job_id": "j"})
            runs.setdefault(arm, []).append({
                "seconds": round(time.perf_counter() - t0, 3), "category": str(d.category), "llm_status": d.llm_status,
                "llm_calls": asdict(d.llm_calls) if d.llm_calls is not None else None})
    server.close()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"timeout_s": args.timeout, "runs": runs}, indent=2))
    stall = runs["stalled LLM"]
    base = runs["no LLM (baseline)"]
    later = ", ".join(f"{r['seconds']:.2f}" for r in stall[1:])
    baseline = ", ".join(f"{r['seconds']:.2f}" for r in base)
    print(f"llm stall: first diagnosis {stall[0]['seconds']:.1f} s (timeout {args.timeout:g} s), then {later} s "
          f"({stall[-1]['llm_status']}); no-LLM baseline {baseline} s -> {args.out}")


if __name__ == "__main__":
    main()
