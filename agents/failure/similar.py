"""Similar past failures (spec §4, history as the third data source): embed the root-cause
line's masked template and search the failure history in Redis.

Failure-line vectors live under their own key prefix (`schedmate-failures`), apart from the job
fingerprints the Scheduling Advisor stores: a log-line vector compared with a code fingerprint
vector would mean nothing. Masking (`mask_variables`) first makes `GPU 3 ... 2.00 GiB` and
`GPU 5 ... 7.50 GiB` the same query, so the match is on the failure's shape, not its numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from opentelemetry.trace import Tracer

from schedmate.embeddings.embedder import Embedder
from schedmate.embeddings.logtext import normalise_line
from schedmate.embeddings.store import JobOutcome, JobRecord, JobStore
from schedmate.embeddings.templates import mask_variables
from schedmate.errors import InvalidValue, NotFound
from schedmate.schedulers.job import FinalStatus
from schedmate.tracing import get_tracer

FAILURE_PREFIX = "schedmate-failures"
RESOLVED_POOL = 30  # nearest failures searched for resolved ones beyond the k nearest
MAX_NOTE_CHARS = 2000
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class UnknownFailure(NotFound):
    """No failure of that job is in the history (nothing to resolve)."""


def clean_note(note: str) -> str:
    """A resolution note as stored: control characters dropped, trimmed; empty or too long refused."""
    text = _CONTROL.sub(" ", note or "").strip()
    if not text:
        raise InvalidValue("the resolution note is empty: say what fixed it")
    if len(text) > MAX_NOTE_CHARS:
        raise InvalidValue(f"the resolution note is longer than {MAX_NOTE_CHARS} characters")
    return text


def record_resolution(store: JobStore, job_id: str, note: str, *, when: str | None = None) -> JobRecord:
    """Keep `note` (how the failure was fixed) on the failure record of `job_id`, replacing an earlier
    note; `UnknownFailure` when the history holds no failure of that job, ValueError for a bad note.
    Store errors propagate (`StoreUnavailable`)."""
    text = clean_note(note)
    rec = store.get(job_id)
    if rec is None:
        raise UnknownFailure(f"no failure of job {job_id!r} in the failure history (diagnose it with --record first)")
    stamp = when or datetime.now(UTC).isoformat(timespec="seconds")
    updated = rec.model_copy(update={"workload": {**rec.workload, "resolution": text, "resolved_at": stamp}})
    store.put(updated)
    return updated


@dataclass(frozen=True, slots=True)
class SimilarFailure:
    """A past job whose root-cause line looked like this one, and what happened to it."""

    job_id: str
    score: float
    category: str | None
    reason: str | None
    component: str | None
    template: str | None
    final_status: str | None
    duration: float | None
    resolution: str | None = None  # how it was resolved (`record_resolution`), when someone said
    resolved_at: str | None = None


def failure_template(text: str | bytes) -> str:
    """The masked template of a root-cause line: what is embedded, stored and searched."""
    return mask_variables(normalise_line(text).text)


class SimilarFailureFinder:
    """Record and find failures by root-cause template. Store errors propagate (`StoreUnavailable`)."""

    def __init__(self, store: JobStore, embedder: Embedder, *, k: int = 3, threshold: float = 0.8,
                 tracer: Tracer | None = None) -> None:  # fmt: skip
        if store.dim != embedder.dim:
            raise ValueError(f"store dim {store.dim} != embedder dim {embedder.dim}")
        self.store = store
        self.embedder = embedder
        self.k = k
        self.threshold = threshold
        self._tracer = get_tracer(tracer)

    @classmethod
    def connect(cls, url: str, embedder: Embedder, *, prefix: str = FAILURE_PREFIX, retries: int = 1,
                timeout_s: float = 1.0, **kwargs: Any) -> SimilarFailureFinder:  # fmt: skip
        """Connect to the failure history at `url`; raises `StoreUnavailable` when Redis is down."""
        store = JobStore.connect(url, embedder.dim, prefix=prefix, retries=retries, timeout_s=timeout_s)
        return cls(store, embedder, **kwargs)

    def _vector(self, text: str | bytes) -> Any:
        return self.embedder.embed([failure_template(text)])[0]

    def find(self, root_line: str | bytes, *, exclude_job: str | None = None) -> list[SimilarFailure]:
        """Past failures with cosine ≥ threshold, best first: the k nearest, then up to k more among
        the `RESOLVED_POOL` nearest that someone resolved (their notes say what fixed them)."""
        with self._tracer.start_as_current_span("failure.similar.search") as span:
            matches = self.store.search(self._vector(root_line), k=max(RESOLVED_POOL, self.k) + (exclude_job is not None),
                                        threshold=self.threshold, with_records=True)  # fmt: skip
            out = []
            for match in matches:
                if match.job_id == exclude_job or match.record is None:
                    continue
                rec = match.record
                out.append(
                    SimilarFailure(
                        job_id=match.job_id,
                        score=round(float(match.score), 4),
                        category=rec.outcome.failure_category,
                        reason=rec.outcome.failure_reason,
                        component=rec.workload.get("faulty_component"),
                        template=rec.workload.get("root_cause_template"),
                        final_status=rec.outcome.final_status.value if rec.outcome.final_status else None,
                        duration=rec.outcome.duration,
                        resolution=rec.workload.get("resolution"),
                        resolved_at=rec.workload.get("resolved_at"),
                    )
                )
            nearest = out[: self.k]
            resolved = [s for s in out[self.k :] if s.resolution][: self.k]
            span.set_attribute("schedmate.failure.similar", len(nearest) + len(resolved))
        return nearest + resolved

    def resolve(self, job_id: str, note: str, *, when: str | None = None) -> SimilarFailure:
        """Record how the failure of `job_id` was resolved (see `record_resolution`)."""
        rec = record_resolution(self.store, job_id, note, when=when)
        return SimilarFailure(job_id, 1.0, rec.outcome.failure_category, rec.outcome.failure_reason,
                              rec.workload.get("faulty_component"), rec.workload.get("root_cause_template"),
                              rec.outcome.final_status.value if rec.outcome.final_status else None, rec.outcome.duration,
                              rec.workload.get("resolution"), rec.workload.get("resolved_at"))

    def record(
        self,
        job_id: str,
        root_line: str | bytes,
        *,
        category: str | None,
        reason: str | None,
        component: str | None = None,
        duration: float | None = None,
        final_status: FinalStatus = FinalStatus.FAILED,
        submitted: dict[str, Any] | None = None,
    ) -> None:
        """Store one diagnosed failure so later ones can find it."""
        template = failure_template(root_line)
        earlier = self.store.get(job_id)  # a note on how it was resolved outlives a re-diagnosis
        kept = {k: earlier.workload[k] for k in ("resolution", "resolved_at") if earlier and k in earlier.workload}
        self.store.put(
            JobRecord(
                job_id=job_id,
                vector=self._vector(root_line),
                submitted=submitted or {},
                workload={"root_cause_template": template, "faulty_component": component, **kept},
                outcome=JobOutcome(
                    duration=duration, final_status=final_status, failure_category=category, failure_reason=reason
                ),
            )
        )
