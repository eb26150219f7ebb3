"""The Metric Tracker (spec §3): log → step time, loss and throughput, with the lines they came from.

One pass (`MetricTracker.observe`):

1. read the log **newest first** (a file is read backwards in blocks; an unterminated last line
   is skipped: it may still be being written), in windows of `window` lines;
2. run the framework regexes on every line (microseconds), and the core `LineClassifier` on the
   lines that need it. Default `classify="auto"`: a line a regex reads is a progress candidate
   as it is; the other lines are classified only when an LLM could read them, since the
   classifier's job here is to choose the few lines the LLM sees (spec §3.1-3.2). Measured on
   2 busy cores, embedding a new template costs 20-300 ms, and padded logs are mostly new
   templates, so classifying lines a regex already read (or that no LLM will see) dominated
   the pass. `classify="always"` classifies every line first (the literal pipeline; keeps
   regex-read lines labelled `progress` or low-confidence `other`, e.g. a bare tqdm bar).
   Validation/evaluation/test lines (`Epoch(val)`, `Test: [`, fairseq `valid on`, YOLO's
   `Class Images` bar, ...; `formats.is_eval_line`) are dropped before any of this: their
   timings are the evaluation loop's, not the training step's.
   A physical line holding `\\r` redraws also yields its newest training-bar redraw (HF
   Trainer prints its `{'loss': ..}` dict over the bar that carries the step time);
3. per candidate: drop exact duplicates (N ranks print the same line) and instruction-like text
   (`looks_like_injection`); extract with the **regex fast path**; otherwise, if an LLM was
   given, reuse a validated field map learned for this line shape, else ask the LLM (at most
   `max_llm_calls` per pass) and keep only what `llm_extractor.validate` confirms in the line;
4. stop once the format family the estimate will use has `max_lines` lines with a step time or
   a rate (newest first, so warm-up steps early in the log do not dominate a running job); one
   line per (line shape, step); lines with only a loss never end the pass (`_select`);
5. per metric: take the values of one format family (`_pick_family`: among formats with
   enough lines, a framework's own timer before a generic bar before LLM-read values, and a
   run-long training bar before evaluation bars that restart), keep only the newest regime if
   the values shift level (a slowdown, or warm-up at the old end), drop outliers by MAD
   (`robust.py`), report the mean of the rest with its lines (the loss: the newest value,
   since a loss trends and a window mean lags it, and a spike is news, not noise). A log with
   step counters and date-time stamps but no printed duration gets a step time from their
   slope (`derived`); a "step time" that grows in proportion to the step counter is a clock
   since the start (`train_time: 250140ms`), and its slope is the step time (`+cumulative`).
   Step counters that restart (per-epoch `[2][10/35]`) are not duplicates of the last epoch's.

Result: a `TrackerReport` (estimates, the lines used and dropped, confidence, method, LLM
status) or `NoSignal(reason)` when the log states no progress (spec §3.3: the host scheduler then
keeps its default for that job). An LLM failure never fails a pass: `LLMUnavailable` switches the
pass (and the next `llm_retry_after_s` seconds) to regex-only, `LLMOutputError` skips the line;
the report says which (`llm_status`, `llm_error`, `notes`).

Confidence (of the primary metric: step time, else throughput, else loss), in [0, 1]:
`method weight (regex 1.0, mixed 0.85, llm 0.7) × support (min(1, kept/5)) ×
kept share (0.5 + 0.5·kept/all) × consistency 1/(1 + 2·robust CV)`.

Every pass is one OpenTelemetry span `metric_tracker.observe` (attributes `schedmate.tracker.*`:
lines read, progress lines, candidates, good lines, LLM calls/errors, method, signal).
A `MetricTracker` is not thread-safe; share one per worker (its caches serve all jobs).
"""

from __future__ import annotations

import math
import os
import re
import time
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import tzinfo
from pathlib import Path
from typing import Literal

from langchain_core.language_models import BaseChatModel
from opentelemetry.trace import Span, Tracer

from schedmate.agents.tracker.extraction import RULE_DIRECTNESS
from schedmate.agents.tracker.formats import clock_of_day_res, is_eval_line
from schedmate.agents.tracker.llm_extractor import (
    FieldMap,
    Validation,
    extract_with_llm,
    looks_like_injection,
    shape_key,
)
from schedmate.agents.tracker.regex_extractors import (
    Extraction,
    bar_in_redraws,
    parse_timestamp,
    regex_extract,
    strip_timestamp,
    timestamp_resolution,
)
from schedmate.agents.tracker.robust import cumulative_slope, newest_regime, robust_mean
from schedmate.embeddings.classifier import Category, LineClassifier
from schedmate.embeddings.logtext import DEFAULT_MAX_CHARS, normalise_line
from schedmate.llm_errors import LLMError, LLMRequestError, LLMStatus, LLMUnavailable
from schedmate.logfile import NotRegularFile, open_regular
from schedmate.structured import Method as LLMMethod
from schedmate.tracing import get_tracer

_PER_STEP_RULES = frozenset({"named_per_step", "per_step_unit", "inverse_rate"})
_REGEX: Literal["regex", "llm"] = "regex"  # how a line was read (LineMetrics.method)
_LLM: Literal["regex", "llm"] = "llm"
Method = Literal["regex", "llm", "mixed"]
TimestampSource = Literal["line", "observed"]

ATTR_LINES_READ = "schedmate.tracker.lines_read"
ATTR_PROGRESS_LINES = "schedmate.tracker.progress_lines"
ATTR_CANDIDATES = "schedmate.tracker.candidates"
ATTR_GOOD_LINES = "schedmate.tracker.good_lines"
ATTR_LLM_CALLS = "schedmate.tracker.llm_calls"
ATTR_LLM_ERRORS = "schedmate.tracker.llm_errors"
ATTR_LLM_STATUS = "schedmate.tracker.llm_status"
ATTR_METHOD = "schedmate.tracker.method"
ATTR_SIGNAL = "schedmate.tracker.signal"
ATTR_REASON = "schedmate.tracker.reason"
ATTR_OUTLIERS = "schedmate.tracker.outliers_dropped"
ATTR_SOURCE = "schedmate.tracker.source"

