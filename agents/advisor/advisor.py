"""The Scheduling Advisor as a host scheduler calls it: submit-time advice, end-of-job recording.

    advisor = SchedulingAdvisor(retriever, extractor=MetadataExtractor(chat), fallback=lucid_ebm)
    advice = advisor.advise(JobQuery(job_id, user=..., gpus=8, submit_time=...), repo, command)
    advice.estimate.duration_s, advice.estimate.source   # "history" | "fallback" | "none"
    ...
    advisor.record(job_id, advice.fingerprint, JobOutcome(duration=..., sm_util=...), gpus=8)

Every failure on the way (extractor without a fingerprint, store down) becomes a fallback estimate
whose note says why; `advise` never raises for an operational problem.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schedmate.agents.advisor.estimator import Estimate, FallbackEstimator, JobQuery, estimate_from_matches
from schedmate.agents.advisor.retriever import HistoricalJob, SimilarJobRetriever
from schedmate.agents.advisor.static_extractor import MANDATORY, extract_static
from schedmate.embeddings.store import JobOutcome, StoreError

__all__ = ["Advice", "SchedulingAdvisor"]


@dataclass
class Advice:
    estimate: Estimate
    fingerprint: dict[str, Any]  # extracted fields (None = unknown)
    sources: dict[str, str] = field(default_factory=dict)  # field -> static / llm / agree / none
    llm_status: str = "disabled"
    latency_s: float = 0.0
    stages_s: dict[str, float] = field(default_factory=dict)


class SchedulingAdvisor:
    def __init__(self, retriever: SimilarJobRetriever, *, extractor: Any = None,
                 fallback: FallbackEstimator | None = None) -> None:
        self.retriever = retriever
        self.extractor = extractor  # a MetadataExtractor; None: static extractor only
        self.fallback = fallback

    def advise(self, job: JobQuery, repo: Path | str, command: str) -> Advice:
        t0 = time.perf_counter()
        if self.extractor is not None:
            res = self.extractor.extract(repo, command, gpus=job.gpus, nodes=job.nodes)
            fields, sources, status = res.fields, res.sources(), res.llm_status
        else:
            st = extract_static(repo, command, gpus=job.gpus, nodes=job.nodes)
            fields = st.fields
            sources = {f: ("static" if v is not None else "none") for f, v in fields.items()}
            status = "disabled"
        t1 = time.perf_counter()
        missing = [f for f in MANDATORY if fields.get(f) is None]
        reason = None
        matches: list[Any] = []
        if len(missing) == len(MANDATORY):
            reason = "no fingerprint could be extracted"
        else:
            try:
                matches = self.retriever.query({k: v for k, v in fields.items() if v is not None}, gpus=job.gpus,
                                               nodes=job.nodes).matches
            except (StoreError, ConnectionError, OSError) as exc:
                reason = f"job store unavailable ({type(exc).__name__})"
        t2 = time.perf_counter()
        estimate = estimate_from_matches(job, matches, fallback=self.fallback, reason=reason)
        t3 = time.perf_counter()
        return Advice(estimate=estimate, fingerprint=dict(fields), sources=sources, llm_status=status,
                      latency_s=t3 - t0, stages_s={"extract": t1 - t0, "retrieve": t2 - t1, "estimate": t3 - t2})

    def record(self, job_id: str, fingerprint: dict[str, Any], outcome: JobOutcome, *, gpus: int | None = None,
               nodes: int | None = None, submitted: dict[str, Any] | None = None) -> None:
        """Store a finished job (fingerprint, outcome) as history for later submissions."""
        meta = {k: v for k, v in fingerprint.items() if v is not None}
        self.retriever.ingest([HistoricalJob(job_id=job_id, metadata=meta, outcome=outcome, gpus=gpus, nodes=nodes,
                                             submitted=dict(submitted or {}))])
