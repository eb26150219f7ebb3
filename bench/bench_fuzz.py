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
   acknowledged records that are missing;
5. sizes, encodings, compressions (issue 27): the CLI a user runs (`advise`, `diagnose --method
   rules`, `track`, `history ingest`), each in a child process, on a 50 MB source file, 20,000
   files, 300 nested folders, deeply nested code/YAML/JSON, a 100 MB single-line log, a
   million-line log, UTF-16/32 and gzip/bz2/xz logs, binary and truncated-gzip logs, a history
   with non-UTF-8 rows, a 2 MB row and a 100,000-deep JSON row. Per input: crash (a traceback or
   an unexpected exit code), hang (over `--hang-s`, killed), the child's peak RSS (`VmHWM`), and
   wrong-but-confident: an answer that is not the known one (a planted KeyError reported as
   something else, an unreadable log reported as "no failure found", an uncounted history row).

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

from childproc import run_child  # bench/childproc.py: the shared child runner (run as `python bench/X.py`)
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
        handler = FailureHandler(classifier, config=FailureHandlerConfig(method=method, time_budget_s=hang_s)).prepare()
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


TRACEBACK = ("Traceback (most recent call last):\n  File \"train.py\", line 41, in <module>\n"
             "    label = batch[\"label\"]\nKeyError: 'label'\n")
PROGRESS = "".join(f"iteration {i:>6}/ 1000 | elapsed time per iteration (ms): 500.0 | lm loss: 2.5E+00 |\n"
                   for i in range(1, 60))


def _child(argv: list[str], timeout: float, cwd: Path | None = None) -> dict[str, Any]:
    """Run the CLI as a child: rc, wall time, peak RSS (MB), stdout, a traceback seen, hung."""
    run = run_child(argv, timeout, cwd=cwd, env=os.environ | {"PYTHONFAULTHANDLER": "1"})
    return {"rc": run.rc, "s": run.wall_s, "hung": run.hung, "rss_mb": run.peak_rss_mb, "stdout": run.stdout,
            "stderr": run.stderr, "traceback": run.traceback}

