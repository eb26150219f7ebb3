"""Lines real training jobs print that are not progress: NCCL INFO chatter, Python and c10
warnings repeated by every rank, config dumps, checkpoint/eval messages, lines that merely *look*
like progress (eval dicts, validation bars) and, optionally, benign lines that look like errors.

`NoiseSource.fill(k)` returns exactly k lines (multi-line units are cut at k). Unit choices and
random numbers are drawn in batches so a line costs about a microsecond.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from schedmate.logspec import Framework, LogSpec, resolved

from .context import BOLD, GREEN, YELLOW, JobContext
from .formats import tqdm_line

_WORDS = ("the model learns a cat sat on mat river bank light dark quantum gradient token stream mountain "
          "ocean castle dragon cloud forest engine signal memory garden winter summer history paper "
          "proof theorem market price city night morning").split()

TIMER_NAMES = ("forward-backward", "forward-compute", "backward-compute", "batch-generator",
               "layernorm-grads-all-reduce", "embedding-grads-all-reduce", "all-grads-sync", "params-all-gather",
               "optimizer-copy-to-main-grad", "optimizer-clip-main-grad", "optimizer-count-zeros",
               "optimizer-inner-step", "optimizer-copy-main-to-model-params", "optimizer")

MEGATRON_ARGS = (
    ("accumulate_allreduce_grads_in_fp32", "True"), ("adam_beta1", "0.9"), ("adam_beta2", "0.95"),
    ("adam_eps", "1e-08"), ("add_bias_linear", "False"), ("apply_query_key_layer_scaling", "False"),
    ("attention_dropout", "0.0"), ("attention_softmax_in_fp32", "False"), ("bf16", "True"),
    ("check_for_nan_in_loss_and_grad", "True"), ("clip_grad", "1.0"), ("data_path", "['/data/pile/pile_text_document']"),
    ("distributed_backend", "nccl"), ("distributed_timeout_minutes", "10"), ("eval_interval", "1000"),
    ("eval_iters", "10"), ("ffn_hidden_size", "11008"), ("fp16", "False"), ("global_batch_size", "{gbs}"),
    ("hidden_dropout", "0.0"), ("hidden_size", "4096"), ("init_method_std", "0.02"), ("log_interval", "{interval}"),
    ("lr", "0.0003"), ("lr_decay_style", "cosine"), ("lr_warmup_iters", "2000"), ("micro_batch_size", "1"),
    ("min_lr", "3e-05"), ("normalization", "RMSNorm"), ("num_attention_heads", "32"), ("num_layers", "32"),
    ("optimizer", "adam"), ("pipeline_model_parallel_size", "1"), ("position_embedding_type", "rope"),
    ("save", "/checkpoints/gpt"), ("save_interval", "1000"), ("seed", "1234"), ("seq_length", "{seq}"),
    ("sequence_parallel", "True"), ("swiglu", "True"), ("tensor_model_parallel_size", "4"),
    ("tokenizer_type", "GPT2BPETokenizer"), ("train_iters", "{total}"), ("use_distributed_optimizer", "True"),
    ("use_flash_attn", "True"), ("weight_decay", "0.1"), ("world_size", "{world}"),
)

DS_CONFIG = (
    ("activation_checkpointing_config", '{"partition_activations": false, "contiguous_memory_optimization": false, "cpu_checkpointing": false, "number_checkpoints": null, "synchronize_checkpoint_boundary": false, "profile": false}'),
    ("amp_enabled", "False"), ("bfloat16_enabled", "True"), ("checkpoint_parallel_write_pipeline", "False"),
    ("communication_data_type", "None"), ("curriculum_enabled_legacy", "False"), ("dataloader_drop_last", "False"),
    ("dump_state", "False"), ("fp16_auto_cast", "None"), ("fp16_enabled", "False"), ("global_rank", "0"),
    ("gradient_accumulation_steps", "{gas}"), ("gradient_clipping", "1.0"), ("gradient_predivide_factor", "1.0"),
    ("optimizer_name", "adamw"), ("optimizer_params", "{'lr': 0.0003, 'betas': [0.9, 0.95], 'eps': 1e-08, 'weight_decay': 0.1}"),
    ("prescale_gradients", "False"), ("steps_per_print", "{interval}"), ("train_batch_size", "{gbs}"),
    ("train_micro_batch_size_per_gpu", "{mbs}"), ("wall_clock_breakdown", "False"), ("world_size", "{world}"),
    ("zero_allow_untested_optimizer", "False"),
    ("zero_config", "stage=2 contiguous_gradients=True reduce_scatter=True reduce_bucket_size=500000000 allgather_partitions=True allgather_bucket_size=500000000 overlap_comm=True load_from_fp32_weights=True"),
    ("zero_enabled", "True"), ("zero_optimization_stage", "2"),
)

YAML_CONFIG = """model:
  name: {model}
  n_layer: 24
  n_head: 16
  n_embd: 2048
  dropout: 0.0
  bias: false
data:
  path: /data/openwebtext
  seq_len: {seq}
  num_workers: 8
  pin_memory: true
optim:
  lr: 3.0e-04
  weight_decay: 0.1
  betas: [0.9, 0.95]
  warmup_steps: 2000
trainer:
  max_steps: {total}
  precision: bf16-mixed
  devices: {world}
  strategy: ddp
  log_every_n_steps: {interval}
  gradient_clip_val: 1.0
