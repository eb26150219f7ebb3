"""Fail-slow detection from a training log: is a running job slower than it was, since when, how
much, and (where the log says per rank) which rank and host.

Method: one-sided CUSUM on log step time over a robust baseline, per stream (the job's own
progress lines, and each rank's when lines are rank-prefixed or per-rank timer breakdowns).
Chosen over Bayesian online change-point detection because the question is one-sided ("slower
than the baseline by at least ~5%") and CUSUM is the optimal sequential test for a known minimum
shift (Lorden); it is O(1) per line, needs no hazard prior, and its two knobs map to the targets
(drift `k` = half the smallest shift worth flagging, threshold `h` = false-alarm rate). What makes
it hold up on real logs is around it:

- **log scale, robust baseline**: z = (ln t - median) / (1.4826 MAD), from the in-control
  observations after warm-up (rolling window), with a floor on the scale so rounded printouts
  (`0.52s`) do not look noise-free;
- **warm-up excluded**: the first `warmup_events` observations of a (re)start, and more until
  the rolling median stops falling (a plateau);
- **pauses recognised**: the progress observation right after a checkpoint-save / evaluation /
  checkpoint-load line is skipped in every stream (it carries the pause, not the step);
  evidence per observation is clipped (`clip_extra`), so one isolated long step cannot alarm;
  and an alarm needs `min_events` observations since the estimated onset whose median, newest
  readings, and 80% of all of them are above the baseline (`min_ratio`, `share_ratio`): a
  sustained shift, not a burst of spikes. A lasting shift below `min_ratio` (drift) becomes the
  new baseline;
- **a change point, not a drift**: the level since the onset must also be `min_ratio` above the
  readings just before the onset, not only above the rolling baseline, which lags a slow rise
  by half its window (a gradual drift then looked like a 7-9% step);
- **silent pauses held back**: a reading at least `spike_ratio` x the baseline (a checkpoint or
  evaluation nobody announced, a one-off stall) is held for one reading: alone it is dropped; two
  in a row are both read (a sustained slowdown of that size is still caught, one reading later).
  Clipping alone did not suffice: a stall on top of a few-percent drift tipped CUSUM over `h`;
- **thresholds scale with the noise**: k = ln(1 + `target_shift`) / 2 in units of the baseline
  scale (at least `min_k`), h = ln(`arl0`) / 2k (at least `min_h`): a noisy stream accumulates
  more readings before it alarms, a clean one alarms within a few. `arl0` carries a 10x margin:
  with the baseline's median and scale estimated from a window of readings, the in-control run
  length of a CUSUM is far shorter than its nominal one;
- **persistence**: the shift since the onset must also cover `persist_s` (15 s) of the stream's
  log time (step time x the steps each reading covers), unless its evidence is decisive
  (`decisive_h` x h): on a fast-stepping job four readings are seconds of noise, which is where
  the false alarms were; while a shift is pending the baseline is held, so a shift that must
  persist is judged against the level before it, not one it has half absorbed;
- **one job-wide question, tested once**: every rank of a synchronous job carries the job's own
  fluctuations, so each rank stream sees a job-wide excursion; a rank stream's shift that most
  ranks share is left to the job-level series (the job's own progress lines or, in a log that
  prints only per-rank lines, the median of the ranks' readings of each step) rather than alarmed
  by whichever of 8-16 ranks crosses first. A rank stream still alarms when a minority of ranks
  moved (the slow rank is named, as before);
- **restarts**: a restart marker or a step counter that goes back restarts warm-up (the
  baseline is kept: a restart onto a slow node is still a slowdown).

An alert carries the estimated slowdown ratio (median since onset / baseline), a confidence, the
line and step where the shift began (the last time CUSUM was at zero), and the stream. After an
alert the stream re-baselines on the new level, so one change gives one alert.

Localisation: when two or more ranks report their own times and a minority of them alarm, the
worst one is named (with its host when a launcher prefix says it: `worker-2: [rank5]:`); when
most ranks alarm, or only the job-wide stream does, the slowdown is job-wide.

`FailSlowDetector.feed(text)` is the online API (one line at a time); `detect_lines` runs it over
a whole log and is the batch API (same results by construction). `ThresholdBaseline` is the
naive rule it is evaluated against ("step time > 1.2 x median of the last 100 steps").
"""

