"""Spec for the Metric Tracker on real-world progress formats beyond the first five (issue 11):
one small hand-written log per format, shaped like what each framework prints (noise lines,
warm-up, and evaluation lines *after* the last training line), read by `MetricTracker.observe`.

Each log's truth is the value its last training line states; the tracker's estimate (a robust
mean of the newest lines of one format) must be within 5% of it, and evaluation lines (with
their own, very different timings) must never be used. Plus: line-level recognisers, the
training/evaluation test, and the LLM answer checks (copied prompt values refused) with a fake
chat model -- those test our validation code, not a model.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from schedmate.agents.tracker import MetricTracker, NoSignal, ProgressMetrics, TrackerReport, regex_extract, validate
from schedmate.agents.tracker.formats import fields, is_eval_line
from schedmate.agents.tracker.llm_baseline import TAIL_FEW_SHOT, llm_tail_metrics, read_tail, validate_tail
from schedmate.agents.tracker.llm_extractor import EXAMPLE_VALUES, FEW_SHOT
from schedmate.embeddings.classifier import LineClassifier
from schedmate.embeddings.embedder import make_embedder

NOISE = [
    "/usr/lib/python3/site-packages/torch/nn/modules/conv.py:456: UserWarning: Plan failed with a cudnnException",
    "gpu07:2211:2290 [0] NCCL INFO comm 0x5591 rank 0 nranks 8 cudaDev 0 busId 1b000 - Init COMPLETE",
]


@pytest.fixture(scope="module")
def classifier() -> LineClassifier:
    pytest.importorskip("FlagEmbedding", reason="needs the `embed` extra (FlagEmbedding, torch)")
    return LineClassifier(make_embedder())


def _jit(i: int) -> float:
    """A deterministic ±1% wobble, as real timers have."""
    return 1 + 0.01 * ((i * 7) % 3 - 1)


# -- one log per format: (lines, expected step time, expected loss or None) ---------------------


def mmengine_log() -> tuple[list[str], float, float | None]:
    lines = ["02/18 11:58:01 - mmengine - INFO - Checkpoints will be saved to /work/dirs/retinanet."]
    for k, it in enumerate(range(50, 801, 50)):
        st = 0.4555 * _jit(k) * (3 if it == 50 else 1)
        lines.append(
            f"02/18 12:{k:02d}:00 - mmengine - INFO - Epoch(train)  [1][{it:4d}/7330]  base_lr: 1.0000e-02 lr: 1.0000e-02  "
            f"eta: 1 day, 4:05:05  time: {st:.4f}  data_time: 0.0201  memory: 3500  grad_norm: 5.1022  loss: {1.9 - it / 1000:.4f}  "
            f"loss_cls: 0.5512  loss_bbox: 0.3871"
        )
        if k % 4 == 0:
            lines.append(NOISE[k % 2])
    lines += [
        "02/18 12:20:00 - mmengine - INFO - Saving checkpoint at 1 epochs",
        *(f"02/18 12:21:{j:02d} - mmengine - INFO - Epoch(val)  [1][{j * 50:3d}/625]    eta: 0:00:30  time: 0.0512  "
          f"data_time: 0.0021  memory: 800" for j in range(1, 6)),
        "02/18 12:22:00 - mmengine - INFO - Epoch(val) [1][625/625]    coco/bbox_mAP: 0.3610  coco/bbox_mAP_50: 0.5530",
    ]  # fmt: skip
    return lines, 0.4555 * _jit(15), 1.9 - 800 / 1000


def detectron2_log() -> tuple[list[str], float, float | None]:
    lines = ["[03/05 11:59:58 d2.engine.train_loop]: Starting training from iteration 0"]
    for k, it in enumerate(range(19, 400, 20)):
        lines.append(
            f"[03/05 12:{k:02d}:02 d2.utils.events]:  eta: 0:10:02  iter: {it}  total_loss: {2.1 - it / 1000:.3f}  "
            f"loss_cls: 0.7012  loss_box_reg: 0.1055  loss_rpn_cls: 0.0613  time: {0.4012 * _jit(k):.4f}  "
            f"last_time: 0.3988  data_time: 0.0123  last_data_time: 0.0101  lr: 0.00039962  max_mem: 2500M"
        )
    lines += [
        "[03/05 12:30:00 d2.data.datasets.coco]: Loaded 5000 images in COCO format from instances_val2017.json",
        "[03/05 12:30:41 d2.evaluation.evaluator]: Inference done 11/5000. Dataloading: 0.0010 s/iter. "
        "Inference: 0.0500 s/iter. Eval: 0.0001 s/iter. Total: 0.0515 s/iter. ETA=0:04:15",
        "[03/05 12:31:41 d2.evaluation.evaluator]: Inference done 1211/5000. Dataloading: 0.0011 s/iter. "
        "Inference: 0.0490 s/iter. Eval: 0.0001 s/iter. Total: 0.0505 s/iter. ETA=0:03:11",
    ]
    return lines, 0.4012 * _jit(19), 2.1 - 399 / 1000


def fairseq_simple_log() -> tuple[list[str], float, float | None]:
    lines = ["2021-03-01 11:59:00 | INFO | fairseq.trainer | begin training epoch 1"]
    for k, upd in enumerate(range(100, 2001, 100)):
        lines.append(
            f"2021-03-01 12:{k:02d}:00 | INFO | train_inner | epoch 001:    {upd} / 3000 loss={9.8 - upd / 1000:.3f}, "
            f"nll_loss=9.7, ppl=890.1, wps=12345.6, ups={3.12 * _jit(k):.2f}, wpb=4000, bsz=128, num_updates={upd}, "
            f"lr=0.0001, gnorm=1.2, loss_scale=128, train_wall=30, gb_free=10.1, wall={35 * (k + 1)}"
        )
    lines += [
        "2021-03-01 12:25:00 | INFO | fairseq_cli.train | begin validation on \"valid\" subset",
        "2021-03-01 12:25:30 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 8.9 | nll_loss 8.8 | ppl 450 | "
        "wps 45678 | wpb 4000 | bsz 128 | num_updates 2000",
    ]
    return lines, 1 / (round(3.12 * _jit(19), 2)), 9.8 - 2.0


def fairseq_json_log() -> tuple[list[str], float, float | None]:
    lines = []
    for k, upd in enumerate(range(100, 1201, 100)):
        row = {"epoch": 1, "update": round(upd / 3000, 3), "loss": f"{7.5 - upd / 1000:.3f}", "nll_loss": "7.1",
               "ppl": "137.2", "wps": "20451", "ups": f"{0.85 * _jit(k):.2f}", "wpb": "24000", "bsz": "800",
               "num_updates": str(upd), "lr": "0.0005", "gnorm": "0.9", "train_wall": "118", "wall": str(120 * k)}  # fmt: skip
        lines.append(f"2021-03-01 12:{k:02d}:00 | INFO | train_inner | {json.dumps(row)}")
    lines.append('2021-03-01 12:30:00 | INFO | valid | {"epoch": 1, "valid_loss": "6.9", "valid_wps": "81000", "valid_num_updates": "1200"}')
    return lines, 1 / round(0.85 * _jit(11), 2), 7.5 - 1.2


def fairseq_pipe_log() -> tuple[list[str], float, float | None]:
    lines = []
    for k in range(1, 9):
        lines.append(
            f"| epoch {k:03d} | loss {6.0 - k / 10:.3f} | nll_loss 5.1 | ppl 34.3 | wps 18000 | ups {1.6 * _jit(k):.2f} | "
            f"wpb 11200 | bsz 380 | num_updates {k * 1000} | lr 0.0007 | gnorm 0.5 | clip 0.000 | oom 0.000 | wall {k * 620} | train_wall {k * 600}"
        )
        lines.append(f"| epoch {k:03d} | valid on 'valid' subset | loss 5.9 | nll_loss 5.0 | ppl 32.1 | num_updates {k * 1000}")
    return lines, 1 / round(1.6 * _jit(8), 2), 6.0 - 0.8


def timm_log() -> tuple[list[str], float, float | None]:
    lines = []
    for k, it in enumerate(range(0, 1001, 50)):
        st = 0.412 * _jit(k) * (8 if it == 0 else 1)
        lines.append(
            f"Train: 0 [{it:4d}/5004 ({100 * it / 5004:3.0f}%)]  Loss: {6.9 - it / 1000:.4f} (6.9300)  Time: {st:.3f}s, "
            f"{256 / st:7.2f}/s  (0.420s,  609.7/s)  LR: 1.000e-04  Data: 0.010 (0.012)"
        )
    lines += [f"Test: [{j:4d}/195]  Time: 0.112 (0.150)  Loss:  0.8 (0.8)  Acc@1: 80.0 (79.0)  Acc@5: 95.0 (94.0)" for j in (0, 50, 100, 150)]
    return lines, 0.412 * _jit(20), 6.9 - 1.0


def keras_log() -> tuple[list[str], float, float | None]:
    lines = []
    for e in range(1, 6):
        lines.append(f"Epoch {e}/5")
        lines.append(
            f"1875/1875 [==============================] - 5s {int(52 * _jit(e))}ms/step - loss: {0.5 - e / 20:.4f} - "
            f"accuracy: 0.9{e} - val_loss: 0.35 - val_accuracy: 0.88"
        )
    lines.append("313/313 [==============================] - 1s 3ms/step - loss: 0.3001 - accuracy: 0.9100")  # evaluate()
    return lines, int(52 * _jit(5)) / 1000, 0.5 - 5 / 20


def paddle_log() -> tuple[list[str], float, float | None]:
    lines = []
    for k, it in enumerate(range(10, 201, 10)):
        bc = 0.40816 * _jit(k)
        lines.append(
            f"[2022/01/01 12:{k:02d}:00] ppcls INFO: [Train][Epoch 1/120][Iter: {it}/5005]lr(PiecewiseDecay): 0.10000000, "
            f"top1: 0.00195, top5: 0.00977, CELoss: {6.91 - it / 1000:.5f}, loss: {6.91 - it / 1000:.5f}, "
            f"batch_cost: {bc:.5f}s, reader_cost: 0.00042, ips: {256 / bc:.5f} samples/s, eta: 2 days, 0:00:00"
        )
    lines += [f"[2022/01/01 12:30:{j:02d}] ppcls INFO: [Eval][Epoch 1][Iter: {j}/196]CELoss: 6.9, loss: 6.9, top1: 0.0, "
              f"batch_cost: 0.2 s, reader_cost: 0.1, ips: 300 images/s" for j in (0, 20, 40)]  # fmt: skip
    return lines, 0.40816 * _jit(19), 6.91 - 0.2


def torchvision_log() -> tuple[list[str], float, float | None]:
    lines = []
    for k, it in enumerate(range(0, 1001, 100)):
        lines.append(
            f"Epoch: [0]  [{it:4d}/5005]  eta: 0:25:00  lr: 0.1  img/s: 250.3  loss: {6.9 - it / 2000:.4f} (6.9000)  "
            f"acc1: 0.1000 (0.1000)  time: {0.4123 * _jit(k):.4f}  data: 0.0100  max mem: 2547"
        )
    lines.append("Epoch: [0] Total time: 0:33:10")
    lines += [f"Test:  [{j:3d}/50]  eta: 0:00:25  model_time: 0.5000 (0.5000)  time: 0.0600 (0.0600)  data: 0.0100  max mem: 2547" for j in (0, 10, 20)]
    return lines, 0.4123 * _jit(10), 6.9 - 0.5


def wlm_log() -> tuple[list[str], float, float | None]:
    """pytorch/examples word_language_model: `| ms/batch 45.12 |` pipes, then a validation line."""
    lines = []
    for k, b in enumerate(range(200, 2801, 200)):
        lines.append(f"| epoch   1 | {b:5d}/ 2983 batches | lr 20.00 | ms/batch {45.12 * _jit(k):5.2f} | loss {7.63 - b / 1000:5.2f} | ppl  2065.51")
    lines += ["-" * 89, "| end of epoch   1 | time: 140.12s | valid loss  5.80 | valid ppl   330.73", "-" * 89]
    return lines, 45.12 * _jit(13) / 1000, round(7.63 - 2.8, 2)


def yolo_log() -> tuple[list[str], float, float | None]:
    lines = ["      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size"]
    for e in range(1, 6):
        rate = 5.62 * _jit(e)
        lines.append(f"      {e}/100      2.61G      1.234      2.345      1.456         64        640: 100%|██████████| 469/469 [01:23<00:00,  {rate:.2f}it/s]")
        lines.append("                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): 100%|██████████| 32/32 [00:05<00:00,  6.12it/s]")
        lines.append("                   all       1000       5000      0.612      0.534      0.567      0.389")
    return lines, 1 / round(5.62 * _jit(5), 2), None


def nemo_log() -> tuple[list[str], float, float | None]:
    lines = []
    for k, it in enumerate(range(10, 201, 10)):
        lines.append(
            f"Training epoch 0, iteration {it}/999 | lr: 1e-05 | global_batch_size: 8 | global_step: {it} | "
            f"reduced_train_loss: {2.34 - it / 1000:.4f} | train_step_timing in s: {0.512 * _jit(k):.4f} | consumed_samples: {it * 8}"
        )
    lines.append("Validation DataLoader 0:  45%|████▌     | 45/100 [00:02<00:03, 18.2it/s]")
    return lines, 0.512 * _jit(19), 2.34 - 0.2


def nemo_bar_log() -> tuple[list[str], float, float | None]:
    lines = [
        f"Epoch 0: : {it // 10}%|█ | {it}/1000 [01:40<15:00, reduced_train_loss={2.34 - it / 1000:.3f}, global_step={it - 1}.0, "
        f"consumed_samples={it * 8}.0, train_step_timing in s={0.512 * _jit(k):.4f}, v_num=0]"
        for k, it in enumerate(range(10, 201, 10))
    ]  # fmt: skip
    return lines, 0.512 * _jit(19), 2.34 - 0.2


def paddlenlp_log() -> tuple[list[str], float, float | None]:
    lines = [f"global step {s}, epoch: 0, batch: {s - 1}, loss: {0.9 - s / 1000:.5f}, speed: {3.5 * _jit(s):.2f} step/s" for s in range(10, 201, 10)]
    lines.append("eval loss: 0.43021, acc: 0.8812, eval done total : 12.3 s")
    return lines, 1 / round(3.5 * _jit(200), 2), 0.9 - 0.2


def torchtitan_log() -> tuple[list[str], float, float | None]:
    """torchtitan prints no duration: the step time comes from the stamps (2 s per step here)."""
    lines = [
        f"[titan] 2024-05-01 12:{(2 * s) // 60:02d}:{(2 * s) % 60:02d},000 - root - INFO - step: {s:2d}  loss: {8.1 - s / 100:7.4f}  "
        f"memory: 9.21GiB(9.69%)  tps: 1,234  tflops: 12.31  mfu: 3.94%"
        for s in range(1, 41)
    ]  # fmt: skip
    return lines, 2.0, 8.1 - 0.4


def tqdm_postfix_log() -> tuple[list[str], float, float | None]:
    lines = [f"Epoch 3/10:  {n // 10}%|████▌     | {n}/1000 [03:00<03:40,  {2.5 * _jit(n):.2f}it/s, loss={0.9 - n / 10000:.4f}, acc=0.91]" for n in range(100, 1001, 100)]
    lines.append("Evaluating: 100%|██████████| 157/157 [00:05<00:00, 29.80it/s]")
    return lines, 1 / round(2.5 * _jit(1000), 2), 0.9 - 0.1


def llamafactory_log() -> tuple[list[str], float, float | None]:
    """HF Trainer via LLaMA-Factory/axolotl: JSON-quoted dicts beside a slow `s/it` bar."""
    lines = []
    for n in range(10, 121, 10):
        lines.append(f" {n * 100 // 1000:2d}%|█▏        | {n}/1000 [10:00<1:13:20,  {5.0 * _jit(n):.2f}s/it]")
        lines.append(json.dumps({"loss": round(1.5 - n / 1000, 4), "grad_norm": 0.51, "learning_rate": 1e-05, "epoch": round(n / 1000, 2)}))
    return lines, round(5.0 * _jit(120), 2), 1.5 - 0.12


LOGS = {
    "mmengine": mmengine_log, "detectron2": detectron2_log, "fairseq-simple": fairseq_simple_log,
    "fairseq-json": fairseq_json_log, "fairseq-pipes": fairseq_pipe_log, "timm": timm_log, "keras": keras_log,
    "paddle": paddle_log, "torchvision": torchvision_log, "word-language-model": wlm_log, "yolo": yolo_log,
    "nemo": nemo_log, "nemo-bar": nemo_bar_log, "paddlenlp": paddlenlp_log, "torchtitan": torchtitan_log,
    "tqdm-postfix": tqdm_postfix_log, "llama-factory": llamafactory_log,
}  # fmt: skip


def llmc_log() -> tuple[list[str], float, float | None]:
    """karpathy/llm.c: the duration sits unnamed in parentheses beside the rate."""
    lines = [f"step {s:4d}/74: train loss {4.67 - s / 100:.6f} (acc {4.67 - s / 100:.6f}) ({125.48 * _jit(s):.2f} ms, 32629 tok/s)" for s in range(1, 30)]
    lines.append("val loss 4.012345")
    return lines, 125.48 * _jit(29) / 1000, 4.67 - 0.29


def tf_estimator_log() -> tuple[list[str], float, float | None]:
    lines = []
    for k, s in enumerate(range(100, 1100, 100)):
        lines.append(f"INFO:tensorflow:global_step/sec: {3.45 * _jit(k):.4g}")
        lines.append(f"INFO:tensorflow:loss = {2.345 - s / 10000:.4f}, step = {s} (29.0 sec)")  # 100 steps, not one
    lines.append("INFO:tensorflow:Saving dict for global step 1000: global_step = 1000, loss = 2.1")
    return lines, 1 / float(f"{3.45 * _jit(9):.4g}"), 2.345 - 0.1


LOGS.update({"llm.c": llmc_log, "tf-estimator": tf_estimator_log})


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Train throughput/batches_per_sec: 1.25", {"step_time_s": 0.8}),  # Composer, one metric per line
        ("Train loss/train/total: 2.3456", {"loss": 2.3456}),
        ("[1000] timing/seconds_per_step=0.512, timing/steps_per_second=1.95, train/loss=2.3", {"step_time_s": 0.512, "loss": 2.3}),
        ("completed step: 100, seconds: 0.512, TFLOP/s/device: 123.4, Tokens/s/device: 4567.8, total_weights: 8192, loss: 2.345",
         {"step": 100, "step_time_s": 0.512, "loss": 2.345, "throughput": 4567.8, "throughput_unit": "tokens/s"}),  # MaxText
        ("[host] 2021-01-01 12:00:00,000 (trainer:732) INFO: 1epoch:train:1-100batch: iter_time=1.234e-04, forward_time=0.123, "
         "loss_ctc=123.4, loss=78.9, backward_time=0.1, optim_step_time=0.01, train_time=0.512", {"step_time_s": 0.512, "loss": 78.9}),
        ("1|100|Loss: 1.2345: 10%|█ | 100/1000 [01:40<15:00, 1.00s/it]", {"step": 100, "step_time_s": 1.0, "loss": 1.2345}),  # torchtune
        ("Finished training it 100/1000 of epoch 0, 12.34 ms/it, loss 0.1234", {"step": 100, "step_time_s": 0.01234}),  # DLRM
        (" iteration      100/  320000 | elapsed time per iteration (ms): 512.3 | learning rate: 1.0E-04 | lm_loss: 2.345E+00 |",
         {"step_time_s": 0.5123, "loss": 2.345}),  # GPT-NeoX
        ("steps:  10%|█ | 100/1000 [01:40<15:00,  1.00s/it, avr_loss=0.123]", {"step_time_s": 1.0, "loss": 0.123}),  # kohya
        ("Epoch[0] Batch [100-200]\tSpeed: 1234.56 samples/sec\taccuracy=0.5", {"throughput": 1234.56}),  # MXNet
        ("Epoch [2/10], Step [100/600], Loss: 0.2345, Time: 0.05s", {"step": 100, "step_time_s": 0.05}),  # the step's bracket, not the epoch's
        ("Model Parameters: 6.7 B, Latency: 0.51s, TFLOPs: 12.3, Samples/sec: 15.6, Time/seq 0.06s, Batch Size: 8",
         {"step_time_s": 0.51, "throughput": 15.6, "throughput_unit": "samples/s"}),  # DeepSpeed-Chat
        ("Epoch 1 | iter 100 step 25 | loss train: 2.345, val: n/a | iter time: 512.34 ms (step) remaining time: 1:00:00",
         {"step_time_s": 0.51234, "loss": 2.345}),  # LitGPT
        ("I0101 12:00:00.000 12345 solver.cpp:218] Iteration 100 (3.45 iter/s, 28.9855s/100 iters), loss = 2.345",
         {"step": 100, "step_time_s": 1 / 3.45, "loss": 2.345}),  # Caffe
    ],
)
def test_more_trainers_lines(line: str, expected: dict[str, object]) -> None:
    ex = regex_extract(line)
    assert ex is not None and ex.has_metric
    for key, value in expected.items():
        got = getattr(ex, key)
        assert got == pytest.approx(value) if isinstance(value, float) else got == value, key


@pytest.mark.parametrize("name", list(LOGS))
def test_real_format_log_gives_the_last_training_step_time(classifier: LineClassifier, name: str) -> None:
    lines, step_time, loss = LOGS[name]()
    tracker = MetricTracker(classifier)  # regex path only: no LLM
    report = tracker.observe(lines)
    assert isinstance(report, TrackerReport), getattr(report, "reason", "")
    assert report.method == "regex"
    assert report.step_time_s == pytest.approx(step_time, rel=0.05)
    if loss is not None:
        assert report.loss is not None and report.loss.value == pytest.approx(loss, rel=0.05)
    used = {line.text for est in (report.step_time, report.loss, report.throughput) if est for line in est.lines}
    assert not any(is_eval_line(text) for text in used)
    assert not any(("Epoch(val)" in t or "Test:" in t or "valid" in t or "Class " in t) for t in used)


def test_evaluation_bar_after_the_last_training_line_is_not_training(classifier: LineClassifier) -> None:
    """HF-style: the newest lines are an evaluation bar (fast it/s); training ran at 2 s/it."""
    train = [f" {n // 20:2d}%|▌ | {n}/2000 [05:00<1:00:00,  {2.0 * _jit(n):.2f}s/it]" for n in range(60, 101)]
    evaluation = [f"Validation: {n}%|████ | {n}/100 [00:10<00:10, 9.80it/s]" for n in range(10, 101, 10)]
    bare_eval = [f"{n}%|████ | {n}/50 [00:05<00:05,  9.80it/s]" for n in range(5, 51, 5)]
    report = MetricTracker(classifier).observe(train + evaluation + bare_eval)
    assert isinstance(report, TrackerReport) and report.step_time_s == pytest.approx(2.0, rel=0.02)
    assert report.stats.evaluation_lines == len(evaluation)


@pytest.mark.parametrize(
    "line",
    [
        "2023/02/18 12:10:00 - mmengine - INFO - Epoch(val)  [1][  50/625]    eta: 0:00:30  time: 0.0512  data_time: 0.0021",
        "[03/05 12:30:00 d2.evaluation.evaluator]: Inference done 11/5000. Total: 0.0515 s/iter. ETA=0:04:15",
        "2021-03-01 12:00:00 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 8.9 | wps 45678",
        "Test: [  10/195]  Time: 0.112 (0.150)  Loss:  0.8 (0.8)",
        "[2022/01/01 12:00:00] ppcls INFO: [Eval][Epoch 1][Iter: 0/196]CELoss: 6.9, batch_cost: 0.2 s",
        "                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): 100%|██| 32/32 [00:05<00:00,  6.12it/s]",
        "Validation DataLoader 0:  45%|████▌     | 45/100 [00:02<00:03, 18.2it/s]",
        "2024-01-01 10:00:00 - INFO - Evaluating step 40 loss 0.3 time 0.05",
        "{'eval_loss': 0.5, 'eval_runtime': 10.0, 'eval_samples_per_second': 100.0, 'epoch': 1.0}",
    ],
)
def test_evaluation_lines_are_recognised_and_never_read(line: str) -> None:
    assert is_eval_line(line) or regex_extract(line) is None
    ex = regex_extract(line)
    assert ex is None or not ex.has_metric


@pytest.mark.parametrize(
    "line",
    [
        "Epoch 3 step 1200: train_loss=0.52 val_loss=0.61 samples/sec=312.5",  # val_ keys inside a training line
        "Epoch 0:  45%|████▌     | 450/1000 [03:00<03:40,  2.50it/s, v_num=0, train_loss=0.512, val_loss=0.6]",
        "2023/02/18 12:00:00 - mmengine - INFO - Epoch(train)  [1][  50/7330]  lr: 2.0000e-02  time: 0.4555  loss: 1.6",
    ],
)
def test_training_lines_that_mention_validation_stay_training(line: str) -> None:
    assert not is_eval_line(line)
    ex = regex_extract(line)
    assert ex is not None and ex.has_metric


def test_key_value_tokenizer_reads_units_and_quotes() -> None:
    got = {f.key: (f.value, f.unit) for f in fields('batch_cost: 0.40816s, ips: 627.20 samples/s, "ups": "3.12", tps: 1,234')}
    assert got == {"batch_cost": (0.40816, "s"), "ips": (627.2, "samples/s"), "ups": (3.12, None), "tps": (1234.0, None)}
    ex = regex_extract("| epoch 1 | 200/ 2983 batches | ms/batch 45.12 | loss 7.63")
    assert ex is not None and ex.step_time_s == pytest.approx(0.04512) and ex.loss == pytest.approx(7.63)
    for prose in ("the job took time 3 s to start, loss of 2 nodes", "the request latency: 0.5 s"):
        ex = regex_extract(prose)  # a bare duration needs a step counter or a rate beside it
        assert ex is None or not ex.has_metric, prose


# -- LLM answers: validation against the line (fake chat model: our code, not a model) ------------


def test_llm_answers_equal_to_prompt_examples_are_refused() -> None:
    line, answer = FEW_SHOT[0]
    copied = validate("trn k=12 | J=4.0619 | wall 0.7723 sec", ProgressMetrics(**answer))  # type: ignore[arg-type]
    assert copied.extraction is None
    assert all("example" in r.reason for r in copied.rejections if r.field in ("step_time_s", "loss"))
    own = validate("trn k=12 | J=2.8812 | wall 0.5093 sec", ProgressMetrics(step_time_s=0.5093, loss=2.8812))
    assert own.extraction is not None and own.extraction.step_time_s == pytest.approx(0.5093)
    # every example number is one a real line would not hold by accident (4 significant digits)
    assert all(len(f"{v:g}".replace(".", "").lstrip("0")) >= 4 for v in EXAMPLE_VALUES)


def _fake(*answers: dict[str, Any]) -> GenericFakeChatModel:
    """A chat model that answers with the given JSON texts (the `text` structured method)."""
    return GenericFakeChatModel(messages=iter([AIMessage(json.dumps(a)) for a in answers]))


def test_pure_llm_baseline_raw_answer_and_its_validation() -> None:
    tail = [*NOISE, "Trn | stp#000120 | obj 2.345 | wall 0.512 sec", "Trn | stp#000121 | obj 2.344 | wall 0.513 sec",
            "valid | obj 2.9 | wall 0.101 sec"]  # fmt: skip
    good = llm_tail_metrics(_fake({"step": 121, "step_time_s": 0.513, "loss": 2.344}), tail, method="text")
    assert good.raw is not None and good.validated is not None
    assert good.validated.step_time_s == pytest.approx(0.513) and good.line == tail[-2]
    # the evaluation line's time, and the tail prompt's example values, are refused
    example = TAIL_FEW_SHOT[0][1]
    for wrong in ({"step_time_s": 0.101}, {"step_time_s": example["step_time_s"], "loss": example["loss"]}):
        r = llm_tail_metrics(_fake(wrong), tail, method="text")
        assert r.raw is not None and r.validated is None and r.rejections
    # units are converted by code: "512 ms" answered as 512 is read back as 0.512 s
    ms = validate_tail(["it 7 | took 512 ms"], ProgressMetrics(step_time_s=512))
    assert ms[0] is not None and ms[0].step_time_s == pytest.approx(0.512)


def test_read_tail_is_bounded(tmp_path) -> None:  # type: ignore[no-untyped-def]
    log = tmp_path / "train.log"
    log.write_text("\n".join(f"line {i} " + "x" * 100 for i in range(5000)) + "\n")
    tail = read_tail(log)
    assert tail[-1].startswith("line 4999") and sum(len(t) + 1 for t in tail) <= 1800


def test_tracker_llm_fallback_accepts_only_validated_values(classifier: LineClassifier) -> None:
    """Where no regex reads a line, the fallback's answer is used only where the line holds it."""
    lines = [f"Trn | stp#{s:06d} | obj {2.0 + s / 1000:.3f} | wall 0.{500 + s % 3:03d} sec" for s in range(1, 13)]
    fake = _fake({"step": 12, "step_time_s": 0.5, "loss": 2.012}, {"step_time_s": 0.7723, "loss": 4.0619})
    report = MetricTracker(classifier, fake, llm_method="text", max_lines=5).observe(lines)
    assert isinstance(report, TrackerReport) and report.method == "llm"
    assert report.step_time_s == pytest.approx(0.501, rel=0.01)
    copied = MetricTracker(classifier, _fake(*[{"step_time_s": 0.7723, "loss": 4.0619}] * 4), llm_method="text").observe(lines)
    assert isinstance(copied, NoSignal) and "refused" in copied.reason
