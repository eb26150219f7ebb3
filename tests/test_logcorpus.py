"""Spec of the labelled training-log corpus (`schedmate.synthetic.logs`).

Read top to bottom: determinism; exact sizes; every framework's progress lines in its real format,
with printed numbers equal to the labelled truth; warm-up and slowdown; one injected Acme root
cause per failed log, found by its real error text at the labelled line and followed by a cascade;
noise switches; streaming of large logs; the corpus writer and reader.

Line numbers index `text.split("\\n")` (a tqdm line with `\\r` redraws is one line).
"""

from __future__ import annotations

import ast
import re

import numpy as np
import pytest

from schedmate.synthetic.logs import (
    ALLOWED_COMPONENTS,
    REASONS,
    VARIANTS,
    Component,
    FailureCategory,
    FailureReason,
    Framework,
    LogLabels,
    LogSpec,
    LogStatus,
    RankPrefix,
    category_of,
    generate_corpus,
    generate_log,
    generator,
    load_labels,
    load_manifest,
    reasons_in,
)
from schedmate.taxonomy import ACME_REASONS, reason_weights

ANSI = re.compile(r"\x1b\[[0-9;]*m")
PREFIX = {
    RankPrefix.NONE: None,
    RankPrefix.TORCHRUN: re.compile(r"^\[rank\d+\]: ?"),
    RankPrefix.TORCHRUN_LEGACY: re.compile(r"^\[default\d+\]:"),
    RankPrefix.PDSH: re.compile(r"^[\w.-]+: "),
    RankPrefix.MPI: re.compile(r"^\[1,\d+\]<std(?:out|err)>:"),
    RankPrefix.SRUN: re.compile(r"^\d+: "),
}


def lines_of(text: str) -> list[str]:
    assert text.endswith("\n")
    return text.split("\n")[:-1]


def clean(line: str, style: RankPrefix) -> str:
    """A line without ANSI colours and without the launcher's rank prefix."""
    line = ANSI.sub("", line)
    pattern = PREFIX[RankPrefix(style)]
    return pattern.sub("", line, count=1) if pattern else line


def gen(seed: int = 0, **spec) -> tuple[list[str], LogLabels, str]:
    text, labels = generate_log(LogSpec(**spec), seed)
    assert isinstance(text, str)
    return lines_of(text), labels, text


# -------------------------------------------------------------------------------------------------
# Determinism and size
# -------------------------------------------------------------------------------------------------
def test_same_seed_same_log_and_labels():
    spec = LogSpec(framework="hf_trainer", n_lines=600, failure_reason="OutOfMemoryError")
    a_text, a = generate_log(spec, 42)
    b_text, b = generate_log(spec, 42)
    assert a_text == b_text
    assert a.model_dump_json() == b.model_dump_json()


def test_the_resolved_spec_in_the_labels_rebuilds_the_log():
    text, labels = generate_log(LogSpec(n_lines=500), 7)
    again, labels2 = generate_log(labels.spec, labels.seed)
    assert again == text and labels2.model_dump_json() == labels.model_dump_json()


def test_different_seeds_give_different_logs():
    texts = {generate_log(LogSpec(framework="megatron", n_lines=300, status="running"), s)[0] for s in range(4)}
    assert len(texts) == 4


@pytest.mark.parametrize("n", [100, 137, 1000, 5000])
def test_a_log_has_exactly_the_requested_lines(n):
    for seed in range(3):
        lines, labels, text = gen(seed, n_lines=n, status=["failed", "running", "completed"][seed])
        assert len(lines) == labels.n_lines == n
        assert labels.n_bytes == len(text.encode("utf-8"))


# -------------------------------------------------------------------------------------------------
# Progress lines: the real formats, and the truth behind their numbers
# -------------------------------------------------------------------------------------------------
BAR = r"[ ▏▎▍▌▋▊▉█]{10}"
ELAPSED = r"(?:\d+:)?\d\d:\d\d"
TQDM = re.compile(rf"^(?:(?P<desc>.+): )?\s*(?P<pct>\d+)%\|{BAR}\| (?P<n>\d+)/(?P<total>\d+) "
                  rf"\[{ELAPSED}<{ELAPSED}, \s*(?P<rate>[\d.]+)(?P<unit>it/s|s/it)(?P<post>, .*)?\]$")
