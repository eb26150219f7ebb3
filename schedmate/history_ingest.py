"""`schedmate history ingest`, streamed: constant memory on any file size, progress on long files,
batched writes, and every refused row said with its file:line.

Why streamed: the first version read the whole file, split it and built every row before storing
one; a 1 GB JSONL grew the process to 14 GB and stored nothing. Here a file is read line by line
(a line longer than `MAX_LINE_BYTES` is refused, not buffered), rows are extracted and written in
batches of `BATCH_ROWS`, and nothing grows with the file but counters and the first
`KEEP_NOTES` messages.

The rules a summary can be checked against:

* a row that cannot be read (not UTF-8, not JSON, a missing field, a bad outcome) is an *error*
  naming `file:line`; the other rows are still stored;
* a duplicate job id is refused: the first record stored under an id is kept (one already in
  the history, or an earlier row of this run), and the later row is an error naming the id.
  A history never changes silently; to replace a record, remove it first;
* a row without a readable repository or fingerprint is *skipped* (listed);
* `stored` counts the records written: `stored + duplicates + errors + skipped` = rows, where a
  row is a past job read (sacct job steps are not rows; unfinished jobs are listed as skipped
  but counted apart, in `unfinished`).
Failed and cancelled runs are stored (failure matching needs them); the estimators leave them out
of durations (`agents.advisor.estimator`).
"""

from __future__ import annotations

import ctypes
import json
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from schedmate.errors import BadInput

__all__ = ["BATCH_ROWS", "JOB_STATES", "IngestSummary", "MAX_LINE_BYTES", "PastJob", "RowError", "ingest_files",
           "mandatory_fields", "read_rows", "return_freed_memory", "trim_heap"]

JOB_STATES = {"COMPLETED": "completed", "FAILED": "failed", "CANCELLED": "cancelled", "TIMEOUT": "failed",
              "OUT_OF_MEMORY": "failed", "NODE_FAIL": "failed", "PREEMPTED": "cancelled", "BOOT_FAIL": "failed",
              "DEADLINE": "failed"}  # sacct states of a finished job -> FinalStatus; others (RUNNING, ...) are skipped

BATCH_ROWS = 500
MAX_LINE_BYTES = 1_000_000
KEEP_NOTES = 50
PROGRESS_EVERY_S = 2.0
_EXTRACT_CACHE = 256


class RowError(BadInput):
    """One row that cannot be stored; `str()` is `file:line: why`."""


@dataclass
class PastJob:
    """One row of an export, before extraction."""

    job_id: str
    repo: Path | None
    command: str | None
    gpus: int | None
    nodes: int | None
    outcome: dict[str, Any]
    submitted: dict[str, Any]
    metadata: dict[str, Any] | None = None
    root_cause: str | None = None
    where: str = ""


@dataclass
class _Notes:
    """The first `KEEP_NOTES` messages of a kind and how many there were in all."""

    kept: list[str] = field(default_factory=list)
    total: int = 0

    def add(self, text: str) -> None:
        self.total += 1
        if len(self.kept) < KEEP_NOTES:
            self.kept.append(text)


@dataclass
class IngestSummary:
    files: list[str] = field(default_factory=list)
    rows: int = 0
    stored: int = 0
    failures: int = 0  # stored rows that also filed a root-cause line in the failure history
    unfinished: int = 0
    duplicates: _Notes = field(default_factory=_Notes)
    errors: _Notes = field(default_factory=_Notes)
    skipped: _Notes = field(default_factory=_Notes)

    def as_dict(self) -> dict[str, Any]:
        return {"ingested": self.stored, "rows": self.rows, "failures": self.failures,
                "duplicates": self.duplicates.total, "duplicate_rows": self.duplicates.kept,
                "errors": self.errors.kept, "errors_total": self.errors.total, "skipped": self.skipped.kept,
                "skipped_total": self.skipped.total - self.unfinished, "unfinished": self.unfinished,
                "files": self.files}


# ------------------------------------------------------------------------------------------ reading


