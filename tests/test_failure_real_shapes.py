"""Spec for the mechanisms that read failure logs the way real ones look (issue 11, item 5).

Each test is a small hand-written string in the shape some tool really prints: signatures the
rules did not know (NVSwitch SXid, NCCL's socket and usage warnings, the Mellanox driver, EIO,
name resolution), prefixes that hid a line's level or a traceback (TensorFlow's `W file.cc:12]`,
`[stderr]`), one rank's output re-tagged mid-line by its launcher, tracebacks inside tracebacks
(a DataLoader worker's failure re-raised) and IPython's traceback format, a failure printed
before it is raised, and a bank whose category depends on whose code raised the exception.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from schedmate.agents.failure.cleaning import split_interleaved, strip_record_prefix
from schedmate.agents.failure.learned import (
    LearnedFailureClassifier,
    frame_origin,
    load_examples,
    root_cause_window,
)
from schedmate.agents.failure.locator import FailureLocator, LogIndex, first_echo, root_cause_lines
from schedmate.agents.failure.rules import (
    RulesClassifier,
    clean_line,
    is_exception_line,
    is_reraised,
    is_traceback_header,
    traceback_exceptions,
)
from schedmate.embeddings.classifier import LineClassifier
from schedmate.taxonomy import FailureCategory, FailureReason

R = FailureReason
RULES = RulesClassifier()


# --- signatures no rule covered -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "rule", "reason"),
    [
        ("[Tue Jun 3 04:10:22 2025] nvidia-nvswitch2: SXid (PCI:0000:8a:00.0): 20034, Fatal, Link 31 LTSSM Fault Up",
         "nvlink", R.NVLINK_ERROR),
        ("trn-17:5512:5690 [5] include/alloc.h:103 NCCL WARN Cuda failure 'out of memory'", "cuda-oom", R.OUT_OF_MEMORY_ERROR),
        ("[rank0]:[E605 01:02:03.000 ProcessGroupNCCL.cpp:1400] ProcessGroupNCCL's watchdog got stuck for 600 seconds "
         "without making progress in monitoring enqueued collectives.", "nccl-watchdog", R.NCCL_TIMEOUT_ERROR),
        ("gpu-b3:901:930 [2] misc/socket.cc:49 NCCL WARN Net : Call to recv from 10.4.0.9<38811> failed : Connection reset by peer",
         "nccl-remote", R.NCCL_REMOTE_ERROR),
        ("mlx5_3: mlx5_core: got completion with error:", "ib-error", R.NETWORK_ERROR),
        ("RuntimeError: [enforce fail at inline_container.cc:595] . PytorchStreamWriter failed writing file data/11: "
         "write(): fd 9 failed with Input/output error", "storage", R.S3_STORAGE_ERROR),
        ("urllib3.exceptions.MaxRetryError: HTTPSConnectionPool(host='hub.example.net', port=443): Max retries exceeded "
         "with url: /org/m/resolve/main/config.json", "connection", R.CONNECTION_ERROR),
        ("socket.gaierror: [Errno -3] Temporary failure in name resolution", "connection", R.CONNECTION_ERROR),
        ("n4:7:7 [3] init.cc:802 NCCL WARN Duplicate GPU detected : rank 3 and rank 0 both on CUDA device 1b000",
         "nccl-invalid-usage", R.RUNTIME_ERROR),
    ],
)  # fmt: skip
def test_signatures_real_tools_print_are_recognised(line: str, rule: str, reason: FailureReason) -> None:
    hit = RULES.match(clean_line(line).text)
    assert hit is not None and (hit.name, hit.reason) == (rule, reason)


@pytest.mark.parametrize(
    "line",
    [
        "nvidia-nvswitch0: probing SXid reporting for 12 links",  # no SXid event number
        "mlx5_0: mlx5_core: completion queue 14 created",
        "NCCL INFO Channel 00/02 : 0[0] -> 1[1] via P2P/IPC",
        "watchdog: heartbeat every 30 seconds",
        "eval input/output errors dataset: 12 samples",
    ],
)
def test_lookalikes_of_those_signatures_match_nothing_new(line: str) -> None:
    hit = RULES.match(clean_line(line).text)
    assert hit is None or hit.name not in {"nvlink", "ib-error", "nccl-watchdog", "storage"}


def test_nccl_refusing_its_usage_is_high_precision() -> None:
    hit = RULES.match("NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 3000")
    assert hit is not None and hit.high_precision and hit.category is FailureCategory.FRAMEWORK


def test_module_qualified_lower_case_exceptions_are_exception_lines() -> None:
    assert is_exception_line("socket.gaierror: [Errno -2] Name or service not known")
    assert is_exception_line("socket.timeout: timed out")
    assert not is_exception_line("gaierror: not qualified")
    assert not is_exception_line("train.mse_error: 0.0132")  # a metric, not an exception


# --- prefixes and interleaving ----------------------------------------------------------------------


def test_tensorflow_glog_prefix_is_a_level_not_text() -> None:
    seen = strip_record_prefix("2021-04-01 10:00:00.123456: W tensorflow/core/kernels/x_op.cc:88] Error while closing: Cancelled")
    assert seen.level == "warning" and seen.text == "Error while closing: Cancelled"
    assert strip_record_prefix("E tensorflow/stream_executor/cuda/cuda_driver.cc:1010] failed to alloc").level == "error"


def test_a_runners_stream_tag_is_stripped() -> None:
    assert clean_line("[stderr]ImportError: No module named 'h5py'").text == "ImportError: No module named 'h5py'"
    assert clean_line("[stdout]: epoch 3 done").text == "epoch 3 done"


def test_one_rank_retagged_mid_line_is_joined_and_two_ranks_are_split() -> None:
    joined = split_interleaved("[2,5]<stderr>:ValueError[2,5]<stderr>:: bad shape (3, 4)")
    assert joined == ["[2,5]<stderr>:ValueError: bad shape (3, 4)"]
    assert clean_line(joined[0]).text == "ValueError: bad shape (3, 4)"
    two = split_interleaved("[rank1]:loss 2.1[rank0]: Traceback (most recent call last):")
    assert two == ["[rank1]:loss 2.1", "[rank0]: Traceback (most recent call last):"]


# --- tracebacks inside tracebacks, IPython ----------------------------------------------------------

WORKER = [
    "Traceback (most recent call last):",
    '  File "fit.py", line 30, in <module>',
    "    for xb, yb in loader:",
    '  File "/env/lib/python3.9/site-packages/torch/_utils.py", line 457, in reraise',
    "    raise exception",
    "IndexError: Caught IndexError in DataLoader worker process 2.",
    "Original Traceback (most recent call last):",
    '  File "/env/lib/python3.9/site-packages/torch/utils/data/_utils/worker.py", line 287, in _worker_loop',
    "    data = fetcher.fetch(index)",
    '  File "/home/ana/proj/data/shards.py", line 71, in __getitem__',
    "    return self.rows[i]",
    "IndexError: list index out of range",
]


def test_a_reraised_worker_failure_leads_to_the_inner_exception() -> None:
    cleaned = [clean_line(x) for x in WORKER]
    assert is_reraised(WORKER[5]) and is_traceback_header(WORKER[6])
    assert traceback_exceptions(cleaned, 0) == [11]
    assert traceback_exceptions(cleaned, 5) == [11]  # starting at the wrapper itself
    assert traceback_exceptions(cleaned[:9], 0) == [5]  # inner one cut off: the wrapper stands


def test_an_exception_whose_message_is_a_traceback_leads_inside() -> None:
    lines = ["OSError: Traceback (most recent call last):", '  File "/s/w.py", line 3, in load', "    f.read()",
             "OSError: [Errno 5] Input/output error"]  # fmt: skip
    assert traceback_exceptions([clean_line(x) for x in lines], 0) == [3]
    with LogIndex.from_lines(["step 1", *lines]) as index:
        assert root_cause_lines(index, 1)[1] == 4


def test_an_ipython_traceback_ends_with_the_exception_its_header_names() -> None:
    lines = [
        "ValueError                                Traceback (most recent call last)",
        "<ipython-input-7-1a2b> in <module>",
        "----> 3 run(cfg)",
        "",
        "/content/lib/runner.py in run(cfg)",
        "     40     if cfg.bs < 1:",
        "---> 41         raise ValueError('batch size must be positive')",
        "",
        "ValueError: batch size must be positive",
    ]
    assert is_traceback_header(lines[0])
    assert traceback_exceptions([clean_line(x) for x in lines], 0) == [8]


# --- a failure printed before it is raised -----------------------------------------------------------


def test_the_first_print_of_the_message_is_the_root_cause() -> None:
    lines = [
        "2024-05-01 10:00:00 INFO step 90",
        "2024-05-01 10:00:01 ERROR checkpoint shard 3 is missing from the manifest",
        "2024-05-01 10:00:01 INFO saving emergency state",
        "Traceback (most recent call last):",
        '  File "run.py", line 9, in <module>',
        "RuntimeError: checkpoint shard 3 is missing from the manifest",
    ]
    with LogIndex.from_lines(lines) as index:
        assert root_cause_lines(index, 3) == (1, 1)


def test_short_messages_and_earlier_exception_lines_are_not_echoes() -> None:
    short = ["0", "Traceback (most recent call last):", '  File "a.py", line 1, in f', "KeyError: 0"]
    with LogIndex.from_lines(short) as index:
        assert first_echo(index, 3, clean_line(short[3])) is None
    handled = ["ValueError: the learning rate schedule is empty", "retrying with defaults",
               "ValueError: the learning rate schedule is empty"]  # fmt: skip
    with LogIndex.from_lines(handled) as index:
        assert first_echo(index, 2, clean_line(handled[2])) is None


def test_a_tensorflow_warning_in_a_finished_run_is_not_a_failure(classifier: LineClassifier) -> None:
    lines = [f"{i}/50 [==============================] - 3s 60ms/step - loss: 0.{90 - i}" for i in range(1, 51)]
    lines.append("2022-01-01 00:00:00.000001: W tensorflow/core/kernels/data/iterator_ops.cc:77] "
                 "Error occurred when finalizing iterator: Cancelled: Operation was cancelled")  # fmt: skip
    assert FailureLocator(classifier).locate(lines) is None


# --- whose code raised it --------------------------------------------------------------------------


def test_frame_origin_reads_the_innermost_frame_above_the_exception() -> None:
    user = ['  File "/opt/x/site-packages/torch/nn/module.py", line 1, in __call__', "    return f(x)",
            '  File "/home/me/net.py", line 12, in forward', "    y = self.head(x)"]  # fmt: skip
    lib = ['  File "/home/me/train.py", line 3, in <module>', '  File "/usr/lib/python3.10/json/decoder.py", line 9, in decode']
    assert frame_origin([clean_line(x) for x in user]) == "user"
    assert frame_origin([clean_line(x) for x in lib]) == "library"
    assert frame_origin([clean_line(x) for x in ["epoch 1", "loss 2.0"]]) == ""
    window = root_cause_window([*user, "AttributeError: 'Head' object has no attribute 'proj'"], 4)
    assert window.origin == "user"


def _bank(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "bank.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_category_against_the_taxonomy_needs_by_context(tmp_path: Path) -> None:
    row = {"reason": "AttributeError", "category": "script", "line": "AttributeError: x"}
    with pytest.raises(ValueError, match="by_context"):
        load_examples(_bank(tmp_path, [row]))
    (ex,) = load_examples(_bank(tmp_path, [{**row, "by_context": True}]))
    assert ex.reason is R.ATTRIBUTE_ERROR and ex.category is FailureCategory.SCRIPT
    assert all(e.context_category is not None for e in load_examples() if e.context_category is not None)


def test_the_same_exception_class_gets_the_category_its_context_gives(classifier: LineClassifier, tmp_path: Path) -> None:
    rows = []
    for i, (name, attr) in enumerate([("Loader", "root"), ("Cfg", "lr"), ("Head", "proj"), ("Aug", "p"), ("Net", "fc")]):
        line = f"AttributeError: '{name}' object has no attribute '{attr}'"
        rows.append({"reason": "AttributeError", "category": "framework", "line": line,
                     "before": [f'  File "/opt/py/site-packages/lib{i}/core.py", line {i + 3}, in step', f"    self.{attr}"]})
        rows.append({"reason": "AttributeError", "category": "script", "by_context": True, "line": line,
                     "before": [f'  File "/home/dev/proj/mod{i}.py", line {i + 9}, in run', f"    self.{attr}"]})
        rows.append({"reason": "KeyError", "category": "script", "line": f"KeyError: '{attr}{i}'",
                     "before": [f'  File "/home/dev/proj/mod{i}.py", line {i + 4}, in get', f"    cfg['{attr}{i}']"]})
    clf = LearnedFailureClassifier(classifier.embedder, load_examples(_bank(tmp_path, rows))).fit()
    text = "AttributeError: 'Mixer' object has no attribute 'gate'"
    mine = clf.classify(['  File "/srv/team/app/mixer.py", line 40, in forward', "    g = self.gate(x)", text], 2)
    theirs = clf.classify(['  File "/venv/lib/python3.11/site-packages/mixlib/mixer.py", line 40, in forward',
                           "    g = self.gate(x)", text], 2)  # fmt: skip
    assert mine.category is FailureCategory.SCRIPT and theirs.category is FailureCategory.FRAMEWORK
    assert mine.reason is R.ATTRIBUTE_ERROR and theirs.reason is R.ATTRIBUTE_ERROR


def test_the_banks_features_are_kept_between_processes_and_a_changed_bank_is_embedded_again(
        classifier: LineClassifier, tmp_path: Path) -> None:
    rows = [{"reason": "KeyError", "category": "script", "line": f"KeyError: 'k{i}'"} for i in range(4)]
    rows += [{"reason": "NCCLTimeoutError", "category": "infrastructure",
              "line": f"Watchdog caught collective operation timeout: WorkNCCL(SeqNum={i}, OpType=ALLREDUCE)"} for i in range(4)]
    rows += [{"reason": "OutOfMemoryError", "category": "framework",
              "line": f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {i + 1}.00 GiB"} for i in range(4)]
    bank = load_examples(_bank(tmp_path, rows))
    cache = tmp_path / "cache"
    first = LearnedFailureClassifier(classifier.embedder, bank, feature_cache=cache, folds=2).fit()
    files = sorted(cache.glob("learned-bank-*.npz"))
    assert len(files) == 1

    class NoEmbedder:  # a second process: the cache answers, the embedder is never asked
        model_name, dim = classifier.embedder.model_name, classifier.embedder.dim

        def embed(self, texts):  # type: ignore[no-untyped-def]
            raise AssertionError("re-embedded a cached bank")

    second = LearnedFailureClassifier(NoEmbedder(), bank, feature_cache=cache, folds=2)  # type: ignore[arg-type]
    windows, _, _ = second._training_rows()
    assert np.array_equal(second._bank_features(windows), np.load(files[0])["x"])
    assert first.temperature > 0
    # the fitted weights come back too: a second fit neither embeds the bank nor refits, and answers alike
    again = LearnedFailureClassifier(classifier.embedder, bank, feature_cache=cache, folds=2)
    again.embedder = NoEmbedder()  # type: ignore[assignment]
    again.fit()
    again.embedder = classifier.embedder
    lines = ["Traceback (most recent call last):", "KeyError: 'label_ids'"]
    a, b = first.classify(lines, 1), again.classify(lines, 1)
    assert (a.category, a.reason) == (b.category, b.reason) and again.temperature == pytest.approx(first.temperature)
    assert len(list(cache.glob("learned-model-*.npz"))) == 1
    changed = LearnedFailureClassifier(classifier.embedder, bank[:-1], feature_cache=cache, folds=2)
    changed._bank_features(changed._training_rows()[0])
    assert len(list(cache.glob("learned-bank-*.npz"))) == 2
    for f in cache.glob("*.npz"):  # a damaged cache costs time, never a wrong or failed fit
        f.write_bytes(b"\x00not an npz")
    healed = LearnedFailureClassifier(classifier.embedder, bank, feature_cache=cache, folds=2).fit()
    assert healed.temperature == pytest.approx(first.temperature)