MEGATRON = re.compile(
    r"^(?: \[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\])? iteration\s+(?P<it>\d+)/\s*(?P<total>\d+) \| "
    r"consumed samples:\s+(?P<consumed>\d+) \| elapsed time per iteration \(ms\): (?P<ms>[\d.]+) \|"
    r"(?: throughput per GPU \(TFLOP/s/GPU\): [\d.]+ \|)? learning rate: (?P<lr>\d\.\d+E[-+]\d+) \| "
    r"global batch size:\s+(?P<gbs>\d+) \| lm loss: (?P<loss>\d\.\d+E[-+]\d+) \| loss scale: [\d.]+ \| "
    r"grad norm: [\d.]+ \|(?: params norm: [\d.]+ \|)? number of skipped iterations:\s+\d+ \| "
    r"number of nan iterations:\s+\d+ \|$")
DS_STEP = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] \[INFO\] \[logging\.py:\d+:log_dist\] \[Rank 0\] "
                     r"step=(?P<step>\d+), skipped=\d+, lr=\[[\d.e-]+\], mom=\[\([\d.]+, [\d.]+\)\]$")
DS_TIMER = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] \[INFO\] \[timer\.py:\d+:stop\] "
                      r"epoch=\d+/micro_step=\d+/global_step=(?P<step>\d+), RunningAvgSamplesPerSec=[\d.e+-]+, "
                      r"CurrSamplesPerSec=(?P<cur>[\d.e+-]+), MemAllocated=[\d.]+GB, MaxMemAllocated=[\d.]+GB$")
DS_PIPE = re.compile(r"^steps: (?P<step>\d+) loss: (?P<loss>[\d.]+) iter time \(s\): (?P<t>[\d.]+) "
                     r"samples/sec: (?P<sps>[\d.]+)$")
PYTORCH = {
    "simple": re.compile(r"^step (?P<step>\d+) loss (?P<loss>[\d.]+) time (?P<t>[\d.]+)s$"),
    "nanogpt": re.compile(r"^iter (?P<iter>\d+): loss (?P<loss>[\d.]+), time (?P<ms>[\d.]+)ms, mfu -?[\d.]+%$"),
    "epoch": re.compile(r"^Epoch \[(?P<ep>\d+)/\d+\], Step \[(?P<n>\d+)/(?P<spe>\d+)\], Loss: (?P<loss>[\d.]+), "
                        r"Time: (?P<t>[\d.]+)s/step, Throughput: [\d.]+ samples/s$"),
    "titan": re.compile(r"^\[titan\] \S+ \S+ - root - INFO - step:\s*(?P<step>\d+)\s+loss:\s*(?P<loss>[\d.]+)\s+"
                        r"memory:\s*[\d.]+GiB\([\d.]+%\)\s+tps: (?P<tps>[\d,]+)\s+tflops: [\d,.]+\s+mfu: [\d.]+%$"),
    "loguru": re.compile(r"^\S+ \S+ \| INFO\s+\| __main__:train:\d+ - step (?P<step>\d+)/\d+ \| loss (?P<loss>[\d.]+) \| "
                         r"(?P<ms>[\d.]+) ms/step \| [\d.]+ samples/s$"),
}


def check_tqdm(m: re.Match, step_time: float) -> None:
    rate = float(m["rate"])
    expected = step_time if m["unit"] == "s/it" else 1.0 / step_time
    assert rate == pytest.approx(expected, abs=0.006)


