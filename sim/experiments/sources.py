"""The insight source of the reported runs: the real agents over generated artefacts.

`SemanticSources` is a `MakeSource`: for each (jobs, seed, detection rate) an experiment asks
for, it builds a `SimulationInsights`, prepares the jobs' artefacts (extraction cached by
content hash in `cache_dir`, so every run after the first makes no agent call for a known
artefact) and ingests a prior history. It owns what it built and closes it all on `close()`
(experiments differ in whether they close a source themselves).

**History comes from an earlier window, never the evaluated one.** The advisor predicts from
earlier jobs. The case studies pass `history_for`: the jobs of an earlier, disjoint window of the
same trace (or an independent draw of the same generator) as the world ran them
(`sim.world.history_window`: plans, step-time spread and early stops by the same rules
as the evaluated jobs), the most recent `history` of them. Without it, `independent_history`
draws each historical job's GPU request and duration from *different* trace jobs of one size
class (the evaluated window's mix, no job's own outcome; kept for the adapters' experiments that
have no earlier window yet). During the run, adapters `record` finished jobs, which become
history for later jobs, as in a deployment.

**Precomputed mode.** With `precomputed` set, each source is saved there on `close()` as
`insights-<hash of jobs, seed, rate>-<n-th request>.json` and, when that file already exists, replayed instead
(`SimulationInsights.load`: no Redis, no models), so reruns of an experiment are fast.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections import defaultdict
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from schedmate.schedulers.job import JobSpec
from schedmate.sim.semantic import SimConfig, SimulationInsights, load_agent_models
from schedmate.synthetic.jobs.mapping import size_class

__all__ = ["SemanticSources", "independent_history", "use_history"]


def independent_history(specs: Sequence[JobSpec], n: int, *, seed: int, prefix: str = "hist") -> list[JobSpec]:
    """`n` historical jobs with the trace's per-size-class mix but no trace job's own outcome.

    Within a size class, the GPU request (and status, Sia application/batch) comes from one
    trace job and the duration from another, drawn independently.
    """
    if not specs or n <= 0:
        return []
    rng = np.random.default_rng([seed, 104_729])
    by_class: dict[str, list[JobSpec]] = defaultdict(list)
    for s in specs:
        by_class[size_class(s.num_gpus)].append(s)
    classes = sorted(by_class)
    weights = np.array([len(by_class[c]) for c in classes], dtype=float)
    out: list[JobSpec] = []
    for i in range(n):
        pool = by_class[classes[int(rng.choice(len(classes), p=weights / weights.sum()))]]
        shape, length = pool[int(rng.integers(len(pool)))], pool[int(rng.integers(len(pool)))]
        attrs = {k: v for k, v in shape.attributes.items() if k in ("application", "batch_size")}
        out.append(JobSpec(job_id=f"{prefix}-{i}", submit_time=0.0, num_gpus=shape.num_gpus,
                           duration=max(1.0, length.duration), status=shape.status, attributes=attrs))
    return out


@dataclass
class SemanticSources:
    """`MakeSource` over `SimulationInsights`; use as a context manager (closes every source)."""

    cache_dir: Path | None = None
    history: int = 500
    llm: Any = None  # schedmate.llm.LLMConfig: the LLM agents (slow on CPU; cached per artefact)
    llm_modules: tuple[str, ...] = ("advisor", "tracker", "failure")  # which agents use it
    work_dir: Path | None = None
    progress: Any = None  # callable(done, total) for artefact extraction
    precomputed: Path | None = None  # save each source here / replay it when saved before
    # the history each source starts with: `history_for(evaluated jobs, seed)` gives earlier jobs
    # as the world ran them (an earlier, disjoint window: `sim.world`); None falls back to
    # `independent_history` (the evaluated window's mix, no job's own outcome) for the adapters'
    # experiments that have no earlier window yet
    history_for: Callable[[Sequence[JobSpec], int], Sequence[JobSpec]] | None = None
    _open: list[tuple[SimulationInsights, Path | None]] = field(default_factory=list, init=False, repr=False)
    _calls: dict[str, int] = field(default_factory=dict, init=False, repr=False)
    _models: dict[str, Any] | None = field(default=None, init=False, repr=False)  # MiniLM + classifier, loaded once
    _redis_url_: str | None = field(default=None, init=False, repr=False)  # one loopback redis-server for all
    _stack: ExitStack = field(default_factory=ExitStack, init=False, repr=False)

    @property
    def label(self) -> str:
        llm = "local LLM" if self.llm is not None else "static extractor, rules, regex tracker"
        return f"SimulationInsights (real agents: {llm})"

    def _saved_path(self, specs: Sequence[JobSpec], seed: int, detection_rate: float) -> Path | None:
        if self.precomputed is None:
            return None
        h = hashlib.sha256(f"{seed}|{detection_rate:.6f}|{self.history}|".encode())
        for s in specs:
            h.update(f"{s.job_id},{s.num_gpus},{s.duration:.3f};".encode())
        key = h.hexdigest()[:16]
        # the n-th request with the same arguments is the n-th arm of the experiment: answers
        # depend on the arm (jobs recorded as history when they finish), so each gets its file
        n = self._calls[key] = self._calls.get(key, 0) + 1
        return self.precomputed / f"insights-{key}-{n}.json"

    def __call__(self, specs: Sequence[JobSpec], seed: int, detection_rate: float) -> SimulationInsights:
        saved = self._saved_path(specs, seed, detection_rate)
        if saved is not None and saved.is_file():
            replay = SimulationInsights.load(saved, detection_rate=detection_rate)
            self._open.append((replay, None))
            return replay
        if self._models is None:
            self._models = load_agent_models()
        cfg = SimConfig(seed=seed, detection_rate=detection_rate, cache_dir=self.cache_dir, llm=self.llm,
                        llm_modules=self.llm_modules,
                        work_dir=self.work_dir, redis_url=self._redis_url(),
                        store_prefix=f"schedmate-sim-{seed}-{len(self._open)}")
        source = SimulationInsights(cfg, **self._models)
        self._open.append((source, saved))
        source.prepare(specs, progress=self.progress)
        if self.history_for is not None:
            source.ingest_history(list(self.history_for(specs, seed))[-self.history:])
        else:
            source.ingest_history(independent_history(specs, self.history, seed=seed))
        return source

    def _redis_url(self) -> str:
        if self._redis_url_ is None:
            from schedmate.embeddings import redis_server

            folder = self._stack.enter_context(tempfile.TemporaryDirectory(prefix="schedmate-sources-"))
            self._redis_url_ = str(self._stack.enter_context(redis_server.running_server(folder)).url)
        return self._redis_url_

    def stats(self) -> dict[str, Any]:
        """Counters summed over every source built so far."""
        total: dict[str, Any] = defaultdict(int)
        for s, _ in self._open:
            for k, v in s.stats().items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    total[k] += v
        return dict(total)

    def close(self) -> None:
        while self._open:
            source, saved = self._open.pop()
            try:
                if saved is not None:
                    saved.parent.mkdir(parents=True, exist_ok=True)
                    source.save(saved)
            finally:
                source.close()
        self._stack.close()
        self._redis_url_ = None

    def __enter__(self) -> SemanticSources:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def use_history(make_source: Any, history_for: Callable[[Sequence[JobSpec], int], Sequence[JobSpec]]) -> None:
    """Give an experiment's windows their earlier-window history: sets `history_for` on a
    `SemanticSources` that has none of its own or one a previous experiment set (the main job
    runs two experiments through one source); other sources keep what they do."""
    from schedmate.sim.world import Histories

    if isinstance(make_source, SemanticSources) and (make_source.history_for is None
                                                      or isinstance(make_source.history_for, Histories)):
        make_source.history_for = history_for