def _lines(fh: BinaryIO, path: Path) -> Iterator[tuple[int, str | RowError]]:
    """(line number, text or the reason it cannot be read); a line never held past the cap."""
    no = 0
    while True:
        raw = fh.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        no += 1
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):  # skip the rest of the line in bounded reads
                raw = fh.readline(MAX_LINE_BYTES)
            yield no, RowError(f"{path}:{no}: line longer than {MAX_LINE_BYTES} bytes: not read")
            continue
        try:
            yield no, raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield no, RowError(f"{path}:{no}: not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})")


def read_rows(path: Path, fh: BinaryIO) -> Iterator[PastJob | RowError | str]:
    """Rows of a JSONL or sacct export (format from the first readable line): a `PastJob`, a
    `RowError`, or a skip note (str). Raises `RowError` only when the file is neither format."""
    lines = _lines(fh, path)
    header: list[str] | None = None
    fmt = ""
    for no, text in lines:
        if isinstance(text, RowError):
            yield text
            continue
        if not text.strip():
            continue
        if not fmt:
            if text.lstrip().startswith("{"):
                fmt = "jsonl"
            elif "|" in text and "JobID" in text:
                fmt = "sacct"
                header = text.strip().split("|")
                need = {"JobID", "State", "Elapsed"}
                if not need <= set(header):
                    raise RowError(f"{path}:{no}: a sacct export needs the columns {', '.join(sorted(need))}; "
                                   f"got {text.strip()[:200]!r}")
                continue
            else:
                raise RowError(f"{path}:{no}: neither JSONL nor a sacct --parsable2 export "
                               "(see `schedmate history ingest --help`)")
        try:
            if fmt == "jsonl":
                yield _jsonl_row(path, no, text)
            else:
                assert header is not None
                yield _sacct_row(path, no, text, header)
        except RowError as exc:
            yield exc


def _jsonl_row(path: Path, no: int, raw: str) -> PastJob:
    where = f"{path}:{no}"
    try:
        row = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise RowError(f"{where}: not JSON ({exc.msg})") from None
    except RecursionError:
        raise RowError(f"{where}: JSON nested too deeply") from None
    if not isinstance(row, dict):
        raise RowError(f"{where}: expected a JSON object per line")
    job_id = row.get("job_id")
    if not isinstance(job_id, str) or not job_id.strip():
        raise RowError(f"{where}: `job_id` (a non-empty string) is required")
    repo = row.get("repo")
    if repo is not None and not isinstance(repo, str):
        raise RowError(f"{where}: `repo` must be a path string")
    if row.get("metadata") is None and (not repo or not row.get("command")):
        raise RowError(f"{where}: give `repo` and `command`, or `metadata`")
    if row.get("command") is not None and not isinstance(row["command"], str):
        raise RowError(f"{where}: `command` must be a string")
    if row.get("metadata") is not None and not isinstance(row["metadata"], dict):
        raise RowError(f"{where}: `metadata` must be an object of fingerprint fields")
    if not isinstance(row.get("outcome") or {}, dict):
        raise RowError(f"{where}: `outcome` must be an object")
    if row.get("root_cause") is not None and not isinstance(row["root_cause"], str):
        raise RowError(f"{where}: `root_cause` must be a string (the failing log line)")
    for key in ("gpus", "nodes"):
        if row.get(key) is not None and (not isinstance(row[key], int) or isinstance(row[key], bool) or row[key] < 1):
            raise RowError(f"{where}: `{key}` must be a positive integer, not {row[key]!r}")
    if "\x00" in (repo or ""):
        raise RowError(f"{where}: `repo` holds a NUL byte")
    repo_path = None if not repo else (Path(repo) if Path(repo).is_absolute() else path.parent / repo)
    known = {"job_id", "repo", "command", "gpus", "nodes", "outcome", "metadata", "root_cause"}
    return PastJob(job_id=job_id, repo=repo_path, command=row.get("command"), gpus=row.get("gpus"),
                   nodes=row.get("nodes"), outcome=dict(row.get("outcome") or {}),
                   submitted={k: v for k, v in row.items() if k not in known} | {"source": str(path.name)},
                   metadata=row.get("metadata"), root_cause=row.get("root_cause"), where=where)


def _parse_elapsed(text: str) -> float | None:
    """sacct's [D-]HH:MM:SS, MM:SS or MM:SS.mmm."""
    text = text.strip()
    if not text:
        return None
    days = 0
    if "-" in text:
        d, text = text.split("-", 1)
        days = int(d)
    secs = 0.0
    for p in text.split(":"):
        secs = secs * 60 + float(p)
    return days * 86400 + secs