def check_progress_line(fw: Framework, variant: str, line: str, i: int, labels: LogLabels) -> None:
    """Assert that one progress line has its framework's real format and prints the labelled truth."""
    t = labels.truth
    step, st, loss = int(t.steps[i]), float(t.step_time[i]), float(t.loss[i])
    if fw is Framework.MEGATRON:
        m = MEGATRON.match(line)
        assert m, line
        assert int(m["it"]) == step and int(m["total"]) == t.total_steps
        assert int(m["consumed"]) == step * t.global_batch_size and int(m["gbs"]) == t.global_batch_size
        assert float(m["ms"]) == pytest.approx(st * 1000, abs=0.051)
        assert float(m["loss"]) == pytest.approx(loss, rel=2e-6)
    elif fw is Framework.DEEPSPEED:
        m = DS_STEP.match(line) or DS_TIMER.match(line) or DS_PIPE.match(line)
        assert m, line
        assert int(m["step"]) == step
        if "cur" in m.groupdict():
            assert float(m["cur"]) == pytest.approx(t.global_batch_size / st, rel=1e-6)
            assert float(m["cur"]) == pytest.approx(float(t.throughput[i]), rel=1e-6)
        if "t" in m.groupdict():
            assert float(m["t"]) == pytest.approx(st, abs=0.0006)
            assert float(m["loss"]) == pytest.approx(loss, abs=6e-5)
    elif fw is Framework.HF_TRAINER:
        parts = [p for p in line.split("\r") if p.strip()]
        if parts[-1].startswith("{"):
            logged = ast.literal_eval(parts[-1])
            assert {"loss", "learning_rate", "epoch"} <= logged.keys()
            assert ("grad_norm" in logged) == (variant == "v4")
            assert logged["loss"] == pytest.approx(loss, abs=6e-5)
            assert logged["epoch"] == pytest.approx(step / t.steps_per_epoch, abs=0.006)
            parts = parts[:-1]
        if parts:  # the last redraw before the logged dict (or a redraw line of its own)
            m = TQDM.match(parts[-1])
            assert m and m["desc"] is None, parts[-1]
            assert int(m["n"]) == step and int(m["total"]) == t.total_steps
            check_tqdm(m, st)
            assert all(TQDM.match(p) for p in parts)
    elif fw is Framework.LIGHTNING:
        draws = [p for p in line.split("\r") if p]
        m = TQDM.match(draws[-1])
        assert m and m["desc"].startswith("Epoch "), draws[-1]
        epoch = int(m["desc"].split()[1])
        assert epoch * t.steps_per_epoch + int(m["n"]) == step
        check_tqdm(m, st)
        post = dict(kv.split("=") for kv in m["post"][2:].split(", "))
        key = "train_loss" if variant == "v2" else "loss"
        assert float(post[key]) == pytest.approx(loss, rel=6e-3)
        if variant == "v2":
            assert len(post[key]) >= 5  # Lightning pads to five characters: 1.230
        assert all(TQDM.match(d) for d in draws)
    else:
        m = PYTORCH[variant].match(line)
        assert m, line
        assert float(m["loss"]) == pytest.approx(loss, abs=6e-5)
        if variant == "nanogpt":
            assert int(m["iter"]) == step - 1  # nanoGPT counts iterations from 0
            assert float(m["ms"]) == pytest.approx(st * 1000, abs=0.006)
        elif variant == "epoch":
            assert (int(m["ep"]) - 1) * int(m["spe"]) + int(m["n"]) == step
            assert float(m["t"]) == pytest.approx(st, abs=0.0006)
        elif variant == "titan":
            assert int(m["step"]) == step
            tps = t.global_batch_size * t.seq_length / labels.spec.world_size / st
            assert int(m["tps"].replace(",", "")) == pytest.approx(tps, abs=1.01)
        else:
            assert int(m["step"]) == step
            if variant == "simple":
                assert float(m["t"]) == pytest.approx(st, abs=0.0006)
            else:
                assert float(m["ms"]) == pytest.approx(st * 1000, abs=0.051)


FORMAT_CASES = [(fw, v, cr) for fw in Framework for v in VARIANTS[fw]
                for cr in ((True, False) if fw in (Framework.HF_TRAINER, Framework.LIGHTNING) else (True,))]


