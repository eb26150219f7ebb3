"""Classify training-log lines (progress, error, warning, init, other) by embedding similarity.

Each category is described by a few short texts, embedded once. A template's score for a
category is the average of its cosine to the nearest description and to the descriptions'
centroid ("blend"; tuned on the dev split of tests/data/labelled_training_lines.tsv). Cheap
structural cues (traceback shapes, log-level tags, tqdm bars...) add a bonus for what the
embedding reads poorly. If the best category does not beat the runner-up by `margin`, the line
is 'other' with `confident=False`.

Cost model: embedding is ~10-30 ms per text on 2 CPU cores, a dict lookup well under 1 µs.
Lines are looked up by a digit-free key first (lines differing only in digits - rank
prefixes, step counters, losses - share it and are assumed to share a template); only unseen
keys are normalised and masked, and only unseen templates are embedded, in one batch per pass.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from itertools import islice
from typing import Literal

import numpy as np
from opentelemetry.trace import Span, Tracer

from schedmate.embeddings.embedder import Embedder
from schedmate.embeddings.logtext import DEFAULT_MAX_CHARS, normalise_line
from schedmate.embeddings.templates import ExactMiner, TemplateMiner, mask_variables
from schedmate.tracing import get_tracer

ATTR_LINES = "schedmate.classifier.lines"
ATTR_TEMPLATES_EMBEDDED = "schedmate.classifier.templates_embedded"
ATTR_CACHE_HITS = "schedmate.classifier.cache_hits"
ATTR_MODEL = "schedmate.classifier.model"


class Category(StrEnum):
    PROGRESS = "progress"
    ERROR = "error"
    WARNING = "warning"
    INIT = "init"
    OTHER = "other"


# Label texts: what a line of each kind says, phrased the way logs phrase it. Several per category
# because each category covers several shapes (a metric dump and a tqdm bar are both progress).
DEFAULT_DESCRIPTIONS: Mapping[Category, tuple[str, ...]] = {
    Category.PROGRESS: (
        "training progress: iteration, step, epoch, loss, learning rate, throughput",
        "iteration 10/500 | elapsed time per iteration (ms): 800 | loss: 2.5 | learning rate: 1e-4",
        "step 40: train loss 1.9, grad norm 0.7, samples/sec 300, tokens per second",
        "epoch 2 finished: validation loss 0.8, accuracy 91%, perplexity 7.1",
        "progress bar 30%|###   | 300/1000 [00:10<00:20, 9.5it/s]",
        "{'loss': 0.9, 'learning_rate': 2e-05, 'epoch': 1.2}",
    ),
    Category.ERROR: (
        "error: the job failed with an exception",
        "Traceback (most recent call last): exception raised in file, line, in function",
        "RuntimeError: CUDA error: out of memory, the process crashed",
        "fatal: collective operation timed out, NCCL communicator aborted, rank failed",
        "process killed with exit code 1, segmentation fault, core dumped, job cancelled",
        "ValueError: invalid shape, size mismatch, expected a different input",
        "FileNotFoundError, ImportError, KeyError, AssertionError",
        "loss became nan, training diverged, aborting",
    ),
    Category.WARNING: (
        "warning: this option is deprecated and will be removed in a future version",
        "UserWarning: please pass the argument explicitly; falling back to the default",
        "WARNING: possible problem, behaviour may be unexpected, results may be unreliable",
        "gradient overflow, skipping step, reducing loss scale",
        "connection attempt failed, retrying",
        "some weights were not initialized from the checkpoint and are newly initialized",
        "input longer than the maximum sequence length, it will be truncated",
        "performance warning: high memory pressure, low GPU utilization, slow down",
        "setting an environment variable to a default value, please tune it for performance",
    ),
    Category.INIT: (
        "initializing distributed training: world size, rank, data parallel and tensor parallel sizes",
        "arguments: name ........ value",
        "setting up: building tokenizer, loading model weights, compiling dataset index",
        "NCCL INFO bootstrap, channel, ring, network interface, Init COMPLETE",
        "model config: hidden_size, num_attention_heads, num_hidden_layers, vocab_size",
        "environment: CUDA_VISIBLE_DEVICES, GPU available, number of parameters, random seed",
        "***** Running training ***** number of examples, epochs, total batch size",
        "configuration options printed at startup",
    ),
    Category.OTHER: (
        "saving checkpoint to disk, checkpoint saved",
        "wandb: syncing run, view project at url",
        "writing output files, exporting the model, done",
        "generated sample text output",
        "============",
        "hello",
    ),
}


@dataclass(frozen=True, slots=True)
class Cue:
    """A structural pattern (matched on the masked template) that adds `bonus` to one category.

    Severity tags a program prints itself (`WARNING`, `E0501`, `NCCL WARN`) and shapes an
    embedding cannot read (traceback frames, tqdm bars) get larger bonuses than content words.
    """

    name: str
    category: Category
    pattern: re.Pattern[str]
    bonus: float


def _cue(name: str, category: Category, bonus: float, pattern: str, flags: int = 0) -> Cue:
    return Cue(name, category, re.compile(pattern, flags), bonus)


# Matched on masked text (numbers are <NUM>, paths <PATH>, ...), so a cue depends on the
# template only and its verdict can be cached with the template.
DEFAULT_CUES: tuple[Cue, ...] = (
    _cue("traceback-header", Category.ERROR, 0.25, r"^Traceback \(most recent call last\)"),
    _cue("traceback-frame", Category.ERROR, 0.25, r'^\s*File "[^"]*", line <NUM>'),
    _cue("exception", Category.ERROR, 0.2, r"^(?:[\w.]+\.)?\w*(?:Error|Exception)\b(?![-_])"),
    _cue("error-level", Category.ERROR, 0.25, r"^(?:E<NUM> |\[E[ \]<]|ERROR\b)|\[ERROR\]|\bNCCL ERROR\b"),
    _cue(
        "failure-words",
        Category.ERROR,
        0.1,
        r"\b(?:error|failed|failure|fatal|killed|aborted|abort|aborting|timed out|timeout|segmentation fault"
        r"|core dumped|out of memory|oom|cancelled|terminate called|exitcode: -?<NUM>)\b",
        re.IGNORECASE,
    ),
    _cue("warning-class", Category.WARNING, 0.25, r"\b[A-Z]\w*Warning\b|\bwarnings\.warn\("),
    _cue(
        "warning-level",
        Category.WARNING,
        0.25,
        r"^(?:W<NUM> |\[W[ \]<]|WARNING\b|[Ww]arning:)|\[WARN(?:ING)?\]|\bNCCL WARN\b|\bWarning:",
    ),
    _cue("tqdm-bar", Category.PROGRESS, 0.2, r"<NUM>\|[^|]*\| <NUM>/<NUM> \["),
    _cue(
        "iteration-counter",
        Category.PROGRESS,
        0.2,
        r"\b(?:iter(?:ation)?|step|epoch)s? ?\[?<NUM> ?/ ?<NUM>|\b(?:global_)?step[=:] ?<NUM>",
        re.IGNORECASE,
    ),
    _cue(
        "metric-pairs",
        Category.PROGRESS,
        0.15,
        r"\b(?:loss|lr|learning_rate|grad_norm|acc\w*|ppl|perplexity|mfu|tps|throughput)['\"]?\s*[:=]?\s+<NUM>"
        r"|\bloss['\"]?[:=]\s*<NUM>",
        re.IGNORECASE,
    ),
    _cue("nccl-info", Category.INIT, 0.15, r"\bNCCL INFO\b"),
    _cue("argument-dump", Category.INIT, 0.15, r"^\s*\S+ \.{3,} \S"),
)


def cue_category(text: str, cues: Sequence[Cue] = DEFAULT_CUES) -> Category:
    """Keyword baseline without embeddings: the category of the strongest cue, else OTHER."""
    masked = mask_variables(text)
    best: Cue | None = None
    for cue in cues:
        if (best is None or cue.bonus > best.bonus) and cue.pattern.search(masked):
            best = cue
    return best.category if best else Category.OTHER


@dataclass(frozen=True, slots=True)
class LineLabel:
    """The verdict for one line. `template_id` 0 means blank or binary (never embedded)."""

    category: Category
    score: float
    margin: float
    template_id: int
    confident: bool
    cue: str | None = None


@dataclass(frozen=True, slots=True)
class ClassifierStats:
    lines: int
    templates_embedded: int
    line_cache_hits: int
    template_cache_hits: int

    @property
    def cache_hits(self) -> int:
        """Lines that cost no embedding: same line key seen before, or same template."""
        return self.line_cache_hits + self.template_cache_hits

    @property
    def hit_rate(self) -> float:
        return self.cache_hits / self.lines if self.lines else 0.0


_DIGITS = b"0123456789"


def _line_key(raw: str | bytes) -> bytes:
    """The line with its digits deleted: rank prefixes, counters and metrics all vanish.

    Bytes `translate` is ~10x faster than `str.translate` with deletions (which falls off
    CPython's ASCII fast path, and is slower still on tqdm's block characters).
    """
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    return data.translate(None, _DIGITS)


_BLANK = LineLabel(Category.OTHER, 0.0, 0.0, 0, False, "blank")
_BINARY = LineLabel(Category.OTHER, 0.0, 0.0, 0, False, "binary")


class LineClassifier:
    """Stateful over its lifetime (caches, counters), one per job log or per worker."""

    def __init__(
        self,
        embedder: Embedder,
        *,
        descriptions: Mapping[Category, Sequence[str]] = DEFAULT_DESCRIPTIONS,
        cues: Sequence[Cue] = DEFAULT_CUES,
        cue_weight: float = 1.0,
        margin: float = 0.02,
        min_score: float = 0.0,
        aggregate: Literal["max", "mean", "blend"] = "blend",
        embed_input: Literal["template", "line"] = "template",
        miner: TemplateMiner | None = None,
        max_chars: int = DEFAULT_MAX_CHARS,
        line_cache_size: int = 200_000,
        max_templates: int = 100_000,
        use_cache: bool = True,
        tracer: Tracer | None = None,
    ) -> None:
        self.embedder = embedder
        self.cues = tuple(cues)
        self.cue_weight = cue_weight
        self.margin = margin
        self.min_score = min_score
        self.miner: TemplateMiner = miner if miner is not None else ExactMiner()
        self.max_chars = max_chars
        self.embed_input = embed_input
        self.use_cache = use_cache
        self._tracer = get_tracer(tracer)
        self._categories = [Category(c) for c in descriptions]
        self._index = {c: i for i, c in enumerate(self._categories)}
        self.aggregate = aggregate
        self._protos, self._centroids = self._embed_prototypes(descriptions)
        self._line_cache_size = line_cache_size
        self._max_templates = max_templates
        self._by_key: dict[bytes, tuple[LineLabel, bool]] = {}  # line key -> (label, indented)
        self._by_template: dict[int, LineLabel] = {}
        self._lines = self._embedded = self._key_hits = self._template_hits = 0

    # -- public API -------------------------------------------------------------------------

    def classify_lines(self, lines: Iterable[str | bytes]) -> list[LineLabel]:
        """One label per input line, in order. Raw lines are fine: they are normalised here."""
        if isinstance(lines, (str, bytes)):
            raise TypeError("classify_lines takes an iterable of lines, not a single string")
        lines = lines if isinstance(lines, Sequence) else list(lines)
        with self._tracer.start_as_current_span("classify_lines") as span:
            before = self.stats
            labels = list(self._label_all(lines))
            self._set_pass_attributes(span, before)
        return labels

    def has_category(self, lines: Iterable[str | bytes], category: Category | str, window: int = 256) -> bool:
        """True as soon as one line has `category`; classifies in windows so it stops early."""
        category = Category(category)
        it = iter(lines)
        with self._tracer.start_as_current_span("has_category") as span:
            span.set_attribute("schedmate.classifier.category", category.value)
            before = self.stats
            found = False
            while not found and (chunk := list(islice(it, window))):
                found = any(label.category is category for label in self._label_all(chunk))
            self._set_pass_attributes(span, before)
            span.set_attribute("schedmate.classifier.found", found)
        return found

    @property
    def stats(self) -> ClassifierStats:
        return ClassifierStats(self._lines, self._embedded, self._key_hits, self._template_hits)

    @property
    def templates(self) -> int:
        return len(self.miner)

    # -- internals ---------------------------------------------------------------------------

    def _embed_prototypes(self, descriptions: Mapping[Category, Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
        """Description vectors (categories, k, dim; short lists padded with repeats, which leave
        the max unchanged) and unit-length centroids (categories, dim)."""
        vectors = self.embedder.embed([t for c in self._categories for t in descriptions[c]])
        groups, start = [], 0
        for c in self._categories:
            groups.append(vectors[start : start + len(descriptions[c])])
            start += len(descriptions[c])
        width = max(len(g) for g in groups)
        protos = np.stack([g[np.arange(width) % len(g)] for g in groups])
        means = np.stack([g.mean(axis=0) for g in groups])
        return protos, means / np.linalg.norm(means, axis=1, keepdims=True)

    def _scores(self, texts: Sequence[str]) -> np.ndarray:
        """(texts, categories) similarity: nearest description, centroid, or their average."""
        vectors = self.embedder.embed(texts)
        nearest = np.einsum("td,ckd->tck", vectors, self._protos).max(axis=2)
        if self.aggregate == "max":
            return nearest
        centroid = vectors @ self._centroids.T
        return centroid if self.aggregate == "mean" else (nearest + centroid) / 2

    def _decide(self, scores: np.ndarray, masked: str, template_id: int) -> LineLabel:
        """Add the strongest fired cue's bonus per category, then apply the margin rule."""
        scores = scores.astype(np.float64, copy=True)
        bonus = np.zeros_like(scores)
        fired: str | None = None
        for cue in self.cues:
            if cue.category in self._index and cue.pattern.search(masked):
                i = self._index[cue.category]
                if cue.bonus > bonus[i]:
                    bonus[i] = cue.bonus
                fired = fired or cue.name
        scores += self.cue_weight * bonus
        order = np.argsort(scores)[::-1]
        best = float(scores[order[0]])
        second = float(scores[order[1]]) if len(order) > 1 else 0.0
        confident = best - second >= self.margin and best >= self.min_score
        category = self._categories[order[0]] if confident else Category.OTHER
        return LineLabel(Category(category), best, best - second, template_id, confident, fired)

    def _label_all(self, lines: Sequence[str | bytes]) -> Iterator[LineLabel]:
        """Resolve every line to a label; unseen templates are embedded together in one batch.

        Entries are either a finished label or an index into `todo` (texts to embed), each with
        the line's indentation (for the traceback rule).
        """
        entries: list[tuple[LineLabel | int, bool]] = []
        todo: list[tuple[int, str, str]] = []  # (template id, masked text, text to embed)
        todo_by_template: dict[int, int] = {}
        new_keys: dict[bytes, tuple[int, bool]] = {}
        for raw in lines:
            key = _line_key(raw)
            if self.use_cache:
                hit = self._by_key.get(key) or new_keys.get(key)
                if hit is not None:
                    self._key_hits += 1
                    entries.append(hit)
                    continue
            line = normalise_line(raw, self.max_chars)
            indented = line.text[:1].isspace()
            if line.binary or not line.text.strip():
                entries.append((_BINARY if line.binary else _BLANK, indented))
                continue
            masked = mask_variables(line.text)
            template = self.miner.add(masked)
            entry: tuple[LineLabel | int, bool]
            if not self.use_cache:
                entry = (len(todo), indented)
                todo.append((template.id, masked, self._embed_text(line.text, masked)))
            elif (known := self._by_template.get(template.id)) is not None:
                self._template_hits += 1
                entry = (known, indented)
                self._remember(key, (known, indented))
            else:
                index = todo_by_template.get(template.id)
                if index is None:
                    index = todo_by_template[template.id] = len(todo)
                    todo.append((template.id, masked, self._embed_text(line.text, masked)))
                else:
                    self._template_hits += 1
                entry = new_keys[key] = (index, indented)
            entries.append(entry)
        self._lines += len(entries)
        resolved = self._embed(todo)
        for key, (index, indented) in new_keys.items():
            self._remember(key, (resolved[index], indented))
        return self._apply_context(entries, resolved)

    def _embed_text(self, text: str, masked: str) -> str:
        """The template by default: a label then depends on the template alone, not on which
        of its lines came first ('line' embeds the first line seen, numbers included)."""
        return text.strip() if self.embed_input == "line" else masked

    def _embed(self, todo: list[tuple[int, str, str]]) -> list[LineLabel]:
        if not todo:
            return []
        scores = self._scores([text for _, _, text in todo])
        self._embedded += len(todo)
        labels = [self._decide(s, masked, tid) for (tid, masked, _), s in zip(todo, scores)]
        if self.use_cache:
            self._by_template.update((label.template_id, label) for label in labels)
            while len(self._by_template) > self._max_templates:  # FIFO bound, only on new templates
                del self._by_template[next(iter(self._by_template))]
        return labels

    @staticmethod
    def _apply_context(entries: list[tuple[LineLabel | int, bool]], resolved: list[LineLabel]) -> Iterator[LineLabel]:
        """Turn entries into labels; indented lines inside a Python traceback are errors.

        A traceback's code lines (`    loss.backward()`, `    ^^^^`) mean nothing alone; what
        makes them part of a failure is that they follow a `File "...", line N` frame.
        """
        in_frame = False
        for first, indented in entries:
            label = resolved[first] if isinstance(first, int) else first
            if label.cue == "traceback-frame":
                in_frame = True
            elif in_frame and indented:
                if label.category is not Category.ERROR:
                    label = LineLabel(
                        Category.ERROR, label.score, label.margin, label.template_id, False, "traceback-context"
                    )
            else:
                in_frame = False
            yield label

    def _remember(self, key: bytes, entry: tuple[LineLabel, bool]) -> None:
        if len(self._by_key) >= self._line_cache_size:
            self._by_key.clear()  # cheap bound; templates (the costly part) are kept
        self._by_key[key] = entry

    def _set_pass_attributes(self, span: Span, before: ClassifierStats) -> None:
        after = self.stats
        span.set_attribute(ATTR_MODEL, self.embedder.model_name)
        span.set_attribute(ATTR_LINES, after.lines - before.lines)
        span.set_attribute(ATTR_TEMPLATES_EMBEDDED, after.templates_embedded - before.templates_embedded)
        span.set_attribute(ATTR_CACHE_HITS, after.cache_hits - before.cache_hits)
