"""Root-cause injection and cascades.

A failed log ends with: the root-cause block of ONE Acme reason (the exact error strings the
stack prints, `/work/shared/specs/logs.md` §2.3), a few normal-looking lines other ranks still
print, then the cascade: the same exception on other ranks when the bug is deterministic,
watchdog timeouts and NCCL errors on peers, an OOM after a timeout, the launcher's teardown
(torchrun's SIGTERMs and `ChildFailedError` block with its `Root Cause (first observed failure)`,
DeepSpeed's sigkill handler, srun's task errors, OpenMPI's abort banner).

`render_tail` is a pure function of (spec, job, timing, seed, budget) whose line count does not
depend on the timing values, so the generator renders it once to learn its length, plans the
body, and renders it again with the real times.

Each builder prints one of several real texts for its reason (its `variant`, a template); every
template belongs to one pool, dev or held-out (`pools.py`), and `build_root` draws from the spec's
pool only. The hard cases of `spec.hard` (`hard.py`) are arranged around the root cause here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from schedmate.logspec import FailurePhase, Framework, HardCase, Launcher, LogSpec, Pool, RankPrefix, resolved
from schedmate.taxonomy import FailureReason

from .context import JobContext
from .noise import NoiseSource
from .pools import template_pool
from .stacks import (
    ACCELERATE,
    BACKWARD,
    CHAINED,
    DATALOADER,
    DURING,
    FORWARD,
    TORCHRUN,
    Frame,
    entry_frames,
    format_traceback,
)

CUDA_TAIL = [
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
]


@dataclass(frozen=True, slots=True)
class FailureTiming:
    t_fail: float  # job seconds when the fault happens
    step: int | None  # last completed step (None: before training)
    total_steps: int
    train_start: float


@dataclass
class Root:
    lines: list[str]
    signature: str
    variant: str
    rank: int | None  # rank that printed the root cause (None: node- or launcher-level)
    exit_code: int = 1
    delay: float = 0.0  # seconds between the fault and the first root-cause line (watchdog timeouts)
    all_ranks: bool = False  # deterministic bug: every rank raises the same exception
    host: str | None = None
    per_rank: Callable[[int], list[str]] | None = None  # the same block as printed by another rank

    @property
    def sig_idx(self) -> int:
        for i, line in enumerate(self.lines):
            if self.signature in line:
                return i
        raise AssertionError(f"signature {self.signature!r} not in the root-cause block")


@dataclass
class TailBlock:
    lines: list[str]
    block_start: int
    first_line: int
    block_end: int
    cascade_start: int
    signature: str
    variant: str
    rank: int | None
    host: str | None
    time: float  # job seconds at first_line
    step: int | None
    hard: list[HardCase] = field(default_factory=list)  # hard cases applied


@dataclass
class Kit:
    """What a root-cause builder needs: the job, a generator, the phase, the timing, a line budget."""

    ctx: JobContext
    spec: LogSpec
    rng: np.random.Generator
    phase: FailurePhase
    timing: FailureTiming
    budget: int
    extra: dict = field(default_factory=dict)

    @property
    def small(self) -> bool:
        return self.budget < 90

    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def coin(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def culprit(self) -> int:
        v = self.ctx.visible
        return v[int(self.rng.integers(len(v)))]

    def other_ranks(self, r: int, k: int) -> list[int]:
        pool = [x for x in range(self.ctx.world_size) if x != r]
        if not pool:
            return []
        k = min(k, len(pool))
        return [int(x) for x in self.rng.choice(pool, size=k, replace=False)]

    def entry(self) -> list[Frame]:
        frames = entry_frames(self.ctx, self.phase.value)
        if self.small and len(frames) > 3:
            frames = frames[:1] + frames[-2:]
        return frames

    def tb(self, rank: int | None, frames: list[Frame], exc: list[str], *, header: bool = True) -> list[str]:
        lines = format_traceback(self.ctx, frames, exc, header=header)
        return self.exc_lines(rank, lines)

    def exc_lines(self, rank: int | None, lines: list[str]) -> list[str]:
        if rank is None:
            return lines
        p = self.ctx.exc_prefix(rank)
        return [p + x for x in lines] if p else lines

    def c10(self, rank: int, level: str, where: str, t: float) -> str:
        """A c10 log line head: `[rank3]:[E501 12:00:00.123000 4242 ProcessGroupNCCL.cpp:616] `."""
        ctx = self.ctx
        pre = ctx.prefix(rank) if ctx.prefix_style is not RankPrefix.TORCHRUN else f"[rank{rank}]:"
        if ctx.torch_new:
            return f"{pre}[{level}{ctx.ts(t, 'glog')} {ctx.pids[rank]} {where}] "
        return f"{pre}[{level} {where}] "

    def kernel(self, msg: str, t: float) -> str:
        return f"[{self.ctx.ts(t, 'dmesg')}] {msg}"

    def cpp_frames(self, rank: int, where: str, n: int = 7) -> list[str]:
        ctx = self.ctx
        lib = f"{ctx.site}/torch/lib"
        names = [("c10::Error::Error(c10::SourceLocation, std::string)", "0x57", "libc10.so"),
                 ("c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, std::ratio<1l, 1000l> > >)", "0x1d2", "libtorch_cuda.so"),
                 ("c10d::ProcessGroupNCCL::watchdogHandler()", "0x233", "libtorch_cuda.so"),
                 ("c10d::ProcessGroupNCCL::ncclCommWatchdog()", "0x10c", "libtorch_cuda.so"),
                 ("<unknown function>", "0xdc253", "/lib/x86_64-linux-gnu/libstdc++.so.6"),
                 ("<unknown function>", "0x94ac3", "/lib/x86_64-linux-gnu/libc.so.6"),
                 ("<unknown function>", "0x126850", "/lib/x86_64-linux-gnu/libc.so.6")]
        if self.small:
            n = min(n, 3)
        base = 0x7F0000000000 + int(self.rng.integers(0, 0xFFFFFFFF)) * 0x1000
        p = ctx.prefix(rank)
        out = [f"{p}Exception raised from {where} (most recent call first):"]
        for i, (fn, off, so) in enumerate(names[:n]):
            path = so if so.startswith("/") else f"{lib}/{so}"
            out.append(f"{p}frame #{i}: {fn} + {off} (0x{base + i * 0x3A10F:x} in {path})")
        return out


# ---- infrastructure --------------------------------------------------------------------------------
def _cuda_exc(K: Kit, msg: str) -> list[str]:
    cls = "torch.AcceleratorError" if K.coin(0.2) else "RuntimeError"
    return [f"{cls}: CUDA error: {msg}"] + (CUDA_TAIL if not K.small else CUDA_TAIL[:1])


def _train_frames(K: Kit, backward: bool = False) -> list[Frame]:
    if K.phase is FailurePhase.INIT:
        return K.entry()
    tail = BACKWARD if backward else FORWARD[-4:] if K.small else FORWARD
    return K.entry() + tail


def _xid_line(K: Kit, r: int, xid: int, text: str, t: float) -> str:
    bus = K.ctx.bus_ids[K.ctx.local(r)]
    return K.kernel(f"NVRM: Xid (PCI:0000:{bus}:00): {xid}, pid={K.ctx.pids[r]}, name=python, {text}", t)


def _nvlink(K: Kit) -> Root:
    r = K.culprit()
    t = K.timing.t_fail
    msg = "an uncorrectable NVLink error was detected during the execution"
    v = K.pick(("xid", "nccl", "python"))
    if v == "xid":
        link = int(K.rng.integers(0, 18))
        lines = [_xid_line(K, r, 74, f"NVLink: fatal error detected on link {link}(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)", t)]
        lines += K.tb(r, _train_frames(K, backward=True), _cuda_exc(K, msg))
        return Root(lines, "NVRM: Xid", "xid74", r, exit_code=1)
    if v == "nccl":
        lines = []
        head = K.ctx.prefix(r) + K.ctx.nccl_head(r, 120)
        if K.spec.nccl_debug:
            lines += [f"{head} enqueue.cc:1556 NCCL WARN Cuda failure '{msg}'", f"{head} NCCL INFO enqueue.cc:1570 -> 1"]
        p = K.ctx.prefix(r)
        lines += [K.c10(r, "E", "ProcessGroupNCCL.cpp:1316", t) + f"[PG 0 Rank {r}] Process group watchdog thread terminated with exception: "
                  f"NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version {K.ctx.nccl_version}",
                  p + "ncclUnhandledCudaError: Call to CUDA function failed.", p + "Last error:", p + f"Cuda failure '{msg}'"]
        lines += K.cpp_frames(r, "checkForNCCLErrorsInternal at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1723")
        return Root(lines, "uncorrectable NVLink error", "nccl", r, exit_code=-6)
    return Root(K.tb(r, _train_frames(K), _cuda_exc(K, msg)), "uncorrectable NVLink error", "python", r)


def _cuda(K: Kit) -> Root:
    r = K.culprit()
    t = K.timing.t_fail
    v = K.pick(("illegal", "launch", "xid79", "cublas"))
    if v == "xid79":
        lines = [_xid_line(K, r, 79, "GPU has fallen off the bus.", t)]
        lines += K.tb(r, _train_frames(K), _cuda_exc(K, "unspecified launch failure"))
        return Root(lines, "GPU has fallen off the bus", v, r)
    msg = {
        "illegal": "an illegal memory access was encountered",
        "launch": "unspecified launch failure",
        "cublas": "CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx( handle, opa, opb, m, n, k, &falpha, a, "
                  "CUDA_R_16BF, lda, b, CUDA_R_16BF, ldb, &fbeta, c, CUDA_R_16BF, ldc, compute_type, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`",
    }[v]
    sig = "CUBLAS_STATUS_EXECUTION_FAILED" if v == "cublas" else f"CUDA error: {msg}"
    return Root(K.tb(r, _train_frames(K, backward=v == "illegal"), _cuda_exc(K, msg)), sig, v, r)


def _ecc(K: Kit) -> Root:
    r = K.culprit()
    t = K.timing.t_fail
    exc = _cuda_exc(K, "uncorrectable ECC error encountered")
    if K.coin(0.5):
        xid, text = K.pick(((48, f"An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition {int(K.rng.integers(8))}, subpartition 0."),
                            (94, "Contained: SM (0x1). RST: No, D-RST: No"),
                            (95, "Uncontained: FBHUB. RST: Yes, D-RST: No")))
        lines = [_xid_line(K, r, xid, text, t)] + K.tb(r, _train_frames(K), exc)
        return Root(lines, "NVRM: Xid", f"xid{xid}", r)
    return Root(K.tb(r, _train_frames(K), exc), "uncorrectable ECC error encountered", "python", r)


def _node(K: Kit) -> Root:
    ctx = K.ctx
    node = int(K.rng.integers(1, len(ctx.hosts))) if len(ctx.hosts) > 1 else 0
    host = ctx.hosts[node]
    t = K.timing.t_fail
    K.extra["dead_node"] = node
    if K.coin(0.5):
        return Root([f"srun: error: Node failure on {host}"], "Node failure on", "srun", None, exit_code=-9, host=host)
    line = (f"slurmstepd: error: *** STEP {ctx.job_id}.0 ON {ctx.hosts[0]} CANCELLED AT {ctx.ts(t + 45, 'iso')} "
            "DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***")
    return Root([line], "DUE TO NODE FAILURE", "slurmstepd", None, exit_code=-9, host=host)


def _ib_line(K: Kit, r: int, peer_ip: str | None = None) -> str:
    """NCCL's IB completion error; the peer is on another node when there is one (IB links nodes)."""
    ctx = K.ctx
    if peer_ip is None:
        others = [i for i in range(len(ctx.ips)) if i != r // ctx.gpus_per_node]
        peer_ip = ctx.ips[others[int(K.rng.integers(len(others)))]] if others else ctx.ip_of(r)
    ip = peer_ip
    err, vendor = K.pick(((12, 129), (12, 129), (5, 244), (12, 249)))
    opcode, length = K.pick(((0, 0), (0, 32768), (1, 1)))
    suffix = f" (Recv) localGid ::ffff:{K.ctx.ip_of(r)} remoteGid ::ffff:{ip}" if K.coin(0.5) else ""
    return f"NET/IB : Got completion from peer {ip}<{int(K.rng.integers(30000, 60000))}> with error {err}, opcode {opcode}, len {length}, vendor err {vendor}{suffix}"


def _remote_block(K: Kit, r: int, last_error: str, t: float) -> list[str]:
    p = K.ctx.prefix(r)
    return ([K.c10(r, "E", "ProcessGroupNCCL.cpp:1414", t) + f"[PG 0 Rank {r}] Process group watchdog thread terminated with exception: "
             f"NCCL error: remote process exited or there was a network error, NCCL version {K.ctx.nccl_version}",
             p + "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
             p + "Last error:", p + last_error]
            + K.cpp_frames(r, "checkForNCCLErrorsInternal at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1723"))


def _network(K: Kit) -> Root:
    r = K.culprit()
    t = K.timing.t_fail
    ib = _ib_line(K, r)
    lines = []
    if K.spec.nccl_debug:
        head = K.ctx.prefix(r) + K.ctx.nccl_head(r, 180)
        lines += [f"{head} transport/net_ib.cc:{K.pick((1296, 1432, 1696))} NCCL WARN {ib}",
                  f"{head} NCCL INFO transport/net.cc:1134 -> 6", f"{head} NCCL INFO proxy.cc:679 -> 6",
                  f"{head} NCCL INFO proxy.cc:858 -> 6 [Proxy Thread]"]
    if K.coin(0.5):
        lines += _remote_block(K, r, ib, t)
        return Root(lines, "NET/IB : Got completion from peer", "ib_completion", r, exit_code=-6)
    # a queue pair that cannot be brought up (link down, GID change): NCCL's system error
    err = K.pick(("Connection timed out", "Invalid argument", "Network is unreachable"))
    qp = f"Call to ibv_modify_qp failed with error {err}"
    lines = []
    if K.spec.nccl_debug:
        head = K.ctx.prefix(r) + K.ctx.nccl_head(r, 180)
        lines += [f"{head} misc/ibvwrap.cc:{K.pick((288, 262))} NCCL WARN {qp}", f"{head} NCCL INFO transport/net_ib.cc:861 -> 2",
                  f"{head} NCCL INFO transport/net.cc:682 -> 2"]
    exc = [f"torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, "
           f"unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version {K.ctx.nccl_version}",
           "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. ",
           "Last error:", qp]
    frames = _train_frames(K)[:-2] + [("{site}/torch/distributed/c10d_logger.py", 79, "wrapper", "return func(*args, **kwargs)"),
                                      ("{site}/torch/distributed/distributed_c10d.py", 2288, "all_reduce", "work = group.allreduce([tensor], opts)")]
    sig = "ibv_modify_qp failed" if lines else "unhandled system error"  # NCCL's WARN line names it first
    return Root(lines + K.tb(r, frames, exc), sig, "ib_system", r)


def _connection(K: Kit) -> Root:
    r = K.culprit()
    t = K.timing.t_fail
    ctx = K.ctx
    v = K.pick(("hub", "store") if K.phase is FailurePhase.INIT else ("store", "gloo"))
    if v == "hub":
        frames = K.entry()[:2] + [
            ("{site}/huggingface_hub/utils/_validators.py", 114, "_inner_fn", "return fn(*args, **kwargs)"),
            ("{site}/huggingface_hub/file_download.py", 1221, "hf_hub_download", "return _hf_hub_download_to_cache_dir("),
            ("{site}/huggingface_hub/file_download.py", 1722, "_get_metadata_or_catch_error", "metadata = get_hf_file_metadata(url=url, proxies=proxies, timeout=etag_timeout, headers=headers)"),
            ("{site}/requests/adapters.py", 700, "send", "raise ConnectionError(e, request=request)"),
        ]
        exc = [f"requests.exceptions.ConnectionError: (MaxRetryError(\"HTTPSConnectionPool(host='huggingface.co', port=443): Max "
               f"retries exceeded with url: /{ctx.model_name}/resolve/main/config.json (Caused by NewConnectionError('<urllib3."
               f"connection.HTTPSConnection object at 0x7f{int(K.rng.integers(0, 0xFFFFFFFF)):08x}>: Failed to establish a new "
               f"connection: [Errno 101] Network is unreachable'))\"), '(Request ID: {int(K.rng.integers(0, 2**62)):016x})')"]
        return Root(K.tb(r, frames, exc), "requests.exceptions.ConnectionError", v, r, all_ranks=True)
    if v == "store":
        secs = K.pick((300, 900, 1800))
        msg = f"The client socket has timed out after {secs}s while trying to connect to ({ctx.ips[0]}, 29500)."
        lines = [K.c10(r, "E", "socket.cpp:957", t) + f"[c10d] {msg}"]
        frames = K.entry()[:2] + [
            ("{site}/torch/distributed/c10d_logger.py", 79, "wrapper", "return func(*args, **kwargs)"),
            ("{site}/torch/distributed/distributed_c10d.py", 1520, "init_process_group", "store, rank, world_size = next(rendezvous_iterator)"),
            ("{site}/torch/distributed/rendezvous.py", 265, "_env_rendezvous_handler", "store = _create_c10d_store(master_addr, master_port, rank, world_size, timeout, use_libuv)"),
            ("{site}/torch/distributed/rendezvous.py", 189, "_create_c10d_store", "return TCPStore("),
        ]
        lines += K.tb(r, frames, [f"torch.distributed.DistNetworkError: {msg}"])
        return Root(lines, "The client socket has timed out after", v, r)
    peer = K.other_ranks(r, 1)
    ip = ctx.ip_of(peer[0] if peer else r)
    exc = [f"RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [{ip}]:{int(K.rng.integers(20000, 60000))}"]
    frames = _train_frames(K)[:-2] + [("{site}/torch/distributed/distributed_c10d.py", 2288, "all_reduce", "work = group.allreduce([tensor], opts)")]
    return Root(K.tb(r, frames, exc), "Connection closed by peer", v, r)


def _s3(K: Kit) -> Root:
    r = K.culprit()
    v = K.pick(("timeout", "slowdown", "eio", "enospc"))
    bucket = K.pick(("ml-datasets-prod", "team-llm-data", "ckpt-bucket-us-east-1"))
    key = f"shards/train-{int(K.rng.integers(0, 99999)):05d}-of-{int(K.rng.integers(100000, 999999))}.tar"
    boto = [("{site}/boto3/s3/transfer.py", 406, "download_file", "future.result()"),
            ("{site}/s3transfer/futures.py", 103, "result", "return self._coordinator.result()"),
            ("{site}/botocore/client.py", 1017, "_make_api_call", "raise error_class(parsed_response, operation_name)")]
    data = [("{wd}/data.py", 118, "__getitem__", "self.s3.download_file(self.bucket, key, local_path)")]
    if v == "timeout":
        exc = [f'botocore.exceptions.ReadTimeoutError: Read timeout on endpoint URL: "https://{bucket}.s3.amazonaws.com/{key}"']
        return Root(K.tb(r, K.entry()[:-1] + data + boto, exc), "botocore.exceptions.ReadTimeoutError", v, r)
    if v == "slowdown":
        exc = ["botocore.exceptions.ClientError: An error occurred (SlowDown) when calling the GetObject operation "
               "(reached max retries: 4): Please reduce your request rate."]
        return Root(K.tb(r, K.entry()[:-1] + data + boto, exc), "botocore.exceptions.ClientError", v, r)
    if v == "eio":
        exc = [f"OSError: [Errno 5] Input/output error: '/mnt/lustre/datasets/pile/{key}'"]
        frames = K.entry()[:-1] + [("{wd}/data.py", 96, "__getitem__", "with open(path, 'rb') as f:")]
        return Root(K.tb(r, frames, exc), "[Errno 5] Input/output error", v, r)
    step = K.timing.step or 0
    frames = K.entry()[:1] + [("{wd}/checkpointing.py", 211, "save_checkpoint", "torch.save(state_dict, checkpoint_name)"),
                              ("{site}/torch/serialization.py", 652, "save", "with _open_zipfile_writer(f) as opened_zipfile:")]
    exc = [f"OSError: [Errno 28] No space left on device: '/checkpoints/iter_{step:07d}/mp_rank_00/model_optim_rng.pt'"]
    return Root(K.tb(r, frames, exc), "[Errno 28] No space left on device", v, r)


def _watchdog_lines(K: Kit, a: int, seq: int, op: str, numel: int, timeout_ms: int, t: float) -> tuple[list[str], int]:
    """One rank's watchdog output; returns the lines and how many of them form the root-cause block."""
    numel_s = f"NumelIn={numel}, NumelOut={numel}, " if K.ctx.torch_new else ""
    ran = timeout_ms + int(K.rng.integers(5, 900))
    work = f"WorkNCCL(SeqNum={seq}, OpType={op}, {numel_s}Timeout(ms)={timeout_ms}) ran for {ran} milliseconds before timing out."
    head = lambda where: K.c10(a, "E", where, t)  # noqa: E731
    lines = [
        head("ProcessGroupNCCL.cpp:616") + f"[Rank {a}] Watchdog caught collective operation timeout: {work}",
        head("ProcessGroupNCCL.cpp:1785") + f"[PG 0 Rank {a}] Exception (either an error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL work: {seq}, last completed NCCL work: {seq - 1}.",
        head("ProcessGroupNCCL.cpp:630") + f"[Rank {a}] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
        head("ProcessGroupNCCL.cpp:636") + f"[Rank {a}] To avoid data inconsistency, we are taking the entire process down.",
    ]
    n_root = len(lines)
    p = K.ctx.prefix(a)
    lines.append(head("ProcessGroupNCCL.cpp:1595") + f"[PG 0 Rank {a}] Process group watchdog thread terminated with exception: [Rank {a}] Watchdog caught collective operation timeout: {work}")
    lines += K.cpp_frames(a, "checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:618")
    lines += [p + "", p + "terminate called after throwing an instance of 'c10::DistBackendError'",
              p + f"  what():  [PG 0 Rank {a}] Process group watchdog thread terminated with exception: [Rank {a}] Watchdog caught collective operation timeout: {work}"]
    return lines, n_root


def _nccl_timeout(K: Kit) -> Root:
    ctx = K.ctx
    stuck = K.culprit()
    peers = K.other_ranks(stuck, 1)
    a = peers[0] if peers else stuck
    timeout_ms = 600000 if ctx.torch_new else 1800000
    seq = max(2, (K.timing.step or 0) * 4 + int(K.rng.integers(1, 4)))
    op = K.pick(("ALLREDUCE", "ALLREDUCE", "_ALLGATHER_BASE", "_REDUCE_SCATTER_BASE", "BROADCAST"))
    numel = int(K.pick((1, 1024, 524288, 16777216, 131334144)))
    t = K.timing.t_fail + timeout_ms / 1000
    if ctx.torch_new and K.coin(0.35):
        # torch >= 2.3: the watchdog itself is stuck in a hung NCCL call; the heartbeat monitor fires first
        secs = K.pick((480, 600))
        lines = [K.c10(a, "E", "ProcessGroupNCCL.cpp:1316", t) + f"[PG 0 Rank {a}] Heartbeat monitor timed out! Process will "
                 "be terminated after dumping debug info. workMetaList_.size()=1",
                 K.c10(a, "E", "ProcessGroupNCCL.cpp:1153", t) + f"[PG 0 Rank {a}] ProcessGroupNCCL preparing to dump debug info.",
                 K.c10(a, "F", "ProcessGroupNCCL.cpp:1169", t) + f"[PG 0 Rank {a}] [PG 0 Rank {a}] ProcessGroupNCCL's watchdog got "
                 f"stuck for {secs} seconds without making progress in monitoring enqueued collectives. This typically indicates "
                 "a NCCL/CUDA API hang blocking the watchdog, and could be triggered by another thread holding the GIL inside a "
                 "CUDA api, or other deadlock-prone behaviors.If you suspect the watchdog is not actually stuck and a longer "
                 "timeout would help, you can either increase the timeout (TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC) to a larger value or "
                 "disable the heartbeat monitor (TORCH_NCCL_ENABLE_MONITORING=0).If either of aforementioned helps, feel free to "
                 "file an issue to PyTorch about the short timeout or false positive abort; otherwise, please attempt to debug "
                 "the hang. workMetaList_.size() = 1"]
        K.extra.update(timeout=(seq, op, numel, timeout_ms, stuck), watchdog_tail=[])
        return Root(lines, "Heartbeat monitor timed out", "heartbeat", a, exit_code=-6, delay=timeout_ms / 1000)
    if not ctx.torch_new and K.coin(0.35):
        # torch < 2.2 with blocking wait / async error handling: the timeout surfaces as a Python exception
        ran = timeout_ms + int(K.rng.integers(5, 900))
        exc = [f"RuntimeError: NCCL communicator was aborted on rank {a}.  Original reason for failure was: [Rank {a}] Watchdog "
               f"caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, Timeout(ms)={timeout_ms}) ran for "
               f"{ran} milliseconds before timing out."]
        frames = _train_frames(K, backward=True)
        K.extra.update(timeout=(seq, op, numel, timeout_ms, stuck), watchdog_tail=[])
        return Root(K.tb(a, frames, exc), "NCCL communicator was aborted", "aborted", a, delay=timeout_ms / 1000)
    lines, n_root = _watchdog_lines(K, a, seq, op, numel, timeout_ms, t)
    K.extra.update(timeout=(seq, op, numel, timeout_ms, stuck), watchdog_tail=lines[n_root:])
    return Root(lines[:n_root], "Watchdog caught collective operation timeout", "watchdog", a, exit_code=-6,
                delay=timeout_ms / 1000)


def _nccl_remote(K: Kit) -> Root:
    r = K.culprit()
    t = K.timing.t_fail
    peer = K.other_ranks(r, 1)
    q = peer[0] if peer else r
    last = K.pick((f"socketProgress: Connection closed by remote peer {K.ctx.host_of(q)}<{int(K.rng.integers(30000, 60000))}>",
                   f"socketProgressOpt: Call to recv from {K.ctx.ip_of(q)}<{int(K.rng.integers(30000, 60000))}> failed : Connection reset by peer"))
    if K.coin(0.5):
        return Root(_remote_block(K, r, last, t), "remote process exited or there was a network error", "watchdog", r, exit_code=-6)
    exc = [f"torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, remote "
           f"process exited or there was a network error, NCCL version {K.ctx.nccl_version}",
           "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
           "Last error:", last]
    frames = _train_frames(K)[:-2] + [("{site}/torch/distributed/c10d_logger.py", 79, "wrapper", "return func(*args, **kwargs)"),
                                      ("{site}/torch/distributed/distributed_c10d.py", 2288, "all_reduce", "work = group.allreduce([tensor], opts)")]
    return Root(K.tb(r, frames, exc), "remote process exited or there was a network error", "python", r)


# ---- framework -------------------------------------------------------------------------------------
def _iter_frames(K: Kit) -> list[Frame]:
    return K.entry()[:-1] + [("{wd}/" + K.ctx.script, 274, "train", "batch = next(train_iter)")]


def _dataloader(K: Kit) -> Root:
    r = K.culprit()
    wpid = K.ctx.pids[r] + 1000 + int(K.rng.integers(0, 5000))
    v = K.pick(("killed", "bus", "exited"))
    raise_frame = ("{site}/torch/utils/data/dataloader.py", 1144, "_try_get_data",
                   "raise RuntimeError(f'DataLoader worker (pid(s) {pids_str}) exited unexpectedly') from e")
    outer = _iter_frames(K) + DATALOADER[:3] + [raise_frame]
    inner = DATALOADER[3:] if not K.small else DATALOADER[-2:]
    final = [f"RuntimeError: DataLoader worker (pid(s) {wpid}) exited unexpectedly"]
    if v == "exited":
        exc = f"RuntimeError: DataLoader worker (pid(s) {wpid}, {wpid + 1}) exited unexpectedly"
        return Root(K.tb(r, outer, [exc]), exc, v, r)
    if v == "killed":
        first = K.tb(r, inner, [f"RuntimeError: DataLoader worker (pid {wpid}) is killed by signal: Killed. "])
        return Root(first + K.exc_lines(r, CHAINED) + K.tb(r, outer, final), "is killed by signal: Killed.", v, r)
    bus = K.exc_lines(r, ["ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm)."])
    first = K.tb(r, inner, [f"RuntimeError: DataLoader worker (pid {wpid}) is killed by signal: Bus error. It is possible that "
                            "dataloader's workers are out of shared memory. Please try to raise your shared memory limit."])
    return Root(bus + first + K.exc_lines(r, CHAINED) + K.tb(r, outer, final), "Unexpected bus error encountered in worker", v, r)


def _simple(K: Kit, frames: list[Frame], exc: str, variant: str, *, all_ranks: bool = True, sig: str | None = None,
            extra: list[str] | None = None) -> Root:
    r = K.culprit()
    block = lambda rank: K.tb(rank, frames, [exc] + (extra or []))  # noqa: E731
    return Root(block(r), sig or exc[:80], variant, r, all_ranks=all_ranks, per_rank=block)


def _attribute(K: Kit) -> Root:
    exc, last = K.pick((("AttributeError: 'DistributedDataParallel' object has no attribute 'config'",
                         ("{wd}/" + K.ctx.script, 233, "train", "vocab_size = model.config.vocab_size")),
                        ("AttributeError: 'NoneType' object has no attribute 'size'",
                         ("{wd}/model.py", 88, "forward", "bsz, seqlen = attention_mask.size()")),
                        ("AttributeError: module 'torch.distributed' has no attribute '_reduce_scatter_base'",
                         ("{site}/apex/transformer/tensor_parallel/mappings.py", 102, "_reduce_scatter_along_first_dim",
                          "torch.distributed._reduce_scatter_base(output, input_, group=get_tensor_model_parallel_group())"))))
    return _simple(K, K.entry() + [last], exc, exc.split(":", 1)[1].strip()[:24])


def _oom(K: Kit) -> Root:
    r = K.culprit()
    d = K.ctx.local(r)
    total = K.pick((79.15, 39.39, 23.68))
    a = float(K.rng.uniform(0.1, 8.0))
    free = float(K.rng.uniform(1, 900))
    used = total - free / 1024
    alloc = used * float(K.rng.uniform(0.85, 0.97))
    res = float(K.rng.uniform(10, 900))
    v = K.pick(("new", "cuda", "old"))
    if v == "old":
        exc = (f"RuntimeError: CUDA out of memory. Tried to allocate {a * 1024:.2f} MiB (GPU {d}; {total:.2f} GiB total capacity; "
               f"{alloc:.2f} GiB already allocated; {free:.2f} MiB free; {alloc + res / 1024:.2f} GiB reserved in total by PyTorch) "
               "If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See "
               "documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF")
    else:
        cls = "torch.OutOfMemoryError" if v == "new" else "torch.cuda.OutOfMemoryError"
        exc = (f"{cls}: CUDA out of memory. Tried to allocate {a:.2f} GiB. GPU {d} has a total capacity of {total:.2f} GiB of "
               f"which {free:.2f} MiB is free. Process {K.ctx.pids[r]} has {used:.2f} GiB memory in use. Of the allocated memory "
               f"{alloc:.2f} GiB is allocated by PyTorch, and {res:.2f} MiB is reserved by PyTorch but unallocated. If reserved "
               "but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
               "fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
    frames = _train_frames(K, backward=K.coin(0.4))
    return Root(K.tb(r, frames, [exc]), "CUDA out of memory", v, r)


def _runtime(K: Kit) -> Root:
    d = K.ctx.local(K.ctx.visible[0])
    exc = K.pick((
        f"RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:{d} and cpu! "
        "(when checking argument for argument mat1 in method wrapper_CUDA_addmm)",
        f"RuntimeError: mat1 and mat2 shapes cannot be multiplied ({int(K.rng.integers(2, 64)) * 1024}x4096 and 11008x4096)",
        "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. This error "
        "indicates that your module has parameters that were not used in producing loss. You can enable unused parameter "
        "detection by passing the keyword argument `find_unused_parameters=True` to "
        "`torch.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs participate in "
        "calculating loss.",
        "RuntimeError: Function 'LogSoftmaxBackward0' returned nan values in its 0th output.",
    ))
    return _simple(K, _train_frames(K), exc, exc[14:40])


def _assertion(K: Kit) -> Root:
    ctx, s = K.ctx, K.spec
    w = ctx.world_size
    v = K.pick(("deepspeed", "cuda", "block") if ctx.framework is Framework.DEEPSPEED else ("cuda", "block"))
    if v == "deepspeed":
        m = max(1, int(resolved(s.global_batch_size)) // w)
        exc = (f"AssertionError: Check batch related parameters. train_batch_size is not equal to micro_batch_per_gpu * "
               f"gradient_acc_step * world_size {s.global_batch_size} != {m} * 2 * {w}")
        frames = K.entry() + [("{site}/deepspeed/runtime/config.py", 885, "_batch_assertion",
                               "assert train_batch == micro_batch * grad_acc * self.world_size, (")]
    elif v == "cuda":
        exc = "AssertionError: Torch not compiled with CUDA enabled"
        frames = K.entry() + [("{site}/torch/cuda/__init__.py", 284, "_lazy_init", 'raise AssertionError("Torch not compiled with CUDA enabled")')]
    else:
        exc = f"AssertionError: Cannot forward sequence of length {int(resolved(s.seq_length)) * 2}, block size is only {s.seq_length}"
        frames = _train_frames(K)[:-1] + [("{wd}/model.py", 172, "forward",
                                            'assert t <= self.config.block_size, f"Cannot forward sequence of length {t}, block size is only {self.config.block_size}"')]
    return _simple(K, frames, exc, v)


def _value(K: Kit) -> Root:
    exc = K.pick(("ValueError: Expected input batch_size (32) to match target batch_size (64).",
                  "ValueError: Attempting to unscale FP16 gradients.",
                  "ValueError: too many values to unpack (expected 2)"))
    return _simple(K, _train_frames(K), exc, exc[12:36])


def _zero_div(K: Kit) -> Root:
    exc, variant = K.pick((("ZeroDivisionError: division by zero", "int"), ("ZeroDivisionError: float division by zero", "float")))
    frames = K.entry()[:-1] + [("{wd}/" + K.ctx.script, 318, "train", "tokens_per_sec = tokens_seen / (time.time() - t_last_log)")]
    return _simple(K, frames, exc, variant)


def _model_loading(K: Kit) -> Root:
    ctx = K.ctx
    v = K.pick(("state_dict", "pickle", "safetensors"))
    if v == "state_dict":
        exc = ["RuntimeError: Error(s) in loading state_dict for GPTModel:",
               '\tMissing key(s) in state_dict: "decoder.layers.0.self_attention.linear_qkv.layer_norm_weight", '
               '"decoder.layers.0.self_attention.linear_qkv.layer_norm_bias". ',
               '\tUnexpected key(s) in state_dict: "decoder.layers.0.input_layernorm.weight", "decoder.layers.0.input_layernorm.bias". ']
        frames = K.entry() + [("{site}/torch/nn/modules/module.py", 2215, "load_state_dict",
                               "raise RuntimeError('Error(s) in loading state_dict for {}:\\n\\t{}'.format(")]
        r = K.culprit()
        return Root(K.tb(r, frames, exc), "Error(s) in loading state_dict", v, r, all_ranks=True,
                    per_rank=lambda q: K.tb(q, frames, exc))
    path = f"/models/{ctx.model_name.split('/')[-1]}"
    if v == "pickle":
        inner = [("{site}/transformers/modeling_utils.py", 575, "load_state_dict", 'return torch.load('),
                 ("{site}/torch/serialization.py", 1040, "load", "return _legacy_load("),
                 ("{site}/torch/serialization.py", 1262, "_legacy_load", "magic_number = pickle_module.load(f, **pickle_load_args)")]
        r = K.culprit()
        block = lambda q: (K.tb(q, inner, ["_pickle.UnpicklingError: invalid load key, 'v'."]) + K.exc_lines(q, DURING)  # noqa: E731
                           + K.tb(q, K.entry(), [f"OSError: Unable to load weights from pytorch checkpoint file for "
                                                 f"'{path}/pytorch_model.bin' at '{path}/pytorch_model.bin'. If you tried to load a "
                                                 "PyTorch model from a TF 2.0 checkpoint, please set from_tf=True."]))
        return Root(block(r), "_pickle.UnpicklingError: invalid load key", v, r, all_ranks=True, per_rank=block)
    frames = K.entry() + [("{site}/transformers/modeling_utils.py", 549, "load_state_dict", 'with safe_open(checkpoint_file, framework="pt") as f:')]
    return _simple(K, frames, "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge", v,
                   sig="SafetensorError")


def _dataset_loading(K: Kit) -> Root:
    r = K.culprit()
    if K.coin(0.5):
        inner = [("{site}/datasets/packaged_modules/json/json.py", 137, "_generate_tables", "pa_table = paj.read_json("),
                 ("pyarrow/_json.pyx", 308, "pyarrow._json.read_json", ""),  # Cython frames print no source line
                 ("pyarrow/error.pxi", 91, "pyarrow.lib.check_status", "")]
        outer = K.entry() + [("{site}/datasets/builder.py", 1997, "_prepare_split_single",
                              'raise DatasetGenerationError("An error occurred while generating the dataset") from e')]
        block = lambda q: (K.tb(q, inner, [f"pyarrow.lib.ArrowInvalid: JSON parse error: Missing a name for object member. in row {int(K.rng.integers(1, 90000))}"])  # noqa: E731
                           + K.exc_lines(q, CHAINED)
                           + K.tb(q, outer, ["datasets.exceptions.DatasetGenerationError: An error occurred while generating the dataset"]))
        return Root(block(r), "pyarrow.lib.ArrowInvalid", "arrow", r, all_ranks=True, per_rank=block)
    frames = K.entry() + [("{site}/datasets/load.py", 1782, "dataset_module_factory", "raise e1 from None")]
    return _simple(K, frames, "datasets.exceptions.DataFilesNotFoundError: No (supported) data files found in /data/sft-mix-v3",
                   "no_files", sig="DataFilesNotFoundError")


# ---- script ----------------------------------------------------------------------------------------
def _script_frame(K: Kit, line: int, code: str, func: str = "<module>") -> Frame:
    return ("{wd}/" + K.ctx.script, line, func, code)


def _file_not_found(K: Kit) -> Root:
    path, code = K.pick((("/data/tokenizer/tokenizer.model", "tokenizer = SentencePieceProcessor(model_file=args.tokenizer_path)"),
                         ("configs/ds_config_zero3.json", "with open(args.deepspeed_config) as f:"),
                         ("/checkpoints/run-12/latest_checkpointed_iteration.txt", "with open(tracker_filename, 'r') as f:"),
                         ("/data/openwebtext/train.bin", "data = np.memmap(os.path.join(data_dir, 'train.bin'), dtype=np.uint16, mode='r')")))
    frames = K.entry()[:-1] + [_script_frame(K, 61, code, "main")]
    return _simple(K, frames, f"FileNotFoundError: [Errno 2] No such file or directory: '{path}'", path.rsplit("/", 1)[-1],
                   sig="FileNotFoundError: [Errno 2] No such file or directory")


def _type(K: Kit) -> Root:
    exc = K.pick(("TypeError: forward() got an unexpected keyword argument 'labels'",
                  "TypeError: unsupported operand type(s) for +: 'int' and 'NoneType'",
                  "TypeError: LlamaForCausalLM.__init__() missing 1 required positional argument: 'config'",
                  "TypeError: 'NoneType' object is not subscriptable"))
    return _simple(K, _train_frames(K), exc, exc[11:35])


def _os(K: Kit) -> Root:
    v = K.pick(("libcudart", "nofile"))
    if v == "libcudart":
        frames = [_script_frame(K, 9, "import torch"), ("{site}/torch/__init__.py", 290, "<module>", "_load_global_deps()"),
                  ("{site}/torch/__init__.py", 245, "_load_global_deps", "raise err"),
                  ("{site}/torch/__init__.py", 206, "_load_global_deps", "ctypes.CDLL(global_deps_lib_path, mode=ctypes.RTLD_GLOBAL)"),
                  ("/usr/lib/python3.10/ctypes/__init__.py", 374, "__init__", "self._handle = _dlopen(self._name, mode)")]
        return _simple(K, frames, "OSError: libcudart.so.12: cannot open shared object file: No such file or directory", v)
    frames = K.entry()[:-1] + [_script_frame(K, 140, "shards = [open(p, 'rb') for p in shard_paths]", "load_shards")]
    return _simple(K, frames, "OSError: [Errno 24] Too many open files", v)


def _key(K: Kit) -> Root:
    exc, frame = K.pick((("KeyError: 'input_ids'", _script_frame(K, 188, "input_ids = batch['input_ids'].cuda()", "train")),
                         ("KeyError: 'model_state_dict'", _script_frame(K, 97, "model.load_state_dict(ckpt['model_state_dict'])", "load_checkpoint")),
                         ("KeyError: 'LOCAL_RANK'", ("/usr/lib/python3.10/os.py", 680, "__getitem__", "raise KeyError(key) from None"))))
    return _simple(K, K.entry()[:-1] + [frame], exc, exc[10:])


def _import(K: Kit) -> Root:
    exc, code = K.pick((("ModuleNotFoundError: No module named 'flash_attn'", "from flash_attn import flash_attn_func"),
                        (f"ImportError: cannot import name 'is_torch_tpu_available' from 'transformers' ({K.ctx.site}/transformers/__init__.py)",
                         "from transformers import is_torch_tpu_available"),
                        ("ModuleNotFoundError: No module named 'apex'", "from apex.optimizers import FusedAdam")))
    return _simple(K, [_script_frame(K, 12, code)], exc, exc.split(":")[0])


def _index(K: Kit) -> Root:
    if K.coin(0.5):
        frames = _train_frames(K)[:-1] + [("{site}/torch/nn/modules/sparse.py", 164, "forward", "return F.embedding("),
                                           ("{site}/torch/nn/functional.py", 2267, "embedding",
                                            "return torch.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)")]
        return _simple(K, frames, "IndexError: index out of range in self", "embedding")
    frames = K.entry()[:-1] + [_script_frame(K, 77, "label = self.labels[idx]", "__getitem__")]
    return _simple(K, frames, "IndexError: list index out of range", "list")


def _name(K: Kit) -> Root:
    if K.coin(0.5):
        exc = "NameError: name 'args' is not defined" + (". Did you mean: 'arg'?" if K.ctx.py311 else "")
        return _simple(K, K.entry()[:-1] + [_script_frame(K, 203, "lr = args.lr * world_size", "train")], exc, "args",
                       sig="NameError: name 'args' is not defined")
    exc = "NameError: name 'local_rank' is not defined" + (". Did you mean: 'local_ranks'?" if K.ctx.py311 else "")
    return _simple(K, K.entry()[:-1] + [_script_frame(K, 88, "torch.cuda.set_device(local_rank)", "setup")], exc, "local_rank",
                   sig="NameError: name 'local_rank' is not defined")


def _syntax(K: Kit) -> Root:
    ctx = K.ctx
    code, caret, exc = K.pick((('print(f"step {step} loss {loss:.4f}"', "         ^", "SyntaxError: '(' was never closed"),
                               ("if step % log_interval == 0", "                               ^", "SyntaxError: expected ':'"),
                               ("    optimizer.zero_grad()", "    ^", "IndentationError: unexpected indent")))
    r = K.culprit()
    block = lambda q: K.exc_lines(q, [f'  File "{ctx.workdir}/{ctx.script}", line {57}', f"    {code}", f"    {caret}", exc])  # noqa: E731
    return Root(block(r), exc, exc.split(":")[0], r, all_ranks=True, per_rank=block)


def _permission(K: Kit) -> Root:
    step = K.timing.step or 0
    if K.coin(0.5):
        frames = K.entry()[:-1] + [_script_frame(K, 251, "os.makedirs(ckpt_dir, exist_ok=True)", "save_checkpoint"),
                                   ("/usr/lib/python3.10/os.py", 225, "makedirs", "mkdir(name, mode)")]
        return _simple(K, frames, f"PermissionError: [Errno 13] Permission denied: '/checkpoints/shared/run-7/iter_{step:07d}'",
                       "ckpt", sig="PermissionError: [Errno 13] Permission denied")
    frames = K.entry()[:-1] + [_script_frame(K, 64, "logger = SummaryWriter(log_dir=args.tensorboard_dir)", "setup_logging"),
                               ("{site}/torch/utils/tensorboard/writer.py", 66, "__init__", "self.event_writer = EventFileWriter("),
                               ("/usr/lib/python3.10/os.py", 215, "makedirs", "makedirs(head, exist_ok=exist_ok)")]
    return _simple(K, frames, "PermissionError: [Errno 13] Permission denied: '/mnt/shared/tensorboard'", "tensorboard",
                   sig="PermissionError: [Errno 13] Permission denied")


def _called_process(K: Kit) -> Root:
    r = K.culprit()
    if K.coin(0.5):
        pre = ["fatal: not a git repository (or any of the parent directories): .git"]
        frames = [_script_frame(K, 30, "commit = subprocess.check_output(['git', 'rev-parse', 'HEAD']).decode().strip()"),
                  ("/usr/lib/python3.10/subprocess.py", 421, "check_output", "return run(*popenargs, stdout=PIPE, timeout=timeout, check=True,"),
                  ("/usr/lib/python3.10/subprocess.py", 526, "run", "raise CalledProcessError(retcode, process.args,")]
        exc = ["subprocess.CalledProcessError: Command '['git', 'rev-parse', 'HEAD']' returned non-zero exit status 128."]
        variant = "git"
    else:
        pre = ["FAILED: fused_adam_frontend.o", "ninja: build stopped: subcommand failed."]
        frames = [("{site}/torch/utils/cpp_extension.py", 2105, "_run_ninja_build", "subprocess.run("),
                  ("/usr/lib/python3.10/subprocess.py", 526, "run", "raise CalledProcessError(retcode, process.args,")]
        exc = ["subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1."]
        variant = "ninja"
    block = lambda q: K.exc_lines(q, pre) + K.tb(q, frames, exc)  # noqa: E731
    return Root(block(r), "subprocess.CalledProcessError", variant, r, all_ranks=True, per_rank=block)


def _argument(K: Kit) -> Root:
    ctx = K.ctx
    r = K.culprit()
    if K.coin(0.7):
        err = K.pick(("unrecognized arguments: --warmup-ratio 0.03", "argument --lr: invalid float value: '3e-4,'",
                      "the following arguments are required: --data-path"))
        pad = " " * (len(ctx.script) + 7)
        block = lambda q: K.exc_lines(q, [f"usage: {ctx.script} [-h] [--lr LR] [--batch-size BATCH_SIZE] [--max-steps MAX_STEPS]",  # noqa: E731
                                          f"{pad}[--data-path DATA_PATH] [--log-interval LOG_INTERVAL] [--seed SEED]",
                                          f"{ctx.script}: error: {err}"])
        return Root(block(r), f"{ctx.script}: error: ", "argparse_exit", r, exit_code=2, all_ranks=True, per_rank=block)
    frames = [_script_frame(K, 44, "parser.add_argument('--local-rank', type=int, default=-1)"),
              ("/usr/lib/python3.10/argparse.py", 1448, "add_argument", "return self._add_action(action)"),
              ("/usr/lib/python3.10/argparse.py", 1585, "_handle_conflict_error", "raise ArgumentError(action, message % conflict_string)")]
    return _simple(K, frames, "argparse.ArgumentError: argument --local-rank: conflicting option string: --local-rank",
                   "conflict", sig="argparse.ArgumentError")


BUILDERS: dict[FailureReason, Callable[[Kit], Root]] = {
    FailureReason.NVLINK_ERROR: _nvlink,
    FailureReason.CUDA_ERROR: _cuda,
    FailureReason.NODE_FAILURE: _node,
    FailureReason.ECC_ERROR: _ecc,
    FailureReason.NETWORK_ERROR: _network,
    FailureReason.CONNECTION_ERROR: _connection,
    FailureReason.S3_STORAGE_ERROR: _s3,
    FailureReason.NCCL_TIMEOUT_ERROR: _nccl_timeout,
    FailureReason.NCCL_REMOTE_ERROR: _nccl_remote,
    FailureReason.DATALOADER_KILLED: _dataloader,
    FailureReason.ATTRIBUTE_ERROR: _attribute,
    FailureReason.OUT_OF_MEMORY_ERROR: _oom,
    FailureReason.RUNTIME_ERROR: _runtime,
    FailureReason.ASSERTION_ERROR: _assertion,
    FailureReason.VALUE_ERROR: _value,
    FailureReason.ZERO_DIVISION_ERROR: _zero_div,
    FailureReason.MODEL_LOADING_ERROR: _model_loading,
    FailureReason.DATASET_LOADING_ERROR: _dataset_loading,
    FailureReason.FILE_NOT_FOUND_ERROR: _file_not_found,
    FailureReason.TYPE_ERROR: _type,
    FailureReason.OS_ERROR: _os,
    FailureReason.KEY_ERROR: _key,
    FailureReason.IMPORT_ERROR: _import,
    FailureReason.INDEX_ERROR: _index,
    FailureReason.NAME_ERROR: _name,
    FailureReason.SYNTAX_ERROR: _syntax,
    FailureReason.PERMISSION_ERROR: _permission,
    FailureReason.CALLED_PROCESS_ERROR: _called_process,
    FailureReason.ARGUMENT_ERROR: _argument,
}


# ---- cascades --------------------------------------------------------------------------------------
def _peer_timeouts(K: Kit, root: Root, t: float, k: int) -> list[str]:
    """Watchdog timeouts on ranks that kept waiting in a collective for the dead rank."""
    culprit = root.rank if root.rank is not None else 0
    out: list[str] = []
    timeout_ms = 600000 if K.ctx.torch_new else 1800000
    seq = max(2, (K.timing.step or 0) * 4 + 2)
    for a in K.other_ranks(culprit, k):
        lines, n_root = _watchdog_lines(K, a, seq, "ALLREDUCE", 1, timeout_ms, t + timeout_ms / 1000)
        out += lines[:n_root] if K.small else lines
    return out


def _oom_cascade(K: Kit, rank: int) -> list[str]:
    exc = (f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 MiB. GPU {K.ctx.local(rank)} has a total "
           "capacity of 79.15 GiB of which 1.25 MiB is free.")
    frames = [("{site}/torch/distributed/distributed_c10d.py", 4165, "barrier", "work = default_pg.barrier(opts=opts)")]
    return K.tb(rank, frames, [exc])


def _launcher_summary(K: Kit, root: Root, failed: list[int], t: float) -> list[str]:
    ctx, spec = K.ctx, K.spec
    launcher = Launcher(resolved(spec.launcher))
    culprit = root.rank if root.rank is not None else (failed[0] if failed else 0)
    code = root.exit_code
    if K.extra.get("reported") is not None:  # other_rank: a peer aborted first and is what the launcher reports
        culprit, code = K.extra["reported"], -6
    out: list[str] = []
    if launcher in (Launcher.TORCHRUN, Launcher.ACCELERATE) and ctx.world_size > 1:
        node = culprit // ctx.gpus_per_node
        local_ranks = [r for r in range(node * ctx.gpus_per_node, min(ctx.world_size, (node + 1) * ctx.gpus_per_node))]
        others = [r for r in local_ranks if r != culprit and r not in failed]
        if K.small:
            others = others[:2]
        for r in others:
            if ctx.torch_new:
                out.append(ctx.glog("W", t + 1, ctx.agent_pid, "torch/distributed/elastic/multiprocessing/api.py:897")
                           + f"Sending process {ctx.pids[r]} closing signal SIGTERM")
            else:
                out.append(f"WARNING:torch.distributed.elastic.multiprocessing.api:Sending process {ctx.pids[r]} closing signal SIGTERM")
        fail_msg = f"failed (exitcode: {code}) local_rank: {ctx.local(culprit)} (pid: {ctx.pids[culprit]}) of binary: {ctx.python}"
        if ctx.torch_new:
            out.append(ctx.glog("E", t + 2, ctx.agent_pid, "torch/distributed/elastic/multiprocessing/api.py:869") + fail_msg)
        else:
            out.append("ERROR:torch.distributed.elastic.multiprocessing.api:" + fail_msg)
        frames = TORCHRUN
        if launcher is Launcher.ACCELERATE:
            frames = ACCELERATE + TORCHRUN[3:]
        if K.small:
            frames = frames[-2:]
        out += format_traceback(ctx, frames, ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: "])
        sig = {-6: "Signal 6 (SIGABRT) received by PID {pid}", -9: "Signal 9 (SIGKILL) received by PID {pid}"}

        def entry(i: int, r: int, c: int) -> list[str]:
            tb = sig[c].format(pid=ctx.pids[r]) if c in sig else "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
            return [f"[{i}]:", f"  time      : {ctx.ts(t, 'elastic')}", f"  host      : {ctx.host_of(r)}",
                    f"  rank      : {r} (local_rank: {ctx.local(r)})", f"  exitcode  : {c} (pid: {ctx.pids[r]})",
                    "  error_file: <N/A>", f"  traceback : {tb}"]

        rest = [r for r in failed if r != culprit][: (1 if K.small else 3)]
        out += ["=" * 60, f"{ctx.script} FAILED", "-" * 60, "Failures:"]
        if rest:
            for i, r in enumerate(rest, 1):
                out += entry(i, r, code)
        else:
            out.append("  <NO_OTHER_FAILURES>")
        out += ["-" * 60, "Root Cause (first observed failure):"] + entry(0, culprit, code) + ["=" * 60]
        return out
    if launcher is Launcher.DEEPSPEED:
        ts = ctx.ts(t + 1, "ds")
        for r in ctx.visible[: (2 if K.small else 8)]:
            out.append(f"[{ts}] [INFO] [launch.py:319:sigkill_handler] Killing subprocess {ctx.pids[r]}")
        out.append(f"[{ts}] [ERROR] [launch.py:325:sigkill_handler] ['{ctx.python}', '-u', '{ctx.script}', "
                   f"'--local_rank={ctx.local(culprit)}', '--deepspeed', '--deepspeed_config', 'ds_config.json'] exits with return code = {code}")
        if len(ctx.hosts) > 1:
            out.append(f"pdsh@{ctx.hosts[0]}: {ctx.host_of(culprit)}: ssh exited with exit code {code if code > 0 else 1}")
        return out
    if launcher is Launcher.SRUN:
        code_s = f"Exited with exit code {code}" if code > 0 else "Killed"
        out += [f"srun: error: {ctx.host_of(culprit)}: task {culprit}: {code_s}",
                "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
                f"slurmstepd: error: *** STEP {ctx.job_id}.0 ON {ctx.hosts[0]} CANCELLED AT {ctx.ts(t + 3, 'iso')} ***"]
        if ctx.world_size > 1:
            out.append(f"srun: error: {ctx.hosts[0]}: tasks 0-{min(ctx.world_size, ctx.gpus_per_node) - 1}: Terminated")
        return out
    if launcher is Launcher.MPIRUN:
        dash = "-" * 74
        return [dash, "Primary job  terminated normally, but 1 process returned", "a non-zero exit code. Per user-direction, the job has been aborted.",
                dash, dash, "mpirun detected that one or more processes exited with non-zero status, thus causing",
                "the job to be terminated. The first process to do so was:", "",
                f"  Process name: [[{ctx.job_id % 65536},1],{culprit}]", f"  Exit code:    {code if code > 0 else 134}", dash]
    # a single python process: teardown only
    out += ["wandb: ", f"wandb: 🚀 View run {ctx.model_name.split('/')[-1]}-run{ctx.job_id % 1000} at: "
            f"https://wandb.ai/team/pretrain/runs/{ctx.job_id:x}", f"wandb: Find logs at: ./wandb/run-{ctx.job_id:x}/logs"]
    if K.coin(0.5):
        out += [f"Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f{ctx.job_id:08x}>",
                "Traceback (most recent call last):",
                f'  File "{ctx.site}/torch/utils/data/dataloader.py", line 1479, in __del__',
                "    self._shutdown_workers()",
                f'  File "{ctx.site}/torch/utils/data/dataloader.py", line 1443, in _shutdown_workers',
                "    w.join(timeout=_utils.MP_STATUS_CHECK_INTERVAL)"]
    return out


def build_root(K: Kit, reason: FailureReason, pool: Pool | str | None) -> Root:
    """The root-cause block of `reason` from a template of `pool` (any template when None)."""
    builder = BUILDERS[FailureReason(reason)]
    for _ in range(256):
        root = builder(K)
        if pool is None or template_pool(reason, root.variant) is Pool(pool):
            return root
    raise RuntimeError(f"no {pool} template of {reason} for this job")  # pragma: no cover - pools.py lists one per phase


def launcher_lines(K: Kit, root: Root, t: float, *, restart: bool = False) -> list[str]:
    """What the launcher prints when a worker fails: the teardown and, with `restart`, the restart of
    the worker group (torchrun's elastic agent) or of the job (a Slurm wrapper's auto-resume)."""
    ctx = K.ctx
    r = root.rank if root.rank is not None else 0
    launcher = Launcher(resolved(K.spec.launcher))
    fail_msg = f"failed (exitcode: {root.exit_code}) local_rank: {ctx.local(r)} (pid: {ctx.pids[r]}) of binary: {ctx.python}"
    if not restart:
        return _launcher_summary(K, root, [r], t)
    if launcher in (Launcher.TORCHRUN, Launcher.ACCELERATE):
        left = int(K.rng.integers(1, 3))
        msgs = [("E", "multiprocessing/api.py:869", fail_msg),
                ("W", "agent/server/api.py:723", f"[default] Worker group FAILED. {left}/3 attempts left; will restart worker group"),
                ("I", "agent/server/api.py:681", "[default] Stopping worker group"),
                ("I", "agent/server/api.py:871", "[default] Rendezvous'ing worker group"),
                ("I", "agent/server/api.py:689", "[default] Starting worker group")]
        if ctx.torch_new:
            return [ctx.glog(lvl, t + i, ctx.agent_pid, f"torch/distributed/elastic/{where}") + m for i, (lvl, where, m) in enumerate(msgs)]
        names = {"E": "ERROR", "W": "WARNING", "I": "INFO"}
        mods = {"multiprocessing": "torch.distributed.elastic.multiprocessing.api", "agent": "torch.distributed.elastic.agent.server.api"}
        return [f"{names[lvl]}:{mods[where.split('/')[0]]}:{m}" for lvl, where, m in msgs]
    code = root.exit_code if root.exit_code > 0 else 1
    return [f"srun: error: {ctx.host_of(r)}: task {r}: Exited with exit code {code}",
            f"[auto-resume] training exited with code {code}; restarting from the latest checkpoint (attempt 2/3)"]


def render_tail(spec: LogSpec, ctx: JobContext, timing: FailureTiming, seed: np.random.SeedSequence, budget: int) -> TailBlock:
    """The failure tail: (decoys,) root-cause block, interleaved normal lines, (a hang,) cascade.
    Deterministic in `seed`; the hard cases of `spec.hard` draw from their own stream, and each one
    is only applied (and listed in `TailBlock.hard`) when `budget` leaves room for it."""
    from . import hard as H  # noqa: PLC0415 - hard.py builds on this module

    rng = np.random.default_rng(seed)
    hrng = np.random.default_rng(np.random.SeedSequence([*seed.generate_state(3, np.uint64).tolist(), 0x4A7D]))
    reason = FailureReason(resolved(spec.failure_reason))
    phase = FailurePhase(resolved(spec.failure_phase))
    pool = Pool(spec.pool) if spec.pool is not None else None
    want = set(HardCase(h) for h in (spec.hard or ()))
    K = Kit(ctx, spec, rng, phase, timing, budget)
    HK = Kit(ctx, spec, hrng, phase, timing, budget)
    root = build_root(K, reason, pool)
    applied: list[HardCase] = []
    multi = ctx.world_size > 1
    rank_level = root.rank is not None and reason not in (FailureReason.NCCL_TIMEOUT_ERROR, FailureReason.NODE_FAILURE)
    if HardCase.WARN_LEVEL in want and multi and rank_level and pool is not None and budget >= 60:
        warned = H.warn_root(HK, root, pool, timing.t_fail)
        if warned is not None:
            root = warned
            applied.append(HardCase.WARN_LEVEL)
    t_root = timing.t_fail + root.delay
    lines = list(root.lines)
    first = root.sig_idx
    block_end = len(lines) - 1
    # other ranks keep printing for a moment: normal-looking lines after the fault
    ns = NoiseSource(ctx, spec, np.random.default_rng(rng.integers(2**63)),
                     "train" if phase is FailurePhase.TRAIN else "init", pool_size=1)
    ns.t, ns.step, ns.total = t_root, timing.step or 0, timing.total_steps
    interleaved = ns.fill(int(rng.integers(1, 4)))
    hns = NoiseSource(ctx, spec, np.random.default_rng(hrng.integers(2**63)),
                      "train" if phase is FailurePhase.TRAIN else "init", pool_size=16)
    hns.t, hns.step, hns.total = t_root, timing.step or 0, timing.total_steps
    hang = (HardCase.HANG in want or HardCase.WARN_LEVEL in applied) and multi and rank_level
    cascade: list[str] = []
    failed = [root.rank] if root.rank is not None else []
    if root.all_ranks and multi and root.per_rank is not None and not hang:
        others = [r for r in ctx.visible if r != root.rank][: (1 if K.small else int(rng.integers(1, 4)))]
        for r in others:
            cascade += root.per_rank(r)
            failed.append(r)
    if reason is FailureReason.NCCL_TIMEOUT_ERROR:
        cascade += K.extra["watchdog_tail"]
        seq, op, numel, timeout_ms, stuck = K.extra["timeout"]
        for a in K.other_ranks(stuck, 1 if K.small else int(rng.integers(1, 4))):
            if a == root.rank:
                continue
            more, _ = _watchdog_lines(K, a, seq, op, numel, timeout_ms, t_root + 1)
            cascade += more
            failed.append(a)
        if not K.small and K.coin(0.3):  # NCCL#1284: an OOM printed after a timeout is a cascade
            cascade += _oom_cascade(K, K.other_ranks(stuck, 1)[0] if multi else stuck)
    elif reason is FailureReason.NODE_FAILURE:
        dead = K.extra["dead_node"]
        survivors = [r for r in range(ctx.world_size) if r // ctx.gpus_per_node != dead] or [0]
        for a in survivors[: (1 if K.small else 3)]:
            cascade += _remote_block(K, a, _ib_line(K, a, ctx.ips[dead]), t_root + 5)
            failed.append(a)
        root.exit_code = -6
    late: list[str] = []
    if multi and phase is FailurePhase.TRAIN and not root.all_ranks and reason not in (
            FailureReason.NCCL_TIMEOUT_ERROR, FailureReason.NODE_FAILURE):
        # peers of the dead rank: NCCL remote errors at once, or watchdog timeouts 10 (30) minutes later
        k = 1 if K.small else int(rng.integers(1, 3))
        u = rng.random()
        if u < 0.35:
            for a in K.other_ranks(root.rank if root.rank is not None else 0, k):
                last = f"socketProgress: Connection closed by remote peer {ctx.host_of(root.rank or 0)}<{int(rng.integers(30000, 60000))}>"
                cascade += _remote_block(K, a, last, t_root + 1)
        elif u < 0.7:
            late = _peer_timeouts(K, root, t_root, k)
    if reason in (FailureReason.CUDA_ERROR, FailureReason.ECC_ERROR) and root.rank is not None and not K.small:
        cascade.append(K.c10(root.rank, "E", "ProcessGroupNCCL.cpp:1182", t_root + 1)
                       + f"[Rank {root.rank}] NCCL watchdog thread terminated with exception: CUDA error: "
                       + ("uncorrectable ECC error encountered" if reason is FailureReason.ECC_ERROR else "an illegal memory access was encountered"))

    # -- hard cases: sized from what the budget leaves after the plain tail -----------------------------
    base_len = len(lines) + len(interleaved) + len(cascade) + len(late) + 40  # + the launcher summary
    room = max(0, budget - base_len)
    pre: list[str] = []
    sig = root.signature
    if HardCase.DECOYS in want and pool is not None and room >= 40:
        n_pre = int(min(room * 0.15, int(hrng.integers(20, 300))))
        pre = H.sprinkle(HK, hns.fill(n_pre), int(hrng.integers(2, 6)), pool, timing.t_fail, avoid=sig)
        pre = [x for x in pre if sig not in x]
        room -= len(pre)
        applied.append(HardCase.DECOYS)
    decoys_after = HardCase.DECOYS in applied
    gap: list[str] = []
    if hang:
        # a hang: thousands of quiet lines; a warning-level root alone: the job limps on for a while
        long = HardCase.HANG in want
        n_gap = int(min(room * 0.7, int(hrng.integers(1500, 5000)))) if long else int(min(room * 0.5, int(hrng.integers(20, 400))))
        if n_gap >= (600 if long else 0):
            gap = H.quiet(hns, HK, n_gap, pool, decoys_after, t_root + 60, None)
            room -= len(gap)
            if long:
                applied.append(HardCase.HANG)
        late = []
        cascade = _peer_timeouts(HK, root, t_root, 1 if K.small else int(hrng.integers(2, 6))) + cascade
    gap_max = 3 if spec.cascade_gap is None else int(spec.cascade_gap)
    if HardCase.FLOOD in want and multi and len(ctx.visible) >= 8 and room >= 300:
        target = int(min(room * 0.9, int(hrng.integers(1000, 6000))))
        seq = max(2, (timing.step or 0) * 4 + 2)
        more, fl = H.flood(HK, root, hns, target, t_root, seq, gap_max)
        if decoys_after and pool is not None:  # decoys are applied only with a pool
            more = H.sprinkle(HK, more, max(1, len(more) // 500), pool, t_root + 30)
        cascade += more
        failed += fl
        room -= len(more)
        applied.append(HardCase.FLOOD)
    elif decoys_after and cascade and pool is not None:
        cascade = H.sprinkle(HK, cascade, 1, pool, t_root + 30)
    if spec.cascade_lines is not None:  # a requested cascade length: peers' errors and survivors' output
        summary_len = len(_launcher_summary(Kit(ctx, spec, np.random.default_rng(0), phase, timing, budget), root, failed, t_root))
        need = int(spec.cascade_lines) - (len(interleaved) + len(gap) + len(cascade) + len(late) + summary_len)
        if need > 0:
            seq = max(2, (timing.step or 0) * 4 + 2)
            more, fl = H.flood(HK, root, hns, need, t_root, seq, gap_max) if multi else (hns.fill(need), [])
            cascade += more
            failed += fl
    if HardCase.OTHER_RANK in want and multi and root.rank is not None:
        peers = [r for r in failed if r != root.rank] or K.other_ranks(root.rank, 1)
        if peers:
            K.extra["reported"] = peers[0]
            if not late and not cascade:
                late = _peer_timeouts(HK, root, t_root, 1)
            applied.append(HardCase.OTHER_RANK)
    cascade += _launcher_summary(K, root, failed, t_root + 2)
    cascade += late  # printed by other nodes after the local launcher gave up (srun-merged output)
    if not cascade:  # pragma: no cover - every launcher prints something
        cascade = ["Killed"]
    out = pre + lines + interleaved + gap + cascade
    off = len(pre)
    return TailBlock(
        lines=out, block_start=off, first_line=off + first, block_end=off + block_end,
        cascade_start=off + len(lines) + len(interleaved) + len(gap),
        signature=root.signature, variant=root.variant, rank=root.rank,
        host=root.host if root.host is not None else (ctx.host_of(root.rank) if root.rank is not None else None),
        time=t_root, step=timing.step, hard=[h for h in HardCase if h in applied],
    )


def render_completion(spec: LogSpec, ctx: JobContext, timing: FailureTiming, rng: np.random.Generator,
                      train_runtime: float, train_loss: float) -> list[str]:
    """What a job prints after its last step when it finishes cleanly."""
    fw = Framework(resolved(spec.framework))
    t = timing.t_fail
    s = timing.total_steps
    pre = ctx.prefix(0)
    out: list[str]
    if fw is Framework.MEGATRON:
        out = [f"{pre}[after training is done] datetime: {ctx.ts(t, 'sec')} ",
               f"{pre}saving checkpoint at iteration {s:7d} to /checkpoints/gpt in torch_dist format",
               f"{pre}  successfully saved checkpoint from iteration {s:7d} to /checkpoints/gpt [ t 1/4, p 1/1 ]"]
    elif fw is Framework.DEEPSPEED:
        ts = ctx.ts(t + 5, "ds")
        out = [f"{pre}saving the final model ..."] + [f"[{ts}] [INFO] [launch.py:351:main] Process {ctx.pids[r]} exits successfully."
                                                      for r in ctx.visible]
    elif fw is Framework.HF_TRAINER:
        gbs = int(resolved(spec.global_batch_size))
        rt = max(train_runtime, 1e-3)
        loss = float(train_loss)
        out = [f"{pre}", f"{pre}", f"{pre}Training completed. Do not forget to share your model on huggingface.co/models =)", f"{pre}",
               f"{pre}{{'train_runtime': {round(rt, 4)!r}, 'train_samples_per_second': {round(s * gbs / rt, 3)!r}, "
               f"'train_steps_per_second': {round(s / rt, 3)!r}, 'train_loss': {loss!r}, 'epoch': 3.0}}",
               f"{pre}[INFO|trainer.py:3478] {ctx.ts(t, 'ds')} >> Saving model checkpoint to ./output",
               f"{pre}***** train metrics *****", f"{pre}  epoch                    =        3.0",
               f"{pre}  train_loss               =     {loss:.4f}", f"{pre}  train_runtime            = {int(rt) // 3600}:{int(rt) % 3600 // 60:02d}:{rt % 60:05.2f}",
               f"{pre}  train_samples_per_second =    {s * gbs / rt:7.3f}", f"{pre}  train_steps_per_second   =    {s / rt:7.3f}"]
    elif fw is Framework.LIGHTNING:
        out = [f"`Trainer.fit` stopped: `max_steps={s}` reached."]
    else:
        out = [f"{pre}training finished in {train_runtime:.1f}s", f"{pre}saving final checkpoint to out/ckpt_final.pt"]
    if ctx.world_size > 1 and ctx.torch_new:
        out += [f"{ctx.prefix(r)}[W{ctx.ts(t + 6, 'glog')} {ctx.pids[r]} ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has "
                "NOT been destroyed before we destruct ProcessGroupNCCL. On normal program exit, the application should call "
                "destroy_process_group to ensure that any pending NCCL operations have finished in this process. In rare cases "
                "this process can exit before this point and block the progress of another member of the process group. This "
                "constraint has always been present,  but this warning has only been added since PyTorch 2.4 (function operator())"
                for r in ctx.visible[:2]]
    return out


# names other modules of the package build on
watchdog_lines = _watchdog_lines
remote_block = _remote_block
peer_timeouts = _peer_timeouts
