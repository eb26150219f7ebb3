"""Load and faults for `schedmate serve`: sustained req/s and p99, a 10x overload, Redis killed mid-run.

Run: `.venv/bin/python bench/bench_service.py` (about 4 minutes, most of it loading the models).
The service runs as its own process (`python -m schedmate.cli serve`, uvicorn, embedded MiniLM,
no LLM) over a redis-server started here; this process drives it with an async httpx client.

1. sustained: per operation (advise / track / diagnose on small inputs), `--concurrency` closed-loop
   clients for `--seconds`: answered req/s, p50/p99 latency;
2. overload: open-loop arrivals of the three operations at 10x the sustained mixed rate: how many
   were answered, rejected (429), timed out (504), failed; p99 of each; the server's peak RSS and
   whether it still answers /health afterwards;
3. Redis killed (SIGKILL) and restarted while jobs are registered one after another (the client
   retries 503 after its Retry-After): job records counted at the end, none may be lost.

Writes `bench/results/service.json` and prints one summary line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import redis

from schedmate.embeddings import redis_server

RESULTS = Path(__file__).resolve().parent / "results" / "service.json"
TRAIN = '''"""Train a ResNet-50 image classifier on ImageNet."""
import argparse


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--arch", type=str, default="resnet50")
    p.add_argument("--data-dir", type=str, default="/datasets/imagenet")
    p.add_argument("-b", "--batch-size", type=int, default=256)
    p.add_argument("--epochs", type=int, default=90)
    return p.parse_args()
'''
COMMAND = "torchrun --nproc_per_node=8 train.py --arch resnet50 -b 64 --epochs 30"
OOM = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.35 GiB total capacity)"


def progress(n: int) -> list[str]:
    return [f"iteration {i:>8}/   10000 | consumed samples: {i * 64} | elapsed time per iteration (ms): "
            f"{500 + i % 7:.1f} | learning rate: 1.0E-04 | lm loss: {3.0 - i * 1e-4:.4E} |" for i in range(1, n + 1)]


def make_inputs(root: Path) -> dict[str, str]:
    repo = root / "repo"
    repo.mkdir(parents=True)
    (repo / "train.py").write_text(TRAIN)
    (root / "train.log").write_text("\n".join(progress(200)) + "\n")
    (root / "failed.log").write_text("\n".join(progress(50) + ["Traceback (most recent call last):",
                                                              '  File "train.py", line 9, in <module>', OOM]) + "\n")
    return {"repo": str(repo), "log": str(root / "train.log"), "failed": str(root / "failed.log")}


def bodies(inputs: dict[str, str]) -> dict[str, tuple[str, dict[str, Any]]]:
    return {"advise": ("/v1/advise", {"repo": inputs["repo"], "command": COMMAND, "gpus": 8}),
            "track": ("/v1/track", {"log": inputs["log"]}),
            "diagnose": ("/v1/diagnose", {"log": inputs["failed"]})}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pct(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)) * 1000, 1) if values else None


# ----------------------------------------------------------------------------- phases


async def sustained(client: httpx.AsyncClient, path: str, body: dict[str, Any], concurrency: int, seconds: float
                    ) -> dict[str, Any]:
    lat: list[float] = []
    codes: Counter[int] = Counter()
    stop = time.perf_counter() + seconds

    async def worker() -> None:
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            r = await client.post(path, json=body)
            codes[r.status_code] += 1
            if r.status_code == 200:
                lat.append(time.perf_counter() - t0)

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall = time.perf_counter() - t0
    return {"req_s": round(len(lat) / wall, 1), "p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99), "answered": len(lat),
            "codes": dict(codes), "concurrency": concurrency, "seconds": round(wall, 1)}


PROBE = """
import sys, time, httpx
url, seconds = sys.argv[1], float(sys.argv[2])
end, out = time.time() + seconds, []
with httpx.Client(timeout=60) as c:
    while time.time() < end:
        t0 = time.perf_counter(); c.get(url); out.append(time.perf_counter() - t0); time.sleep(0.25)
