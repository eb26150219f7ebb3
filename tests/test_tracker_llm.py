"""The Metric Tracker's LLM fallback with the real embedded LLM (slow: real generation).

The packaged model is the *base* Gemma-3-270M: its tool-call answers are schema-valid but often
numerically wrong (the iteration number as the step time, ...). The contract tested is the one
that matters to a scheduler: on a format no regex knows, the report is either correct (every
accepted value equals the value printed in its own line) or explicitly refused, never wrong.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from schedmate.agents.tracker import MetricTracker, NoSignal, TrackerReport, regex_extract
from schedmate.embeddings.classifier import LineClassifier
from schedmate.embeddings.embedder import make_embedder
from schedmate.llm import LLMConfig, open_chat_model
from .local_llm import skip_module_without_local_llm
from schedmate.tracing import memory_tracing

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

skip_module_without_local_llm()

FORMATS = [
    "Trn | stp#{step:06d} | obj {loss:.3f} | wall {time:.3f} sec",
    "[trainer] it {step} -- cost={loss:.4f} -- took {ms:.1f} ms",
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
        assert "refused" in result.reason or result.llm_status in ("output_error", "rejected")
