"""The log-following daemon: lines/s followed, lag under a fast writer, memory on huge files.

Run: `.venv/bin/python bench/bench_daemon.py` (about 2-4 minutes on 2 busy cores). A redis-server
is started here (loopback, temporary data dir); no model is loaded (regex tracker, no diagnosis).

1. follow: `--lines` progress lines pre-written over 4 files, one `run_once`: lines/s and MB/s
   (every line counted and committed; the tracker parses the newest of each batch, `jobs._feed`);
2. lag: a writer process appends `--rate` lines/s (in 10 ms bursts) to 2 files for `--seconds`
   while the daemon runs its threads (poll interval 0.2 s); sampled every 0.25 s: lag in bytes
   (written, not yet committed: unread on disk + read into the queue), queue depth; then the time to catch up once the writer stops, and
   whether every written line was counted;
3. memory: in a fresh process each, RSS sampled every 20 ms while following (a) a 1 GiB sparse
   file (all NUL, no newline: one capped line) and (b) `--big-mb` MiB of real lines; the RSS
   just before following is reported beside the peak, so the difference is what following costs.

Writes `bench/results/daemon.json` and prints one summary line.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from schedmate.deploy.daemon import DaemonConfig, DaemonState, LogDaemon
from schedmate.embeddings import redis_server

RESULTS = Path(__file__).resolve().parent / "results" / "daemon.json"


def progress_line(job: str, n: int) -> bytes:
    return (f"[{job}] iteration {n:9d}/ 100000000 | consumed samples: {n * 512} | elapsed time per iteration (ms): "
            f"512.3 | learning rate: 1.000E-04 | lm loss: 2.345 |\n").encode()  # fmt: skip


def write_lines(path: Path, job: str, n: int) -> int:
    with open(path, "ab") as fh:
        for k in range(0, n, 10_000):
            fh.write(b"".join(progress_line(job, i) for i in range(k, min(n, k + 10_000))))
    return path.stat().st_size


def bench_follow(url: str, root: Path, n_lines: int) -> dict[str, Any]:
    logs = root / "follow"
    logs.mkdir()
    size = sum(write_lines(logs / f"job-{i}.log", f"j{i}", n_lines // 4) for i in range(4))
    state = DaemonState.connect(url)
    state.client.flushall()
    daemon = LogDaemon(logs, state, handler_factory=lambda: None)
    t0 = time.perf_counter()
    daemon.run_once()
    dt = time.perf_counter() - t0
    counted = sum(j.lines for j in state.jobs().values())
    daemon.close()
    return {"lines": counted, "bytes": size, "seconds": round(dt, 3), "lines_per_s": round(counted / dt),
            "mb_per_s": round(size / dt / 1e6, 2), "all_counted": counted == 4 * (n_lines // 4)}  # fmt: skip


def _fast_writer(logs: str, rate: int, seconds: float, out: str) -> None:
    paths = [Path(logs) / "fast-a.log", Path(logs) / "fast-b.log"]
    handles = [open(p, "ab", buffering=1 << 20) for p in paths]  # noqa: SIM115
    written, t0 = 0, time.monotonic()
    while (now := time.monotonic()) - t0 < seconds:
        due = int((now - t0) * rate)
        while written < due:
            h = handles[written % 2]
            h.write(progress_line("w", written))
            written += 1
        for h in handles:
            h.flush()
        time.sleep(0.01)
    for h in handles:
        h.close()
    Path(out).write_text(json.dumps({"written": written, "seconds": time.monotonic() - t0}))


def bench_lag(url: str, root: Path, rate: int, seconds: float) -> dict[str, Any]:
    logs = root / "lag"
    logs.mkdir()
    state = DaemonState.connect(url)
    state.client.flushall()
    daemon = LogDaemon(logs, state, config=DaemonConfig(interval_s=0.2), handler_factory=lambda: None)
    stop = threading.Event()
    runner = threading.Thread(target=daemon.run, args=(stop,))
    runner.start()
    out = root / "writer.json"
    writer = multiprocessing.get_context("spawn").Process(target=_fast_writer, args=(str(logs), rate, seconds, str(out)))
    writer.start()
    samples: list[dict[str, float]] = []
    while writer.is_alive():
        s = daemon.stats()
        samples.append({"t": time.monotonic(), "lag_bytes": s["lag_bytes"], "queue": s["queue_depth"]})
        time.sleep(0.25)
    writer.join()
    t_stop = time.monotonic()
    meta = json.loads(out.read_text())
    counted = 0
    while time.monotonic() - t_stop < 120:
        counted = sum(j.lines for j in state.jobs().values())
        if counted >= meta["written"]:
            break
        time.sleep(0.05)
    catch_up = time.monotonic() - t_stop
    stop.set()
    runner.join()
    lags = sorted(x["lag_bytes"] for x in samples)
    return {
        "target_rate": rate, "writer_rate": round(meta["written"] / meta["seconds"]), "written": meta["written"],
        "counted": counted, "all_counted": counted == meta["written"], "seconds": seconds,
        "lag_bytes_p50": lags[len(lags) // 2] if lags else 0, "lag_bytes_max": lags[-1] if lags else 0,
        "queue_max": max((x["queue"] for x in samples), default=0), "queue_bound": daemon.config.queue_batches,
        "catch_up_s": round(catch_up, 2),
    }  # fmt: skip


def memory_case(kind: str, url: str, root: str, big_mb: int) -> dict[str, Any]:
    """Run in a fresh process: peak RSS while following one huge file."""
    logs = Path(root) / f"mem-{kind}"
    logs.mkdir()
    path = logs / "huge.log"
    if kind == "sparse":
        with open(path, "wb") as fh:
            fh.truncate(1 << 30)
    else:
        per = len(progress_line("m", 0))
        write_lines(path, "m", (big_mb << 20) // per)
    state = DaemonState.connect(url)
    rss0 = rss_mb()
    peak = [rss0]
    done = threading.Event()

    def sample() -> None:  # ru_maxrss would carry the parent's peak across fork+exec
        while not done.wait(0.02):
            peak[0] = max(peak[0], rss_mb())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    daemon = LogDaemon(logs, state, handler_factory=lambda: None)
    t0 = time.perf_counter()
    daemon.run_once(max_polls=100_000)
    dt = time.perf_counter() - t0
    done.set()
    sampler.join()
    job = state.job("huge")
    return {"file_bytes": path.stat().st_size, "seconds": round(dt, 2), "rss_before_mb": round(rss0, 1),
            "peak_rss_mb": round(peak[0], 1),
            "lines": job.lines if job else 0, "cut_lines": job.cut_lines if job else 0,
            "binary_lines": job.binary_lines if job else 0, "lag_bytes": daemon.stats()["lag_bytes"]}  # fmt: skip


def rss_mb() -> float:
    """Resident set size now, from /proc (sampled every 20 ms for the peak)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=400_000)
    ap.add_argument("--rate", type=int, default=50_000, help="writer lines/s in the lag test")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--big-mb", type=int, default=256)
    ap.add_argument("--memory-case", choices=["sparse", "lines"], help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    ap.add_argument("--root", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.memory_case:
        print(json.dumps(memory_case(args.memory_case, args.url, args.root, args.big_mb)))
        return
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-daemon-") as tmp:
        root = Path(tmp)
        with redis_server.running_server(root / "redis") as info:
            follow = bench_follow(info.url, root, args.lines)
            lag = bench_lag(info.url, root, args.rate, args.seconds)
            memory = {}
            for kind in ("sparse", "lines"):
                redis_server_flush(info.url)
                proc = subprocess.run([sys.executable, __file__, "--memory-case", kind, "--url", info.url,
                                       "--root", str(root), "--big-mb", str(args.big_mb)],
                                      capture_output=True, text=True, check=True)  # fmt: skip
                memory[kind] = json.loads(proc.stdout.strip().splitlines()[-1])
    result = {"machine": {"cpus": os.cpu_count(), "loadavg_before": list(load0), "loadavg_after": list(os.getloadavg())},
              "follow": follow, "lag": lag, "memory": memory}  # fmt: skip
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=1))
    sp, ln = memory["sparse"], memory["lines"]
    print(f"daemon: follow {follow['lines_per_s']:,} lines/s ({follow['mb_per_s']} MB/s); writer {lag['writer_rate']:,} "
          f"lines/s for {lag['seconds']:.0f}s: lag p50 {lag['lag_bytes_p50'] / 1e6:.1f} MB, max {lag['lag_bytes_max'] / 1e6:.1f} MB, "
          f"queue <= {lag['queue_max']}/{lag['queue_bound']}, caught up {lag['catch_up_s']}s after, all counted: {lag['all_counted']}; "
          f"peak RSS {sp['peak_rss_mb']:.0f} MB on a 1 GiB sparse file ({sp['rss_before_mb']:.0f} before), "
          f"{ln['peak_rss_mb']:.0f} MB on {ln['file_bytes'] / 2**20:.0f} MiB of lines ({ln['lines']:,} lines in {ln['seconds']}s)")  # fmt: skip


def redis_server_flush(url: str) -> None:
    DaemonState.connect(url).client.flushall()


if __name__ == "__main__":
    main()
