"""Spec of the failure benchmark's hard cases and error-text pools (`schedmate.synthetic.logs`:
`pools.py`, `hard.py`, `shapes.py`).

Read top to bottom: the two pools are disjoint and every template the builders print is in
exactly one; a log of one pool prints only that pool's texts; each hard case has the shape real
clusters produce (a hang's root cause thousands of lines before its watchdog timeouts, a flood
from many ranks, a restart whose earlier failure is not the label, ...) while the labels stay
exact; the shapes tests ask for come from the same generator.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

from schedmate.synthetic.logs import (
    HARD_MIX,
    TEMPLATES,
    FailurePhase,
    FailureReason,
    Framework,
    HardCase,
    Launcher,
    LogLabels,
    LogSpec,
    LogStatus,
    Pool,
    RankPrefix,
    generate_corpus,
    generate_log,
    generate_training_log,
    load_labels,
    load_manifest,
    make_clean_log,
    make_failed_log,
    template_pool,
)
from schedmate.synthetic.logs.context import JobContext
from schedmate.synthetic.logs.failures import BUILDERS, FailureTiming, Kit
from schedmate.synthetic.logs.hard import DECOYS, WARN_WRAPPERS
from schedmate.taxonomy import ACME_REASONS

WATCHDOG = "Watchdog caught collective operation timeout"


def gen(seed: int = 0, **spec) -> tuple[list[str], LogLabels]:
    text, labels = generate_log(LogSpec(**spec), seed)
    assert isinstance(text, str) and text.endswith("\n")
    return text.split("\n")[:-1], labels


def assert_exact(lines: list[str], labels: LogLabels) -> None:
    """The labels hold: exact size, the signature first printed at first_line, no progress line
    after the root cause, earlier attempts before it."""
    f = labels.failure
    assert f is not None and len(lines) == labels.n_lines
    assert f.signature in lines[f.first_line]
    assert not any(f.signature in line for line in lines[: f.first_line])
    assert all(p < f.block_start for p in labels.truth.progress_lines.tolist())
    assert all(e < f.block_start for e in f.earlier_lines)


# -------------------------------------------------------------------------------------------------
# Pools
# -------------------------------------------------------------------------------------------------
def test_every_reason_has_templates_in_both_pools_and_no_template_in_two():
    assert set(TEMPLATES) == set(ACME_REASONS)
    for reason, (dev, held) in TEMPLATES.items():
        assert dev and held, reason
        assert not dev & held, reason


def test_every_template_a_builder_prints_is_in_exactly_one_pool():
    seen: dict[FailureReason, set[str]] = {r: set() for r in ACME_REASONS}
    for reason in ACME_REASONS:
        for seed in range(40):
            rng = np.random.default_rng(seed)
            phase = list(FailurePhase)[seed % 2]
            spec = LogSpec(failure_reason=reason, failure_phase=phase, framework=list(Framework)[seed % 5],
                           n_lines=3000).resolve(rng)
            ctx = JobContext.build(spec, rng)
            kit = Kit(ctx, spec, rng, phase, FailureTiming(100.0, 5 if phase is FailurePhase.TRAIN else None, 100, 10.0), 1000)
            root = BUILDERS[reason](kit)
            template_pool(reason, root.variant)  # raises for a template in no pool
            seen[reason].add(root.variant)
    for reason, (dev, held) in TEMPLATES.items():
        assert seen[reason] == dev | held, reason  # and the table lists nothing the builders never print


def test_decoys_and_warning_wrappers_are_split_too():
    assert not set(DECOYS[Pool.DEV]) & set(DECOYS[Pool.HELDOUT])
    assert not set(WARN_WRAPPERS[Pool.DEV]) & set(WARN_WRAPPERS[Pool.HELDOUT])


@pytest.mark.parametrize("pool", list(Pool))
def test_a_log_of_one_pool_prints_only_that_pools_templates(pool):
    for i, reason in enumerate(ACME_REASONS):  # the generator draws Acme's reasons only
        lines, labels = gen(i, failure_reason=reason, n_lines=400, pool=pool)
        f = labels.failure
        assert f is not None and f.pool is pool and labels.spec.pool is pool
        assert template_pool(reason, f.variant) is pool
        assert_exact(lines, labels)


def test_ad_hoc_logs_default_to_the_dev_pool_and_no_hard_cases():
    _, labels = gen(3, status=LogStatus.FAILED, n_lines=500)
    assert labels.spec.pool is Pool.DEV and labels.spec.hard == () and labels.failure.hard == []


# -------------------------------------------------------------------------------------------------
# Hard cases
# -------------------------------------------------------------------------------------------------
HANG_SPEC = dict(n_lines=8000, failure_reason=FailureReason.KEY_ERROR, failure_phase=FailurePhase.TRAIN, world_size=16,
                 launcher=Launcher.SRUN, rank_prefix=RankPrefix.SRUN, hard=(HardCase.HANG,))


def test_a_hang_ends_in_watchdog_timeouts_thousands_of_lines_after_the_root_cause():
    for seed in range(3):
        lines, labels = gen(seed, **HANG_SPEC)
        f = labels.failure
        assert HardCase.HANG in f.hard
        assert_exact(lines, labels)
        assert len(lines) - f.first_line > 500  # beyond what a last-500 reader sees
        quiet = lines[f.block_end + 1 : f.cascade_start]
        assert len(quiet) >= 600 and not any(WATCHDOG in x for x in quiet)
        assert not any("Traceback (most recent call last)" in x for x in quiet)
        timeouts = [i for i, x in enumerate(lines) if WATCHDOG in x]
        assert timeouts and min(timeouts) >= f.cascade_start
        ranks = {int(m) for x in lines[f.cascade_start:] for m in re.findall(r"\[Rank (\d+)\] Watchdog", x)}
        assert ranks and f.rank not in ranks  # peers time out; the culprit raised and hangs


def test_a_flood_buries_the_root_cause_under_cascade_lines_from_many_ranks():
    lines, labels = gen(1, n_lines=6000, failure_reason=FailureReason.ECC_ERROR, failure_phase=FailurePhase.TRAIN,
                        hard=(HardCase.FLOOD,))
    f = labels.failure
    assert HardCase.FLOOD in f.hard and labels.spec.world_size >= 64
    assert_exact(lines, labels)
    cascade = lines[f.cascade_start:]
    assert len(cascade) >= 1000
    ranks = {int(m) for x in cascade for m in re.findall(r"\[(?:PG 0 )?Rank (\d+)\]", x)}
    assert len(ranks - {f.rank}) >= 10  # peers' blocks (the culprit may print its own watchdog line too)
    tail = lines[-500:]  # the last 500 lines are teardown and peers' errors, not the ECC error
    assert not any("ECC" in x for x in tail)


def test_other_rank_the_launcher_reports_a_peer_not_the_culprit():
    hits = 0
    for seed in range(6):
        lines, labels = gen(seed, n_lines=1500, failure_reason=FailureReason.OUT_OF_MEMORY_ERROR, failure_phase=FailurePhase.TRAIN,
                            world_size=8, launcher=Launcher.TORCHRUN, rank_prefix=RankPrefix.TORCHRUN, hard=(HardCase.OTHER_RANK,))
        f = labels.failure
        assert HardCase.OTHER_RANK in f.hard
        assert_exact(lines, labels)
        i = next(i for i, x in enumerate(lines) if "Root Cause (first observed failure)" in x)
        reported = int(re.search(r"rank\s+:\s+(\d+)", "\n".join(lines[i : i + 8])).group(1))
        hits += reported != f.rank
    assert hits == 6


@pytest.mark.parametrize("pool", list(Pool))
def test_decoys_before_the_root_cause_come_from_the_logs_pool(pool):
    own = {"wandb: ERROR Error while calling W&B API", "failed to bind to [::]:29500", "Retrying (Retry(total=4",
           "Gradient overflow.  Skipping step", "checkpoint upload failed (attempt 1/5)"}
    other = {"to perform barrier as devices used by this process are currently unknown", "huggingface/tokenizers: The current process",
             "from LD_PRELOAD cannot be preloaded", "Failed to open libibverbs.so", "This DataLoader will create 16 worker processes",
             "TensorBoard could not bind to port", "samples failed to decode"}
    if pool is Pool.HELDOUT:
        own, other = other, own
    found: Counter[str] = Counter()
    for seed in range(8):
        lines, labels = gen(seed, n_lines=3000, failure_reason=FailureReason.KEY_ERROR, pool=pool, hard=(HardCase.DECOYS,),
                            red_herrings=False)
        f = labels.failure
        assert HardCase.DECOYS in f.hard
        assert_exact(lines, labels)
        text = "\n".join(lines)
        assert not any(m in text for m in other)
        found.update(m for m in own if m in "\n".join(lines[: f.block_start]))
    assert sum(found.values()) >= 8  # several decoys, before the root cause


def test_a_restart_leaves_an_earlier_failure_that_is_not_the_label():
    n = 0
    for seed in range(8):
        lines, labels = gen(seed, n_lines=6000, failure_reason=FailureReason.OUT_OF_MEMORY_ERROR,
                            failure_phase=FailurePhase.TRAIN, world_size=8, hard=(HardCase.RESTART,))
        f = labels.failure
        if HardCase.RESTART not in f.hard:
            continue
        n += 1
        assert_exact(lines, labels)
        (earlier,) = f.earlier_lines
        assert re.search(r"Error|error|Xid|FAILED|failed", lines[earlier]), lines[earlier]
        assert f.signature not in lines[earlier]
        resumed = [p for p in labels.truth.progress_lines.tolist() if earlier < p < f.block_start]
        assert resumed  # training went on after the restart, then failed for another reason
        assert any("restart" in x for x in lines[earlier : resumed[0]])
    assert n >= 6


def test_a_root_cause_printed_at_warning_level_is_one_warning_line():
    for seed in range(4):
        lines, labels = gen(seed, n_lines=4000, failure_reason=FailureReason.CUDA_ERROR, failure_phase=FailurePhase.TRAIN,
                            world_size=8, hard=(HardCase.WARN_LEVEL,))
        f = labels.failure
        assert HardCase.WARN_LEVEL in f.hard
        assert_exact(lines, labels)
        assert f.block_start == f.first_line == f.block_end
        assert re.search(r"\bW\d{4}|\[W |WARNING|NCCL WARN|Warning:", lines[f.first_line]), lines[f.first_line]
        assert any(WATCHDOG in x for x in lines[f.cascade_start:])  # the job dies later


def test_the_benchmark_mix_puts_most_root_causes_beyond_the_last_500_lines_with_exact_labels(tmp_path):
    generate_corpus(tmp_path, 24, 5, min_lines=2000, max_lines=8000, failed_fraction=1.0)
    labels = load_labels(tmp_path)
    far = 0
    cases: Counter[str] = Counter()
    for lab in labels:
        lines = (tmp_path / lab.path).read_bytes().decode().split("\n")[:-1]
        assert_exact(lines, lab)
        far += lab.n_lines - lab.failure.first_line > 500
        cases.update(str(h) for h in lab.failure.hard)
    assert far >= len(labels) // 2
    assert cases["flood"] >= len(labels) // 2 and {lab.failure.pool for lab in labels} == set(Pool)
    assert load_manifest(tmp_path).settings["pool"] == "both"
    assert HARD_MIX[HardCase.FLOOD] > max(v for k, v in HARD_MIX.items() if k is not HardCase.FLOOD)


def test_a_corpus_of_one_pool_and_without_hard_cases(tmp_path):
    generate_corpus(tmp_path, 6, 2, min_lines=300, max_lines=900, failed_fraction=1.0, pool="heldout", hard_mix={})
    labels = load_labels(tmp_path)
    assert all(lab.failure.pool is Pool.HELDOUT and lab.failure.hard == [] for lab in labels)
    with pytest.raises(ValueError):
        generate_corpus(tmp_path, 1, 2, pool="test")


# -------------------------------------------------------------------------------------------------
# Shapes for the agents' tests, from the same generator
# -------------------------------------------------------------------------------------------------
def test_make_failed_log_puts_the_root_cause_about_fault_at_into_the_log():
    log = make_failed_log(3_000, seed=11, reason=FailureReason.NVLINK_ERROR, fault_at=0.5, ranks=64, cascade_gap=30)
    assert abs(len(log.lines) - 3_000) <= 5 and abs(log.root_line / len(log.lines) - 0.5) < 0.1
    assert log.reason is FailureReason.NVLINK_ERROR and log.labels.failure.pool is Pool.DEV
    assert log.root_line == log.labels.failure.block_start <= log.first_line
    assert_exact(log.lines, log.labels)
    plain = make_failed_log(2_000, seed=2, reason=FailureReason.KEY_ERROR, ranks=8)
    assert len(plain.lines) - plain.root_line < 500  # no fault_at: the usual short teardown


def test_training_and_clean_logs_have_no_failure():
    lines = generate_training_log(700, seed=1, ranks=4, style="mpi")
    assert len(lines) == 700 and lines[-1].startswith("[1,")
    clean = make_clean_log(900, seed=1)
    assert len(clean) == 900 and not any("Traceback" in x for x in clean)
    with pytest.raises(ValueError):
        generate_training_log(10, style="nope")
