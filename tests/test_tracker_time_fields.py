"""Spec for the tracker's generic time reader (issue 23, item 3): any time field, whatever its
spelling, read into a step time that names the rule that produced it.

Lines are written from what frameworks print (TF Estimator/Slim hooks, torch_xla's MNIST
example, tqdm, fairseq-style interval reports, plain loops); none is copied from the dev set.
"""

from __future__ import annotations

import pytest

from schedmate.agents.tracker import MetricTracker, TrackerReport, regex_extract
from schedmate.agents.tracker.formats import parse_duration, read_fields


class _NoClassifier:
    """The regex path never consults the classifier without an LLM."""

    def classify_lines(self, lines):  # type: ignore[no-untyped-def]
        raise AssertionError("classifier called")


@pytest.fixture()
def tracker() -> MetricTracker:
    return MetricTracker(_NoClassifier(), None)  # type: ignore[arg-type]


# -- durations, in any spelling ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1m 2s 3ms", 62.003), ("0:00:01.23", 1.23), ("1:02:03", 3723.0), ("1.5h", 5400.0), ("2h 3m", 7380.0),
     ("1h2m3s", 3723.0), ("250ms", 0.25), ("45.1 s", 45.1), ("01:02.5", 62.5)],
)  # fmt: skip
def test_a_duration_is_read_whatever_its_spelling(text: str, seconds: float) -> None:
    parsed = parse_duration(text)
    assert parsed is not None and parsed[0] == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["2s 1m", "3 apples", "12:61:00", ""])
def test_what_is_not_one_duration_is_refused(text: str) -> None:
    assert parse_duration(text) is None


@pytest.mark.parametrize(
    ("line", "step_time", "rule"),
    [
        ("step: 120  loss: 2.31  iter_time: 412ms", 0.412, "named_per_step"),
        ("step=120 loss=2.31 batch_time=0.41 data_time=0.02", 0.41, "named_per_step"),
        ("iter: 64; loss: 2.95; btime(ms): 192; eta: 0:00:08;", 0.192, "named_per_step"),
        ("step 120 | loss 2.31 | step_duration: 0.5s", 0.5, "named_per_step"),
        ("step 120 | loss 2.31 | time: 1.25 min", 75.0, "bare_time"),
        ("Epoch 3 | step 1500 | loss 2.113 | time: 0.53s", 0.53, "bare_time"),
        ("step 120 | loss 2.31 | speed: 0.71 s/itr", 0.71, "per_step_unit"),
        ("Iteration 200, loss = 1.5, 3.90 it/s", 1 / 3.9, "inverse_rate"),
    ],
)  # fmt: skip
def test_a_key_value_time_field_names_its_rule(line: str, step_time: float, rule: str) -> None:
    ex = regex_extract(line)
    assert ex is not None and ex.step_time_s == pytest.approx(step_time, rel=1e-3)
    assert ex.time_rule == rule


# -- interval semantics --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "step_time"),
    [
        ("| epoch 002 | step 3000 | loss 4.21 | time for the last 100 updates: 1m 2s 3ms", 0.62003),
        ("step 3000, loss 4.21, 12.3s per 100 iterations", 0.123),
        ("Iter 300: 100 iters took 51.2 s, loss 2.2", 0.512),
        ("step 3000 loss 4.21 (28.99s/100 iters)", 0.2899),
        ("step 3000, loss 4.21, time per 50 iterations: 20.0", 0.4),
        ("step 3000 loss 4.21, 50 steps in 0:00:20.5", 0.41),
    ],
)  # fmt: skip
def test_an_interval_time_is_divided_by_its_stated_steps(line: str, step_time: float) -> None:
    ex = regex_extract(line)
    assert ex is not None and ex.step_time_s == pytest.approx(step_time, rel=1e-3)
    assert ex.time_rule == "interval"


def test_tf_estimator_step_hook_interval_is_not_a_step_time(tracker: MetricTracker) -> None:
    """`loss = L, step = N (124.394 sec)` covers the hook's 100 steps; the rate hook says 0.8 steps/s."""
    lines = []
    for k in range(1, 8):
        lines.append(f"INFO:tensorflow:global_step/sec: {0.80 + 0.002 * (k % 3):.6f}")
        lines.append(f"INFO:tensorflow:loss = {5.0 - k / 10:.6f}, step = {100 * k} ({124.3 + k % 2:.3f} sec)")
    r = tracker.observe(lines)
    assert isinstance(r, TrackerReport) and r.step_time is not None
    assert r.step_time.value == pytest.approx(1.25, rel=0.03)


def test_a_wall_time_per_logging_interval_is_divided_by_the_steps_between_lines(tracker: MetricTracker) -> None:
    """A trainer logging every 50 updates with the interval's wall time after the loss."""
    lines = [f"[train] step {50 * k:5d} | loss {3.0 - k / 100:.4f} (0m 21s {500 + k}ms)" for k in range(1, 12)]
    r = tracker.observe(lines)
    assert isinstance(r, TrackerReport) and r.step_time is not None
    assert r.step_time.last == pytest.approx(21.511 / 50, rel=1e-3)
    assert r.step_time.rule == "interval"