@pytest.mark.parametrize(("fw", "variant", "cr"), FORMAT_CASES, ids=[f"{f}-{v}-{'cr' if c else 'nocr'}" for f, v, c in FORMAT_CASES])
def test_progress_lines_have_the_framework_format_and_print_the_truth(fw, variant, cr):
    lines, labels, _ = gen(11, framework=fw, variant=variant, carriage_returns=cr, n_lines=500, status="running",
                           noise_level=0.4, ansi=True, log_interval=4, world_size=8)
    t = labels.truth
    assert len(t.progress_lines) > 20
    assert np.all(np.diff(t.steps) >= 0) and np.all(np.diff(t.progress_lines) > 0)
    for i, idx in enumerate(t.progress_lines.tolist()):
        check_progress_line(fw, variant, clean(lines[idx], labels.spec.rank_prefix), i, labels)
    assert np.allclose(t.throughput, t.global_batch_size / t.step_time, rtol=1e-6)
    assert np.all(np.diff(t.time) >= 0)


@pytest.mark.parametrize("fw", [Framework.MEGATRON, Framework.DEEPSPEED, Framework.PYTORCH])
def test_progress_labels_are_exactly_the_lines_in_progress_format(fw):
    """Precision as well as recall, where the format is unique (tqdm bars also draw evaluation)."""
    for seed in range(3):
        lines, labels, _ = gen(seed, framework=fw, n_lines=800, status="running", red_herrings=True)
        style = labels.spec.rank_prefix
        if fw is Framework.MEGATRON:
            patterns = [MEGATRON]
        elif fw is Framework.DEEPSPEED:
            patterns = [DS_STEP, DS_TIMER, DS_PIPE]
        else:
            patterns = [PYTORCH[labels.variant]]
        matching = {i for i, line in enumerate(lines) if any(p.match(clean(line, style)) for p in patterns)}
        assert matching == set(labels.truth.progress_lines.tolist())


def test_duplicated_progress_lines_come_from_every_rank_with_the_same_numbers():
    lines, labels, _ = gen(5, framework="pytorch", variant="simple", duplicate_progress=True, world_size=4,
                           rank_prefix="torchrun", n_lines=300, status="running")
    t = labels.truth
    first = t.steps[0]
    dup = [lines[i] for i, s in zip(t.progress_lines.tolist(), t.steps.tolist()) if s == first]
    assert len(dup) == 4
    assert {d.split(":", 1)[0] for d in dup} == {"[rank0]", "[rank1]", "[rank2]", "[rank3]"}
    assert len({d.split(":", 1)[1] for d in dup}) == 1


# -------------------------------------------------------------------------------------------------
# Warm-up and co-located slowdown
# -------------------------------------------------------------------------------------------------
def test_first_steps_are_slower_during_warmup():
    _, labels, _ = gen(3, framework="megatron", n_lines=400, status="running", log_interval=1, warmup_steps=20,
                       warmup_factor=4.0, base_step_time=0.5, slowdown_factor=1.0, noise_level=0.2)
    t = labels.truth
    assert t.warmup_steps == 20 and t.slowdown is None
    assert t.step_time[0] == pytest.approx(4 * 0.5, rel=0.25)  # step 1 is warmup_factor times slower
    assert t.steady_step_time == pytest.approx(0.5, rel=0.05)
    steady = t.step_time[t.steps > 20]
    assert np.median(steady) == pytest.approx(0.5, rel=0.05)
    assert t.step_time[t.steps <= 5].min() > 1.5 * np.median(steady)


def test_a_colocated_job_slows_steps_down_from_a_known_time():
    lines, labels, _ = gen(4, framework="deepspeed", variant="basic", n_lines=1200, status="running", log_interval=1,
                           warmup_steps=5, slowdown_factor=2.0, slowdown_at=0.5, base_step_time=0.4, noise_level=0.3)
    t = labels.truth
    sd = t.slowdown
    assert sd is not None and sd.factor == 2.0
    at = int(np.searchsorted(t.progress_lines, sd.at_line))
    assert t.progress_lines[at] == sd.at_line and t.steps[at] == sd.at_step and t.steps[at - 1] < sd.at_step
    before, after = t.step_time[(t.steps > 5) & (t.steps < sd.at_step)], t.step_time[t.steps >= sd.at_step]
    assert np.median(after) / np.median(before) == pytest.approx(2.0, rel=0.1)
    assert t.slowed_step_time / t.steady_step_time == pytest.approx(2.0, rel=0.05)
    assert t.time[at - 1] <= sd.at_time < t.time[at]


