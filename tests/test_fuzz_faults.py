"""Fault injection (issue 16, item 6) with real processes and servers, no fakes:

- another process truncates, rotates or appends to a log while the Failure Handler and the Metric
  Tracker read it over and over: the reader process exits normally (never by a signal such as SIGBUS)
  and every read is a result or a clear status, never an exception;
- redis-server is killed (SIGKILL) while a writer stores job records: after a restart on the same
  data folder every record whose write was acknowledged is there (records lost: 0);
- the LLM endpoint accepts connections and never answers: the diagnosis still answers with the rules,
  within its time budget.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from schedmate.tests.net_stubs import stalled_endpoint

REPO = Path(__file__).resolve().parents[1]

READER = r"""
import json, os, subprocess, sys, time
from schedmate.embeddings.classifier import LineClassifier
from schedmate.embeddings.embedder import make_embedder
from schedmate.agents.failure import FailureHandler, FailureHandlerConfig
from schedmate.agents.tracker.tracker import MetricTracker, NoSignal, TrackerReport

WRITER = r'''
import os, sys, time
path, mode, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
line = b"[rank0]: iteration 1200/ 10000 | loss 2.3415 | lr 1.0e-04 | 512.3 ms/iter\n"
tb = b"Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n    d['k']\nKeyError: 'k'\n"
block = line * ((4 << 20) // len(line))
end = time.time() + seconds
n = 0
while time.time() < end:
    n += 1
    if mode == "truncate":
        with open(path, "wb") as f: f.write(block + tb)
        time.sleep(0.02); os.truncate(path, 0); time.sleep(0.01)
    elif mode == "rotate":
        os.replace(path, path + ".1")
        with open(path, "wb") as f: f.write(line * 1000 + tb)
        time.sleep(0.02)
    else:
        with open(path, "ab") as f: f.write(line * 200 + (tb if n % 5 == 0 else b""))
        time.sleep(0.005)
'''
path, seconds = sys.argv[1], float(sys.argv[2])
classifier = LineClassifier(make_embedder())
handler = FailureHandler(classifier, config=FailureHandlerConfig(method="rules", time_budget_s=30))
tracker = MetricTracker(classifier)
out = {}
for mode in ("truncate", "rotate", "append"):
    with open(path, "wb") as f:
        f.write(b"start\n")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, path, mode, str(seconds)])
    counts = {"diagnoses": 0, "tracker_reads": 0, "errors": [], "statuses": {}, "notes": 0}
    end = time.time() + seconds
    while time.time() < end:
        try:
            d = handler.diagnose(path, {"job_id": "j"})
            counts["diagnoses"] += 1
            counts["statuses"][d.status] = counts["statuses"].get(d.status, 0) + 1
            counts["notes"] += bool(d.notes)
            r = tracker.observe(path)
            assert isinstance(r, (TrackerReport, NoSignal))
            counts["tracker_reads"] += 1
        except Exception as exc:
            counts["errors"].append(f"{type(exc).__name__}: {exc}"[:200])
    counts["writer_rc"] = writer.wait(60)
    out[mode] = counts
print("RESULT " + json.dumps(out))
"""


def test_logs_truncated_rotated_and_appended_while_read_never_kill_the_reader(tmp_path):
    proc = subprocess.run([sys.executable, "-c", READER, str(tmp_path / "job.log"), "3"], capture_output=True,
                          text=True, timeout=240, cwd=REPO)  # fmt: skip
    assert proc.returncode == 0, f"reader ended with {proc.returncode} (negative: killed by a signal)\n{proc.stderr[-2000:]}"
    result = json.loads(next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT "))[7:])
    for mode, counts in result.items():
        assert counts["writer_rc"] == 0, mode
        assert counts["errors"] == [], (mode, counts["errors"][:3])
        assert counts["diagnoses"] >= 3 and counts["tracker_reads"] >= 3, (mode, counts)
        # a file that exists is never "unreadable"; a missing one (mid-rotation) may be, with a message
        assert set(counts["statuses"]) <= {"failure_found", "no_failure_found", "unreadable"}, counts


# ------------------------------------------------------------------------------------------ Redis


def test_redis_killed_mid_run_loses_no_acknowledged_record(tmp_path):
    """A writer stores records one by one; SIGKILL hits redis-server mid-run; a server restarted on
    the same folder (AOF) holds every record whose `put` returned."""
    import numpy as np

    from schedmate.embeddings.redis_server import running_server
    from schedmate.embeddings.store import JobRecord, JobStore, StoreError

    data = tmp_path / "redis"
    acked: list[str] = []
    failed = 0
    with running_server(data) as info:
        store = JobStore.connect(info.url, 8, prefix="fault")
        try:
            for i in range(400):
                if i == 150:
                    os.kill(info.pid, signal.SIGKILL)
                try:
                    store.put(JobRecord(job_id=f"job-{i}", vector=np.full(8, i + 1.0), submitted={"i": i}))
                    acked.append(f"job-{i}")
                except StoreError:
                    failed += 1
                    break
        finally:
            store.close()
    assert 150 <= len(acked) < 400 and failed == 1
    with running_server(data) as info:
        with JobStore.connect(info.url, 8, prefix="fault") as store:
            got = store.get_many(acked)
    lost = [job for job, rec in zip(acked, got, strict=True) if rec is None]
    assert lost == [], f"{len(lost)} acknowledged record(s) lost: {lost[:5]}"
    assert got[-1].submitted == {"i": len(acked) - 1}


# ------------------------------------------------------------------------------------------ LLM


@pytest.fixture
def stalled_llm() -> Iterator[str]:
    """An OpenAI-compatible URL on loopback that accepts connections and never answers."""
    with stalled_endpoint() as url:
        yield url


def test_a_stalled_llm_mid_run_still_gets_a_rules_diagnosis_in_bounded_time(classifier, stalled_llm):
    from schedmate.agents.failure import FailureHandler, FailureHandlerConfig
    from schedmate.llm import LLMConfig, make_chat_model
    from schedmate.taxonomy import FailureCategory, FailureReason

    chat = make_chat_model(LLMConfig(backend="openai", model="m", base_url=stalled_llm, api_key="k", timeout_s=2.0,
                                     max_retries=0))  # fmt: skip
    handler = FailureHandler(classifier, chat_model=chat, config=FailureHandlerConfig(method="llm", time_budget_s=5.0))
    lines = [f"[rank0]: iteration {i} | loss 2.3 | 512.3 ms/iter" for i in range(300)]
    lines += ["Traceback (most recent call last):", '  File "train.py", line 41, in main', "    batch = table[key]",
              "KeyError: 'input_ids'"]  # fmt: skip
    for attempt in range(3):  # the first call stalls; later ones must not cost more than the budget either
        t0 = time.perf_counter()
        d = handler.diagnose_lines(lines, {"job_id": f"j{attempt}", "nodes": ["gpu-node-01"]})
        elapsed = time.perf_counter() - t0
        assert elapsed < 9.0, f"attempt {attempt}: {elapsed:.1f} s"
        assert d.status == "failure_found" and d.reason is FailureReason.KEY_ERROR
        assert d.category is FailureCategory.SCRIPT
        assert d.llm_status != "ok" and d.llm_calls.answered == 0
        assert not (d.plan and any(getattr(a, "node", None) for a in d.plan.actions))


def test_the_reader_script_is_valid_python():
    compile(textwrap.dedent(READER), "<reader>", "exec")
