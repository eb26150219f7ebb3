"""Suika's analytic job model (spec §2): model catalogue, coefficients, asymmetric 3D plans,
iteration time (Appendix A, with the §6 #1-#4 readings) and the per-GPU memory check.

Everything here is a pure function of frozen dataclasses, so the planner, the policy and the
redeployment model share one source of truth and the spec's worked examples test it directly.
GPUs are integer ids `node * gpus_per_node + slot`; racks group `nodes_per_rack` nodes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

GB = 1e9

DEFAULT_SEQ = 1024
DEFAULT_MICRO_BATCH = 24  # m: many divisors, so DP splits stay even (§6 #8)
DEFAULT_N_MICRO = 8  # N_b; global batch G = m * N_b = 192
DEFAULT_MEM_RESERVE = 0.10  # memory held back for CUDA/NCCL and model error


@dataclass(frozen=True, slots=True)
class Hardware:
    """Cluster hardware (§2.1): per-GPU effective bandwidths in bytes/s, node and rack sizes.

    `bw_cross` is the cross-rack figure (IB x 0.5, congestion)."""

    gpus_per_node: int = 8
    nodes_per_rack: int = 16
    bw_intra: float = 300 * GB
    bw_inter: float = 40 * GB
    bw_cross: float = 20 * GB
    bw_intra_sat: float = 2.0**30
    gpu_mem: float = 80 * GB
    peak_flops: float = 989e12

    def node(self, gpu: int) -> int:
        return gpu // self.gpus_per_node

    def rack(self, gpu: int) -> int:
        return gpu // (self.gpus_per_node * self.nodes_per_rack)

    def bandwidth(self, a: int, b: int) -> float:
        """EffectiveBandwidth between two GPUs: NVLink in a node, IB in a rack, IB x 0.5 across."""
        if self.node(a) == self.node(b):
            return self.bw_intra
        if self.rack(a) == self.rack(b):
            return self.bw_inter
        return self.bw_cross

    def node_bandwidth(self, na: int, nb: int) -> float:
        """Bandwidth between two nodes (the same rule, by node index)."""
        if na == nb:
            return self.bw_intra
        return self.bw_inter if na // self.nodes_per_rack == nb // self.nodes_per_rack else self.bw_cross


FULL_IB = Hardware()
HALF_IB = Hardware(bw_inter=20 * GB, bw_cross=10 * GB)
NO_IB = Hardware(bw_inter=0.15 * GB, bw_cross=0.075 * GB)


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """One Table 1 row: a model and its default plan (PP-DP-TP); the default's GPUs = basic demand."""

    name: str
    size_class: str
    params: float  # total parameters (embeddings ignored)
    layers: int
    hidden: int
    c_np: float
    pp: int
    dp: int
    tp: int

    @property
    def gpus(self) -> int:
        return self.pp * self.dp * self.tp

    @property
    def params_b(self) -> float:
        return self.params / 1e9


def _m(name: str, cls: str, params_b: float, pp: int, dp: int, tp: int, layers: int, hidden: int, c_np: float) -> ModelSpec:
    return ModelSpec(name, cls, params_b * 1e9, layers, hidden, c_np, pp, dp, tp)


CATALOGUE: dict[str, ModelSpec] = {
    m.name: m
    for m in (
        _m("GPT2-350M", "S", 0.35, 1, 1, 1, 24, 1024, 5),
        _m("GPT2-1.3B", "S", 1.3, 1, 4, 1, 24, 2048, 5),
        _m("GPT2-2.6B", "S", 2.6, 1, 4, 1, 32, 2560, 5),
        _m("Qwen2-0.5B", "S", 0.5, 1, 1, 1, 24, 896, 5),
        _m("Qwen2-1.5B", "S", 1.5, 1, 4, 1, 28, 1536, 5),
        _m("GPT2-6.7B", "M", 6.7, 1, 4, 2, 32, 4096, 5),
        _m("LLaMA2-7B", "M", 7.0, 1, 4, 2, 32, 4096, 7),
        _m("Qwen2-7B", "M", 7.0, 1, 4, 2, 28, 3584, 5),
        _m("GPT2-15B", "L", 15.0, 1, 4, 4, 48, 5120, 5),
        _m("LLaMA2-13B", "L", 13.0, 1, 4, 4, 40, 5120, 7),
        _m("GPT2-39B", "XL", 39.0, 2, 4, 4, 48, 8192, 5),
        _m("LLaMA-30B", "XL", 30.0, 2, 4, 4, 60, 6656, 7),
        _m("GPT2-76B", "XL", 76.0, 2, 4, 8, 60, 10240, 5),
        _m("LLaMA-65B", "XL", 65.0, 2, 4, 8, 80, 8192, 7),
        _m("Qwen2-72B", "XL", 72.0, 2, 4, 8, 80, 8192, 5),
        _m("LLaMA2-70B", "XL", 70.0, 3, 8, 8, 80, 8192, 7),
        _m("GPT2-175B", "XL", 175.0, 4, 8, 8, 96, 12288, 5),
    )
}
"""Table 1 of the paper (L and h are public architecture values, [sim])."""


