"""`schedmate history ingest` on a large generated history: peak RSS, time, progress (issue 27).

    python bench/bench_history_ingest.py --mb 1000 --out results/history_ingest              # repeated rows
    python bench/bench_history_ingest.py --mb 1000 --distinct --out results/history_ingest   # rows all differ

Generates a JSONL history of `--mb` MB under --tmp (deleted afterwards; never committed): rows
of ~4 kB (a fingerprint, an outcome, and the submission fields a real export carries: user,
submit line, environment), every 200th a failed run, every 1000th a duplicate job id and every
5000th a line of invalid UTF-8. Fingerprints are drawn from 300 recurring experiments (as in
cluster traces), or with `--distinct` every row's fingerprint differs (each row is embedded: the
case where per-row state, caches and forward passes would show). It starts a throw-away
redis-server, runs the CLI a user runs (`schedmate history ingest FILE --redis-url URL --json`)
as a child and samples every 0.5 s the RSS of the child's whole process tree (the child and its
descendants) and the child's own peak (`VmHWM`); `peak_rss_mb` is the larger of the two. The
baseline in the same run is a `--small-mb` file through the same command: flat memory means the
two peaks are close. Prints one summary line; JSON (with the RSS samples) to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MODELS = ("gpt-2", "llama-2-7b", "resnet-50", "bert-base", "vit-b-16", "t5-base", "mistral-7b", "yolov8n")
DATASETS = ("openwebtext", "imagenet-1k", "c4", "coco", "wikitext-103", "alpaca")


def write_history(path: Path, mb: float, seed: int = 27, n_experiments: int = 300,
                  distinct: bool = False) -> dict[str, int]:
    """About `mb` MB of JSONL; returns what it planted (rows, failed, duplicates, bad lines).
    `distinct`: every row's fingerprint differs (its iteration count is the row number)."""
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
            if distinct:
                iters = 100 + i
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


def _status_kb(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return next((int(ln.split()[1]) for ln in fh if ln.startswith(key + ":")), 0)
    except (OSError, ValueError, IndexError):
        return 0


def _tree(pid: int) -> list[int]:
    """`pid` and its descendants (/proc/PID/task/TID/children)."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{p}/task/{tid}/children") as fh:
                    todo.extend(int(c) for c in fh.read().split())
            except (OSError, ValueError):
                continue
    return found


@dataclass
class TreeRun:
    """One child run: exit code, wall time, output, and its memory sampled every `poll_s`."""

    rc: int
    wall_s: float
    hung: bool
    hwm_mb: float  # the child's own VmHWM (exact peak of that one process)
    tree_peak_mb: float  # the largest sampled sum of VmRSS over the child and its descendants
    max_procs: int
    stdout: str
    stderr: str
    first_progress_s: float | None
    samples: list[tuple[float, float]] = field(default_factory=list)  # (s, tree RSS MB)


def run_tree(argv: list[str], timeout: float, poll_s: float = 0.5, watch: str = "ingest ") -> TreeRun:
    """Run `argv` to its end (killed after `timeout` s), sampling its process tree's RSS."""
    t0 = time.perf_counter()
    samples: list[tuple[float, float]] = []
    hwm_kb = tree_kb = max_procs = 0
    watched: float | None = None
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, text=True)
        hung = False
        while True:
            pids = _tree(proc.pid)
            rss = sum(_status_kb(p, "VmRSS") for p in pids)
            hwm_kb = max(hwm_kb, _status_kb(proc.pid, "VmHWM"))
            tree_kb, max_procs = max(tree_kb, rss), max(max_procs, len(pids))
            now = time.perf_counter() - t0
            samples.append((round(now, 1), round(rss / 1024, 1)))
            if proc.poll() is not None:
                break
            if watched is None:
                err.seek(0)
                if watch in err.read():
                    watched = round(now, 1)
            if now > timeout:
                hung = True
                proc.kill()
                proc.wait()
                break
            time.sleep(poll_s)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        return TreeRun(rc=proc.returncode, wall_s=round(wall, 1), hung=hung, hwm_mb=round(hwm_kb / 1024, 1),
                       tree_peak_mb=round(tree_kb / 1024, 1), max_procs=max_procs, stdout=out.read(),
                       stderr=err.read(), first_progress_s=watched, samples=samples)


def measure(argv: list[str], timeout: float) -> dict[str, object]:
    """Run the CLI as a child: its wall time, peak RSS (MB), progress lines and JSON answer."""
    run = run_tree(argv, timeout)
    progress = [ln for ln in run.stderr.splitlines() if ln.startswith("ingest ")]
    try:
        answer = json.loads(run.stdout)
    except json.JSONDecodeError:
        answer = None
    return {"wall_s": run.wall_s, "peak_rss_mb": max(run.hwm_mb, run.tree_peak_mb), "child_hwm_mb": run.hwm_mb,
            "tree_peak_rss_mb": run.tree_peak_mb, "max_processes": run.max_procs, "hung": run.hung,
            "rc": run.rc, "progress_lines": len(progress), "first_progress_s": run.first_progress_s,
            "last_progress": progress[-1] if progress else None,
            "answer": {k: answer[k] for k in ("ingested", "rows", "duplicates", "errors_total", "history_jobs")}
            if answer else None, "stderr_tail": run.stderr[-300:] if answer is None else "",
            "rss_samples": run.samples}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mb", type=float, default=1000.0)
    p.add_argument("--small-mb", type=float, default=2.0)
    p.add_argument("--tmp", type=Path, default=Path(tempfile.gettempdir()))
    p.add_argument("--out", type=Path, default=Path("results/history_ingest"))
    p.add_argument("--timeout", type=float, default=3600.0)
    p.add_argument("--distinct", action="store_true", help="every row's fingerprint differs (each row embedded)")
    args = p.parse_args(argv)
    from schedmate.embeddings import redis_server

    cli = str(Path(sys.executable).with_name("schedmate"))
    runs: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory(prefix="schedmate-ingest-", dir=args.tmp) as tmp:
        for name, mb in (("small", args.small_mb), ("large", args.mb)):
            hist = Path(tmp) / f"{name}.jsonl"
            planted = write_history(hist, mb, distinct=args.distinct)
            size = hist.stat().st_size
            with redis_server.running_server(Path(tmp) / f"redis-{name}") as info:
                r = measure([cli, "history", "ingest", str(hist), "--redis-url", info.url, "--json"], args.timeout)
            hist.unlink()
            runs[name] = {"mb": round(size / 1e6, 1), "planted": planted, **r}
            print(f"{name}: {size / 1e6:.0f} MB, {r['wall_s']} s, {r['peak_rss_mb']} MB RSS, answer {r['answer']}",
                  file=sys.stderr, flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = "distinct" if args.distinct else "repeated"
    (args.out / f"history_ingest_{rows}.json").write_text(json.dumps({"rows": rows, **runs}, indent=2))
    s, big = runs["small"], runs["large"]
    ans: dict[str, Any] = big["answer"] if isinstance(big["answer"], dict) else {}
    print(f"history ingest ({rows} rows): {big['mb']} MB in {big['wall_s']} s, peak RSS {big['peak_rss_mb']} MB "
          f"(child {big['child_hwm_mb']}, tree {big['tree_peak_rss_mb']}; baseline {s['mb']} MB file: "
          f"{s['peak_rss_mb']} MB), stored {ans.get('ingested')} of {ans.get('rows')} rows "
          f"({ans.get('duplicates')} duplicates refused, {ans.get('errors_total')} row errors), "
          f"{big['progress_lines']} progress lines (first after {big['first_progress_s']} s), rc {big['rc']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
