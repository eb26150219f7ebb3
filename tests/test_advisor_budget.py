"""The advisor's read budget: a repository is input we do not control.

A file over the per-file cap, a repository over its byte or file cap, and a call whose caller
gave up (the service's 504) each end in a bounded, said answer: the skipped file is named in the
result, the rest of the repository is still read, and a cancelled extraction stops at its next
read instead of parsing on for nobody.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from schedmate.agents.advisor import budget
from schedmate.agents.advisor.static_extractor import extract_static

from .repo_files import write

TRAIN = """import argparse
p = argparse.ArgumentParser()
p.add_argument("--model", default="resnet50")
p.add_argument("--epochs", type=int, default=90)
p.add_argument("--batch-size", type=int, default=256)
args = p.parse_args()
"""


def _huge(path: Path, header: str, size: int) -> None:
    """A file of `size` bytes (sparse after `header`): the budget must decide from its size alone."""
    path.write_text(header)
    with open(path, "r+b") as fh:
        fh.truncate(size)


def test_a_50_mb_source_file_is_skipped_with_a_note_and_the_rest_still_read(tmp_path: Path) -> None:
    repo = write(tmp_path / "repo", {"train.py": TRAIN.replace("import argparse", "import argparse\nimport big")})
    _huge(repo / "big.py", "X = 1\n", 50_000_000)
    t0 = time.monotonic()
    res = extract_static(repo, "python train.py")
    assert time.monotonic() - t0 < 10
    assert res.fields["batch_size"] == 256 and res.fields["iterations"] == 90
    assert res.skipped == ["skipped big.py: 50.0 MB is over the 0.5 MB per-file budget"]
    assert res.skipped[0] in res.errors and "cannot parse big.py" not in res.errors


def test_an_entry_script_over_the_cap_is_said_once_not_as_a_parse_error(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _huge(repo / "train.py", TRAIN, 50_000_000)
    res = extract_static(repo, "python train.py --model resnet50")
    assert res.fields["model_name"] == "resnet-50"  # the command line is still read
    assert [e for e in res.errors if "train.py" in e] == ["skipped train.py: 50.0 MB is over the 0.5 MB per-file budget"]


def test_repository_byte_cap_and_files_cap_skip_the_rest_with_a_note(tmp_path: Path) -> None:
    files = {"train.py": "import a\nimport b\nimport c\n" + TRAIN}
    files |= {f"{m}.py": f"VALUE_{m.upper()} = 1\n" + "# pad\n" * 200 for m in "abc"}
    repo = write(tmp_path / "repo", files)
    by_bytes = extract_static(repo, "python train.py", limits=budget.Budget(repo_bytes=2_000))
    assert any("repository budget of 2000 bytes is spent" in n for n in by_bytes.skipped)
    by_files = extract_static(repo, "python train.py", limits=budget.Budget(files=2))
    assert any("budget of 2 files parsed is spent" in n for n in by_files.skipped)
    assert by_files.fields["batch_size"] == 256  # the entry, read first, still counts
    assert extract_static(repo, "python train.py").skipped == []


def test_a_cancelled_extraction_stops_at_its_next_read_and_says_so(tmp_path: Path) -> None:
    repo = write(tmp_path / "repo", {"train.py": TRAIN})
    token = budget.CancelToken()
    token.cancel()
    with budget.using_cancel_token(token):
        res = extract_static(repo, "python train.py")
    assert res.errors == ["static extraction stopped: cancelled: the caller stopped waiting"]
    assert all(v is None for v in res.fields.values())


def test_the_parse_time_budget_stops_an_extraction(tmp_path: Path) -> None:
    spent = budget.Spending(budget.Budget(seconds=0.01), started=time.monotonic() - 1)
    with pytest.raises(budget.BudgetSpent, match="parse-time budget of 0.01 s spent"):
        spent.admit(tmp_path / "x.py", 10)


def test_budget_caps_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        budget.Budget(file_bytes=0)


def test_a_timed_out_service_call_cancels_its_worker_which_then_frees_its_slot() -> None:
    pytest.importorskip("starlette")
    from schedmate.deploy.service.limits import CallTimeout, WorkQueue

    stopped = threading.Event()

    def work() -> str:  # stands for budgeted parsing: it checks its token between steps
        token = budget.cancel_token()
        assert token is not None
        deadline = time.monotonic() + 30
        while not token.cancelled and time.monotonic() < deadline:
            time.sleep(0.01)
        stopped.set()
        return "done"

    async def scenario() -> WorkQueue:
        queue = WorkQueue(slots=1, timeout_s=0.2)
        with pytest.raises(CallTimeout):
            await queue.run(work)
        for _ in range(300):
            if queue.busy == 0:
                break
            await asyncio.sleep(0.01)
        return queue

    queue = asyncio.run(scenario())
    assert stopped.wait(3) and queue.busy == 0 and queue.timed_out == 1


def test_the_service_says_which_file_the_budget_skipped(classifier: object, tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from schedmate.deploy.service import ServiceConfig, create_app
    from schedmate.deploy.service.core import ServiceCore

    repo = write(tmp_path / "repo", {"train.py": TRAIN.replace("import argparse", "import argparse\nimport big")})
    _huge(repo / "big.py", "X = 1\n", 50_000_000)
    config = ServiceConfig(allowed_roots=(tmp_path,), redis_url=None)
    core = ServiceCore(config, classifier=classifier)
    core.load()
    with TestClient(create_app(config, core)) as c:
        r = c.post("/v1/advise", json={"repo": str(repo), "command": "python train.py --model resnet50", "gpus": 8})
    assert r.status_code == 200
    assert "skipped big.py: 50.0 MB is over the 0.5 MB per-file budget" in r.json()["degraded"]
    assert r.json()["metadata"]["batch_size"] == 256
