"""Generate labelled training logs, one at a time (`generate_log`) or as a corpus (`generate_corpus`).

A log is: an initialisation header, a body of progress events with noise between them (or, for a
failure before training, more initialisation output), and a tail (the failure with its cascade, a
clean completion, or nothing for a log cut while the job runs). The tail is rendered first (dry
run) to know its length, so a requested `n_lines` is honoured exactly; then the body is planned
and everything is streamed to the file in chunks, so memory stays bounded by a chunk plus the
label arrays, whatever the size. A restart (`HardCase.RESTART`) puts an earlier failed attempt,
the launcher's restart and the re-initialisation into the noise after one progress event, so
training resumes after it and the truth arrays stay exact.
"""

from __future__ import annotations

import io
import json
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from schedmate.loglabels import (
    LABELS_FILE,
    LOGS_DIR,
    MANIFEST_FILE,
    CorpusEntry,
    CorpusManifest,
    FailureLabel,
    LogLabels,
    SlowdownLabel,
    TruthLabel,
)
from schedmate.logspec import HARD_MIX, FailurePhase, Framework, HardCase, LogSpec, LogStatus, Pool, resolved
from schedmate.taxonomy import FailureCategory, category_of, component_of

from .context import JobContext
from .failures import FailureTiming, render_completion, render_tail
from .formats import PEAK_FLOPS, EventBlock, make_renderer
from .hard import restart_segment
from .noise import NoiseSource, header_units
from .pools import template_pool
from .series import Series, SeriesParams

CHUNK_EVENTS = 4096  # events rendered per chunk (the numbers do not depend on it)
WRITE_LINES = 65536  # lines buffered before a write ...
WRITE_CHARS = 4_000_000  # ... or characters, whichever comes first (tqdm lines can be long)
GENERATOR_VERSION = 2  # 2: template pools and hard cases


class _Writer:
    """Buffered line writer to a binary file (or to memory); counts lines and bytes."""

    def __init__(self, fh) -> None:
        self.fh = fh
        self.buf: list[str] = []
        self.chars = 0
        self.n_lines = 0
        self.n_bytes = 0

    def extend(self, lines: list[str]) -> None:
        self.buf.extend(lines)
        self.chars += sum(map(len, lines))
        if len(self.buf) >= WRITE_LINES or self.chars >= WRITE_CHARS:
            self.flush()

    def flush(self) -> None:
        if not self.buf:
            return
        data = ("\n".join(self.buf) + "\n").encode("utf-8")
        self.fh.write(data)
        self.n_lines += len(self.buf)
        self.n_bytes += len(data)
        self.buf = []
        self.chars = 0

    @property
    def cursor(self) -> int:
        """Index of the next line."""
        return self.n_lines + len(self.buf)


def _seed_sequence(seed: int) -> np.random.SeedSequence:
    if seed < 0:
        raise ValueError("seed must be non-negative")
    return np.random.SeedSequence(seed)


def derive_seed(seed: int, index: int) -> int:
    """Seed of the index-th log of a corpus (independent of the corpus size)."""
    return int(np.random.SeedSequence([seed, index]).generate_state(1, np.uint64)[0] >> 1)


