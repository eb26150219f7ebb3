"""The agents behind the API: one lock around the models, every dependency failure made explicit.

`ServiceCore` owns the embedder / line classifier (loaded once; injectable for tests), the Metric
Tracker with a bounded registry of tailed logs, the Failure Handler, the static (or LLM) metadata
extractor, and lazy connections to the job store and the failure history in Redis.

Degradation, per operation (the scheduler always gets an answer it can act on):
- advise: metadata is extracted without Redis; with the store down (or no match) `estimate` is
  None, `fallback="scheduler-default"` and `reason` says why;
- track: needs no Redis; an LLM failure leaves the tracker regex-only (reported in `degraded`);
- diagnose: with Redis down the similar-failure list is empty (`degraded`), the diagnosis stands;
- jobs register/end, failure reports, similar failures exist only to use Redis: `DependencyDown`
  (the app answers 503 with the default signal and a retry hint).
The models are not thread-safe (`MetricTracker`, the embedder's cache), so calls hold one lock;
the app bounds how many may wait for it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import redis

from schedmate.agents.tracker.tail import ReadingCache
from schedmate.deploy.service.config import PathRefused, ServiceConfig
from schedmate.deploy.service.models import (
    SCHEDULER_DEFAULT,
    AdviseRequest,
    AdviseResponse,
    DiagnoseRequest,
    DiagnoseResponse,
    JobAck,
    JobEndRequest,
    JobRegisterRequest,
    ResolveFailureRequest,
    ResolveFailureResponse,
    SimilarFailuresRequest,
    SimilarFailuresResponse,
    TrackRequest,
    TrackResponse,
)
from schedmate.errors import BadInput, DependencyUnavailable, InvalidValue, NotFound
from schedmate.logfile import readable_log, sniff_log

__all__ = ["DependencyDown", "InputError", "ServiceCore"]


class DependencyDown(DependencyUnavailable):
    """A dependency the operation cannot do without (Redis, the models) is down or not ready."""

    def __init__(self, dependency: str, reason: str) -> None:
        super().__init__(f"{dependency} unavailable: {reason}")
        self.dependency = dependency
        self.reason = reason


InputError = BadInput
"""The request names something that cannot be read: kept as a name; raise `BadInput`, `NotFound`,
`InvalidValue` (`schedmate.errors`), whose class alone gives the HTTP status."""


def _short(exc: BaseException, limit: int = 160) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ServiceCore:
    """The agents as the service calls them (see the module docstring)."""

    def __init__(self, config: ServiceConfig, *, embedder: Any = None, classifier: Any = None,
                 chat_model: Any = None) -> None:
        self.config = config
        self._embedder = embedder if embedder is not None else getattr(classifier, "embedder", None)
        self._classifier = classifier
        self._chat = chat_model
        self._stack = ExitStack()
        self._lock = threading.Lock()  # the models
        self._load_lock = threading.Lock()
        self._ready = False
        self._load_error: str | None = None
        self._jobs_store: Any = None
        self._failures: Any = None
        self._tracker: Any = None
        self._handler: Any = None
        self._extractor: Any = None
        self._registry: Any = None
        self._tracked: OrderedDict[str, Path] = OrderedDict()
        # whole-log `track` readings, kept while the log's (device, inode, size, mtime) hold
        self._readings: ReadingCache[TrackResponse] = ReadingCache(config.tracked_jobs)
        self.agents: Any = None  # the `agents.stack.AgentStack` the models were built with (after `load`)

    # ------------------------------------------------------------------------- lifecycle

    def load(self) -> None:
        """Load the models (tens of seconds on a CPU: MiniLM, the learned failure classifier)."""
        with self._load_lock:
            if self._ready:
                return
            try:
                self._load()
                self._ready = True
                self._load_error = None
            except Exception as exc:  # noqa: BLE001 -- reported by /ready and every answer
                self._load_error = _short(exc)
                raise

    def _load(self) -> None:
        from schedmate.agents.stack import AgentStack
        from schedmate.agents.tracker.registry import JobLogRegistry

        if self._chat is None and self.config.llm is not None:
            from schedmate.llm import open_chat_model

            self._chat = self._stack.enter_context(open_chat_model(self.config.llm))
        self.agents = AgentStack(self.config.stack_config, embedder=self._embedder, classifier=self._classifier,
                                 chat_model=self._chat)
        self._classifier, self._embedder = self.agents.classifier, self.agents.embedder
        self._tracker = self.agents.tracker()
        self._registry = JobLogRegistry(self._tracker)
        self._handler = self.agents.handler(store_url=self.config.redis_url, prepare=True)
        self._extractor = self.agents.extractor()

    @property
    def ready(self) -> bool:
        return self._ready

    def close(self) -> None:
        for store in (self._jobs_store, getattr(self._failures, "store", None)):
            if store is not None:
                store.close()
        if self._registry is not None:
            self._registry.close()
        self._stack.close()

    def readiness(self) -> dict[str, str]:
        """Redis and models, each "ok" or the reason it is not."""
        models = "ok" if self._ready else (f"failed: {self._load_error}" if self._load_error else "loading")
        return {"models": models, "redis": self._ping_redis(), "llm": "configured" if self._chat is not None or self.config.llm
                else "disabled"}

    def _ping_redis(self) -> str:
        if self.config.redis_url is None:
            return "not configured"
        client = redis.Redis.from_url(self.config.redis_url, socket_timeout=self.config.redis_timeout_s,
                                      socket_connect_timeout=self.config.redis_timeout_s, protocol=2)
        try:
            client.ping()
            return "ok"
        except redis.RedisError as exc:
            return f"down ({type(exc).__name__})"
        finally:
            client.close()

    def _need_models(self) -> None:
        if not self._ready:
            raise DependencyDown("models", f"failed to load: {self._load_error}" if self._load_error else "still loading")

    # ------------------------------------------------------------------------- stores

    def job_record(self, job_id: str) -> Any:
        """The job history's record of `job_id` (None when absent); `DependencyDown` without Redis."""
        from schedmate.embeddings.store import StoreError

        try:
            return self._store().get(job_id)
        except StoreError as exc:
            raise DependencyDown("redis", _short(exc)) from exc

    def _store(self) -> Any:
        """The job store (connected on first use, again after a failed connect)."""
        from schedmate.embeddings.store import JobStore, StoreError

        if self._jobs_store is None:
            if self.config.redis_url is None:
                raise DependencyDown("redis", "no job store configured (--redis-url)")
            assert self._embedder is not None  # loaded with the models, before any request
            try:
                self._jobs_store = JobStore.connect(self.config.redis_url, self._embedder.dim,
                                                    prefix=self.config.jobs_prefix, retries=1,
                                                    timeout_s=self.config.redis_timeout_s)
            except StoreError as exc:
                raise DependencyDown("redis", _short(exc)) from exc
        return self._jobs_store

    def _failure_finder(self, k: int = 3) -> Any:
        from schedmate.agents.failure.similar import SimilarFailureFinder
        from schedmate.embeddings.store import StoreError

        if self._failures is None:
            if self.config.redis_url is None:
                raise DependencyDown("redis", "no failure history configured (--redis-url)")
            assert self._embedder is not None  # loaded with the models, before any request
            try:
                self._failures = SimilarFailureFinder.connect(
                    self.config.redis_url, self._embedder, prefix=self.config.failures_prefix,
                    timeout_s=self.config.redis_timeout_s)
            except StoreError as exc:
                raise DependencyDown("redis", _short(exc)) from exc
        self._failures.k = k
        return self._failures

    def _retriever(self) -> Any:
        return self.agents.retriever(self._store())

    # ------------------------------------------------------------------------- paths

    def _path(self, raw: str, kind: str) -> tuple[Path, bool]:
        """`raw` resolved under the allowed roots, and whether it exists. A path no file system
        can hold (a NUL byte, a name too long, a symlink loop) is a 400, never a 500."""
        if "\x00" in raw:
            raise BadInput(f"{kind} path holds a NUL byte")
        try:
            path = self.config.resolve_path(raw, kind=kind)
            return path, path.exists()
        except PathRefused:
            raise
        except (OSError, ValueError, RuntimeError) as exc:
            raise BadInput(f"invalid {kind} path: {getattr(exc, 'strerror', None) or exc}") from None

    def _file(self, raw: str, kind: str) -> Path:
        path, exists = self._path(raw, kind)
        if not exists:
            raise NotFound(f"{kind} not found: {raw}")
        if not path.is_file():
            raise BadInput(f"{kind} is not a regular file: {raw}")
        return path

    def _repo(self, raw: str) -> Path:
        path, exists = self._path(raw, "repo")
        if not path.is_dir():
            raise (BadInput if exists else NotFound)(f"repo is not a directory: {raw}")
        return path

    # ------------------------------------------------------------------------- advise

    def advise(self, req: AdviseRequest) -> AdviseResponse:
        from schedmate.agents.advisor.static_extractor import MANDATORY
        from schedmate.agents.stack import estimate_job
        from schedmate.embeddings.store import StoreError

        repo = self._repo(req.repo)
        self._need_models()
        with self._lock:
            res = self._extractor.extract(repo, req.command, gpus=req.gpus, nodes=req.nodes)
            fields = {k: v for k, v in res.fields.items()}
            out = AdviseResponse(metadata=_jsonable(fields), sources=res.sources(), llm_status=res.llm_status)
            if res.llm_status not in ("ok", "disabled"):
                out.degraded.append(f"LLM extractor {res.llm_status}: static fields only")
            out.degraded.extend(res.skipped)  # files over the advisor's read budget, one note each
            if all(fields.get(f) is None for f in MANDATORY):
                return _default(out, "no fingerprint could be extracted from the repository and command")
            try:
                est = estimate_job(fields, req.gpus, req.nodes, self._retriever(), self.agents.config)
            except DependencyDown as exc:
                return _default(out, f"job store unavailable ({exc.reason})")
            except StoreError as exc:  # redis-py reconnects on the next call once Redis is back
                return _default(out, f"job store unavailable ({_short(exc)})")
        from schedmate.agents.advisor.wire import estimate_of, match_of  # the one conversion

        out.matches = [match_of(m) for m in est.similar]
        if not est.estimated:
            return _default(out, est.note or "no similar past job")
        out.estimate = estimate_of(est)  # the one deployed estimate (`agents.stack.estimate_job`)
        return out

    # ------------------------------------------------------------------------- track

    def track(self, req: TrackRequest) -> TrackResponse:
        path = self._file(req.log, "log")
        self._need_models()
        if req.job_id is None and req.split_at is None:
            # A whole-log reading depends only on the log's bytes: an unchanged log (same device,
            # inode, size, mtime) gets the same answer without being read again, and without
            # waiting for the models. A reading degraded by the LLM is not kept (it may come back).
            kept = self._readings.get(path, lambda: self._whole_read(path, req), keep=lambda r: not r.degraded)
            return kept.model_copy(deep=True)  # the route stamps latency_s on what it returns
        return self._track_read(path, req)

    def _whole_read(self, path: Path, req: TrackRequest) -> TrackResponse:
        """A whole-log reading (kept while the file is unchanged, so the 4 KB sniff is paid once per
        version): a gzip/bz2/xz or UTF-16/32 log is read decoded (`readable_log`, as the CLI's
        `track` reads it) and its notes say how; binary, zstd/zip/lz4 is said plainly
        (`unreadable: <why>`), never "no progress signal"."""
        try:
            decoder = sniff_log(path)
        except (OSError, ValueError) as exc:  # vanished, or swapped for a FIFO since the check
            raise BadInput(f"cannot read log: {getattr(exc, 'strerror', None) or exc}") from None
        if decoder.unreadable:
            why = f"unreadable: {decoder.unreadable}"
            return _default(TrackResponse(note=why), why)
        if not decoder.transforms:
            return self._track_read(path, req)  # plain UTF-8: read in place, backwards, bounded
        with readable_log(path) as view:
            out = self._track_read(view.path, req)
        out.notes = [*view.notes, *out.notes]
        return out

    def _track_read(self, path: Path, req: TrackRequest) -> TrackResponse:
        from schedmate.agents.tracker.tracker import NoSignal
        from schedmate.agents.tracker.wire import track_result_of  # the one conversion (1-based lines)

        split: dict[str, Any] = {}
        with self._lock:
            if req.job_id is None and req.split_at is None:
                result = self._tracker.observe(path)
            else:
                key = self._tail(req.job_id or str(path), path)
                if req.split_at is not None:
                    cmp = self._registry.throughput_before_after(key, req.split_at,
                                                                 min_after_lines=req.min_after_lines)
                    split = {"before": cmp.before.value if cmp.before else None,
                             "after": cmp.after.value if cmp.after else None,
                             "ratio": cmp.ratio, "unit": cmp.unit, "note": cmp.reason}
                    result = self._registry.report(key, poll=False)
                else:
                    result = self._registry.report(key)
        out = TrackResponse(**{**dict(track_result_of(result)), **split})
        if result.llm_fallback:
            out.degraded.append(f"LLM {result.llm_status} ({result.llm_error or 'no detail'}): regex only")
        if isinstance(result, NoSignal) or not result:
            return _default(out, f"no progress signal in the log: {result.reason}")
        return out

    def _tail(self, key: str, path: Path) -> str:
        """Register the log with the registry once per key (LRU-bounded) so later calls only read
        what was appended since, and lines get observation times for `split_at`."""
        known = self._tracked.get(key)
        if known != path:
            self._registry.register(key, path, start="begin")
            self._tracked[key] = path
        self._tracked.move_to_end(key)
        while len(self._tracked) > self.config.tracked_jobs:
            old, _ = self._tracked.popitem(last=False)
            self._registry.unregister(old)
        return key

    # ------------------------------------------------------------------------- diagnose

    def diagnose(self, req: DiagnoseRequest) -> DiagnoseResponse:
        path = self._file(req.log, "log")
        self._need_models()
        meta = {"job_id": req.job_id, "nodes": req.nodes, "num_gpus": req.num_gpus}
        with ExitStack() as stack:
            try:  # gzip/bz2/xz and UTF-16/32 read as they come (schedmate/logfile.py)
                view = stack.enter_context(readable_log(path))
            except (OSError, ValueError) as exc:  # vanished, or swapped for a FIFO since the check
                raise BadInput(f"cannot read log: {getattr(exc, 'strerror', None) or exc}") from None
            if view.unreadable:  # said plainly, never "no failure found"
                return _default(DiagnoseResponse(status="unreadable", message=view.status_message()),
                                view.status_message())
            with self._lock:
                d = self._handler.diagnose(view.path, meta)
        out = _diagnosis(d)
        out.degraded.extend(view.notes)
        out.log, out.notes = str(path), [*view.notes, *out.notes]  # the log asked for, not a decompressed copy
        return out

    # ------------------------------------------------------------------------- jobs

    def register(self, req: JobRegisterRequest) -> JobAck:
        from schedmate.agents.advisor.retriever import HistoricalJob
        from schedmate.agents.advisor.static_extractor import MANDATORY
        from schedmate.embeddings.store import JobOutcome, StoreError

        repo = self._repo(req.repo)
        self._need_models()
        with self._lock:
            res = self._extractor.extract(repo, req.command, gpus=req.gpus, nodes=req.nodes)
            meta = {k: v for k, v in res.fields.items() if v is not None}
            if not any(meta.get(f) is not None for f in MANDATORY):
                return JobAck(job_id=req.job_id, fallback=SCHEDULER_DEFAULT,
                              reason="no fingerprint could be extracted: not stored as history")
            submitted = {"user": req.user, "command": req.command, "repo": str(repo), "log": req.log}
            try:
                retriever = self._retriever()
                retriever.ingest([HistoricalJob(job_id=req.job_id, metadata=meta, outcome=JobOutcome(),
                                                gpus=req.gpus, nodes=req.nodes, submitted=submitted)])
                count = retriever.store.count()
            except StoreError as exc:
                raise DependencyDown("redis", _short(exc)) from exc
        return JobAck(job_id=req.job_id, stored=True, records=count)

    def end(self, req: JobEndRequest) -> JobAck:
        from schedmate.embeddings.store import JobOutcome, StoreError
        from schedmate.schedulers.job import FinalStatus

        log = self._file(req.log, "log") if req.log else None
        self._need_models()
        status = FinalStatus(req.status)
        with self._lock:
            try:
                store = self._store()
                record = store.get(req.job_id)
            except StoreError as exc:
                raise DependencyDown("redis", _short(exc)) from exc
            if record is None:
                raise NotFound(f"job {req.job_id!r} was never registered")
            outcome = record.outcome.model_copy(update={
                k: v for k, v in {"duration": req.duration_s, "sm_util": req.sm_util, "gpu_util": req.gpu_util,
                                  "gpu_memory": req.gpu_memory_gb, "final_status": status}.items() if v is not None})
            diagnosis = None
            if log is not None and status is FinalStatus.FAILED:
                d = self._handler.diagnose(log, {"job_id": req.job_id})
                diagnosis = _diagnosis(d)
                outcome = outcome.model_copy(update={"failure_category": diagnosis.category,
                                                     "failure_reason": diagnosis.reason_code})
                self._record_failure(d, req.duration_s, submitted={"log": str(log)})
            try:
                store.put(record.model_copy(update={"outcome": JobOutcome.model_validate(outcome.model_dump())}))
                count = store.count()
            except StoreError as exc:
                raise DependencyDown("redis", _short(exc)) from exc
        return JobAck(job_id=req.job_id, stored=True, records=count, diagnosis=diagnosis)

    def report_failure(self, req: DiagnoseRequest) -> JobAck:
        """Diagnose a failed job's log and keep it as failure history for later searches."""
        path = self._file(req.log, "log")
        self._need_models()
        with self._lock:
            d = self._handler.diagnose(path, {"job_id": req.job_id, "nodes": req.nodes, "num_gpus": req.num_gpus})
            stored = self._record_failure(d, None, required=True, submitted={"log": str(path)})
        return JobAck(job_id=req.job_id, stored=stored, diagnosis=_diagnosis(d))

    def _record_failure(self, d: Any, duration: float | None, *, required: bool = False,
                        submitted: dict[str, Any] | None = None) -> bool:
        """Keep a diagnosed failure (with `submitted`, e.g. its log path for `diagnose --job`)."""
        from schedmate.embeddings.store import StoreError

        if d.status != "failure_found" or not d.root_cause:
            return False
        try:
            self._failure_finder().record(
                d.job_id, d.root_cause, category=d.category.value if d.category else None,
                reason=d.reason.value if d.reason else None, component=d.component.value if d.component else None,
                duration=duration, submitted=submitted)
            return True
        except (StoreError, DependencyDown) as exc:
            if required:
                raise DependencyDown("redis", _short(exc)) from exc
            return False

    def resolve_failure(self, req: ResolveFailureRequest) -> ResolveFailureResponse:
        """Record how the failure of `req.job_id` was resolved (404 when no failure of it is recorded)."""
        from schedmate.embeddings.store import StoreError

        self._need_models()
        with self._lock:
            try:
                found = self._failure_finder().resolve(req.job_id, req.note)
            except StoreError as exc:
                raise DependencyDown("redis", _short(exc)) from exc
        return ResolveFailureResponse(job_id=req.job_id, resolution=found.resolution or "", resolved_at=found.resolved_at,
                                      reason=found.reason)

    def similar_failures(self, req: SimilarFailuresRequest) -> SimilarFailuresResponse:
        from dataclasses import asdict

        from schedmate.embeddings.store import StoreError

        if (req.line is None) == (req.log is None):
            raise InvalidValue("give exactly one of `line` or `log`")
        path = self._file(req.log, "log") if req.log else None
        self._need_models()
        with self._lock:
            line = req.line
            if path is not None:
                d = self._handler.diagnose(path, {"job_id": "similar-query"})
                if d.status != "failure_found" or not d.root_cause:
                    return SimilarFailuresResponse(fallback=SCHEDULER_DEFAULT, reason=f"no failure found: {d.message}")
                line = d.root_cause
            try:
                found = self._failure_finder(req.k).find(line)
            except StoreError as exc:
                raise DependencyDown("redis", _short(exc)) from exc
        return SimilarFailuresResponse(query=line, similar=[asdict(s) for s in found])


# ----------------------------------------------------------------------------- helpers


def _default(out: Any, reason: str) -> Any:
    out.fallback, out.reason = SCHEDULER_DEFAULT, reason
    return out


def _jsonable(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.value if hasattr(v, "value") else v) for k, v in fields.items()}


def _diagnosis(d: Any) -> DiagnoseResponse:
    """The handler's diagnosis on the wire (`agents/failure/wire.py`), in the service's envelope."""
    from schedmate.agents.failure.wire import diagnosis_of

    out = DiagnoseResponse(**dict(diagnosis_of(d)), degraded=list(d.fallbacks))
    if d.status != "failure_found":
        _default(out, f"{d.status}: {d.message}")
    return out
