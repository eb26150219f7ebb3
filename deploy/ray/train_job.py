"""A short CPU training job: least-squares regression by mini-batch SGD, with real progress lines.

What the Ray executor runs as a job (as a subprocess of a Ray task, its stdout the job's log):
one `step N/M loss X step_time Y` line per step, which the Metric Tracker reads, and a checkpoint
(the step and the weights) written atomically after each step, from which a preempted run
resumes. Each step does its gradient work, then sleeps out the rest of `--step-time` so a job
lasts a known time without taking a core from its neighbours. A too-large learning rate diverges
and numpy's overflow check ends the job with a real traceback (exit 1), as training does.

    python -m schedmate.deploy.ray.train_job --steps 40 --step-time 0.1 --checkpoint ck.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np


def _load(path: Path | None, dim: int) -> tuple[int, np.ndarray]:
    if path is None or not path.is_file():
        return 0, np.zeros(dim)
    state = json.loads(path.read_text())
    return int(state["step"]), np.asarray(state["w"], dtype=float)


def _save(path: Path, step: int, w: np.ndarray) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps({"step": step, "w": w.tolist()}))
    os.replace(tmp, path)


def train(steps: int, step_time: float, checkpoint: Path | None, *, lr: float = 0.05, seed: int = 0,
          dim: int = 32, batch: int = 256) -> int:
    """Run (or resume) the job; returns the exit status."""
    np.seterr(all="raise")  # divergence is an error, not a silent NaN
    rng = np.random.default_rng(seed)
    w_true = rng.normal(size=dim)
    start, w = _load(checkpoint, dim)
    where = os.environ.get("SCHEDMATE_PLACEMENT", "")
    print(f"job start: steps {steps}, resumed from step {start}" + (f", placement {where}" if where else ""), flush=True)
    for step in range(start + 1, steps + 1):
        t0 = time.perf_counter()
        x = np.random.default_rng(seed * 1_000_003 + step).normal(size=(batch, dim))
        y = x @ w_true
        err = x @ w - y
        loss = float(err @ err) / batch
        w = w - lr * 2.0 * (x.T @ err) / batch
        spare = step_time - (time.perf_counter() - t0)
        if spare > 0:
            time.sleep(spare)
        print(f"step {step}/{steps} loss {loss:.6f} step_time {time.perf_counter() - t0:.4f}", flush=True)
        if checkpoint is not None:  # after the line: a step is never lost, at most one is redone
            _save(checkpoint, step, w)
    print(f"job done: {steps} steps", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--step-time", type=float, default=0.1)
    p.add_argument("--checkpoint", type=Path, default=None)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    if a.steps < 1 or a.step_time < 0:
        p.error("--steps must be >= 1 and --step-time >= 0")
    return train(a.steps, a.step_time, a.checkpoint, lr=a.lr, seed=a.seed)


if __name__ == "__main__":
    sys.exit(main())
