"""`LazyClassifier`: the MiniLM line classifier, built on first use.

A regex-only tracker never needs the classifier, so a daemon following healthy jobs (or
`schedmate track` on a log whose lines the regexes read) does not pay the model's load time or
memory. The wrapper offers `LineClassifier`'s public methods by name, each loading the model on
first call; nothing else is forwarded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from schedmate.embeddings.classifier import Category, ClassifierStats, LineClassifier, LineLabel

__all__ = ["LazyClassifier"]


def _default_embedder() -> Any:
    from schedmate.embeddings.embedder import make_embedder

    return make_embedder()


class LazyClassifier:
    """A `LineClassifier` over `make_embedder()`, built when first asked (module docstring)."""

    def __init__(self, make_embedder: Callable[[], Any] = _default_embedder) -> None:
        self._make = make_embedder
        self._clf: LineClassifier | None = None

    @property
    def loaded(self) -> bool:
        return self._clf is not None

    def get(self) -> LineClassifier:
        if self._clf is None:
            from schedmate.embeddings.classifier import LineClassifier

            self._clf = LineClassifier(self._make())
        return self._clf

    def classify_lines(self, lines: Iterable[str | bytes]) -> list[LineLabel]:
        return self.get().classify_lines(lines)

    def has_category(self, lines: Iterable[str | bytes], category: Category | str, window: int = 256) -> bool:
        return self.get().has_category(lines, category, window)

    @property
    def embedder(self) -> Any:
        return self.get().embedder

    @property
    def stats(self) -> ClassifierStats:
        return self.get().stats

    @property
    def templates(self) -> int:
        return self.get().templates