@dataclass(frozen=True, slots=True)
class Coeffs:
    """Per-job coefficients of the estimator (§2.3) plus the job's fixed batching (§2.2)."""

    k_comp: float
    k_backward: float
    k_optim: float
    k_overlap: float
    k_activ: float
    k_param: float
    k_param_optim: float
    k_activ_p: float
    k_activ_np: float
    layers: int
    micro_batch: int = DEFAULT_MICRO_BATCH
    n_micro: int = DEFAULT_N_MICRO
    params_b: float = 0.0

    @property
    def global_batch(self) -> int:
        return self.micro_batch * self.n_micro


def coeffs_for(
    model: ModelSpec,
    hw: Hardware = FULL_IB,
    *,
    seq: int = DEFAULT_SEQ,
    micro_batch: int = DEFAULT_MICRO_BATCH,
    n_micro: int = DEFAULT_N_MICRO,
    mfu: float = 0.45,
) -> Coeffs:
    """Section 2.6 defaults for `model` (bf16 weights/grads, fp32 master + Adam, flash attention)."""
    p_l = model.params / model.layers
    s, h = seq, model.hidden
    k_activ = 2.0 * s * h
    return Coeffs(
        k_comp=(2 * p_l * s + 4 * s * s * h) / (hw.peak_flops * mfu),
        k_backward=2.0,
        k_optim=32 * p_l / 2.5e12,
        k_overlap=2.0,
        k_activ=k_activ,
        k_param=2 * p_l,
        k_param_optim=14 * p_l,
        k_activ_p=12 * k_activ,
        k_activ_np=model.c_np * k_activ,
        layers=model.layers,
        micro_batch=micro_batch,
        n_micro=n_micro,
        params_b=model.params_b,
    )


@dataclass(frozen=True, slots=True)
class Stage:
    """One pipeline stage: TP degree, its replicas (each a TP group of GPU ids on one node),
    its layer count and each replica's local micro-batch size."""

    tp: int
    replicas: tuple[tuple[int, ...], ...]
    layers: int
    batches: tuple[int, ...]

    @property
    def dp(self) -> int:
        return len(self.replicas)

    @property
    def gpus(self) -> tuple[int, ...]:
        return tuple(g for r in self.replicas for g in r)


@dataclass(frozen=True)
class Plan:
    """An asymmetric 3D plan: ordered stages (1F1B). DP and TP may differ between stages."""

    stages: tuple[Stage, ...]
    _cache: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    @cached_property
    def gpus(self) -> tuple[int, ...]:
        return tuple(g for s in self.stages for g in s.gpus)

    @property
    def num_gpus(self) -> int:
        return len(self.gpus)

    @cached_property
    def signature(self) -> tuple:
        """Identity of the plan for caching and for the simulator's error draw."""
        return tuple((s.tp, s.replicas, s.layers, s.batches) for s in self.stages)

    @property
    def shape(self) -> str:
        """Short human form: per stage `dp x tp / layers`."""
        return " | ".join(f"{s.dp}x{s.tp}/{s.layers}" for s in self.stages)

    def is_symmetric(self) -> bool:
        first = self.stages[0]
        return all(s.tp == first.tp and s.dp == first.dp for s in self.stages)


def even_split(n: int, parts: int) -> tuple[int, ...]:
    """n split into `parts` integers differing by at most one (larger first)."""
    q, r = divmod(n, parts)
    return tuple(q + (1 if i < r else 0) for i in range(parts))


def layout_plan(
    gpus: list[int], pp: int, dp: int, tp: int, c: Coeffs, hw: Hardware = FULL_IB, layers: tuple[int, ...] | None = None
) -> Plan | None:
    """A symmetric plan laid out rank by rank in PP -> DP -> TP order onto `gpus` (in that order).

    None if a TP group would straddle two nodes (TP stays within a node, §2.2) or the batch or the
    layers cannot be split that finely."""
    if len(gpus) != pp * dp * tp or dp > c.micro_batch or pp > c.layers:
        return None
    layer_split = layers or even_split(c.layers, pp)
    stages = []
    for i in range(pp):
        reps = []
        for j in range(dp):
            start = (i * dp + j) * tp
            group = tuple(gpus[start : start + tp])
            if hw.node(group[0]) != hw.node(group[-1]):
                return None
            reps.append(group)
        stages.append(Stage(tp, tuple(reps), layer_split[i], even_split(c.micro_batch, dp)))
    return Plan(tuple(stages))


# ---------------------------------------------------------------------------- iteration time
@dataclass(frozen=True, slots=True)
class StageTimes:
    fwd: float  # F_i
    bwd: float  # Bw_i
    tail: float  # E_i
    compute: float  # Cp_i


