"""The advisor's read budget: peak RSS and time flat against repository size (issue 27).

    python bench/bench_advisor_budget.py --out results/advisor_budget        # ~1 min on 2 cores

Each point is a fresh child process (its own peak RSS, `VmHWM`) running the shipped static
extractor (`extract_static`, default `budget.DEFAULT_BUDGET`) on a generated repository: a
training script plus one Python file of N MB that the script imports, and a "many files" shape
(thousands of small modules). The baseline in the same run is the same extraction with the
budget lifted (caps of 1 GB), measured only up to `--unbudgeted-max-mb` because past that it is
the unbounded growth the issue reported (7-8 GB at 50 MB). The end-to-end check runs
`schedmate advise` (the CLI a user runs) on the 50 MB repository.
Writes JSON to --out and prints one summary line.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from childproc import run_child  # bench/childproc.py: the shared child runner (run as `python bench/X.py`)

TRAIN = """import argparse
import helpers
p = argparse.ArgumentParser()
p.add_argument("--model", default="resnet50")
p.add_argument("--epochs", type=int, default=90)
p.add_argument("--batch-size", type=int, default=256)
args = p.parse_args()
"""

CHILD = """
import json, sys, time
from schedmate.agents.advisor import budget
from schedmate.agents.advisor.static_extractor import extract_static
big = 10**9
limits = None if sys.argv[2] == "budget" else budget.Budget(file_bytes=big, repo_bytes=big, files=10**6, seconds=1e6)
t0 = time.perf_counter()
res = extract_static(sys.argv[1], "python train.py", limits=limits)
print(json.dumps({"s": time.perf_counter() - t0, "batch_size": res.fields.get("batch_size"),
                  "skipped": len(res.skipped)}))
"""


def _write_module(path: Path, size: int) -> None:
    """Dense, valid Python of about `size` bytes (the worst case for AST memory per byte), written
    in chunks: this process stays small, so a forked child's peak RSS is its own."""
    chunk = "def f{i}(a, b=3):\n    x = a + b * {i}\n    return [x, 'abc', {{'k': x}}]\n"
    with open(path, "w") as fh:
        i = 0
        while fh.tell() < size:
            fh.write("".join(chunk.format(i=j) for j in range(i, i + 1000)))
            i += 1000


def make_repo(root: Path, mb: float, many: int = 0) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "train.py").write_text(TRAIN)
    _write_module(root / "helpers.py", int(mb * 1_000_000))
    for i in range(many):
        sub = root / f"pkg{i // 500}"
        sub.mkdir(exist_ok=True)
        (sub / f"m{i}.py").write_text(f"import argparse\nVALUE_{i} = {i}\n# add_argument\n")
    return root


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path("results/advisor_budget"))
    p.add_argument("--sizes-mb", type=float, nargs="+", default=[0.05, 1, 5, 20, 50])
    p.add_argument("--many-files", type=int, default=5000)
    p.add_argument("--unbudgeted-max-mb", type=float, default=1.0)
    p.add_argument("--timeout", type=float, default=120.0)
    args = p.parse_args(argv)
    py = sys.executable
    points: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="schedmate-budget-") as tmp:
        for mb in args.sizes_mb:
            repo = make_repo(Path(tmp) / f"r{mb}", mb)
            for mode in ("budget", "unbudgeted"):
                if mode == "unbudgeted" and mb > args.unbudgeted_max_mb:
                    continue
                r = _measure([py, "-c", CHILD, str(repo), mode], args.timeout)
                points.append({"shape": "one big module", "mb": mb, "mode": mode, **r})
                print(f"{mode:10s} {mb:6.2f} MB: {r['wall_s']:6.2f} s, {r['peak_rss_mb']} MB RSS", file=sys.stderr)
        repo = make_repo(Path(tmp) / "many", 0.01, many=args.many_files)
        r = _measure([py, "-c", CHILD, str(repo), "budget"], args.timeout)
        points.append({"shape": f"{args.many_files} small modules", "mb": None, "mode": "budget", **r})
        big = max(args.sizes_mb)
        cli = Path(py).with_name("schedmate")
        e2e = _measure([str(cli), "advise", str(Path(tmp) / f"r{big}"), "--cmd", "python train.py", "--json"],
                       args.timeout)
    budgeted = [pt for pt in points if pt["mode"] == "budget" and pt["shape"] == "one big module"]
    small, large = budgeted[0], budgeted[-1]
    report = {
        "points": points, "cli_advise": {"mb": big, **e2e},
        "rss_ratio_largest_vs_smallest": round(_num(large["peak_rss_mb"]) / _num(small["peak_rss_mb"]), 2),
        "time_ratio_largest_vs_smallest": round(_num(large["wall_s"]) / max(_num(small["wall_s"]), 1e-3), 2),
        "crashes": sum(1 for pt in [*points, e2e] if pt["rc"] not in (0, None) and not pt["hung"]),
        "hangs": sum(1 for pt in [*points, e2e] if pt["hung"]),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "advisor_budget.json").write_text(json.dumps(report, indent=2))
    print(f"advisor budget: {small['mb']} MB -> {large['mb']} MB repository: RSS {small['peak_rss_mb']} -> "
          f"{large['peak_rss_mb']} MB (x{report['rss_ratio_largest_vs_smallest']}), time {small['wall_s']} -> "
          f"{large['wall_s']} s; `schedmate advise` on {big} MB: {e2e['wall_s']} s, {e2e['peak_rss_mb']} MB RSS; "
          f"crashes {report['crashes']}, hangs {report['hangs']}")
    return 0


def _num(x: object) -> float:
    assert isinstance(x, int | float)
    return float(x)


def _measure(argv: list[str], timeout: float) -> dict[str, object]:
    """`argv` in a child: wall time, its own peak RSS (MB), hung, rc, last JSON line."""
    run = run_child(argv, timeout)
    text = run.stdout
    last = next((ln for ln in reversed(text.splitlines()) if ln.startswith("{")), None)
    try:
        result = json.loads(last) if last else (json.loads(text) if text.strip().startswith("{") else None)
    except json.JSONDecodeError:
        result = None
    return {"wall_s": run.wall_s, "peak_rss_mb": run.peak_rss_mb, "hung": run.hung, "rc": run.rc, "result": result}

if __name__ == "__main__":
    raise SystemExit(main())
