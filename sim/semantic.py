"""`SimulationInsights`: the real SchedMate agents on generated artefacts, for the simulator.

Spec §8: public traces carry no code or logs, so every job is given generated ones
(`artefacts.plan_artefact`: a training repository + launch command and a log style, matched to
its GPU request and length) and the **real** modules process them:

- `advise`: the deployed advisor (`agents.stack`, the config `schedmate advise` and the service
  run with: `SimConfig.agents`, default `AgentStackConfig()`). The Metadata Extractor (static by
  default; the LLM agent when `SimConfig.llm` is set) reads the repository; the fingerprint is
  embedded (MiniLM) and the pool of most similar past jobs read from a Redis `JobStore`; the
  estimate is `agents.advisor.estimator.estimate_from_pool` (rate x plan over completed past runs,
  else the mean of the <= k matches with cosine >= T, T = 0.85). `duration_s` and
  `duration_top3_s` are that estimate; memory and the Lucid-style single-job metrics are the means
  over the jobs the estimate used;
- `track(job, event_at=, now=)`: the job's log as the simulator wrote it from the job's simulated
  speed history (`simlogs.running_log`: real formats, jitter, warm-up, noise; as many progress
  lines after the event as the elapsed time allows) is tailed by the Metric Tracker's
  `JobLogRegistry` in two parts (before / after the event), whose `throughput_before_after` gives
  the reading. No speed, slowdown or duration crosses the call;
- `diagnose(job, attempt=)`: the `FailureHandler` (rules, learned classifier; LLM optional) reads
  the log the failed attempt wrote. The simulated world writes it (`simlogs.write_failed_log`,
  from the cause the failure model chose) and notes its path on the job, as a live cluster has a
  job's log file; the source never learns the cause.

Costs are bounded: jobs share artefacts (608 distinct for 2,000 synthetic jobs, 883 for 10,000),
and each agent result is cached by content hash (`insight_cache`) in memory and in `cache_dir`,
so a second run makes zero agent calls. Models and Redis start only when first needed.
`track` answers None until the tracker itself finds `min_after_lines` progress lines after the
event in the written log, as a live tracker would.

**Latency is measured** (spec §8: never a constant). The advisor's answer costs the job the
extraction's wall time (cached with the extraction, so a rerun charges the same) plus the
retrieval's, measured at the first match of that artefact; a diagnosis costs the handler's
measured time, cached with its result. `advisor_latency_s` / `diagnosis_latency_s` fix them only
for sensitivity runs.

**Determinism.** Same trace, seed and config → same answers: artefacts, failures and detection
are hash draws, and measured latencies come from the cache once measured.

**Detection** (`detection_rate` d): a job is seen by SchedMate iff hash(seed, job id) < d; unseen
jobs get None from `advise` / `track` and are not recorded as history (diagnosis is unaffected).

**History**: `ingest_history(specs)` stores earlier jobs (a trace prefix, or `synthetic_history`)
with their trace durations, final status and what their monitoring and logs measured
(`measured_outcome`: utilisation, memory, wall time per step, startup, steps per epoch);
`record(job, finished=False)` stores a job of this run at arrival (matchable at once, no outcome
yet: its id can appear in `similar_ids`, which is what Sia needs), `finished=True` stores its
measured outcome. `similar_ids` are the k best matches with cosine >= T (with or without an
outcome); when there are none but the estimate used some past jobs, those jobs.

**Precomputed mode**: `save(path)` writes, and `SimulationInsights.load(path)` replays without
Redis or models (a question the saved run never asked answers None, counted as `replay_misses`):

    {"format": "schedmate.sim-insights", "version": 1,
     "config": {SimConfig fields except llm/redis/paths}, "modes": {"extract"|"track"|"diagnose": str},
     "calibration": {"scale", "alpha", "cap", "count_share", "gpu_share"},
     "artefacts": {artefact key: Artefact.to_dict()},
     "jobs": {job id: [artefact key, GPU-seconds, GPUs]},
     "advice": {job id: AdvisorInsight fields},              # as answered in the saved run
     "track_logs": {"<job id>|<event time>|<now>": log sha256},
     "cache": {"extract"|"track"|"diagnose": {"<sha256>:<mode>": result}}}

Construction, as adapters and experiments use it:

    with SimulationInsights(SimConfig(seed=1, detection_rate=0.8, cache_dir=".cache/sim")) as src:
        src.prepare(trace_specs)                       # artefacts + extraction (cached)
        src.ingest_history(synthetic_history(trace_specs, 500, seed=1))
        ... simulate with src as the adapters' InsightSource ...
        src.save("insights.json")
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from schedmate.adapters.insights import (
    NO_FAILSLOW,
    AdvisorInsight,
    FailedLogStyle,
    FailSlowSignal,
    FailureInsight,
    SimulatedWorld,
    TrackerReading,
)
from schedmate.agents.stack import AgentStack, AgentStackConfig
from schedmate.schedulers.job import FinalStatus, JobSpec, JobState, Phase
from schedmate.sim.artefacts import (
    DEFAULT_RATIO,
    DEFAULT_VARIANTS,
    Artefact,
    InfraCalibration,
    calibrate_infra,
    content_hash,
    modelled_metrics,
    plan_artefact,
    repo_hash,
    unit_hash,
)
from schedmate.sim.insight_cache import ContentCache
from schedmate.sim.simlogs import FAILED_LOGS_KEY, running_log, split_lines
from schedmate.sim.world import WORLD_KEY

if TYPE_CHECKING:
    from schedmate.llm import LLMConfig

__all__ = ["FORMAT", "PrepareReport", "SimConfig", "SimulationInsights", "load_agent_models", "measured_outcome",
           "synthetic_history"]

FORMAT = "schedmate.sim-insights"
_METRIC_KEYS = ("speed", "gpu_util", "gmem_util", "gmem")
_BASE_COUNTERS = (
    "advise_calls", "advise_matched", "advise_unmatched", "advise_undetected", "advise_no_fingerprint",
    "track_calls", "track_undetected", "track_no_signal", "track_no_history", "diagnose_no_log", "diagnose_calls",
    "diagnose_no_failure_found", "extract_runs", "extract_cache_hits", "track_runs", "track_cache_hits",
    "diagnose_runs", "diagnose_cache_hits", "llm_calls", "no_artefact", "store_errors", "extract_errors",
    "track_errors", "diagnose_errors", "replay_misses", "recorded_arrivals", "recorded_finished",
    "history_ingested", "unmappable_jobs",
)


@dataclass(frozen=True)
class SimConfig:
    """How simulated jobs get artefacts and how the agents answer; defaults are deterministic."""

    seed: int = 0
    detection_rate: float = 1.0
    # the agents (threshold T, k, estimator, failure method, ...): the deployed defaults of
    # `agents.stack`, as `schedmate advise`, the service and the daemon run them; `llm` and
    # `llm_modules` below switch the LLM on for the simulation
    agents: AgentStackConfig = field(default_factory=AgentStackConfig)
    length_ratio: float = DEFAULT_RATIO  # log-scale grid of config lengths (×2 per cell)
    variants: int = DEFAULT_VARIANTS  # code-style variants per (family, GPUs, length cell)
    advisor_latency_s: float | None = None  # None: measured extraction + retrieval time (cached with them)
    diagnosis_latency_s: float | None = None  # None: the handler's measured time (cached with its result)
    min_after_lines: int = 3  # progress lines needed after the event (registry default)
    failure_lines: int = 500
    failure_variants: int = 2  # distinct failure logs per (log style, world size, reason)
    infra_count_share: float = 0.11  # Acme: infrastructure share of failures ...
    infra_gpu_share: float = 0.82  # ... and of failure GPU time
    llm: LLMConfig | None = None  # None: static extractor, regex tracker, rule-based handler
    llm_modules: tuple[str, ...] = ("advisor", "tracker", "failure")  # which agents use the LLM
    redis_url: str | None = None  # None: a loopback redis-server of this source's own, started on demand
    store_prefix: str = "schedmate-sim"
    fresh_store: bool = True  # delete the prefix's keys on connect (each run its own history)
    work_dir: Path | None = None  # generated repos / logs; None: a temporary folder
    cache_dir: Path | None = None  # None: in-memory cache only
    torch_threads: int | None = 1  # process-wide torch threads set when the embedder loads (batch-1
    # embeddings on a shared CPU are ~10x faster with one thread); None leaves torch's setting

    def __post_init__(self) -> None:
        if not 0.0 <= self.detection_rate <= 1.0:
            raise ValueError(f"detection_rate must be in [0, 1], got {self.detection_rate}")
        if self.variants < 1 or self.failure_variants < 1:
            raise ValueError("variants and failure_variants must be >= 1")
        if self.length_ratio <= 1.0:
            raise ValueError("length_ratio must be > 1")
        unknown = set(self.llm_modules) - {"advisor", "tracker", "failure"}
        if unknown:
            raise ValueError(f"unknown llm_modules {sorted(unknown)}")

    @property
    def stack_config(self) -> AgentStackConfig:
        """The agents' config, with this simulation's LLM switch."""
        return replace(self.agents, llm=self.llm, llm_modules=self.llm_modules)

    @property
    def threshold(self) -> float:
        return self.agents.threshold

    @property
    def top_k(self) -> int:
        return self.agents.top_k

    def portable(self) -> dict[str, Any]:
        """The fields a saved file records (no LLM, server or paths)."""
        skip = {"llm", "redis_url", "work_dir", "cache_dir", "torch_threads", "agents"}
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skip}
        out["llm_modules"] = list(self.llm_modules)
        out["agents"] = self.agents.settings()
        return out

    @classmethod
    def from_portable(cls, data: Mapping[str, Any]) -> SimConfig:
        """Back from `portable()`; a file saved before the agent stack (its own `threshold` and
        `top_k`) keeps the settings it ran with."""
        cfg = dict(data)
        cfg["llm_modules"] = tuple(cfg.get("llm_modules", ()))
        agents = cfg.pop("agents", None)
        old = {k: cfg.pop(k) for k in ("threshold", "top_k") if k in cfg}
        if agents is not None:
            cfg["agents"] = AgentStackConfig.from_settings(agents)
        elif old:
            cfg["agents"] = AgentStackConfig(**old, pool_k=max(12, 4 * int(old.get("top_k", 3))))
        return cls(**cfg)


@dataclass(frozen=True)
class PrepareReport:
    jobs: int
    distinct_artefacts: int
    detected_jobs: int
    extractions_run: int
    extraction_cache_hits: int
    seconds: float
    calibration: InfraCalibration | None = None


@dataclass
class _Job:
    artefact: str
    gpu_time: float
    gpus: int


@dataclass
class _Agents:
    """Lazily built models and services (none of them in replay mode)."""

    embedder: Any = None
    classifier: Any = None
    tracker: Any = None
    handler: Any = None
    extractor: Any = None
    chat: Any = None
    retriever: Any = None
    store: Any = None
    store_down_until: float = 0.0
    vectors: dict[str, Any] = field(default_factory=dict)  # artefact key -> fingerprint embedding
    stack: ExitStack = field(default_factory=ExitStack)


def load_agent_models(torch_threads: int | None = 1) -> dict[str, Any]:
    """MiniLM and the line classifier, to share between sources (`SimulationInsights(cfg,
    **models)`): loading them costs seconds per source, and a sweep builds dozens of sources."""
    from schedmate.embeddings.classifier import LineClassifier
    from schedmate.embeddings.embedder import make_embedder

    if torch_threads:
        import torch

        torch.set_num_threads(torch_threads)
    embedder = make_embedder()
    return {"embedder": embedder, "classifier": LineClassifier(embedder)}


def synthetic_history(specs: Sequence[JobSpec], n: int, *, seed: int, prefix: str = "hist") -> list[JobSpec]:
    """`n` earlier jobs drawn from the same mix as `specs` (GPUs, status, duration × e^N(0, 0.15)),
    ids `<prefix>-<i>`, submitted at 0: a history for traces that have no prefix of their own."""
    if not specs or n <= 0:
        return []
    rng = np.random.default_rng([seed, 7919])
    picks = rng.integers(len(specs), size=n)
    noise = np.exp(rng.normal(0.0, 0.15, size=n))
    out = []
    for i, (j, f) in enumerate(zip(picks.tolist(), noise.tolist(), strict=True)):
        s = specs[j]
        attrs = {k: v for k, v in s.attributes.items() if k in ("application", "batch_size")}
        out.append(JobSpec(job_id=f"{prefix}-{i}", submit_time=0.0, num_gpus=s.num_gpus,
                           duration=max(1.0, s.duration * f), status=s.status, attributes=attrs))
    return out


def _mean(values: Iterable[float | None]) -> float | None:
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    return float(np.mean(vals)) if vals else None


def measured_outcome(art: Artefact, job_id: str, seed: int, *, duration: float | None,
                     final_status: FinalStatus | None, step_factor: float = 1.0,
                     startup_s: float | None = None) -> tuple[Any, dict[str, float]]:
    """What a deployed system knows about a finished run: its run time and final status, what
    monitoring measured (`modelled_metrics`: utilisation, memory, speed with a per-run spread) and
    what its log shows (the tracker's wall time per optimizer step: the per-device batch over the
    measured per-GPU speed; startup and steps per epoch as the config runs). Returns the store's
    `JobOutcome` and the Lucid-style single-job metrics. `step_factor` is the run's own step-time
    factor in the simulated world (`sim.world`): its log shows that step time, and
    `startup_s` the run's own start-up there (None: the config's nominal one)."""
    from schedmate.embeddings.store import JobOutcome
    from schedmate.synthetic.jobs.history import expected_perf

    m = modelled_metrics(art, job_id, seed)
    perf = expected_perf(art.config)
    step = art.config.per_device_batch * art.config.grad_accum / m["speed"] * step_factor if m["speed"] > 0 else None
    outcome = JobOutcome(duration=duration, sm_util=m["sm_util"], gpu_util=m["gpu_util"], gpu_memory=m["gpu_mem_gb"],
                         final_status=final_status, step_time_s=step, startup_s=startup_s or perf.startup_s,
                         steps_per_epoch=perf.steps_per_epoch)
    return outcome, {k: m[k] for k in _METRIC_KEYS}


def _step_factor(spec: JobSpec) -> float:
    """The run's own step-time factor in the simulated world (1 for a job no world made)."""
    return float((spec.attributes.get(WORLD_KEY) or {}).get("step_factor", 1.0))


