"""Decision time of one SCHEDULE call (issue 12: `bench/` reports it at 64 and 1,024 GPUs).

A snapshot is built on the engine: jobs drawn from the §5.2 mix (with XL models at 1,024 GPUs,
§6 #16) arrive at t = 0 until their basic demand fills `fill` of the cluster; the non-elastic arm
starts them at their default plans; at t = 60 s (warm-up over) a fresh Suika gets those jobs'
state and its SCHEDULE is timed: admission, tau, reclaim and the whole expand-and-balance grant
loop over the idle GPUs. Each round starts from the same snapshot with cold caches.
"""

from __future__ import annotations

import copy
import statistics
import time
from dataclasses import dataclass, replace

from ..cluster import ClusterSpec
from ..decisions import Decision
from ..engine import SimConfig, Simulator, simulate
from ..policy import ClusterView
from ..topology import Topology
from .config import NON_ELASTIC, SUIKA, ElasticConfig
from .policy import ElasticPolicy
from .workload import TraceConfig, generate_trace


@dataclass(frozen=True, slots=True)
class DecisionTime:
    num_gpus: int
    running_jobs: int
    idle_gpus: int
    rounds: int
    median_s: float
    max_s: float
    median_cpu_s: float = float("nan")  # CPU seconds: wall time on a shared machine measures the neighbours


def cluster_for(num_gpus: int, nodes_per_rack: int = 16) -> ClusterSpec:
    """H100 nodes of 8, `nodes_per_rack` per rack (Cluster-A: one rack; Cluster-B: 16 per rack)."""
    topo = Topology(nodes_per_switch=nodes_per_rack, switches_per_pod=1, bw_node=300.0, bw_switch=40.0, bw_pod=20.0)
    return ClusterSpec.homogeneous(num_gpus // 8, 8, "H100", topology=topo)


def decision_time(num_gpus: int, *, rounds: int = 3, fill: float = 0.75, seed: int = 0, config: ElasticConfig = SUIKA) -> DecisionTime:
    """Median wall time of one SCHEDULE call on a `fill`-loaded cluster of `num_gpus` GPUs."""
    mix = (("S", 6.0), ("M", 2.0), ("L", 2.0)) + ((("XL", 1.0),) if num_gpus >= 256 else ())
    pool = generate_trace(TraceConfig(num_gpus=num_gpus, num_jobs=max(40, num_gpus), mix=mix), seed)
    jobs, demand = [], 0
    for spec in pool:
        if demand + spec.num_gpus > fill * num_gpus:
            continue
        jobs.append(replace(spec, submit_time=0.0, duration=1e6))
        demand += spec.num_gpus
    cluster = cluster_for(num_gpus)
    base = ElasticPolicy(NON_ELASTIC)
    sim = Simulator(jobs, cluster, base, SimConfig(seed=seed, restart_cost=0.0, restart_cost_large=0.0, max_time=60.0))
    sim.run()
    times, cpu = [], []
    for _ in range(rounds):
        policy = ElasticPolicy(config)
        policy.jobs = copy.deepcopy(base.jobs)
        started, c0 = time.perf_counter(), time.process_time()
        policy.schedule(sim.view)
        times.append(time.perf_counter() - started)
        cpu.append(time.process_time() - c0)
    return DecisionTime(num_gpus, len(sim.running), sim.free_total, rounds, statistics.median(times), max(times),
                        statistics.median(cpu))


class _TimedPolicy(ElasticPolicy):
    """The policy, with the CPU seconds of each SCHEDULE call kept."""

    def __init__(self, config: ElasticConfig) -> None:
        super().__init__(config)
        self.cpu: list[float] = []

    def _schedule(self, view: ClusterView) -> list[Decision]:
        c0 = time.process_time()
        out = super()._schedule(view)
        self.cpu.append(time.process_time() - c0)
        return out


@dataclass(frozen=True, slots=True)
class ReplayTimes:
    num_gpus: int
    jobs: int
    calls: int
    cpu_p50_s: float
    cpu_p90_s: float
    cpu_p99_s: float
    cpu_max_s: float


def replay_decisions(num_gpus: int, *, hours: float = 2.0, seed: int = 0, config: ElasticConfig = SUIKA) -> ReplayTimes:
    """CPU seconds of every SCHEDULE call in a replay (warm state: per-job candidates and the shape
    memo persist between calls, so a call replans only the jobs whose reachable idle GPUs
    changed): the §5.2 trace scaled to `num_gpus` (120 jobs per 64 GPUs per 8 h, XL jobs from 256
    GPUs), `hours` of arrivals, simulated for `hours` + 1 h."""
    mix = (("S", 6.0), ("M", 2.0), ("L", 2.0)) + ((("XL", 1.0),) if num_gpus >= 256 else ())
    n = max(10, round(120 * num_gpus / 64 * hours / 8))
    jobs = generate_trace(TraceConfig(num_gpus=num_gpus, hours=hours, num_jobs=n, mix=mix), seed)
    policy = _TimedPolicy(config)
    cpu = policy.cpu
    simulate(jobs, cluster_for(num_gpus), policy,
             SimConfig(seed=seed, restart_cost=0.0, restart_cost_large=0.0, max_time=(hours + 1) * 3600))
    q = statistics.quantiles(cpu, n=100) if len(cpu) > 1 else cpu * 99
    return ReplayTimes(num_gpus, len(jobs), len(cpu), q[49], q[89], q[98], max(cpu, default=0.0))


if __name__ == "__main__":
    for n in (64, 1024, 4096):
        print(decision_time(n))