def _tres(text: str, key: str) -> int | None:
    for item in text.split(","):
        name, _, value = item.partition("=")
        if name == key or (key == "gres/gpu" and name.startswith("gres/gpu:")):
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _sacct_row(path: Path, no: int, raw: str, header: list[str]) -> PastJob | str:
    cells = raw.rstrip("\r\n").split("|")
    if len(cells) != len(header):
        raise RowError(f"{path}:{no}: {len(cells)} fields, the header has {len(header)}")
    row = dict(zip(header, cells, strict=True))
    job_id = row["JobID"].strip()
    if "." in job_id:
        return ""  # a job step; the job's own row carries the allocation and the outcome
    state = row["State"].split()[0] if row["State"].strip() else ""
    status = JOB_STATES.get(state)
    if status is None:
        return f"slurm-{job_id}: state {state or '?'} (not finished)"
    try:
        elapsed = _parse_elapsed(row["Elapsed"])
    except ValueError:
        raise RowError(f"{path}:{no}: cannot read Elapsed {row['Elapsed']!r}") from None
    workdir = Path(row["WorkDir"]) if row.get("WorkDir") and "\x00" not in row["WorkDir"] else None
    command = (row.get("SubmitLine") or "").strip() or None
    name = row.get("JobName", "").strip()
    if command is None and workdir is not None and name and "/" not in name and (workdir / name).is_file():
        command = f"sbatch {name}"
    tres = row.get("AllocTRES", "")
    outcome: dict[str, Any] = {"duration": elapsed, "final_status": status}
    if state != "COMPLETED":
        outcome["failure_reason"] = state.lower() if state != "FAILED" else f"exit {row.get('ExitCode', '?')}"
    return PastJob(job_id=f"slurm-{job_id}", repo=workdir, command=command, gpus=_tres(tres, "gres/gpu"),
                   nodes=_tres(tres, "node"), outcome=outcome, where=f"{path}:{no}",
                   submitted={"user": row.get("User") or None, "name": name or None, "source": "sacct"})


# ------------------------------------------------------------------------------------------ storing


def mandatory_fields() -> tuple[str, ...]:
    """The fingerprint fields a workload must have: those `WorkloadMetadata` requires (the same as
    `static_extractor.MANDATORY`, read from the schema so a row with metadata never imports the
    extractor)."""
    from schedmate.workload import WorkloadMetadata

    return tuple(name for name, f in WorkloadMetadata.model_fields.items() if f.is_required())