def test_a_duration_in_parentheses_after_the_loss_is_the_step_time(tracker: MetricTracker) -> None:
    lines = [f"step {k:4d}/1000 loss {2.5 - k / 1000:.4f} (0.52s)" for k in range(1, 15)]
    r = tracker.observe(lines)
    assert isinstance(r, TrackerReport) and r.step_time_s == pytest.approx(0.52)
    assert r.step_time is not None and r.step_time.rule == "unnamed_duration"


# -- echoes, wraps, timestamps -------------------------------------------------------------------


def test_lines_echoed_by_two_handlers_count_once(tracker: MetricTracker) -> None:
    """TF2 Object Detection logs every step through absl and through the tensorflow logger."""
    lines = []
    for k in range(1, 9):
        body = f"Step {100 * k} per-step time {0.80 + 0.01 * (k % 2):.3f}s loss={2.5 - k / 20:.3f}"
        lines.append(f"I0612 10:{k:02d}:01.123456 140231 model_lib_v2.py:705] {body}")
        lines.append(f"INFO:tensorflow:{body}")
    r = tracker.observe(lines)
    assert isinstance(r, TrackerReport) and r.step_time is not None
    assert r.stats.duplicates == 8
    assert r.step_time.last == pytest.approx(0.80)


def test_two_steps_with_equal_values_are_not_echoes(tracker: MetricTracker) -> None:
    lines = [f"iter {10 * k}: loss 2.3000, time 500.00ms" for k in range(1, 9)]
    r = tracker.observe(lines)
    assert isinstance(r, TrackerReport) and r.stats.duplicates == 0


def test_a_progress_bar_cut_at_the_terminal_width_is_still_read(tracker: MetricTracker) -> None:
    bar = "█" * 20 + " " * 100
    lines = [f"  {k}%|{bar}| {k}/203 [00:{10 + k:02d}<16:46,  {5.0 + k / 100:.2f}s/it" for k in range(2, 9)]
    r = tracker.observe(lines)
    assert isinstance(r, TrackerReport) and r.step_time is not None
    assert r.step_time.last == pytest.approx(5.08) and r.step_time.rule == "per_step_unit"


def test_rates_and_times_per_step_are_never_inverted() -> None:
    fast = regex_extract(" 40%|████      | 400/1000 [01:42<02:33,  3.90it/s]")
    slow = regex_extract(" 40%|████      | 400/1000 [27:42<41:33,  3.90s/it]")
    assert fast is not None and fast.step_time_s == pytest.approx(1 / 3.9) and fast.time_rule == "inverse_rate"
    assert slow is not None and slow.step_time_s == pytest.approx(3.9) and slow.time_rule == "per_step_unit"


def test_evaluation_lines_are_not_training_step_times(tracker: MetricTracker) -> None:
    lines = [f"step: {k}  loss: 2.{k}  iter_time: 400ms" for k in range(1, 10)]
    lines += ["Evaluating: 100%|██████████| 50/50 [00:05<00:00,  9.80it/s]", "[Eval] step: 9  loss: 1.9  iter_time: 90ms"]
    r = tracker.observe(lines)
    assert isinstance(r, TrackerReport) and r.step_time is not None and r.step_time.last == pytest.approx(0.4)


def test_step_time_from_one_ranks_stamps_when_devices_interleave(tracker: MetricTracker) -> None:
    """torch_xla's MNIST example: every device prints each step with a time of day, out of order."""
    lines = []
    order = [[2, 0, 3, 1], [0, 3, 1, 2], [3, 1, 0, 2]]
    for k, step in enumerate(range(20, 420, 20)):
        for d in order[k % 3]:
            t = 7 * 3600 + 29 * 60 + 4 * k + d  # 4 s per 20 steps; device d prints d seconds late
            clock = f"{t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}"
            lines.append(f"| Training Device=xla:0/{d} Epoch=1 Step={step} Loss=0.0{k % 9 + 1} Rate=1766.60 "
                         f"GlobalRate=272.96 Time={clock}")  # fmt: skip
    r = tracker.observe(lines)
    assert isinstance(r, TrackerReport) and r.step_time is not None
    assert r.step_time.value == pytest.approx(0.2, rel=0.02)
    assert r.step_time.rule == "timestamps" and r.step_time.derived


def test_each_estimate_says_how_direct_it_is(tracker: MetricTracker) -> None:
    named = tracker.observe([f"step: {k}  loss: 2.{k}  iter_time: 400ms" for k in range(1, 10)])
    stamped = tracker.observe([f"2024-05-01 12:{k:02d}:00 step: {10 * k} loss: 2.{k} tps: 1200" for k in range(1, 10)])
    assert isinstance(named, TrackerReport) and isinstance(stamped, TrackerReport)
    assert named.step_time is not None and stamped.step_time is not None
    assert named.step_time.rule == "named_per_step" and stamped.step_time.rule == "timestamps"
    assert named.step_time.confidence is not None and stamped.step_time.confidence is not None
    assert named.step_time.confidence > stamped.step_time.confidence


def test_the_interval_key_vocabulary() -> None:
    r = read_fields("step=400 loss=2.0 time_since_last_log=45.1s")
    assert r.step_time_s is None and r.interval_s == pytest.approx(45.1)
