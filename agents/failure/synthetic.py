"""Small deterministic failed-job logs with a known root cause, for tests and `bench_locator`.

Not the evaluation corpus (that is `synthetic.logs`); this only makes the shapes the Failure
Handler must survive: a noisy multi-rank training log (`embeddings.synthetic_log`), benign
error-looking lines before the fault (warnings, retries, `errors=0` counters, metric names with
"error", rendezvous socket warnings), the fault block with the real signatures of logs.md §2.3,
then a cascade (NCCL watchdog timeouts on other ranks, `ChildFailedError`, `srun: error`) with
progress lines of surviving ranks interleaved. `root_line` is the 0-based index of the first
line of the fault block.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from schedmate.embeddings.synthetic_log import generate_training_log
from schedmate.taxonomy import Component, FailureCategory, FailureReason, category_of, component_of

R = FailureReason


def _tb(rng: random.Random, exception: str, frames: int | None = None) -> list[str]:
    """A Python traceback ending in `exception`."""
    files = [
        ("/workspace/train.py", "main", "trainer.train()"),
        ("/opt/conda/lib/python3.10/site-packages/transformers/trainer.py", "train", "return inner_training_loop("),
        ("/workspace/megatron/training.py", "train_step", "losses_reduced = forward_backward_func("),
        ("/workspace/model/gpt.py", "forward", "hidden = self.decoder(hidden, attention_mask)"),
        ("/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", "_call_impl", "return forward_call(*args, **kwargs)"),
    ]
    n = frames if frames is not None else rng.randint(2, 4)
    out = ["Traceback (most recent call last):"]
    for path, func, code in files[:n]:
        out += [f'  File "{path}", line {rng.randint(20, 900)}, in {func}', f"    {code}"]
    return [*out, exception]


def _fault_block(rng: random.Random, reason: FailureReason, node: str, rank: int) -> list[str]:
    """The first lines of the failure: what the culprit rank (or the kernel / Slurm) prints."""
    bus = f"{rng.randrange(16, 250):02x}"
    pid = rng.randrange(1000, 60000)
    seq = rng.randrange(1000, 90000)
    if reason is R.NVLINK_ERROR:
        return [
            f"NVRM: Xid (PCI:0000:{bus}:00): 74, pid={pid}, name=python, NVLink: fatal error detected on link {rng.randrange(12)}(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)",
            *_tb(rng, "RuntimeError: CUDA error: an uncorrectable NVLink error was detected during the execution"),
        ]
    if reason is R.CUDA_ERROR:
        if rng.random() < 0.5:
            return [f"NVRM: Xid (PCI:0000:{bus}:00): 79, pid={pid}, GPU has fallen off the bus.",
                    *_tb(rng, "RuntimeError: CUDA error: unspecified launch failure")]  # fmt: skip
        return _tb(rng, "RuntimeError: CUDA error: an illegal memory access was encountered")
    if reason is R.ECC_ERROR:
        if rng.random() < 0.5:
            return [f"NVRM: Xid (PCI:0000:{bus}:00): 48, pid={pid}, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.",
                    *_tb(rng, "RuntimeError: CUDA error: uncorrectable ECC error encountered")]  # fmt: skip
        return _tb(rng, "torch.AcceleratorError: CUDA error: uncorrectable ECC error encountered")
    if reason is R.NODE_FAILURE:
        return [
            f"slurmstepd: error: *** JOB {seq} ON {node} CANCELLED AT 2024-05-01T12:{rng.randrange(60):02d}:{rng.randrange(60):02d} DUE TO NODE FAILURE ***",
            f"srun: error: Node failure on {node}",
        ]
    if reason is R.NETWORK_ERROR:
        return [
            f"{node}:{pid}:{pid + 61} [{rank % 8}] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.1.0.{rng.randrange(2, 250)}<53542> with error 12, opcode 0, len 0, vendor err 129 (Recv)",
            *_tb(rng, "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1275, unhandled system error, NCCL version 2.18.1"),
        ]
    if reason is R.CONNECTION_ERROR:
        return _tb(rng, "ConnectionResetError: [Errno 104] Connection reset by peer")
    if reason is R.S3_STORAGE_ERROR:
        if rng.random() < 0.5:
            return _tb(rng, "botocore.exceptions.ClientError: An error occurred (SlowDown) when calling the GetObject operation (reached max retries: 4): Please reduce your request rate.")
        return _tb(rng, f"OSError: [Errno 5] Input/output error: '/mnt/lustre/ckpt/iter_{seq:07d}/model_optim_rng.pt'")
    if reason is R.NCCL_TIMEOUT_ERROR:
        return [
            f"[E ProcessGroupNCCL.cpp:475] [Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.",
            f"[PG 1 Rank {rank}] Exception (either an error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL work: {seq + 2}, last completed NCCL work: {seq - 1}.",
        ]
    if reason is R.NCCL_REMOTE_ERROR:
        return _tb(rng, "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1191, remote process exited or there was a network error, NCCL version 2.19.3")
    if reason is R.DATALOADER_KILLED:
        return [
            "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
            *_tb(rng, f"RuntimeError: DataLoader worker (pid {pid}) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory."),
        ]
    if reason is R.OUT_OF_MEMORY_ERROR:
        return _tb(rng, f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {rng.uniform(0.5, 24):.2f} GiB. GPU {rank % 8} has a total capacity of 79.15 GiB of which {rng.uniform(0.1, 2):.2f} GiB is free.")
    simple = {
        R.ATTRIBUTE_ERROR: "AttributeError: 'NoneType' object has no attribute 'shape'",
        R.RUNTIME_ERROR: "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x512 and 768x3072)",
        R.ASSERTION_ERROR: "AssertionError: sequence length must be divisible by the tensor parallel size",
        R.VALUE_ERROR: "ValueError: Expected input batch_size (16) to match target batch_size (8).",
        R.ZERO_DIVISION_ERROR: "ZeroDivisionError: division by zero",
        R.MODEL_LOADING_ERROR: "RuntimeError: Error(s) in loading state_dict for GPTModel: Missing key(s) in state_dict: \"decoder.layers.0.mlp.weight\".",
        R.DATASET_LOADING_ERROR: "datasets.exceptions.DatasetGenerationError: An error occurred while generating the dataset",
        R.FILE_NOT_FOUND_ERROR: "FileNotFoundError: [Errno 2] No such file or directory: '/data/pile/train_text_document.bin'",
        R.TYPE_ERROR: "TypeError: forward() got an unexpected keyword argument 'attention_mask'",
        R.OS_ERROR: "OSError: [Errno 24] Too many open files",
        R.KEY_ERROR: "KeyError: 'input_ids'",
        R.IMPORT_ERROR: "ModuleNotFoundError: No module named 'flash_attn'",
        R.INDEX_ERROR: "IndexError: list index out of range",
        R.NAME_ERROR: "NameError: name 'tokenizer' is not defined",
        R.PERMISSION_ERROR: f"PermissionError: [Errno 13] Permission denied: '/ckpt/iter_{seq:07d}'",
        R.CALLED_PROCESS_ERROR: "subprocess.CalledProcessError: Command '['git', 'rev-parse', 'HEAD']' returned non-zero exit status 128.",
    }
    if reason is R.SYNTAX_ERROR:
        return ['  File "/workspace/train.py", line 57', "    lr = = args.lr", "         ^", "SyntaxError: invalid syntax"]
    if reason is R.ARGUMENT_ERROR:
        return ["usage: train.py [-h] [--lr LR] [--batch-size BATCH_SIZE] [--epochs EPOCHS]",
                "train.py: error: unrecognized arguments: --lr-decay 0.1"]  # fmt: skip
    return _tb(rng, simple[reason])


BENIGN_LINES: tuple[str, ...] = (
    "validation error: 0.{n}",
    "[eval] step {n}: errors=0 timeouts=0 skipped=0",
    "wandb: Network error (ConnectionError), entering retry loop. retrying in 5s",
    "[W socket.cpp:663] [c10d] The client socket has failed to connect to [localhost]:29500 (errno: 99 - Cannot assign requested address).",
    "/opt/conda/lib/python3.10/site-packages/torch/distributed/fsdp/_init_utils.py:440: UserWarning: FSDP is switching to use `NO_SHARD` instead of ShardingStrategy.FULL_SHARD since the world size is 1.",
    "WARNING: gradient overflow at step {n}, skipping update and reducing loss scale",
    "Epoch {n}: train_error 0.0{n} | top1_error 23.{n}",
    "0 errors, 0 failures in data integrity check ({n} shards)",
)


HANDLED_TRACEBACK: list[str] = [
    "WARNING:mlflow.utils.async_logging:Failed to log metrics, will retry:",
    "Traceback (most recent call last):",
    '  File "/opt/conda/lib/python3.10/site-packages/urllib3/connectionpool.py", line 793, in urlopen',
    "    response = self._make_request(",
    "http.client.RemoteDisconnected: Remote end closed connection without response",
]


@dataclass(frozen=True)
class FailedLog:
    lines: list[str]
    root_line: int  # 0-based index of the fault block's first line
    reason: FailureReason
    category: FailureCategory = field(init=False)
    component: Component = field(init=False)
    node: str = "gpu-node-00"

    def __post_init__(self) -> None:
        object.__setattr__(self, "category", category_of(self.reason))
        object.__setattr__(self, "component", component_of(self.reason))

    def write(self, path: object) -> None:
        with open(path, "w", encoding="utf-8", newline="\n") as fh:  # type: ignore[arg-type]
            fh.write("\n".join(self.lines) + "\n")


def make_failed_log(
    n_lines: int = 3_000,
    seed: int = 0,
    reason: FailureReason | None = None,
    *,
    fault_at: float | None = None,
    ranks: int = 16,
    style: str = "torchrun",
    benign: int = 6,
    cascade_gap: int = 40,
    base: list[str] | None = None,
) -> FailedLog:
    """The log of a job that would have printed `n_lines` normal lines but failed after a
    `fault_at` fraction of them (default: early for script errors, anywhere for the others).
    The fault block and its cascade follow: per blocked rank, up to `cascade_gap` progress
    lines of the survivors, an NCCL watchdog timeout and often a traceback; then the launcher's
    `ChildFailedError` report. `base` reuses pre-generated normal lines (sliced, not copied)."""
    rng = random.Random(seed)
    reason = reason or rng.choice(list(FailureReason))
    category = category_of(reason)
    if fault_at is None:
        fault_at = rng.uniform(0.02, 0.15) if category is FailureCategory.SCRIPT else rng.uniform(0.2, 0.97)
    fault = max(1, int(n_lines * fault_at))
    normal = base if base is not None else generate_training_log(fault + cascade_gap + 64, seed=seed, ranks=ranks, style=style)[:-12]
    prefix = normal[:fault]
    survivors = normal[fault : fault + cascade_gap * ranks]  # other ranks still printing before they block
    # benign error-looking lines before the fault (never after the startup's first lines)
    prefix = list(prefix)
    for _ in range(benign if len(prefix) > 40 else 0):
        pos = rng.randrange(30, len(prefix))
        if rng.random() < 0.2:  # a traceback the program logged and survived
            prefix[pos:pos] = HANDLED_TRACEBACK
        else:
            prefix.insert(pos, rng.choice(BENIGN_LINES).format(n=rng.randrange(1, 99)))
    rank = rng.randrange(ranks)
    node = f"gpu-node-{rank // 8:02d}"
    prefixed = rng.random() < 0.5  # a launcher prefixes all of a rank's lines, or none
    block = [f"[rank{rank}]:{line}" if prefixed and not line.startswith(("NVRM", "slurmstepd", "srun")) else line
             for line in _fault_block(rng, reason, node, rank)]  # fmt: skip
    cascade: list[str] = []
    others = [r for r in range(ranks) if r != rank] or [rank]
    for r in rng.sample(others, rng.randint(1, len(others))):  # each blocked rank times out, then dumps
        cascade.extend(survivors[: rng.randint(0, cascade_gap)])
        survivors = survivors[cascade_gap:] or survivors
        cascade.append(
            f"[rank{r}]:[E ProcessGroupNCCL.cpp:475] [Rank {r}] Watchdog caught collective operation timeout: "
            f"WorkNCCL(SeqNum={rng.randrange(10**4)}, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600{rng.randrange(100, 999)} milliseconds before timing out."
        )
        if rng.random() < 0.7:
            cascade.extend(f"[rank{r}]:{line}" for line in _tb(rng, f"torch.distributed.DistBackendError: NCCL communicator was aborted on rank {r}."))
    cascade += [
        f"[rank{others[0]}]:Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
        f"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: {rank % 8} (pid: {rng.randrange(1000, 60000)}) of binary: /opt/conda/bin/python",
        "Traceback (most recent call last):",
        '  File "/opt/conda/bin/torchrun", line 8, in <module>',
        "    sys.exit(main())",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
        "============================================================",
        "Root Cause (first observed failure):",
        f"[0]:\n  time      : 2024-05-01_12:{rng.randrange(60):02d}:{rng.randrange(60):02d}\n  host      : {node}\n  rank      : {rank}\n  exitcode  : 1",
        "============================================================",
        f"srun: error: {node}: task {rank}: Exited with exit code 1",
    ]
    lines = [*prefix, *block, *"\n".join(cascade).split("\n")]
    return FailedLog(lines=lines, root_line=len(prefix), reason=reason, node=node)


def make_clean_log(n_lines: int = 2_000, seed: int = 0) -> list[str]:
    """A log that ends normally (no failure): the training log without its crash tail."""
    return [*generate_training_log(n_lines + 12, seed=seed)[:-12], "training finished: saving final checkpoint", "done"]
