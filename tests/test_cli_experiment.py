"""Every experiment is a `schedmate experiment` subcommand (issue 25 item 4): no case study is
reachable only through `python -m`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schedmate.cli import app

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()

EXPERIMENTS = ("lucid", "sia", "standalone", "slurm", "value-curve", "ares", "arnold", "arena", "suika",
               "ares-adapter", "arnold-adapter", "arena-adapter", "suika-adapter", "failslow", "sia-reference")


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_each_experiment_has_a_subcommand_with_help(name: str) -> None:
    res = runner.invoke(app, ["experiment", name, "--help"])
    assert res.exit_code == 0, res.output
    assert f"experiment {name}" in res.output


def test_the_experiment_group_lists_every_experiment() -> None:
    out = runner.invoke(app, ["experiment", "--help"]).output
    assert all(name in out for name in EXPERIMENTS)


def _has_main_block(path: Path) -> bool:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            return True
    return False


def test_the_experiments_have_no_python_m_entry_point_of_their_own() -> None:
    modules = [ROOT / "sim" / "experiments" / f"{m}.py" for m in ("ares", "arena", "arnold", "suika", "failslow",
                                                                   "value_curve", "sia", "standalone")]
    modules += [ROOT / "schedulers" / m / "experiment.py" for m in ("ares", "arnold")]
    assert not (ROOT / "schedulers" / "sia" / "__main__.py").exists()  # now `experiment sia-reference`
    assert [p.name for p in modules if _has_main_block(p)] == []


def test_failslow_passes_its_options_to_the_experiment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import schedmate.sim.experiments.failslow as failslow

    calls: list[tuple[Path, dict[str, int]]] = []

    def run(out: Path, **kw: int) -> dict[str, str]:
        calls.append((out, kw))
        return {"summary_line": "fail-slow summary"}

    monkeypatch.setattr(failslow, "run_experiment", run)
    res = runner.invoke(app, ["experiment", "failslow", "--seeds", "2", "--jobs", "7", "--nodes", "3",
                              "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    assert calls == [(tmp_path / "o", {"seeds": 2, "jobs": 7, "nodes": 3})]
    assert "fail-slow summary" in res.output


def test_an_adapter_experiment_runs_the_seeds_asked_with_the_source_asked(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import schedmate.sim.experiments.arena as arena

    seen: list[tuple[object, object]] = []

    def run(out: Path, *, make_source: object, config: arena.ArenaAdapterConfig, progress: object) -> object:
        seen.append((make_source, config))
        return type("Result", (), {"summary": "arena summary"})()

    monkeypatch.setattr(arena, "run_arena_adapter_experiment", run)
    res = runner.invoke(app, ["experiment", "arena-adapter", "--quick", "--seeds", "2", "--first-seed", "5",
                              "--source", "declared-model", "--jobs", "30", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    (make_source, config), = seen
    assert make_source == arena.DeclaredModelMatches.make
    assert config.seeds == (5, 6) and config.n_jobs == 30 and config.clusters == arena.ArenaAdapterConfig.quick().clusters
    assert "arena summary" in res.output


def test_a_bad_seed_count_is_refused_before_any_run(tmp_path: Path) -> None:
    res = runner.invoke(app, ["experiment", "failslow", "--seeds", "0", "--out", str(tmp_path / "o")])
    assert res.exit_code != 0 and not (tmp_path / "o").exists()


@pytest.mark.parametrize(("source", "label"), [("calibrated", "calibrated knobs (SENSITIVITY ONLY, not the real modules)"),
                                               ("null", "null (history fallback only)")])
def test_the_standalone_sensitivity_sources_run_through_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 source: str, label: str) -> None:
    import schedmate.sim.experiments.standalone as standalone

    seen: list[dict[str, object]] = []

    def run(out: Path, **kw: object) -> str:
        seen.append(kw)
        return "standalone result"

    monkeypatch.setattr(standalone, "run_standalone_experiment", run)
    res = runner.invoke(app, ["experiment", "standalone", "--source", source, "--trace", "synthetic", "--seeds", "1",
                              "--detection-rate", "0.5", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    (kw,) = seen
    assert kw["source_label"] == label and kw["trace"] == "synthetic"
    assert kw["setup"] == standalone.StandaloneSetup(detection_rate=0.5,
                                                     failures=standalone.FailureModel(fail_rate=standalone.FAIL_RATES["synthetic"]))


def test_sia_runs_the_rule_source_through_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import schedmate.sim.experiments.sia as sia

    seen: list[dict[str, object]] = []

    def run(out: Path, **kw: object) -> str:
        seen.append(kw)
        return "sia result"

    monkeypatch.setattr(sia, "run_sia_experiment", run)
    res = runner.invoke(app, ["experiment", "sia", "--source", "rule", "--seeds", "1", "--jitter", "0",
                              "--t-prof-sweep", "60,300", "--newtrace", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    (kw,) = seen
    cfg = kw["config"]
    assert isinstance(cfg, sia.SiaExperimentConfig) and kw["make_source"] is sia.rule_source
    assert cfg.jitter_s == 0.0 and cfg.t_prof_sweep == (60.0, 300.0) and cfg.workloads[-1] == sia.NEWTRACE