# -------------------------------------------------------------------------------------------------
# Taxonomy
# -------------------------------------------------------------------------------------------------
def test_taxonomy_follows_acme_table_3():
    acme = {c: [r for r in reasons_in(c) if r in ACME_REASONS] for c in FailureCategory}
    assert {c: len(v) for c, v in acme.items()} == {
        FailureCategory.INFRASTRUCTURE: 9, FailureCategory.FRAMEWORK: 9, FailureCategory.SCRIPT: 11}
    # logs.md 2.1b's added reason: the host's OOM killer, an operator's matter, never in Acme's counts
    assert REASONS[FailureReason.HOST_OUT_OF_MEMORY].category is FailureCategory.INFRASTRUCTURE
    assert REASONS[FailureReason.HOST_OUT_OF_MEMORY].acme_count == 0
    assert REASONS[FailureReason.NVLINK_ERROR].component is Component.NVLINK
    assert REASONS[FailureReason.ECC_ERROR].component is Component.GPU
    assert REASONS[FailureReason.NCCL_TIMEOUT_ERROR].component is Component.NETWORK
    assert REASONS[FailureReason.S3_STORAGE_ERROR].component is Component.STORAGE
    assert REASONS[FailureReason.NODE_FAILURE].component is Component.NODE
    for r in reasons_in(FailureCategory.FRAMEWORK) + reasons_in(FailureCategory.SCRIPT):
        assert REASONS[r].component is Component.SOFTWARE
    # priors are counts, not GPU-time shares: ConnectionError (147 failures, 3.4% of GPU time) dominates
    w = reason_weights(FailureCategory.INFRASTRUCTURE)
    assert sum(w.values()) == pytest.approx(1.0) and max(w, key=w.get) is FailureReason.CONNECTION_ERROR


# -------------------------------------------------------------------------------------------------
# Failures: one root cause, its real error text at the labelled line, then a cascade
# -------------------------------------------------------------------------------------------------
REAL_TEXT = {  # reason -> what the real stacks print (logs.md §2.3); any variant may be chosen
    FailureReason.NVLINK_ERROR: r"NVRM: Xid \(PCI:0000:[0-9a-f]{2}:00\): 74, |an uncorrectable NVLink error was detected during the execution",
    FailureReason.CUDA_ERROR: r"CUDA error: (an illegal memory access was encountered|unspecified launch failure|CUBLAS_STATUS_EXECUTION_FAILED)|Xid .*: 79, .*GPU has fallen off the bus",
    FailureReason.ECC_ERROR: r"CUDA error: uncorrectable ECC error encountered|NVRM: Xid .*: (48|94|95), ",
    FailureReason.NODE_FAILURE: r"error: Node failure on |DUE TO NODE FAILURE",
    FailureReason.NETWORK_ERROR: r"NET/IB : Got completion from peer \d+\.\d+\.\d+\.\d+<\d+> with error \d+, opcode \d+, len \d+, vendor err \d+",
    FailureReason.CONNECTION_ERROR: r"requests\.exceptions\.ConnectionError|The client socket has timed out after \d+s|Connection closed by peer",
    FailureReason.S3_STORAGE_ERROR: r"botocore\.exceptions\.(ReadTimeoutError|ClientError)|\[Errno (5|28)\]",
    FailureReason.NCCL_TIMEOUT_ERROR: r"\[Rank \d+\] Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=\d+, OpType=\w+, (NumelIn=\d+, NumelOut=\d+, )?Timeout\(ms\)=(600000|1800000)\) ran for \d+ milliseconds before timing out\.",
    FailureReason.NCCL_REMOTE_ERROR: r"remote process exited or there was a network error, NCCL version 2\.\d+\.\d+",
    FailureReason.DATALOADER_KILLED: r"RuntimeError: DataLoader worker \(pid\(?s?\)? [\d, ]+\) (is killed by signal: (Killed|Bus error)|exited unexpectedly)|Unexpected bus error encountered in worker",
    FailureReason.OUT_OF_MEMORY_ERROR: r"^(torch\.OutOfMemoryError|torch\.cuda\.OutOfMemoryError|RuntimeError): CUDA out of memory\. Tried to allocate [\d.]+ [GM]iB",
    FailureReason.ATTRIBUTE_ERROR: r"^AttributeError: ",
    FailureReason.RUNTIME_ERROR: r"^RuntimeError: ",
    FailureReason.ASSERTION_ERROR: r"^AssertionError: ",
    FailureReason.VALUE_ERROR: r"^ValueError: ",
    FailureReason.ZERO_DIVISION_ERROR: r"^ZeroDivisionError: (float )?division by zero",
    FailureReason.MODEL_LOADING_ERROR: r"Error\(s\) in loading state_dict for|_pickle\.UnpicklingError: invalid load key|SafetensorError",
    FailureReason.DATASET_LOADING_ERROR: r"pyarrow\.lib\.ArrowInvalid|datasets\.exceptions\.DataFilesNotFoundError",
    FailureReason.FILE_NOT_FOUND_ERROR: r"^FileNotFoundError: \[Errno 2\] No such file or directory: '",
    FailureReason.TYPE_ERROR: r"^TypeError: ",
    FailureReason.OS_ERROR: r"^OSError: ",
    FailureReason.KEY_ERROR: r"^KeyError: '",
    FailureReason.IMPORT_ERROR: r"^(ModuleNotFoundError: No module named|ImportError: cannot import name)",
    FailureReason.INDEX_ERROR: r"^IndexError: ",
    FailureReason.NAME_ERROR: r"^NameError: name '\w+' is not defined",
    FailureReason.SYNTAX_ERROR: r"^(SyntaxError|IndentationError): ",
    FailureReason.PERMISSION_ERROR: r"^PermissionError: \[Errno 13\] Permission denied: '",
    FailureReason.CALLED_PROCESS_ERROR: r"^subprocess\.CalledProcessError: Command '\[.*\]' returned non-zero exit status \d+\.",
    FailureReason.ARGUMENT_ERROR: r"^\S+\.py: error: |^argparse\.ArgumentError: ",
}


