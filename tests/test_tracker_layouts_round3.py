"""Tracker rules added after batch d of the dev set: each from a trainer's printing code or a
widely seen log shape, tested on lines written here (values invented, not dev-set items)."""

from __future__ import annotations

import pytest

from schedmate.agents.tracker import MetricTracker
from schedmate.agents.tracker.formats import clock_of_day, is_eval_line
from schedmate.agents.tracker.regex_extractors import regex_extract
from schedmate.agents.tracker.tracker import TrackerReport


class _NoClassifier:
    def classify_lines(self, lines):  # type: ignore[no-untyped-def]
        raise AssertionError("no LLM: the classifier is never consulted")


@pytest.fixture()
def tracker() -> MetricTracker:
    return MetricTracker(_NoClassifier(), None, max_lines=20)  # type: ignore[arg-type]


def _glog(sec: float, body: str, tid: int = 4242, src: str = "solver.cpp:218") -> str:
    h, rem = divmod(sec, 3600)
    m, s = divmod(rem, 60)
    return f"I0302 {int(h):02d}:{int(m):02d}:{s:09.6f} {tid} {src}] {body}"


def test_glog_time_of_day_is_a_stamp() -> None:
    assert clock_of_day("I0302 09:10:11.250000 4242 solver.cpp:218] Iteration 40, loss = 1.5") == pytest.approx(33011.25)


def test_caffe_step_time_from_two_glog_stamped_lines(tracker: MetricTracker) -> None:
    lines = [
        _glog(36000.0, "Iteration 500, loss = 3.1"),
        _glog(36000.1, "Iteration 500, lr = 0.01", src="sgd_solver.cpp:105"),
        _glog(36062.5, "Iteration 550, loss = 2.9"),
        _glog(36062.6, "Iteration 550, lr = 0.01", src="sgd_solver.cpp:105"),
    ]
    r = tracker.observe(lines)
    assert isinstance(r, TrackerReport) and r.step_time is not None
    assert r.step_time.last == pytest.approx(1.25) and r.step_time.rule == "timestamps"


def test_stamp_slope_uses_the_newest_run_and_the_newest_interval(tracker: MetricTracker) -> None:
    # pass 3 ended at batch 900, pass 4 restarts at 100: the older pass is never mixed in; and the
    # newest interval (slower) is the `last` reading, the run's slope the steady value
    lines = [_glog(1000.0, "Batch=900 samples=90000 AvgCost=2.1 CurrentCost=2.0", src="TrainerInternal.cpp:163")]
    lines += [_glog(1100.0 + 10.0 * k, f"Batch={100 * k} samples={10000 * k} AvgCost=2.0 CurrentCost=1.9",
                    src="TrainerInternal.cpp:163") for k in (1, 2, 3)]  # fmt: skip
    lines.append(_glog(1150.0, "Batch=400 samples=40000 AvgCost=2.0 CurrentCost=1.8", src="TrainerInternal.cpp:163"))
    r = tracker.observe(lines)
    assert isinstance(r, TrackerReport) and r.step_time is not None and r.loss is not None
    assert r.step_time.last == pytest.approx(0.2)  # 20 s / 100 batches
    assert r.step_time.value == pytest.approx(40.0 / 300)  # batch 100 at 1110 s to 400 at 1150 s
    assert r.loss.value == pytest.approx(1.8)  # CurrentCost, not the running AvgCost


def test_a_clock_since_the_start_gives_the_step_time_when_the_rate_rounds_to_zero(tracker: MetricTracker) -> None:
    lines = [
        f"| epoch 002:    {k * 50} / 9000 loss={9.5 - k / 10:.3f}, wps=4100, ups=0, bsz=2000, num_updates={k * 50}, "
        f"lr=1e-05, wall={300 + 60 * k}, train_wall={55 * k}"
        for k in range(1, 6)
    ]
    r = tracker.observe(lines)
    assert isinstance(r, TrackerReport) and r.step_time is not None
    assert r.step_time.last == pytest.approx(1.2) and r.step_time.rule == "cumulative_slope"