def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def _make_size_inputs(root: Path) -> list[tuple[str, list[str], set[int], Callable[[dict[str, Any]], str]]]:
    """(name, CLI argv after `schedmate`, accepted exit codes, judge(result) -> "" or why it is wrong)."""
    import bz2
    import gzip
    import lzma

    cases: list[tuple[str, list[str], set[int], Callable[[dict[str, Any]], str]]] = []
    train = ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--model', default='resnet50')\n"
             "p.add_argument('--epochs', type=int, default=90)\np.add_argument('--batch-size', type=int, default=64)\n"
             "args = p.parse_args()\n")

    def repo(name: str) -> Path:
        d = root / name
        d.mkdir(parents=True)
        (d / "train.py").write_text(train)
        return d

    def advise_ok(r: dict[str, Any]) -> str:  # the training script's own defaults must still be read
        got = _json(r["stdout"]) or {}
        return "" if (got.get("metadata") or {}).get("batch_size") == 64 else f"batch_size {got.get('metadata')}"

    big = repo("big-file")
    with open(big / "generated.py", "w") as fh:
        while fh.tell() < 50_000_000:
            fh.write("".join(f"def f{i}(a, b=3):\n    return [a + b * {i}, {{'k': a}}]\n" for i in range(2000)))
    (big / "train.py").write_text("import generated\n" + train)
    many = repo("many-files")
    for i in range(20_000):
        sub = many / f"pkg{i // 1000}"
        sub.mkdir(exist_ok=True)
        (sub / f"m{i}.py").write_text(f"# add_argument\nX_{i} = {i}\n")
    deep = repo("deep-folders")
    d = deep
    for i in range(300):
        d = d / f"d{i}"
    d.mkdir(parents=True)
    (d / "leaf.py").write_text("x = 1\n")
    nested = repo("nested-code")
    (nested / "train.py").write_text(train + "Y = " + "[" * 190 + "]" * 190 + "\n")  # CPython's parser stops at 200
    cfg = repo("nested-config")
    (cfg / "deep.yaml").write_text("a:\n" + "".join("  " * i + "  b:\n" for i in range(2000)) + "lr: 0.1\nbatch_size: 64\n")
    (cfg / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    for name in ("big-file", "many-files", "deep-folders", "nested-code"):
        cases.append((f"advise/{name}", ["advise", str(root / name), "--cmd", "python train.py", "--json"], {0}, advise_ok))
    cases.append(("advise/nested-yaml+json", ["advise", str(cfg), "--cmd",
                                              "python train.py --config deep.yaml --extra deep.json", "--json"], {0},
                  advise_ok))

    def found_keyerror(r: dict[str, Any]) -> str:
        got = _json(r["stdout"]) or {}
        if got.get("status") != "failure_found":
            return f"planted KeyError not found ({got.get('status')}: {str(got.get('message'))[:80]})"
        return "" if (got.get("line_text") or "").startswith("KeyError") else f"said {got.get('line_text')!r}"

    def said_unreadable(r: dict[str, Any]) -> str:
        text = r["stdout"] + r["stderr"]
        if "no failure found" in text:
            return "an unreadable log was reported as no failure found"
        return "" if "unreadable" in text else "unreadable log not said to be unreadable"

    def capped_said(r: dict[str, Any]) -> str:
        got = _json(r["stdout"]) or {}
        if got.get("status") == "failure_found" and not (got.get("line_text") or "").startswith("KeyError"):
            return f"said {got.get('line_text')!r}"
        return "" if any("capped" in n for n in got.get("notes") or []) else "the capped line is not said"

    logs = root / "logs"
    logs.mkdir()
    (logs / "one-line-100mb.log").write_bytes(b"x" * 100_000_000 + b"\n" + TRACEBACK.encode())
    with open(logs / "million-lines.log", "w") as fh:
        for _ in range(100):
            fh.write("step ok\n" * 10_000)
        fh.write(TRACEBACK)
    forms = {"utf16.log": TRACEBACK.encode("utf-16"), "utf16le-nobom.log": TRACEBACK.encode("utf-16-le"),
             "utf32.log": TRACEBACK.encode("utf-32"), "job.log.gz": gzip.compress(TRACEBACK.encode()),
             "job.log.bz2": bz2.compress(TRACEBACK.encode()), "job.log.xz": lzma.compress(TRACEBACK.encode()),
             "utf16.log.gz": gzip.compress(("step ok\n" * 1000 + TRACEBACK).encode("utf-16"))}
    for name, data in forms.items():
        (logs / name).write_bytes(data)
    (logs / "binary.log").write_bytes(os.urandom(200_000))
    whole = gzip.compress(os.urandom(100_000))
    (logs / "corrupt.log.gz").write_bytes(whole[:10] + b"\xff" * 100)
    for name in ("one-line-100mb.log",):
        cases.append((f"diagnose/{name}", ["diagnose", str(logs / name), "--method", "rules", "--json"], {0}, capped_said))
    for name in ("million-lines.log", *forms):
        cases.append((f"diagnose/{name}", ["diagnose", str(logs / name), "--method", "rules", "--json"], {0},
                      found_keyerror))
    for name in ("binary.log", "corrupt.log.gz"):
        cases.append((f"diagnose/{name}", ["diagnose", str(logs / name), "--method", "rules"], {2}, said_unreadable))
    (logs / "train.log.gz").write_bytes(gzip.compress(PROGRESS.encode("utf-16")))

    def tracked(r: dict[str, Any]) -> str:
        got = _json(r["stdout"]) or {}
        step = (got.get("step_time") or {}).get("value") or 0  # the track result's wire model (agents/tracker/wire.py)
        return "" if got.get("signal") and abs(step - 0.5) < 1e-6 else f"read {got}"

    cases.append(("track/utf16.log.gz", ["track", str(logs / "train.log.gz"), "--json"], {0}, tracked))
    cases.append(("track/binary.log", ["track", str(logs / "binary.log")], {2}, said_unreadable))

    hist = root / "history.jsonl"
    row = {"job_id": "", "gpus": 8, "metadata": {"model_name": "gpt-2", "task_type": "causal-lm",
                                                  "dataset": "openwebtext", "iterations": 1000, "iteration_type": "steps"},
           "outcome": {"duration": 3600, "final_status": "completed"}}
    with open(hist, "wb") as out:
        for i in range(3000):
            if i % 500 == 7:
                out.write(b'{"job_id": "bad\xff"}\n')
            elif i == 1000:
                out.write(b'{"job_id": "huge", "pad": "' + b"x" * 2_000_000 + b'"}\n')
            elif i == 1500:
                out.write(b"[" * 100_000 + b"]" * 100_000 + b"\n")
            else:
                out.write(json.dumps(row | {"job_id": f"j{i % 2900}"}).encode() + b"\n")

    def ingest_counted(r: dict[str, Any]) -> str:
        got = _json(r["stdout"]) or {}
        parts = got.get("ingested", 0) + got.get("duplicates", 0) + got.get("errors_total", 0) + got.get("skipped_total", 0)
        if got.get("rows") != 3000 or parts != 3000:
            return f"rows {got.get('rows')}, accounted {parts}"
        # 8 unreadable rows (6 non-UTF-8, a 2 MB line, a 100,000-deep JSON); j0..j99 again at the end, of
        # which j7 was never stored (its first row was unreadable): 99 duplicates refused, 2,893 stored
        return "" if got.get("duplicates") == 99 and got.get("ingested") == 2893 and got.get("errors_total") == 8 else (
            f"stored {got.get('ingested')}, duplicates {got.get('duplicates')}")

    cases.append(("history-ingest/hostile-rows", ["history", "ingest", str(hist), "--history-dir",
                                                  str(root / "hist-data"), "--json"], {1}, ingest_counted))
    return cases


def bench_sizes(hang_s: float, scratch: Path) -> dict[str, Any]:
    cli = str(Path(sys.executable).with_name("schedmate"))
    out: dict[str, Any] = {}
    home = scratch / "home"
    os.environ["SCHEDMATE_HOME"] = str(home)  # the children's history and caches, never the user's
    for name, argv, codes, judge in _make_size_inputs(scratch / "sizes"):
        r = _child([cli, *argv], hang_s)
        crashed = not r["hung"] and (r["traceback"] or r["rc"] not in codes)
        wrong = "" if r["hung"] or crashed else judge(r)
        out[name] = {"rc": r["rc"], "s": r["s"], "rss_mb": r["rss_mb"], "hung": r["hung"], "crashed": crashed,
                     "wrong_but_confident": wrong, "stderr_tail": r["stderr"][-300:] if crashed else ""}
        print(f"  {name}: rc {r['rc']}, {r['s']} s, {r['rss_mb']} MB{' HUNG' if r['hung'] else ''}"
              f"{' CRASH' if crashed else ''}{' WRONG: ' + wrong if wrong else ''}", file=sys.stderr, flush=True)
    return {"inputs": len(out), "crashes": sum(v["crashed"] for v in out.values()),
            "hangs": sum(v["hung"] for v in out.values()),
            "wrong_but_confident": sum(bool(v["wrong_but_confident"]) for v in out.values()),
            "peak_rss_mb": max(v["rss_mb"] for v in out.values()), "cases": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=int(os.environ.get("FUZZ_EXAMPLES", 300)),
                    help="Examples per fuzz target (default 300, or FUZZ_EXAMPLES).")
    ap.add_argument("--adversarial", type=int, default=150, help="Adversarial logs per method.")
    ap.add_argument("--methods", default="rules,learned", help="Failure Handler methods for the adversarial logs.")
    ap.add_argument("--redis-runs", type=int, default=3)
    ap.add_argument("--hang-s", type=float, default=30.0, help="An input slower than this counts as a hang.")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--only-sizes", action="store_true", help="Run section 5 (sizes/encodings/compressions) alone.")
    ap.add_argument("--size-hang-s", type=float, default=120.0,
                    help="Section 5's hang bound: each input is a fresh CLI process (imports and model load included).")
    ap.add_argument("--no-sizes", action="store_true", help="Skip section 5.")
    args = ap.parse_args()
    if args.only_sizes:
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="bench-fuzz-") as tmp:
            sizes = bench_sizes(args.size_hang_s, Path(tmp))
        doc = {"command": "bench/bench_fuzz.py " + " ".join(sys.argv[1:]), "sizes": sizes, "hang_s": args.size_hang_s,
               "wall_s": round(time.perf_counter() - t0, 1)}
        out = args.out.with_name("fuzz_sizes.json") if args.out == RESULTS else args.out
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(doc, indent=2))
        print(f"fuzz sizes: {sizes['inputs']} inputs, crashes {sizes['crashes']}, hangs {sizes['hangs']} "
              f"(> {args.size_hang_s:.0f} s), wrong-but-confident {sizes['wrong_but_confident']}, peak RSS "
              f"{sizes['peak_rss_mb']} MB ({doc['wall_s']:.0f} s) -> {out}")
        return

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
        all_sizes: dict[str, Any] | None = None if args.no_sizes else bench_sizes(args.size_hang_s, scratch)
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
        "logs": logs, "traces": traces, "adversarial": adversarial, "redis": redis, "sizes": all_sizes,
        "hang_s": args.hang_s, "wall_s": round(time.perf_counter() - t0, 1),
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2))
    adv = ", ".join(f"{m} {a['wrong_but_confident']}/{a['inputs']}" for m, a in adversarial.items())
    print(f"fuzz: {doc['inputs']} inputs, crashes {doc['crashes']}, hangs {doc['hangs']} (> {args.hang_s:.0f} s); "
          f"wrong-but-confident on adversarial logs: {adv} (confidently infrastructure "
          f"{doc['confident_infrastructure']}); plans touching nodes {doc['plans_touching_nodes']}; "
          f"Redis killed {redis['runs']}x: {redis['lost']} of {redis['acknowledged']} acknowledged records lost; "
          + (f"sizes/encodings/compressions: {all_sizes['inputs']} inputs, crashes {all_sizes['crashes']}, hangs "
             f"{all_sizes['hangs']} (> {args.size_hang_s:.0f} s), wrong-but-confident "
             f"{all_sizes['wrong_but_confident']}, peak RSS {all_sizes['peak_rss_mb']} MB " if all_sizes else "")
          + f"({doc['wall_s']:.0f} s) -> {args.out}")


if __name__ == "__main__":
    main()