METHOD_WEIGHT: dict[str, float] = {"regex": 1.0, "mixed": 0.85, "llm": 0.7}
# Choice between formats stating the same metric: a framework's own timer first, a generic
# progress bar (which may time any loop) and LLM-read values last.
FORMAT_PRECEDENCE: dict[str, int] = {
    "megatron": 0, "deepspeed": 1, "hf_trainer": 2, "mmengine": 3, "detectron2": 3, "metric_logger": 3,
    "fairseq": 3, "timm": 3, "marian": 3, "darknet": 3, "bigdl": 3, "yolact": 3, "paddle": 3, "torchtitan": 3, "nemo": 3, "nanogpt": 3, "keras": 3, "fields": 3,
    "key_value": 3, "lightning": 4, "tqdm": 5, "llm": 6,
}  # fmt: skip
_SHAPE_CACHE = 1024  # line shapes (numbers masked) with what the LLM taught about them
_MAX_ASKS_PER_SHAPE = 2  # LLM calls about one line shape, ever (per tracker)


@dataclass(frozen=True, slots=True)
class SourceLine:
    """Where a value came from. `lineno` is 1-based (None when not counted); `offset` in bytes."""

    lineno: int | None
    text: str
    offset: int | None = None
    timestamp: float | None = None
    timestamp_source: TimestampSource | None = None


@dataclass(slots=True)
class TrackedLine:
    """A progress candidate. Extraction results are cached on it (registry lines live long)."""

    source: SourceLine
    regex: Extraction | None
    category: Category | None  # the classifier's label; None when it was not needed
    llm_result: Extraction | None = None
    llm_done: bool = False

    @property
    def text(self) -> str:
        return self.source.text

    @property
    def timestamp(self) -> float | None:
        return self.source.timestamp


@dataclass(frozen=True, slots=True)
class LineMetrics:
    """One good line: what was extracted from it, and how."""

    line: SourceLine
    extraction: Extraction
    method: Literal["regex", "llm"]


@dataclass(frozen=True, slots=True)
class MetricEstimate:
    """A robust mean over the newest good lines of one `format` (extractor family); `lines`
    were used, `dropped` were MAD outliers; `other_formats` also stated this metric but lost."""

    value: float
    unit: str
    median: float
    rel_spread: float
    lines: tuple[SourceLine, ...]
    dropped: tuple[SourceLine, ...]
    method: Method
    format: str = ""
    other_formats: tuple[str, ...] = ()
    superseded: tuple[SourceLine, ...] = ()  # older lines before a level shift (`newest_regime`)
    # the newest line's own value (what "the last step time" means to a reader of the log); `value`
    # is the steady estimate a slowdown check compares, robust to one eval or checkpoint spike
    last: float | None = None
    # which rule read the values (`extraction.TimeRule`; the most common among `lines`), and this
    # value's confidence in [0, 1]: the rule's directness x support x agreement (`_confidence`)
    rule: str | None = None
    confidence: float | None = None

    @property
    def n(self) -> int:
        return len(self.lines)

    @property
    def derived(self) -> bool:
        """Computed from line stamps and step counters, not printed (`_step_time_from_stamps`)."""
        return self.format.endswith("+timestamps")


@dataclass(slots=True)
class PassStats:
    lines_read: int = 0
    binary_lines: int = 0
    evaluation_lines: int = 0  # validation/test progress lines skipped (`formats.is_eval_line`)
    progress_lines: int = 0
    regex_rescued: int = 0
    classified_lines: int = 0
    candidates: int = 0
    duplicates: int = 0
    injection_rejected: int = 0
    regex_lines: int = 0
    llm_lines: int = 0
    llm_calls: int = 0
    llm_template_hits: int = 0
    llm_rejected: int = 0
    llm_errors: int = 0
    good_lines: int = 0
    outliers_dropped: int = 0
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class TrackerReport:
    """The tracker's answer when the log states progress."""

    step_time: MetricEstimate | None
    loss: MetricEstimate | None
    throughput: MetricEstimate | None
    confidence: float
    method: Method
    lines: tuple[LineMetrics, ...]
    stats: PassStats
    llm_status: LLMStatus
    llm_error: str | None = None
    notes: tuple[str, ...] = ()

    ok: bool = field(default=True, init=False)

    @property
    def step_time_s(self) -> float | None:
        return self.step_time.value if self.step_time else None

    @property
    def last_step_time_s(self) -> float | None:
        """The newest progress line's step time (`step_time_s` is the steady window estimate)."""
        return self.step_time.last if self.step_time else None

    @property
    def steps_per_s(self) -> float | None:
        """Spec §3.2: TP = 1 / step time."""
        return 1.0 / self.step_time.value if self.step_time and self.step_time.value > 0 else None

    @property
    def llm_fallback(self) -> bool:
        """True when an LLM failure left this pass regex-only (or skipped lines)."""
        return self.llm_status in ("unavailable", "invalid_output", "request_error")


@dataclass(frozen=True, slots=True)
class NoSignal:
    """The log does not say (no progress lines, or none with a readable metric). Falsy."""

    reason: str
    stats: PassStats
    llm_status: LLMStatus = "disabled"
    llm_error: str | None = None
    notes: tuple[str, ...] = ()

    ok: bool = field(default=False, init=False)

    def __bool__(self) -> bool:
        return False

    @property
    def llm_fallback(self) -> bool:
        return self.llm_status in ("unavailable", "invalid_output", "request_error")


TrackerResult = TrackerReport | NoSignal


@dataclass(slots=True)
class _CandidateBatch:
    candidates: list[TrackedLine] = field(default_factory=list)
    binary: int = 0
    evaluation: int = 0
    classified: int = 0
    rescued: int = 0


@dataclass(slots=True)
class _ShapeEntry:
    field_map: FieldMap | None = None
    asks: int = 0


@dataclass(slots=True)
class _PassState:
    stats: PassStats
    llm_status: LLMStatus
    llm_error: str | None = None
    notes: list[str] = field(default_factory=list)
    llm_blocked: bool = False
    classified_any: bool = False