@pytest.mark.parametrize("reason", list(ACME_REASONS), ids=str)
def test_failed_log_has_one_root_cause_at_the_labelled_line(reason):
    for seed in range(3):
        lines, labels, _ = gen(seed, failure_reason=reason, n_lines=[250, 400, 1500][seed], nccl_debug=seed != 1)
        f = labels.failure
        assert labels.status is LogStatus.FAILED and f is not None and f.reason is reason
        # the taxonomy: category and component follow from the reason
        assert f.category is category_of(reason) and f.component in ALLOWED_COMPONENTS[reason]
        # the first root-cause line holds the real error text and its signature; no earlier line does
        first = clean(lines[f.first_line], labels.spec.rank_prefix)
        assert re.search(REAL_TEXT[reason], first), first
        assert f.signature in lines[f.first_line]
        assert not any(f.signature in line for line in lines[: f.first_line])
        # structure: block, a few normal-looking lines, then the cascade, inside the file
        assert f.block_start <= f.first_line <= f.block_end < f.cascade_start < len(lines)
        assert 1 <= f.cascade_start - f.block_end - 1 <= 3
        # progress stops before the failure; the failure happens after the last progress line
        t = labels.truth
        if f.phase == "init":
            assert len(t.progress_lines) == 0 and f.step is None
        else:
            assert t.progress_lines[-1] < f.block_start and f.step == t.steps_in_log
            assert f.time >= t.time[-1]


CASCADE_EVIDENCE = re.compile(
    r"ChildFailedError|Root Cause \(first observed failure\)|closing signal SIGTERM|sigkill_handler|srun: error|"
    r"mpirun detected|Watchdog caught collective operation timeout|ncclRemoteError|wandb: |Exception ignored in|"
    r"Traceback|Error")


def test_every_failed_log_carries_a_cascade_after_the_root_cause():
    for seed in range(40):
        lines, labels, _ = gen(seed, status="failed", n_lines=300 + 37 * seed)
        f = labels.failure
        cascade = lines[f.cascade_start:]
        assert cascade and any(CASCADE_EVIDENCE.search(line) for line in cascade), (f.reason, cascade[:5])


