"""Generation speed of the labelled log corpus: lines/s and MB/s per framework, peak RSS.

    python bench/bench_logcorpus.py --lines 1000000 [--frameworks megatron,hf_trainer] [--out DIR]

Each log is streamed to a file under --out (a temporary directory by default), status `running`
(no failure tail), default noise and variants drawn from the seed. With `--hard`, also one failed
log per framework with every hard case (`synthetic.logs.hard`: hang, flood, restart, decoys, ...),
whose cascade takes most of the file.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from schedmate.synthetic.logs import Framework, HardCase, LogSpec, generate_log


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--frameworks", default=",".join(f.value for f in Framework))
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--hard", action="store_true", help="also time failed logs with every hard case")
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="logcorpus-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    total_lines, total_s = 0, 0.0
    for fw in args.frameworks.split(","):
        path = out / f"{fw}.log"
        t0 = time.perf_counter()
        _, lab = generate_log(LogSpec(framework=fw, n_lines=args.lines, status="running"), args.seed, out=path)
        dt = time.perf_counter() - t0
        if args.hard:
            t1 = time.perf_counter()
            _, hard = generate_log(LogSpec(framework=fw, n_lines=args.lines, status="failed", hard=tuple(HardCase)), args.seed,
                                   out=out / f"{fw}-hard.log")
            dh = time.perf_counter() - t1
            f = hard.failure
            print(f"{fw:11s} hard     lines={hard.n_lines:,} s={dh:.2f} lines/s={hard.n_lines / dh:,.0f} "
                  f"applied={[str(h) for h in f.hard] if f else []} root_from_end={hard.n_lines - f.first_line if f else None}")
        total_lines += lab.n_lines
        total_s += dt
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{fw:11s} {lab.variant:8s} cr={lab.spec.carriage_returns!s:5s} noise={lab.spec.noise_level:.2f} "
              f"lines={lab.n_lines:,} MB={lab.n_bytes / 1e6:.1f} s={dt:.2f} lines/s={lab.n_lines / dt:,.0f} "
              f"MB/s={lab.n_bytes / 1e6 / dt:.1f} peak_rss_MB={rss:.0f}")
        path.unlink()
    print(f"all: {total_lines:,} lines in {total_s:.2f} s = {total_lines / total_s:,.0f} lines/s")


if __name__ == "__main__":
    main()