class MetricTracker:
    """Log lines → `TrackerReport` | `NoSignal`; see the module docstring."""

    def __init__(
        self,
        classifier: LineClassifier,
        llm: BaseChatModel | None = None,
        *,
        max_lines: int = 20,
        tracer: Tracer | None = None,
        window: int = 256,
        max_llm_calls: int = 4,
        llm_method: LLMMethod = "function_calling",
        llm_retries: int = 1,
        llm_retry_after_s: float = 30.0,
        mad_k: float = 3.0,
        max_scan_bytes: int = 64 << 20,
        max_count_bytes: int = 1 << 30,
        line_tz: tzinfo | None = None,
        max_chars: int = DEFAULT_MAX_CHARS,
        classify: Literal["auto", "always"] = "auto",
    ) -> None:
        if max_lines < 1:
            raise ValueError("max_lines must be >= 1")
        self.classifier = classifier
        self.llm = llm
        self.max_lines = max_lines
        self.window = window
        self.max_llm_calls = max_llm_calls
        self.llm_method: LLMMethod = llm_method
        self.llm_retries = llm_retries
        self.llm_retry_after_s = llm_retry_after_s
        self.mad_k = mad_k
        self.max_scan_bytes = max_scan_bytes
        self.max_count_bytes = max_count_bytes
        self.line_tz = line_tz
        self.max_chars = max_chars
        if classify not in ("auto", "always"):
            raise ValueError("classify must be 'auto' or 'always'")
        self.classify = classify
        self._tracer = get_tracer(tracer)
        self._shapes: OrderedDict[str, _ShapeEntry] = OrderedDict()
        self._llm_down_until = 0.0

    # -- public API -------------------------------------------------------------------------

    @property
    def tracer(self) -> Tracer:
        return self._tracer

    def observe(self, source: str | Path | Iterable[str | bytes], *, max_lines: int | None = None) -> TrackerResult:
        """One pass over a log file (read backwards, bounded) or over lines given oldest first."""
        is_path = isinstance(source, (str, Path))
        with self._tracer.start_as_current_span("metric_tracker.observe") as span:
            span.set_attribute(ATTR_SOURCE, "file" if is_path else "lines")
            state = self._new_state()
            t0 = time.perf_counter()
            if isinstance(source, (str, Path)):  # is_path
                result = self._observe_file(Path(source), state, max_lines)
            else:
                lines = source if isinstance(source, Sequence) else list(source)
                raw = [(i + 1, None, lines[i]) for i in range(len(lines) - 1, -1, -1)]
                cands = self._candidates(_windows(iter(raw), self.window), state)
                result = self._finish(self._select(cands, state, max_lines), state)
            state.stats.seconds = time.perf_counter() - t0
            self._annotate(span, result, state)
        return result

    def evaluate(
        self, candidates: Iterable[TrackedLine], *, max_lines: int | None = None, source: str = "tracked"
    ) -> TrackerResult:
        """One pass over already-classified candidates given **newest first** (the registry's
        path). LLM results are cached on the `TrackedLine`s, so a line is never asked twice."""
        with self._tracer.start_as_current_span("metric_tracker.observe") as span:
            span.set_attribute(ATTR_SOURCE, source)
            state = self._new_state()
            t0 = time.perf_counter()

            def counted() -> Iterator[TrackedLine]:
                for c in candidates:
                    state.stats.lines_read += 1
                    state.stats.progress_lines += 1
                    yield c

            result = self._finish(self._select(counted(), state, max_lines), state)
            state.stats.seconds = time.perf_counter() - t0
            self._annotate(span, result, state)
        return result

    def track_lines(
        self, lines: Sequence[tuple[int | None, int | None, str | bytes, float | None]]
    ) -> tuple[list[TrackedLine], int]:
        """Progress candidates (regex applied, timestamps resolved) among raw
        `(lineno, offset, raw, observed_at)` lines given oldest first, and the binary count."""
        out: list[TrackedLine] = []
        binary = 0
        step = self.window * 16
        for start in range(0, len(lines), step):
            batch = _CandidateBatch()
            self._scan(lines[start : start + step], batch, llm_usable=self.llm is not None)
            binary += batch.binary
            out.extend(batch.candidates)
        return out, binary

    # -- reading ----------------------------------------------------------------------------

    def _observe_file(self, path: Path, state: _PassState, max_lines: int | None) -> TrackerResult:
        try:  # a FIFO, device or directory is refused without blocking (`open_regular`)
            fh = open(open_regular(path), "rb")  # noqa: SIM115
        except (OSError, NotRegularFile) as exc:
            return NoSignal(f"cannot read log: {type(exc).__name__}: {exc}", state.stats, state.llm_status)
        with fh:
            size = os.fstat(fh.fileno()).st_size
            if size == 0:
                return NoSignal("empty log", state.stats, state.llm_status)
            reader = _ReverseLines(fh, size, self.max_scan_bytes, 4 * self.max_chars)
            cands = self._candidates(_windows(reader, self.window), state)
            good = self._select(cands, state, max_lines)
            if reader.hit_scan_limit:
                state.notes.append(f"scanned only the last {self.max_scan_bytes} bytes of the log")
            if reader.shrank:
                state.notes.append("log shrank while it was read (truncated or rotated): the reading uses the lines read before")
            if reader.lowest_offset <= self.max_count_bytes:
                base = _count_newlines(fh, reader.lowest_offset)
                good = [_renumber(g, base, reader.lines_read) for g in good]
            else:
                good = [_renumber(g, None, reader.lines_read) for g in good]
        return self._finish(good, state)

    def _candidates(
        self, windows: Iterator[list[tuple[int | None, int | None, str | bytes]]], state: _PassState
    ) -> Iterator[TrackedLine]:
        """Newest-first progress candidates from newest-first windows of raw lines."""
        for window in windows:
            state.stats.lines_read += len(window)
            batch = _CandidateBatch()
            self._scan(
                [(lineno, offset, raw, None) for lineno, offset, raw in window],
                batch,
                llm_usable=self.llm is not None and not state.llm_blocked,
            )
            state.stats.binary_lines += batch.binary
            state.stats.evaluation_lines += batch.evaluation
            state.stats.classified_lines += batch.classified
            state.stats.regex_rescued += batch.rescued
            state.classified_any |= batch.classified > 0
            for cand in batch.candidates:
                state.stats.progress_lines += 1
                yield cand

    def _scan(
        self,
        lines: Sequence[tuple[int | None, int | None, str | bytes, float | None]],
        batch: _CandidateBatch,
        *,
        llm_usable: bool,
    ) -> None:
        """Normalise, regex every line, classify what needs it; candidates keep the input order.

        `classify="auto"`: a line a framework regex reads is a candidate without embedding; the
        others are classified only when an LLM could read them (the classifier is the LLM's
        gate, spec §3.1). `classify="always"`: every line is classified first; regex-read lines
        are kept when labelled progress or (low-confidence) other.
        """
        rows: list[tuple[int | None, int | None, str, float | None, Extraction | None]] = []
        for lineno, offset, raw, observed in lines:
            norm = normalise_line(raw, self.max_chars)
            if norm.binary:
                batch.binary += 1
            elif norm.text.strip() and not norm.truncated:
                if is_eval_line(strip_timestamp(norm.text)):
                    batch.evaluation += 1  # validation/test progress: never the training step time
                else:
                    rows.append((lineno, offset, norm.text, observed, regex_extract(norm.text)))
                if ("\r" in raw) if isinstance(raw, str) else (b"\r" in raw):
                    # HF Trainer prints its metrics dict over the training bar: the newest bar
                    # redraw on the same physical line carries the step time.
                    bar = bar_in_redraws(raw, skip_last=True)
                    if bar is not None:
                        rows.append((lineno, offset, bar[0], observed, bar[1]))
        always = self.classify == "always"
        todo = [i for i, r in enumerate(rows) if always or not (r[4] is not None and r[4].has_metric)]
        labels: dict[int, Category] = {}
        if todo and (always or llm_usable):
            got = self.classifier.classify_lines([rows[i][2] for i in todo])
            labels = {i: label.category for i, label in zip(todo, got)}
            batch.classified += len(todo)
        for i, (lineno, offset, text, observed, rx) in enumerate(rows):
            category = labels.get(i)
            readable = rx is not None and rx.has_metric
            if readable:
                if category is not None and category not in (Category.PROGRESS, Category.OTHER):
                    continue
                batch.rescued += category is Category.OTHER
            elif category is not Category.PROGRESS:
                continue
            batch.candidates.append(self._candidate(lineno, offset, text, rx, category, observed))

    def _candidate(
        self,
        lineno: int | None,
        offset: int | None,
        text: str,
        rx: Extraction | None,
        category: Category | None,
        observed: float | None,
    ) -> TrackedLine:
        ts = parse_timestamp(text, self.line_tz)
        if ts is not None:
            src = SourceLine(lineno, text, offset, ts, "line")
        elif observed is not None:
            src = SourceLine(lineno, text, offset, observed, "observed")
        else:
            src = SourceLine(lineno, text, offset, None, None)
        return TrackedLine(src, rx, category)

    # -- extraction -------------------------------------------------------------------------

    def _new_state(self) -> _PassState:
        status: LLMStatus = "disabled" if self.llm is None else "unused"
        state = _PassState(PassStats(), status)
        if self.llm is not None and time.monotonic() < self._llm_down_until:
            state.llm_blocked = True
            state.llm_status = "unavailable"
            state.llm_error = "LLM marked unavailable by an earlier pass; regex only until it is retried"
            state.notes.append("LLM unavailable (cooling down): regex-only pass")
        return state

    def _select(self, candidates: Iterable[TrackedLine], state: _PassState, max_lines: int | None) -> list[LineMetrics]:
        """The newest good lines, at most `limit` per format family (`_family`).

        The pass stops once the family the estimate will use (`_pick_family`) has `limit` lines
        with a step time or a rate. If that family is a progress bar, it reads `patience` more
        lines first: another bar (HF's training bar behind the evaluation bars printed after it)
        may take precedence. Lines with only a loss (HF's `{'loss': ..}`) are kept, at most
        `limit`, but never end the pass on their own; once that many are kept and no timing
        line has been seen for `patience` lines, the pass ends (a log that never states a time
        is not read to its start).
        """
        limit = max_lines or self.max_lines
        patience = 4 * self.window
        good: list[LineMetrics] = []
        per_family: dict[str, _FamilyStats] = {}
        loss_only = 0
        loss_steps: set[int] = set()
        settled_at: int | None = None  # lines read when the chosen family filled up / losses did
        seen_text: set[str] = set()
        seen_step: set[tuple[str, int, int, str]] = set()
        counters: dict[str, _Counter] = {}  # per line shape: its step counter's restarts
        recent: deque[str] = deque(maxlen=8)  # the newest candidates, for echoes (`_echo_of`)
        st = state.stats
        for cand in candidates:
            st.candidates += 1
            if settled_at is not None and st.lines_read - settled_at > patience:
                break
            if cand.text in seen_text or _echo_of(cand.text, recent, cand.regex.step if cand.regex else None):
                st.duplicates += 1  # the same record again, or echoed by a second handler with another prefix
                continue
            seen_text.add(cand.text)
            recent.append(cand.text)
            if looks_like_injection(cand.text):
                st.injection_rejected += 1
                continue
            if cand.regex is not None and cand.regex.has_metric:
                ex, how = cand.regex, _REGEX
            else:
                read = self._llm(cand, state)
                if read is None:
                    continue
                ex, how = read, _LLM
            if ex.step is not None:  # N ranks, or a line re-printed: one line per (shape, step)
                shape = shape_key(cand.text)
                # (per rank: interleaved devices each print every step; `_step_time_from_stamps` keeps one rank)
                key = (shape, ex.step, counters.setdefault(shape, _Counter()).run(ex.step), rank_of(cand.text))
                if key in seen_step:
                    st.duplicates += 1
                    continue
                seen_step.add(key)
            has_timing = ex.step_time_s is not None or ex.throughput is not None or ex.interval_s is not None
            family = _family(ex)
            fam_stats = per_family.get(family)
            if (has_timing and fam_stats is not None and fam_stats.count >= limit) or (
                not has_timing and loss_only >= limit
            ):
                continue
            st.regex_lines += how == "regex"
            st.llm_lines += how == "llm"
            good.append(LineMetrics(cand.source, ex, how))
            if has_timing:
                per_family.setdefault(family, _FamilyStats()).add(ex.step)
                best = _pick_family(per_family)
                if per_family[best].count >= limit:
                    if "/" not in best:
                        break
                    settled_at = st.lines_read if settled_at is None else settled_at
                else:
                    settled_at = None  # a longer bar appeared: fill it up first
            else:
                if ex.step is None or ex.step not in loss_steps:  # ranks' copies of one step count once
                    loss_only += 1
                if ex.step is not None:
                    loss_steps.add(ex.step)
                if loss_only >= limit and not per_family and settled_at is None:
                    settled_at = st.lines_read
        st.good_lines = len(good)
        if state.stats.injection_rejected:
            state.notes.append(f"{state.stats.injection_rejected} line(s) with instruction-like text ignored")
        return good

    def _llm(self, cand: TrackedLine, state: _PassState) -> Extraction | None:
        """LLM path for one line: a learned field map for its shape, else (budget allowing) a
        call whose validated fields extend that shape's map. A shape whose map has no step time
        or rate is asked again (up to `_MAX_ASKS_PER_SHAPE` times in all), never more."""
        if cand.llm_done:
            return cand.llm_result
        if self.llm is None or state.llm_blocked:
            return None
        key = shape_key(cand.text)
        entry = self._shapes.get(key)
        if entry is not None:
            self._shapes.move_to_end(key)
        fmap = entry.field_map if entry else None
        asks = entry.asks if entry else 0
        may_ask = asks < _MAX_ASKS_PER_SHAPE and state.stats.llm_calls < self.max_llm_calls
        if fmap is not None and (fmap.has_timing or not may_ask):
            return self._apply_map(cand, fmap, state)
        if not may_ask:
            return None
        state.stats.llm_calls += 1
        entry = self._shape_entry(key)
        entry.asks += 1
        try:
            _, validation = extract_with_llm(
                self.llm, cand.text, method=self.llm_method, retries=self.llm_retries, tracer=self._tracer
            )
        except LLMUnavailable as exc:
            state.stats.llm_errors += 1
            entry.asks -= 1  # an outage says nothing about the format
            state.llm_blocked = True
            state.llm_status, state.llm_error = "unavailable", f"LLMUnavailable: {exc}"
            state.notes.append("LLM unavailable: fell back to regex-only")
            self._llm_down_until = time.monotonic() + self.llm_retry_after_s
            return None
        except LLMRequestError as exc:
            state.stats.llm_errors += 1
            entry.asks -= 1
            state.llm_blocked = True
            state.llm_status, state.llm_error = "request_error", f"LLMRequestError: {exc}"
            state.notes.append("LLM rejected the request: fell back to regex-only")
            return None
        except LLMError as exc:  # LLMOutputError: nothing valid after the retries
            state.stats.llm_errors += 1
            state.llm_status, state.llm_error = "invalid_output", f"{type(exc).__name__}: {exc}"
            state.notes.append(f"LLM gave no valid answer for line {cand.source.lineno}: skipped (regex only)")
            return self._apply_map(cand, fmap, state) if fmap is not None else self._done(cand, None)
        return self._accept(cand, entry, validation, state)

    def _accept(self, cand: TrackedLine, entry: _ShapeEntry, validation: Validation, state: _PassState) -> Extraction | None:
        if validation.rejections:
            fields = ", ".join(f"{r.field}={r.value!r} ({r.reason})" for r in validation.rejections)
            state.notes.append(f"LLM answer refused for line {cand.source.lineno}: {fields}")
        if validation.field_map is None:
            state.stats.llm_rejected += 1
            if state.llm_status == "unused":
                state.llm_status = "rejected"
            if entry.field_map is not None:
                return self._apply_map(cand, entry.field_map, state)
            return self._done(cand, None)
        entry.field_map = validation.field_map if entry.field_map is None else entry.field_map.merge(validation.field_map)
        if state.llm_status in ("unused", "rejected"):
            state.llm_status = "ok"
        return self._done(cand, entry.field_map.apply(cand.text, "llm"))

    def _apply_map(self, cand: TrackedLine, fmap: FieldMap, state: _PassState) -> Extraction | None:
        state.stats.llm_template_hits += 1
        if state.llm_status in ("unused", "rejected"):
            state.llm_status = "ok"
        return self._done(cand, fmap.apply(cand.text))

    @staticmethod
    def _done(cand: TrackedLine, ex: Extraction | None) -> Extraction | None:
        ex = ex if ex is not None and ex.has_metric else None
        cand.llm_result, cand.llm_done = ex, True
        return ex

    def _shape_entry(self, key: str) -> _ShapeEntry:
        entry = self._shapes.get(key)
        if entry is None:
            entry = self._shapes[key] = _ShapeEntry()
            while len(self._shapes) > _SHAPE_CACHE:
                self._shapes.popitem(last=False)
        return entry

    # -- aggregation ------------------------------------------------------------------------

    def _finish(self, good: list[LineMetrics], state: _PassState) -> TrackerResult:
        st = state.stats
        notes = tuple(state.notes)
        if not good:
            return NoSignal(_no_signal_reason(state), st, state.llm_status, state.llm_error, notes)
        good = _resolve_intervals(good)
        step_time = self._estimate(good, lambda e: e.step_time_s, "s")
        loss = self._estimate(good, lambda e: e.loss, "", current=True)
        throughput = None
        units: dict[str, int] = {}
        for g in good:
            if g.extraction.throughput is not None and g.extraction.throughput_unit:
                units[g.extraction.throughput_unit] = units.get(g.extraction.throughput_unit, 0) + 1
        if units:
            best = max(units, key=lambda u: units[u])  # dict order = newest first on ties
            throughput = self._estimate(
                good, lambda e: e.throughput if e.throughput_unit == best else None, best
            )
        if step_time is None:
            step_time = _step_time_from_clock(good)
            if step_time is not None:
                state.notes.append(f"step time derived from a clock since the start ({step_time.format})")
                notes = tuple(state.notes)
        if step_time is None:
            step_time = _step_time_from_stamps(good)
            if step_time is not None:
                state.notes.append(f"step time derived from line timestamps and step counters ({step_time.format})")
                notes = tuple(state.notes)
        step_time = _with_confidence(step_time, good, timing=True)
        loss = _with_confidence(loss, good)
        throughput = _with_confidence(throughput, good)
        estimates = [e for e in (step_time, loss, throughput) if e is not None]
        st.outliers_dropped = sum(len(e.dropped) for e in estimates)
        used = {id(s) for e in estimates for s in e.lines}
        methods = {g.method for g in good if id(g.line) in used}
        method: Method = "mixed" if len(methods) > 1 else methods.pop()
        primary = step_time or throughput or loss
        assert primary is not None
        return TrackerReport(
            step_time, loss, throughput, primary.confidence or 0.0, method, tuple(good), st,
            state.llm_status, state.llm_error, notes,
        )  # fmt: skip

    def _estimate(self, good: list[LineMetrics], get, unit: str, *, current: bool = False) -> MetricEstimate | None:
        """Robust mean of one metric over the lines of ONE format family (`_pick_family`): a
        tqdm bar and Megatron's timer, or a training and an evaluation bar, time different
        loops, so their values are never averaged together. `current` (the loss): the value is
        the newest line's -- a loss trends down, a window mean lags it, and a spike (divergence)
        is what a reader of the loss must see, not an outlier to drop."""
        groups: dict[str, list[tuple[LineMetrics, float]]] = {}
        for g in good:
            v = get(g.extraction)
            if v is not None and math.isfinite(v):
                groups.setdefault(_family(g.extraction), []).append((g, v))
        if not groups:
            return None
        stats: dict[str, _FamilyStats] = {}
        for k, rows_k in groups.items():
            fs = stats[k] = _FamilyStats()
            for g, _ in rows_k:  # newest first, as `good` is
                fs.add(g.extraction.step)
        fmt = _pick_family(stats)
        rows = groups[fmt]  # newest first
        # a time the line itself names per step (`elapsed time per iteration`, `s/it`) is never
        # a clock since the start, however a slowdown makes it climb with the step
        per_step = any(g.extraction.time_rule in _PER_STEP_RULES for g, _ in rows)
        if unit == "s" and not per_step and (cum := cumulative_slope([(g.extraction.step, v) for g, v in rows])) is not None:
            value, n_used = cum  # a clock since the start, not a step time: its slope is
            used = [g for g, _ in rows[:n_used]]
            return MetricEstimate(value, unit, value, 0.0, tuple(g.line for g in used), (), _method(used),
                                  f"{fmt}+cumulative", tuple(k for k in groups if k != fmt), last=value)  # fmt: skip
        newest = rows[0][1]
        keep = newest_regime([v for _, v in rows])
        superseded = tuple(g.line for g, _ in rows[keep:])
        rows = rows[:keep]
        summary = robust_mean([v for _, v in rows], self.mad_k)
        kept = [rows[i][0] for i in summary.kept]
        methods = {g.method for g in kept}
        method: Method = "mixed" if len(methods) > 1 else methods.pop()
        # the loss: the newest printed value, outlier or not (a spike is news, not noise)
        value = rows[0][1] if current else summary.mean
        return MetricEstimate(
            value, unit, summary.median, summary.rel_spread,
            tuple(g.line for g in kept), tuple(rows[i][0].line for i in summary.dropped), method, fmt,
            tuple(k for k in groups if k != fmt), superseded, newest,
        )  # fmt: skip

    def _annotate(self, span: Span, result: TrackerResult, state: _PassState) -> None:
        st = state.stats
        span.set_attribute(ATTR_LINES_READ, st.lines_read)
        span.set_attribute(ATTR_PROGRESS_LINES, st.progress_lines)
        span.set_attribute(ATTR_CANDIDATES, st.candidates)
        span.set_attribute(ATTR_GOOD_LINES, st.good_lines)
        span.set_attribute(ATTR_LLM_CALLS, st.llm_calls)
        span.set_attribute(ATTR_LLM_ERRORS, st.llm_errors)
        span.set_attribute(ATTR_LLM_STATUS, state.llm_status)
        span.set_attribute(ATTR_OUTLIERS, st.outliers_dropped)
        span.set_attribute(ATTR_SIGNAL, bool(result))
        if isinstance(result, TrackerReport):
            span.set_attribute(ATTR_METHOD, result.method)
        else:
            span.set_attribute(ATTR_METHOD, "none")
            span.set_attribute(ATTR_REASON, result.reason)