seed: 1337""".split("\n")


def _fill(template: str, values: dict) -> str:
    """Replace `{key}` placeholders (and nothing else: values may hold JSON braces)."""
    for k, v in values.items():
        template = template.replace("{" + k + "}", str(v))
    return template


class NoiseSource:
    """Draws noise units for one log. Set `t` (job seconds) and `step` before each `fill`."""

    BATCH = 4096

    def __init__(self, ctx: JobContext, spec: LogSpec, rng: np.random.Generator, mode: str = "train",
                 pool_size: int = 64) -> None:
        self.ctx = ctx
        self.spec = spec
        self.rng = rng
        self.mode = mode
        self.t = 0.0
        self.step = 0
        self.total = 1
        self.spe = 1  # steps per epoch
        self.loss = 2.5  # current training loss (set by the generator)
        self.fw = Framework(resolved(spec.framework))
        fw = self.fw
        site = ctx.site
        # (weight, unit, static): static units hold no step or time, so each log pre-renders a pool of
        # them once and serves copies; dynamic units are rendered when drawn.
        units: list[tuple[float, Callable[[], list[str]], bool]] = []
        nccl = bool(spec.nccl_debug)
        if mode == "train":
            if nccl:
                units.append((3.0, self._nccl, True))
            units += [(1.0, self._warn_py, True), (0.4, self._warn_cpp, False), (0.5, self._fw_static, True),
                      (1.5, self._framework, False), (1.5, self._log_info, False), (0.4, self._sample, False),
                      (0.4, self._monitor, False), (0.6, self._distractor, False)]
            if spec.red_herrings:
                units.append((0.3, self._red_herring, True))
        else:
            if nccl:
                units.append((4.0, self._nccl_init_rank, True))
            units += [(3.0, self._param_listing, True), (1.0, self._dataset_index, True), (1.0, self._warn_py, True),
                      (1.5, self._config_kv, True), (1.0, self._log_info, False)]
            if spec.red_herrings:
                units.append((0.3, self._red_herring_init, True))
        self.units = [u for _, u, _ in units]
        self.static = [st for _, _, st in units]
        self.pool_size = pool_size
        self._pools: dict[int, list[list[str]]] = {}
        w = np.array([w for w, _, _ in units], dtype=float)
        self.p = w / w.sum()
        self._ts_key: tuple[float, str] | None = None
        self._ts_val = ""
        self._levels: dict[str, str] = {}
        self._sentences: list[str] = []
        self._choices: list[int] = []
        self._ints: list[int] = []
        self._floats: list[float] = []
        self.warnings: list[tuple[str, ...]] = [
            (f"{site}/torch/utils/checkpoint.py:464: UserWarning: torch.utils.checkpoint: the use_reentrant parameter "
             "should be passed explicitly. In version 2.4 we will raise an exception if use_reentrant is not passed. "
             "use_reentrant=False is recommended, but if you need to preserve the current default behavior, you can "
             "pass use_reentrant=True. Refer to docs for more details on the differences between the two variants.",
             "  return fn(*args, **kwargs)"),
            (f"{ctx.workdir}/{ctx.script}:214: FutureWarning: `torch.cuda.amp.autocast(args...)` is deprecated. "
             "Please use `torch.amp.autocast('cuda', args...)` instead.",
             "  with torch.cuda.amp.autocast(dtype=torch.bfloat16):"),
            (f"{site}/torch/storage.py:414: UserWarning: TypedStorage is deprecated. It will be removed in the future "
             "and UntypedStorage will be the only storage class. This should only matter to you if you are using "
             "storages directly.  To access UntypedStorage directly, use tensor.untyped_storage() instead of "
             "tensor.storage()",
             "  return self.fget.__get__(instance, owner)()"),
            (f"{site}/torch/optim/lr_scheduler.py:143: UserWarning: Detected call of `lr_scheduler.step()` before "
             "`optimizer.step()`. In PyTorch 1.1.0 and later, you should call them in the opposite order: "
             "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this will result in PyTorch skipping "
             "the first value of the learning rate schedule. See more details at "
             "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
             '  warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. "'),
        ]
        if fw is Framework.HF_TRAINER:
            self.warnings.append(("`use_cache=True` is incompatible with gradient checkpointing. Setting `use_cache=False`.",))
        if fw is Framework.LIGHTNING:
            self.warnings.append((
                f"{site}/lightning/pytorch/trainer/connectors/data_connector.py:424: The 'train_dataloader' does not "
                "have many workers which may be a bottleneck. Consider increasing the value of the `num_workers` "
                "argument` to `num_workers=15` in the `DataLoader` to improve performance.",))
            self.warnings.append((
                f"{site}/lightning/pytorch/trainer/connectors/logger_connector/result.py:431: It is recommended to use "
                "`self.log('train_loss', ..., sync_dist=True)` when logging on epoch level in distributed setting to "
                "accumulate the metric across devices.",))
        self.cpp_warnings = (
            "reducer.cpp:1389] Warning: find_unused_parameters=True was specified in DDP constructor, but did not find "
            "any unused parameters in the forward pass. This flag results in an extra traversal of the autograd graph "
            "every iteration,  which can adversely affect performance. If your model indeed never has any unused "
            "parameters in the forward pass, consider turning this flag off. Note that this warning may be a false "
            "positive if your model has flow control causing later iterations to have unused parameters. "
            "(function operator())",
            "ProcessGroupNCCL.cpp:2291] Warning: TORCH_NCCL_AVOID_RECORD_STREAMS=1 has no effect for point-to-point "
            "collectives. (function operator())",
        )

    # ---- random helpers ----------------------------------------------------------------------------
    def _int(self, n: int) -> int:
        if not self._ints:
            self._ints = self.rng.integers(0, 2**31 - 1, size=self.BATCH).tolist()
        return self._ints.pop() % n

    def _float(self) -> float:
        if not self._floats:
            self._floats = self.rng.random(self.BATCH).tolist()
        return self._floats.pop()

    def _hex(self) -> str:
        return "0x%x" % (0x55D000000000 + self._int(0xFFFFFFFFF))

    def _rank(self) -> int:
        v = self.ctx.visible
        return v[self._int(len(v))]

    def _ts(self, style: str) -> str:
        """Timestamp of the current time `t`, cached: the units of one gap share it."""
        key = (self.t, style)
        if key != self._ts_key:
            self._ts_key = key
            self._ts_val = self.ctx.ts(self.t, style)
        return self._ts_val

    def fill(self, k: int) -> list[str]:
        """Exactly k noise lines."""
        out: list[str] = []
        units, static, pools = self.units, self.static, self._pools
        while len(out) < k:
            if not self._choices:
                self._choices = self.rng.choice(len(units), size=self.BATCH, p=self.p).tolist()
            i = self._choices.pop()
            if static[i]:
                pool = pools.get(i)
                if pool is None:
                    pool = pools[i] = [units[i]() for _ in range(self.pool_size)]
                out.extend(pool[self._int(len(pool))])
            else:
                out.extend(units[i]())
        del out[k:]
        return out

    # ---- units: training phase ---------------------------------------------------------------------
    def _nccl(self) -> list[str]:
        ctx = self.ctx
        r = self._rank()
        d = ctx.local(r)
        head = ctx.prefix(r) + ctx.nccl_head(r, 30 + self._int(200))
        i = self._int(9)
        n = (2, 4, 8, ctx.world_size)[self._int(4)]
        if i == 0:
            r2 = (r + 1) % max(2, ctx.gpus_per_node)
            return [f"{head} NCCL INFO Channel {self._int(16):02d}/0 : {r}[{d}] -> {r2}[{ctx.local(r2)}] via P2P/IPC/read"]
        if i == 1:
            return [f"{head} NCCL INFO Channel {self._int(8):02d}/1 : {r}[{d}] -> {(r + 8) % max(1, ctx.world_size)}[{d}] [send] via NET/IB/{d}/GDRDMA"]
        if i in (2, 3):
            bus = ctx.bus_ids[d]
            comm, cid = self._hex(), self._hex()
            return [f"{head} NCCL INFO comm {comm} rank {self._int(n)} nranks {n} cudaDev {d} nvmlDev {d} busId {bus}000 commId {cid} - Init START",
                    f"{head} NCCL INFO comm {comm} rank {self._int(n)} nranks {n} cudaDev {d} nvmlDev {d} busId {bus}000 commId {cid} - Init COMPLETE"]
        if i == 4:
            return [f"{head} NCCL INFO Connected all rings", f"{head} NCCL INFO Connected all trees"]
        if i == 5:
            return [f"{head} NCCL INFO P2P Chunksize set to 524288"]
        if i == 6:
            return [f"{head} NCCL INFO threadThresholds 8/8/64 | {8 * n}/8/64 | 512 | 512"]
        if i == 7:
            ch = (8, 16, 24, 32)[self._int(4)]
            return [f"{head} NCCL INFO {ch} coll channels, 0 collnet channels, 0 nvls channels, {ch} p2p channels, {ch // 2} p2p channels per peer"]
        return [f"{head} NCCL INFO Trees [0] {(r + 1) % n}/-1/-1->{r % n}->{(r - 1) % n} [1] {(r + 1) % n}/-1/-1->{r % n}->{(r - 1) % n}"]

    def _warn_py(self) -> list[str]:
        w = self.warnings[self._int(len(self.warnings))]
        out: list[str] = []
        for r in self.ctx.visible:
            p = self.ctx.prefix(r)
            out.extend(p + x for x in w)
        return out

    def _warn_cpp(self) -> list[str]:
        ctx = self.ctx
        msg = self.cpp_warnings[self._int(len(self.cpp_warnings))]
        if ctx.torch_new:
            head = "[W%s " % self._ts("glog")
            return [f"{ctx.prefix(r)}{head}{msg}" for r in ctx.visible]
        return [f"{ctx.prefix(r)}[W {msg}" for r in ctx.visible]

    def _level(self, level: str) -> str:
        """A logging level name, coloured when the job's logger uses ANSI colours."""
        got = self._levels.get(level)
        if got is None:
            got = self._levels[level] = (self.ctx.c(level, {"INFO": GREEN, "WARNING": YELLOW}.get(level, BOLD))
                                         if self.ctx.ansi else level)
        return got

    def _log_info(self) -> list[str]:
        ctx, i = self.ctx, self._int(6)
        pre = ctx.prefix(self._rank())
        ts = self._ts("ds")
        if i == 0:
            return [f"{pre}[{ts}] {self._level('INFO')} - data.py:88 - shard {self._int(512)}/512 loaded ({1000 + self._int(90000)} samples)"]
        if i == 1:
            return [f"{pre}{self._level('INFO')}:__main__:prefetch queue depth {self._int(16)}, dataloader wait {self._float() * 20:.1f} ms"]
        if i == 2:
            s = max(1, self.step)
            return [f"wandb: {self._level('WARNING')} Step must only increase in log calls.  Step {s - 1} < {s}; dropping {{'lr': {self._float() * 1e-4:.6g}}}."]
        if i == 3:
            return [f"{pre}[{ts}] {self._level('INFO')} - tokens seen: {self.step * int(resolved(self.spec.global_batch_size)) * int(resolved(self.spec.seq_length)):,}"]
        if i == 4:
            return [f"{pre}{self._level('INFO')}:root:Reached {self._int(100)}% of epoch data, reshuffling buffer"]
        return [f"{pre}[{ts}] {self._level('INFO')} - heartbeat ok (rank {self._rank()}, step {self.step})"]

    def _sample(self) -> list[str]:
        if not self._sentences:
            self._sentences = [" ".join(_WORDS[self._int(len(_WORDS))] for _ in range(6 + self._int(20))) for _ in range(48)]
        return [f"{self.ctx.prefix(0)}[sample @ step {self.step}] > {self._sentences[self._int(48)]}"]

    def _monitor(self) -> list[str]:
        d = self._int(self.ctx.gpus_per_node)
        return [f"[gpu-monitor] {self._ts('sec')} GPU {d}: util {60 + self._int(40)}% | mem "
                f"{20 + self._float() * 59:.1f}/80.0 GiB | power {250 + self._int(450)}W | temp {45 + self._int(35)}C"]

    def _framework(self) -> list[str]:
        return _FRAMEWORK_UNITS[self.fw](self)

    def _fw_static(self) -> list[str]:
        """Framework lines without step or time: Megatron's timer table, validation bars, ..."""
        pre = self.ctx.prefix(0)
        if self.fw is Framework.MEGATRON:
            out = [f"{pre}(min, max) time across ranks (ms):"]
            base = 100 + self._float() * 5000
            for name in TIMER_NAMES[: 4 + self._int(10)]:
                x = base * self._float()
                out.append(f"{pre}    {name} {'.' * (47 - len(name))}: ({x:.2f}, {x * 1.01:.2f})")
            return out
        if self.fw is Framework.LIGHTNING or self.fw is Framework.HF_TRAINER:
            desc = "Validation DataLoader 0" if self.fw is Framework.LIGHTNING else ""
            total = 20 + self._int(200)
            n0 = 1 + self._int(total)
            rate = 0.02 + self._float() * 0.2
            draws = [tqdm_line(n, total, n * rate, rate, desc) for n in range(n0, min(total, n0 + 1 + self._int(4)) + 1)]
            return [pre + "\r" + "\r".join(draws)] if self.spec.carriage_returns else [pre + d for d in draws]
        if self.fw is Framework.DEEPSPEED:
            return [f"{pre}Using {self.ctx.site.rsplit('/lib/', 1)[0]}/.cache/torch_extensions/py310_cu121 as PyTorch extensions root...",
                    f"{pre}No modifications detected for re-loaded extension module utils, skipping build step...",
                    f"{pre}Loading extension module utils..."][: 1 + self._int(3)]
        return [f"{pre}data: prefetching {1 + self._int(8)} shards into page cache"]

    def _distractor(self) -> list[str]:
        """Lines that resemble progress lines but are not (evaluation, other bars)."""
        ctx, s = self.ctx, max(1, self.step)
        pre = ctx.prefix(0)
        fw = self.fw
        v = self._eval_loss()
        if fw is Framework.HF_TRAINER:
            return [f"{pre}{{'eval_loss': {round(v, 4)!r}, 'eval_runtime': {round(5 + self._float() * 30, 4)!r}, "
                    f"'eval_samples_per_second': {round(50 + self._float() * 100, 3)!r}, 'eval_steps_per_second': "
                    f"{round(1 + self._float() * 4, 3)!r}, 'epoch': {round(s / max(1, self.spe), 2)!r}}}"]
        if fw is Framework.LIGHTNING:
            return [pre + self._bar("Validation DataLoader 0")]
        if fw is Framework.MEGATRON:
            return [f"{pre} validation loss at iteration {s} | lm loss value: {v:.6E} | lm loss PPL: {np.exp(v):.6E} | "]
        if fw is Framework.DEEPSPEED:
            return [f"{pre}ppl: {np.exp(v)!r}, loss: {v!r}"]
        return [f"{pre}step {s}: train loss {v:.4f}, val loss {v + 0.05 + self._float() * 0.1:.4f}"]

    def _eval_loss(self) -> float:
        """A validation loss near the current training loss."""
        return self.loss * (1.0 + 0.02 + 0.08 * self._float())

    def _bar(self, desc: str) -> str:
        total = 20 + self._int(200)
        n = 1 + self._int(total)
        rate = 0.02 + self._float() * 0.2
        return tqdm_line(n, total, n * rate, rate, desc)

    def _red_herring(self) -> list[str]:
        ctx = self.ctx
        i = self._int(4)
        if i == 0:
            return ["wandb: Network error (ReadTimeout), entering retry loop."]
        if i == 1:
            return [f"{ctx.prefix(0)}Token indices sequence length is longer than the specified maximum sequence length "
                    f"for this model ({5000 + self._int(3000)} > 4096). Running this sequence through the model will "
                    "result in indexing errors"]
        if i == 2:
            return [f"{ctx.prefix(self._rank())}WARNING:datasets.streaming:Got disconnected from remote data host. "
                    f"Retrying in 5sec [{1 + self._int(3)}/20]"]
        site = ctx.site
        return [
            "WARNING:mlflow.utils.async_logging:Failed to log metrics, will retry:",
            "Traceback (most recent call last):",
            f'  File "{site}/urllib3/connectionpool.py", line 793, in urlopen',
            "    response = self._make_request(",
            f'  File "{site}/urllib3/connectionpool.py", line 537, in _make_request',
            "    response = conn.getresponse()",
            f'  File "{site}/urllib3/connection.py", line 466, in getresponse',
            "    httplib_response = super().getresponse()",
            "http.client.RemoteDisconnected: Remote end closed connection without response",
        ]

    # ---- units: initialisation phase ---------------------------------------------------------------
    def _nccl_init_rank(self, r: int | None = None) -> list[str]:
        ctx = self.ctx
        r = self._rank() if r is None else r
        d = ctx.local(r)
        pre = ctx.prefix(r)
        head = pre + ctx.nccl_head(r)
        head2 = pre + ctx.nccl_head(r, 60 + self._int(100))
        n = ctx.world_size
        comm, cid, bus = self._hex(), self._hex(), ctx.bus_ids[d]
        ch = (2, 4, 8, 16)[self._int(4)]
        ranks = "".join(f"{x:4d}" for x in range(min(n, 8)))
        lines = [
            f"{head} NCCL INFO cudaDriverVersion 12020",
            f"{head} NCCL INFO Bootstrap : Using ib0:{ctx.ip_of(r)}<0>",
            f"{head} NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB ; OOB ib0:{ctx.ip_of(r)}<0>",
            f"{head} NCCL INFO Using network IB",
            f"{head} NCCL INFO comm {comm} rank {r} nranks {n} cudaDev {d} nvmlDev {d} busId {bus}000 commId {cid} - Init START",
            f"{head} NCCL INFO Setting affinity for GPU {d} to ffffffff,00000000,ffffffff",
        ]
        lines += [f"{head} NCCL INFO Channel {c:02d}/{ch:02d} :{ranks}" for c in range(ch)]
        lines += [
            f"{head} NCCL INFO Trees [0] {(r + 1) % n}/-1/-1->{r}->{(r - 1) % n} [1] {(r + 1) % n}/-1/-1->{r}->{(r - 1) % n}",
            f"{head} NCCL INFO P2P Chunksize set to 524288",
            f"{head2} NCCL INFO Channel 00/0 : {r}[{d}] -> {(r + 1) % n}[{ctx.local((r + 1) % n)}] via P2P/CUMEM/read",
            f"{head2} NCCL INFO Connected all rings",
            f"{head2} NCCL INFO Connected all trees",
            f"{head} NCCL INFO comm {comm} rank {r} nranks {n} cudaDev {d} nvmlDev {d} busId {bus}000 commId {cid} - Init COMPLETE",
        ]
        return lines

    def _param_listing(self) -> list[str]:
        layer = self._int(48)
        pre = self.ctx.prefix(0)
        h = (2048, 4096, 5120)[self._int(3)]
        names = (("self_attn.q_proj.weight", f"[{h}, {h}]"), ("self_attn.k_proj.weight", f"[{h}, {h}]"),
                 ("self_attn.v_proj.weight", f"[{h}, {h}]"), ("self_attn.o_proj.weight", f"[{h}, {h}]"),
                 ("mlp.gate_proj.weight", f"[{h * 8 // 3}, {h}]"), ("mlp.up_proj.weight", f"[{h * 8 // 3}, {h}]"),
                 ("mlp.down_proj.weight", f"[{h}, {h * 8 // 3}]"), ("input_layernorm.weight", f"[{h}]"),
                 ("post_attention_layernorm.weight", f"[{h}]"))
        return [f"{pre}  model.layers.{layer}.{n}: torch.Size({s}) torch.bfloat16 requires_grad=True" for n, s in names]

    def _dataset_index(self) -> list[str]:
        pre = self.ctx.prefix(0)
        k = self._int(64)
        return [f"{pre} > building dataset index for shard {k} ...", f"{pre}    reading sequence lengths...",
                f"{pre}    reading sequence pointers...", f"{pre}    reading document indices...",
                f"{pre}    number of documents: {100000 + self._int(10_000_000)}",
                f"{pre} > loaded doc-idx mapping from /data/index-cache/{self._hex()[2:]}-GPTDataset-doc_idx.npy"]

    def _config_kv(self) -> list[str]:
        key, val = MEGATRON_ARGS[self._int(len(MEGATRON_ARGS))]
        return [f"{self.ctx.prefix(0)}  {key} {'.' * max(3, 48 - len(key))} {_fill(val, self._fmt())}"]

    def _fmt(self) -> dict:
        s = self.spec
        return {"gbs": s.global_batch_size, "seq": s.seq_length, "interval": s.log_interval, "total": self.total,
                "world": s.world_size, "gas": 1, "mbs": max(1, int(resolved(s.global_batch_size)) // int(resolved(s.world_size))),
                "model": self.ctx.model_name}

    def _red_herring_init(self) -> list[str]:
        ctx = self.ctx
        r = self._rank()
        if self._int(2):
            return [f"{ctx.prefix(r)}[W socket.cpp:464] [c10d] The server socket cannot be initialized on [::]:29500 "
                    "(errno: 97 - Address family not supported by protocol)."]
        return [f"{ctx.prefix(r)}{ctx.nccl_head(r)} NCCL INFO NET/Plugin: Plugin load returned 2 : libnccl-net.so: cannot "
                "open shared object file: No such file or directory : when loading libnccl-net.so"]


# ---- framework-specific periodic lines --------------------------------------------------------------
def _megatron(ns: NoiseSource) -> list[str]:
    ctx, s, i = ns.ctx, max(1, ns.step), ns._int(3)
    pre = ctx.prefix(0)
    if i == 0:
        return [f"{pre}saving checkpoint at iteration {s:7d} to /checkpoints/gpt in torch_dist format",
                f"{pre}  successfully saved checkpoint from iteration {s:7d} to /checkpoints/gpt [ t 1/4, p 1/1 ]"]
    if i == 1:
        a = 20000 + ns._float() * 40000
        return [f"{ctx.prefix(ns._rank())}[Rank {ns._rank()}] (after {s} iterations) memory (MB) | allocated: {a:.2f} | "
                f"max allocated: {a * 1.3:.2f} | reserved: {a * 1.5:.1f} | max reserved: {a * 1.5:.1f}"]
    v = ns._eval_loss()
    dash = "-" * 100
    return [f"{pre}{dash}", f"{pre} validation loss at iteration {s} | lm loss value: {v:.6E} | lm loss PPL: {np.exp(v):.6E} | ",
            f"{pre}{dash}"]


def _deepspeed(ns: NoiseSource) -> list[str]:
    ctx, s, i = ns.ctx, max(1, ns.step), ns._int(4)
    pre = ctx.prefix(0)
    ts = ns._ts("ds")
    if i == 0:
        sc = 2 ** (10 + ns._int(7))
        return [f"{pre}[{ts}] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. "
                f"Attempted loss scale: {sc}, reducing to {sc // 2}"]
    if i == 1:
        f = 50 + ns._float() * 500
        return [f"{pre}[{ts}] [INFO] [logging.py:96:log_dist] [Rank 0] time (ms) | fwd_microstep: {f:.2f} | "
                f"bwd_microstep: {2 * f:.2f} | bwd_inner_microstep: {1.9 * f:.2f} | bwd_allreduce_microstep: "
                f"{0.1 * f:.2f} | step_microstep: {0.05 * f:.2f}"]
    if i == 2:
        path = f"/checkpoints/ds/global_step{s}/mp_rank_00_model_states.pt"
        return [f"{pre}[{ts}] [INFO] [logging.py:96:log_dist] [Rank 0] [Torch] Checkpoint global_step{s} is about to be saved!",
                f"{pre}[{ts}] [INFO] [logging.py:96:log_dist] [Rank 0] Saving model checkpoint: {path}",
                f"{pre}[{ts}] [INFO] [torch_checkpoint_engine.py:21:save] [Torch] Saving {path}...",
                f"{pre}[{ts}] [INFO] [torch_checkpoint_engine.py:23:save] [Torch] Saved {path}."]
    return [f"{ctx.prefix(ns._rank())}[{ts}] [WARNING] [stage3.py:2070:step] {1 + ns._int(6)} pytorch allocator cache "
            "flushes since last step. this happens when there is high memory pressure and is detrimental to "
            "performance. if this is happening frequently consider adjusting settings to reduce memory consumption. "
            "If you are unable to make the cache flushes go away consider adding get_accelerator().empty_cache() "
            "calls in your training loop to ensure that all ranks flush their caches at the same time"]


def _hf(ns: NoiseSource) -> list[str]:
    ctx, s, i = ns.ctx, max(1, ns.step), ns._int(2)
    pre = ctx.prefix(0)
    ts = ns._ts("ds")
    out = "./output"
    if i == 0:
        return [f"{pre}[INFO|trainer.py:3478] {ts} >> Saving model checkpoint to {out}/checkpoint-{s}",
                f"{pre}[INFO|configuration_utils.py:472] {ts} >> Configuration saved in {out}/checkpoint-{s}/config.json",
                f"{pre}[INFO|modeling_utils.py:2690] {ts} >> Model weights saved in {out}/checkpoint-{s}/model.safetensors",
                f"{pre}[INFO|tokenization_utils_base.py:2574] {ts} >> tokenizer config file saved in {out}/checkpoint-{s}/tokenizer_config.json"]
    return [f"{pre}[INFO|trainer.py:3788] {ts} >> ***** Running Evaluation *****",
            f"{pre}[INFO|trainer.py:3790] {ts} >>   Num examples = {1000 + ns._int(9000):,}",
            f"{pre}[INFO|trainer.py:3793] {ts} >>   Batch size = {(8, 16, 32)[ns._int(3)]}",
            pre + ns._bar("")]


def _lightning(ns: NoiseSource) -> list[str]:
    ctx, s = ns.ctx, max(1, ns.step)
    pre = ctx.prefix(0)
    e = (s - 1) // max(1, ns.spe)
    v = ns._eval_loss()
    if ns._int(2):
        return [f"{pre}Epoch {e}, global step {s}: 'val_loss' reached {v:.5f} (best {v:.5f}), saving model to "
                f"'/workspace/lit-project/checkpoints/epoch={e}-step={s}.ckpt' as top 1"]
    return [f"{pre}Epoch {e}, global step {s}: 'val_loss' was not in top 1"]


def _pytorch(ns: NoiseSource) -> list[str]:
    ctx, s = ns.ctx, max(1, ns.step)
    pre = ctx.prefix(0)
    if ns._int(2):
        return [f"{pre}saving checkpoint to out/ckpt_{s:07d}.pt"]
    v = ns._eval_loss()
    return [f"{pre}[eval] step {s} | val_loss {v:.4f} | val_ppl {np.exp(v):.2f}"]


_FRAMEWORK_UNITS: dict[Framework, Callable[[NoiseSource], list[str]]] = {
    Framework.MEGATRON: _megatron,
    Framework.DEEPSPEED: _deepspeed,
    Framework.HF_TRAINER: _hf,
    Framework.LIGHTNING: _lightning,
    Framework.PYTORCH: _pytorch,
}


# ---- the initialisation header ----------------------------------------------------------------------
def header_units(ctx: JobContext, spec: LogSpec, ns: NoiseSource, *, total_steps: int) -> list[list[str]]:
    """Ordered groups of lines a job prints before its first step (launcher banner, per-rank
    warnings, config dump, NCCL init, model and data set-up). The generator keeps a prefix of them."""
    fw = Framework(resolved(spec.framework))
    world = ctx.world_size
    fmt = ns._fmt() | {"total": total_steps}
    units: list[list[str]] = []
    launcher = str(spec.launcher)
    t = 0.0
    if launcher in ("torchrun", "accelerate") and world > 1:
        if ctx.torch_new:
            g = ctx.glog("W", t, ctx.agent_pid, "torch/distributed/run.py:793")
            units.append([g, g + "*****************************************",
                          g + "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid "
                              "your system being overloaded, please further tune the variable for optimal performance "
                              "in your application as needed. ",
                          g + "*****************************************"])
        else:
            units.append(["WARNING:torch.distributed.run:", "*****************************************",
                          "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid "
                          "your system being overloaded, please further tune the variable for optimal performance in "
                          "your application as needed. ", "*****************************************"])
    if launcher == "deepspeed":
        ts = ctx.ts(t, "ds")
        hosts = ", ".join(f"'{h}': [{', '.join(str(i) for i in range(ctx.gpus_per_node))}]" for h in ctx.hosts[:4])
        units.append([f"[{ts}] [INFO] [runner.py:568:main] cmd = {ctx.python} -u -m deepspeed.launcher.launch "
                      f"--world_info=eyJsb2NhbGhvc3QiOiBbMCwgMSwgMiwgM119 --master_addr={ctx.ips[0]} --master_port=29500 "
                      f"{ctx.script} --deepspeed --deepspeed_config ds_config.json",
                      f"[{ts}] [INFO] [launch.py:145:main] WORLD INFO DICT: {{{hosts}}}",
                      f"[{ts}] [INFO] [launch.py:151:main] nnodes={len(ctx.hosts)}, num_local_procs={ctx.gpus_per_node}, node_rank=0",
                      f"[{ts}] [INFO] [launch.py:163:main] dist_world_size={world}",
                      f"[{ts}] [INFO] [launch.py:165:main] Setting CUDA_VISIBLE_DEVICES={','.join(str(i) for i in range(ctx.gpus_per_node))}"])
        units.append([f"{ctx.prefix(r)}[{ts}] [INFO] [real_accelerator.py:203:get_accelerator] Setting ds_accelerator to cuda (auto detect)"
                      for r in ctx.visible])
    units.append(ns._warn_py())
    if fw is Framework.MEGATRON:
        pre = ctx.prefix(0)
        units.append([f"{pre}using world size: {world}, data-parallel size: {max(1, world // 4)}, context-parallel size: 1, "
                      f"tensor-model-parallel size: {min(4, world)}, pipeline-model-parallel size: 1 ",
                      f"{pre}------------------------ arguments ------------------------"]
                     + [f"{pre}  {k} {'.' * max(3, 48 - len(k))} {_fill(v, fmt)}" for k, v in MEGATRON_ARGS]
                     + [f"{pre}-------------------- end of arguments ---------------------"])
        units.append([f"{pre}> initializing torch distributed ...", f"{pre}> initialized tensor model parallel with size {min(4, world)}",
                      f"{pre}> initialized pipeline model parallel with size 1", f"{pre}> setting random seeds to 1234 ...",
                      f"{pre}> compiling dataset index builder ...",
                      f"{pre}make: Entering directory '{ctx.workdir}/megatron/core/datasets'",
                      f"{pre}make: Nothing to be done for 'default'.",
                      f"{pre}make: Leaving directory '{ctx.workdir}/megatron/core/datasets'",
                      f"{pre}>>> done with dataset index builder. Compilation time: 0.061 seconds",
                      f"{pre}time to initialize megatron (seconds): {5 + ns._float() * 60:.3f}"])
    elif fw is Framework.DEEPSPEED:
        ts = ctx.ts(t, "ds")
        pre = ctx.prefix(0)
        units.append([f"{pre}[{ts}] [INFO] [logging.py:96:log_dist] [Rank 0] DeepSpeed info: version=0.14.4, git-hash=unknown, git-branch=unknown",
                      f"{pre}[{ts}] [INFO] [logging.py:96:log_dist] [Rank 0] DeepSpeed Flops Profiler Enabled: False",
                      f"{pre}[{ts}] [INFO] [logging.py:96:log_dist] [Rank 0] DeepSpeed Basic Optimizer = FusedAdam",
                      f"{pre}[{ts}] [INFO] [logging.py:96:log_dist] [Rank 0] Creating ZeRO stage 2 optimizer",
                      f"{pre}[{ts}] [INFO] [config.py:984:print] DeepSpeedEngine configuration:"]
                     + [f"{pre}[{ts}] [INFO] [config.py:988:print]   {k} {' ' * max(1, 32 - len(k))}{_fill(v, fmt)}" for k, v in DS_CONFIG])
        units.append([f"{ctx.prefix(r)}Using {ctx.site.rsplit('/lib/', 1)[0]}/.cache/torch_extensions/py310_cu121 as PyTorch extensions root..."
                      for r in ctx.visible]
                     + [f"{pre}Loading extension module fused_adam...", f"{pre}Time to load fused_adam op: {0.05 + ns._float():.4f} seconds"])
    elif fw is Framework.HF_TRAINER:
        ts = ctx.ts(t, "ds")
        pre = ctx.prefix(0)
        units.append([f"{pre}[INFO|configuration_utils.py:733] {ts} >> loading configuration file config.json from cache at /root/.cache/huggingface/hub/models--{ctx.model_name.replace('/', '--')}/snapshots/{ns._hex()[2:]}/config.json",
                      f"{pre}[INFO|modeling_utils.py:3553] {ts} >> loading weights file model.safetensors from cache",
                      pre + "Loading checkpoint shards: 100%|██████████| 2/2 [00:04<00:00,  2.21s/it]",
                      pre + "Running tokenizer on dataset: 100%|██████████| 36718/36718 [00:09<00:00, 3871.56 examples/s]",
                      pre + "Grouping texts in chunks of 1024: 100%|██████████| 36718/36718 [00:11<00:00, 3218.43 examples/s]"])
        units.append([f"{pre}[INFO|trainer.py:2128] {ts} >> ***** Running training *****",
                      f"{pre}[INFO|trainer.py:2129] {ts} >>   Num examples = {int(resolved(spec.global_batch_size)) * total_steps:,}",
                      f"{pre}[INFO|trainer.py:2130] {ts} >>   Num Epochs = 3",
                      f"{pre}[INFO|trainer.py:2131] {ts} >>   Instantaneous batch size per device = {max(1, int(resolved(spec.global_batch_size)) // world)}",
                      f"{pre}[INFO|trainer.py:2134] {ts} >>   Total train batch size (w. parallel, distributed & accumulation) = {spec.global_batch_size}",
                      f"{pre}[INFO|trainer.py:2135] {ts} >>   Gradient Accumulation steps = 1",
                      f"{pre}[INFO|trainer.py:2136] {ts} >>   Total optimization steps = {total_steps:,}",
                      f"{pre}[INFO|trainer.py:2137] {ts} >>   Number of trainable parameters = {ctx.n_params:,}"])
    elif fw is Framework.LIGHTNING:
        units.append(["GPU available: True (cuda), used: True", "TPU available: False, using: 0 TPU cores",
                      "HPU available: False, using: 0 HPUs"]
                     + [f"{ctx.prefix(r)}Initializing distributed: GLOBAL_RANK: {r}, MEMBER: {r + 1}/{world}" for r in ctx.visible])
        units.append(["-" * 100, "distributed_backend=nccl", f"All distributed processes registered. Starting with {world} processes",
                      "-" * 100, ""]
                     + [f"{ctx.prefix(r)}LOCAL_RANK: {ctx.local(r)} - CUDA_VISIBLE_DEVICES: [{','.join(str(i) for i in range(ctx.gpus_per_node))}]"
                        for r in ctx.visible])
        units.append(list(YAML_CONFIG_FMT(fmt)))
        m = ctx.n_params / 1e6
        units.append(["", "  | Name  | Type | Params | Mode ", "----------------------------------------",
                      f"0 | model | GPT  | {m:.0f} M  | train", "----------------------------------------",
                      f"{m:.0f} M     Trainable params", "0         Non-trainable params", f"{m:.0f} M     Total params",
                      f"{ctx.n_params * 4 / 1e6:.3f}   Total estimated model params size (MB)",
                      "Sanity Checking DataLoader 0: 100%|██████████| 2/2 [00:00<00:00,  3.31it/s]"])
    else:
        pre = ctx.prefix(0)
        args = ", ".join(f"{k}={v}" for k, v in (
            ("batch_size", int(resolved(spec.global_batch_size)) // world), ("block_size", spec.seq_length), ("compile", True),
            ("dataset", "'openwebtext'"), ("dtype", "'bfloat16'"), ("eval_interval", 2000), ("grad_clip", 1.0),
            ("learning_rate", 0.0006), ("log_interval", spec.log_interval), ("max_iters", total_steps),
            ("n_embd", 768), ("n_head", 12), ("n_layer", 12), ("out_dir", "'out'"), ("warmup_iters", 2000),
            ("weight_decay", 0.1)))
        units.append([f"{pre}Namespace({args})",
                      f"{pre}tokens per iteration will be: {int(resolved(spec.global_batch_size)) * int(resolved(spec.seq_length)):,}",
                      f"{pre}Initializing a new model from scratch",
                      f"{pre}number of parameters: {ctx.n_params / 1e6:.2f}M",
                      f"{pre}num decayed parameter tensors: 50, with {ctx.n_params:,} parameters",
                      f"{pre}num non-decayed parameter tensors: 25, with 19,200 parameters",
                      f"{pre}using fused AdamW: True", f"{pre}compiling the model... (takes a ~minute)"])
    if spec.nccl_debug:
        units.append([f"{ctx.prefix(0)}{ctx.nccl_head(0)} NCCL INFO NCCL version {ctx.nccl_version}+cuda12.2"])
        units.extend(ns._nccl_init_rank(r) for r in ctx.visible)
    return units


def YAML_CONFIG_FMT(fmt: dict) -> list[str]:  # noqa: N802 - constant-like helper
    return [_fill(line, fmt) for line in YAML_CONFIG]
