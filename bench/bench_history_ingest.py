"""`schedmate history ingest` on a large generated history: peak RSS, time, progress (issue 27).

    python bench/bench_history_ingest.py --mb 1000 --out results/history_ingest   # 1 GB, minutes

Generates a JSONL history of `--mb` MB under --tmp (deleted afterwards; never committed): rows
of ~4 kB (a fingerprint drawn from 300 recurring experiments, an outcome, and the submission
fields a real export carries: user, submit line, environment), every 200th a failed run, every 1000th a duplicate job id and every
5000th a line of invalid UTF-8. It starts a throw-away redis-server, runs the CLI a user runs
(`schedmate history ingest FILE --redis-url URL --json`) as a child and reads the child's own
peak RSS (`VmHWM`, bench/childproc.py). The baseline in the same run is a `--small-mb` file through the same
command: flat memory means the two peaks are close. Prints one summary line; JSON to --out.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

from childproc import run_child  # bench/childproc.py: the shared child runner (run as `python bench/X.py`)

MODELS = ("gpt-2", "llama-2-7b", "resnet-50", "bert-base", "vit-b-16", "t5-base", "mistral-7b", "yolov8n")
DATASETS = ("openwebtext", "imagenet-1k", "c4", "coco", "wikitext-103", "alpaca")


def write_history(path: Path, mb: float, seed: int = 27, n_experiments: int = 300) -> dict[str, int]:
    """About `mb` MB of JSONL; returns what it planted (rows, failed, duplicates, bad lines)."""
    rng = random.Random(seed)
    target = int(mb * 1_000_000)
    planted = {"rows": 0, "failed": 0, "duplicates": 0, "bad_utf8": 0}
    env_pad = "x" * 3000
    # recurring jobs: a few hundred experiments, each rerun many times (as in cluster traces)
    experiments = [(rng.choice(MODELS), rng.choice(DATASETS), rng.choice((1000, 5000, 20000)),
                    rng.choice((8, 16, 32)), rng.choice((1, 2, 4, 8))) for _ in range(n_experiments)]
    with open(path, "wb") as fh:
        i = 0
        while fh.tell() < target:
            i += 1
            planted["rows"] += 1
            if i % 5000 == 0:
                fh.write(b'{"job_id": "bad-' + str(i).encode() + b'", "user": "caf\xe9"}\n')
                planted["bad_utf8"] += 1
                continue
            job_id = f"j{i - 1}" if i % 1000 == 0 else f"j{i}"
            planted["duplicates"] += i % 1000 == 0
            failed = i % 200 == 0
            planted["failed"] += failed
            m, dataset, iters, batch, gpus = experiments[rng.randrange(len(experiments))]
            row = {"job_id": job_id, "gpus": gpus, "user": f"user{rng.randrange(300)}",
                   "metadata": {"model_name": m, "task_type": "causal-lm", "dataset": dataset,
                                "iterations": iters, "iteration_type": "steps", "batch_size": batch},
                   "outcome": {"duration": 0.0 if failed else rng.uniform(600, 86400),
                               "final_status": "failed" if failed else "completed",
                               "sm_util": rng.uniform(20, 95)},
                   "submit_line": f"sbatch --gres=gpu:8 train_{m}.sh --seed {i}",
                   "env": {"CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7", "PAD": env_pad[: rng.randrange(2000, 3000)]}}
            fh.write(json.dumps(row).encode() + b"\n")
    return planted


def measure(argv: list[str], timeout: float) -> dict[str, object]:
    """Run the CLI as a child: its wall time, peak RSS (MB), progress lines and JSON answer."""
    run = run_child(argv, timeout, poll_s=0.5, watch="ingest ")
    stdout, stderr = run.stdout, run.stderr
    progress = [ln for ln in stderr.splitlines() if ln.startswith("ingest ")]
    try:
        answer = json.loads(stdout)
    except json.JSONDecodeError:
        answer = None
    return {"wall_s": round(run.wall_s, 1), "peak_rss_mb": run.peak_rss_mb, "hung": run.hung,
            "rc": run.rc, "progress_lines": len(progress),
            "first_progress_s": None if run.watched_s is None else round(run.watched_s, 1), "last_progress": progress[-1] if progress else None,
            "answer": {k: answer[k] for k in ("ingested", "rows", "duplicates", "errors_total", "history_jobs")}
            if answer else None, "stderr_tail": stderr[-300:] if answer is None else ""}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mb", type=float, default=1000.0)
    p.add_argument("--small-mb", type=float, default=2.0)
    p.add_argument("--tmp", type=Path, default=Path(tempfile.gettempdir()))
    p.add_argument("--out", type=Path, default=Path("results/history_ingest"))
    p.add_argument("--timeout", type=float, default=3600.0)
    args = p.parse_args(argv)
    from schedmate.embeddings import redis_server

    cli = str(Path(sys.executable).with_name("schedmate"))
    runs: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory(prefix="schedmate-ingest-", dir=args.tmp) as tmp:
        for name, mb in (("small", args.small_mb), ("large", args.mb)):
            hist = Path(tmp) / f"{name}.jsonl"
            planted = write_history(hist, mb)
            size = hist.stat().st_size
            with redis_server.running_server(Path(tmp) / f"redis-{name}") as info:
                r = measure([cli, "history", "ingest", str(hist), "--redis-url", info.url, "--json"], args.timeout)
            hist.unlink()
            runs[name] = {"mb": round(size / 1e6, 1), "planted": planted, **r}
            print(f"{name}: {size / 1e6:.0f} MB, {r['wall_s']} s, {r['peak_rss_mb']} MB RSS, answer {r['answer']}",
                  file=sys.stderr, flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "history_ingest.json").write_text(json.dumps(runs, indent=2))
    s, big = runs["small"], runs["large"]
    ans: dict[str, Any] = big["answer"] if isinstance(big["answer"], dict) else {}
    print(f"history ingest: {big['mb']} MB in {big['wall_s']} s, peak RSS {big['peak_rss_mb']} MB "
          f"(baseline {s['mb']} MB file: {s['peak_rss_mb']} MB), stored {ans.get('ingested')} of {ans.get('rows')} rows "
          f"({ans.get('duplicates')} duplicates refused, {ans.get('errors_total')} row errors), "
          f"{big['progress_lines']} progress lines (first after {big['first_progress_s']} s), rc {big['rc']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