def test_torchrun_names_the_culprit_in_its_root_cause_block():
    lines, labels, _ = gen(2, framework="megatron", failure_reason="OutOfMemoryError", launcher="torchrun",
                           world_size=16, visible_ranks=8, n_lines=2000)
    f = labels.failure
    tail = lines[f.cascade_start:]
    i = tail.index("Root Cause (first observed failure):")
    block = "\n".join(tail[i:i + 8])
    assert f"rank      : {f.rank} (local_rank: {f.rank % 8})" in block and f"host      : {f.host}" in block
    assert any(line.startswith("torch.distributed.elastic.multiprocessing.errors.ChildFailedError") for line in tail)


def test_an_nccl_timeout_cascades_to_other_ranks_and_sometimes_to_an_oom():
    seen_oom = False
    for seed in range(12):
        lines, labels, _ = gen(seed, failure_reason="NCCLTimeoutError", failure_phase="train", world_size=16,
                               visible_ranks=8, n_lines=3000)
        f = labels.failure
        later = lines[f.first_line + 1:]
        ranks = {m.group(1) for line in later for m in [re.search(r"\[Rank (\d+)\] Watchdog caught", line)] if m}
        assert ranks - {str(f.rank)}, "other ranks time out too"
        assert f.time - labels.truth.time[-1] >= 600  # the watchdog fires after the timeout
        seen_oom |= any("CUDA out of memory" in line for line in later)
    assert seen_oom  # NCCL#1284: an OOM printed after a timeout is a cascade, not the cause


def test_deterministic_bugs_fail_on_every_rank_and_the_first_one_is_labelled():
    lines, labels, _ = gen(1, failure_reason="ImportError", world_size=8, launcher="torchrun", rank_prefix="torchrun",
                           n_lines=600)
    f = labels.failure
    hits = [i for i, line in enumerate(lines) if f.signature in line]
    assert hits[0] == f.first_line and len(hits) >= 2
    assert len({lines[i].split(":", 1)[0] for i in hits}) >= 2  # printed by different ranks


def test_failure_category_mix_follows_the_weights():
    cats = [generate_log(LogSpec(n_lines=100, status="failed"), s)[1].failure.category for s in range(60)]
    share = {c: cats.count(c) / len(cats) for c in FailureCategory}
    assert 0.1 <= share[FailureCategory.INFRASTRUCTURE] <= 0.45  # default 25% (the paper's 75 of 300)


# -------------------------------------------------------------------------------------------------
# Noise switches
# -------------------------------------------------------------------------------------------------
def test_noise_switches():
    on = dict(ansi=True, carriage_returns=True, nccl_debug=True, rank_prefix="torchrun", world_size=8, launcher="torchrun")
    lines, labels, text = gen(9, framework="hf_trainer", n_lines=1500, status="running", noise_level=0.6, **on)
    assert "\x1b[" in text
    assert all("\r" in lines[i] for i in labels.truth.progress_lines.tolist())
    assert sum(" NCCL INFO " in line for line in lines) > 20
    assert sum(line.startswith("[rank") for line in lines) > 0.5 * len(lines)
    warning = next(clean(line, "torchrun") for line in lines if "UserWarning" in line)
    assert sum(clean(line, "torchrun") == warning for line in lines) >= 8  # every rank repeats it

    off = dict(ansi=False, carriage_returns=False, nccl_debug=False, rank_prefix="none")
    lines, labels, text = gen(9, framework="hf_trainer", n_lines=1500, status="running", noise_level=0.6, **off)
    assert "\x1b[" not in text and "\r" not in text and " NCCL INFO " not in text


def test_noise_level_sets_the_share_of_non_progress_lines():
    for level in (0.1, 0.5, 0.95):
        _, labels, _ = gen(2, framework="megatron", n_lines=4000, status="running", noise_level=level)
        assert 1 - len(labels.truth.progress_lines) / 4000 == pytest.approx(level, abs=0.08)