class _Writer:
    """Batches rows into the job store (and the failure history for rows with a root cause)."""

    def __init__(self, url: str, make_embedder: Callable[[], Any], summary: IngestSummary) -> None:
        self.url = url
        self.make_embedder = make_embedder
        self.summary = summary
        self.batch: list[PastJob] = []
        self._extracted: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()
        self._store: Any = None
        self._retriever: Any = None
        self._finder: Any = None
        self._embedder: Any = None
        self._client: Any = None
        self._plain_cache: Any = None

    def add(self, job: PastJob) -> None:
        self.batch.append(job)
        if len(self.batch) >= BATCH_ROWS:
            self.flush()

    def _open(self) -> None:
        import redis

        from schedmate.agents.advisor.retriever import SimilarJobRetriever
        from schedmate.embeddings.store import JobStore

        _load_transformers_without_distributed()
        self._embedder = self.make_embedder()
        self._store = JobStore.connect(self.url, self._embedder.dim)
        self._retriever = SimilarJobRetriever(self._store, self._embedder)
        self._client = redis.Redis.from_url(self.url, protocol=2, socket_timeout=30.0, socket_connect_timeout=5.0)
        self._spill_cache()

    def _spill_cache(self) -> None:
        """The embedder's cache keeps its rows beyond the most recent `HOT_ROWS` in Redis for the
        run (same hits, same vectors; history_ingest_cache.py): per-row memory stays bounded."""
        from schedmate.embeddings.embedder import EmbeddingCache
        from schedmate.history_ingest_cache import HOT_ROWS, SpillingEmbeddingCache

        cache = getattr(self._embedder, "cache", None)
        if type(cache) is EmbeddingCache and cache.capacity > HOT_ROWS:
            self._plain_cache = cache
            self._embedder.cache = SpillingEmbeddingCache.taking_over(cache, self._client, HOT_ROWS)

    def _failures(self) -> Any:
        """The failure history, opened at the first row with a root-cause line: importing the
        Failure Handler's package loads its LLM client (langchain, openai: +27 MB RSS), which a
        history without root causes never needs."""
        if self._finder is None:
            from schedmate.agents.failure.similar import SimilarFailureFinder

            self._finder = SimilarFailureFinder.connect(self.url, self._embedder)
        return self._finder

    def close(self) -> None:
        try:
            if self._plain_cache is not None:  # the embedder may be shared: its cache as a plain one would be
                self._embedder.cache.hand_back(self._plain_cache)
        finally:
            if self._plain_cache is not None:
                self._embedder.cache = self._plain_cache
            for x in (self._store, self._finder.store if self._finder else None, self._client):
                if x is not None:
                    x.close()

    def _existing(self, ids: list[str]) -> list[bool]:
        from schedmate.embeddings.store import DEFAULT_PREFIX
        from schedmate.embeddings.store_search import StoreKeys

        pipe = self._client.pipeline(transaction=False)
        key = StoreKeys(DEFAULT_PREFIX).ids
        for job_id in ids:
            pipe.sismember(key, job_id)
        return [bool(x) for x in pipe.execute()]

    def _fields(self, job: PastJob) -> dict[str, Any] | None:
        if job.metadata is not None:
            return dict(job.metadata)
        if job.repo is None or job.command is None or not job.repo.is_dir():
            return None
        # only rows that name a repository: the extractor's tools import langchain (+25 MB RSS)
        from schedmate.agents.advisor.static_extractor import extract_static

        key = (str(job.repo), job.command, job.gpus, job.nodes)
        if key not in self._extracted:  # reruns of one script share an extraction; the cache is bounded
            self._extracted[key] = extract_static(job.repo, job.command, gpus=job.gpus, nodes=job.nodes).fields
            if len(self._extracted) > _EXTRACT_CACHE:
                self._extracted.popitem(last=False)
        return dict(self._extracted[key])

    def flush(self) -> None:
        from pydantic import ValidationError

        from schedmate.agents.advisor.retriever import HistoricalJob
        from schedmate.embeddings.store import JobOutcome
        from schedmate.schedulers.job import FinalStatus

        batch, self.batch = self.batch, []
        if not batch:
            return
        if self._store is None:
            self._open()
        s = self.summary
        mandatory = mandatory_fields()
        seen: dict[str, str] = {}
        fresh: list[tuple[PastJob, JobOutcome]] = []
        for job in batch:
            try:
                outcome = JobOutcome.model_validate(job.outcome)
            except ValidationError as exc:
                e = exc.errors()[0]
                s.errors.add(f"{job.where}: outcome.{'.'.join(map(str, e['loc']))}: {e['msg']}")
                continue
            if job.job_id in seen:
                s.duplicates.add(f"{job.where}: duplicate job id {job.job_id!r} (first at {seen[job.job_id]}): "
                                 "not stored, the first record is kept")
                continue
            seen[job.job_id] = job.where
            fresh.append((job, outcome))
        stored_before = self._existing([j.job_id for j, _ in fresh]) if fresh else []
        hist: list[HistoricalJob] = []
        failures: list[tuple[PastJob, JobOutcome]] = []
        for (job, outcome), exists in zip(fresh, stored_before, strict=True):
            if exists:
                s.duplicates.add(f"{job.where}: duplicate job id {job.job_id!r} (already in the history): "
                                 "not stored, the stored record is kept")
                continue
            fields = self._fields(job)
            if fields is None:
                s.skipped.add(f"{job.job_id}: no readable repository and command")
                continue
            meta = {k: v for k, v in fields.items() if v is not None}
            if not any(meta.get(f) is not None for f in mandatory):
                s.skipped.add(f"{job.job_id}: no fingerprint in its code")
                continue
            if job.repo is not None and job.metadata is None:
                job.submitted.update(repo=str(job.repo), command=job.command)
            hist.append(HistoricalJob(job_id=job.job_id, metadata=meta, outcome=outcome, gpus=job.gpus,
                                      nodes=job.nodes, submitted=job.submitted))
            if job.root_cause:
                failures.append((job, outcome))
        if hist:
            s.stored += self._retriever.ingest(hist)
        for job, outcome in failures:
            self._failures().record(job.job_id, job.root_cause or "", category=outcome.failure_category,
                                reason=outcome.failure_reason, duration=outcome.duration,
                                final_status=outcome.final_status or FinalStatus.FAILED)
            s.failures += 1
        trim_heap()