from __future__ import annotations

import math
import re
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import median

from schedmate.agents.tracker.formats import is_eval_line
from schedmate.agents.tracker.regex_extractors import regex_extract, strip_timestamp
from schedmate.embeddings.logtext import normalise_line

__all__ = [
    "FailSlowAlert",
    "FailSlowConfig",
    "FailSlowDetector",
    "FailSlowMonitor",
    "Observation",
    "ThresholdBaseline",
    "ThresholdConfig",
    "detect_lines",
    "read_observation",
]

# a checkpoint being written or read, or an evaluation pass: the next step time carries the pause
_PAUSE = re.compile(
    r"sav(?:e|ing|ed)\w*\s+(?:the\s+)?(?:model\s+)?(?:checkpoint|ckpt|model|state)|checkpoint\w*\s+(?:saved|saving|written)"
    r"|save_checkpoint|load(?:ing|ed)?[_ ]checkpoint|\bevaluat(?:e|ing|ion)\b|\bvalidat(?:e|ing|ion)\b|running eval",
    re.IGNORECASE,
)
# a (re)start of training: warm-up starts again
_RESTART = re.compile(
    r"resum\w*\s+(?:training\s+)?from|restart\w*|starting training|training started|\*{3,} running training",
    re.IGNORECASE,
)
_RANK_SOURCE = re.compile(r"\[(?:rank|default|local_rank)?(\d+)\]:|\[\d+,(\d+)\]<std|^(\d{1,5}):$", re.IGNORECASE)
_HOST_SOURCE = re.compile(r"^(\d{1,3}(?:\.\d{1,3}){3}|(?:worker|node|host|gpu)[-_]?\d+):$", re.IGNORECASE)
_RANK_TEXT = re.compile(r"^\s*\[?\s*rank\s*[=:#]?\s*(\d+)\s*\]?\s*[:|\]]?", re.IGNORECASE)
# DeepSpeed `wall_clock_breakdown`: `[Rank 3] time (ms) | fwd_microstep: 120.1 | bwd_microstep: 250.3 | ...`
_BREAKDOWN = re.compile(r"time \(ms\)\s*\|(.*)$")
_MS_FIELD = re.compile(r"([A-Za-z_\-]+)\s*:\s*([0-9]+(?:\.[0-9]*)?)")


@dataclass(frozen=True)
class FailSlowConfig:
    """Detector knobs. Chosen on the dev seeds of `synthetic.failslow` (`bench_failslow.DEV_SEEDS`), never the scoring seeds."""

    warmup_events: int = 5  # observations always skipped after a (re)start
    plateau_window: int = 5  # ... then skipped until the median of this many stops falling
    plateau_tol: float = 0.03  # by more than this (relative)
    max_warmup_events: int = 60  # warm-up never lasts longer than this
    baseline_events: int = 8  # observations the first baseline is built from
    baseline_window: int = 100  # rolling in-control window
    target_shift: float = 0.10  # smallest slowdown to catch quickly: CUSUM allowance k = ln(1 + this) / 2
    min_k: float = 0.5  # ... and at least this many baseline scales
    arl0: float = 1e7  # in-control run length aimed at: threshold h = ln(arl0) / 2k (Siegmund); 10x the 1e6 a known baseline
    # would need, since the baseline and its scale are estimated from ~100 readings, which shortens the real run length
    # (Jones, Champ & Rigdon 2004). Dev seeds: 3 -> 2 false alarms, >=10% in time 95.8% -> 95.6%
    min_h: float = 4.0  # ... and at least this, in baseline scales
    clip_extra: float = 3.0  # one observation adds at most k + this much evidence
    min_sigma: float = 0.02  # floor on the baseline scale (ln units)
    min_ratio: float = 1.06  # median since onset (and of the newest `min_events`) / baseline needed to alarm
    min_share: float = 0.8  # ... and this share of the readings since onset at least `share_ratio` x baseline
    share_ratio: float = 1.05  # (a burst of spikes lifts the median, not the lower quartile)
    min_events: int = 4  # observations since onset needed to alarm
    persist_s: float = 15.0  # ... and, where they cover less, readings covering this much log time (step time x steps)
    max_persist_events: int = 64  # ... at most this many
    decisive_h: float = 4.0  # evidence at this many thresholds h alarms without waiting for `persist_s`
    hold_pending: bool = True  # no re-baselining while a shift is pending (off, dev seeds: 3 false alarms, not 6, but a 12% shift on a fast noisy job is absorbed)
    persist_pauses: bool = True  # persistence counts the readings skipped or held (pauses) too (off, dev seeds: 5 false alarms, not 6, in time 95.0%)
    spike_ratio: float = 2.0  # a reading this far above baseline waits for a second one (silent pause)
    pause_skip: int = 1  # observations skipped per stream after a pause line
    max_streams: int = 512  # rank streams kept (a huge job's log cannot grow memory without bound)
    jobwide_share: float = 0.5  # alarmed share of ranks at which a slowdown is job-wide
    rank_median_stream: bool = True  # per-rank logs without job lines: the ranks' median per step is the job-level series
    jobwide_from_job: bool = True  # a rank stream does not raise a job-wide alert where a job-level series exists


