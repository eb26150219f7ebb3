"""Load and faults for `schedmate serve`: sustained req/s and p99, 10x overload, Redis killed, LLM stalled.

Run: `.venv/bin/python bench/bench_service.py` (about 4 minutes, most of it loading the models).
The service runs as its own process (`python -m schedmate.cli serve`, uvicorn, embedded MiniLM,
no LLM) over a redis-server started here; this process drives it with an async httpx client.

1. sustained: per operation (advise / track / diagnose on small inputs), `--concurrency` closed-loop
   clients for `--seconds`: answered req/s, p50/p99 latency;
2. overload: open-loop arrivals of the three operations at 10x the sustained mixed rate (at most
   `--max-offered` req/s: past ~300 req/s this single-process client starves its own event loop on
   2 cores and measures itself, not the service; since `track` answers an unchanged log from its
   kept reading, 10x the mixed rate is ~1,000 req/s): how many
   were answered, rejected (429), timed out (504), failed; p99 of each; the server's peak RSS and
   whether it still answers /health afterwards;
3. Redis killed (SIGKILL) and restarted while jobs are registered one after another (the client
   retries 503 after its Retry-After): job records counted at the end, none may be lost;
4. LLM endpoint stalled: a second service whose `--llm-url` is a loopback socket that accepts
   connections and never answers (`--llm-timeout`, default 2 s): every call must still answer 200
   within its timeouts, from the static / regex / learned paths; counted: answers, 504s, how many
   said the LLM was skipped or failed (`llm_status`, `degraded`), connections the stalled endpoint
   got (the circuit breaker should stop trying after the first timeout), latency p50/p99;
5. the Slurm submit-time call (what job_submit.lua runs per job submitted without --time: one `curl`
   to `/v1/slurm/time-limit`): wall time of the whole subprocess against the running service, p50/p99;
   and, on a real local Slurm with the plugin installed (root, slurm-wlm + munge; else skipped),
   `sbatch --hold` wall time with --time (plugin returns at once) and without (it asks the service).

Writes `bench/results/service.json` and prints one summary line.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import redis

from schedmate.deploy.slurm.slurmjob import launch_command
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


async def sustained(client: httpx.AsyncClient, path: str, body: dict[str, Any], concurrency: int, seconds: float,
                    before: Callable[[], None] | None = None) -> dict[str, Any]:
    """`before` runs ahead of each request (e.g. appending a line to the log, so no reading is reused)."""
    lat: list[float] = []
    codes: Counter[int] = Counter()
    stop = time.perf_counter() + seconds

    async def worker() -> None:
        while time.perf_counter() < stop:
            if before is not None:
                before()
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


class StalledEndpoint:
    """A loopback TCP server that accepts every connection and never sends a byte (an LLM endpoint
    that hangs); counts the connections it got."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(256)
        self.port = int(self.sock.getsockname()[1])
        self.accepted = 0
        self._held: list[socket.socket] = []
        self._stop = False
        import threading

        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            self._held.append(conn)

    def close(self) -> None:
        self._stop = True
        self._thread.join(2)
        for c in self._held:
            c.close()
        self.sock.close()