# -- helpers ----------------------------------------------------------------------------------


_DIGITS = re.compile(r"\d+")
_ECHO_MIN = 24  # characters the two copies of an echoed record must share at the end


def _echo_of(text: str, recent: Iterable[str], step: int | None = None) -> bool:
    """`text` is a recent line printed again by a second logging handler with another prefix
    (TF's `I0612 10:00:01.123 140 train.py:12] step 100 ..` and `INFO:tensorflow:step 100 ..`,
    icefall's stamped and root-logger copies): the two share their whole record after the
    prefixes, which differ and are short. The shared part must hold a digit (a value), and the
    line's step counter when it has one (else two steps with equal values would be one)."""
    body = text.rstrip()
    for other in recent:
        o = other.rstrip()
        n = 0
        for a, b in zip(reversed(body), reversed(o)):
            if a != b:
                break
            n += 1
        if n < _ECHO_MIN or n == len(body) == len(o):
            continue
        head_a, head_b = len(body) - n, len(o) - n
        if _DIGITS.sub("0", body[:head_a]).split() == _DIGITS.sub("0", o[:head_b]).split():
            continue  # the same prefix with other numbers: the next record of one handler, not an echo
        if max(head_a, head_b) <= 80 and n >= 0.5 * min(len(body), len(o)) and any(c.isdigit() for c in body[-n:]):
            if step is None or re.search(rf"(?<![\d.]){step}(?![\d.])", body[-n:]):
                return True
    return False