print(" ".join(f"{x:.4f}" for x in out))
"""


async def overload(client: httpx.AsyncClient, ops: dict[str, tuple[str, dict[str, Any]]], rate: float, seconds: float,
                   pid: int) -> dict[str, Any]:
    """Open-loop arrivals at `rate`/s, the three operations in turn. A third process probes
    /health meanwhile: its latency is the server's event loop as an idle client sees it, which
    separates server-side queueing from this (single-process) client's own backlog."""
    base = str(client.base_url).rstrip("/")
    probe = await asyncio.create_subprocess_exec(sys.executable, "-c", PROBE, f"{base}/health", str(seconds),
                                                 stdout=asyncio.subprocess.PIPE)
    codes: Counter[str] = Counter()
    lat: dict[str, list[float]] = {"200": [], "429": [], "other": []}
    peak = rss_mb(pid)
    names = list(ops)
    tasks: list[asyncio.Task[None]] = []

    async def one(name: str) -> None:
        path, body = ops[name]
        t0 = time.perf_counter()
        try:
            r = await client.post(path, json=body)
            key = str(r.status_code)
        except httpx.HTTPError as exc:
            key = f"client {type(exc).__name__}"
        codes[key] += 1
        lat.get(key, lat["other"]).append(time.perf_counter() - t0)

    t0 = time.perf_counter()
    i = 0
    while (now := time.perf_counter() - t0) < seconds:
        due = int(now * rate)
        while i < due:
            tasks.append(asyncio.create_task(one(names[i % len(names)])))
            i += 1
        if i % 50 == 0:
            peak = max(peak, rss_mb(pid))
        await asyncio.sleep(0.002)
    offered_s = time.perf_counter() - t0
    while not all(t.done() for t in tasks):
        peak = max(peak, rss_mb(pid))
        await asyncio.sleep(0.2)
    drained_s = time.perf_counter() - t0  # until the last answer came back
    probe_out, _ = await probe.communicate()
    probe_lat = [float(x) for x in probe_out.split()]
    return {"offered_req_s": round(i / offered_s, 1), "sent": i, "codes": dict(codes),
            "health_probe_ms": {"n": len(probe_lat), "p50": pct(probe_lat, 50), "p99": pct(probe_lat, 99)},
            "p99_ms_answered": pct(lat["200"], 99), "p99_ms_rejected": pct(lat["429"], 99),
            "answered_req_s": round(len(lat["200"]) / drained_s, 1), "drained_s": round(drained_s, 1),
            "server_peak_rss_mb": round(peak, 1)}


async def redis_outage(client: httpx.AsyncClient, inputs: dict[str, str], data_dir: Path, port: int, jobs: int
                       ) -> dict[str, Any]:
    """Register `jobs` jobs one after another; SIGKILL Redis at a third, restart it 2 s later."""
    retried = 0
    statuses: Counter[int] = Counter()
    killed_at = restarted_at = None

    async def chaos() -> None:
        nonlocal killed_at, restarted_at
        while done < jobs // 3:
            await asyncio.sleep(0.05)
        info = redis_server.status(data_dir).info
        assert info is not None
        os.kill(info.pid, signal.SIGKILL)
        killed_at = done
        await asyncio.sleep(2.0)
        await asyncio.to_thread(redis_server.start, data_dir, port)
        restarted_at = done

    done = 0
    task = asyncio.create_task(chaos())
    t0 = time.perf_counter()
    for n in range(jobs):
        body = {"job_id": f"outage-{n}", "repo": inputs["repo"], "command": COMMAND, "gpus": 8}
        while True:
            r = await client.post("/v1/jobs/register", json=body)
            statuses[r.status_code] += 1
            if r.status_code == 200:
                break
            retried += 1
            await asyncio.sleep(min(1.0, float(r.headers.get("Retry-After", "1"))))
        done += 1
    await task
    ids = [f"outage-{n}" for n in range(jobs)]
    count = sum(redis.Redis(port=port, protocol=2).smismember("schedmate:ids", ids))
    return {"registered": jobs, "records_after": int(count), "lost": jobs - int(count), "retries": retried,
            "codes": dict(statuses), "killed_after_job": killed_at, "restarted_after_job": restarted_at,
            "seconds": round(time.perf_counter() - t0, 1)}


