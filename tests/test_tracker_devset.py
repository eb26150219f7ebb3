"""Spec for the Metric Tracker's real-dev-set scoring (`evals/harness/devset_metrics.py`) and the
`schedmate eval metrics` command that reports it beside the generated corpus.

The dev set here is a tiny one written by the test (the real one, `evals/devset/progress`, is
never read by tests): a log the regexes read, one only the LLM can read, one with no progress,
and a label file still being filled (a line that does not parse yet).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from typer.testing import CliRunner

from schedmate.devset import ProgressItem
from schedmate.embeddings.classifier import LineClassifier
from schedmate.embeddings.embedder import make_embedder
from schedmate.evals.harness.devset_metrics import judge, load_items, norm_unit, run_devset_metrics, write_devset_report


@pytest.fixture(scope="module")
def classifier() -> LineClassifier:
    pytest.importorskip("FlagEmbedding", reason="needs the `embed` extra (FlagEmbedding, torch)")
    return LineClassifier(make_embedder())


def _item(id: str, file: str, **kw: Any) -> dict[str, Any]:
    return {"id": id, "file": file, "source_url": "https://example.org/log", "confidence": "high",
            "framework": kw.pop("framework", "custom"), "last_line": kw.pop("last_line", 1), **kw}  # fmt: skip


def make_devset(root: Path, broken: bool = False) -> Path:
    logs = root / "logs"
    logs.mkdir(parents=True)
    mm = [f"02/18 12:{k:02d}:00 - mmengine - INFO - Epoch(train)  [1][{50 * k:4d}/7330]  lr: 1.0e-02  eta: 1:00:00  "
          f"time: 0.4555  data_time: 0.0201  memory: 3500  loss: {1.6 - k / 100:.4f}" for k in range(1, 11)]  # fmt: skip
    mm.append("02/18 12:21:00 - mmengine - INFO - Epoch(val)  [1][ 50/625]    eta: 0:00:30  time: 0.0512  data_time: 0.0021")
    (logs / "mm.log").write_text("\n".join(mm) + "\n")
    odd = [f"Trn | stp#{s:06d} | obj {2.0 + s / 1000:.3f} | wall 0.512 sec" for s in range(1, 9)]
    (logs / "odd.log").write_text("\n".join(odd) + "\n")
    (logs / "quiet.log").write_text("loading model\nNCCL INFO Init COMPLETE\n")
    labels = [
        _item("mm", "logs/mm.log", framework="mmengine", last_line=10, step_time_s=0.4555, loss=1.5),
        _item("odd", "logs/odd.log", last_line=8, step_time_s=0.512, loss=2.008),
        _item("quiet", "logs/quiet.log", last_line=1, step_time_s=1.0, throughput=3.0, throughput_unit="samples/sec"),
    ]
    lines = [json.dumps(x) for x in labels]
    if broken:
        lines.append('{"id": "half-written", "file": ')
    (root / "labels.jsonl").write_text("\n".join(lines) + "\n")
    return root


def _fake(*answers: dict[str, Any]) -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter([AIMessage(json.dumps(a)) for a in answers]))


def test_judging_is_within_ten_percent_in_the_labels_unit() -> None:
    from schedmate.evals.harness.devset_metrics import Prediction

    item = ProgressItem.model_validate(_item("x", "x.log", step_time_s=0.5, loss=2.0, throughput=100.0, throughput_unit="samples/sec"))
    assert judge(item, Prediction(0.54, 2.1, 109.0, "samples/s")) == {"step_time": True, "loss": True, "throughput": True}
    assert judge(item, Prediction(0.56, None, 100.0, "tokens/s")) == {"step_time": False, "loss": None, "throughput": None}
    it_s = ProgressItem.model_validate(_item("y", "y.log", throughput=2.0, throughput_unit="it/s"))
    assert judge(it_s, Prediction(0.5)) == {"throughput": True}  # 1 / step time
    assert norm_unit("tokens/sec") == norm_unit("tok/s") == "tokens/s" and norm_unit("steps/s") == "it/s"


def test_devset_scoring_without_llm(classifier: LineClassifier, tmp_path: Path) -> None:
    folder = make_devset(tmp_path / "progress")
    summary, rows = run_devset_metrics(folder, classifier=classifier)
    assert summary["items"] == 3 and set(summary["systems"]) == {"regex", "regex-smoothed", "last-lines"}
    by_id = {r["id"]: r for r in rows}
    assert by_id["mm"]["systems"]["regex"]["judged"] == {"step_time": True, "loss": True}
    assert by_id["odd"]["systems"]["regex"]["judged"]["step_time"] is None  # no regex reads it: missed
    assert by_id["quiet"]["systems"]["regex"]["no_signal"]
    st = summary["systems"]["regex"]["all"]["step_time"]
    assert (st["labelled"], st["correct"], st["missed"]) == (3, 1, 2)
    assert by_id["mm"]["systems"]["regex"]["newest_line"] == 10  # the labelled last training line, not the val line
    assert summary["systems"]["regex"]["all"]["newest_line_is_last_line"] == 1.0
    line = write_devset_report(tmp_path / "out", summary, rows)
    assert "3 real logs" in line and "| regex | 3 | 33.3% (1/3) | 2 |" in (tmp_path / "out" / "devset_metrics.md").read_text()


def test_the_last_step_time_is_the_newest_lines_and_the_smoothed_one_is_kept_beside_it(
        classifier: LineClassifier, tmp_path: Path) -> None:
    root = tmp_path / "progress"
    (root / "logs").mkdir(parents=True)
    # steady 0.40 s/it, then the newest line is slower (an eval or checkpoint stall inside the window)
    times = [0.40] * 9 + [0.80]
    lines = [f"02/18 12:{k:02d}:00 - mmengine - INFO - Epoch(train)  [1][{50 * (k + 1):4d}/7330]  lr: 1.0e-02  "
             f"eta: 1:00:00  time: {t:.4f}  data_time: 0.0201  memory: 3500  loss: 1.5000" for k, t in enumerate(times)]
    (root / "logs" / "s.log").write_text("\n".join(lines) + "\n")
    (root / "labels.jsonl").write_text(json.dumps(_item("s", "logs/s.log", framework="mmengine", last_line=10,
                                                        step_time_s=0.80, loss=1.5)) + "\n")
    summary, rows = run_devset_metrics(root, classifier=classifier)
    got = rows[0]["systems"]
    assert got["regex"]["step_time_s"] == pytest.approx(0.80) and got["regex"]["judged"]["step_time"] is True
    assert got["regex-smoothed"]["step_time_s"] < 0.6 and got["regex-smoothed"]["judged"]["step_time"] is False


def test_devset_scoring_with_llm_shows_where_each_won(classifier: LineClassifier, tmp_path: Path) -> None:
    folder = make_devset(tmp_path / "progress")
    # answers in call order: per item the tracker's fallback (odd only), then the pure-LLM baseline
    fake = _fake(
        {"step_time_s": 0.4555, "loss": 1.5},  # mm, pure-llm: right
        {"step": 8, "step_time_s": 0.512, "loss": 2.008},  # odd, tracker fallback: validated
        {"step_time_s": 0.7723, "loss": 4.0619},  # odd, pure-llm: the prompt's example values, copied
        {"step_time_s": 3.0},  # quiet, pure-llm: invented
    )
    summary, rows = run_devset_metrics(folder, llm=fake, classifier=classifier, llm_method="text")
    by_id = {r["id"]: r["systems"] for r in rows}
    assert by_id["odd"]["tracker"]["judged"]["step_time"] is True and by_id["odd"]["regex"]["judged"]["step_time"] is None
    assert by_id["odd"]["pure-llm"]["judged"]["step_time"] is False  # taken as given ...
    assert by_id["odd"]["pure-llm+validation"]["judged"]["step_time"] is None  # ... refused once checked
    assert by_id["quiet"]["pure-llm"]["judged"]["step_time"] is False and by_id["quiet"]["pure-llm+validation"]["no_signal"]
    wins = summary["wins_step_time"]
    assert wins["tracker"]["regex"] == 1 and wins["tracker"]["pure-llm"] == 1 and wins["pure-llm"]["tracker"] == 0


def test_a_folder_being_filled_or_missing_is_reported_not_fatal(classifier: LineClassifier, tmp_path: Path) -> None:
    folder = make_devset(tmp_path / "progress", broken=True)
    items, errors = load_items(folder)
    assert [i.id for _, i in items] == ["mm", "odd", "quiet"] and errors
    empty, _ = run_devset_metrics(tmp_path / "nowhere", classifier=classifier)
    assert empty["items"] == 0 and "no such folder" in empty["load_errors"][0]


def test_cli_eval_metrics_reports_generated_and_real_side_by_side(tmp_path: Path) -> None:
    pytest.importorskip("FlagEmbedding", reason="needs the `embed` extra")
    from schedmate.cli import app
    from schedmate.synthetic.logs import generate_corpus

    corpus = tmp_path / "corpus"
    generate_corpus(corpus, 3, 5, min_lines=120, max_lines=300)
    folder = make_devset(tmp_path / "progress")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["eval", "metrics", "--data", str(corpus), "--out", str(out), "--devset", str(folder)])
    assert result.exit_code == 0, result.output
    assert "generated corpus vs real dev set" in result.output and "devset metrics: 3 real logs" in result.output
    assert json.loads((out / "devset_metrics.json").read_text())["items"] == 3 and (out / "report.json").is_file()
    bad = CliRunner().invoke(app, ["eval", "metrics", "--data", str(corpus), "--devset", str(tmp_path / "missing")])
    assert bad.exit_code == 2
