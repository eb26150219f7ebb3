"""Every command checks its arguments before doing work, and turns bad data into one line (issue 16, item 4).

Each test is one reproduction from the issue: the command must stop with exit 2, one `error:` line
naming what is wrong, and no traceback; where work would have been lost, it must not have started.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schedmate.cli import app
from schedmate.synthetic.logs.generator import generate_corpus

runner = CliRunner()


def _one_error(result, *needles: str) -> str:  # type: ignore[no-untyped-def]
    """The single `error:` line of a failed command, after checking it is the only one and no traceback."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "╭" not in result.output, result.output
    errors = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, result.output
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


@pytest.fixture
def no_simulation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if a simulation starts: the argument checks must come first."""
    import schedmate.schedulers.compare as compare

    def boom(*_a, **_k):  # type: ignore[no-untyped-def]
        raise AssertionError("simulation started before the arguments were checked")

    monkeypatch.setattr(compare, "compare_policies", boom)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("corpus")
    generate_corpus(folder, 6, 3, min_lines=40, max_lines=120)
    return folder


def _copy(corpus: Path, dest: Path) -> Path:
    import shutil

    shutil.copytree(corpus, dest)
    return dest


# ------------------------------------------------------------------------------------ simulate


def test_an_unknown_policy_fails_before_any_policy_is_simulated(tmp_path, no_simulation):
    result = runner.invoke(app, ["simulate", "--jobs", "20", "--policies", "fifo,bogus", "--out", str(tmp_path / "o")])
    _one_error(result, "--policies", "'bogus'", "fifo")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("policies, needle", [("fifo,fifo", "twice"), ("sjf+xx", "'xx'"), (" , ", "no policy")])
def test_duplicate_empty_and_unknown_variant_policies_are_refused(tmp_path, no_simulation, policies, needle):
    result = runner.invoke(app, ["simulate", "--jobs", "20", "--policies", policies, "--out", str(tmp_path / "o")])
    _one_error(result, needle)


def test_out_at_an_existing_file_fails_before_the_simulations(tmp_path, no_simulation):
    target = tmp_path / "results.txt"
    target.write_text("keep me")
    result = runner.invoke(app, ["simulate", "--jobs", "20", "--policies", "fifo", "--out", str(target)])
    _one_error(result, "--out", "results.txt", "existing file")
    assert target.read_text() == "keep me"


def test_out_under_a_file_is_refused_too(tmp_path, no_simulation):
    (tmp_path / "f").write_text("")
    result = runner.invoke(app, ["simulate", "--jobs", "20", "--out", str(tmp_path / "f" / "sub")])
    _one_error(result, "is a file")


def test_an_absurd_cluster_is_refused_without_building_it(tmp_path, no_simulation):
    started = time.perf_counter()
    result = runner.invoke(app, ["simulate", "--jobs", "20", "--cluster", "80000000", "--out", str(tmp_path / "o")])
    _one_error(result, "80,000,000 GPUs", "at most")
    assert time.perf_counter() - started < 5.0


@pytest.mark.parametrize("args, needle", [
    (["--limit", "-1"], "--limit"), (["--limit", "0"], "--limit"), (["--jobs", "0"], "--jobs"),
    (["--placer", "diagonal"], "--placer"), (["--load", "nan"], "--load"), (["--load", "-1"], "--load"),
])  # fmt: skip
def test_bad_counts_and_choices_are_one_line(tmp_path, no_simulation, args, needle):
    result = runner.invoke(app, ["simulate", "--jobs", "20", *args, "--out", str(tmp_path / "o")])
    _one_error(result, needle)


# ------------------------------------------------------------------------------------ corpus


def test_corpus_generate_at_a_file_fails_before_writing(tmp_path):
    target = tmp_path / "c"
    target.write_text("x")
    result = runner.invoke(app, ["corpus", "generate", "--out", str(target), "--n", "3"])
    _one_error(result, "--out", "existing file")


@pytest.mark.parametrize("args, needle", [
    (["--n", "-2"], "--n"), (["--min-lines", "50", "--max-lines", "10"], "--max-lines"),
    (["--failed-fraction", "1.5"], "--failed-fraction"), (["--pool", "other"], "--pool"),
])  # fmt: skip
def test_corpus_generate_bad_numbers_are_one_line(tmp_path, args, needle):
    result = runner.invoke(app, ["corpus", "generate", "--out", str(tmp_path / "c"), *args])
    _one_error(result, needle)
    assert not (tmp_path / "c").exists()


# ------------------------------------------------------------------------------------ eval corpus


@pytest.mark.parametrize("suite", ["failures", "metrics"])
def test_a_truncated_label_line_names_the_file_and_line(tmp_path, corpus, suite):
    data = _copy(corpus, tmp_path / "c")
    lines = (data / "labels.jsonl").read_text().splitlines()
    lines[2] = lines[2][:70]
    (data / "labels.jsonl").write_text("\n".join(lines) + "\n")
    result = runner.invoke(app, ["eval", suite, "--data", str(data), "--out", str(tmp_path / "r"), "--no-devset"])
    _one_error(result, "labels.jsonl:3", "not JSON")
    assert not (tmp_path / "r").exists()


def test_a_label_with_a_wrong_type_names_line_and_field(tmp_path, corpus):
    data = _copy(corpus, tmp_path / "c")
    lines = (data / "labels.jsonl").read_text().splitlines()
    row = json.loads(lines[4])
    row["n_lines"] = "many"
    lines[4] = json.dumps(row)
    (data / "labels.jsonl").write_text("\n".join(lines) + "\n")
    result = runner.invoke(app, ["eval", "failures", "--data", str(data), "--out", str(tmp_path / "r"), "--no-devset"])
    _one_error(result, "labels.jsonl:5", "n_lines")


@pytest.mark.parametrize("suite", ["failures", "metrics"])
def test_a_missing_log_is_named_before_any_scoring(tmp_path, corpus, suite):
    data = _copy(corpus, tmp_path / "c")
    first = json.loads((data / "labels.jsonl").read_text().splitlines()[1])["path"]
    (data / first).unlink()
    started = time.perf_counter()
    result = runner.invoke(app, ["eval", suite, "--data", str(data), "--out", str(tmp_path / "r"), "--no-devset"])
    _one_error(result, Path(first).name, "missing")
    assert time.perf_counter() - started < 10.0  # no classifier was loaded, no log was scored


def test_a_directory_where_a_log_should_be_is_refused(tmp_path, corpus):
    data = _copy(corpus, tmp_path / "c")
    first = json.loads((data / "labels.jsonl").read_text().splitlines()[0])["path"]
    (data / first).unlink()
    (data / first).mkdir()
    result = runner.invoke(app, ["eval", "metrics", "--data", str(data), "--out", str(tmp_path / "r"), "--no-devset"])
    _one_error(result, "not regular files")


@pytest.mark.parametrize("limit", ["-1", "0"])
def test_eval_limit_must_be_positive(tmp_path, corpus, limit):
    result = runner.invoke(app, ["eval", "failures", "--data", str(corpus), "--out", str(tmp_path / "r"),
                                 "--limit", limit, "--no-devset"])  # fmt: skip
    _one_error(result, "--limit")


def test_eval_out_at_a_file_is_refused(tmp_path, corpus):
    (tmp_path / "r").write_text("")
    result = runner.invoke(app, ["eval", "metrics", "--data", str(corpus), "--out", str(tmp_path / "r"), "--no-devset"])
    _one_error(result, "--out")


# ------------------------------------------------------------------------------------ Redis dies


def test_redis_killed_mid_run_is_one_line_with_a_rerun_hint(tmp_path, capsys):
    """A real redis-server killed under a live store: the eval wrapper says so in one line, exit 2."""
    from schedmate.cli import _store_errors, report_error
    from schedmate.embeddings.redis_server import running_server
    from schedmate.embeddings.store import JobStore
    from schedmate.errors import DependencyUnavailable

    with running_server(tmp_path / "redis") as info:
        store = JobStore.connect(info.url, 8, prefix="t")
        try:
            import os

            os.kill(info.pid, signal.SIGKILL)
            time.sleep(0.3)
            with pytest.raises(DependencyUnavailable) as raised, _store_errors("the advisor eval"):
                store.get_many(["a", "b"])
        finally:
            store.close()
    assert report_error(raised.value).exit_code == 2  # what the CLI's one handler does with it
    text = capsys.readouterr().err.strip()
    assert text.count("\n") == 0, text
    assert "lost its temporary Redis mid-run" in text and "run the command again" in text
    assert "schedmate redis start" not in text  # the old, wrong hint


@pytest.mark.parametrize("suite", ["failures", "metrics"])
def test_a_log_deleted_mid_run_is_left_out_and_named_and_the_rest_scored(tmp_path, corpus, classifier, suite):
    from schedmate.evals.harness import run_failure_eval, run_metrics_eval

    data = _copy(corpus, tmp_path / "c")
    labels = [json.loads(ln) for ln in (data / "labels.jsonl").read_text().splitlines()]
    doomed = data / labels[3]["path"]

    def delete_after_the_second(done: int, _total: int) -> None:  # a real deletion while the run goes on
        if done == 2:
            doomed.unlink()

    run = run_failure_eval if suite == "failures" else run_metrics_eval
    kwargs = {"include_clean": True} if suite == "failures" else {}
    summary = run(data, tmp_path / "r", classifier=classifier, progress=delete_after_the_second, **kwargs)
    assert summary["vanished_logs"] == [str(doomed)]
    assert summary["logs"] == len(labels) - 1
    assert (tmp_path / "r" / "report.json").is_file()


@pytest.mark.parametrize("args, needle", [
    (["lucid", "--seeds", "0"], "--seeds"), (["sia", "--detection-rate", "2"], "--detection-rate"),
    (["standalone", "--limit", "-5"], "--limit"), (["lucid", "--gpus", "80000000"], "--gpus"),
    (["suika", "--seeds", "-1"], "--seeds"),
])  # fmt: skip
def test_experiment_arguments_are_checked_before_any_run(tmp_path, args, needle):
    started = time.perf_counter()
    result = runner.invoke(app, ["experiment", *args, "--out", str(tmp_path / "o")])
    _one_error(result, needle)
    assert time.perf_counter() - started < 5.0 and not (tmp_path / "o").exists()


def test_experiment_out_at_a_file_is_refused(tmp_path):
    (tmp_path / "f").write_text("")
    _one_error(runner.invoke(app, ["experiment", "arena", "--quick", "--out", str(tmp_path / "f")]), "existing file")


def test_demo_arguments_are_checked_before_the_pipeline(tmp_path):
    _one_error(runner.invoke(app, ["demo", "--jobs", "0", "--out", str(tmp_path / "d")]), "--jobs")
    (tmp_path / "f").write_text("")
    _one_error(runner.invoke(app, ["demo", "--out", str(tmp_path / "f")]), "existing file")