def _world_startup(spec: JobSpec) -> float | None:
    """The run's own start-up in the simulated world (None for a job no world made)."""
    v = (spec.attributes.get(WORLD_KEY) or {}).get("startup_s")
    return None if v is None else float(v)


def _insight(est: Any, pool: Sequence[Any], k: int, latency_s: float) -> AdvisorInsight:
    """The deployed estimate (`estimate_from_pool`) as the simulator's `AdvisorInsight`."""
    used = est.records(pool)
    mets = [r.submitted.get("metrics") or {} for r in used]
    metrics = {key: v for key in _METRIC_KEYS if (v := _mean(mt.get(key) for mt in mets)) is not None}
    similar = tuple(m.job_id for m in est.similar) or (tuple(est.based_on[:k]) if est.estimated else ())
    duration = est.duration_s if est.estimated else None
    return AdvisorInsight(similar_ids=similar, duration_s=duration, duration_top3_s=duration,
                          sm_util=est.sm_util, gpu_mem_gb=est.gpu_memory_gb, metrics=metrics, latency_s=latency_s,
                          duration_p90_s=est.duration_p90_s if est.estimated else None)


def _advice_dict(a: AdvisorInsight) -> dict[str, Any]:
    d = asdict(a)
    d["similar_ids"] = list(a.similar_ids)
    d["metrics"] = dict(a.metrics)
    return d