def _resolve_intervals(good: list[LineMetrics]) -> list[LineMetrics]:
    """Lines that state one logging interval's wall time without its length in steps (`loss 2.31
    (1m 2s 3ms)`, `time: 0:01:02` every 50 steps) get a step time: that time divided by the steps
    between the line and the previous line of its family (`good` is newest first). The oldest
    line uses its newer neighbour's spacing; a lone line is taken as one step."""
    if not any(g.extraction.interval_s is not None and g.extraction.step_time_s is None for g in good):
        return good
    by_family: dict[str, list[int]] = {}
    for i, g in enumerate(good):
        if g.extraction.step is not None:
            by_family.setdefault(_family(g.extraction), []).append(i)
    out = list(good)
    for idx in by_family.values():
        gaps: list[int | None] = []
        for j, i in enumerate(idx):
            older = good[idx[j + 1]].extraction.step if j + 1 < len(idx) else None
            step = good[i].extraction.step
            gaps.append(step - older if older is not None and step is not None and step > older else None)
        for j, i in enumerate(idx):
            ex = good[i].extraction
            if ex.interval_s is None or ex.step_time_s is not None:
                continue
            gap = gaps[j] if gaps[j] is not None else next((g for g in reversed(gaps[:j]) if g is not None), None)
            out[i] = LineMetrics(good[i].line, replace(ex, step_time_s=ex.interval_s / (gap or 1), time_rule="interval"),
                                 good[i].method)  # fmt: skip
    return out


