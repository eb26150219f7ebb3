"""Redeployment cost (spec §3.9, [sim]): checkpoint-restart against Suika's device-to-device move.

The paper gives no formula; these are the spec's calibrated models. Checkpoint-restart is a line
through the cited 1.38 min (7B) and 2.02 min (13B). Device-to-device: new workers start while the
old plan trains (`t_init`), then the job pauses while every GPU of the new plan gathers its shard,
locally through CUDA IPC for the bytes it already holds, over NVLink/IB for the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import GB, Coeffs, Hardware, Plan


@dataclass(frozen=True, slots=True)
class RedeployCosts:
    """Constants of §3.9: checkpoint line, D2D fixed cost, IPC bandwidth, init overlap."""

    ckpt_base: float = 38.7
    ckpt_per_b: float = 6.33
    t_fix: float = 12.0
    bw_ipc: float = 10 * GB
    t_init: float = 30.0


def checkpoint_stall(params_b: float, costs: RedeployCosts = RedeployCosts()) -> float:
    """Seconds a checkpoint-restart stops the job: 38.7 s + 6.33 s per billion parameters."""
    return costs.ckpt_base + costs.ckpt_per_b * params_b


def _shards(plan: Plan) -> dict[int, tuple[float, float, float, float]]:
    """Per GPU: (first layer, end layer, shard start, shard end) it holds under `plan`."""
    out: dict[int, tuple[float, float, float, float]] = {}
    start = 0
    for st in plan.stages:
        for rep in st.replicas:
            for k, g in enumerate(rep):
                out[g] = (start, start + st.layers, k / st.tp, (k + 1) / st.tp)
        start += st.layers
    return out


def _overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def d2d_stall(old: Plan, new: Plan, c: Coeffs, hw: Hardware, costs: RedeployCosts = RedeployCosts()) -> float:
    """Pause of a device-to-device redeployment from `old` to `new` (after the `t_init` overlap).

    t_fix + max over the new plan's GPUs of local/bw_ipc + remote/bw_src, where local is the part
    of the GPU's new shard (layers x TP fraction x k_param_optim) it already held."""
    before, after = _shards(old), _shards(new)
    old_nodes = {hw.node(g) for g in before}
    old_racks = {hw.rack(g) for g in before}
    worst = 0.0
    for g, (l0, l1, s0, s1) in after.items():
        need = (l1 - l0) * (s1 - s0) * c.k_param_optim
        local = 0.0
        if g in before:
            o0, o1, os0, os1 = before[g]
            local = _overlap(l0, l1, o0, o1) * _overlap(s0, s1, os0, os1) * c.k_param_optim
        remote = need - local
        if hw.node(g) in old_nodes:
            bw_src = hw.bw_intra
        elif hw.rack(g) in old_racks:
            bw_src = hw.bw_inter
        else:
            bw_src = hw.bw_cross
        worst = max(worst, local / costs.bw_ipc + remote / bw_src)
    return costs.t_fix + worst
