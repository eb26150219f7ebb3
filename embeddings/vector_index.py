"""Exact cosine top-k over an in-memory float32 matrix.

This is the search path for a Redis without the search module: every process keeps the job vectors
in one contiguous matrix (rows L2-normalised, so a matrix-vector product gives cosine similarities)
and answers queries with one brute-force GEMV, recall 1.0 by construction. The scan is
memory-bound (100k x 384 reads ~150 MB per query): ~2 ms on an idle many-core host, ~10-20 ms on
two dedicated cores, more on a busy small VM. Nothing here talks to Redis.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

Vector = NDArray[np.float32]

# Below this many rows numpy's own single-threaded dot loop (einsum) is used: it takes ~1 ms at 10k
# rows and, unlike multi-threaded BLAS, does not slow down 10x when the cores are busy. Above it,
# BLAS threads add memory bandwidth, which is what a large scan is bound by.
BLAS_MIN_ROWS = 32_768


def normalise(vector: ArrayLike, dim: int) -> Vector:
    """`vector` as a 1-D unit-length float32 array; ValueError on wrong dim, NaN/inf or zero norm."""
    arr = np.asarray(vector, dtype=np.float32)
    if arr.ndim != 1 or arr.shape[0] != dim:
        raise ValueError(f"vector must have shape ({dim},), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("vector contains NaN or infinite values")
    norm = float(np.linalg.norm(arr.astype(np.float64)))
    if norm == 0.0:
        raise ValueError("vector has zero norm; cosine similarity is undefined")
    return (arr / np.float32(norm)).astype(np.float32)


def normalise_many(vectors: list[ArrayLike], dim: int) -> NDArray[np.float32]:
    """`normalise` for a batch at once (one vectorised pass); rows in input order."""
    if not vectors:
        return np.empty((0, dim), dtype=np.float32)
    rows = [np.asarray(v, dtype=np.float32) for v in vectors]
    for row in rows:
        if row.ndim != 1 or row.shape[0] != dim:
            raise ValueError(f"vector must have shape ({dim},), got {row.shape}")
    matrix = np.stack(rows)
    if not np.all(np.isfinite(matrix)):
        raise ValueError("vector contains NaN or infinite values")
    norms = np.linalg.norm(matrix.astype(np.float64), axis=1)
    if np.any(norms == 0.0):
        raise ValueError("vector has zero norm; cosine similarity is undefined")
    return (matrix / norms[:, None].astype(np.float32)).astype(np.float32)


def top_k(
    scores: NDArray[np.float32], ids: list[str], k: int, threshold: float | None
) -> list[tuple[str, float]]:
    """The `k` best (id, score) pairs with score >= threshold, best first, ties broken by id."""
    if k <= 0 or scores.size == 0:
        return []
    candidates = np.flatnonzero(scores >= threshold) if threshold is not None else np.arange(scores.size)
    if candidates.size > k:
        part = np.argpartition(-scores[candidates], k - 1)[:k]
        kth = scores[candidates[part]].min()
        # keep every candidate tied with the k-th score so the id tie-break is deterministic
        candidates = candidates[scores[candidates] >= kth]
    chosen = sorted(((ids[i], float(scores[i])) for i in candidates), key=lambda p: (-p[1], p[0]))
    return chosen[:k]


class ExactIndex:
    """Job id -> unit vector rows, with O(1) upsert and removal (swap with the last row)."""

    def __init__(self, dim: int, capacity: int = 1024) -> None:
        self.dim = dim
        self._matrix: Vector = np.empty((max(capacity, 1), dim), dtype=np.float32)
        self._ids: list[str] = []
        self._rows: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._rows

    def clear(self) -> None:
        self._ids.clear()
        self._rows.clear()

    def upsert(self, job_id: str, unit_vector: Vector) -> None:
        """Insert or replace; `unit_vector` must already be normalised (see `normalise`)."""
        self.upsert_many([job_id], np.asarray(unit_vector, dtype=np.float32)[None, :])

    def upsert_many(self, job_ids: list[str], unit_vectors: Vector) -> None:
        """Insert or replace rows in bulk (for repeated ids the last one wins)."""
        latest = {job_id: i for i, job_id in enumerate(job_ids)}
        new_ids = [job_id for job_id in latest if job_id not in self._rows]
        for job_id, i in latest.items():
            if job_id in self._rows:
                self._matrix[self._rows[job_id]] = unit_vectors[i]
        if not new_ids:
            return
        start = len(self._ids)
        self._grow(start + len(new_ids))
        self._matrix[start : start + len(new_ids)] = unit_vectors[[latest[j] for j in new_ids]]
        self._rows.update(zip(new_ids, range(start, start + len(new_ids)), strict=True))
        self._ids.extend(new_ids)

    def remove(self, job_id: str) -> bool:
        row = self._rows.pop(job_id, None)
        if row is None:
            return False
        last = len(self._ids) - 1
        if row != last:
            moved = self._ids[last]
            self._matrix[row] = self._matrix[last]
            self._ids[row] = moved
            self._rows[moved] = row
        self._ids.pop()
        return True

    def search(self, unit_query: Vector, k: int, threshold: float | None = None) -> list[tuple[str, float]]:
        """Exact cosine top-k for a normalised query, best first, ties broken by id."""
        n = len(self._ids)
        if n == 0 or k <= 0:
            return []
        matrix = self._matrix[:n]
        scores = matrix @ unit_query if n >= BLAS_MIN_ROWS else np.einsum("ij,j->i", matrix, unit_query)
        return top_k(scores, self._ids, k, threshold)

    def _grow(self, needed: int) -> None:
        capacity = self._matrix.shape[0]
        if needed <= capacity:
            return
        while capacity < needed:
            capacity *= 2
        bigger = np.empty((capacity, self.dim), dtype=np.float32)
        bigger[: len(self._ids)] = self._matrix[: len(self._ids)]
        self._matrix = bigger
