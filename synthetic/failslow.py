"""Labelled fail-slow episodes: training logs with an injected sustained slowdown (or none).

Each episode is one log rendered from a per-step series (`synthetic.logs.series.Series`: the
training-log generator's step times with warm-up, log-normal jitter and rare spikes, and its loss
curve), plus what real logs have that a naive detector trips on:

- **warm-up** (first steps several times slower), **eval pauses** and **checkpoint stalls** (the
  next progress line's average carries the pause; most are announced by a "Running evaluation" /
  "saving checkpoint" line, some are not: an isolated long step), **restarts** (a crash, then
  "resuming from checkpoint", the step counter goes back and warm-up starts again), slow drift
  of a few percent, launcher noise lines;
- **slowdowns** of 5-50% from a random step on, to the end: job-wide (every rank slower) or one
  rank (a degraded GPU/NIC: that rank's own timer slows, and the job with it).

Formats: Megatron `iteration N/ T | ... elapsed time per iteration (ms)`, nanoGPT `iter N: loss,
time ms`, key/value `step N | loss | step_time`, tqdm bars (rate only), per-rank lines
(`worker-1: [rank3]: step N time 0.52s`, each rank's own compute time) and DeepSpeed wall-clock
breakdowns (`[Rank 3] time (ms) | fwd_microstep: .. | bwd_microstep: ..` for every rank beside the
job-wide `samples/sec` line).

Labels (`labels.jsonl`, one per log): kind (slow / healthy), factor, scope (job / rank), rank,
host, onset step / line / time, the simulated job hours, and `(line, step, time)` of the progress
lines after the onset (for detection delay in steps and seconds). Deterministic in (seed, index).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np

from schedmate.synthetic.logs.formats import tqdm_line
from schedmate.synthetic.logs.series import Series, SeriesParams

__all__ = ["DEV_SEED", "EpisodeLabel", "GenConfig", "generate_episode", "generate_set"]

DEV_SEED = 17_000  # the detector's parameters were chosen on this seed only; scoring uses others

FORMATS = ("megatron", "nanogpt", "keyvalue", "tqdm", "rankprefix", "ds_breakdown")
RANK_FORMATS = ("rankprefix", "ds_breakdown")

_NOISE = (
    "[INFO] dataloader: prefetching shard {n} of {m}",
    "NCCL INFO Channel {n}/{m} : 0[0] -> 1[1] via P2P/IPC",
    "[WARNING] torch.distributed: process group heartbeat ok ({n} ms)",
    "grad_norm spike handled by clipping at step {n}",
    "[INFO] memory: allocated {n} MB, reserved {m} MB",
)


@dataclass(frozen=True)
class GenConfig:
    """How many episodes of each kind, and the ranges they are drawn from."""

    n_slow: int = 120
    n_healthy: int = 60
    rank_share: float = 0.5  # slow episodes on one rank (the rest job-wide), when the format has ranks
    factor_range: tuple[float, float] = (1.05, 1.5)
    min_events: int = 300
    max_events: int = 1500
    restart_prob: float = 0.3
    announced_pause_prob: float = 0.8  # share of pauses announced by a line (the rest: silent long steps)


@dataclass
class EpisodeLabel:
    id: str
    file: str
    kind: str  # slow | healthy
    format: str
    log_interval: int
    base_step_time_s: float
    hours: float
    ranks: int  # ranks that print their own times (0: job-wide lines only)
    factor: float | None = None
    scope: str | None = None  # job | rank
    rank: int | None = None
    host: str | None = None
    onset_step: int | None = None
    onset_line: int | None = None
    onset_time_s: float | None = None
    after: list[tuple[int, int, float]] = field(default_factory=list)  # (line, step, time) after the onset


_T = TypeVar("_T")


def _pick(rng: np.random.Generator, seq: tuple[_T, ...]) -> _T:
    return seq[int(rng.integers(len(seq)))]


def generate_episode(seed: int, index: int, *, slow: bool, cfg: GenConfig = GenConfig(),
                     fmt: str | None = None, scope: str | None = None) -> tuple[list[str], EpisodeLabel]:
    """One log (lines without newlines) and its label."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, index, 7]))
    fmt = fmt or str(_pick(rng, FORMATS))
    ranked = fmt in RANK_FORMATS
    n_ranks = int(_pick(rng, (4, 8, 8, 16))) if ranked else 0
    per_host = int(_pick(rng, (4, 8))) if ranked else 0
    interval = int(_pick(rng, (1, 1, 2, 5, 10, 20)))
    base = float(math.exp(rng.uniform(math.log(0.2), math.log(8.0))))
    events = int(rng.integers(cfg.min_events, cfg.max_events + 1))
    total = events * interval
    warm_steps = int(rng.integers(5, 30)) * interval
    params = SeriesParams.draw(rng, base_step_time=base, warmup_steps=warm_steps,
                               warmup_factor=float(rng.uniform(1.5, 4.0)), slowdown_step=None, slowdown_factor=1.0,
                               total_steps=total)
    series = Series(params, rng)
    t_job, loss, _ = series.draw(1, total + 1)
    drift = 1.0 + float(rng.uniform(0.0, 0.03)) * np.sin(np.arange(total) / max(1.0, total / rng.uniform(1, 4)) * 2 * np.pi)
    t_job = t_job * drift
    # per-rank compute times: the job's step time with each rank's own small offset and jitter
    rank_t = None
    if ranked:
        offs = rng.uniform(0.97, 1.03, n_ranks)
        rank_t = t_job[None, :] * offs[:, None] * np.exp(rng.normal(0, 0.01, (n_ranks, total)))
    factor = float(rng.uniform(*cfg.factor_range)) if slow else None
    scope = (scope or ("rank" if ranked and rng.random() < cfg.rank_share else "job")) if slow else None
    slow_rank = int(rng.integers(n_ranks)) if scope == "rank" else None
    lo = warm_steps + 60 * interval
    onset = int(rng.integers(lo, max(lo + 1, total - 40 * interval))) if slow else None
    if slow:
        assert onset is not None and factor is not None
        t_job[onset - 1:] *= factor  # a slow rank drags the synchronous job with it
        if rank_t is not None:
            if slow_rank is None:
                rank_t[:, onset - 1:] *= factor
            else:
                rank_t[slow_rank, onset - 1:] *= factor
    # pauses: eval every E steps, checkpoints every C steps (seconds added to that step)
    pause = np.zeros(total)
    announce: dict[int, str] = {}
    ev_every = int(rng.integers(20, 120)) * interval
    ck_every = int(rng.integers(30, 200)) * interval
    for s in range(ev_every, total, ev_every):
        pause[s - 1] += float(rng.uniform(10, 40)) * base
        if rng.random() < cfg.announced_pause_prob:
            announce[s] = "eval"
    for s in range(ck_every, total, ck_every):
        pause[s - 1] += float(rng.uniform(10, 120))
        if rng.random() < cfg.announced_pause_prob:
            announce[s] = "ckpt"
    restart_at = int(rng.integers(lo, total - 20 * interval)) if rng.random() < cfg.restart_prob else None
    lines: list[str] = []
    label_after: list[tuple[int, int, float]] = []
    clock = 0.0
    onset_line = onset_time = None
    host_of = [f"worker-{r // max(1, per_host)}" for r in range(n_ranks)]
    prefix_host = bool(rng.random() < 0.6)
    steps_done = 0
    s = 0
    restarted = False
    while s < total:
        s_end = min(s + interval, total)
        seg = slice(s, s_end)
        clock += float(t_job[seg].sum() + pause[seg].sum())
        steps_done = s_end
        if onset is not None and onset_time is None and s_end >= onset:
            onset_time = clock - float(t_job[onset - 1:s_end].sum() + pause[onset - 1:s_end].sum())
        # pause announcements come before the progress line that carries them
        for a in range(s + 1, s_end + 1):
            kind = announce.get(a)
            if kind == "eval":
                lines += ["***** Running Evaluation *****", f"  eval_loss = {float(loss[a - 1]) * 1.05:.4f}"]
            elif kind == "ckpt":
                lines += [f"saving checkpoint at iteration {a} to /ckpt/iter_{a:07d}",
                          f"  successfully saved checkpoint at iteration {a}"]
        n = s_end - s
        avg = float((t_job[seg].sum() + pause[seg].sum()) / n)
        step_no = steps_done
        if fmt == "megatron":
            lines.append(f" iteration {step_no:8d}/{total:8d} | consumed samples: {step_no * 512:12d} | "
                         f"elapsed time per iteration (ms): {avg * 1000:.1f} | learning rate: 3.0E-04 | "
                         f"lm loss: {float(loss[s_end - 1]):.6E} | loss scale: 1.0 |")
        elif fmt == "nanogpt":
            lines.append(f"iter {step_no}: loss {float(loss[s_end - 1]):.4f}, time {avg * 1000:.2f}ms, mfu 38.2%")
        elif fmt == "keyvalue":
            lines.append(f"step {step_no}/{total} | loss={float(loss[s_end - 1]):.4f} | step_time={avg:.3f}s")
        elif fmt == "tqdm":
            lines.append(tqdm_line(step_no, total, clock, avg))
        elif rank_t is not None:
            rp = pause[seg].sum() / n
            if fmt == "ds_breakdown":
                lines.append(f"[Rank 0] step={step_no}, skipped=0, lr=[0.0003], mom=[(0.9, 0.95)]")
                lines.append(f"steps: {step_no} loss: {float(loss[s_end - 1]):.4f} iter time (s): {avg:.3f} "
                             f"samples/sec: {256 / avg:.3f}")
            for r in range(n_ranks):
                own = float(rank_t[r, seg].mean() + rp)
                if fmt == "rankprefix":
                    pre = f"{host_of[r]}: " if prefix_host else ""
                    lines.append(f"{pre}[rank{r}]: step {step_no} time {own:.3f}s loss {float(loss[s_end - 1]):.4f}")
                else:
                    fwd, bwd = own * 0.33 * 1000, own * 0.62 * 1000
                    lines.append(f"[Rank {r}] time (ms) | fwd_microstep: {fwd:.2f} | bwd_microstep: {bwd:.2f} | "
                                 f"step_microstep: {own * 0.05 * 1000:.2f}")
        if onset is not None and s_end >= onset and len(label_after) < 400:
            if onset_line is None:
                onset_line = len(lines)
                if ranked:  # the first line of the slowed event is the event's first progress line
                    onset_line = len(lines) - (n_ranks - 1) if fmt == "rankprefix" else len(lines) - n_ranks
            label_after.append((len(lines), step_no, clock))
        if rng.random() < 0.05:
            lines.append(str(_pick(rng, _NOISE)).format(n=int(rng.integers(1, 999)), m=int(rng.integers(1000, 9999))))
        s = s_end
        if restart_at is not None and not restarted and s >= restart_at:
            restarted = True
            back = (s // ck_every) * ck_every
            lines += ["RuntimeError: NCCL communicator was aborted on rank 2", "Restarting training (attempt 2)",
                      f"resuming from checkpoint /ckpt/iter_{back:07d} at iteration {back}"]
            clock += 90.0
            if onset is not None and back < onset <= s:
                back = s  # the slowdown began in the lost work: resume after it (keeps the label simple)
            t_re, _, _ = Series(params, np.random.default_rng([seed, index, 11])).draw(1, min(warm_steps, total - back) + 1)
            warm = t_re / params.base_step_time  # warm-up again after the restart
            t_job[back:back + len(warm)] *= np.maximum(warm, 1.0)
            if rank_t is not None:
                rank_t[:, back:back + len(warm)] *= np.maximum(warm, 1.0)[None, :]
            s = back
    hours = clock / 3600.0
    label = EpisodeLabel(
        id=f"fs-{seed}-{index:05d}", file="", kind="slow" if slow else "healthy", format=fmt, log_interval=interval,
        base_step_time_s=round(base, 4), hours=round(hours, 4), ranks=n_ranks, factor=round(factor, 4) if factor else None,
        scope=scope, rank=slow_rank, host=host_of[slow_rank] if slow_rank is not None and prefix_host and fmt == "rankprefix" else None,
        onset_step=onset, onset_line=onset_line, onset_time_s=round(onset_time, 3) if onset_time is not None else None,
        after=[(a, b, round(c, 3)) for a, b, c in label_after],
    )
    return lines, label


def generate_set(out: Path | str, seed: int, cfg: GenConfig = GenConfig()) -> list[EpisodeLabel]:
    """Write `out/logs/*.log`, `out/labels.jsonl` and `out/manifest.json`; the labels."""
    out = Path(out)
    (out / "logs").mkdir(parents=True, exist_ok=True)
    labels: list[EpisodeLabel] = []
    kinds = [True] * cfg.n_slow + [False] * cfg.n_healthy
    for i, slow in enumerate(kinds):
        lines, label = generate_episode(seed, i, slow=slow, cfg=cfg)
        label.file = f"logs/{label.id}.log"
        (out / label.file).write_text("\n".join(lines) + "\n", encoding="utf-8")
        labels.append(label)
    with (out / "labels.jsonl").open("w", encoding="utf-8") as fh:
        for lab in labels:
            fh.write(json.dumps(asdict(lab)) + "\n")
    (out / "manifest.json").write_text(json.dumps({"seed": seed, "config": asdict(cfg), "episodes": len(labels)}, indent=2))
    return labels