@dataclass(frozen=True, slots=True)
class Observation:
    """One step-time reading: which stream (job or rank), the value in seconds (or the inverse
    of a logged rate), and where it was read."""

    lineno: int
    value: float
    step: int | None = None
    rank: int | None = None
    host: str | None = None

    @property
    def stream(self) -> str:
        return "job" if self.rank is None else f"rank{self.rank}"


@dataclass(frozen=True)
class FailSlowAlert:
    """A sustained slowdown. `scope`: job (job-wide), rank (one rank named) or host."""

    line: int  # line of the observation that raised the alarm
    since_line: int  # first line of the slowed regime (estimated onset)
    since_step: int | None
    ratio: float  # median step time since onset / baseline (1.2 = 20% slower)
    confidence: float
    stream: str
    baseline_s: float
    scope: str = "job"
    rank: int | None = None
    host: str | None = None
    step: int | None = None

    def describe(self) -> str:
        where = {"rank": f"rank {self.rank}" + (f" on {self.host}" if self.host else ""),
                 "host": f"host {self.host}"}.get(self.scope, "job-wide")
        return (f"fail-slow: {self.ratio:.2f}x slower ({where}) since line {self.since_line}"
                + (f" (step {self.since_step})" if self.since_step is not None else "")
                + f", confidence {self.confidence:.2f}, flagged at line {self.line}")


def _rank_host(source: str | None, text: str) -> tuple[int | None, str | None, str]:
    """Rank and host from launcher prefixes (`worker-1: [rank3]:`) or a leading `[Rank 3]`."""
    rank = host = None
    for part in (source or "").split():
        if (m := _HOST_SOURCE.match(part)) is not None:
            host = m.group(1)
        elif (m := _RANK_SOURCE.search(part)) is not None:
            rank = int(next(g for g in m.groups() if g is not None))
    if rank is None and (m := _RANK_TEXT.match(text)) is not None:
        rank, text = int(m.group(1)), text[m.end():]
    return rank, host, text


def read_observation(raw: str, lineno: int) -> tuple[Observation | None, str]:
    """The step-time observation of one line (None when it states none) and the line's kind:
    "progress", "pause", "restart" or "other". Parsing is the tracker's (`regex_extract`); a
    DeepSpeed per-rank breakdown is read here (sum of its timers)."""
    ln = normalise_line(raw)
    if ln.binary or not ln.text.strip():
        return None, "other"
    body = strip_timestamp(ln.text)
    rank, host, body = _rank_host(ln.source, body)
    if (m := _BREAKDOWN.search(body)) is not None:
        total = sum(float(v) for _, v in _MS_FIELD.findall(m.group(1)))
        if total > 0:
            return Observation(lineno, total / 1000.0, None, rank, host), "progress"
    if _RESTART.search(body):
        return None, "restart"
    if is_eval_line(body) or _PAUSE.search(body):
        return None, "pause"
    ex = regex_extract(body)
    if ex is None:
        return None, "other"
    if ex.step_time_s is not None:
        value = ex.step_time_s
    elif ex.throughput is not None and ex.throughput > 0:
        value = 1.0 / ex.throughput  # seconds per logged unit: the same ratio as a step time
    else:
        return None, "other"
    if not (value > 0 and math.isfinite(value)):
        return None, "other"
    return Observation(lineno, value, ex.step, rank, host), "progress"


