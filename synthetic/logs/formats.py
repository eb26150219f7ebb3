"""Progress-line renderers: the exact formats Megatron-LM, DeepSpeed, HF Trainer, Lightning and
plain PyTorch loops print (`/work/shared/specs/logs.md` §2.4), rendered from true numbers.

A renderer turns a block of *events* (one per log interval) into lines, and says for every line
which step it reports and the true values behind the numbers it prints, so labels and text agree
by construction. Per line the truth is what that line reports: frameworks that average over their
log interval (Megatron's `elapsed time per iteration`, HF's `loss`) report the interval mean;
lines that print the current step (DeepSpeed's `CurrSamplesPerSec`, nanoGPT's `time`) report the
last step. `steps` is always the number of completed optimiser steps (nanoGPT prints it minus one,
Lightning prints the batch index within the epoch).

Rendering is template-based (`%` formatting over columns built with numpy), the fast path for
million-line logs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from schedmate.logspec import Framework, LogSpec, resolved

from .context import BLUE, BOLD, CYAN, DEFAULT_FG, GREEN, MAGENTA, RED, RESET, YELLOW, JobContext

PEAK_FLOPS = 312e12  # A100 bf16 dense; MFU numbers printed by nanoGPT/torchtitan use it


@dataclass
class EventBlock:
    """Consecutive events; event i covers steps step_end[i]-interval+1 .. step_end[i]."""

    step_end: np.ndarray  # int64 (E,)
    interval: int
    step_time: np.ndarray  # (E*interval,) seconds of each step
    loss: np.ndarray  # (E*interval,)
    grad_norm: np.ndarray  # (E*interval,)
    cum_time: np.ndarray  # (E*interval,) seconds since job start at the end of each step
    lr: np.ndarray  # (E,) learning rate at the event's last step

    @property
    def n(self) -> int:
        return len(self.step_end)

    @property
    def first_step(self) -> int:
        return int(self.step_end[0]) - self.interval + 1

    @property
    def time_before(self) -> float:
        """Seconds since job start just before the block's first step."""
        return float(self.cum_time[0] - self.step_time[0])

    def _shape(self, a: np.ndarray) -> np.ndarray:
        return a.reshape(self.n, self.interval)

    @cached_property
    def t_mean(self) -> np.ndarray:
        return self._shape(self.step_time).mean(axis=1)

    @cached_property
    def t_last(self) -> np.ndarray:
        return self._shape(self.step_time)[:, -1]

    @cached_property
    def loss_mean(self) -> np.ndarray:
        return self._shape(self.loss).mean(axis=1)

    @cached_property
    def loss_last(self) -> np.ndarray:
        return self._shape(self.loss)[:, -1]

    @cached_property
    def gn_last(self) -> np.ndarray:
        return self._shape(self.grad_norm)[:, -1]

    @cached_property
    def time_end(self) -> np.ndarray:
        return self._shape(self.cum_time)[:, -1]


@dataclass
class Rendered:
    """Lines of a block, event-major, and the truth behind each line."""

    lines: list[str]
    steps: np.ndarray
    step_time: np.ndarray
    loss: np.ndarray
    time: np.ndarray


def _interleave(*cols: np.ndarray) -> np.ndarray:
    """Event-major layout of per-slot arrays: [e0s0, e0s1, ..., e1s0, ...]."""
    return np.stack(cols, axis=1).ravel() if len(cols) > 1 else np.asarray(cols[0])