def test_opennmt_seconds_since_start(tracker: MetricTracker) -> None:
    one = tracker.observe(["[2020-01-02 03:04:05,678 INFO] Step 200/ 10000; acc:  12.10; ppl: 300.1; xent: 5.70; "
                           "lr: 0.00100;  900/1000 tok/s;    640 sec"])  # fmt: skip
    assert isinstance(one, TrackerReport) and one.step_time is not None and one.step_time.last == pytest.approx(3.2)
    two = tracker.observe([
        "[2020-01-02 03:04:05,678 INFO] Step 200/ 10000; acc:  12.10; ppl: 300.1; xent: 5.70; lr: 0.00100;  900/1000 tok/s;    640 sec",
        "[2020-01-02 03:07:25,678 INFO] Step 300/ 10000; acc:  13.00; ppl: 250.2; xent: 5.52; lr: 0.00100;  910/1010 tok/s;    840 sec",
    ])  # fmt: skip
    assert isinstance(two, TrackerReport) and two.step_time is not None and two.step_time.last == pytest.approx(2.0)


def test_marian_time_is_the_interval_since_the_last_display(tracker: MetricTracker) -> None:
    lines = [
        f"[2020-05-05 10:{k:02d}:00] Ep. 2 : Up. {500 * k} : Sen. {64000 * k} : Cost {80 - k:.2f} : Time 60.00s : 5000.00 words/s"
        for k in range(1, 6)
    ]
    r = tracker.observe(lines)
    assert isinstance(r, TrackerReport) and r.step_time is not None and r.loss is not None
    assert r.step_time.last == pytest.approx(0.12) and r.step_time.rule == "interval"
    assert r.loss.value == pytest.approx(75.0)


def test_darknet_bigdl_yolact_lines() -> None:
    dk = regex_extract(" 1200: 1.250000, 1.300000 avg loss, 0.001000 rate, 2.500000 seconds, 76800 images")
    assert dk is not None and dk.step == 1200 and dk.step_time_s == pytest.approx(2.5) and dk.loss == pytest.approx(1.25)
    bd = regex_extract("2019-01-01 00:00:00 INFO  DistriOptimizer$:408 - [Epoch 3 2048/50000][Iteration 900][Wall Clock "
                       "1234.5s] Trained 512 records in 0.8 seconds. Throughput is 640.0 records/second. Loss is 0.5. ")  # fmt: skip
    assert bd is not None and bd.step == 900 and bd.step_time_s == pytest.approx(0.8) and bd.loss == pytest.approx(0.5)
    yl = regex_extract("[  3]    4000 || B: 1.100 | C: 2.200 | M: 3.300 | T: 6.600 || ETA: 1 day, 2:03:04 || timer: 0.512")
    assert yl is not None and yl.step == 4000 and yl.step_time_s == pytest.approx(0.512) and yl.loss == pytest.approx(6.6)


def test_a_duration_in_parentheses_after_any_loss_key() -> None:
    ex = regex_extract("INFO:app: training iter 12, loss_a=0.5, loss=0.4, loss_b=0.3 (2.250000s)")
    assert ex is not None and ex.step == 12 and ex.step_time_s == pytest.approx(2.25) and ex.loss == pytest.approx(0.4)


def test_the_newest_of_several_bars_flattened_onto_one_line() -> None:
    ex = regex_extract("Epoch 1/3:   0%|          | 0/500 [00:00<?, ?it/s] Epoch 1/3:  20%|##        | 100/500 "
                       "[05:00<20:00,  3.00s/it, loss=0.9]")  # fmt: skip
    assert ex is not None and ex.step == 100 and ex.step_time_s == pytest.approx(3.0) and ex.loss == pytest.approx(0.9)


def test_paddleclas_end_valid_summary_is_evaluation() -> None:
    assert is_eval_line("INFO: END valid top1: 0.5 top5: 0.7 loss: 3.2  batch_cost: 0.05 s, ips: 900.0 images/sec.")
    assert not is_eval_line("INFO: END epoch:3   train top1: 0.5 loss: 2.1  batch_cost: 0.30 s, ips: 200.0 images/sec.")