@dataclass
class _Stream:
    """CUSUM state of one stream."""

    warm: deque[float] = field(default_factory=lambda: deque(maxlen=32))
    warm_seen: int = 0
    in_warmup: bool = True
    base: deque[float] = field(default_factory=deque)
    mu: float | None = None
    sigma: float = 0.0
    s: float = 0.0
    since: list[tuple[Observation, float, float, float, float]] = field(default_factory=list)  # (obs, ln t, evidence, clock before it, its duration) since S left 0
    skip: int = 0
    last_step: int | None = None
    dirty: int = 0
    host: str | None = None
    alarms: int = 0
    recent: deque[tuple[int, float]] = field(default_factory=lambda: deque(maxlen=32))  # (line, ln t)
    held: Observation | None = None  # a spike awaiting the next reading (silent pause or slowdown?)
    history: deque[float] = field(default_factory=lambda: deque(maxlen=256))  # ln t of every baselined reading, in order
    at_step: int | None = None  # the step of the last reading (its own, or the last one the log printed)
    gap: int = 1  # steps the current reading covers
    clock: float = 0.0  # the stream's log time: every reading's step time x the steps it covers, pauses included


class FailSlowDetector:
    """Online fail-slow detector for one job's log (module docstring)."""

    def __init__(self, config: FailSlowConfig | None = None) -> None:
        self.config = config or FailSlowConfig()
        self._streams: dict[str, _Stream] = {}
        self._lineno = 0
        self.alerts: list[FailSlowAlert] = []
        self.observations = 0
        self._step: int | None = None  # the last step any progress line printed
        self._native_job = False  # the log prints job-wide progress lines of its own
        self._group_step: int | None = None  # per-rank readings of this step, for the job-level median
        self._group: dict[str, float] = {}
        self._group_line = 0
        self._group_done = False

    # -- feeding ------------------------------------------------------------------------------
    def feed(self, line: str, lineno: int | None = None) -> list[FailSlowAlert]:
        """Read one line (1-based `lineno`, default: the next); the alerts it raised."""
        self._lineno = lineno if lineno is not None else self._lineno + 1
        return self.feed_read(*read_observation(line, self._lineno))

    def feed_read(self, obs: Observation | None, kind: str) -> list[FailSlowAlert]:
        """Feed one line already read by `read_observation` (lets several detectors share a parse)."""
        if kind == "pause":
            for st in self._streams.values():
                st.skip = max(st.skip, self.config.pause_skip)
            return []
        if kind == "restart":
            for st in self._streams.values():
                self._restart(st)
            return []
        if obs is None:
            return []
        return self.observe(obs)

    def feed_many(self, lines: Iterable[str], start: int = 1) -> list[FailSlowAlert]:
        out: list[FailSlowAlert] = []
        for i, line in enumerate(lines, start):
            out.extend(self.feed(line, i))
        return out

    def observe(self, obs: Observation) -> list[FailSlowAlert]:
        """Feed one parsed observation (what `feed` does after reading a line); per-rank readings
        also feed the job-level series when the log prints none of its own (`_across_ranks`)."""
        out = self._observe_stream(obs)
        if obs.rank is None:
            self._native_job = True
        elif self.config.rank_median_stream and not self._native_job:
            if (job := self._across_ranks(obs)) is not None:
                out += self._observe_stream(job)
        return out

    def _across_ranks(self, obs: Observation) -> Observation | None:
        """The job-level reading of a log whose progress lines are all per rank: the median of the
        ranks' readings of one step, once every rank seen so far has reported it (or the next step
        began). A job-wide slowdown is one change, tested once on this series, not once per rank."""
        at = obs.step if obs.step is not None else self._step
        if at is None:
            return None
        done: Observation | None = None
        if at != self._group_step:
            if self._group_step is not None and not self._group_done and len(self._group) >= 2:
                done = Observation(self._group_line, median(self._group.values()), self._group_step)
            self._group_step, self._group, self._group_done = at, {}, False
        if self._group_done:
            return done
        self._group[obs.stream] = obs.value
        self._group_line = obs.lineno
        if len(self._group) >= max(2, len(self._streams) - ("job" in self._streams)):
            self._group_done = True
            return Observation(obs.lineno, median(self._group.values()), at)
        return done

    def _observe_stream(self, obs: Observation) -> list[FailSlowAlert]:
        key = obs.stream
        st = self._streams.get(key)
        if st is None:
            if len(self._streams) >= self.config.max_streams:
                return []
            st = self._streams[key] = _Stream(base=deque(maxlen=self.config.baseline_window))
        if obs.host is not None:
            st.host = obs.host
        if obs.step is not None and st.last_step is not None:
            if obs.step == st.last_step:
                return []  # the same step printed twice (a redraw, a duplicated line)
            if obs.step < st.last_step:
                self._restart(st)  # the counter went back: a restart from a checkpoint
        if obs.step is not None:
            st.last_step = self._step = obs.step
        at = obs.step if obs.step is not None else self._step
        st.gap = at - st.at_step if at is not None and st.at_step is not None and at > st.at_step else 1
        st.at_step = at
        st.clock += obs.value * st.gap
        self.observations += 1
        if st.skip > 0:
            st.skip -= 1
            return []
        st.recent.append((obs.lineno, math.log(obs.value)))
        alarm = self._update(st, obs)
        if alarm is None:
            return []
        if self.alerts and alarm.since_line <= self.alerts[-1].line and alarm.stream != self.alerts[-1].stream:
            return []  # another stream's view of the incident already reported
        alert = self._localise(alarm)
        self.alerts.append(alert)
        return [alert]

    # -- one stream ---------------------------------------------------------------------------
    def _restart(self, st: _Stream) -> None:
        st.in_warmup, st.warm_seen, st.s, st.held = True, 0, 0.0, None
        st.warm.clear()
        st.since.clear()

    def _update(self, st: _Stream, obs: Observation) -> FailSlowAlert | None:
        c = self.config
        y = math.log(obs.value)
        if st.in_warmup:
            st.warm.append(y)
            st.warm_seen += 1
            if st.warm_seen < c.warmup_events + c.plateau_window and st.warm_seen < c.max_warmup_events:
                return None
            w = list(st.warm)
            if st.warm_seen < c.max_warmup_events and median(w[-2 * c.plateau_window:-c.plateau_window]) - median(
                    w[-c.plateau_window:]) > math.log1p(c.plateau_tol):
                return None  # still getting faster
            st.in_warmup = False
            if st.mu is None:
                st.base.extend(w[-c.plateau_window:])
            return None
        if st.mu is None or len(st.base) < c.baseline_events:
            st.base.append(y)
            st.history.append(y)
            if len(st.base) >= c.baseline_events:
                self._rebaseline(st)
            return None
        held, st.held = st.held, None
        if y - st.mu >= math.log(c.spike_ratio):
            if held is None:
                st.held = obs  # alone, a silent pause: judged on the next reading
                return None
            first = self._cusum(st, held, math.log(held.value))
            return self._cusum(st, obs, y) or first
        return self._cusum(st, obs, y)

    def _cusum(self, st: _Stream, obs: Observation, y: float) -> FailSlowAlert | None:
        """One CUSUM step on an in-control-baselined stream; an alarm when it passes every check."""
        c = self.config
        assert st.mu is not None
        sigma = max(st.sigma, c.min_sigma)
        z = (y - st.mu) / sigma
        k = max(c.min_k, math.log1p(c.target_shift) / 2 / sigma)
        h = max(c.min_h, math.log(c.arl0) / (2 * k))
        st.s = max(0.0, st.s + min(z, k + c.clip_extra) - k)
        # every reading joins the rolling baseline (keeping only in-control ones would bias it low
        # and its scale small); a real shift is re-baselined at its alarm anyway. The baseline is
        # recomputed only while no shift is pending (S = 0): a shift that must persist for
        # `persist_s` is judged against the level before it, not one it has half absorbed
        st.base.append(y)
        st.history.append(y)
        st.dirty += 1
        if st.s <= 0.0:
            st.since.clear()
            if st.dirty >= 10:
                self._rebaseline(st)
            return None
        if st.dirty >= (c.baseline_window if c.hold_pending else 10):
            self._rebaseline(st)  # a pending shift that never resolves is the new normal
        st.since.append((obs, y, min(z, k + c.clip_extra) - k, st.clock - obs.value * st.gap, obs.value * st.gap))
        if len(st.since) > 2 * c.baseline_window:
            del st.since[0]
        if st.s < h or len(st.since) < c.min_events:
            return None
        # the most likely onset: after the lowest point of the cumulative evidence
        run, low, j0 = 0.0, 0.0, 0
        for j, (_, _, inc, _, _) in enumerate(st.since):
            run += inc
            if run < low:
                low, j0 = run, j + 1
        tail = st.since[j0:]
        if st.s < c.decisive_h * h and not self._persisted(st, tail):
            return None
        level = median(v for _, v, _, _, _ in tail)
        ratio = math.exp(level - st.mu)
        recent = math.exp(median(v for _, v, _, _, _ in st.since[-c.min_events:]) - st.mu)
        share = sum(v - st.mu >= math.log(c.share_ratio) for _, v, _, _, _ in tail) / len(tail)
        if ratio < c.min_ratio or recent < c.min_ratio or share < c.min_share or not self._abrupt(st, len(tail), level):
            if len(tail) >= 2 * c.min_events and ratio < c.min_ratio:
                # a lasting shift too small to matter (drift): it becomes the baseline
                st.base.extend(v for _, v, _, _, _ in tail)
                self._rebaseline(st)
                st.s = 0.0
                st.since.clear()
            return None
        st.since = tail
        first = st.since[0][0]
        if c.jobwide_from_job and obs.rank is not None and self._job_judges(first.lineno):
            return None  # most ranks moved together: a job-wide question, for the job-level series
        conf = 1.0 - 0.5 * math.exp(-(st.s - h) / h) * math.exp(-len(st.since) / 10)
        alert = FailSlowAlert(line=obs.lineno, since_line=first.lineno, since_step=first.step, ratio=round(ratio, 4),
                              confidence=round(min(conf, 0.999), 3), stream=obs.stream, baseline_s=math.exp(st.mu),
                              rank=obs.rank, host=st.host, step=obs.step)
        # re-baseline on the new level: one change, one alert
        st.base.clear()
        st.base.extend(v for _, v, _, _, _ in st.since)
        self._rebaseline(st)
        st.s = 0.0
        st.since.clear()
        st.alarms += 1
        return alert

    def _persisted(self, st: _Stream, tail: list[tuple[Observation, float, float, float, float]]) -> bool:
        """The shift has lasted `min_events` readings and, where those cover less, `persist_s` of
        the stream's log time (each reading's step time x the steps it covers, the readings that
        carry a checkpoint or evaluation pause included; at most `max_persist_events` readings).
        Four readings of a job that steps every second are a few seconds of ordinary noise: the
        dev-seed false alarms on per-rank logs (6 of 7) were 4-6 readings covering 2-11 s of step
        time, read against a noise scale estimated 10-70% too small. 15 s is above all of them
        and a quarter of the 60-s detection budget: the wall clock runs ahead of the step times
        when checkpoints and evaluations intervene, and CUSUM needs its own readings first."""
        c = self.config
        if len(tail) < c.min_events:
            return False
        lasted = st.clock - tail[0][3] if c.persist_pauses else sum(d for *_, d in tail)
        return len(tail) >= c.max_persist_events or lasted >= c.persist_s

    def _abrupt(self, st: _Stream, n_tail: int, level: float) -> bool:
        """A change point, not a drift: the level since the onset is `min_ratio` above the level
        just before it (the `baseline_events` readings preceding the onset), not only above the
        rolling baseline, which lags a slow drift by half its window. A step passes at once (the
        readings before it sit at the old level); a ramp does not, since the readings before its
        estimated onset have already risen most of the way. Without readings before the onset in
        `history`, the baseline stands in."""
        c = self.config
        pre = list(st.history)[-n_tail - c.baseline_events:-n_tail]
        if len(pre) < c.baseline_events:
            return True
        return level - median(pre) >= math.log(c.min_ratio)

    @staticmethod
    def _rebaseline(st: _Stream) -> None:
        vals = list(st.base)
        mu = median(vals)
        st.mu = mu
        st.sigma = 1.4826 * median(abs(v - mu) for v in vals)
        st.dirty = 0

    # -- localisation -------------------------------------------------------------------------
    def _ranks(self) -> dict[str, _Stream]:
        return {k: s for k, s in self._streams.items() if k != "job"}

    def _elevation(self, st: _Stream, since_line: int) -> float | None:
        """Median ratio of a stream's readings from `since_line` on to its baseline (None: no data)."""
        ys = [y for ln, y in st.recent if ln >= since_line]
        if st.mu is None or not ys:
            return None
        return math.exp(median(ys) - st.mu)

    def _slow_ranks(self, since_line: int, own: str | None = None) -> tuple[str | None, list[str]]:
        """The worst of the elevated ranks since `since_line` and all of them, when they are a
        minority of the ranks reporting their own times; (None, []) when the slowdown is job-wide.
        The worst is the alarming rank stream `own` when it is one of them: it has just been
        re-baselined on its new level, so its elevation reads 1.0 and a rank lifted by the job's
        noise would otherwise be named in its place."""
        ranks = self._ranks()
        if len(ranks) < 2:
            return None, []
        lifted = {k: r for k, s in ranks.items() if (r := self._elevation(s, since_line)) is not None}
        if not lifted:
            return None, []
        slow = [k for k, r in lifted.items() if r >= self.config.min_ratio or ranks[k].alarms > 0]
        if not slow or len(slow) >= self.config.jobwide_share * len(lifted):
            return None, []
        return (own if own in slow else max(slow, key=lambda k: lifted[k])), slow

    def _job_judges(self, since_line: int) -> bool:
        """A rank stream's shift is job-wide (most ranks moved with it) and the job-level series
        exists (the job's own progress lines, or the ranks' median): that series decides. Every
        rank of a synchronous job carries the job's own fluctuations; letting each rank alarm on
        them tests one job-wide question once per rank, and the first of 8-16 to cross raises
        the alarm (dev seeds: 3 of the 6 false alarms were such a rank alarm reported as job-wide;
        2 go, the third is still raised by the job-level series itself)."""
        job = self._streams.get("job")
        return job is not None and job.mu is not None and self._slow_ranks(since_line)[0] is None

    def _localise(self, alert: FailSlowAlert) -> FailSlowAlert:
        """Name a rank when a minority of the ranks that report their own times are elevated since
        the onset; otherwise the slowdown is job-wide."""
        ranks = self._ranks()
        jobwide = replace(alert, scope="job", rank=None, host=None)
        worst, slow = self._slow_ranks(alert.since_line, alert.stream)
        if worst is None:
            return jobwide
        st = ranks[worst]
        hosts = {s.host for k, s in ranks.items() if k in slow}
        host_ranks = [k for k, s in ranks.items() if s.host is not None and s.host == st.host]
        scope = "host" if st.host is not None and len(host_ranks) > 1 and set(host_ranks) <= set(slow) and len(hosts) == 1 else "rank"
        return replace(alert, scope=scope, rank=int(worst[4:]), host=st.host)

    # -- summary ------------------------------------------------------------------------------
    def current(self) -> FailSlowAlert | None:
        """The most recent alert, re-localised with everything read since (a slow rank first
        named alone may turn out to be one of many)."""
        return self._localise(self.alerts[-1]) if self.alerts else None