# -------------------------------------------------------------------------------------------------
# Large logs stream to disk (speed is measured in bench, not asserted here)
# -------------------------------------------------------------------------------------------------
def test_a_200k_line_log_streams_to_disk_in_bounded_chunks(tmp_path, monkeypatch):
    writes: list[int] = []
    real_flush = generator._Writer.flush

    def spy(self):
        writes.append(len(self.buf))
        real_flush(self)

    monkeypatch.setattr(generator._Writer, "flush", spy)
    out = tmp_path / "big.log"
    path, labels = generate_log(LogSpec(framework="pytorch", variant="simple", n_lines=200_000, status="running",
                                        noise_level=0.5, nccl_debug=True), 123, out=out)
    assert path == out and labels.path == str(out)
    size = out.stat().st_size
    assert size == labels.n_bytes > 10_000_000
    with open(out, "rb") as fh:
        assert sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b"")) == 200_000 == labels.n_lines
    # written as it is generated: several writes, none holding more than a bounded buffer of lines
    assert sum(writes) == 200_000 and len([w for w in writes if w]) >= 3
    assert max(writes) <= generator.WRITE_LINES + generator.CHUNK_EVENTS * 4
    assert len(labels.truth.progress_lines) == pytest.approx(100_000, rel=0.05)


# -------------------------------------------------------------------------------------------------
# Corpus writer and reader
# -------------------------------------------------------------------------------------------------
def test_generate_corpus_writes_logs_and_labels(tmp_path):
    calls = []
    manifest = generate_corpus(tmp_path / "c", n=8, seed=5, min_lines=100, max_lines=600, failed_fraction=0.5,
                               progress=lambda done, total: calls.append((done, total)))
    assert calls == [(i, 8) for i in range(1, 9)]
    labels = load_labels(tmp_path / "c")
    assert [lab.id for lab in labels] == [f"log-{i:05d}" for i in range(8)] == [e.id for e in manifest.entries]
    for lab in labels:
        text = (tmp_path / "c" / lab.path).read_bytes().decode("utf-8")  # not read_text: it turns \r into \n
        assert text.count("\n") == lab.n_lines and 100 <= lab.n_lines <= 600
        assert isinstance(lab.truth.step_time, np.ndarray)
        assert (lab.failure is not None) == (lab.status is LogStatus.FAILED)
        if lab.failure:
            assert lab.failure.signature in text.split("\n")[lab.failure.first_line]
    assert load_manifest(tmp_path / "c").n_lines_total == sum(lab.n_lines for lab in labels)
    assert {e.status for e in manifest.entries} >= {LogStatus.FAILED}


def test_corpus_is_deterministic_and_log_i_does_not_depend_on_n(tmp_path):
    generate_corpus(tmp_path / "a", n=4, seed=9, max_lines=400, frameworks=["lightning", "deepspeed"])
    generate_corpus(tmp_path / "b", n=2, seed=9, max_lines=400, frameworks=["lightning", "deepspeed"])
    a = (tmp_path / "a" / "labels.jsonl").read_text().splitlines()
    b = (tmp_path / "b" / "labels.jsonl").read_text().splitlines()
    assert a[:2] == b  # log i depends only on (seed, i)
    assert (tmp_path / "a/logs/log-00001.log").read_bytes() == (tmp_path / "b/logs/log-00001.log").read_bytes()
    assert {lab.framework for lab in load_labels(tmp_path / "a")} <= {Framework.LIGHTNING, Framework.DEEPSPEED}


def test_all_failed_corpus_and_labels_round_trip(tmp_path):
    generate_corpus(tmp_path, n=5, seed=1, max_lines=300, failed_fraction=1.0)
    for lab in load_labels(tmp_path):
        assert lab.status is LogStatus.FAILED
        again = LogLabels.model_validate_json(lab.model_dump_json())
        assert np.array_equal(again.truth.progress_lines, lab.truth.progress_lines)
        assert np.array_equal(again.truth.step_time, lab.truth.step_time)


def test_labels_reject_inconsistent_failures():
    _, labels, _ = gen(0, failure_reason="OutOfMemoryError", n_lines=200)
    data = labels.failure.model_dump()
    with pytest.raises(ValueError):
        type(labels.failure).model_validate(data | {"category": "infrastructure"})
    with pytest.raises(ValueError):
        type(labels.failure).model_validate(data | {"component": "network"})
