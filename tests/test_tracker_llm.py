"""The Metric Tracker's LLM fallback with the real embedded LLM (slow: real generation).

The packaged model is the *base* Gemma-3-270M: its tool-call answers are schema-valid but often
numerically wrong (the iteration number as the step time, ...). The contract tested is the one
that matters to a scheduler: on a format no regex knows, the report is either correct (every
accepted value equals the value printed in its own line) or explicitly refused, never wrong;
and on a line shape the model does handle (`HANDLED`), the fallback must deliver a validated
step time (converted from ms by code). The pure-LLM baseline (tail alone) is run too: what
survives its validation must equal a training line's printed value.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from schedmate.agents.tracker import MetricTracker, NoSignal, TrackerReport, regex_extract
from schedmate.embeddings.classifier import LineClassifier
from schedmate.embeddings.embedder import make_embedder
from schedmate.llm import LLMConfig, open_chat_model
from schedmate.tracing import memory_tracing

from .local_llm import skip_module_without_local_llm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

skip_module_without_local_llm()

FORMATS = [
    "Trn | stp#{step:06d} | obj {loss:.3f} | wall {time:.3f} sec",
    "[trainer] it {step} -- train_cost={loss:.4f} -- took {ms:.1f} ms",
]


def _log(fmt: str, n: int = 12) -> tuple[list[str], dict[str, tuple[int, float, float]]]:
    lines = ["NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>", "model config: hidden_size 768, layers 12"]
    truth: dict[str, tuple[int, float, float]] = {}
    for step in range(100, 100 + n):
        loss, seconds = round(2.5 - step / 1000, 3), round(0.4 + (step % 3) / 100, 3)
        line = fmt.format(step=step, loss=loss, time=seconds, ms=seconds * 1000)
        truth[line] = (step, loss, seconds)
        lines.append(line)
    return lines, truth


@pytest.fixture(scope="module")
def classifier() -> LineClassifier:
    pytest.importorskip("FlagEmbedding", reason="needs the `embed` extra")
    return LineClassifier(make_embedder())


@pytest.fixture(scope="module")
def model() -> Iterator[object]:
    provider, _ = memory_tracing()
    with open_chat_model(LLMConfig(max_tokens=128, timeout_s=180), tracer=provider.get_tracer("t")) as chat:
        yield chat


@pytest.mark.parametrize("fmt", FORMATS)
def test_real_llm_on_unknown_format_is_correct_or_refused(classifier: LineClassifier, model, fmt: str) -> None:  # type: ignore[no-untyped-def]
    lines, truth = _log(fmt)
    assert all(regex_extract(line) is None or not regex_extract(line).has_metric for line in truth)  # type: ignore[union-attr]
    tracker = MetricTracker(classifier, model, max_lines=5, max_llm_calls=2)
    result = tracker.observe(lines)
    assert result.stats.llm_calls >= 1
    print(f"{fmt!r}: {type(result).__name__} llm_status={result.llm_status} notes={result.notes}")
    if isinstance(result, TrackerReport):
        assert result.method == "llm" and result.llm_status == "ok"
        for used in result.lines:
            step, loss, seconds = truth[used.line.text]
            ex = used.extraction
            assert ex.step is None or ex.step == step
            assert ex.loss is None or ex.loss == pytest.approx(loss)
            assert ex.step_time_s is None or ex.step_time_s == pytest.approx(seconds)
        if result.step_time is not None:
            values = [truth[s.text][2] for s in result.step_time.lines]
            assert min(values) - 1e-9 <= result.step_time.value <= max(values) + 1e-9
    else:
        assert isinstance(result, NoSignal)
        assert "refused" in result.reason or result.llm_status in ("invalid_output", "rejected")


# -- a line the embedded model can handle: the fallback must give a usable, validated answer -----

HANDLED = "[trainer] it {step} -- train_cost={loss:.4f} -- took {ms:.1f} ms"


def test_real_llm_fallback_reads_a_line_it_can_handle(model) -> None:  # type: ignore[no-untyped-def]
    """Not merely "correct or refused": on this shape the fallback must deliver the step time
    (converted from ms by code, not by the model) and the loss, each equal to the line's."""
    from schedmate.agents.tracker.llm_extractor import extract_with_llm

    line = HANDLED.format(step=57, loss=1.9312, ms=830.5)
    assert regex_extract(line) is None or not regex_extract(line).has_metric  # type: ignore[union-attr]
    answer, validation = extract_with_llm(model, line)
    print(f"answer={answer.model_dump()} rejections={validation.rejections}")
    assert validation.accepted and validation.extraction is not None
    assert validation.extraction.step_time_s == pytest.approx(0.8305)
    assert validation.extraction.loss is None or validation.extraction.loss == pytest.approx(1.9312)
    assert validation.field_map is not None and validation.field_map.has_timing  # reusable for the shape


def test_real_llm_tracker_estimate_on_the_handled_format(classifier: LineClassifier, model) -> None:  # type: ignore[no-untyped-def]
    lines, truth = _log(HANDLED)
    report = MetricTracker(classifier, model, max_lines=5, max_llm_calls=2).observe(lines)
    print(f"{type(report).__name__} notes={report.notes}")
    assert isinstance(report, TrackerReport) and report.method == "llm" and report.step_time is not None
    values = [truth[s.text][2] for s in report.step_time.lines]
    assert report.step_time_s == pytest.approx(sum(values) / len(values), rel=1e-6)
    assert report.stats.llm_template_hits >= 1  # later lines of the shape reuse the validated map


def test_real_llm_pure_baseline_is_checked_against_the_tail(model) -> None:  # type: ignore[no-untyped-def]
    """The paper's baseline (tail alone) with the 270M model: its raw answer is kept as given;
    whatever survives validation equals a value printed on a training line of the tail."""
    from schedmate.agents.tracker.llm_baseline import llm_tail_metrics

    lines, truth = _log(HANDLED, n=8)
    reading = llm_tail_metrics(model, lines + ["[eval] train_cost=2.9000 -- took 12.0 ms"])
    print(f"raw={reading.raw} validated={reading.validated} line={reading.line} rejections={reading.rejections}")
    assert reading.error is None and reading.raw is not None
    if reading.validated is not None:
        step, loss, seconds = truth[reading.line]  # type: ignore[index]
        assert reading.validated.step_time_s in (None, pytest.approx(seconds))
        assert reading.validated.loss in (None, pytest.approx(loss))
    else:
        assert reading.rejections  # refused, with the reasons
