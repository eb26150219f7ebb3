"""Tracker rules added after batch e of the dev set (its blind score came first: README, "Agents on
real artefacts"). Each comes from a trainer's printing code, not from one item, and is tested on
lines written here (values invented, not dev-set items)."""

from __future__ import annotations

import pytest

from schedmate.agents.tracker.formats import fields, read_fields


def test_openclip_data_and_batch_times_in_parentheses_are_named_times() -> None:
    # open_clip's train loop: `Data (t): {data_time:.3f} Batch (t): {batch_time:.3f}, {samples_per_second:#g}/s`
    line = ("2024-01-02,03:04:05 | INFO | Train Epoch: 2 [ 51200/400000 (13%)] Loss: 1.2345 (1.3000) "
            "Data (t): 0.021 Batch (t): 0.333, 1537.5/s LR: 0.000500 Logit Scale: 42.000")
    keys = {f.key: f.value for f in fields(line)}
    assert keys["data_time"] == 0.021 and keys["batch_time"] == 0.333
    r = read_fields(line)
    assert r.step_time_s == pytest.approx(0.333) and r.loss == pytest.approx(1.2345)


def test_a_bare_batch_with_a_running_average_is_the_batchs_time_not_its_size() -> None:
    # hszhao/semseg and PSPNet-style loops: `Data {:.3f} ({:.3f}) Batch {:.3f} ({:.3f}) Remain {} Loss {:.4f}`
    line = "Epoch: [3/50][140/900] Data 0.002 (0.031) Batch 0.811 (0.790) Remain 10:11:12 Loss 0.9876 Accuracy 0.7000."
    r = read_fields(line)
    assert r.step_time_s == pytest.approx(0.811) and r.loss == pytest.approx(0.9876)
    assert (r.step, r.total) == (140, 900)  # the iteration's counter, not the epoch's [3/50]
    assert read_fields("Batch 64 (128) loss 0.5").step_time_s is None  # a whole number is a batch size
    assert read_fields("Batch 0.5 loss 0.5").step_time_s is None  # no running average: not this layout


def test_an_epoch_then_iteration_bracket_pair_counts_iterations() -> None:
    r = read_fields("Epoch: [7/90][ 20/625] Time 0.412 (0.420) Loss 2.5000 (2.6000)")
    assert (r.step, r.total) == (20, 625)


def test_a_row_led_by_its_step_with_one_unnamed_duration_between_pipes() -> None:
    # llama2.c / nanoGPT forks: f"{iter_num} | loss {loss:.4f} | lr {lr:e} | {dt * 1000:.2f}ms | mfu {mfu * 100:.2f}%"
    r = read_fields("1200 | loss 3.2100 | lr 5.000000e-04 | 412.50ms | mfu 31.20%")
    assert r.step == 1200 and r.step_time_s == pytest.approx(0.4125) and r.loss == pytest.approx(3.21)
    two = read_fields("1200 | loss 3.2100 | 412.50ms | 9.10ms |")  # two unnamed durations: neither is taken
    assert two.step_time_s is None