def detect_lines(lines: Iterable[str], config: FailSlowConfig | None = None) -> list[FailSlowAlert]:
    """Batch API: every alert the online detector raises over a whole log (lines numbered from 1)."""
    det = FailSlowDetector(config)
    return det.feed_many(lines)


class FailSlowMonitor:
    """A detector over a growing log file (`LogTail`: only new bytes are read on each `poll`; a
    rotated or truncated file starts a fresh detector). Remembers when each line was first read,
    so an alert's onset has a wall-clock time (`onset_time`) for callers that think in time."""

    def __init__(self, path: str | Path, config: FailSlowConfig | None = None, *,
                 clock: Callable[[], float] = time.time, max_read_bytes: int = 8 << 20) -> None:
        from schedmate.agents.tracker.tail import LogTail

        self.path = Path(path)
        self.config = config
        self.clock = clock
        self._tail = LogTail(self.path, max_read_bytes=max_read_bytes)
        self.detector = FailSlowDetector(config)
        self._generation = 0
        self._read_at: list[tuple[int, float]] = []  # (first line of a poll, clock at that poll)

    def poll(self) -> list[FailSlowAlert]:
        """Read what was appended since the last poll; the alerts it raised."""
        read = self._tail.read()
        now = self.clock()
        if self._tail.generation != self._generation:
            self._generation = self._tail.generation
            self.detector, self._read_at = FailSlowDetector(self.config), []
        out: list[FailSlowAlert] = []
        if read.lines:
            self._read_at.append((read.lines[0].lineno, now))
        for tl in read.lines:
            out.extend(self.detector.feed(tl.raw.decode("utf-8", errors="replace"), tl.lineno))
        return out

    def onset_time(self, alert: FailSlowAlert) -> float | None:
        """Clock time of the poll that first read the alert's onset line."""
        at = [t for first, t in self._read_at if first <= alert.since_line]
        return at[-1] if at else None

    def close(self) -> None:
        self._tail.close()


