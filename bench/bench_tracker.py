"""Metric Tracker benchmark (spec §3.4): per-log latency, success rate and RMSRE of the step time
on generated logs with ground truth. Writes bench/results/tracker.json, prints one summary line.

    .venv/bin/python bench/bench_tracker.py [--n 300] [--seed 7] [--padded 0.5] [--max-lines 20000]
                                            [--llm none|local] [--n-lines 20]
                                            [--classify auto|always] [--local-corpus] [--pure-llm]

Corpus: `schedmate.synthetic.logs.generate_corpus` (labels.jsonl with per-progress-line truth)
when importable, else a minimal local generator (five formats, optional noise padding); the
JSON says which. As in the paper, a share of the logs is padded with irrelevant content.

Per log, one `MetricTracker.observe(path)` (newest first, stop after N lines); the tracker and
its classifier are shared by all logs, as in production (one per worker), so the template
caches warm up over the run; the first log's latency is reported apart.

Truth and scoring. A log "has signal" when its truth lists at least one progress line. The
target is the mean true value over its last N progress lines (the "current" step time the
tracker is asked for). Success (spec: extraction succeeded) = the report gives a step time, or a
rate in the truth's unit (samples/s: DeepSpeed's timer logs only that). Logged tokens/s are not
scored (torchtitan's `tps` is per GPU, the truth's rate is global). RMSRE =
sqrt(mean(((estimate − target)/target)²)) over successes: for step time where reported, and for
"rate" over all successes, on the rate a scheduler would use (`registry._throughput`: a printed
step time as steps/s against 1/target, else a logged samples/s against the target throughput,
else a step time derived from line stamps). Logs without progress lines must yield NoSignal (else: a false signal).

`--pure-llm` adds the paper's pure-LLM baseline as a column (`pure_llm`): the local LLM reads each
log's tail alone (`agents.tracker.llm_baseline`); its step time (or 1/it/s) is scored against the
same target, as answered (`raw`) and after validation against the tail's lines (`validated`).
One LLM call per log: slow on CPU (tens of seconds per call on 2 busy cores), so use a small --n.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "tracker.json"


@dataclass
class Case:
    id: str
    path: Path
    framework: str
    padded: bool
    target_step_time: float | None
    target_throughput: float | None  # samples/s
    has_signal: bool
    seq_length: int | None = None


# -- corpus -------------------------------------------------------------------------------------


def corpus_from_logcorpus(out: Path, n: int, seed: int, padded: float, max_lines: int, n_lines: int) -> tuple[list[Case], str]:
    from schedmate.synthetic.logs import generate_corpus, iter_labels

    generate_corpus(out, n, seed, max_lines=max_lines, padded_fraction=padded)
    cases = []
    for lab in iter_labels(out):
        tr = lab.truth
        has = len(tr.progress_lines) > 0
        st = float(sum(tr.step_time[-n_lines:]) / len(tr.step_time[-n_lines:])) if has else None
        tp = float(sum(tr.throughput[-n_lines:]) / len(tr.throughput[-n_lines:])) if has else None
        cases.append(
            Case(lab.id, out / (lab.path or ""), str(lab.framework) + "/" + lab.variant,
                 (lab.spec.noise_level or 0.0) >= 0.9, st, tp, has, tr.seq_length)
        )  # fmt: skip
    return cases, "schedmate.synthetic.logs"


_LOCAL_FORMATS = {
    "megatron": lambda i, st, loss: (
        f" iteration {i:8d}/  100000 | consumed samples: {i * 512:12d} | elapsed time per iteration (ms): "
        f"{st * 1000:.1f} | learning rate: 1.0E-04 | global batch size:   512 | lm loss: {loss:.6E} | loss scale: 1.0 |"
    ),
    "hf_tqdm": lambda i, st, loss: f" {i * 100 // 100000:2d}%|          | {i}/100000 [00:10<10:00:00,  {st:.2f}s/it]",
    "lightning": lambda i, st, loss: f"Epoch 0:  5%|▌         | {i}/100000 [00:10<10:00:00,  {1 / st:.2f}it/s, loss={loss:.3g}, v_num=0]",
    "key_value": lambda i, st, loss: f"step {i} loss {loss:.4f} time {st:.3f}s",
    "nanogpt": lambda i, st, loss: f"iter {i}: loss {loss:.4f}, time {st * 1000:.2f}ms, mfu 40.00%",
}
_LOCAL_NOISE = [
    "gpu-node-{a:02d}:{b}:{b} [0] NCCL INFO Channel {c:02d}/04 :    0   1   2   3",
    "/opt/conda/lib/python3.10/site-packages/torch/utils/data/dataloader.py:{b}: UserWarning: worker {a} is slow",
    "sample {b}: the {w} {w2} over the {w3} while {w} learns",
    "saving checkpoint at iteration {b} to /ckpt/iter_{b:07d}",
]
_WORDS = "cat river quantum gradient castle dragon memory garden winter signal engine forest".split()


def corpus_local(out: Path, n: int, seed: int, padded: float, max_lines: int, n_lines: int) -> tuple[list[Case], str]:
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    cases = []
    for k in range(n):
        fmt = rng.choice(list(_LOCAL_FORMATS))
        steps = rng.randint(5, max(6, max_lines // 4))
        base = rng.uniform(0.05, 3.0)
        pad = rng.random() < padded
        no_progress = rng.random() < 0.1
        lines, truth = [], []
        for i in range(1, steps + 1):
            st = base * (3.0 if i <= 5 else 1.0) * rng.uniform(0.97, 1.03)
            if not no_progress:
                lines.append(_LOCAL_FORMATS[fmt](i, st, 2 + 3 / i))
                truth.append(st)
            for _ in range(rng.randint(15, 40) if pad else rng.randint(0, 2)):
                lines.append(rng.choice(_LOCAL_NOISE).format(
                    a=rng.randrange(64), b=rng.randrange(10**6), c=rng.randrange(4),
                    w=rng.choice(_WORDS), w2=rng.choice(_WORDS), w3=rng.choice(_WORDS)))  # fmt: skip
        path = out / f"log-{k:05d}.log"
        path.write_text("\n".join(lines) + "\n")
        tail = truth[-n_lines:]
        cases.append(Case(path.stem, path, fmt, pad, statistics.fmean(tail) if tail else None, None, bool(truth)))
    return cases, "local minimal generator (bench/bench_tracker.py; schedmate.synthetic.logs not importable)"


# -- run ----------------------------------------------------------------------------------------


def _pure_llm_row(llm, case: Case) -> dict:
    """The pure-LLM baseline on one log: step time as answered and as validated, with errors."""
    from schedmate.agents.tracker.llm_baseline import llm_tail_metrics

    t = time.perf_counter()
    reading = llm_tail_metrics(llm, case.path)
    out: dict = {"latency_s": time.perf_counter() - t, "error": reading.error}
    for name, st, rate, unit in (
        ("raw", *((a.step_time_s, a.throughput, a.throughput_unit) if (a := reading.raw) else (None, None, None))),
        ("validated", *((v.step_time_s, v.throughput, v.throughput_unit) if (v := reading.validated) else (None, None, None))),
    ):
        if (st is None or st <= 0) and rate and unit and unit.lower() in ("it/s", "steps/s", "step/s"):
            st = 1.0 / rate
        out[f"{name}_step_time_s"] = st if st and st > 0 else None
        if out[f"{name}_step_time_s"] is not None and case.target_step_time:
            out[f"{name}_err"] = (out[f"{name}_step_time_s"] - case.target_step_time) / case.target_step_time
    return out


def _summarise_pure_llm(rows: list[dict]) -> dict | None:
    sel = [r for r in rows if "pure_llm" in r and r["has_signal"]]
    if not sel:
        return None
    out: dict = {"logs_with_progress": len(sel),
                 "latency_mean_s": round(statistics.fmean(r["pure_llm"]["latency_s"] for r in sel), 3)}  # fmt: skip
    for name in ("raw", "validated"):
        errs = [r["pure_llm"][f"{name}_err"] for r in sel if f"{name}_err" in r["pure_llm"]]
        out[name] = {
            "answered": len(errs),
            "within_10pct": round(sum(abs(e) <= 0.1 for e in errs) / len(sel), 4),
            "within_20pct": round(sum(abs(e) <= 0.2 for e in errs) / len(sel), 4),
            "rmsre_step_time": _rmsre(errs),
        }
    tracker_ok = [r for r in sel if abs(r.get("step_time_err", math.inf)) <= 0.1]
    out["tracker_within_10pct_same_logs"] = round(len(tracker_ok) / len(sel), 4)
    return out


def _rmsre(errors: list[float]) -> float | None:
    return round(math.sqrt(statistics.fmean(e * e for e in errors)), 4) if errors else None


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--padded", type=float, default=0.5, help="share of logs padded with noise")
    parser.add_argument("--max-lines", type=int, default=20_000)
    parser.add_argument("--n-lines", type=int, default=20, help="the tracker's N (newest lines used)")
    parser.add_argument("--llm", choices=("none", "local"), default="none")
    parser.add_argument("--classify", choices=("auto", "always"), default="auto")
    parser.add_argument("--local-corpus", action="store_true", help="force the minimal local generator")
    parser.add_argument("--pure-llm", action="store_true", help="also run the pure-LLM baseline (local LLM, slow)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    from schedmate.agents.tracker import MetricTracker, NoSignal
    from schedmate.embeddings.classifier import LineClassifier
    from schedmate.embeddings.embedder import make_embedder

    tmp = Path(tempfile.mkdtemp(prefix="bench-tracker-"))
    t0 = time.perf_counter()
    try:
        if args.local_corpus:
            raise ImportError("forced")
        cases, source = corpus_from_logcorpus(tmp, args.n, args.seed, args.padded, args.max_lines, args.n_lines)
    except ImportError:
        cases, source = corpus_local(tmp, args.n, args.seed, args.padded, args.max_lines, args.n_lines)
    gen_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    classifier = LineClassifier(make_embedder())
    load_s = time.perf_counter() - t0

    llm_ctx = None
    llm = None
    if args.llm == "local" or args.pure_llm:
        from schedmate.llm import LLMConfig, open_chat_model

        llm_ctx = open_chat_model(LLMConfig(max_tokens=128, timeout_s=180))
        llm = llm_ctx.__enter__()
    tracker = MetricTracker(classifier, llm if args.llm == "local" else None, max_lines=args.n_lines, classify=args.classify)

    rows = []
    try:
        for case in cases:
            t = time.perf_counter()
            result = tracker.observe(case.path)
            dt = time.perf_counter() - t
            row: dict = {"id": case.id, "framework": case.framework, "padded": case.padded, "latency_s": dt,
                         "has_signal": case.has_signal, "signal": bool(result), "bytes": os.path.getsize(case.path),
                         "lines_read": result.stats.lines_read, "llm_calls": result.stats.llm_calls}  # fmt: skip
            if not isinstance(result, NoSignal):
                row["method"] = result.method
                st = result.step_time_s
                row["step_time_s"] = st
                row["target_step_time_s"] = case.target_step_time
                row["format"] = result.step_time.format if result.step_time else None
                tp = result.throughput
                derived = result.step_time is not None and result.step_time.derived
                if st is not None and case.target_step_time:
                    row["step_time_err"] = (st - case.target_step_time) / case.target_step_time
                # the rate a scheduler uses (registry._throughput): printed step time, else the
                # logged rate, else the stamp-derived step time
                if tp is not None and tp.unit == "samples/s" and case.target_throughput and (st is None or derived):
                    row["rate_err"] = (tp.value - case.target_throughput) / case.target_throughput
                elif st is not None and case.target_step_time:
                    row["rate_err"] = (1 / st - 1 / case.target_step_time) / (1 / case.target_step_time)
            else:
                row["reason"] = result.reason
            if args.pure_llm and llm is not None:
                row["pure_llm"] = _pure_llm_row(llm, case)
            rows.append(row)
    finally:
        if llm_ctx is not None:
            llm_ctx.__exit__(None, None, None)

    def summarise(sel: list[dict]) -> dict:
        with_signal = [r for r in sel if r["has_signal"]]
        ok = [r for r in with_signal if "rate_err" in r]
        st_ok = [r for r in with_signal if "step_time_err" in r]
        lat = [r["latency_s"] for r in sel]
        return {
            "logs": len(sel),
            "logs_with_progress": len(with_signal),
            "success_rate": round(len(ok) / len(with_signal), 4) if with_signal else None,
            "step_time_success_rate": round(len(st_ok) / len(with_signal), 4) if with_signal else None,
            "rmsre_step_time": _rmsre([r["step_time_err"] for r in st_ok]),
            "rmsre_rate": _rmsre([r["rate_err"] for r in ok]),
            "within_10pct": round(sum(abs(r["rate_err"]) <= 0.1 for r in ok) / len(ok), 4) if ok else None,
            "false_signal": sum(r["signal"] for r in sel if not r["has_signal"]),
            "latency_mean_s": round(statistics.fmean(lat), 4) if lat else None,
            "latency_p50_s": round(_pct(lat, 0.5), 4) if lat else None,
            "latency_p95_s": round(_pct(lat, 0.95), 4) if lat else None,
            "latency_max_s": round(max(lat), 4) if lat else None,
        }

    frameworks = sorted({r["framework"] for r in rows})
    failures = [
        {k: r.get(k) for k in ("id", "framework", "padded", "reason", "rate_err")}
        for r in rows if r["has_signal"] and "rate_err" not in r or abs(r.get("rate_err", 0)) > 0.25
    ][:30]  # fmt: skip
    result = {
        "corpus": source,
        "n": args.n,
        "seed": args.seed,
        "padded_fraction": args.padded,
        "max_lines": args.max_lines,
        "tracker_n": args.n_lines,
        "llm": args.llm,
        "classify": args.classify,
        "corpus_generation_s": round(gen_s, 2),
        "embedder_and_classifier_load_s": round(load_s, 2),
        "first_log_latency_s": round(rows[0]["latency_s"], 4) if rows else None,
        "all": summarise(rows),
        "standard": summarise([r for r in rows if not r["padded"]]),
        "padded": summarise([r for r in rows if r["padded"]]),
        "by_framework": {fw: summarise([r for r in rows if r["framework"] == fw]) for fw in frameworks},
        "llm_calls": sum(r["llm_calls"] for r in rows),
        "pure_llm": _summarise_pure_llm(rows),
        "misses_or_large_errors": failures,
        "logs": [{k: (round(v, 5) if isinstance(v, float) else v) for k, v in r.items()} for r in rows],
        "cpu_count": os.cpu_count(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "note": "paper (Qwen-2.5-7B, 1,000 logs, 50% padded): 84.3% success, RMSRE 0.42, 8.7 s/log",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    a = result["all"]
    print(
        f"tracker: {a['logs']} logs ({source.split(' ')[0]}, {args.padded:.0%} padded, llm={args.llm}, "
        f"classify={args.classify}): "
        f"success {a['success_rate']:.1%} (step time {a['step_time_success_rate']:.1%}), "
        f"RMSRE step time {a['rmsre_step_time']}, rate {a['rmsre_rate']}, false signals {a['false_signal']}, "
        f"latency p50 {a['latency_p50_s'] * 1000:.0f} ms / p95 {a['latency_p95_s'] * 1000:.0f} ms -> {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}",
        file=sys.stdout,
    )
    if result["pure_llm"] is not None:
        p = result["pure_llm"]
        print(f"pure-LLM baseline: step time within 10% raw {p['raw']['within_10pct']:.1%}, validated "
              f"{p['validated']['within_10pct']:.1%} (tracker on the same logs {p['tracker_within_10pct_same_logs']:.1%}), "
              f"{p['latency_mean_s']:.1f} s/log")  # fmt: skip


if __name__ == "__main__":
    main()