def _with_confidence(e: MetricEstimate | None, good: list[LineMetrics], *, timing: bool = False) -> MetricEstimate | None:
    """`e` with the rule that read it and its confidence (`_confidence` x the rule's directness)."""
    if e is None:
        return None
    rule: str | None = None
    if e.format.endswith("+timestamps"):
        rule = "timestamps"
    elif e.format.endswith("+cumulative"):
        rule = "cumulative_slope"
    elif timing:
        used = {id(s) for s in e.lines}
        counts: dict[str, int] = {}
        for g in good:
            if id(g.line) in used and g.extraction.time_rule:
                counts[g.extraction.time_rule] = counts.get(g.extraction.time_rule, 0) + 1
        rule = max(counts, key=lambda r: counts[r]) if counts else None
    conf = _confidence(e)
    if rule is not None:
        conf = round(conf * RULE_DIRECTNESS.get(rule, 0.7), 4)
    return replace(e, rule=rule, confidence=conf)


def _confidence(e: MetricEstimate) -> float:
    kept, total = len(e.lines), len(e.lines) + len(e.dropped)
    support = min(1.0, kept / 5)
    share = 0.5 + 0.5 * kept / total
    consistency = 1.0 / (1.0 + 2.0 * e.rel_spread)
    return round(METHOD_WEIGHT[e.method] * support * share * consistency, 4)


