"""Spec for the signature rules behind launcher prefixes, and for which reason the corpus's
network-flavoured failures are (no embedding model: these run in milliseconds).

Launchers put their mark in front of every line a rank prints: torchrun `[rank3]:`, pdsh and
DeepSpeed `worker-3: ` or a bare host name `host: `, Ray `(RayTrainWorker pid=..)`, and they
nest (`gpu-node-07: [rank3]: ...`). A traceback behind any of them must read like a bare one.
A digit-free label looks like a `key: value` field, so it is only stripped in front of what a
crashing rank forwards (traceback lines, another prefix), never in front of a counter.
"""

from __future__ import annotations

import pytest

from schedmate.agents.failure.rules import RulesClassifier, clean_line, is_traceback_header
from schedmate.taxonomy import FailureCategory, FailureReason

R = FailureReason

PREFIXES = ["worker-3: ", "[rank3]:", "[rank3]: ", "host: ", "localhost: ", "gpu-node-07: [rank3]: ",
            "10.0.0.3: ", "(RayTrainWorker pid=4242, ip=10.0.0.3) ", "[worker-3] ", "[1,3]<stderr>:"]  # fmt: skip

TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/workspace/train.py", line 88, in <module>',
    "    batch = next(it)",
    '  File "/workspace/data.py", line 41, in __getitem__',
    "    return self.table[key]",
    "KeyError: 'input_ids'",
]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_a_prefixed_traceback_header_is_a_traceback_header(prefix: str) -> None:
    line = clean_line(prefix + "Traceback (most recent call last):")
    assert is_traceback_header(line.text)
    assert line.source is not None


@pytest.mark.parametrize("prefix", PREFIXES)
def test_rules_read_a_traceback_behind_a_launcher_prefix(prefix: str) -> None:
    window = ["iter 100 loss 2.31", *(prefix + x for x in TRACEBACK), "srun: error: task 3: Exited with exit code 1"]
    verdict = RulesClassifier().classify(window, focus=1)
    assert verdict is not None and verdict.reason is R.KEY_ERROR and verdict.offset == 5


def test_prefixed_ranks_interleaved_in_a_traceback_are_skipped_by_source() -> None:
    a, b = "worker-3: ", "worker-5: "
    window = [a + TRACEBACK[0], b + "iter 101 loss 2.30", a + TRACEBACK[1], a + TRACEBACK[2],
              b + "iter 102 loss 2.29", a + "ValueError: bad shape"]  # fmt: skip
    verdict = RulesClassifier().classify(window, 0)
    assert verdict is not None and verdict.reason is R.VALUE_ERROR and verdict.offset == 5


@pytest.mark.parametrize(
    "line",
    ["errors: 0", "error_on_nan: false", "Epoch: 3",
     "train.py: error: unrecognized arguments: --x", "S3Error: slow down", "KeyError: 'x'"],
)  # fmt: skip
def test_fields_and_exception_names_are_not_taken_for_host_labels(line: str) -> None:
    assert clean_line(line).text == line


def test_a_level_word_is_a_record_level_not_a_host_label() -> None:
    line = clean_line("warning: Traceback (most recent call last):")
    assert line.source is None and line.level == "warning"


# --- ConnectionError vs NetworkError: what the corpus injects, read the right way ------------------
#
# The taxonomy (Acme) has ConnectionError (147 failures: sockets, rendezvous stores, HTTP to the
# hub) apart from NetworkError (12: the fabric itself, InfiniBand completions, unreachable links).
# A `requests.exceptions.ConnectionError` whose message ends in "Network is unreachable" is a
# connection failure: the exception class names the failure, its message only the errno.


def _rules_on_corpus_log(reason: FailureReason, seed: int) -> FailureReason | None:
    from schedmate.synthetic.logs import LogSpec, LogStatus, generate_log

    text, labels = generate_log(LogSpec(n_lines=300, status=LogStatus.FAILED, failure_reason=reason), seed)
    lines = str(text).split("\n")
    f = labels.failure
    assert f is not None
    lo = max(0, f.block_start - 100)
    verdict = RulesClassifier().classify(lines[lo : f.block_start + 100], f.block_start - lo)
    return None if verdict is None else verdict.reason


@pytest.mark.parametrize("reason", [R.CONNECTION_ERROR, R.NETWORK_ERROR, R.NCCL_REMOTE_ERROR])
def test_network_flavoured_corpus_failures_get_their_own_reason(reason: FailureReason) -> None:
    got = [_rules_on_corpus_log(reason, seed) for seed in range(500, 512)]  # variants: hub, store, gloo, IB...
    assert got == [reason] * len(got)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("requests.exceptions.ConnectionError: (MaxRetryError(\"HTTPSConnectionPool(host='huggingface.co', port=443): "
         "Max retries exceeded (Caused by NewConnectionError('Failed to establish a new connection: [Errno 101] "
         "Network is unreachable'))\"))", R.CONNECTION_ERROR),
        ("ConnectionResetError: [Errno 104] Connection reset by peer", R.CONNECTION_ERROR),
        ("host: ConnectionResetError: [Errno 104] Connection reset by peer", R.CONNECTION_ERROR),
        ("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.0.0.2]:4021",
         R.CONNECTION_ERROR),
        ("gpu-node-02:1234:1300 [0] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer "
         "10.0.0.3<39818> with error 12, opcode 0, len 0, vendor err 129 (Send)", R.NETWORK_ERROR),
        ("OSError: [Errno 101] Network is unreachable", R.NETWORK_ERROR),
    ],
)  # fmt: skip
def test_connection_class_wins_over_the_errno_in_its_message(line: str, reason: FailureReason) -> None:
    verdict = RulesClassifier().classify([line])
    assert verdict is not None and verdict.reason is reason
    assert verdict.category is FailureCategory.INFRASTRUCTURE


# --- the locator's keyword gate lets every rule's signature through ---------------------------------


@pytest.mark.parametrize(
    "line",
    ["Stale file handle", "Network is unreachable", "No route to host", "mlx5_0/1: link is down",
     "Address already in use", "Connection closed by peer", "Can't load tokenizer for 'x'",
     "x does not appear to have a file named config.json", "x is not a valid model identifier",
     "Couldn't find a dataset script at /d", "Command 'x' returned non-zero exit status 1", "loss is nan",
     "node gpu-3 not responding", "node gpu-3 became NotReady", "GPU has fallen off the bus",
     "no CUDA-capable device is detected", "NVRM: Xid (PCI:0000:3b:00): 79", "Killed", "Segmentation fault",
     "insufficient shared memory (shm)", "Out of memory: Killed process 77", "NODE_FAIL"],
)  # fmt: skip
def test_signature_phrases_pass_the_locators_keyword_gate(line: str) -> None:
    from schedmate.agents.failure.locator import _has_keyword

    assert _has_keyword(line.encode(), {})
    assert RulesClassifier().match(clean_line(line).text) is not None or line in {"Killed"}