def _load_transformers_without_distributed() -> None:
    """An ingest never runs tensor parallelism: if the embedder's transformers is not imported yet,
    import it without torch.distributed.tensor and sympy (-42 MB RSS, embeddings unchanged;
    `flag_model_class`). Without the `embed` extra this does nothing: the embedder says what is missing."""
    from schedmate.embeddings.flag_loader import flag_model_class

    try:
        flag_model_class(distributed=False)
    except ImportError:
        return


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
_FIXED_THRESHOLD = 128 * 1024


def return_freed_memory() -> None:
    """Make glibc hand freed memory back to the system at once (this process, from now on).

    Why: each forward pass of the embedder allocates its activations (tens of MB) and frees them.
    glibc raises its mmap threshold to the largest block freed (up to 32 MB), so later blocks come
    from the heap, where they fragment across torch's threads' arenas and are never returned:
    RSS grew by ~15 MB per 256 rows embedded (bench/bench_history_ingest.py). Fixed thresholds
    keep large blocks in their own mappings, returned on free; results are unchanged (only where
    memory comes from). A no-op where the C library has no `mallopt` (musl, macOS)."""
    try:
        mallopt = _libc().mallopt
    except (OSError, AttributeError):
        return
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    for param in (_M_MMAP_THRESHOLD, _M_TRIM_THRESHOLD):
        mallopt(param, _FIXED_THRESHOLD)


def trim_heap() -> None:
    """Return the free pages inside glibc's heaps to the system (`malloc_trim(0)`), after each
    batch: the small blocks of a forward pass (under the mmap threshold) free holes between live
    ones that the top-of-heap trim cannot give back. Milliseconds per batch; a no-op elsewhere."""
    try:
        _libc().malloc_trim(0)
    except (OSError, AttributeError):
        return


def _libc() -> ctypes.CDLL:
    """The C library this process runs on: its own symbols (`dlopen(NULL)`). Not
    `ctypes.util.find_library`, which runs `ldconfig` in a forked child: a copy of a 400 MB
    process's page tables after every batch."""
    return ctypes.CDLL(None)


def ingest_files(files: list[Path], url: str, make_embedder: Callable[[], Any],
                 progress: Callable[[str], None] | None = None) -> IngestSummary:
    """Stream every file into the history at `url`. Raises `RowError` when a file is in neither
    format (its first readable line says so); everything else is counted in the summary."""
    summary = IngestSummary(files=[str(f) for f in files])
    return_freed_memory()
    writer = _Writer(url, make_embedder, summary)
    try:
        for path in files:
            size = max(path.stat().st_size, 1)
            t0 = last = time.monotonic()
            if progress is not None and size > 10_000_000:  # at once: the model load alone takes seconds
                progress(f"{path.name}: {size / 1e6:,.0f} MB to read, in batches of {BATCH_ROWS} rows")
            with open(path, "rb") as fh:
                for row in read_rows(path, fh):
                    if isinstance(row, str):
                        if row:  # an unfinished job: listed, not a past job
                            summary.unfinished += 1
                            summary.skipped.add(row)
                        continue
                    summary.rows += 1
                    if isinstance(row, RowError):
                        summary.errors.add(str(row))
                    else:
                        writer.add(row)
                    now = time.monotonic()
                    if progress is not None and now - last >= PROGRESS_EVERY_S:
                        last = now
                        progress(f"{path.name}: {100 * fh.tell() / size:.0f}% read, {summary.rows} row(s), "
                                 f"{summary.stored} stored, {summary.rows / (now - t0):.0f} rows/s")
            writer.flush()
    finally:
        writer.close()
    return summary
