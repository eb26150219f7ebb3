"""What `schedmate history ingest`'s peak RSS is made of, stage by stage (issue 27: the 500 MB target).

    python bench/bench_ingest_floor.py --out results/ingest_floor

Two fresh child processes of this script:
1. `stages`: VmRSS/VmHWM (`/proc/self/status`) after each step the CLI's ingest takes, in its order:
   the CLI's own imports (`schedmate.cli`), the store and retriever, torch, transformers with the
   FlagModel class (`embeddings/flag_loader.py`), the MiniLM weights, the first forward pass, and
   batches of fingerprint texts like an export's rows (the allocator setting `ingest_files` makes is
   applied first);
2. `direct`: `ingest_files` on a generated 1 MB history (bench_history_ingest's rows) against a
   throw-away redis-server, without importing `schedmate.cli`: the ingest's own peak.
The whole-CLI peak is bench/bench_history_ingest.py's. Prints one summary line; JSON to --out.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HEAVY = ("openai", "langchain_core", "fastapi", "torch._dynamo", "torch.distributed.tensor", "sympy", "sklearn",
         "scipy")  # what the ingest does not need; reported if loaded
MODELS = ("gpt-2", "llama-2-7b", "resnet-50", "bert-base", "vit-b-16", "t5-base", "mistral-7b", "yolov8n")


def _mem() -> tuple[float, float]:
    got: dict[str, float] = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                got[key] = int(value.split()[0]) / 1024
    return round(got["VmRSS"], 1), round(got["VmHWM"], 1)


def stages() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def mark(name: str) -> None:
        rss, hwm = _mem()
        out.append({"stage": name, "rss_mb": rss, "hwm_mb": hwm, "modules": len(sys.modules)})

    mark("python")
    import schedmate.cli  # noqa: F401 -- what `schedmate` loads before any command

    mark("schedmate.cli imports")
    from schedmate.history_ingest import return_freed_memory

    return_freed_memory()
    from schedmate.agents.advisor.retriever import fingerprint_text
    from schedmate.embeddings.store import JobStore  # noqa: F401

    mark("retriever + store")
    import torch  # noqa: F401

    mark("torch")
    from schedmate.embeddings.flag_loader import flag_model_class

    flag_model_class(distributed=False)  # transformers and FlagModel as the ingest loads them (flag_loader.py)
    mark("transformers + FlagModel class")
    from schedmate.embeddings.embedder import make_embedder

    embedder = make_embedder()
    mark("MiniLM weights")
    rng = random.Random(27)

    def text(i: int) -> str:
        meta = {"model_name": rng.choice(MODELS), "task_type": "causal-lm", "dataset": "c4",
                "iterations": rng.choice((1000, 5000)), "iteration_type": "steps", "batch_size": rng.choice((8, 16, 32))}
        return fingerprint_text(meta, gpus=rng.choice((1, 2, 4, 8)), nodes=None) + f" {i}"

    embedder.embed([text(0)])
    mark("first forward pass (1 text)")
    embedder.embed([text(i) for i in range(256)])
    mark("256 texts (4 passes of 64)")
    for k in range(10):
        embedder.embed([text(1000 * (k + 1) + i) for i in range(256)])
    mark("10 x 256 texts more")
    out[-1]["heavy_modules"] = sorted(m for m in HEAVY if m in sys.modules)
    return out


def direct() -> dict[str, Any]:
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_history_ingest import write_history

    from schedmate.embeddings import redis_server
    from schedmate.embeddings.embedder import make_embedder
    from schedmate.history_ingest import ingest_files

    with tempfile.TemporaryDirectory(prefix="schedmate-floor-") as tmp:
        hist = Path(tmp) / "h.jsonl"
        write_history(hist, 1.0)
        with redis_server.running_server(Path(tmp) / "redis") as info:
            summary = ingest_files([hist], info.url, make_embedder)
    return {"stored": summary.stored, "hwm_mb": _mem()[1], "cli_imported": "schedmate.cli" in sys.modules}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--child", choices=("stages", "direct"))
    p.add_argument("--out", type=Path, default=Path("results/ingest_floor"))
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(stages() if args.child == "stages" else direct()))
        return 0
    runs = {}
    for child in ("stages", "direct"):
        done = subprocess.run([sys.executable, __file__, "--child", child], capture_output=True, text=True, check=True)
        runs[child] = json.loads(done.stdout.strip().splitlines()[-1])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ingest_floor.json").write_text(json.dumps(runs, indent=2))
    rows, prev = [], 0.0
    for s in runs["stages"]:
        rows.append(f"{s['stage']} +{s['rss_mb'] - prev:.0f}")
        prev = s["rss_mb"]
    print(f"ingest floor (VmRSS MB per stage): {', '.join(rows)}; peak {runs['stages'][-1]['hwm_mb']} MB; "
          f"ingest_files without the CLI's imports: peak {runs['direct']['hwm_mb']} MB "
          f"({runs['direct']['stored']} rows stored); loaded of {', '.join(HEAVY)}: "
          f"{', '.join(runs['stages'][-1]['heavy_modules']) or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
