"""The fault-injection / fuzz suite run longer (issue 16, item 6): the counts for the README.

Run: `.venv/bin/python bench/bench_fuzz.py` (about 3-6 minutes on 2 busy cores; `--examples N`
scales every fuzz target, `--redis-runs K` the Redis kill runs). Same strategies as
`tests/test_fuzz_*.py` (`tests/fuzz_strategies.py`); here nothing stops at the first failure:
every input is counted.

1. logs: random bytes, huge lines, NULs, invalid UTF-8, partial tracebacks, injections, as a file
   to the Failure Handler (rules only, no LLM) and the Metric Tracker, and as in-memory lines;
   a crash is any exception, a hang any input over `--hang-s` seconds;
2. traces: hostile CSV rows in the Philly / derived formats and random bytes to `load_trace`:
   a crash is any exception other than `TraceFormatError`, or a loaded trace that is not sorted,
   rebased and finite;
3. adversarial logs: script errors with foreign lines inside the traceback, injections and decoys,
   diagnosed by the rules and by the learned classifier: wrong-but-confident = a medium/high
   confidence verdict whose category is not the exception's under Acme's taxonomy (`category_of`;
   broken down per exception), confidently infrastructure, and plans that touch a node;
4. Redis: redis-server SIGKILLed while a writer stores records, restarted on the same folder:
   acknowledged records that are missing.

Writes `bench/results/fuzz.json` and prints one summary line.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

RESULTS = Path(__file__).resolve().parent / "results" / "fuzz.json"


class Target:
    """Counts for one fuzz target: inputs, crashes (with the first few messages), hangs, slowest input."""

    def __init__(self, name: str, hang_s: float) -> None:
        self.name, self.hang_s = name, hang_s
        self.inputs = self.crashes = self.hangs = 0
        self.max_s = 0.0
        self.examples: list[str] = []
        self.outcomes: Counter[str] = Counter()

    def run(self, fn: Callable[[], str]) -> None:
        self.inputs += 1
        t0 = time.perf_counter()
        try:
            self.outcomes[fn()] += 1
        except Exception as exc:  # noqa: BLE001 -- counting every crash is the point
            self.crashes += 1
            if len(self.examples) < 3:
                self.examples.append("".join(traceback.format_exception_only(exc)).strip()[:300])
        elapsed = time.perf_counter() - t0
        self.max_s = max(self.max_s, elapsed)
        self.hangs += elapsed > self.hang_s

    def as_dict(self) -> dict[str, Any]:
        return {"inputs": self.inputs, "crashes": self.crashes, "hangs": self.hangs, "max_s": round(self.max_s, 3),
                "outcomes": dict(self.outcomes), "crash_examples": self.examples}  # fmt: skip


def fuzz(strategy: st.SearchStrategy[Any], n: int, body: Callable[[Any], None]) -> None:
    """Feed `n` examples of `strategy` to `body` (which counts; it never raises)."""
    @settings(max_examples=n, deadline=None, database=None, derandomize=True,  # the same inputs every run
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(strategy)
    def run(x: Any) -> None:
        body(x)

    run()


def bench_logs(classifier: Any, n: int, hang_s: float, scratch: Path) -> dict[str, Any]:
    from schedmate.agents.failure import FailureHandler, FailureHandlerConfig
    from schedmate.agents.tracker.tracker import MetricTracker, NoSignal, TrackerReport
    from schedmate.tests.fuzz_strategies import log_bytes

    handler = FailureHandler(classifier, config=FailureHandlerConfig(method="rules", time_budget_s=hang_s))
    tracker = MetricTracker(classifier)
    targets = {k: Target(k, hang_s) for k in ("handler_file", "handler_lines", "tracker_file", "tracker_lines")}
    path = scratch / "fuzz.log"

    def diagnose_file() -> str:
        d = handler.diagnose(path, {"job_id": "fuzz"})
        if d.status == "unreadable":
            raise AssertionError(f"a regular file was called unreadable: {d.message}")
        return d.status

    def track_file() -> str:
        r = tracker.observe(path)
        if not isinstance(r, (TrackerReport, NoSignal)):
            raise AssertionError(f"tracker returned {type(r).__name__}")
        return type(r).__name__

    def one(data: bytes) -> None:
        path.write_bytes(data)
        lines = data.split(b"\n")
        targets["handler_file"].run(diagnose_file)
        targets["handler_lines"].run(lambda: handler.diagnose_lines(lines, {"job_id": "fuzz"}).status)
        targets["tracker_file"].run(track_file)
        targets["tracker_lines"].run(lambda: type(tracker.observe(lines)).__name__)

    fuzz(log_bytes(max_lines=120), n, one)
    return {k: t.as_dict() for k, t in targets.items()}


def bench_traces(n: int, hang_s: float, scratch: Path) -> dict[str, Any]:
    from schedmate.schedulers.cluster import ClusterSpec
    from schedmate.schedulers.traces import TraceFormatError, load_trace
    from schedmate.schedulers.traces.plausibility import check_plausibility
    from schedmate.tests.fuzz_strategies import trace_csv

    target = Target("load_trace", hang_s)
    cluster = ClusterSpec.parse("64")
    path = scratch / "trace.csv"

    def load() -> str:
        try:
            jobs = load_trace(path).jobs
        except TraceFormatError:
            return "format error (file:line)"
        times = [j.submit_time for j in jobs]
        if times != sorted(times) or (jobs and times[0] != 0.0):
            raise AssertionError("jobs not sorted and rebased")
        if not all(math.isfinite(j.submit_time) and math.isfinite(j.duration) for j in jobs):
            raise AssertionError("a non-finite time was accepted")
        return "loaded, warnings" if check_plausibility(jobs, cluster) else "loaded"

    def one(data: bytes) -> None:
        path.write_bytes(data)
        target.run(load)

    fuzz(st.one_of(trace_csv(max_rows=60).map(lambda t: t.encode("utf-8", "surrogatepass")), st.binary(max_size=3000)),
         n, one)
    return target.as_dict()


def bench_adversarial(classifier: Any, n: int, methods: list[str], hang_s: float) -> dict[str, Any]:
    from schedmate.agents.failure import FailureHandler, FailureHandlerConfig
    from schedmate.taxonomy import FailureCategory, FailureReason, category_of
    from schedmate.tests.fuzz_strategies import adversarial_logs

    out: dict[str, Any] = {}
    for method in methods:
        handler = FailureHandler(classifier, config=FailureHandlerConfig(method=method, time_budget_s=hang_s)).prepare()  # type: ignore[arg-type]
        target = Target(f"adversarial/{method}", hang_s)
        counts = Counter[str]()

        def one(case: tuple[list[str], str], handler: Any = handler, target: Target = target,
                counts: Counter[str] = counts) -> None:  # fmt: skip
            lines, exc = case

            def diagnose() -> str:
                d = handler.diagnose_lines(lines, {"job_id": "adv", "nodes": ["gpu-node-01", "gpu-node-02"]})
                truth = category_of(FailureReason(exc.split(":")[0]))
                confident = d.verdict is not None and d.verdict.confidence in ("high", "medium")
                counts["wrong_but_confident"] += confident and d.category is not truth
                counts["confident_infrastructure"] += confident and d.category is FailureCategory.INFRASTRUCTURE
                if confident and d.category is not truth:
                    counts[f"wrong: {exc.split(':')[0]} -> {d.category}"] += 1
                counts["right"] += d.category is truth
                counts["abstained"] += d.category is None
                counts["plans_touching_nodes"] += bool(d.plan and any(getattr(a, "node", None) for a in d.plan.actions))
                return "right" if d.category is truth else "abstained" if d.category is None else "wrong"

            target.run(diagnose)

        fuzz(adversarial_logs(), n, one)
        out[method] = target.as_dict() | {"counts": dict(counts)} | {
            k: counts[k] for k in ("right", "abstained", "wrong_but_confident", "confident_infrastructure",
                                   "plans_touching_nodes")}  # fmt: skip
    return out


def bench_redis(runs: int, scratch: Path) -> dict[str, Any]:
    import numpy as np

    from schedmate.embeddings.redis_server import running_server
    from schedmate.embeddings.store import JobRecord, JobStore, StoreError

    acked_total = lost_total = 0
    for run in range(runs):
        data = scratch / f"redis-{run}"
        acked: list[str] = []
        kill_at = 50 + 97 * run
        with running_server(data) as info:
            store = JobStore.connect(info.url, 8, prefix="fault")
            try:
                for i in range(kill_at + 200):
                    if i == kill_at:
                        os.kill(info.pid, signal.SIGKILL)
                    try:
                        store.put(JobRecord(job_id=f"job-{i}", vector=np.full(8, i + 1.0)))
                        acked.append(f"job-{i}")
                    except StoreError:
                        break
            finally:
                store.close()
        with running_server(data) as info, JobStore.connect(info.url, 8, prefix="fault") as store:
            got = store.get_many(acked)
        acked_total += len(acked)
        lost_total += sum(1 for r in got if r is None)
    return {"runs": runs, "acknowledged": acked_total, "lost": lost_total}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=int(os.environ.get("FUZZ_EXAMPLES", 300)),
                    help="Examples per fuzz target (default 300, or FUZZ_EXAMPLES).")
    ap.add_argument("--adversarial", type=int, default=150, help="Adversarial logs per method.")
    ap.add_argument("--methods", default="rules,learned", help="Failure Handler methods for the adversarial logs.")
    ap.add_argument("--redis-runs", type=int, default=3)
    ap.add_argument("--hang-s", type=float, default=30.0, help="An input slower than this counts as a hang.")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()

    from schedmate.embeddings.classifier import LineClassifier
    from schedmate.embeddings.embedder import make_embedder

    t0 = time.perf_counter()
    classifier = LineClassifier(make_embedder())
    with tempfile.TemporaryDirectory(prefix="bench-fuzz-") as tmp:
        scratch = Path(tmp)
        logs = bench_logs(classifier, args.examples, args.hang_s, scratch)
        traces = bench_traces(args.examples, args.hang_s, scratch)
        adversarial = bench_adversarial(classifier, args.adversarial, [m for m in args.methods.split(",") if m],
                                        args.hang_s)  # fmt: skip
        redis = bench_redis(args.redis_runs, scratch)
    fuzz_targets = [*logs.values(), traces]
    doc = {
        "command": "bench/bench_fuzz.py " + " ".join(sys.argv[1:]),
        "inputs": sum(t["inputs"] for t in fuzz_targets) + sum(a["inputs"] for a in adversarial.values()),
        "crashes": sum(t["crashes"] for t in fuzz_targets) + sum(a["crashes"] for a in adversarial.values()),
        "hangs": sum(t["hangs"] for t in fuzz_targets) + sum(a["hangs"] for a in adversarial.values()),
        "wrong_but_confident": {m: a["wrong_but_confident"] for m, a in adversarial.items()},
        "confident_infrastructure": sum(a["confident_infrastructure"] for a in adversarial.values()),
        "plans_touching_nodes": sum(a["plans_touching_nodes"] for a in adversarial.values()),
        "records_lost": redis["lost"],
        "logs": logs, "traces": traces, "adversarial": adversarial, "redis": redis,
        "hang_s": args.hang_s, "wall_s": round(time.perf_counter() - t0, 1),
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2))
    adv = ", ".join(f"{m} {a['wrong_but_confident']}/{a['inputs']}" for m, a in adversarial.items())
    print(f"fuzz: {doc['inputs']} inputs, crashes {doc['crashes']}, hangs {doc['hangs']} (> {args.hang_s:.0f} s); "
          f"wrong-but-confident on adversarial logs: {adv} (confidently infrastructure "
          f"{doc['confident_infrastructure']}); plans touching nodes {doc['plans_touching_nodes']}; "
          f"Redis killed {redis['runs']}x: {redis['lost']} of {redis['acknowledged']} acknowledged records lost "
          f"({doc['wall_s']:.0f} s) -> {args.out}")


if __name__ == "__main__":
    main()
