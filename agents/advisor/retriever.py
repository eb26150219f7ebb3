"""Similar Job Retriever: fingerprint -> embedding -> KNN in the job store, threshold T and top-k.

A fingerprint is serialised as canonical JSON (sorted keys, nulls dropped; `WorkloadMetadata.
canonical_json`) plus the launch configuration the scheduler already knows (GPUs, nodes), since
the same workload on 8 or 64 GPUs runs for very different times. The text is embedded once; the
store returns the `k` most similar historical jobs with cosine >= `threshold` (k' <= k matches).

    retriever = SimilarJobRetriever(store, embedder, threshold=0.9, top_k=3)
    retriever.ingest([HistoricalJob(...), ...])
    result = retriever.query(metadata, gpus=8)          # -> Retrieval(matches=[...])
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from schedmate.embeddings.embedder import Embedder
from schedmate.embeddings.store import JobOutcome, JobRecord, JobStore, Match
from schedmate.workload import WorkloadMetadata

__all__ = ["DEFAULT_THRESHOLD", "DEFAULT_TOP_K", "HistoricalJob", "Retrieval", "SimilarJobRetriever", "fingerprint_text"]

DEFAULT_THRESHOLD = 0.85  # spec default; `evaluate.choose_threshold` calibrates it on a dev split
DEFAULT_TOP_K = 3


def fingerprint_text(metadata: WorkloadMetadata | Mapping[str, Any], *, gpus: int | None = None,
                     nodes: int | None = None) -> str:
    """Canonical JSON of the fingerprint (+ launch shape): the text that is embedded."""
    data = metadata.model_dump() if isinstance(metadata, WorkloadMetadata) else dict(metadata)
    data = {k: v for k, v in data.items() if v is not None}
    if gpus is not None:
        data["gpus"] = int(gpus)
    if nodes is not None:
        data["nodes"] = int(nodes)
    return json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)


@dataclass
class HistoricalJob:
    """A finished job as the store keeps it."""

    job_id: str
    metadata: WorkloadMetadata | Mapping[str, Any]
    outcome: JobOutcome
    gpus: int | None = None
    nodes: int | None = None
    submitted: dict[str, Any] = field(default_factory=dict)  # user, vc, submit_time, name, ...


@dataclass
class Retrieval:
    text: str
    matches: list[Match]
    threshold: float
    top_k: int
    embed_s: float = 0.0
    search_s: float = 0.0


class SimilarJobRetriever:
    def __init__(self, store: JobStore, embedder: Embedder, *, threshold: float = DEFAULT_THRESHOLD,
                 top_k: int = DEFAULT_TOP_K, include_launch: bool = True) -> None:
        if not -1.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be a cosine in [-1, 1], got {threshold}")
        if top_k < 0:
            raise ValueError(f"top_k must be >= 0, got {top_k}")
        if store.dim != embedder.dim:
            raise ValueError(f"store dim {store.dim} != embedder dim {embedder.dim}")
        self.store = store
        self.embedder = embedder
        self.threshold = threshold
        self.top_k = top_k
        self.include_launch = include_launch

    def text(self, metadata: WorkloadMetadata | Mapping[str, Any], gpus: int | None = None,
             nodes: int | None = None) -> str:
        if not self.include_launch:
            gpus = nodes = None
        return fingerprint_text(metadata, gpus=gpus, nodes=nodes)

    def ingest(self, jobs: Iterable[HistoricalJob], batch_size: int = 256) -> int:
        """Embed and store historical jobs (replacing records with the same id). Returns the count."""
        total = 0
        batch: list[HistoricalJob] = []

        def flush() -> None:
            nonlocal total
            if not batch:
                return
            texts = [self.text(j.metadata, j.gpus, j.nodes) for j in batch]
            vectors = self.embedder.embed(texts)
            records = []
            for job, text, vec in zip(batch, texts, vectors, strict=True):
                meta = job.metadata.model_dump() if isinstance(job.metadata, WorkloadMetadata) else dict(job.metadata)
                submitted = {**job.submitted, "gpus": job.gpus, "nodes": job.nodes, "fingerprint": text}
                records.append(JobRecord(job_id=job.job_id, vector=vec, submitted=submitted, workload=meta,
                                         outcome=job.outcome))
            total += self.store.put_many(records)
            batch.clear()

        for job in jobs:
            batch.append(job)
            if len(batch) >= batch_size:
                flush()
        flush()
        return total

    def query(self, metadata: WorkloadMetadata | Mapping[str, Any], *, gpus: int | None = None,
              nodes: int | None = None, threshold: float | None = None, top_k: int | None = None,
              exclude: Iterable[str] = ()) -> Retrieval:
        """The <= k most similar historical jobs with cosine >= T (records attached), best first."""
        t = self.threshold if threshold is None else threshold
        k = self.top_k if top_k is None else top_k
        excluded = set(exclude)
        text = self.text(metadata, gpus, nodes)
        t0 = time.perf_counter()
        vec = self.embedder.embed([text])[0]
        t1 = time.perf_counter()
        matches = self.store.search(vec, k=k + len(excluded), threshold=t, with_records=True) if k > 0 else []
        matches = [m for m in matches if m.job_id not in excluded][:k]
        t2 = time.perf_counter()
        return Retrieval(text=text, matches=matches, threshold=t, top_k=k, embed_s=t1 - t0, search_s=t2 - t1)
