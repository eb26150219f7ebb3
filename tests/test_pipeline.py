"""The main job and the experiments' real insight source, on a tiny synthetic trace."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from schedmate.schedulers.job import JobState
from schedmate.sim.experiments.common import synthetic_jobs
from schedmate.sim.experiments.sources import SemanticSources, independent_history
from schedmate.synthetic.jobs.mapping import size_class

needs_redis = pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")


def test_independent_history_keeps_the_size_mix_without_copying_jobs() -> None:
    from schedmate.schedulers.job import JobSpec

    specs = [JobSpec(f"j{i}", float(i), g, 100.0 * (i + 1)) for i, g in enumerate([1, 2, 3, 4, 5, 6, 8, 16, 32])]
    hist = independent_history(specs, 600, seed=3)
    assert len(hist) == 600 and all(h.job_id.startswith("hist-") for h in hist)
    by_class = {size_class(s.num_gpus): {s.duration for s in specs if size_class(s.num_gpus) == size_class(h)}
                for s in specs for h in [s.num_gpus]}
    assert all(h.duration in by_class[size_class(h.num_gpus)] for h in hist)  # lengths from the same class
    own = {(s.num_gpus, s.duration) for s in specs}
    copied = sum((h.num_gpus, h.duration) in own for h in hist) / len(hist)
    assert 0.2 < copied < 0.45  # ~1/3 (3 jobs per class, independent draws), not 1 (copies)
    assert independent_history(specs, 50, seed=3) == independent_history(specs, 50, seed=3)


@needs_redis
def test_sources_replay_a_saved_run_without_models(tmp_path: Path) -> None:
    specs = synthetic_jobs(40, 1, cluster_gpus=16)
    with SemanticSources(cache_dir=tmp_path / "cache", history=30, precomputed=tmp_path / "pre") as make:
        live = make(specs, 1, 1.0)
        first = {s.job_id: live.advise(JobState(s)) for s in specs}
    saved = list((tmp_path / "pre").glob("insights-*-1.json"))
    assert len(saved) == 1
    with SemanticSources(cache_dir=tmp_path / "cache", history=30, precomputed=tmp_path / "pre") as make:
        replay = make(specs, 1, 1.0)
        assert replay.stats()["replay"] is True and make._models is None  # nothing loaded
        again = {s.job_id: replay.advise(JobState(s)) for s in specs}
    assert again == first
    assert any(a is not None and a.matched for a in first.values())


def test_main_job_writes_a_report_with_every_step(main_job_run: Path) -> None:
    """One small run (60 jobs, 30 past ones, no LLM; tests/conftest.py `main_job_run`, shared with
    the browser check in tests/test_report_html.py)."""
    from schedmate.sim.pipeline import MainJobReport

    saved = json.loads((main_job_run / "report.json").read_text())
    steps = saved["steps"]
    assert MainJobReport(main_job_run, steps=steps).ok, steps
    assert set(steps) == {"case 1: Lucid vs Lucid+SchedMate", "case 3: standalone SchedMate with failures",
                          "diagnose one failed job"}
    assert {r["arm"] for r in saved["lucid"]} >= {"lucid", "lucid+sm"}
    assert {r["arm"] for r in saved["standalone"]} >= {"fifo", "qssf", "tiresias", "schedmate-sjf", "schedmate-srpt+fh"}
    diag = saved["diagnosis"]
    assert diag["reason_code"] == diag["truth"]["reason"] == "NetworkError"
    assert abs(diag["line"] - diag["truth"]["first_error_line"]) <= 5
    md = (main_job_run / "report.md").read_text()
    assert "Case 1" in md and "![" in md and (main_job_run / "report.html").stat().st_size > 500
    html = (main_job_run / "report.html").read_text()  # for people: verdict first, plan as steps (tests/test_report_html.py)
    assert html.index('id="verdict"') < html.index("Case 1") and '<ol class="steps">' in html
    assert saved["agents"]["agent_runs"] + saved["agents"]["cache_hits"] > 0