@dataclass(frozen=True)
class ThresholdConfig:
    factor: float = 1.2
    window: int = 100
    min_history: int = 10


class ThresholdBaseline:
    """The naive rule: flag a step time above `factor` x the median of the stream's last `window`
    readings (no warm-up exclusion, no pause handling), one alert per excursion."""

    def __init__(self, config: ThresholdConfig | None = None) -> None:
        self.config = config or ThresholdConfig()
        self._hist: dict[str, deque[float]] = {}
        self._above: dict[str, bool] = {}
        self._lineno = 0
        self.alerts: list[FailSlowAlert] = []

    def feed(self, line: str, lineno: int | None = None) -> list[FailSlowAlert]:
        self._lineno = lineno if lineno is not None else self._lineno + 1
        return self.feed_read(*read_observation(line, self._lineno))

    def feed_read(self, obs: Observation | None, kind: str = "progress") -> list[FailSlowAlert]:
        if obs is None:
            return []
        hist = self._hist.setdefault(obs.stream, deque(maxlen=self.config.window))
        out: list[FailSlowAlert] = []
        if len(hist) >= self.config.min_history:
            med = median(hist)
            above = obs.value > self.config.factor * med
            if above and not self._above.get(obs.stream, False):
                scope = "rank" if obs.rank is not None and len(self._hist) >= 2 else "job"
                out.append(FailSlowAlert(line=obs.lineno, since_line=obs.lineno, since_step=obs.step,
                                         ratio=round(obs.value / med, 4), confidence=1.0, stream=obs.stream,
                                         baseline_s=med, scope=scope, rank=obs.rank if scope == "rank" else None,
                                         host=obs.host if scope == "rank" else None, step=obs.step))
            self._above[obs.stream] = above
        hist.append(obs.value)
        self.alerts.extend(out)
        return out

    def feed_many(self, lines: Iterable[str], start: int = 1) -> list[FailSlowAlert]:
        out: list[FailSlowAlert] = []
        for i, line in enumerate(lines, start):
            out.extend(self.feed(line, i))
        return out