def start_service(root: Path, redis_url: str, extra: list[str], name: str) -> tuple[subprocess.Popen[str], str, float]:
    """`schedmate serve` as its own process on a free port; (process, base URL, seconds to /ready)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "schedmate.cli", "serve", "--port", str(port), "--redis-url", redis_url,
           "--allow", str(root / "jobs"), *extra]
    log = (root / f"{name}.log").open("w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True)
    t0 = time.perf_counter()
    while True:
        try:
            if httpx.get(f"{base}/ready", timeout=5).status_code == 200:
                return proc, base, time.perf_counter() - t0
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.perf_counter() - t0 > 600:
            proc.kill()
            raise SystemExit(f"{name} did not become ready: {(root / f'{name}.log').read_text()[-2000:]}")
        time.sleep(1.0)


async def llm_stalled(base: str, ops: dict[str, tuple[str, dict[str, Any]]], endpoint: StalledEndpoint, calls: int,
                      concurrency: int, llm_timeout_s: float) -> dict[str, Any]:
    """`calls` requests per operation (`concurrency` at a time) against a service whose LLM hangs."""
    out: dict[str, Any] = {"llm_timeout_s": llm_timeout_s, "per_op": {}}
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        for name, (path, body) in ops.items():
            before = endpoint.accepted
            lat: list[float] = []
            codes: Counter[int] = Counter()
            llm: Counter[str] = Counter()
            degraded = fallback = 0
            sem = asyncio.Semaphore(concurrency)

            async def one(sem: asyncio.Semaphore = sem, path: str = path, body: Any = body, lat: list[float] = lat,
                          codes: Counter[int] = codes, llm: Counter[str] = llm) -> None:
                nonlocal degraded, fallback
                async with sem:
                    t0 = time.perf_counter()
                    r = await client.post(path, json=body)
                    lat.append(time.perf_counter() - t0)
                    codes[r.status_code] += 1
                    if r.status_code == 200:
                        data = r.json()
                        llm[str(data.get("llm_status"))] += 1
                        degraded += bool(data.get("degraded"))
                        fallback += data.get("fallback") is not None

            t0 = time.perf_counter()
            await asyncio.gather(*(one() for _ in range(calls)))
            out["per_op"][name] = {
                "calls": calls, "codes": dict(codes), "llm_status": dict(llm), "degraded": degraded,
                "scheduler_default": fallback, "llm_connections": endpoint.accepted - before,
                "first_ms": round(lat[0] * 1000, 1) if lat else None, "p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99),
                "max_ms": round(max(lat) * 1000, 1) if lat else None, "seconds": round(time.perf_counter() - t0, 1)}
    out["llm_connections_total"] = endpoint.accepted
    return out


def slurm_hook(base: str, inputs: dict[str, str], root: Path, runs: int) -> dict[str, Any]:
    """Wall time of the submit-time call as job_submit.lua makes it (one `curl` with the JSON body)."""
    script = f"#!/bin/bash\n#SBATCH --gres=gpu:8\n{COMMAND}\n"
    body = root / "time-limit.json"
    body.write_text(json.dumps({"work_dir": inputs["repo"], "script": script, "tres_per_node": "gres:gpu:8",
                                "tres_per_job": "", "nodes": None, "user": "0", "max_minutes": 0, "margin": 1.2}))
    cmd = ["curl", "-sS", "--max-time", "2", "-H", "Content-Type: application/json", "--data-binary", f"@{body}",
           f"{base}/v1/slurm/time-limit"]
    lat: list[float] = []
    lines: Counter[str] = Counter()
    for _ in range(runs):
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        lat.append(time.perf_counter() - t0)
        lines[done.stdout.split(" ", 1)[0] if done.stdout else "none"] += 1
    return {"runs": runs, "answers": dict(lines), "example": done.stdout.strip(), "p50_ms": pct(lat, 50),
            "p99_ms": pct(lat, 99), "command": launch_command(script)}


def slurm_submit(base: str, inputs: dict[str, str], root: Path, runs: int) -> dict[str, Any]:
    """`sbatch` wall time on a real local Slurm with SchedMate's plugin: with --time (the plugin
    returns at once) vs without (it asks the service). Jobs are submitted held and cancelled."""
    from schedmate.deploy.slurm.config import HookConfig, slurm_conf_lines, write_files
    from schedmate.deploy.slurm.localcluster import LocalSlurm, missing_binaries

    if missing_binaries() or os.geteuid() != 0:
        return {"skipped": "needs root and slurm-wlm + munge"}
    cluster = LocalSlurm(root / "slurm")
    epilog = cluster.conf_dir / "schedmate-epilog.sh"
    cluster.extra_conf = slurm_conf_lines(epilog)
    cluster.write_config()
    write_files(HookConfig(url=base, log_file=root / "hook.log", slurm_conf=cluster.conf), cluster.conf_dir, epilog)
    job = Path(inputs["repo"]) / "job.sh"
    job.write_text(f"#!/bin/bash\n#SBATCH --gres=gpu:8\n{COMMAND}\n")
    out: dict[str, Any] = {}
    try:
        cluster.start()
        for label, extra in (("with_time", ["--time=60"]), ("without_time", [])):
            lat = []
            ids = []
            for _ in range(runs):
                t0 = time.perf_counter()
                ids.append(cluster.sbatch(job, "--hold", *extra))
                lat.append(time.perf_counter() - t0)
            limits = Counter(subprocess.run(["scontrol", "show", "job", i], env=cluster.env, capture_output=True,
                                            text=True, timeout=10).stdout.split("TimeLimit=")[1].split()[0] for i in ids)
            subprocess.run(["scancel", *ids], env=cluster.env, capture_output=True, timeout=30)
            out[label] = {"runs": runs, "p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99), "time_limits": dict(limits)}
    finally:
        cluster.stop()
    out["added_p50_ms"] = round(out["without_time"]["p50_ms"] - out["with_time"]["p50_ms"], 1) if "with_time" in out \
        and "without_time" in out else None
    return out


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
        # the same log growing by one progress line before every request: each reading is a new one
        # (the service keeps a reading only while the log's inode, size and mtime hold)
        grown = itertools.count(201)
        log_path = Path(inputs["log"])

        def append() -> None:
            i = next(grown)
            with open(log_path, "a") as fh:
                fh.write(progress(i)[-1] + "\n")  # line i as `progress` writes it (O(i): fine for a few thousand)

        sus["track_growing"] = await sustained(client, *ops["track"], args.concurrency, args.seconds, before=append)
        mixed = len(ops) / sum(1.0 / max(sus[k]["req_s"], 0.1) for k in ops)  # harmonic: one of each in turn
        over = await overload(client, ops, min(10 * mixed, args.max_offered), args.seconds, pid)
        over["target_req_s"] = round(10 * mixed, 1)
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
    ap.add_argument("--max-offered", type=float, default=300.0, help="cap on the overload's open-loop rate (req/s)")
    ap.add_argument("--jobs", type=int, default=150, help="registrations across the Redis outage")
    ap.add_argument("--llm-calls", type=int, default=24, help="calls per operation with the LLM stalled")
    ap.add_argument("--llm-timeout", type=float, default=2.0, help="the stalled service's --llm-timeout")
    ap.add_argument("--hook-runs", type=int, default=20, help="Slurm submit-hook runs")
    ap.add_argument("--phases", default="load,hook,llm", help="load (1-3), hook (5), llm (4); comma-separated")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    phases = set(args.phases.split(","))
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-service-") as tmp:
        root = Path(tmp)
        inputs = make_inputs(root / "jobs")
        data_dir = root / "redis"
        info = redis_server.start(data_dir)
        try:
            proc, base, ready_s = start_service(root, info.url, [], "server")
            result["ready_s"] = round(ready_s, 1)
            try:
                if "load" in phases:
                    result |= asyncio.run(drive(base, inputs, args, proc.pid, data_dir, info.port))
                if "hook" in phases:
                    asyncio.run(seed_history(base, inputs))
                    result["slurm_hook"] = slurm_hook(base, inputs, root, args.hook_runs)
                    result["slurm_submit"] = slurm_submit(base, inputs, root, args.hook_runs)
            finally:
                proc.terminate()
                proc.wait(30)
                result["server_log_tail"] = (root / "server.log").read_text().splitlines()[-15:]
            if "llm" in phases:
                endpoint = StalledEndpoint()
                extra = ["--llm-url", f"http://127.0.0.1:{endpoint.port}/v1", "--llm-model", "stalled",
                         "--llm-timeout", str(args.llm_timeout)]
                proc, base, _ = start_service(root, info.url, extra, "stalled")
                try:
                    result["llm_stalled"] = asyncio.run(llm_stalled(base, bodies(inputs), endpoint, args.llm_calls,
                                                                    args.concurrency, args.llm_timeout))
                    result["llm_stalled"]["health_after"] = httpx.get(f"{base}/health", timeout=10).status_code == 200
                finally:
                    proc.terminate()
                    proc.wait(30)
                    endpoint.close()
        finally:
            redis_server.stop(data_dir)
    result = {"benchmark": "service", "command": " ".join(["bench/bench_service.py", *sys.argv[1:]]),
              "cpus": os.cpu_count(), "python": platform.python_version(), **result}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print("service: " + "; ".join(summary(result)))


def summary(result: dict[str, Any]) -> list[str]:
    parts = []
    if "sustained" in result:
        s, o, r = result["sustained"], result["overload_10x"], result["redis_outage"]
        parts.append(", ".join(f"{k} {v['req_s']} req/s p99 {v['p99_ms']} ms" for k, v in s.items())
                     + " (track_growing: the log grows by a line before each request, so none reuses a reading)")
        parts.append(f"10x overload ({o['offered_req_s']} req/s offered of {o.get('target_req_s')} aimed): {o['codes']}, peak RSS "
                     f"{o['server_peak_rss_mb']} MB, health after {'ok' if result['health_after_overload'] else 'FAILED'}")
        parts.append(f"Redis killed+restarted: {r['records_after']}/{r['registered']} records kept "
                     f"({r['retries']} retries)")
    if "slurm_hook" in result:
        h = result["slurm_hook"]
        parts.append(f"Slurm submit-time call (curl) p50 {h['p50_ms']} ms p99 {h['p99_ms']} ms, {h['answers']}")
        sb = result.get("slurm_submit", {})
        if "with_time" in sb:
            parts.append(f"sbatch p50 {sb['with_time']['p50_ms']} ms with --time, {sb['without_time']['p50_ms']} ms "
                         f"without (limits {sb['without_time']['time_limits']})")
    if "llm_stalled" in result:
        ls = result["llm_stalled"]
        per = ", ".join(f"{k} {v['codes']} p99 {v['p99_ms']} ms (LLM {v['llm_status']})" for k, v in ls["per_op"].items())
        parts.append(f"LLM stalled ({ls['llm_timeout_s']} s timeout, {ls['llm_connections_total']} LLM connections): {per}")
    return parts


async def seed_history(base: str, inputs: dict[str, str]) -> None:
    """The three finished jobs `drive` registers first (so the hook gets an estimate when run alone)."""
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        for i in range(3):
            await client.post("/v1/jobs/register", json={"job_id": f"h{i}", "repo": inputs["repo"], "command": COMMAND,
                                                         "gpus": 8})
            await client.post("/v1/jobs/end", json={"job_id": f"h{i}", "duration_s": 3600.0 + 60 * i, "sm_util": 60})


if __name__ == "__main__":
    main()