class ProgressRenderer:
    """Base class. `lines_per_event` lines per event, each labelled a progress line."""

    framework: Framework
    lines_per_event: int = 1

    def __init__(self, ctx: JobContext, spec: LogSpec, *, flops_per_step: float, expected_events: int,
                 rng: np.random.Generator) -> None:
        self.ctx = ctx
        self.spec = spec
        self.variant = spec.variant
        self.total = 1
        self.spe = 1
        self.gbs = int(resolved(spec.global_batch_size))
        self.seq = int(resolved(spec.seq_length))
        self.world = ctx.world_size
        self.flops_per_step = flops_per_step
        self.interval = int(resolved(spec.log_interval))
        self.rng = rng
        self.train_start = 0.0  # set by the generator: job time when step 1 starts
        # tqdm redraws per event: real tqdm redraws every step slower than 0.1 s; bounded (10 per line,
        # fewer in very long logs: 1 at a million lines) so size and generation time stay linear.
        self.redraws = max(1, min(self.interval, 10, 1_500_000 // max(1, expected_events)))

    def configure(self, *, total_steps: int, steps_per_epoch: int, train_start: float) -> None:
        """Set what is known only once the body is planned (`lines_per_event` is known before)."""
        self.total = total_steps
        self.spe = steps_per_epoch
        self.train_start = train_start

    def render(self, blk: EventBlock) -> Rendered:  # pragma: no cover - abstract
        raise NotImplementedError


# ---- Megatron-LM ----------------------------------------------------------------------------------
class MegatronRenderer(ProgressRenderer):
    framework = Framework.MEGATRON

    def __init__(self, *a, **k) -> None:
        super().__init__(*a, **k)
        v = self.variant
        self.with_ts = v in ("core", "params")
        self.with_tput = v == "core"
        self.with_params = v == "params"
        self.fp16 = bool(self.rng.random() < 0.3)
        self.params_norm = float(self.rng.uniform(200, 2000))
        self.tmpl = ""

    def _template(self) -> str:
        """Megatron's `training_log` format with the constant fields already filled in."""
        v = self.variant
        parts = [" [%s]" if self.with_ts else "", " iteration %8d/" + "%8d |" % self.total, " consumed samples: %12d |",
                 " elapsed time per iteration (ms): %.1f |"]
        if self.with_tput:
            parts.append(" throughput per GPU (TFLOP/s/GPU): %.1f |")
        parts += [" learning rate: %.6E |" if v != "classic" else " learning rate: %.3E |",
                  " global batch size: %5d |" % self.gbs, " lm loss: %.6E |",
                  " loss scale: %.1f |" % (65536.0 if self.fp16 else 1.0), " grad norm: %.3f |"]
        if self.with_params:
            parts.append(" params norm: %.3f |")
        parts += [" number of skipped iterations: %3d |" if self.fp16 else " number of skipped iterations:   0 |",
                  " number of nan iterations:   0 |"]
        return self.ctx.prefix(self.ctx.last_visible) + "".join(parts)

    def render(self, blk: EventBlock) -> Rendered:
        if not self.tmpl:
            self.tmpl = self._template()
        n = blk.n
        cols: list = []
        if self.with_ts:
            cols.append(self.ctx.ts_many(blk.time_end, "sec"))
        steps = blk.step_end
        cols += [steps.tolist(), (steps * self.gbs).tolist(), (blk.t_mean * 1000.0).tolist()]
        if self.with_tput:
            cols.append((self.flops_per_step / (blk.t_mean * self.world) / 1e12).tolist())
        cols += [blk.lr.tolist(), blk.loss_mean.tolist(), blk.gn_last.tolist()]
        if self.with_params:
            cols.append((self.params_norm + 0.01 * steps).tolist())
        if self.fp16:
            cols.append((self.rng.random(n) < 0.01).astype(int).tolist())
        tmpl = self.tmpl
        lines = [tmpl % row for row in zip(*cols)]
        return Rendered(lines, steps.copy(), blk.t_mean, blk.loss_mean, blk.time_end)


# ---- DeepSpeed ------------------------------------------------------------------------------------
class DeepSpeedRenderer(ProgressRenderer):
    framework = Framework.DEEPSPEED

    def __init__(self, *a, **k) -> None:
        super().__init__(*a, **k)
        self.lines_per_event = 3 if self.variant == "pipe" else 2
        new = bool(self.rng.random() < 0.5)
        pre = self.ctx.prefix(0)
        self.t_step = pre + "[%s] [INFO] [logging.py:" + ("128" if new else "96") + ":log_dist] [Rank 0] step=%d, skipped=%d, lr=[%r], mom=[%s]"
        self.t_timer = pre + "[%s] [INFO] [timer.py:" + ("264" if new else "260") + ":stop] epoch=0/micro_step=%d/global_step=%d, RunningAvgSamplesPerSec=%r, CurrSamplesPerSec=%r, MemAllocated=%rGB, MaxMemAllocated=%rGB"
        self.t_pipe = pre + "steps: %d loss: %.4f iter time (s): %.3f samples/sec: %.3f"
        self.mom = ("(0.9, 0.95)", "(0.9, 0.999)")[int(self.rng.integers(2))]
        self.gas = int(self.rng.choice([1, 1, 2, 4, 8]))
        self.mem = round(float(self.rng.uniform(4, 60)), 2)
        self.max_mem = round(self.mem + float(self.rng.uniform(1, 18)), 2)
        self.t_step2: float | None = None  # DeepSpeed's ThroughputTimer starts averaging after step 2

    def render(self, blk: EventBlock) -> Rendered:
        n = blk.n
        ts = self.ctx.ts_many(blk.time_end, "ds")
        steps = blk.step_end
        if self.t_step2 is None and blk.first_step <= 2 <= int(steps[-1]):
            self.t_step2 = float(blk.cum_time[2 - blk.first_step])
        cur = self.gbs / blk.t_last
        if self.t_step2 is not None:
            span = blk.time_end - self.t_step2
            with np.errstate(divide="ignore", invalid="ignore"):
                running = np.where(steps > 2, self.gbs * (steps - 2) / np.where(span > 0, span, 1.0), cur)
        else:
            running = cur
        step_l = steps.tolist()
        lines0 = [self.t_step % r for r in zip(ts, step_l, [0] * n, blk.lr.tolist(), [self.mom] * n)]
        lines1 = [self.t_timer % r for r in zip(ts, (steps * self.gas).tolist(), step_l, running.tolist(), cur.tolist(),
                                               [self.mem] * n, [self.max_mem] * n)]
        slots = [lines0, lines1]
        t_cols = [blk.t_mean, blk.t_last]
        if self.lines_per_event == 3:
            slots.append([self.t_pipe % r for r in zip(step_l, blk.loss_last.tolist(), blk.t_mean.tolist(),
                                                         (self.gbs / blk.t_mean).tolist())])
            t_cols.append(blk.t_mean)
        p = self.lines_per_event
        lines = [line for group in zip(*slots) for line in group]
        return Rendered(lines, np.repeat(steps, p), _interleave(*t_cols), np.repeat(blk.loss_last, p),
                        np.repeat(blk.time_end, p))


# ---- tqdm -----------------------------------------------------------------------------------------
_BAR_CHARS = " ▏▎▍▌▋▊▉█"


def tqdm_bar(frac: float, width: int = 10) -> str:
    """tqdm's unicode bar body (`████▌     ` at 45%)."""
    n_sym = len(_BAR_CHARS) - 1
    full, part = divmod(int(frac * width * n_sym), n_sym)
    if full >= width:
        return _BAR_CHARS[-1] * width
    return _BAR_CHARS[-1] * full + _BAR_CHARS[part] + " " * (width - full - 1)


def tqdm_interval(t: float) -> str:
    mins, s = divmod(int(t), 60)
    h, m = divmod(mins, 60)
    return f"{h:d}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def tqdm_rate(step_time: float) -> str:
    """tqdm's rate: `s/it` once an iteration takes more than a second."""
    return f"{step_time:5.2f}s/it" if step_time > 1.0 else f"{1.0 / step_time:5.2f}it/s"


def tqdm_line(n: int, total: int, elapsed: float, step_time: float, desc: str = "", postfix: str = "") -> str:
    """One tqdm redraw, e.g. ` 45%|████▌     | 450/1000 [02:13<02:43,  3.37it/s]` (postfix: `, k=v, ...`)."""
    frac = n / total
    l_bar = f"{desc}: " if desc else ""
    remaining = (total - n) * step_time
    return (f"{l_bar}{frac * 100:3.0f}%|{tqdm_bar(frac)}| {n}/{total} "
            f"[{tqdm_interval(elapsed)}<{tqdm_interval(remaining)}, {tqdm_rate(step_time)}{postfix}]")


_BAR_TABLE = [tqdm_bar(i / 80.0) for i in range(81)]


def _intervals(secs: np.ndarray) -> list[str]:
    m, s = np.divmod(np.asarray(secs).astype(np.int64), 60)
    h, m = np.divmod(m, 60)
    return ["%d:%02d:%02d" % (a, b, c) if a else "%02d:%02d" % (b, c) for a, b, c in zip(h.tolist(), m.tolist(), s.tolist())]


def tqdm_lines(n: np.ndarray, total: np.ndarray | int, elapsed: np.ndarray, step_time: np.ndarray,
               l_bar: list[str] | None = None, postfix: list[str] | None = None) -> list[str]:
    """`tqdm_line` for arrays (the same strings; l_bar is `desc: ` or empty)."""
    n = np.asarray(n, dtype=np.int64)
    total_a = np.broadcast_to(np.asarray(total, dtype=np.int64), n.shape)
    frac = n / total_a
    bar_idx = np.minimum((frac * 10 * 8).astype(np.int64), 80).tolist()
    st = np.asarray(step_time, dtype=np.float64)
    inv = st > 1.0
    val = np.where(inv, st, 1.0 / st).tolist()
    unit = ["s/it" if i else "it/s" for i in inv.tolist()]
    el = _intervals(elapsed)
    rem = _intervals((total_a - n) * st)
    k = len(n)
    lb = l_bar if l_bar is not None else [""] * k
    pf = postfix if postfix is not None else [""] * k
    bars = [_BAR_TABLE[i] for i in bar_idx]
    return ["%s%3.0f%%|%s| %d/%d [%s<%s, %5.2f%s%s]" % r
            for r in zip(lb, (frac * 100).tolist(), bars, n.tolist(), total_a.tolist(), el, rem, val, unit, pf)]


def _redraw_offsets(interval: int, redraws: int) -> list[int]:
    """Offsets (0-based, within an event) of the steps at which the bar is redrawn; last = interval-1."""
    return sorted({math.ceil((j + 1) * interval / redraws) - 1 for j in range(redraws)})


class _TqdmRenderer(ProgressRenderer):
    """Shared redraw bookkeeping for HF Trainer and Lightning bars."""

    def __init__(self, *a, **k) -> None:
        super().__init__(*a, **k)
        self.cr = bool(self.spec.carriage_returns)
        self.offsets = _redraw_offsets(self.interval, self.redraws)

    def _redraw_values(self, blk: EventBlock):
        """Per event and redraw: (step, mean step time since the event started, loss, time)."""
        every = self.interval
        st = blk.step_time.reshape(blk.n, every)
        cum = np.cumsum(st, axis=1)
        offs = np.array(self.offsets)
        k = offs + 1
        mean = cum[:, offs] / k
        steps = (blk.step_end - every + 1)[:, None] + offs[None, :]
        loss = blk.loss.reshape(blk.n, every)[:, offs]
        time_ = blk.cum_time.reshape(blk.n, every)[:, offs]
        return steps, mean, loss, time_


# ---- HF Trainer -----------------------------------------------------------------------------------
class HFTrainerRenderer(_TqdmRenderer):
    framework = Framework.HF_TRAINER

    def __init__(self, *a, **k) -> None:
        super().__init__(*a, **k)
        self.lines_per_event = 1 if self.cr else len(self.offsets) + 1
        self.pre = self.ctx.prefix(0)
        if self.variant == "legacy":
            self.t_dict = "{'loss': %r, 'learning_rate': %r, 'epoch': %r}"
        else:
            self.t_dict = "{'loss': %r, 'grad_norm': %r, 'learning_rate': %r, 'epoch': %r}"

    def render(self, blk: EventBlock) -> Rendered:
        steps, mean, loss, time_ = self._redraw_values(blk)
        pre = self.pre
        loss_r = np.round(blk.loss_mean, 4).tolist()
        epoch = np.round(blk.step_end / self.spe, 2).tolist()
        lr = blk.lr.tolist()
        if self.variant == "legacy":
            dicts = [self.t_dict % r for r in zip(loss_r, lr, epoch)]
        else:
            gn = blk.gn_last.astype(np.float32).astype(np.float64).tolist()
            dicts = [self.t_dict % r for r in zip(loss_r, gn, lr, epoch)]
        draws = tqdm_lines(steps.ravel(), self.total, time_.ravel() - self.train_start, mean.ravel())
        r = steps.shape[1]
        if self.cr:
            lines = []
            for i in range(blk.n):
                d = draws[i * r:(i + 1) * r]
                lines.append(pre + "\r" + "\r".join(d) + "\r" + " " * len(d[-1]) + "\r" + dicts[i])
            return Rendered(lines, blk.step_end.copy(), mean[:, -1], blk.loss_mean, blk.time_end)
        lines = []
        for i in range(blk.n):
            lines.extend(pre + d for d in draws[i * r:(i + 1) * r])
            lines.append(pre + dicts[i])
        return Rendered(
            lines,
            np.concatenate([steps, blk.step_end[:, None]], axis=1).ravel(),
            np.concatenate([mean, mean[:, -1:]], axis=1).ravel(),
            np.concatenate([loss, blk.loss_mean[:, None]], axis=1).ravel(),
            np.concatenate([time_, blk.time_end[:, None]], axis=1).ravel(),
        )


# ---- PyTorch Lightning ----------------------------------------------------------------------------
def lightning_num(x: float) -> str:
    """Lightning's progress-bar number format: tqdm's `.3g`, padded to 5 characters with zeros."""
    s = f"{x:.3g}".replace("+0", "+").replace("-0", "-")
    s = s if len(s) < len(str(x)) else str(x)
    if "e" not in s and len(s) < 5:
        if "." not in s:
            s += "."
        s += "0" * (5 - len(s))
    return s


def tqdm_num(x: float) -> str:
    s = f"{x:.3g}".replace("+0", "+").replace("-0", "-")
    return s if len(s) < len(str(x)) else str(x)


class LightningRenderer(_TqdmRenderer):
    framework = Framework.LIGHTNING

    def __init__(self, *a, **k) -> None:
        super().__init__(*a, **k)
        self.lines_per_event = 1 if self.cr else len(self.offsets)
        self.pre = self.ctx.prefix(0)
        self.v_num = int(self.rng.integers(0, 12))
        # Lightning 1.x counted validation batches in the training bar's total.
        self.val_batches = int(self.rng.integers(5, 60)) if self.variant == "v1" else 0
        self._epoch_start = 0.0

    @property
    def bar_total(self) -> int:
        return self.spe + self.val_batches

    def render(self, blk: EventBlock) -> Rendered:
        steps, mean, loss, time_ = self._redraw_values(blk)
        spe, pre, vn = self.spe, self.pre, self.v_num
        first = blk.first_step
        # epoch start times: an epoch starts after step epoch*spe (event boundaries align with epochs)
        ep = (blk.step_end - 1) // spe
        bnd = ep * spe
        idx = bnd - first
        start = np.where(idx >= 0, blk.cum_time[np.clip(idx, 0, None)], np.where(idx == -1, blk.time_before, np.nan))
        start = np.where(bnd == 0, self.train_start, start)
        if np.isnan(start).any():
            start = np.where(np.isnan(start), self._epoch_start, start)
        self._epoch_start = float(start[-1])
        r = steps.shape[1]
        ep_r = np.repeat(ep, r)
        l_bar = [f"Epoch {e}: " for e in ep_r.tolist()]
        if self.variant == "v1":
            post = [f", loss={tqdm_num(x)}, v_num={vn}" for x in loss.ravel().tolist()]
        else:
            post = [f", v_num={vn}, train_loss={lightning_num(x)}" for x in loss.ravel().tolist()]
        draws = tqdm_lines(steps.ravel() - ep_r * spe, self.bar_total, time_.ravel() - np.repeat(start, r), mean.ravel(),
                           l_bar, post)
        if self.cr:
            lines = [pre + "\r" + "\r".join(draws[i * r:(i + 1) * r]) for i in range(blk.n)]
            return Rendered(lines, blk.step_end.copy(), mean[:, -1], loss[:, -1], blk.time_end)
        lines = [pre + d for d in draws]
        return Rendered(lines, steps.ravel(), mean.ravel(), loss.ravel(), time_.ravel())


# ---- plain PyTorch loops --------------------------------------------------------------------------
class PyTorchRenderer(ProgressRenderer):
    framework = Framework.PYTORCH

    def __init__(self, *a, **k) -> None:
        super().__init__(*a, **k)
        ctx, v = self.ctx, self.variant
        self.ranks = list(ctx.visible) if self.spec.duplicate_progress else [0]
        self.lines_per_event = len(self.ranks)
        self.mem = float(self.rng.uniform(10, 75))
        ansi = ctx.ansi
        if v == "simple":
            self.tmpl = "step %d loss %.4f time %.3fs"
        elif v == "nanogpt":
            self.tmpl = "iter %d: loss %.4f, time %.2fms, mfu %.2f%%"
        elif v == "epoch":
            self.tmpl = "Epoch [%d/%d], Step [%d/%d], Loss: %.4f, Time: %.3fs/step, Throughput: %.1f samples/s"
        elif v == "titan":
            c = (lambda code: code) if ansi else (lambda code: "")
            self.tmpl = ("[titan] %s - root - INFO - " + c(RED) + "step: %2d  " + c(GREEN) + "loss: %7.4f  "
                         + c(YELLOW) + "memory: %5.2fGiB(%.2f%%)  " + c(BLUE) + "tps: %s  " + c(CYAN)
                         + "tflops: %s  " + c(MAGENTA) + "mfu: %.2f%%" + c(DEFAULT_FG))
        elif v == "loguru":
            if ansi:
                self.tmpl = (GREEN + "%s" + RESET + " | " + BOLD + "INFO    " + RESET + " | " + CYAN + "__main__" + RESET
                             + ":" + CYAN + "train" + RESET + ":" + CYAN + "142" + RESET + " - " + BOLD
                             + "step %d/%d | loss %.4f | %.1f ms/step | %.1f samples/s" + RESET)
            else:
                self.tmpl = "%s | INFO     | __main__:train:142 - step %d/%d | loss %.4f | %.1f ms/step | %.1f samples/s"
        else:  # pragma: no cover - validated by LogSpec.resolve
            raise ValueError(v)

    @property
    def n_epochs(self) -> int:
        return max(1, -(-self.total // self.spe))

    def _messages(self, blk: EventBlock) -> tuple[list[str], np.ndarray, np.ndarray]:
        v, n = self.variant, blk.n
        steps = blk.step_end
        if v == "simple":
            return [self.tmpl % r for r in zip(steps.tolist(), blk.loss_last.tolist(), blk.t_mean.tolist())], blk.t_mean, blk.loss_last
        if v == "nanogpt":
            mfu = np.where(steps <= 5, -100.0, self.flops_per_step / (blk.t_last * self.world * PEAK_FLOPS) * 100.0)
            return [self.tmpl % r for r in zip((steps - 1).tolist(), blk.loss_last.tolist(), (blk.t_last * 1000).tolist(),
                                                mfu.tolist())], blk.t_last, blk.loss_last
        if v == "epoch":
            ep = (steps - 1) // self.spe
            rows = zip((ep + 1).tolist(), [self.n_epochs] * n, (steps - ep * self.spe).tolist(), [self.spe] * n,
                       blk.loss_mean.tolist(), blk.t_mean.tolist(), (self.gbs / blk.t_mean).tolist())
            return [self.tmpl % r for r in rows], blk.t_mean, blk.loss_mean
        if v == "titan":
            tps = [f"{x:,}" for x in np.round(self.gbs * self.seq / self.world / blk.t_mean).astype(np.int64).tolist()]
            tflops = self.flops_per_step / self.world / blk.t_mean / 1e12
            tf = [f"{x:,.2f}" for x in tflops.tolist()]
            mfu = (tflops * 1e12 / PEAK_FLOPS * 100.0).tolist()
            ts = self.ctx.ts_many(blk.time_end, "ds")
            mem = [self.mem] * n
            rows = zip(ts, steps.tolist(), blk.loss_last.tolist(), mem, [self.mem / 80 * 100] * n, tps, tf, mfu)
            return [self.tmpl % r for r in rows], blk.t_mean, blk.loss_last
        ts = self.ctx.ts_many(blk.time_end, "dot")
        rows = zip(ts, steps.tolist(), [self.total] * n, blk.loss_mean.tolist(), (blk.t_mean * 1000).tolist(),
                   (self.gbs / blk.t_mean).tolist())
        return [self.tmpl % r for r in rows], blk.t_mean, blk.loss_mean

    def render(self, blk: EventBlock) -> Rendered:
        msgs, t, loss = self._messages(blk)
        p = self.lines_per_event
        if p == 1:
            pre = self.ctx.prefix(0)
            lines = [pre + m for m in msgs] if pre else msgs
        else:
            prefixes = [self.ctx.prefix(r) for r in self.ranks]
            rolls = self.rng.integers(0, p, size=blk.n).tolist()
            lines = []
            for m, k in zip(msgs, rolls):
                lines.extend(prefixes[(j + k) % p] + m for j in range(p))
        return Rendered(lines, np.repeat(blk.step_end, p), np.repeat(t, p), np.repeat(loss, p), np.repeat(blk.time_end, p))


RENDERERS: dict[Framework, type[ProgressRenderer]] = {
    Framework.MEGATRON: MegatronRenderer,
    Framework.DEEPSPEED: DeepSpeedRenderer,
    Framework.HF_TRAINER: HFTrainerRenderer,
    Framework.LIGHTNING: LightningRenderer,
    Framework.PYTORCH: PyTorchRenderer,
}


def make_renderer(ctx: JobContext, spec: LogSpec, **kwargs) -> ProgressRenderer:
    return RENDERERS[Framework(resolved(spec.framework))](ctx, spec, **kwargs)