def _replica_times(c: Coeffs, hw: Hardware, b: int, layers: int, tp: int) -> tuple[float, float, float]:
    """(T_fwd, T_bwd, T_opt) of one TP replica (TP level of Appendix A)."""
    comp = c.k_comp * b * layers / tp
    comm = 0.0
    if tp > 1:
        v_tp = 2 * c.k_activ * b * layers * 2 * (1 - 1 / tp)
        v1 = v_tp / (2 * layers)
        sat = min(math.log2(v1) / math.log2(hw.bw_intra_sat), 1.0) if v1 > 1 else 1e-9
        comm = v_tp / (hw.bw_intra * max(sat, 1e-9))
    return comp + comm, c.k_backward * comp + comm, c.k_optim * layers / tp


def stage_times(stage: Stage, c: Coeffs, hw: Hardware, k_overlap: float | None = None) -> StageTimes:
    """DP level: the slowest replica, the DP gradient sync and its overlap with backward."""
    nodes = tuple(sorted({r[0] // hw.gpus_per_node for r in stage.replicas}))
    k = c.k_overlap if k_overlap is None else k_overlap
    return _stage_times(stage.tp, stage.layers, max(stage.batches), stage.dp, nodes, c, hw, k)


@lru_cache(maxsize=200_000)
def _stage_times(tp: int, layers: int, b: int, dp: int, nodes: tuple[int, ...], c: Coeffs, hw: Hardware, k: float) -> StageTimes:
    # the largest local batch is the slowest replica (homogeneous GPUs)
    f, bw, o = _replica_times(c, hw, b, layers, tp)
    d = 0.0
    if dp > 1:
        v_dp = (c.k_param * layers / tp) * 2 * (1 - 1 / dp)  # §6 #2
        if len(nodes) == 1:
            bw_dp = hw.bw_intra
        else:
            bw_dp = min(hw.node_bandwidth(a, b2) for i, a in enumerate(nodes) for b2 in nodes[i + 1 :])
        d = v_dp / bw_dp
    x = (bw**k + d**k) ** (1 / k) - bw if d > 0 else 0.0  # §6 #1: p-norm overlap
    return StageTimes(f, bw, x + o, f + bw)


def iteration_time(plan: Plan, c: Coeffs, hw: Hardware = FULL_IB) -> float:
    """T_PP of 1F1B: warm-up + (N_b - 1) x slowest stage + the part of the tail not hidden."""
    cache = plan._cache
    key = (c, hw)
    hit = cache.get(key)
    if hit is not None:
        return hit
    times = [stage_times(s, c, hw) for s in plan.stages]
    warm = sum(t.compute for t in times)
    steady = (c.n_micro - 1) * max(t.compute for t in times)
    tail, before = -math.inf, 0.0
    for t in times:
        tail = max(tail, t.tail - before)
        before += t.bwd
    value = warm + steady + tail
    cache[key] = value
    return value


def throughput(plan: Plan, c: Coeffs, hw: Hardware = FULL_IB) -> float:
    """Samples per second, G / T_PP (only ratios are used)."""
    return c.global_batch / iteration_time(plan, c, hw)


# ---------------------------------------------------------------------------- memory
def per_layer_memory(stage_index: int, stages: int, tp: int, b: int, c: Coeffs) -> float:
    """Bytes per layer on one GPU of stage `stage_index` (0-based) with local batch b (§2.4, §6 #4)."""
    in_flight = min(stages - stage_index, c.n_micro)
    mem = c.k_param_optim / tp + b * in_flight * (c.k_activ_p / tp + c.k_activ_np)
    if c.n_micro > stages - stage_index:
        mem += c.k_param / tp
    return mem


def peak_memory(plan: Plan, c: Coeffs) -> float:
    """The largest per-GPU memory over the plan's GPUs."""
    s = len(plan.stages)
    return max(per_layer_memory(i, s, st.tp, max(st.batches), c) * st.layers for i, st in enumerate(plan.stages))


def memory_cap(c: Coeffs, hw: Hardware, default_peak: float = 0.0, reserve: float = DEFAULT_MEM_RESERVE) -> float:
    """Usable bytes per GPU: (1 - reserve) x memory, or the default plan's peak if larger (§2.4 guard)."""
    return max((1 - reserve) * hw.gpu_mem, default_peak)


def feasible(plan: Plan, c: Coeffs, cap: float) -> bool:
    return all(max(st.batches) >= 1 for st in plan.stages) and peak_memory(plan, c) <= cap


def default_plan(model: ModelSpec, gpus: list[int], c: Coeffs, hw: Hardware = FULL_IB) -> Plan | None:
    """The user's default plan laid out on `gpus` (sorted by rack, node, gpu)."""
    return layout_plan(sorted(gpus), model.pp, model.dp, model.tp, c, hw)
