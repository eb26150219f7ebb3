"""Benchmark the embedded local LLM: server start time, structured-extraction latency, tokens/s.

    python bench/bench_llm.py [--runs 5] [--n-threads N]

Writes bench/results/llm.json and prints one summary line. Token counts come from the server's
usage report (via the GenAI spans), so they are the tokens the model actually produced.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from schedmate.llm import LLMConfig, local_server, make_chat_model
from schedmate.llm_errors import LLMOutputError
from schedmate.structured import extract
from schedmate.tracing import memory_tracing

RESULTS = Path(__file__).resolve().parent / "results" / "llm.json"
LOG = (
    " iteration      100/    1000 | consumed samples:        51200 | elapsed time per iteration (ms): 512.5 |"
    " learning rate: 1.500E-04 | global batch size:   512 | lm loss: 2.310E+00 | loss scale: 1.0 |"
)


class StepStats(BaseModel):
    step_time_ms: float = Field(gt=0)
    loss: float


EXPECTED = StepStats(step_time_ms=512.5, loss=2.31)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--n-threads", type=int, default=None)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    provider, exporter = memory_tracing()
    tracer = provider.get_tracer("bench")
    config = LLMConfig(max_tokens=96, timeout_s=120, n_threads=args.n_threads)
    t0 = time.perf_counter()
    server = local_server(config)  # resolves (assembles once) the packaged GGUF
    resolve_s = time.perf_counter() - t0
    with server:
        model = make_chat_model(config, tracer=tracer, server=server)
        messages = [SystemMessage("Extract the iteration time in ms and the lm loss."), HumanMessage(LOG)]
        _run(model, messages, tracer)  # warm-up (first call pays prompt-cache fill)
        exporter.clear()
        latencies, valid, correct = [], 0, 0
        for _ in range(args.runs):
            t = time.perf_counter()
            out = _run(model, messages, tracer)
            latencies.append(time.perf_counter() - t)
            valid += out is not None
            correct += out == EXPECTED
        chats = [s for s in exporter.get_finished_spans() if s.name.startswith("chat ")]
        out_tokens = sum(int(s.attributes.get("gen_ai.usage.output_tokens", 0)) for s in chats)
        in_tokens = sum(int(s.attributes.get("gen_ai.usage.input_tokens", 0)) for s in chats)
        chat_s = sum((s.end_time - s.start_time) / 1e9 for s in chats)
        # plain generation throughput (decode-dominated)
        gen = make_chat_model(config.model_copy(update={"max_tokens": 128}), tracer=tracer, server=server)
        exporter.clear()
        t = time.perf_counter()
        gen.invoke("Write a short paragraph about GPU cluster scheduling.")
        gen_s = time.perf_counter() - t
        gen_tokens = int(exporter.get_finished_spans()[0].attributes.get("gen_ai.usage.output_tokens", 0))
        startup_s = server.startup_s or 0.0

    result = {
        "model": server.model_alias,
        "runs": args.runs,
        "n_threads": args.n_threads,
        "gguf_resolve_s": round(resolve_s, 3),
        "server_start_s": round(startup_s, 3),
        "extract_latency_p50_s": round(statistics.median(latencies), 3),
        "extract_latency_max_s": round(max(latencies), 3),
        "extract_valid": f"{valid}/{args.runs}",  # passed schema validation
        "extract_correct": f"{correct}/{args.runs}",  # equal to the true values

        "extract_input_tokens_per_call": in_tokens / max(len(chats), 1),
        "extract_output_tokens_per_call": out_tokens / max(len(chats), 1),
        "extract_output_tokens_per_s": round(out_tokens / chat_s, 1) if chat_s else None,
        "generate_output_tokens": gen_tokens,
        "generate_tokens_per_s": round(gen_tokens / gen_s, 1) if gen_s else None,
        "cpu_count": os.cpu_count(),
        "machine": platform.machine(),
        "python": sys.version.split()[0],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(
        f"llm[{result['model']}] start {startup_s:.2f}s | extract p50 {result['extract_latency_p50_s']:.2f}s "
        f"({result['extract_valid']} valid, {result['extract_correct']} correct, {result['extract_output_tokens_per_s']} out tok/s) | "
        f"generate {result['generate_tokens_per_s']} tok/s -> {args.out}"
    )


def _run(model: object, messages: list, tracer: object) -> StepStats | None:
    """One extraction with no re-ask: the validated object, or None on LLMOutputError."""
    try:
        return extract(model, StepStats, messages, retries=0, tracer=tracer)
    except LLMOutputError:
        return None


if __name__ == "__main__":
    main()