def _step_time_from_stamps(good: list[LineMetrics], min_lines: int = 2, min_ticks: float = 20.0) -> MetricEstimate | None:
    """A step time for logs that print a step counter and a stamp but no duration (torchtitan's
    `step: N loss: .. tps: ..`, Caffe's glog `Iteration N, loss = ..`): the slope of stamp over
    step across the lines of one family, i.e. the time between lines divided by the steps between
    them. `value` is the slope over the newest run of lines (the counter falls going back in time:
    a restarted counter, a new pass, ends the run); `last` is the newest interval's, from the newest
    line back to the nearest older line at least `min_ticks` units of the stamps' resolution away.
    Needs `min_lines` lines and a span of at least `min_ticks` units (a seconds-only stamp needs
    >= 20 s), else None.

    Stamps: a full date-time at the line's start, else a time of day (`[12:00:01]`, glog's
    `I1013 14:04:15.149`, torch_xla's `Time=07:29:40`; unwrapped past midnight). Lines of several
    ranks or devices interleaved (`Device=xla:0/3`, `[rank1]`, `(0/7)`) are never mixed: one rank's
    sequence is used (the one with most lines, then the lowest rank), since ranks print the same
    step at slightly different times."""
    groups: dict[tuple[str, str], list[tuple[int, float, float, LineMetrics]]] = {}
    closed: set[tuple[str, str]] = set()
    for g in good:  # newest first
        ex, src = g.extraction, g.line
        if ex.step is None:
            continue
        if src.timestamp is not None and src.timestamp_source == "line":
            stamp, res = src.timestamp, timestamp_resolution(src.text) or 1.0
        elif (clock := clock_of_day_res(src.text)) is not None:
            stamp, res = clock
        else:
            continue
        gk = (_family(ex), rank_of(src.text))
        rows_g = groups.setdefault(gk, [])
        if rows_g and ex.step == rows_g[-1][0]:
            continue  # another line of the same step (one line per metric): its first stamp stands
        if gk in closed or (rows_g and ex.step > rows_g[-1][0]):
            closed.add(gk)  # the counter restarted (a new pass or epoch): the newest run only
            continue
        rows_g.append((ex.step, stamp, res, g))
    if not groups:
        return None
    key = min(groups, key=lambda k: (-len(groups[k]), k[1]))
    fam = key[0]
    rows = _unwrap_days(groups[key][::-1])  # oldest first
    if len(rows) < min_lines:
        return None
    (s0, t0, r0, _), (s1, t1, r1, _) = rows[0], rows[-1]
    if s1 <= s0 or t1 - t0 < min_ticks * max(r0, r1):
        return None
    value = (t1 - t0) / (s1 - s0)
    last = value
    for sj, tj, rj, _ in reversed(rows[:-1]):
        if sj < s1 and t1 - tj >= min_ticks * max(rj, r1):
            last = (t1 - tj) / (s1 - sj)
            break
    methods = {r[3].method for r in rows}
    method: Method = "mixed" if len(methods) > 1 else methods.pop()
    lines = tuple(r[3].line for r in sorted(rows, key=lambda r: -r[1]))
    return MetricEstimate(value, "s", value, 0.0, lines, (), method, f"{fam}+timestamps", last=last)


def _step_time_from_clock(good: list[LineMetrics]) -> MetricEstimate | None:
    """A step time from a clock since the start printed beside the step counter (fairseq's
    `wall=1118` when its `ups` is rounded to 0, OpenNMT-py's trailing `890 sec`): the slope of the
    clock over the step across the newest run of one family's lines (`last`: the newest two
    lines'). A lone line gives its clock over its step (the mean since the start, start-up
    included; the counter is taken to start at 0)."""
    groups: dict[str, list[tuple[int, float, LineMetrics]]] = {}
    closed: set[str] = set()
    for g in good:  # newest first
        ex = g.extraction
        if ex.step is None or ex.clock_s is None:
            continue
        fk = _family(ex)
        rows_g = groups.setdefault(fk, [])
        if rows_g and ex.step == rows_g[-1][0]:
            continue
        if fk in closed or (rows_g and (ex.step > rows_g[-1][0] or ex.clock_s >= rows_g[-1][1])):
            closed.add(fk)  # a restart (counter or clock): the newest run only
            continue
        rows_g.append((ex.step, ex.clock_s, g))
    if not groups:
        return None
    fam = min(groups, key=lambda k: -len(groups[k]))
    rows = groups[fam]
    (s1, t1, _), (s0, t0, _) = rows[0], rows[-1]
    if len(rows) == 1:
        if s1 <= 0:
            return None
        value = last = t1 / s1
    else:
        value = (t1 - t0) / (s1 - s0)
        last = (t1 - rows[1][1]) / (s1 - rows[1][0])
    used = [r[2] for r in rows]
    return MetricEstimate(value, "s", value, 0.0, tuple(g.line for g in used), (), _method(used),
                          f"{fam}+cumulative", last=last)  # fmt: skip


_RANK = re.compile(
    r"\b(?:rank|device|local_rank|global_rank|gpu|worker|proc)\s*[=:#]?\s*((?:[a-z]+:)?\d+(?:/\d+)?)"
    r"|\[(?:rank|trainer)(\d+)\]|\((\d+/\d+)\)",
    re.IGNORECASE,
)


def rank_of(text: str) -> str:
    """The rank or device a line names, as written (`Device=xla:0/3` -> "xla:0/3", `[rank1]` ->
    "1", icefall's `(0/7)` -> "0/7"), or "" when none."""
    m = _RANK.search(text)
    if m is None:
        return ""
    return next(g for g in m.groups() if g is not None)


def _unwrap_days(rows: list[tuple[int, float, float, LineMetrics]]) -> list[tuple[int, float, float, LineMetrics]]:
    """Times of day sorted by step: a time that falls back by over 12 h crossed midnight."""
    out, shift, prev = [], 0.0, None
    for step, t, res, g in rows:
        if prev is not None and t + shift < prev - 43200:
            shift += 86400.0
        out.append((step, t + shift, res, g))
        prev = t + shift
    return out


def _method(lines: Sequence[LineMetrics]) -> Method:
    methods = {g.method for g in lines}
    return "mixed" if len(methods) > 1 else methods.pop()


@dataclass(slots=True)
class _Counter:
    """A step counter seen newest first; `run` numbers its runs: a counter that goes *up* when
    walking back in time was restarted (per-epoch counters: `Epoch [2][10/35]` after
    `Epoch [1][30/35]`), so step 10 of epoch 2 is not a duplicate of step 10 of epoch 1."""

    last: int | None = None
    runs: int = 0

    def run(self, step: int) -> int:
        if self.last is not None and step > self.last:
            self.runs += 1
        self.last = step
        return self.runs