# ----------------------------------------------------------------------------- main


async def drive(base: str, inputs: dict[str, str], args: argparse.Namespace, pid: int, data_dir: Path, redis_port: int
                ) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:
        for i in range(3):  # some history, so advise matches
            await client.post("/v1/jobs/register", json={"job_id": f"h{i}", "repo": inputs["repo"], "command": COMMAND,
                                                         "gpus": 8})
            await client.post("/v1/jobs/end", json={"job_id": f"h{i}", "duration_s": 3600.0 + 60 * i, "sm_util": 60})
        ops = bodies(inputs)
        for path, body in ops.values():  # warm caches (template embeddings)
            (await client.post(path, json=body)).raise_for_status()
        rss0 = rss_mb(pid)
        sus = {name: await sustained(client, path, body, args.concurrency, args.seconds)
               for name, (path, body) in ops.items()}
        mixed = len(ops) / sum(1.0 / max(s["req_s"], 0.1) for s in sus.values())  # harmonic: one of each in turn
        over = await overload(client, ops, 10 * mixed, args.seconds, pid)
        alive = (await client.get("/health")).status_code == 200
        over["server_queue"] = (await client.get("/ready")).json()["queue"]
        rss1 = rss_mb(pid)
        after = await sustained(client, *ops["track"], args.concurrency, 3.0)
        outage = await redis_outage(client, inputs, data_dir, redis_port, args.jobs)
    return {"sustained": sus, "mixed_req_s": round(mixed, 1), "overload_10x": over, "health_after_overload": alive,
            "track_after_overload": after, "server_rss_mb": {"before": round(rss0, 1), "after": round(rss1, 1)},
            "redis_outage": outage}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0, help="per sustained run and for the overload")
    ap.add_argument("--concurrency", type=int, default=4, help="closed-loop clients (below the 8 work slots)")
    ap.add_argument("--jobs", type=int, default=150, help="registrations across the Redis outage")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-service-") as tmp:
        root = Path(tmp)
        inputs = make_inputs(root / "jobs")
        data_dir = root / "redis"
        info = redis_server.start(data_dir)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        cmd = [sys.executable, "-m", "schedmate.cli", "serve", "--port", str(port), "--redis-url", info.url,
               "--allow", str(root / "jobs")]
        server_log = (root / "server.log").open("w")
        proc = subprocess.Popen(cmd, stdout=server_log, stderr=subprocess.STDOUT, text=True)
        try:
            t0 = time.perf_counter()
            while True:
                try:
                    if httpx.get(f"{base}/ready", timeout=5).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if proc.poll() is not None or time.perf_counter() - t0 > 600:
                    raise SystemExit(f"service did not become ready: {(root / 'server.log').read_text()[-2000:]}")
                time.sleep(1.0)
            ready_s = time.perf_counter() - t0
            result = asyncio.run(drive(base, inputs, args, proc.pid, data_dir, info.port))
        finally:
            proc.terminate()
            proc.wait(30)
            server_log.close()
            log_tail = (root / "server.log").read_text().splitlines()[-15:]
            redis_server.stop(data_dir)
    result = {"benchmark": "service", "command": " ".join(["bench/bench_service.py", *sys.argv[1:]]),
              "ready_s": round(ready_s, 1), "cpus": os.cpu_count(), "python": platform.python_version(), **result,
              "server_log_tail": log_tail}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    s, o, r = result["sustained"], result["overload_10x"], result["redis_outage"]
    print("service: " + ", ".join(f"{k} {v['req_s']} req/s p99 {v['p99_ms']} ms" for k, v in s.items())
          + f"; 10x overload ({o['offered_req_s']} req/s offered): {o['codes']}, peak RSS {o['server_peak_rss_mb']} MB, "
          f"health after {'ok' if result['health_after_overload'] else 'FAILED'}; Redis killed+restarted: "
          f"{r['records_after']}/{r['registered']} records kept ({r['retries']} retries)")


if __name__ == "__main__":
    main()
