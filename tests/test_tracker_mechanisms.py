"""Spec for the Metric Tracker's general mechanisms added for real logs (issue 11, item 6), one
group per kind of miss seen on real logs; every line here is written for the test (none is a
development-set excerpt), in the layouts widely used trainers print.

The tracker runs regex-only (no LLM), so the line classifier is never consulted: a stub that
fails if called keeps these tests fast and proves it.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from schedmate.agents.tracker import MetricTracker, TrackerReport, is_eval_line, regex_extract, robust_mean
from schedmate.agents.tracker.robust import cumulative_slope


class _NoClassifier:
    def classify_lines(self, lines: Sequence[str]) -> list[object]:
        raise AssertionError("the classifier is consulted only when an LLM could read a line")


def _observe(lines: list[str]) -> TrackerReport:
    report = MetricTracker(_NoClassifier(), None).observe(lines)  # type: ignore[arg-type]
    assert isinstance(report, TrackerReport), getattr(report, "reason", "")
    return report


def _check(line: str, **expected: object) -> None:
    ex = regex_extract(line)
    assert ex is not None, line
    for key, value in expected.items():
        got = getattr(ex, key)
        assert (got == pytest.approx(value)) if isinstance(value, float) else got == value, (key, got)


# -- unknown layouts: keys without a separator, units after an aside, keys naming the unit -------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # comma-separated `Key words value` segments (MLX-style and many plain loops)
        ("Iter 12: Train loss 2.500, Learning Rate 1.000e-05, It/sec 2.500, Tokens/sec 300.0, Peak mem 3.2 GB",
         {"step": 12, "step_time_s": 0.4, "loss": 2.5, "throughput": 300.0, "throughput_unit": "tokens/s"}),
        ("Epoch 3; Batch Time 0.25; Train Loss 1.75; Step 40", {"step": 40, "step_time_s": 0.25, "loss": 1.75}),
        # a breakdown in parentheses between the value and its unit; `itr` for iteration
        ("01-02 10:00:00 Epoch 1/5 itr 40/900: lr: 0.001 speed: 0.50(0.45s r0.05)s/itr 0.12h/epoch loss_a: 0.3",
         {"step": 40, "step_time_s": 0.5}),
        # `time/batch` (a duration per batch, Lua/Torch char-rnn style)
        ("120/5000 (epoch 1.200), train_loss = 1.50000000, grad/param norm = 1.0e-01, time/batch = 0.2500s",
         {"step": 120, "step_time_s": 0.25, "loss": 1.5, "total": 5000}),
        # the key names the unit (ms-swift style dicts, Megatron-style `(ms)`)
        ("{'loss': 1.0, 'train_speed(iter/s)': 0.5, 'epoch': 0.2, 'global_step/max_steps': '20/100'}",
         {"step_time_s": 2.0, "loss": 1.0}),
        ("iteration 30 | step_time (ms): 250.0 | loss: 2.0", {"step_time_s": 0.25}),
        # Lightning's rich progress bar
        ("Epoch 1/4  ━━━━━━━━━━━━━━━━━━━━━━ 120/500 0:00:10 • 0:00:31 12.00it/s v_num: 3 train_loss: 0.400",
         {"step": 120, "step_time_s": 1 / 12.0, "loss": 0.4}),
    ],
)
def test_unknown_layouts_are_read(line: str, expected: dict[str, object]) -> None:
    _check(line, **expected)


# -- the rate's direction, per-N-steps times, samples/s with a batch size ------------------------


@pytest.mark.parametrize(
    ("line", "step_time"),
    [
        ("Iteration 200 (2.00 iter/s, 51.0s/100 iters), loss = 1.5", 0.5),  # both say 0.5 s
        ("step 300, loss 2.3, time for 50 steps: 20.0s", 0.4),
        ("step 300 | loss 2.1 | 100 steps took 12.5 s", 0.125),
        ("step: 300, loss: 2.3, time_per_100_steps: 40.0", 0.4),
        ("step: 300, loss: 2.3, global_batch_size: 256, samples/s: 512.0", 0.5),
        ("step: 300, loss: 2.3, s/it: 1.5", 1.5),
        ("step: 300, loss: 2.3, it/s: 1.5", 1 / 1.5),
    ],
)
def test_rates_and_interval_times_become_step_times(line: str, step_time: float) -> None:
    _check(line, step_time_s=step_time)


def test_a_per_device_batch_is_not_divided_by_a_global_rate() -> None:
    ex = regex_extract("step: 300, loss: 2.3, per_device_batch_size: 16, samples/s: 512.0")
    assert ex is not None and ex.step_time_s is None and ex.throughput == pytest.approx(512.0)


# -- cumulative clocks, ETA and elapsed are not step times ---------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "step 100 loss 2.3 elapsed 345.2s",
        "step 100 loss 2.3 total time 3400s",
        "step: 100, loss: 2.3, wall_time: 1234.5",
        "step: 100, loss: 2.3, time_elapsed: 1234.5",
        "[Epoch 1/10][Batch 100/938] [D loss: 0.5] [G loss: 0.7] time: 0:01:23.123",
        "Step 100/5000; acc: 30.1; xent: 3.10; lr: 0.0003; 4000/210 tok/s;   7006 sec",
    ],
)
def test_cumulative_times_are_not_step_times(line: str) -> None:
    ex = regex_extract(line)
    assert ex is None or ex.step_time_s is None, ex


def test_a_named_per_step_time_beats_a_cumulative_clock_on_the_same_line() -> None:
    _check("step:100/1000 train_loss:2.0 train_time:4500ms step_avg:45.00ms", step_time_s=0.045, loss=2.0)


def test_a_clock_growing_with_the_step_counter_gives_its_slope() -> None:
    lines = [f"step {s} | loss {3 - s / 1000:.3f} | time {0.2 * s + 3.0:.1f}s" for s in range(100, 1100, 50)]
    report = _observe(lines)
    assert report.step_time is not None and report.step_time.format.endswith("+cumulative")
    assert report.step_time_s == pytest.approx(0.2, rel=0.01)


@pytest.mark.parametrize(
    ("points", "expected"),
    [
        ([(300, 61.0), (200, 41.0), (100, 21.0)], (0.2, 3)),  # a clock from ~1 s at step 0
        ([(300, 0.43), (200, 0.42), (100, 0.41)], None),  # drifts up: offset ~ the value itself
        ([(300, 0.40), (200, 0.42), (100, 0.41)], None),  # noisy, not monotone
        ([(300, 61.0), (200, 41.0)], None),  # too few points
        ([(30, 61.0), (20, 41.0), (40, 21.0), (10, 1.0)], None),  # the counter restarted after two
    ],
)
def test_cumulative_slope(points: list[tuple[int, float]], expected: tuple[float, int] | None) -> None:
    got = cumulative_slope(points)
    assert got == expected if expected is None else (got is not None and got[0] == pytest.approx(expected[0]) and got[1] == expected[1])


def test_a_step_time_that_drifts_up_is_not_taken_for_a_clock() -> None:
    lines = [f"step {s} | loss 2.0 | time {0.40 + 0.0001 * s:.4f}s" for s in range(100, 1100, 50)]
    report = _observe(lines)
    assert report.step_time is not None and not report.step_time.format.endswith("+cumulative")
    assert 0.45 < report.step_time_s < 0.51


# -- counters: bare fractions, epoch restarts, ranks --------------------------------------------


@pytest.mark.parametrize(
    ("line", "step", "total"),
    [
        ("epoch 2 | 150 / 900 loss=1.25, wps=1200, bsz=16", 150, 900),
        ("Epoch  2, 1500/3000; acc: 50.0; xent: 2.00; 2000 src tok/s; 2100 tgt tok/s; 300 s elapsed", 1500, 3000),
        ("<train> 1/3 4000/9000 loss:0.5", 4000, 9000),
    ],
)
def test_a_bare_fraction_is_the_step_counter(line: str, step: int, total: int) -> None:
    _check(line, step=step, total=total)


def test_source_and_target_rates_read_the_source_side() -> None:
    _check("Epoch  2, 1500/3000; acc: 50.0; xent: 2.00; 2000 src tok/s; 2100 tgt tok/s; 300 s elapsed",
           throughput=2000.0, throughput_unit="tokens/s", loss=2.0)  # fmt: skip
    _check("Step 100/5000; acc: 30.1; xent: 3.10; lr: 0.0003; 4000/210 tok/s;   7006 sec", throughput=4000.0, loss=3.1)


def test_a_date_is_not_a_counter() -> None:
    assert regex_extract("03/14 09:30:00 loss: 2.3") is None


def test_per_epoch_counters_that_restart_are_not_duplicates() -> None:
    """Each epoch's first logged step is slow (loader start-up); both epochs' lines are used, so
    the two slow ones are outliers, not a third of the window."""
    lines = []
    for epoch in (1, 2):
        for k, it in enumerate((10, 20, 30, 40)):
            lines.append(f"Epoch [{epoch}][{it}/45]\tlr: 1.0e-02, eta: 0:05:00, time: {0.6 if k == 0 else 0.3:.3f}, loss: 0.5")
        lines.append(f"Saving checkpoint at {epoch} epochs")
    report = _observe(lines)
    assert report.stats.duplicates == 0
    assert report.step_time is not None and len(report.step_time.lines) + len(report.step_time.dropped) == 8
    assert report.step_time_s == pytest.approx(0.3)


def test_ranks_printing_the_same_step_are_still_duplicates() -> None:
    lines = [f"step {s} loss {2 + r / 10:.2f} step_time 0.50s" for s in range(1, 7) for r in (0, 1)]
    report = _observe(lines)
    assert report.stats.duplicates == 6
    assert report.step_time is not None and report.step_time.n == 6


# -- aggregation: few lines, the loss ------------------------------------------------------------


def test_too_few_values_to_filter_are_summarised_by_their_median() -> None:
    assert robust_mean([0.30, 0.22, 0.21]).mean == pytest.approx(0.22)
    assert robust_mean([0.30, 0.25, 0.24, 0.28]).mean == pytest.approx((0.30 + 0.25 + 0.24 + 0.28) / 4)  # enough: the mean


def test_the_loss_is_the_newest_value_even_a_spike() -> None:
    lines = [f"step {s} loss {2.0 - s / 100:.3f} step_time 0.50s" for s in range(1, 20)] + ["step 20 loss 9.500 step_time 0.50s"]
    report = _observe(lines)
    assert report.loss is not None and report.loss.value == pytest.approx(9.5)


def test_an_estimator_evaluation_summary_is_not_training() -> None:
    assert is_eval_line("INFO:tensorflow:Saving dict for global step 500: global_step = 500, loss = 1.0")
