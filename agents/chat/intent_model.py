"""What the question asks, read by a small classifier over its MiniLM embedding (not keyword rules).

Intents (`INTENTS`): why did it fail, what to change, is it the node, will a retry help, how long
until it fails again, show the lines, similar past failures, the job's metrics, the job's record.
The classifier is nearest-centroid: each intent's centroid is the mean of the embeddings of its
hand-written example questions (`data/intents.jsonl`, none taken from tests or logs), and a question
goes to the intent whose centroid is most similar (cosine). Nearest-centroid because it needs no
training loop, is stable with ~16 examples per intent, and a new intent is a few lines of data.

`leave_one_out` measures it on its own examples (each held out from its centroid in turn) beside the
keyword rules of `intent.read_intent` on the same questions (`schedmate eval chat-intents`).
Only the user's question is embedded, never log text. The embedder is whatever the chat already has
loaded (the service's MiniLM); when it cannot be had, `route` returns None and the chat falls back
to the keyword rules and says so.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np

__all__ = ["INTENTS", "INTENT_TOOLS", "IntentClassifier", "Routed", "load_examples", "load_heldout"]

Embed = Callable[[Sequence[str]], np.ndarray]

# intent → the tools it needs, diagnosis first
INTENT_TOOLS: dict[str, tuple[str, ...]] = {
    "why": ("diagnose",),
    "fix": ("diagnose", "plan", "similar"),
    "node": ("diagnose",),
    "retry": ("diagnose", "plan", "similar"),
    "recurrence": ("diagnose", "metrics", "similar"),
    "lines": ("window",),
    "similar": ("similar",),
    "metrics": ("metrics",),
    "job": ("job",),
}
INTENTS: tuple[str, ...] = tuple(INTENT_TOOLS)


@dataclass(frozen=True, slots=True)
class Routed:
    """The question's intent, its cosine to that intent's centroid, and the margin over the runner-up."""

    intent: str
    score: float
    margin: float


def _read(name: str) -> tuple[tuple[str, str], ...]:
    raw = resources.files("schedmate.agents.chat").joinpath(f"data/{name}").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in raw.splitlines() if line.strip()]
    return tuple((r["intent"], r["question"]) for r in rows if "intent" in r)


@cache
def load_examples() -> tuple[tuple[str, str], ...]:
    """(intent, question) pairs the classifier is fitted on."""
    return _read("intents.jsonl")


@cache
def load_heldout() -> tuple[tuple[str, str], ...]:
    """(intent, question) pairs written apart from the examples and never fitted on: its test set."""
    return _read("intents-heldout.jsonl")


class IntentClassifier:
    """Nearest-centroid intent classifier over an embedder (fitted on first use)."""

    def __init__(self, embed: Embed, examples: Sequence[tuple[str, str]] | None = None) -> None:
        self._embed = embed
        self.examples = tuple(examples) if examples is not None else load_examples()
        unknown = {i for i, _ in self.examples} - set(INTENTS)
        if unknown:
            raise ValueError(f"examples name unknown intents: {sorted(unknown)}")
        self._vectors: np.ndarray | None = None
        self._centroids: np.ndarray | None = None

    def _fit(self) -> tuple[np.ndarray, np.ndarray]:
        if self._vectors is None or self._centroids is None:
            vectors = np.asarray(self._embed([q for _, q in self.examples]), dtype=np.float32)
            labels = np.array([INTENTS.index(i) for i, _ in self.examples])
            self._centroids = _normalise(np.stack([vectors[labels == k].mean(axis=0) for k in range(len(INTENTS))]))
            self._vectors = vectors
        return self._vectors, self._centroids

    def route(self, question: str) -> Routed:
        """The intent of `question` (raises what the embedder raises)."""
        _, centroids = self._fit()
        v = _normalise(np.asarray(self._embed([question.strip().lower()]), dtype=np.float32))[0]
        return _pick(centroids @ v)

    def leave_one_out(self) -> float:
        """Accuracy on the examples, each classified against centroids that leave it out."""
        vectors, _ = self._fit()
        labels = np.array([INTENTS.index(i) for i, _ in self.examples])
        sums = np.stack([vectors[labels == k].sum(axis=0) for k in range(len(INTENTS))])
        counts = np.bincount(labels, minlength=len(INTENTS)).astype(np.float32)
        right = 0
        for v, k in zip(vectors, labels, strict=True):
            s, c = sums.copy(), counts.copy()
            s[k] -= v
            c[k] -= 1
            cents = _normalise(s / np.maximum(c, 1)[:, None])
            right += int(_pick(cents @ v).intent == INTENTS[k])
        return right / len(labels)


def _pick(scores: np.ndarray) -> Routed:
    order = np.argsort(-scores)
    best, second = int(order[0]), int(order[1])
    return Routed(INTENTS[best], float(scores[best]), float(scores[best] - scores[second]))


def _normalise(m: np.ndarray) -> np.ndarray:
    return m / np.maximum(np.linalg.norm(m, axis=-1, keepdims=True), 1e-12)
