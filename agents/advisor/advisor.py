"""The Scheduling Advisor as a host scheduler calls it: submit-time advice, end-of-job recording.

    advisor = SchedulingAdvisor(retriever, extractor=MetadataExtractor(chat), fallback=lucid_ebm)
    advice = advisor.advise(JobQuery(job_id, user=..., gpus=8, submit_time=...), repo, command)
    advice.estimate.duration_s, advice.estimate.source   # "history" | "fallback" | "none"
    ...
    advisor.record(job_id, advice.fingerprint, JobOutcome(duration=..., sm_util=...), gpus=8)

The estimate is the deployed one (`estimator.estimate_from_pool`, settings from the agent stack's
config: `schedmate.agents.stack`); without one, the host's `fallback` estimator answers (named).
Every failure on the way (extractor without a fingerprint, store down) becomes a fallback estimate
whose note says why; `advise` never raises for an operational problem.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from schedmate.agents.advisor.estimator import (
    Estimate,
    FallbackEstimator,
    JobEstimate,
    JobQuery,
    estimate_from_matches,
    estimate_from_pool,
)
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
                 fallback: FallbackEstimator | None = None, config: Any = None) -> None:
        from schedmate.agents.stack import AgentStackConfig

        self.retriever = retriever
        self.extractor = extractor  # a MetadataExtractor; None: static extractor only
        self.fallback = fallback
        # threshold and k: the retriever's; pool size and estimator: the stack's (deployed defaults)
        base = config or AgentStackConfig()
        self.config = replace(base, threshold=retriever.threshold, top_k=max(1, retriever.top_k),
                              pool_k=max(base.pool_k, retriever.top_k))

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
        pool: list[Any] = []
        if len(missing) == len(MANDATORY):
            reason = "no fingerprint could be extracted"
        else:
            from schedmate.agents.stack import retrieve_pool

            try:
                pool = retrieve_pool(self.retriever, fields, job.gpus, job.nodes, self.config)
            except (StoreError, ConnectionError, OSError) as exc:
                reason = f"job store unavailable ({type(exc).__name__})"
        t2 = time.perf_counter()
        if reason is None:
            c = self.config
            deployed = estimate_from_pool(fields, job.gpus, pool, threshold=c.threshold, top_k=c.top_k,
                                          estimator=c.estimator)
            estimate = _as_estimate(job, deployed, pool) if deployed.estimated else estimate_from_matches(
                job, [], fallback=self.fallback, reason=deployed.note)
        else:
            estimate = estimate_from_matches(job, [], fallback=self.fallback, reason=reason)
        t3 = time.perf_counter()
        return Advice(estimate=estimate, fingerprint=dict(fields), sources=sources, llm_status=status,
                      latency_s=t3 - t0, stages_s={"extract": t1 - t0, "retrieve": t2 - t1, "estimate": t3 - t2})

    def record(self, job_id: str, fingerprint: dict[str, Any], outcome: JobOutcome, *, gpus: int | None = None,
               nodes: int | None = None, submitted: dict[str, Any] | None = None) -> None:
        """Store a finished job (fingerprint, outcome) as history for later submissions."""
        meta = {k: v for k, v in fingerprint.items() if v is not None}
        self.retriever.ingest([HistoricalJob(job_id=job_id, metadata=meta, outcome=outcome, gpus=gpus, nodes=nodes,
                                             submitted=dict(submitted or {}))])


def _as_estimate(job: JobQuery, est: JobEstimate, pool: list[Any]) -> Estimate:
    """The deployed estimate in the advisor's `Estimate` shape (p50 / p90: the interval's ends)."""
    scores = {m.job_id: m.score for m in pool}
    lo_hi = est.interval_s or (None, None)
    return Estimate(job_id=job.job_id, source="history", n_matches=len(est.based_on), match_ids=list(est.based_on),
                    scores=[round(scores.get(j, 0.0), 4) for j in est.based_on], duration_s=est.duration_s,
                    duration_p50_s=None if est.interval_s is None else est.duration_s, duration_p90_s=lo_hi[1],
                    sm_util=est.sm_util, gpu_memory_gb=est.gpu_memory_gb, note=f"{est.method}: {est.note}")
