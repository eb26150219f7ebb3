"""Hard cases real clusters produce (`HardCase`), rendered around a root cause by `failures.render_tail`
and, for restarts, into the body by `generator.generate_log`.

- hang: the culprit raised (or only warned) but the job did not die; peers wait in a collective and
  the NCCL watchdog fires 10-30 minutes later, after thousands of quiet lines (monitors, warnings,
  NCCL chatter; no progress: training is stuck).
- flood: every rank of a large job reports: watchdog timeouts, remote errors, aborted communicators,
  then the teardown (DataLoader workers killed by SIGTERM, CUDA "driver shutting down" warnings):
  thousands of lines after the root cause, so its last 500 lines are all cascade.
- other_rank: the launcher's "first observed failure" is a peer that aborted first, and peers
  print last; the culprit is elsewhere.
- decoys: benign lines that look like errors, just before the root cause and inside the cascade.
- restart: an earlier attempt failed for another reason and the launcher restarted the job, which
  resumed training; the label is the final failure (`FailureLabel.earlier_lines` notes the first).
- warn_level: the root cause is printed through a logger at WARNING level (no traceback), the job
  limps on and dies later in a cascade.

Decoys and warning wrappers come in the two pools of `pools.py`, like the error templates.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from schedmate.logspec import FailurePhase, LogSpec, Pool, resolved
from schedmate.taxonomy import ACME_REASONS, FailureReason

from .context import JobContext
from .failures import FailureTiming, Kit, Root, build_root, launcher_lines, remote_block, watchdog_lines
from .noise import NoiseSource

Decoy = Callable[[Kit, float], list[str]]


def _rank_line(K: Kit, text: str) -> list[str]:
    return [K.ctx.prefix(K.culprit()) + text]


# ---- decoys: benign lines that look like errors -------------------------------------------------------
def _wandb_500(K: Kit, t: float) -> list[str]:
    return ["wandb: ERROR Error while calling W&B API: An internal error occurred. Please contact support. (<Response [500]>)"]


def _bind_in_use(K: Kit, t: float) -> list[str]:
    return _rank_line(K, "[W socket.cpp:464] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).")


def _hub_retry(K: Kit, t: float) -> list[str]:
    return _rank_line(K, "WARNING:urllib3.connectionpool:Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) "
                         "after connection broken by 'ReadTimeoutError(\"HTTPSConnectionPool(host='huggingface.co', port=443): Read timed "
                         "out. (read timeout=10)\")': /api/models/" + K.ctx.model_name)


def _overflow(K: Kit, t: float) -> list[str]:
    scale = 2 ** int(K.rng.integers(10, 17))
    return _rank_line(K, f"Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to {scale}.0")


def _ckpt_retry(K: Kit, t: float) -> list[str]:
    return _rank_line(K, f"WARNING:root:checkpoint upload failed (attempt 1/5): ConnectionResetError(104, 'Connection reset by peer'); "
                         f"retrying in {int(K.rng.integers(2, 30))}s")


def _barrier_hang(K: Kit, t: float) -> list[str]:
    r = K.culprit()
    return [K.c10(r, "W", "ProcessGroupNCCL.cpp:4116", t) + f"[PG 0 Rank {r}]  using GPU {K.ctx.local(r)} to perform barrier as "
            "devices used by this process are currently unknown. This can potentially cause a hang if this rank to GPU mapping is "
            "incorrect. Specify device_ids in barrier() to force use of a particular device, or call init_process_group() with a device_id."]


def _tokenizers_fork(K: Kit, t: float) -> list[str]:
    return ["huggingface/tokenizers: The current process just got forked, after parallelism has already been used. Disabling "
            "parallelism to avoid deadlocks...",
            "To disable this warning, you can either:", "\t- Avoid using `tokenizers` before the fork if possible",
            "\t- Explicitly set the environment variable TOKENIZERS_PARALLELISM=(true | false)"]


def _ld_preload(K: Kit, t: float) -> list[str]:
    return ["ERROR: ld.so: object '/usr/lib/x86_64-linux-gnu/libnvidia-ml.so' from LD_PRELOAD cannot be preloaded (cannot open "
            "shared object file): ignored."]


def _ibverbs(K: Kit, t: float) -> list[str]:
    r = K.culprit()
    return [f"{K.ctx.prefix(r)}{K.ctx.nccl_head(r)} NCCL WARN Failed to open libibverbs.so[.1]"]


def _workers(K: Kit, t: float) -> list[str]:
    return _rank_line(K, f"{K.ctx.site}/torch/utils/data/dataloader.py:558: UserWarning: This DataLoader will create 16 worker processes "
                         "in total. Our suggested max number of worker in current system is 8, which is smaller than what this DataLoader "
                         "is going to create. Please be aware that excessive worker creation might get DataLoader running slow or even "
                         "freeze, lower the worker number to avoid potential slowness/freeze if necessary.")


def _tb_port(K: Kit, t: float) -> list[str]:
    return [f"E{K.ctx.ts(t, 'glog')} {K.ctx.agent_pid} program.py:298] TensorBoard could not bind to port 6006, it was already in use"]


def _eval_failed_samples(K: Kit, t: float) -> list[str]:
    return _rank_line(K, f"[eval] {int(K.rng.integers(1, 40))} samples failed to decode (invalid utf-8), skipped; errors so far: "
                         f"{int(K.rng.integers(1, 200))}")


# Benign error-looking one-liners (templates with `{n}`): counters, metrics named "error", retried
# conditions, warnings. Dev pool: the agents' tests use them as the lines a judge must let pass.
BENIGN_LINES: tuple[str, ...] = (
    "validation error: 0.{n}",
    "[eval] step {n}: errors=0 timeouts=0 skipped=0",
    "wandb: Network error (ConnectionError), entering retry loop. retrying in 5s",
    "[W socket.cpp:663] [c10d] The client socket has failed to connect to [localhost]:29500 (errno: 99 - Cannot assign requested address).",
    "/opt/conda/lib/python3.10/site-packages/torch/distributed/fsdp/_init_utils.py:440: UserWarning: FSDP is switching to use "
    "`NO_SHARD` instead of ShardingStrategy.FULL_SHARD since the world size is 1.",
    "WARNING: gradient overflow at step {n}, skipping update and reducing loss scale",
    "Epoch {n}: train_error 0.0{n} | top1_error 23.{n}",
    "0 errors, 0 failures in data integrity check ({n} shards)",
)


def _benign_line(K: Kit, t: float) -> list[str]:
    return [BENIGN_LINES[int(K.rng.integers(len(BENIGN_LINES)))].format(n=int(K.rng.integers(1, 99)))]


DECOYS: dict[Pool, tuple[Decoy, ...]] = {
    Pool.DEV: (_wandb_500, _bind_in_use, _hub_retry, _overflow, _ckpt_retry, _benign_line),
    Pool.HELDOUT: (_barrier_hang, _tokenizers_fork, _ld_preload, _ibverbs, _workers, _tb_port, _eval_failed_samples),
}


def decoy(K: Kit, pool: Pool, t: float) -> list[str]:
    units = DECOYS[Pool(pool)]
    return units[int(K.rng.integers(len(units)))](K, t)


def sprinkle(K: Kit, lines: list[str], n: int, pool: Pool, t: float, avoid: str | None = None) -> list[str]:
    """`lines` with `n` decoy units inserted at random places; same length as `lines` (decoys replace
    trailing lines), and no decoy line contains `avoid` (the root-cause signature)."""
    out = list(lines)
    size = len(out)
    for _ in range(n):
        unit = decoy(K, pool, t)
        if avoid is not None and any(avoid in x for x in unit):
            continue
        pos = int(K.rng.integers(0, len(out) + 1))
        out[pos:pos] = unit
    return out[:size] if len(out) > size else out


# ---- warn level ---------------------------------------------------------------------------------------
def _w_c10(K: Kit, r: int, text: str, t: float) -> str:
    return K.c10(r, "W", K.pick(("CUDAGuardImpl.h:119", "ProcessGroupNCCL.cpp:1250", "Module.cpp:149")), t) + f"Warning: {text}"


def _w_deepspeed(K: Kit, r: int, text: str, t: float) -> str:
    return f"{K.ctx.prefix(r)}[{K.ctx.ts(t, 'ds')}] [WARNING] [engine.py:{int(K.rng.integers(1800, 2300))}:_take_model_step] {text}"


def _w_logging(K: Kit, r: int, text: str, t: float) -> str:
    logger = K.pick(("root", "__main__", "trainer", "megatron.core.dist_checkpointing"))
    return f"{K.ctx.prefix(r)}WARNING:{logger}:rank {r}: caught {text} (continuing)"


def _w_nccl(K: Kit, r: int, text: str, t: float) -> str:
    return f"{K.ctx.prefix(r)}{K.ctx.nccl_head(r, 180)} NCCL WARN {text}"


WARN_WRAPPERS: dict[Pool, tuple[Callable[[Kit, int, str, float], str], ...]] = {
    Pool.DEV: (_w_c10, _w_deepspeed),
    Pool.HELDOUT: (_w_logging, _w_nccl),
}


def warn_root(K: Kit, root: Root, pool: Pool, t: float) -> Root | None:
    """The root cause as one WARNING line (the text of its signature line, no traceback); None when
    the root has no rank to print it."""
    if root.rank is None:
        return None
    line = root.lines[root.sig_idx]
    pre = K.ctx.exc_prefix(root.rank)
    text = line[len(pre):] if pre and line.startswith(pre) else line
    text = text.strip()
    wrappers = WARN_WRAPPERS[Pool(pool)]
    out = wrappers[int(K.rng.integers(len(wrappers)))](K, root.rank, text, t)
    if root.signature not in out:
        return None
    return Root([out], root.signature, root.variant, root.rank, exit_code=-6, host=root.host)


# ---- hang and flood ---------------------------------------------------------------------------------
def quiet(ns: NoiseSource, K: Kit, n: int, pool: Pool | None, decoys: bool, t: float, avoid: str | None) -> list[str]:
    """`n` lines printed while the job is stuck: no progress, only asynchronous chatter."""
    lines = ns.fill(n)
    if decoys and pool is not None and n:
        lines = sprinkle(K, lines, max(1, n // 400), pool, t, avoid)
    return lines


def _aborted(K: Kit, r: int, t: float) -> list[str]:
    frames = [("{wd}/" + K.ctx.script, 274, "train", "loss.backward()"),
              ("{site}/torch/_tensor.py", 525, "backward", "torch.autograd.backward("),
              ("{site}/torch/autograd/__init__.py", 267, "backward", "_engine_run_backward(")]
    return K.tb(r, frames, [f"torch.distributed.DistBackendError: NCCL communicator was aborted on rank {r}."])


def _dl_terminated(K: Kit, r: int, t: float) -> list[str]:
    wpid = K.ctx.pids[r] + 1000 + int(K.rng.integers(0, 5000))
    frames = [("{wd}/" + K.ctx.script, 268, "train", "batch = next(train_iter)"),
              ("{site}/torch/utils/data/_utils/signal_handling.py", 67, "handler", "_error_if_any_worker_fails()")]
    return K.tb(r, frames, [f"RuntimeError: DataLoader worker (pid {wpid}) is killed by signal: Terminated. "])


def _driver_shutdown(K: Kit, r: int, t: float) -> list[str]:
    return [K.c10(r, "W", "CUDAGuardImpl.h:119", t) + "Warning: CUDA warning: driver shutting down (function uncheckedGetDevice)",
            K.c10(r, "W", "CUDAGuardImpl.h:62", t) + "Warning: CUDA warning: driver shutting down (function uncheckedSetDevice)"]


def flood(K: Kit, root: Root, ns: NoiseSource, target: int, t: float, seq: int, gap: int = 3) -> tuple[list[str], list[int]]:
    """Exactly `target` cascade lines from many ranks (never the culprit), errors first, then the
    teardown; up to `gap` lines of survivors' chatter between the blocks. Returns the lines and
    the ranks that failed."""
    culprit = root.rank if root.rank is not None else 0
    peers = [r for r in K.ctx.visible if r != culprit] or [culprit]
    order = [peers[int(i)] for i in K.rng.permutation(len(peers))]
    timeout_ms = 600000 if K.ctx.torch_new else 1800000
    out: list[str] = []
    failed: list[int] = []
    i = 0
    while len(out) < target:
        r = order[i % len(order)]
        i += 1
        teardown = len(out) > 0.75 * target  # each rank's timeout is ~15 lines, its teardown ~5
        u = K.rng.random()
        if not teardown:
            if u < 0.5:
                block = watchdog_lines(K, r, seq, "ALLREDUCE", int(K.rng.integers(1, 1 << 24)), timeout_ms, t + timeout_ms / 1000)[0]
            elif u < 0.8:
                last = f"socketProgress: Connection closed by remote peer {K.ctx.host_of(culprit)}<{int(K.rng.integers(30000, 60000))}>"
                block = remote_block(K, r, last, t + 1)
            else:
                block = _aborted(K, r, t + 2)
            failed.append(r)
        else:
            block = _dl_terminated(K, r, t + 5) if u < 0.55 else _driver_shutdown(K, r, t + 5)
        out += block
        out += ns.fill(int(K.rng.integers(0, gap + 1)))
    return out[:max(target, 1)], failed


# ---- restart -----------------------------------------------------------------------------------------
def restart_segment(spec: LogSpec, ctx: JobContext, rng: np.random.Generator, t: float, step: int, total_steps: int,
                    final_signature: str, budget: int) -> tuple[list[str], int] | None:
    """An earlier attempt that failed for another reason, the launcher's restart, re-initialisation
    and the resume from the latest checkpoint. Returns (lines, index of its first error line), or
    None when no earlier failure fits in `budget` lines without printing the final signature."""
    final = FailureReason(resolved(spec.failure_reason))
    reasons = [r for r in ACME_REASONS if r is not final and r not in (FailureReason.NODE_FAILURE, FailureReason.NCCL_TIMEOUT_ERROR)]
    for _ in range(10):
        reason = reasons[int(rng.integers(len(reasons)))]
        K = Kit(ctx, spec, rng, FailurePhase.TRAIN, FailureTiming(t, step, total_steps, 0.0), min(budget, 120))
        root = build_root(K, reason, spec.pool)
        if root.rank is None:
            continue
        lines = list(root.lines)
        lines += launcher_lines(K, root, t + 2, restart=True)
        ns = NoiseSource(ctx, spec, np.random.default_rng(rng.integers(2**63)), "init", pool_size=8)
        ns.t = t + 30
        lines += ns.fill(int(rng.integers(10, 60)))
        lines.append(f"{ctx.prefix(0)}resuming from the latest checkpoint: /checkpoints/iter_{step:07d} (iteration {step})")
        if len(lines) <= budget and not any(final_signature in x for x in lines):
            return lines, root.sig_idx
    return None


__all__ = ["BENIGN_LINES", "DECOYS", "WARN_WRAPPERS", "decoy", "flood", "quiet", "restart_segment", "sprinkle", "warn_root"]

