"""The Metadata Extractor agent with the real embedded LLM (slow: real generation on CPU).

The packaged model is the *base* Gemma-3-270M: its answers are schema-valid but mostly invented.
The contract tested is the one a scheduler relies on: the merged fingerprint is valid, every
field the LLM contributed is literally grounded in a file the agent read (or the command), and
anything else is the static extractor's value -- or the whole result is a reported fallback.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from schedmate.agents.advisor.agent import AgentConfig, MetadataExtractor, build_task
from schedmate.agents.advisor.static_extractor import extract_static
from schedmate.agents.advisor.validation import grounded
from schedmate.llm import LLMConfig, open_chat_model
from schedmate.synthetic.jobs import generate_job

from .local_llm import skip_module_without_local_llm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

skip_module_without_local_llm()


@pytest.fixture(scope="module")
def model() -> Iterator[object]:
    with open_chat_model(LLMConfig(max_tokens=256, timeout_s=120, ctx=8192)) as chat:
        yield chat


@pytest.fixture
def job(tmp_path: Path):  # type: ignore[no-untyped-def]
    generated = generate_job("resnet50-in1k", seed=11)
    generated.write(tmp_path / "repo")
    return generated, tmp_path / "repo"


def test_real_llm_agent_is_grounded_or_falls_back(model, job) -> None:  # type: ignore[no-untyped-def]
    generated, repo = job
    command = generated.repo.command
    static = extract_static(repo, command, gpus=generated.config.gpus)
    extractor = MetadataExtractor(model, AgentConfig(timeout_s=240, max_tool_calls=2, max_model_calls=5))
    res = extractor.extract(repo, command, gpus=generated.config.gpus, nodes=generated.config.nodes, static=static)

    assert res.llm_status in ("ok", "timeout", "step_limit", "invalid_output", "unavailable"), res.llm_error
    assert res.metadata is not None  # static always gives a valid fingerprint on generated repos
    seen = build_task(command, repo, generated.config.gpus, generated.config.nodes) + "\n" + "\n".join(
        (repo / p).read_text() for p in res.files_read)
    for name, decision in res.decisions.items():
        if decision.source == "llm":
            assert grounded(name, decision.llm_raw, decision.value, seen,
                            iteration_type=res.fields.get("iteration_type"), static_value=static.fields.get(name)), (
                name, decision)
        elif decision.source in ("static", "none"):
            assert decision.value == static.fields[name]
    if res.llm_status != "ok":
        assert res.fallback and res.fields == static.fields
    else:
        assert res.model_calls >= 1 and res.llm_proposal is not None
        assert [c["name"] for c in res.tool_calls][0] == "file_tree"  # scripted order for llama.cpp


def test_evaluation_end_to_end_small(tmp_path: Path) -> None:
    """The whole evaluation on a tiny corpus (static path; real embedder, real redis-server)."""
    import json
    import shutil

    from schedmate.evals.harness.advisor import AdvisorEvalConfig, run_advisor_eval, summary_line

    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    cfg = AdvisorEvalConfig(n_history=40, n_new=15, dev_history=30, dev_new=10, threads=(1, 2),
                            thresholds=(0.9, 0.95, 0.99), ebm_outer_bags=1, ebm_kwargs={"interactions": 0})
    report = run_advisor_eval(tmp_path / "data", tmp_path / "out", cfg)
    line = summary_line(report)
    assert line.startswith("advisor: 40+15 jobs") and "\n" not in line
    for name in ("advisor_eval.json", "advisor_eval.md", "advisor_eval.html", "advisor_fig12.png", "advisor_jobs.jsonl"):
        assert (tmp_path / "out" / name).stat().st_size > 0
    md = (tmp_path / "out" / "advisor_eval.md").read_text()  # one Report, rendered by the shared Markdown renderer
    assert md.startswith("# Scheduling Advisor evaluation") and "## Estimation error (new jobs)" in md
    assert "| Oracle SchedMate (true fingerprints) |" in md and "](advisor_fig12.png)" in md
    saved = json.loads((tmp_path / "out" / "advisor_eval.json").read_text())
    assert saved["threshold"]["chosen_on"] == "dev" and saved["threshold"]["T"] in (0.9, 0.95, 0.99)
    assert set(saved["results"]) >= {"schedmate", "schedmate_oracle", "lucid_ebm", "same_user_gpus"}
    assert saved["extraction"]["static_new"]["mean_scored"] >= 0.9


def test_cli_eval_advisor_with_the_real_agent(tmp_path: Path) -> None:
    """`schedmate eval advisor` end to end on a tiny corpus, the real local LLM agent on 2 jobs."""
    import json
    import shutil

    from typer.testing import CliRunner

    from schedmate.cli import app

    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["eval", "advisor", "--data", str(tmp_path / "data"), "--out", str(out),
                                      "--history", "30", "--new", "8", "--seed", "5", "--agent-jobs", "2",
                                      "--threads", "1"])
    assert result.exit_code == 0, result.output
    assert "advisor: 30+8 jobs" in result.output
    report = json.loads((out / "advisor_eval.json").read_text())
    assert report["agent"]["jobs"] == 2
    assert set(report["results"]) >= {"schedmate", "lucid_ebm", "same_user_gpus"}