def _advice_from(d: Mapping[str, Any]) -> AdvisorInsight:
    return AdvisorInsight(**{**d, "similar_ids": tuple(d["similar_ids"]), "metrics": dict(d.get("metrics") or {})})


def _fingerprint_of(extraction: Mapping[str, Any]) -> dict[str, Any] | None:
    """The extracted fields that are known (None when nothing was extracted)."""
    fp = {k: v for k, v in (extraction.get("fields") or {}).items() if v is not None}
    return fp or None


def _final_status(job: JobState) -> FinalStatus:
    return {Phase.COMPLETED: FinalStatus.COMPLETED, Phase.FAILED: FinalStatus.FAILED,
            Phase.CANCELLED: FinalStatus.CANCELLED}.get(job.phase, job.spec.status)


def _last_speed_change(job: JobState, now: float) -> float | None:
    """When the running attempt's speed last changed (its start when it never did), or None."""
    last = None
    for t, speed, _ in job.speed_log:
        if t > now:
            break
        last = None if speed <= 0 else t
    return last


class SimulationInsights(SimulatedWorld):
    """`InsightSource` over the real agents (see the module docstring)."""

    def __init__(self, config: SimConfig | None = None, *, embedder: Any = None, classifier: Any = None,
                 chat_model: Any = None) -> None:
        self.config = config or SimConfig()
        self._replay = False
        self._cache = ContentCache.open(self.config.cache_dir)
        self._agents = _Agents(embedder=embedder, classifier=classifier, chat=chat_model)
        self._own_work_dir = self.config.work_dir is None
        work_dir = self.config.work_dir
        self._work_dir = Path(tempfile.mkdtemp(prefix="schedmate-sim-")) if work_dir is None else Path(work_dir)
        self._jobs: dict[str, _Job] = {}
        self._artefacts: dict[str, Artefact] = {}
        self._repo_hashes: dict[str, str] = {}
        self._track_logs: dict[str, str] = {}
        self._advice: dict[str, dict[str, Any]] = {}
        self._calibration: InfraCalibration | None = None
        self._counts: Counter[str] = Counter()
        self._modes = self._mode_names()

    # -- lifecycle ------------------------------------------------------------------------------

    def __enter__(self) -> SimulationInsights:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Flush the cache file, close the store, stop what was started, drop a temporary work dir."""
        self._cache.flush()
        self._agents.stack.close()
        self._agents = _Agents()
        if self._own_work_dir:
            shutil.rmtree(self._work_dir, ignore_errors=True)

    def flush(self) -> None:
        self._cache.flush()

    # -- setup ----------------------------------------------------------------------------------

    def prepare(self, specs: Iterable[JobSpec], *, extract: bool = True,
                progress: Callable[[int, int], None] | None = None) -> PrepareReport:
        """Give each job its artefact; with `extract`, run (or fetch) extraction once per distinct
        artefact of a detected job. Recalibrates the failure model over all prepared jobs, so
        prepare the whole trace in one call."""
        t0 = time.perf_counter()
        specs = list(specs)
        keys: dict[str, None] = {}
        for spec in specs:
            try:
                art = plan_artefact(spec, self.config.seed, ratio=self.config.length_ratio,
                                    variants=self.config.variants)
            except (KeyError, ValueError):
                self._counts["unmappable_jobs"] += 1
                continue
            self._artefacts.setdefault(art.key, art)
            self._jobs[spec.job_id] = _Job(art.key, spec.gpu_time, spec.num_gpus)
            if self.detected(spec.job_id):
                keys[art.key] = None
        self._calibration = calibrate_infra([j.gpu_time for j in self._jobs.values()],
                                            count_share=self.config.infra_count_share,
                                            gpu_share=self.config.infra_gpu_share)
        before = Counter(self._counts)
        if extract and not self._replay:
            for i, key in enumerate(keys):
                self._fingerprint(self._artefacts[key])
                if progress is not None:
                    progress(i + 1, len(keys))
            self._cache.flush()
        return PrepareReport(
            jobs=len(specs),
            distinct_artefacts=len({self._jobs[s.job_id].artefact for s in specs if s.job_id in self._jobs}),
            detected_jobs=sum(1 for s in specs if s.job_id in self._jobs and self.detected(s.job_id)),
            extractions_run=self._counts["extract_runs"] - before["extract_runs"],
            extraction_cache_hits=self._counts["extract_cache_hits"] - before["extract_cache_hits"],
            seconds=round(time.perf_counter() - t0, 3), calibration=self._calibration,
        )

    def ingest_history(self, specs: Iterable[JobSpec], *, batch_size: int = 256) -> int:
        """Store earlier jobs (trace duration, modelled utilisation and single-job metrics) as
        matchable history. Raises if the store is unreachable (this is setup, not a query)."""
        from schedmate.agents.advisor.retriever import HistoricalJob

        if self._replay:
            raise RuntimeError("a replayed source has a fixed history")
        hist: list[Any] = []
        for spec in specs:
            art = plan_artefact(spec, self.config.seed, ratio=self.config.length_ratio, variants=self.config.variants)
            art = self._artefacts.setdefault(art.key, art)
            fp = self._fingerprint(art)
            if not fp:
                self._counts["history_without_fingerprint"] += 1
                continue
            outcome, metrics = measured_outcome(art, spec.job_id, self.config.seed, duration=spec.duration,
                                                final_status=spec.status, step_factor=_step_factor(spec),
                                                startup_s=_world_startup(spec))
            hist.append(HistoricalJob(job_id=spec.job_id, metadata=fp, outcome=outcome, gpus=art.gpus, nodes=art.nodes,
                                      submitted={"submit_time": spec.submit_time, "source": "history",
                                                 "metrics": metrics}))
        self._cache.flush()
        n = self._retriever().ingest(hist, batch_size=batch_size) if hist else 0
        self._counts["history_ingested"] += n
        return n

    # -- InsightSource --------------------------------------------------------------------------

    def detected(self, job_id: str) -> bool:
        """Whether SchedMate sees this job (deterministic in seed and job id)."""
        return unit_hash("detect", self.config.seed, job_id) < self.config.detection_rate

    def artefact(self, job_id: str) -> Artefact | None:
        job = self._jobs.get(job_id)
        return self._artefacts.get(job.artefact) if job else None

    def failed_log_style(self, job_id: str) -> FailedLogStyle:
        """The world writes a failed attempt's log in the job's artefact's style; `diagnose` reads it."""
        return FailedLogStyle(self.artefact(job_id), seed=self.config.seed, variants=self.config.failure_variants,
                              n_lines=self.config.failure_lines)

    def locate_failure(self, path: str) -> tuple[int | None, int | None]:
        """The Failure Handler's locator on the log at `path` (no LLM, no diagnosis)."""
        from schedmate.agents.failure.locator import LogIndex

        with LogIndex.open(path) as index:
            located = self._handler().locator.locate(index)
        return (None, None) if located is None else (located.line_no, located.block)

    def advise(self, job: JobState) -> AdvisorInsight | None:
        self._counts["advise_calls"] += 1
        art = self._seen(job, "advise")
        if art is None:
            return None
        if self._replay:
            rec = self._advice.get(job.job_id)
            if rec is None:
                self._counts["replay_misses"] += 1
                return None
            return _advice_from(rec)
        extraction = self._extraction(art)
        if not _fingerprint_of(extraction):
            self._counts["advise_no_fingerprint"] += 1
            return None
        t0 = time.perf_counter()
        try:
            pool = self._search(art, exclude=job.job_id)
        except Exception as exc:  # noqa: BLE001 -- store/embedder down: SchedMate does not know
            self._failed("store_errors", exc)
            return None
        # retrieval's own cost, measured the first time this artefact is matched and then reused
        # (with the cached extraction time), so a rerun charges the same measured latency
        lkey = f"{self._repo_hash(art)}:retrieval"
        search_s = self._cache.get("latency", lkey)
        if search_s is None:
            search_s = round(time.perf_counter() - t0, 4)
            if not self._replay:
                self._cache.put("latency", lkey, search_s)
        measured = float(extraction.get("seconds", 0.0)) + search_s
        latency = self.config.advisor_latency_s if self.config.advisor_latency_s is not None else round(measured, 4)
        insight = self._estimate(art, extraction, pool, latency)
        self._counts["advise_matched" if insight.matched else "advise_unmatched"] += 1
        self._advice[job.job_id] = _advice_dict(insight)
        return insight

    def track(self, job: JobState, *, event_at: float, now: float) -> TrackerReading | None:
        """The Metric Tracker on the job's log as the simulator wrote it by `now` (`simlogs`):
        the registry tails the part written before `event_at`, then the rest, and compares."""
        self._counts["track_calls"] += 1
        art = self._seen(job, "track")
        if art is None:
            return None
        rec = self._track_record(art, job, event_at, now)
        if rec is None:
            return None
        if rec.get("before") is None or rec.get("after") is None:
            self._counts["track_no_signal"] += 1
            return None
        return TrackerReading(before=rec["before"], after=rec["after"])

    def failslow(self, job: JobState, *, now: float, since: float | None = None) -> FailSlowSignal:
        """The fail-slow detector on the job's log as the simulator wrote it by `now` (`simlogs`),
        around `since` or, without it, around the current attempt's last speed change: only what
        the log shows, never the speed itself. A slowdown that began before `since` is not one."""
        from schedmate.agents.tracker.failslow import FailSlowDetector

        self._counts["failslow_calls"] += 1
        art = self._seen(job, "failslow")
        if art is None:
            return NO_FAILSLOW
        event_at = since if since is not None else _last_speed_change(job, now)
        made = running_log(art, job, event_at=event_at, now=now, seed=self.config.seed) if event_at is not None else None
        if made is None:
            self._counts["failslow_no_history"] += 1
            return NO_FAILSLOW
        alerts = [a for a in FailSlowDetector().feed_many(split_lines(made.text))
                  if a.since_line >= made.event_line - 2 * max(1, art.log_interval)]
        if not alerts:
            return FailSlowSignal.of(None)
        self._counts["failslow_detected"] += 1
        return FailSlowSignal.of(alerts[-1])

    def diagnose(self, job: JobState, *, attempt: int) -> FailureInsight | None:
        """The Failure Handler on the log the failed attempt wrote (`job.info["failed_logs"]`,
        written by the simulated world, or the job's own `log_file`): the source reads text, it
        is never told the cause."""
        self._counts["diagnose_calls"] += 1
        path = (job.info.get(FAILED_LOGS_KEY) or {}).get(attempt) or job.spec.log_file
        if path is None:
            self._counts["diagnose_no_log"] += 1
            return None
        rec = self._diagnosis_record(Path(path), world=job.spec.num_gpus)
        if rec is None:
            return None
        if rec.get("status") != "failure_found" or rec.get("category") is None:
            self._counts["diagnose_no_failure_found"] += 1
            return None
        measured = float(rec.get("seconds") or 0.0)
        latency = self.config.diagnosis_latency_s if self.config.diagnosis_latency_s is not None else measured
        return FailureInsight(infrastructure=rec["category"] == "infrastructure", category=rec["category"],
                              reason=rec.get("reason") or "", component=rec.get("component"),
                              action=rec.get("action"), latency_s=latency)

    def record(self, job: JobState, *, finished: bool) -> None:
        if self._replay:
            self._counts["record_ignored_replay"] += 1
            return
        art = self.artefact(job.job_id)
        if art is None or not self.detected(job.job_id):
            return
        fp = self._fingerprint(art)
        if not fp:
            return
        from schedmate.agents.advisor.retriever import HistoricalJob
        from schedmate.embeddings.store import JobOutcome

        submitted: dict[str, Any] = {"submit_time": job.spec.submit_time, "source": "run"}
        outcome = JobOutcome()
        if finished:
            measured = job.run_time if job.run_time > 0 else job.spec.duration
            outcome, submitted["metrics"] = measured_outcome(art, job.job_id, self.config.seed, duration=measured,
                                                             final_status=_final_status(job),
                                                             step_factor=_step_factor(job.spec),
                                                             startup_s=_world_startup(job.spec))
        try:
            self._retriever().ingest([HistoricalJob(job_id=job.job_id, metadata=fp, outcome=outcome, gpus=art.gpus,
                                                    nodes=art.nodes, submitted=submitted)])
            self._counts["recorded_finished" if finished else "recorded_arrivals"] += 1
        except Exception as exc:  # noqa: BLE001 -- history is best effort
            self._failed("store_errors", exc)

    def advice_log(self) -> dict[str, float | None]:
        """The duration each advised job was given (None: no estimate), for estimate quality."""
        return {jid: (None if rec.get("duration_s") is None else float(rec["duration_s"]))
                for jid, rec in self._advice.items()}

    def stats(self) -> dict[str, Any]:
        c = self._counts
        cal = self._calibration
        return {
            **{k: 0 for k in _BASE_COUNTERS},
            **dict(sorted(c.items())),
            "agent_runs": c["extract_runs"] + c["track_runs"] + c["diagnose_runs"],
            "cache_hits": c["extract_cache_hits"] + c["track_cache_hits"] + c["diagnose_cache_hits"],
            "cache_misses": c["extract_runs"] + c["track_runs"] + c["diagnose_runs"],
            "jobs": len(self._jobs),
            "detected_jobs": sum(1 for j in self._jobs if self.detected(j)),
            "distinct_artefacts": len({j.artefact for j in self._jobs.values()}),
            "cache_entries": len(self._cache),
            "modes": dict(self._modes),
            "source": "SimulationInsights (replayed)" if self._replay else "SimulationInsights (real agents)",
            "replay": self._replay,
            "store_connected": self._agents.store is not None,
            "models_loaded": self._agents.embedder is not None or self._agents.classifier is not None,
            "detection_rate": self.config.detection_rate,
            "infra_calibration": asdict(cal) if cal else None,
        }

    # -- precomputed mode -----------------------------------------------------------------------

    def save(self, path: Path | str) -> None:
        """Write everything this run answered (format in the module docstring)."""
        used = {j.artefact for j in self._jobs.values()}
        payload = {
            "format": FORMAT, "version": 1, "config": self.config.portable(), "modes": self._modes,
            "calibration": asdict(self._calibration) if self._calibration else None,
            "artefacts": {k: self._artefacts[k].to_dict() for k in sorted(used)},
            "jobs": {jid: [j.artefact, j.gpu_time, j.gpus] for jid, j in self._jobs.items()},
            "advice": self._advice, "track_logs": self._track_logs,
            "cache": self._cache.tables,
        }
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(payload, sort_keys=True), encoding="utf-8")

    @classmethod
    def load(cls, path: Path | str, *, detection_rate: float | None = None) -> SimulationInsights:
        """Replay a saved run without Redis or models. A different `detection_rate` thins the
        saved answers (advice was computed with the saved run's history, so this is approximate)."""
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if data.get("format") != FORMAT:
            raise ValueError(f"{path}: not a {FORMAT} file")
        cfg = dict(data["config"])
        if detection_rate is not None:
            cfg["detection_rate"] = detection_rate
        self = cls(SimConfig.from_portable(cfg))
        self._replay = True
        self._modes = dict(data["modes"])
        cal = data.get("calibration")
        self._calibration = InfraCalibration(**cal) if cal else None
        self._artefacts = {k: Artefact.from_dict(v) for k, v in data["artefacts"].items()}
        self._jobs = {jid: _Job(a, float(g), int(n)) for jid, (a, g, n) in data["jobs"].items()}
        self._advice = dict(data["advice"])
        self._track_logs = dict(data["track_logs"])
        for table, entries in data["cache"].items():
            self._cache.tables.setdefault(table, {}).update(entries)
        return self

    # -- internals: artefacts and extraction ----------------------------------------------------

    def _seen(self, job: JobState, what: str) -> Artefact | None:
        art = self.artefact(job.job_id)
        if art is None:
            self._counts["no_artefact"] += 1
            return None
        if not self.detected(job.job_id):
            self._counts[f"{what}_undetected"] += 1
            return None
        return art

    def _failed(self, counter: str, exc: BaseException) -> None:
        self._counts[counter] += 1
        self._counts[f"{counter}:{type(exc).__name__}"] += 1
        return None

    def _mode_names(self) -> dict[str, str]:
        def llm_name(module: str) -> str | None:
            if module not in self.config.llm_modules:
                return None
            if self._agents.chat is not None:
                return f"llm:{getattr(self._agents.chat, 'model_name', 'chat')}"
            if self.config.llm is not None:
                return f"llm:{self.config.llm.model or self.config.llm.local_model_package}"
            return None

        # the diagnosis cache is keyed by the handler's method (the stack's default: learned)
        return {"extract": llm_name("advisor") or "static", "track": llm_name("tracker") or "regex",
                "diagnose": llm_name("failure") or self.config.stack_config.failure_method}

    def _repo_hash(self, art: Artefact) -> str:
        h = self._repo_hashes.get(art.key)
        if h is None:
            h = self._repo_hashes[art.key] = repo_hash(art.render())
        return h

    def _extraction(self, art: Artefact) -> dict[str, Any]:
        """The cached extraction record of `art` (running the extractor on a miss)."""
        key = f"{self._repo_hash(art)}:{self._modes['extract']}"
        rec = self._cache.get("extract", key)
        if rec is not None:
            self._counts["extract_cache_hits"] += 1
            return rec
        if self._replay:
            self._counts["replay_misses"] += 1
            return {"fields": {}, "error": "not in the saved run"}
        try:
            rec = self._run_extraction(art)
        except Exception as exc:  # noqa: BLE001 -- a broken artefact is "no fingerprint", not a crash
            self._failed("extract_errors", exc)
            return {"fields": {}, "error": f"{type(exc).__name__}: {exc}"[:300]}
        self._cache.put("extract", key, rec)
        return rec

    def _fingerprint(self, art: Artefact) -> dict[str, Any] | None:
        return _fingerprint_of(self._extraction(art))

    def _run_extraction(self, art: Artefact) -> dict[str, Any]:
        repo = art.render()
        dest = self._work_dir / "repos" / self._repo_hash(art)[:20]
        if not dest.is_dir():
            repo.write(dest)
        self._counts["extract_runs"] += 1
        t0 = time.perf_counter()
        if self._modes["extract"] == "static":
            from schedmate.agents.advisor.static_extractor import extract_static

            st = extract_static(dest, repo.command, gpus=art.gpus, nodes=art.nodes)
            return {"fields": st.fields, "mode": "static", "seconds": round(time.perf_counter() - t0, 4)}
        res = self._extractor().extract(dest, repo.command, gpus=art.gpus, nodes=art.nodes)
        self._counts["llm_calls"] += res.model_calls
        return {"fields": res.fields, "mode": self._modes["extract"], "llm_status": res.llm_status,
                "model_calls": res.model_calls, "seconds": round(time.perf_counter() - t0, 4)}

    def _search(self, art: Artefact, *, exclude: str) -> list[Any]:
        """The estimator's pool: the stack's `pool_k` most similar past jobs of the artefact's
        fingerprint (no threshold, records attached, best first), without the asking job itself;
        what `agents.stack.retrieve_pool` reads, from the cached embedding."""
        retriever = self._retriever()
        vec = self._vector(art)
        k = self.config.agents.pool_k
        matches = retriever.store.search(vec, k=k + 1, threshold=None, with_records=True)
        return [m for m in matches if m.job_id != exclude][:k]

    def _estimate(self, art: Artefact, extraction: Mapping[str, Any], pool: Sequence[Any],
                  latency_s: float) -> AdvisorInsight:
        """The deployed estimate from the pool (the function `schedmate advise` calls)."""
        from schedmate.agents.advisor.estimator import estimate_from_pool

        c = self.config.agents
        est = estimate_from_pool(_fingerprint_of(extraction) or {}, art.gpus, pool, threshold=c.threshold,
                                 top_k=c.top_k, estimator=c.estimator)
        return _insight(est, pool, c.top_k, latency_s)

    def _vector(self, art: Artefact) -> Any:
        """Fingerprint embedding of `art`; on a miss, every known detected artefact is embedded
        in one batch (batches cost a fraction of single texts per text)."""
        vectors = self._agents.vectors
        if art.key not in vectors:
            todo: dict[str, Artefact] = {art.key: art}
            for jid, j in self._jobs.items():
                if j.artefact not in vectors and j.artefact not in todo and self.detected(jid):
                    todo[j.artefact] = self._artefacts[j.artefact]
            texts: dict[str, str] = {}
            retriever = self._retriever()
            for key, a in todo.items():
                fp = self._fingerprint(a)
                if fp:
                    texts[key] = retriever.text(fp, a.gpus, a.nodes)
            rows = self._embedder().embed(list(texts.values())) if texts else []
            vectors.update(zip(texts, rows, strict=True))
        return vectors[art.key]

    # -- internals: logs --------------------------------------------------------------------------

    def _log_path(self, kind: str, h: str) -> Path:
        path = self._work_dir / "logs" / f"{kind}-{h[:20]}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def _track_record(self, art: Artefact, job: JobState, event_at: float, now: float) -> dict[str, Any] | None:
        memo = f"{job.job_id}|{event_at!r}|{now!r}"
        h = self._track_logs.get(memo)
        made = None
        if h is None:
            if self._replay:
                self._counts["replay_misses"] += 1
                return None
            made = running_log(art, job, event_at=event_at, now=now, seed=self.config.seed)
            if made is None:
                self._counts["track_no_history"] += 1
                return None
            h = self._track_logs[memo] = content_hash(made.text.encode("utf-8"))
        key = f"{h}:{self._modes['track']}"
        rec = self._cache.get("track", key)
        if rec is not None:
            self._counts["track_cache_hits"] += 1
            return rec
        if self._replay or made is None:
            self._counts["replay_misses"] += 1
            return None
        try:
            rec = self._run_tracker(made.text, made.event_line, self._log_path("track", h))
        except Exception as exc:  # noqa: BLE001 -- an agent failure is "no signal", not a crash
            self._failed("track_errors", exc)
            return None
        self._cache.put("track", key, rec)
        return rec

    def _run_tracker(self, text: str, split: int, path: Path) -> dict[str, Any]:
        """Write the log up to the event, poll, append the rest, poll again: the registry's own
        before/after comparison, around a time just after the last line seen before the event."""
        from schedmate.agents.tracker.registry import JobLogRegistry

        self._counts["track_runs"] += 1
        t0 = time.perf_counter()
        lines = split_lines(text)
        path.write_text("".join(lines[:split]), encoding="utf-8")
        clock = [1000.0]
        reg = JobLogRegistry(self._tracker(), clock=lambda: clock[0], attach_bytes=None)
        try:
            reg.register("job", path, start="begin")
            current = reg.current_throughput("job")
            last_seen = current.window[1] if current is not None and current.window[1] is not None else clock[0]
            with open(path, "a", encoding="utf-8") as fh:
                fh.write("".join(lines[split:]))
            clock[0] = 2000.0
            cmp = reg.throughput_before_after("job", last_seen + 1e-3, min_after_lines=self.config.min_after_lines)
        finally:
            reg.close()
        llm = sum(t.report.stats.llm_calls for t in (cmp.before, cmp.after) if t is not None)
        self._counts["llm_calls"] += llm
        before = after = None
        if cmp.ratio is not None and cmp.before is not None and cmp.after is not None:
            if cmp.before.unit == cmp.after.unit:
                before, after = cmp.before.value, cmp.after.value
            else:
                b, a = cmp.before.report.throughput, cmp.after.report.throughput
                before, after = (b.value, a.value) if b is not None and a is not None else (None, None)
        return {"before": before, "after": after, "unit": cmp.unit, "reason": cmp.reason, "llm_calls": llm,
                "seconds": round(time.perf_counter() - t0, 4)}

    def _diagnosis_record(self, path: Path, *, world: int) -> dict[str, Any] | None:
        try:
            data = path.read_bytes()
        except OSError as exc:  # a log that vanished is "no diagnosis", not a crash
            self._failed("diagnose_errors", exc)
            return None
        key = f"{content_hash(data)}:{self._modes['diagnose']}"
        rec = self._cache.get("diagnose", key)
        if rec is not None:
            self._counts["diagnose_cache_hits"] += 1
            return rec
        if self._replay:
            self._counts["replay_misses"] += 1
            return None
        try:
            rec = self._run_handler(path, world)
        except Exception as exc:  # noqa: BLE001 -- an agent failure is "no diagnosis", not a crash
            self._failed("diagnose_errors", exc)
            return None
        self._cache.put("diagnose", key, rec)
        return rec

    def _run_handler(self, path: Path, world: int) -> dict[str, Any]:
        self._counts["diagnose_runs"] += 1
        d = self._handler().diagnose(path, {"job_id": "sim-failure", "nodes": ["node-0"], "num_gpus": world})
        if d.llm_status == "ok":
            self._counts["llm_calls"] += 1
        action = d.plan.actions[0].kind.value if d.plan is not None and d.plan.actions else None
        return {"status": d.status, "category": d.category.value if d.category else None,
                "reason": d.reason.value if d.reason else None,
                "component": d.component.value if d.component else None, "action": action,
                "llm_status": d.llm_status, "seconds": float(d.timings_s.get("total", 0.0))}

    # -- internals: models and services (lazy) --------------------------------------------------

    def _embedder(self) -> Any:
        if self._agents.embedder is None:
            from schedmate.embeddings.embedder import make_embedder

            if self.config.torch_threads:
                import torch

                torch.set_num_threads(self.config.torch_threads)
            self._agents.embedder = make_embedder()
        return self._agents.embedder

    def _classifier(self) -> Any:
        if self._agents.classifier is None:
            from schedmate.embeddings.classifier import LineClassifier

            self._agents.classifier = LineClassifier(self._embedder())
        return self._agents.classifier

    def _chat(self, module: str) -> Any:
        if module not in self.config.llm_modules:
            return None
        if self._agents.chat is None and self.config.llm is not None:
            from schedmate.llm import open_chat_model

            self._agents.chat = self._agents.stack.enter_context(open_chat_model(self.config.llm))
        return self._agents.chat

    def _stack(self, module: str) -> AgentStack:
        """The agent stack (`agents.stack`) for one agent, with the LLM only if `module` uses it."""
        return AgentStack(self.config.stack_config, embedder=self._agents.embedder, classifier=self._agents.classifier,
                          chat_model=self._chat(module))

    def _tracker(self) -> Any:
        if self._agents.tracker is None:
            self._agents.tracker = self._stack("tracker").tracker(classifier=self._classifier())
        return self._agents.tracker

    def _handler(self) -> Any:
        if self._agents.handler is None:
            self._agents.handler = self._stack("failure").handler(classifier=self._classifier())
        return self._agents.handler

    def _extractor(self) -> Any:
        if self._agents.extractor is None:
            self._agents.extractor = self._stack("advisor").extractor()
        return self._agents.extractor

    def _retriever(self) -> Any:
        """The retriever over the run's store (connecting, or starting redis, on first use).
        After a failed connect, further attempts wait 30 s so an outage costs one timeout."""
        a = self._agents
        if a.retriever is not None:
            return a.retriever
        if time.monotonic() < a.store_down_until:
            raise ConnectionError("job store unavailable (recent connect failed)")
        from schedmate.embeddings.store import JobStore

        try:
            url = self.config.redis_url
            if url is None:
                from schedmate.embeddings.redis_server import running_server

                # a server of its own (own data dir): sources sharing a work dir never stop each other's
                self._work_dir.mkdir(parents=True, exist_ok=True)
                data = Path(tempfile.mkdtemp(prefix="redis-", dir=self._work_dir))
                a.stack.callback(shutil.rmtree, data, True)
                url = a.stack.enter_context(running_server(data)).url
            embedder = self._embedder()
            if self.config.fresh_store:
                _clear_prefix(url, self.config.store_prefix)
            a.store = JobStore.connect(url, embedder.dim, prefix=self.config.store_prefix, retries=1, timeout_s=2.0)
        except Exception:
            a.store_down_until = time.monotonic() + 30.0
            raise
        a.stack.callback(a.store.close)
        a.retriever = AgentStack(self.config.stack_config, embedder=embedder).retriever(a.store)
        return a.retriever


def _clear_prefix(url: str, prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(url, protocol=2, socket_timeout=2.0, socket_connect_timeout=2.0)
    try:
        keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
        for start in range(0, len(keys), 1000):
            client.delete(*keys[start:start + 1000])
    finally:
        client.close()