@dataclass(slots=True)
class _FamilyStats:
    """Lines of one format family seen newest first; `restarted`: its step counter went *up*
    when walking back in time, i.e. the bar was started again (an evaluation loop, an epoch)."""

    count: int = 0
    restarted: bool = False
    last_step: int | None = None
    steps: set[int] = field(default_factory=set)

    def add(self, step: int | None) -> None:
        if step is not None and step in self.steps and step == self.last_step:
            return  # another rank's line for the step just seen: no more support, no restart
        self.count += 1
        if step is not None:
            self.steps.add(step)
            if self.last_step is not None and step > self.last_step:
                self.restarted = True
            self.last_step = step


def _pick_family(stats: dict[str, _FamilyStats]) -> str:
    """The family whose values are used, among those with at least min(3, most) lines: a
    framework's own timer first (`FORMAT_PRECEDENCE`); between progress bars of one extractor
    (`tqdm/<total>`), one that never restarted (HF's run-long training bar, not the evaluation
    bar drawn anew at every evaluation), then the one with most lines, then the longest."""
    need = min(3, max(fs.count for fs in stats.values()))

    def rank(k: str) -> tuple[int, bool, int, int]:
        name, _, total = k.partition("/")
        fs = stats[k]
        return FORMAT_PRECEDENCE.get(name, len(FORMAT_PRECEDENCE)), fs.restarted, -fs.count, -int(total or 0)

    return min((k for k in stats if stats[k].count >= need), key=rank)


def _family(ex: Extraction) -> str:
    """Values are averaged within one family: an extractor, and for progress bars one bar
    length (a training bar and the evaluation bar printed between its redraws differ)."""
    if ex.framework.startswith("llm"):
        return "llm"
    if ex.total is not None:
        return f"{ex.framework}/{ex.total}"
    return ex.framework


def _no_signal_reason(state: _PassState) -> str:
    st = state.stats
    if st.lines_read == 0:
        return "empty log"
    if st.progress_lines == 0 and state.classified_any:
        return f"no progress lines among {st.lines_read} lines read"
    if st.progress_lines == 0:
        llm = "no LLM is configured" if state.llm_status == "disabled" else f"LLM {state.llm_status}"
        return (
            f"no progress lines among {st.lines_read} lines read: no line states a metric a framework "
            f"regex knows ({llm}, so other lines were not classified)"
        )
    why = [f"{st.progress_lines} progress line(s), none with a readable metric"]
    if st.injection_rejected:
        why.append(f"{st.injection_rejected} ignored as instruction-like text")
    if state.llm_status == "disabled":
        why.append("no regex matched and no LLM is configured")
    elif state.llm_status in ("unavailable", "request_error", "invalid_output"):
        why.append(f"LLM fallback failed ({state.llm_status}): regex only")
    elif st.llm_rejected:
        why.append(f"{st.llm_rejected} LLM answer(s) refused by validation against the line")
    return "; ".join(why)


def _renumber(g: LineMetrics, base: int | None, lines_read: int) -> LineMetrics:
    """File passes number lines from the end while reading; turn that into 1-based line numbers."""
    src = g.line
    rev = src.lineno  # 0 = the newest line read
    lineno = None if base is None or rev is None else base + (lines_read - rev)
    return LineMetrics(SourceLine(lineno, src.text, src.offset, src.timestamp, src.timestamp_source), g.extraction, g.method)


def _windows(
    lines: Iterable[tuple[int | None, int | None, str | bytes]], size: int
) -> Iterator[list[tuple[int | None, int | None, str | bytes]]]:
    batch: list[tuple[int | None, int | None, str | bytes]] = []
    for item in lines:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _count_newlines(fh, end: int, chunk: int = 1 << 20) -> int:
    fh.seek(0)
    count, left = 0, end
    while left > 0:
        block = fh.read(min(chunk, left))
        if not block:
            break
        count += block.count(b"\n")
        left -= len(block)
    return count


class _ReverseLines:
    """Complete lines of a file, newest first, as `(reverse index, offset, raw)`.

    Reads blocks backwards, at most `max_scan_bytes`. The unterminated last line is skipped (it
    may be half-written), and so is a line cut by the scan limit. A line longer than
    `max_line_bytes` (junk, a 100 MB redraw storm) is yielded empty, so it is never parsed, and
    counted in `long_lines`; memory stays bounded by one block plus one capped line.
    """

    def __init__(self, fh, size: int, max_scan_bytes: int, max_line_bytes: int, block: int = 1 << 18) -> None:
        self.fh, self.size = fh, size
        self.max_scan_bytes, self.max_line_bytes, self.block = max_scan_bytes, max_line_bytes, block
        self.lines_read = 0
        self.long_lines = 0
        self.lowest_offset = size
        self.hit_scan_limit = False
        self.shrank = False  # a read came back short: the file was truncated under us

    def __iter__(self) -> Iterator[tuple[int | None, int | None, bytes]]:
        pos = self.size
        floor = max(0, self.size - self.max_scan_bytes)
        carry = b""  # the end of a line whose start lies before `pos`
        carry_long = False
        dropping = True  # the bytes after the file's last newline: never a complete line
        while pos > floor:
            start = max(floor, pos - self.block)
            self.fh.seek(start)
            data = self.fh.read(pos - start)
            if len(data) != pos - start:
                self.shrank = True  # truncated under us: offsets no longer hold; what was read stands
                return
            parts = data.split(b"\n")
            pos = start
            if len(parts) == 1:  # no newline in this block: the carried line grows
                if not dropping:
                    carry, carry_long = self._cap(parts[0] + carry, carry_long)
                continue
            offsets = [start]
            for p in parts[:-1]:
                offsets.append(offsets[-1] + len(p) + 1)
            if not dropping:
                yield self._emit(offsets[-1], parts[-1] + carry, carry_long)
            dropping = False
            for k in range(len(parts) - 2, 0, -1):
                yield self._emit(offsets[k], parts[k], False)
            carry, carry_long = self._cap(parts[0], False)
        if pos == 0 and not dropping:
            yield self._emit(0, carry, carry_long)
        elif pos > 0:
            self.hit_scan_limit = True

    def _cap(self, data: bytes, long: bool) -> tuple[bytes, bool]:
        if len(data) > self.max_line_bytes:
            return data[-self.max_line_bytes :], True
        return data, long

    def _emit(self, offset: int, raw: bytes, long: bool) -> tuple[int | None, int | None, bytes]:
        self.lowest_offset = offset
        index = self.lines_read
        self.lines_read += 1
        if long or len(raw) > self.max_line_bytes:
            self.long_lines += 1
            head = raw[-self.max_line_bytes :]
            cr = head.find(b"\r")
            # a redraw storm keeps its newest whole redraws; any other overlong line is junk
            raw = head[cr + 1 :] if cr >= 0 else b""
        return (index, offset, raw)
