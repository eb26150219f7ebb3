"""Ray scale-out: a seed sweep serial vs fanned out over a local Ray cluster, and (optionally) the
tracker answering a batch of logs in-process vs from a pool of actors.

Run: `.venv/bin/python bench/bench_ray.py` (sweep only, about a minute on 2 cores) or with
`--actors 2` (adds the actor pool: each actor loads MiniLM). The sweep's rows must be identical
(all fields but the engine's own `wall_seconds`); the bench fails otherwise. On a 2-core machine
Ray cannot beat the serial run by much: the figure is the overhead, and the same command on a
cluster (`--ray ADDRESS`) measures the fan-out.

Writes `bench/results/ray.json` and prints one summary line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from schedmate.deploy.ray.cluster import RayConfig, ray_cluster
from schedmate.deploy.ray.sweep import RayMap, SweepConfig, run_sweep


def _rows(result: object) -> list[dict[str, object]]:
    return [{k: v for k, v in r.flat().items() if k != "wall_seconds"} for r in result.rows]


def bench_pool(actors: int, requests: int) -> dict[str, object]:
    """Track `requests` logs in-process, then over `actors` actors (answers compared)."""
    from schedmate.deploy.ray.actors import RayServiceCore
    from schedmate.deploy.service.config import ServiceConfig
    from schedmate.deploy.service.core import ServiceCore
    from schedmate.deploy.service.models import TrackRequest
    from schedmate.embeddings.classifier import LineClassifier
    from schedmate.embeddings.embedder import make_embedder

    root = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    reqs = []
    for i in range(requests):
        log = root / f"job{i}.log"
        log.write_text("".join(f"step {s}/900 | loss {5 - s * 0.001:.4f} | step_time {100 + i % 50 + s % 3} ms\n"
                               for s in range(1, 400)))
        reqs.append(TrackRequest(log=str(log)))
    config = ServiceConfig(allowed_roots=(root,))
    t0 = time.perf_counter()
    pool = RayServiceCore(config, actors=actors)
    pool.load()
    pool_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    local = ServiceCore(config, classifier=LineClassifier(make_embedder()))
    local.load()
    local_load = time.perf_counter() - t0
    local.track(reqs[0]), pool.map("track", reqs[:actors])  # warm caches on both sides
    t0 = time.perf_counter()
    here = [local.track(r) for r in reqs]
    local_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    there = pool.map("track", reqs)
    pool_s = time.perf_counter() - t0
    pool.close()
    same = [a.model_dump() for a in here] == [b.model_dump() for b in there]
    return {"actors": actors, "requests": requests, "pool_load_s": round(pool_load, 2), "local_load_s": round(local_load, 2),
            "local_s": round(local_s, 3), "pool_s": round(pool_s, 3), "local_rps": round(requests / local_s, 1),
            "pool_rps": round(requests / pool_s, 1), "same_answers": same}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policies", default="fifo,sjf,srtf,qssf,tiresias")
    p.add_argument("--seeds", type=int, default=4)
    p.add_argument("--jobs", type=int, default=1000)
    p.add_argument("--ray", default="local", help="Ray address, or 'local' (a cluster started here)")
    p.add_argument("--num-cpus", type=int, default=None, help="with --ray local: CPUs offered (default: all)")
    p.add_argument("--actors", type=int, default=0, help="also bench a pool of this many tracker actors")
    p.add_argument("--requests", type=int, default=64)
    p.add_argument("--out", type=Path, default=Path("bench/results/ray.json"))
    a = p.parse_args(argv)
    cfg = SweepConfig(policies=tuple(a.policies.split(",")), seeds=tuple(range(a.seeds)), jobs=a.jobs)
    serial = run_sweep(cfg)
    t0 = time.perf_counter()
    with ray_cluster(RayConfig(a.ray, num_cpus=a.num_cpus)) as res:
        start_s = time.perf_counter() - t0
        fanned = run_sweep(cfg, map_seeds=RayMap(), where=f"ray {a.ray}")
        pool = bench_pool(a.actors, a.requests) if a.actors else None
    identical = _rows(serial) == _rows(fanned)
    doc = {"cpus": os.cpu_count(), "ray_cpus": res.get("CPU"), "runs": len(serial.rows), "jobs_per_run": a.jobs,
           "serial_s": serial.details["wall_s"], "ray_s": fanned.details["wall_s"], "ray_start_s": round(start_s, 2),
           "speedup": round(serial.details["wall_s"] / fanned.details["wall_s"], 3), "identical_rows": identical,
           "pool": pool}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(doc, indent=2))
    line = (f"ray sweep: {doc['runs']} runs x {a.jobs} jobs: serial {doc['serial_s']:.1f} s, Ray {doc['ray_s']:.1f} s "
            f"({doc['speedup']:.2f}x, {doc['ray_cpus']:g} CPUs, cluster start {start_s:.1f} s), rows identical: {identical}")
    if pool:
        line += (f"; tracker {pool['requests']} logs: in-process {pool['local_rps']} req/s, {pool['actors']} actors "
                 f"{pool['pool_rps']} req/s (load {pool['pool_load_s']} s), same answers: {pool['same_answers']}")
    print(line)
    return 0 if identical and (pool is None or pool["same_answers"]) else 1


if __name__ == "__main__":
    sys.exit(main())
