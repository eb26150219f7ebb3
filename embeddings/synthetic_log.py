"""A deterministic, noisy multi-rank training log for benchmarks and tests.

Real logs cannot be shipped with the repository, so this generator reproduces the shapes that
matter for cost and robustness: a startup burst of NCCL chatter from every rank, Megatron /
DeepSpeed / HF-Trainer metric lines with changing numbers, tqdm `\\r` redraws, ANSI colours,
launcher rank prefixes, warnings repeated by every rank, occasional free-text sample prints
(each a new template: the expensive case), a binary junk line, and a crash with a traceback.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

_WORDS = (
    "the model learns a cat sat on mat river bank light dark quantum gradient token stream "
    "mountain ocean castle dragon cloud forest engine signal memory garden winter summer"
).split()

_WARNINGS = (
    "/opt/conda/lib/python3.10/site-packages/torch/utils/checkpoint.py:429: UserWarning: "
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly.",
    "[W ProcessGroupNCCL.cpp:1856] Warning: TORCH_NCCL_AVOID_RECORD_STREAMS=1 has no effect.",
    "FutureWarning: `torch.cuda.amp.GradScaler(args...)` is deprecated. "
    "Please use `torch.amp.GradScaler('cuda', args...)` instead.",
)


def _prefix(rng: random.Random, style: str, rank: int) -> str:
    if style == "torchrun":
        return f"[rank{rank}]:"
    if style == "mpi":
        return f"[1,{rank}]<stdout>:"
    return f"10.0.0.{rank // 8 + 1}: "


def _startup(rng: random.Random, ranks: int, style: str) -> Iterator[str]:
    for rank in range(ranks):
        p = _prefix(rng, style, rank)
        host, pid = f"gpu-node-{rank // 8:02d}", 10_000 + rank
        yield f"{p}{host}:{pid}:{pid} [{rank % 8}] NCCL INFO Bootstrap : Using eth0:10.0.0.{rank // 8 + 1}<0>"
        yield f"{p}{host}:{pid}:{pid} [{rank % 8}] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.1.0.{rank}<0>"
        for channel in range(4):
            yield f"{p}{host}:{pid}:{pid + 40} [{rank % 8}] NCCL INFO Channel {channel:02d}/04 :    0   1   2   3   4   5   6   7"
        yield (
            f"{p}{host}:{pid}:{pid + 40} [{rank % 8}] NCCL INFO comm 0x{rng.getrandbits(40):x} rank {rank} "
            f"nranks {ranks} cudaDev {rank % 8} busId {rng.getrandbits(16):x}000 - Init COMPLETE"
        )
    yield "------------------------ arguments ------------------------"
    for name, value in (("micro_batch_size", 4), ("global_batch_size", 1024), ("lr", 3e-4), ("seq_length", 4096)):
        yield f"  {name} {'.' * (40 - len(name))} {value}"
    yield f"using world size: {ranks}, data-parallel size: {ranks // 4}, tensor-model-parallel size: 4"


def _step_lines(rng: random.Random, step: int, total: int, style: str) -> Iterator[str]:
    loss = 2.0 + 8.0 / (1 + step / 50) + rng.random() * 0.05
    lr = 3e-4 * min(1.0, step / 100)
    p0 = _prefix(rng, style, 0)
    yield (
        f"{p0} iteration {step:8d}/{total:8d} | consumed samples: {step * 1024:12d} | elapsed time per "
        f"iteration (ms): {500 + rng.random() * 50:.1f} | learning rate: {lr:.6E} | global batch size: "
        f"{1024:5d} | lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: {rng.random() + 0.2:.3f} |"
    )
    yield (
        f"{p0}[2024-05-01 12:{step // 60 % 60:02d}:{step % 60:02d},{rng.randrange(1000):03d}] [INFO] "
        f"[logging.py:96:log_dist] [Rank 0] step={step}, skipped=0, lr=[{lr:.6g}], mom=[(0.9, 0.95)]"
    )
    yield f"{p0}{{'loss': {loss:.4f}, 'grad_norm': {rng.random():.3f}, 'learning_rate': {lr:.3e}, 'epoch': {step / total:.2f}}}"
    # A tqdm bar redrawn a few times on one physical line, in colour.
    redraws = "".join(
        f"\r\x1b[32m{pct:3d}%\x1b[0m|{'█' * (pct // 10):10s}| {pct}/100 [00:{pct % 60:02d}<00:30, {rng.random() * 9 + 1:.2f}it/s]"
        for pct in sorted(rng.sample(range(1, 100), 4))
    )
    yield f"{p0}{redraws}"


def generate_training_log(n_lines: int, seed: int = 0, ranks: int = 16, style: str = "torchrun") -> list[str]:
    """Exactly `n_lines` raw lines (no trailing newlines; `\\r` redraws kept inside lines)."""
    rng = random.Random(seed)
    out: list[str] = list(_startup(rng, ranks, style))
    total = max(1, n_lines // 5)
    step = 0
    while len(out) < n_lines - 12:
        step += 1
        out.extend(_step_lines(rng, step, total, style))
        if step % 200 == 0:  # every rank repeats the same warning
            warning = _WARNINGS[(step // 200) % len(_WARNINGS)]
            out.extend(f"{_prefix(rng, style, r)}{warning}" for r in range(ranks))
        if step % 500 == 0:  # free text: a new template each time
            words = " ".join(rng.choice(_WORDS) for _ in range(12))
            out.append(f"Sample {step}: {words}")
        if step % 300 == 0:
            out.append(f"\x1b[1;34msaving checkpoint at iteration {step:8d} to /ckpt/iter_{step:07d}\x1b[0m")
        if step == 777:
            out.append("\x00\x01\x02\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00>\x00")
    out = out[: n_lines - 12]
    crash_rank = rng.randrange(ranks)
    p = _prefix(rng, style, crash_rank)
    out += [
        f"{p}Traceback (most recent call last):",
        f'{p}  File "/workspace/Megatron-LM/pretrain_gpt.py", line 236, in <module>',
        f"{p}    pretrain(train_valid_test_datasets_provider, model_provider,",
        f'{p}  File "/workspace/Megatron-LM/megatron/training.py", line 720, in train_step',
        f"{p}    losses_reduced = forward_backward_func(",
        f"{p}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU {crash_rank % 8} "
        "has a total capacity of 79.15 GiB of which 1.02 GiB is free.",
        f"[E ProcessGroupNCCL.cpp:475] [Rank {(crash_rank + 1) % ranks}] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=12345, OpType=ALLREDUCE, NumelIn=1048576, Timeout(ms)=1800000) ran for "
        "1800512 milliseconds before timing out.",
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 12345)",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
        "==================================================",
        f"srun: error: gpu-node-{crash_rank // 8:02d}: task {crash_rank}: Exited with exit code 1",
        "",
    ]
    return out
