"""The three case studies, reduced, with the real local models in the loop (slow: CPU generation).

Each run uses `SemanticSources` exactly as `schedmate experiment ...` does: MiniLM embeddings, a
real redis-server, generated code and logs, and the embedded Gemma-3-270M for the agents named.
The LLM is restricted to the agent each case exercises most, to stay within CI's slow step.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from schedmate.llm import LLMConfig
from schedmate.sim.experiments.common import shared_file
from schedmate.sim.experiments.sources import SemanticSources

from .local_llm import skip_module_without_local_llm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

skip_module_without_local_llm()
if shutil.which("redis-server") is None:
    pytest.skip("redis-server is not installed", allow_module_level=True)

LLM = LLMConfig(max_tokens=256, timeout_s=300.0, ctx=8192)


def sources(tmp_path: Path, *modules: str) -> SemanticSources:
    return SemanticSources(cache_dir=tmp_path / "cache", history=20, llm=LLM, llm_modules=modules)


def test_standalone_reduced_with_the_llm_failure_handler(tmp_path: Path) -> None:
    from schedmate.sim.experiments.standalone import run_standalone_experiment

    with sources(tmp_path, "failure") as make:
        result = run_standalone_experiment(tmp_path / "out", make_source=make, source_label=make.label,
                                           trace="synthetic", n_jobs=24, seeds=[0], gpus=8)
        stats = make.stats()
    assert {r["arm"] for r in result.aggregate} >= {"fifo", "qssf", "tiresias", "schedmate-sjf", "schedmate-srpt+fh"}
    assert (tmp_path / "out" / "standalone.json").stat().st_size > 0
    assert stats["advise_calls"] > 0
    if stats.get("diagnose_runs", 0):  # failures were diagnosed: through the local LLM
        assert stats["llm_calls"] > 0


def test_lucid_reduced_with_real_advisor_and_tracker(tmp_path: Path) -> None:
    from schedmate.sim.experiments.lucid import run_lucid_experiment

    if shared_file("lucid", "single_data.csv") is None:
        pytest.skip("../shared/data/lucid/single_data.csv is absent")
    with sources(tmp_path, "tracker") as make:
        result = run_lucid_experiment(tmp_path / "out", make_source=make, source_label=make.label,
                                      traces=["synthetic"], seeds=[0], n_jobs=30, sweep=(),
                                      arms=["lucid", "lucid+sm"], cluster_gpus={"synthetic": 16})
        stats = make.stats()
    assert [r["arm"] for r in result.aggregate] == ["lucid", "lucid+sm"]
    assert stats["advise_calls"] >= 30 and stats["advise_matched"] + stats["advise_unmatched"] > 0
    assert (tmp_path / "out" / "lucid.json").stat().st_size > 0


def test_sia_reduced_with_the_llm_advisor(tmp_path: Path) -> None:
    from schedmate.sim.experiments.sia import SiaExperimentConfig, run_sia_experiment

    if shared_file("sia", "workloads", "philly", "workload-1.csv") is None:
        pytest.skip("../shared/data/sia/workloads is absent")
    config = SiaExperimentConfig(workloads=("philly/workload-1.csv",), seeds=(0,), arms=("sia", "sia+sm"), limit=6)
    with sources(tmp_path, "advisor") as make:
        result = run_sia_experiment(tmp_path / "out", make_source=make, config=config)
        stats = make.stats()
    assert {r["arm"] for r in result.aggregate} == {"sia", "sia+sm"}
    assert stats["extract_runs"] > 0 and stats["llm_calls"] > 0  # the agent read the generated code
    assert (tmp_path / "out" / "sia.json").stat().st_size > 0