def generate_log(spec: LogSpec, seed: int, *, out: str | Path | None = None, log_id: str | None = None,
                 category_weights: dict[FailureCategory, float] | None = None,
                 reason_prior: str = "acme", hard_mix: dict[HardCase, float] | None = None,
                 heldout_share: float = 0.0) -> tuple[str | Path, LogLabels]:
    """Generate one log. Returns (the text, or `out` when a path is given) and its labels.

    Deterministic in (spec, seed). `spec` fields left None are drawn from the seed; the labels
    carry the resolved spec. A failed log's hard cases (`hard.py`) come from `spec.hard`, else
    from `hard_mix` (default none); its error texts from `spec.pool`, else `heldout` with
    probability `heldout_share` (default: the `dev` pool, see `pools.py`). Unless it is too small for the chosen header and failure tail,
    the log has exactly `spec.n_lines` lines (all `\\n`-terminated).
    """
    ss = _seed_sequence(seed)
    s_res, s_ctx, s_series, s_body, s_noise, s_tail, s_header, s_render = ss.spawn(8)
    rs = spec.resolve(np.random.default_rng(s_res), category_weights=category_weights, reason_prior=reason_prior,
                      hard_mix=hard_mix, heldout_share=heldout_share)
    rng_ctx = np.random.default_rng(s_ctx)
    ctx = JobContext.build(rs, rng_ctx)
    body_rng = np.random.default_rng(s_body)
    fw = Framework(resolved(rs.framework))
    status = LogStatus(resolved(rs.status))
    phase = FailurePhase(rs.failure_phase) if rs.failure_phase else None
    n_req = int(rs.n_lines)
    world, gbs, seq, interval = ctx.world_size, int(resolved(rs.global_batch_size)), int(resolved(rs.seq_length)), int(resolved(rs.log_interval))
    base = float(resolved(rs.base_step_time))

    # Model size consistent with the step time (MFU 20-55% of an A100), so printed TFLOP/s and MFU are plausible.
    mfu = float(rng_ctx.uniform(0.2, 0.55))
    flops_per_step = mfu * PEAK_FLOPS * world * base
    ctx.n_params = max(1_000_000, int(flops_per_step / (6.0 * gbs * seq)))
    t_init = float(rng_ctx.uniform(20, 240))

    # -- tail (dry run: its length does not depend on the times) ---------------------------------------
    hard = set(rs.hard or ())
    # hangs and floods are thousands of lines after the root cause: let the tail take most of the log
    tail_budget = max(12, int(n_req * 0.8) if hard & {HardCase.HANG, HardCase.FLOOD} else n_req // 2)
    if rs.cascade_lines is not None:
        tail_budget = max(tail_budget, int(rs.cascade_lines) + 400)
    dummy = FailureTiming(t_fail=0.0, step=None if phase is FailurePhase.INIT else 1, total_steps=2, train_start=0.0)
    final_sig: str | None = None
    if status is LogStatus.FAILED:
        dry = render_tail(rs, ctx, dummy, s_tail, tail_budget)
        tail_len, final_sig = len(dry.lines), dry.signature
    elif status is LogStatus.COMPLETED:
        tail_len = len(render_completion(rs, ctx, dummy, np.random.default_rng(s_tail), 1.0, 2.0))
    else:
        tail_len = 0

    # -- header (dry run for its length; the final render knows total_steps) ----------------------------
    def build_header(total_steps: int) -> list[str]:
        ns = NoiseSource(ctx, rs, np.random.default_rng(s_header), "init")
        units = header_units(ctx, rs, ns, total_steps=total_steps)
        return [line for unit in units for line in unit]

    header_full = len(build_header(1))
    renderer = make_renderer(ctx, rs, flops_per_step=flops_per_step, expected_events=max(1, n_req),
                             rng=np.random.default_rng(s_render))
    p = renderer.lines_per_event
    train = phase is not FailurePhase.INIT
    need_body = p if train else 0
    header_cap = int(min(max(8, 0.15 * n_req), 3000))
    n_header = min(header_full, header_cap, max(0, n_req - tail_len - need_body))
    body = max(need_body, n_req - n_header - tail_len)

    # -- plan the body ---------------------------------------------------------------------------------
    noise_level = float(resolved(rs.noise_level))
    if train:
        n_events = max(1, min(body // p, int(round(body * (1.0 - noise_level) / p))))
        n_noise = body - n_events * p
        steps_in_log = n_events * interval
        if status is LogStatus.COMPLETED:
            total_steps = steps_in_log
        else:
            total_steps = steps_in_log + 1 + int(steps_in_log * body_rng.uniform(0.3, 4.0))
        epochs = max(1, int(round(body_rng.uniform(1.5, 8.0))))
        spe = interval * max(1, -(-n_events // epochs))
    else:
        n_events, n_noise, steps_in_log, total_steps = 0, body, 0, int(body_rng.integers(1000, 200000))
        spe = max(1, total_steps // 3)

    slow_factor = float(resolved(rs.slowdown_factor))
    slow_step: int | None = None
    if train and slow_factor > 1.0:
        candidate = int(resolved(rs.slowdown_at) * steps_in_log) + 1
        if resolved(rs.warmup_steps) < candidate <= steps_in_log:
            slow_step = candidate
    # an earlier attempt that failed and was restarted, inside the body (its lines count as noise)
    restart: tuple[int, list[str], int] | None = None  # (after event i, lines, first error line in them)
    if train and status is LogStatus.FAILED and HardCase.RESTART in hard and n_events >= 4 and final_sig is not None:
        r_rng = np.random.default_rng(np.random.SeedSequence([*s_tail.generate_state(3, np.uint64).tolist(), 0x2E57]))
        at = int(n_events * r_rng.uniform(0.2, 0.7)) + 1
        seg = restart_segment(rs, ctx, r_rng, t_init + at * interval * base, at * interval, total_steps, final_sig,
                              budget=n_noise - 4)
        if seg is not None:
            restart = (at, seg[0], seg[1])
    params = SeriesParams.draw(np.random.default_rng(s_series), base_step_time=base, warmup_steps=int(resolved(rs.warmup_steps)),
                               warmup_factor=float(resolved(rs.warmup_factor)), slowdown_step=slow_step,
                               slowdown_factor=slow_factor, total_steps=max(total_steps, 1))
    series = Series(params, np.random.default_rng(s_series.spawn(1)[0]))
    renderer.configure(total_steps=total_steps, steps_per_epoch=spe, train_start=t_init)

    # -- stream ------------------------------------------------------------------------------------------
    buffer = io.BytesIO()  # the log's bytes when it is not written to a file
    fh = open(out, "wb") if out is not None else buffer
    try:
        w = _Writer(fh)
        w.extend(build_header(total_steps)[:n_header])
        noise = NoiseSource(ctx, rs, np.random.default_rng(s_noise), "train" if train else "init",
                            pool_size=int(min(256, max(2, n_noise // 40))))
        noise.total, noise.spe = total_steps, spe
        truth_parts: dict[str, list[np.ndarray]] = {k: [] for k in ("lines", "steps", "step_time", "loss", "time")}
        stats: dict[str, Any] = {"steady_sum": 0.0, "steady_n": 0, "slow_sum": 0.0, "slow_n": 0, "slow_time": None, "loss_sum": 0.0}
        t_now = t_init
        earlier: list[int] = []
        if train:
            weights = body_rng.gamma(0.6, 1.0, size=n_events + 1) + 1e-12
            n_free = n_noise - (len(restart[1]) if restart else 0)
            k = body_rng.multinomial(n_free, weights / weights.sum()) if n_free else np.zeros(n_events + 1, dtype=np.int64)
            if restart:
                k[restart[0]] += len(restart[1])
            noise.t, noise.step = t_init, 0
            w.extend(noise.fill(int(k[0])))
            for e0 in range(0, n_events, CHUNK_EVENTS):
                e1 = min(n_events, e0 + CHUNK_EVENTS)
                s0, s1 = e0 * interval + 1, e1 * interval + 1
                st, loss, gn = series.draw(s0, s1)
                cum = t_now + np.cumsum(st)
                steps_abs = np.arange(s0, s1)
                _accumulate(stats, st, steps_abs, params)
                stats["loss_sum"] += float(loss.sum())
                if slow_step is not None and s0 <= slow_step < s1:
                    stats["slow_time"] = float(cum[slow_step - s0] - st[slow_step - s0])
                step_end = np.arange(e0 + 1, e1 + 1, dtype=np.int64) * interval
                blk = EventBlock(step_end=step_end, interval=interval, step_time=st, loss=loss, grad_norm=gn, cum_time=cum,
                                 lr=series.lr(step_end))
                r = renderer.render(blk)
                kk = k[e0 + 1: e1 + 1]
                # progress line indices: each event's p lines, then its noise
                starts = w.cursor + np.arange(e1 - e0, dtype=np.int64) * p + np.concatenate(([0], np.cumsum(kk)[:-1]))
                truth_parts["lines"].append((starts[:, None] + np.arange(p)).ravel())
                truth_parts["steps"].append(r.steps)
                truth_parts["step_time"].append(r.step_time)
                truth_parts["loss"].append(r.loss)
                truth_parts["time"].append(r.time)
                lines, fill = r.lines, noise.fill
                t_end = blk.time_end.tolist()
                s_end = step_end.tolist()
                l_end = blk.loss_mean.tolist()
                kk_l = kk.tolist()
                out_lines: list[str] = []
                for i in range(e1 - e0):
                    out_lines.extend(lines[i * p:(i + 1) * p])
                    if kk_l[i]:
                        noise.t, noise.step, noise.loss = t_end[i], s_end[i], l_end[i]
                        if restart is not None and e0 + i + 1 == restart[0]:
                            n_seg = len(restart[1])
                            out_lines.extend(fill(kk_l[i] - n_seg))
                            earlier.append(w.cursor + len(out_lines) + restart[2])
                            out_lines.extend(restart[1])
                        else:
                            out_lines.extend(fill(kk_l[i]))
                w.extend(out_lines)
                t_now = float(cum[-1])
        else:
            # a failure before training: more initialisation output up to the failure
            noise.t = 0.0
            left = n_noise
            while left:
                take = min(left, WRITE_LINES)
                noise.t = t_init * (1.0 - left / max(1, n_noise))
                w.extend(noise.fill(take))
                left -= take

        # -- tail --------------------------------------------------------------------------------------
        failure: FailureLabel | None = None
        last_step = steps_in_log if train else None
        if status is LogStatus.FAILED:
            gap = float(body_rng.uniform(0.0, base)) if train else 0.0
            timing = FailureTiming(t_fail=t_now + gap, step=last_step, total_steps=total_steps, train_start=t_init)
            tail = render_tail(rs, ctx, timing, s_tail, tail_budget)
            off = w.cursor
            reason = resolved(rs.failure_reason)
            failure = FailureLabel(
                category=category_of(reason), reason=reason, component=component_of(reason),
                first_line=off + tail.first_line, block_start=off + tail.block_start, block_end=off + tail.block_end,
                cascade_start=off + tail.cascade_start, signature=tail.signature, time=round(tail.time, 3),
                step=tail.step, phase=phase, rank=tail.rank, host=tail.host, variant=tail.variant,
                pool=template_pool(reason, tail.variant), hard=tail.hard + ([HardCase.RESTART] if earlier else []),
                earlier_lines=earlier,
            )
            w.extend(tail.lines)
        elif status is LogStatus.COMPLETED:
            timing = FailureTiming(t_fail=t_now, step=last_step, total_steps=total_steps, train_start=t_init)
            w.extend(render_completion(rs, ctx, timing, np.random.default_rng(s_tail), t_now - t_init,
                                       stats["loss_sum"] / max(1, steps_in_log)))
        w.flush()
        text_or_path: str | Path = Path(out) if out is not None else buffer.getvalue().decode("utf-8")
    finally:
        fh.close() if out is not None else None

    truth = _truth(truth_parts, stats, rs, params, slow_step, gbs, seq, total_steps, steps_in_log, spe, interval)
    labels = LogLabels(
        id=log_id or f"log-{seed}", path=str(out) if out is not None else None, framework=fw, variant=str(rs.variant),
        n_lines=w.n_lines, n_bytes=w.n_bytes, status=status, seed=seed, failure=failure, truth=truth, spec=rs,
    )
    return text_or_path, labels


def _accumulate(stats: dict, st: np.ndarray, steps: np.ndarray, p: SeriesParams) -> None:
    after_warm = steps > p.warmup_steps
    if p.slowdown_step is None:
        steady, slowed = after_warm, None
    else:
        steady = after_warm & (steps < p.slowdown_step)
        slowed = steps >= p.slowdown_step
    stats["steady_sum"] += float(st[steady].sum())
    stats["steady_n"] += int(steady.sum())
    if slowed is not None:
        stats["slow_sum"] += float(st[slowed].sum())
        stats["slow_n"] += int(slowed.sum())


def _truth(parts: dict[str, list[np.ndarray]], stats: dict, rs: LogSpec, params: SeriesParams, slow_step: int | None,
           gbs: int, seq: int, total_steps: int, steps_in_log: int, spe: int, interval: int) -> TruthLabel:
    def cat(key: str, dtype) -> np.ndarray:
        return np.concatenate(parts[key]).astype(dtype) if parts[key] else np.zeros(0, dtype=dtype)

    lines = cat("lines", np.int64)
    steps = cat("steps", np.int64)
    step_time = cat("step_time", np.float64)
    slowdown = None
    if slow_step is not None:
        at = int(np.searchsorted(steps, slow_step, side="left"))
        if at < len(lines):
            slowdown = SlowdownLabel(at_step=slow_step, at_time=round(float(stats["slow_time"]), 3),
                                     at_line=int(lines[at]), factor=float(resolved(rs.slowdown_factor)))
    return TruthLabel(
        progress_lines=lines, steps=steps, step_time=np.round(step_time, 7), loss=np.round(cat("loss", np.float64), 6),
        throughput=np.round(gbs / np.where(step_time > 0, step_time, np.nan), 4) if len(step_time) else step_time,
        time=np.round(cat("time", np.float64), 3), warmup_steps=int(resolved(rs.warmup_steps)), warmup_factor=float(resolved(rs.warmup_factor)),
        base_step_time=float(resolved(rs.base_step_time)),
        steady_step_time=round(stats["steady_sum"] / stats["steady_n"], 7) if stats["steady_n"] else None,
        slowed_step_time=round(stats["slow_sum"] / stats["slow_n"], 7) if stats["slow_n"] else None,
        slowdown=slowdown, global_batch_size=gbs, seq_length=seq, total_steps=total_steps, steps_in_log=steps_in_log,
        steps_per_epoch=spe, log_interval=interval,
    )


def _log_uniform(rng: np.random.Generator, lo: int, hi: int) -> int:
    if hi <= lo:
        return lo
    return int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))


def generate_corpus(out_dir: str | Path, n: int, seed: int, *, min_lines: int = 100, max_lines: int = 20_000,
                    failed_fraction: float = 0.5, frameworks: Sequence[Framework | str] = tuple(Framework),
                    progress: Callable[[int, int], None] | None = None, running_fraction: float = 0.5,
                    padded_fraction: float = 0.0, category_weights: dict[FailureCategory, float] | None = None,
                    reason_prior: str = "acme", pool: Pool | str = "both",
                    hard_mix: dict[HardCase, float] | None = None) -> CorpusManifest:
    """Write `logs/<id>.log` and `labels.jsonl` (one `LogLabels` per line) and `manifest.json` under out_dir.

    Sizes are log-uniform in [min_lines, max_lines]. `failed_fraction` of the logs fail (one Acme
    root cause each, categories by `category_weights`, reasons within a category by Acme counts or
    uniformly); of the others `running_fraction` are cut mid-training, the rest complete.
    `padded_fraction` of the logs get 90-98% noise (the Metric Tracker's "padded" condition).
    `pool` ("dev", "heldout" or "both": half and half, drawn per log) chooses the error-text pool
    of `pools.py`; `hard_mix` the probability of each hard case in a failed log (default
    `HARD_MIX`, the benchmark's mix; `{}` for none). `progress(done, total)` is called after each log. Log i depends
    only on (seed, i).
    """
    if pool not in ("both", *Pool):
        raise ValueError(f"pool must be dev, heldout or both, not {pool!r}")
    fixed_pool = None if pool == "both" else Pool(pool)
    if n < 0 or not 1 <= min_lines <= max_lines:
        raise ValueError("need n >= 0 and 1 <= min_lines <= max_lines")
    fws = [Framework(f) for f in frameworks]
    if not fws:
        raise ValueError("frameworks must not be empty")
    root = Path(out_dir)
    (root / LOGS_DIR).mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    entries: list[CorpusEntry] = []
    total_lines = 0
    with open(root / LABELS_FILE, "w", encoding="utf-8") as lf:
        for i in range(n):
            log_seed = derive_seed(seed, i)
            rng = np.random.default_rng(np.random.SeedSequence([seed, i, 1]))
            n_lines = _log_uniform(rng, min_lines, max_lines)
            fw = fws[int(rng.integers(len(fws)))]
            u = rng.random()
            if u < failed_fraction:
                status = LogStatus.FAILED
            elif rng.random() < running_fraction:
                status = LogStatus.RUNNING
            else:
                status = LogStatus.COMPLETED
            noise = round(float(rng.uniform(0.9, 0.98)), 3) if rng.random() < padded_fraction else None
            log_id = f"log-{i:05d}"
            rel = f"{LOGS_DIR}/{log_id}.log"
            spec = LogSpec(framework=fw, n_lines=n_lines, status=status, noise_level=noise, pool=fixed_pool)
            _, labels = generate_log(spec, log_seed, out=root / rel, log_id=log_id, category_weights=category_weights,
                                     reason_prior=reason_prior, hard_mix=HARD_MIX if hard_mix is None else hard_mix,
                                     heldout_share=0.5)
            labels = labels.model_copy(update={"path": rel})
            lf.write(labels.model_dump_json() + "\n")
            f = labels.failure
            entries.append(CorpusEntry(id=log_id, path=rel, framework=fw, n_lines=labels.n_lines, status=labels.status,
                                       category=f.category if f else None, reason=f.reason if f else None))
            total_lines += labels.n_lines
            if progress is not None:
                progress(i + 1, n)
    manifest = CorpusManifest(
        root=str(root), seed=seed, n=n, n_lines_total=total_lines, seconds=round(time.perf_counter() - started, 3),
        settings={"min_lines": min_lines, "max_lines": max_lines, "failed_fraction": failed_fraction,
                  "running_fraction": running_fraction, "padded_fraction": padded_fraction,
                  "frameworks": [str(f) for f in fws], "reason_prior": reason_prior,
                  "category_weights": {str(k): v for k, v in (category_weights or {}).items()} or None,
                  "pool": str(pool), "hard_mix": None if hard_mix is None else {str(k): v for k, v in hard_mix.items()},
                  "generator_version": GENERATOR_VERSION},
        entries=entries,
    )
    (root / MANIFEST_FILE).write_text(json.dumps(manifest.model_dump(mode="json"), indent=1) + "\n", encoding="utf-8")
    return manifest
