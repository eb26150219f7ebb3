"""Sia (SOSP '23) on Suika's job model: a whole-cluster re-solve every 60 s (issue 26).

The §5.2 Sia-proxy only hands idle GPUs out and takes them back only to admit a job. Sia itself
re-solves every job's allocation each round, so GPUs move from a poorly scaling job to a better
one, and a queued job can start below its default size. Each round (`optimize`):

1. Configurations (Sia's `CONFIGS_8GPU` shape): 1, 2, 4 GPUs on one node, then whole nodes;
   a job keeps its PP/TP degrees (the DP-only space the Suika paper gives Sia) and may use any of
   them that is a whole number of its model replicas (PP x TP GPUs, Sia's scale unit for
   pipeline jobs), with at most m = 24 replicas and a plan that fits memory (§2.4 cap). A job
   may run below its basic demand: Sia has no basic-first guarantee (the Suika paper, §4:
   "Sia and Rubick delay some jobs substantially").
2. Goodput = the modelled throughput (the same estimator Suika has, from time 0, as §2.5 gives
   the baselines); each row is normalised by the job's smallest configuration; for a running
   job every configuration but its current one is multiplied by the Pollux / Sia reallocation
   factor max(age - restarts x R, 0) / (age + R), R = its checkpoint-restart stall (§3.9).
3. Sia's ILP (`schedulers.sia.ilp.solve_allocation`, p = -0.5, lambda_n = 1.1, one GPU type);
   jobs still in a checkpoint-restart keep their configuration (the artifact's
   `preserve_ckpt_allocs`).
4. Placement: unchanged jobs keep their GPUs; the others are packed largest first (whole nodes
   for multi-node configurations, the fullest node that fits otherwise, a job's previous GPUs
   first); if that fails, every job is repacked (Sia's sizes always pack on an empty homogeneous
   cluster). A changed allocation pays checkpoint-restart (§3.9): the job stops at once and holds
   its old GPUs for the stall, so a job placed on them starts when the stall ends. A job the ILP
   leaves out is preempted (its GPUs free at once, as in Sia's simulator) and pays the stall
   when it resumes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..decisions import Decision, Migrate, Preempt, Resize, Start
from ..job import JobState
from ..policy import ClusterView
from ..sia.ilp import solve_allocation
from ..sia.policy import realloc_factor
from .config import SIA, ElasticConfig
from .model import Hardware, Plan, layout_plan, peak_memory, throughput
from .policy import ElasticPolicy, SuikaJob, engine_plan, placement_of
from .redeploy import checkpoint_stall

_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class SiaParams:
    """Sia's hyper-parameters as the Suika paper configures them (§4: p = -0.5, lambda_n = 1.1)."""

    p: float = -0.5
    lambda_n: float = 1.1
    time_limit: float = 10.0
    at_least_basic: bool = False  # True: no configuration below the job's default plan


def sia_sizes(gpus_per_node: int, nodes: int) -> list[int]:
    """Sia's GPU counts: powers of two below a node, then whole nodes."""
    out, g = [], 1
    while g < gpus_per_node:
        out.append(g)
        g *= 2
    return out + [n * gpus_per_node for n in range(1, nodes + 1)]


def _pack(
    requests: Sequence[tuple[str, int, frozenset[int]]], free: set[int], hw: Hardware
) -> dict[str, tuple[int, ...]] | None:
    """(job, GPUs, previous GPUs) placed largest first on `free`; None if one does not fit."""
    by_node: dict[int, set[int]] = {}
    for g in free:
        by_node.setdefault(hw.node(g), set()).add(g)
    c = hw.gpus_per_node
    out: dict[str, tuple[int, ...]] = {}
    for jid, n, prev in sorted(requests, key=lambda r: (-r[1], r[0])):
        prev_nodes = {hw.node(g) for g in prev}
        if n >= c:
            whole = [k for k, v in by_node.items() if len(v) == c]
            whole.sort(key=lambda k: (k not in prev_nodes, k))
            if len(whole) < n // c:
                return None
            chosen = whole[: n // c]
            gpus = [g for k in chosen for g in by_node[k]]
        else:
            fits = [k for k, v in by_node.items() if len(v) >= n]
            if not fits:
                return None
            node = min(fits, key=lambda k: (k not in prev_nodes, len(by_node[k]), k))
            pool = sorted(by_node[node], key=lambda g: (g not in prev, g))
            gpus = pool[:n]
        for g in gpus:
            by_node[hw.node(g)].discard(g)
        out[jid] = tuple(sorted(gpus))
    return out


class SiaRound(ElasticPolicy):
    """Sia's round: the ILP over every active job's configurations, then packing (module doc)."""

    def __init__(self, config: ElasticConfig = SIA, params: SiaParams = SiaParams(), **overrides: Any) -> None:
        super().__init__(config, **overrides)
        self.params = params
        self._rows: dict[tuple, dict[int, float]] = {}  # (coeffs, pp, tp, cap) -> GPUs -> throughput
        self._resume: set[str] = set()  # preempted jobs: their next start restores a checkpoint
        self._relaunch: set[str] = set()  # our own preempt-then-start (breaks a move cycle)
        self._stats.update(preempts=0, repacks=0, ilp_seconds=0.0)

    def on_requeue(self, job: JobState, view: ClusterView) -> None:
        if job.job_id in self._relaunch:
            self._relaunch.discard(job.job_id)
            return
        super().on_requeue(job, view)
        self._resume.add(job.job_id)

    def on_finish(self, job: JobState, view: ClusterView) -> None:
        super().on_finish(job, view)
        self._resume.discard(job.job_id)

    # ------------------------------------------------------------------ goodput rows
    def _options(self, book: SuikaJob, sizes: Sequence[int], hw: Hardware) -> dict[int, float]:
        """GPU count -> modelled throughput of the DP-only plan on packed GPUs (feasible ones)."""
        jm = book.jm
        floor = jm.gpus if self.params.at_least_basic else 0
        key = (book.coeffs, jm.pp, jm.tp, book.cap, tuple(sizes), floor)
        hit = self._rows.get(key)
        if hit is not None:
            return hit
        unit = jm.pp * jm.tp
        out: dict[int, float] = {}
        for g in sizes:
            if g % unit or g < floor:
                continue
            plan = layout_plan(list(range(g)), jm.pp, g // unit, jm.tp, book.coeffs, hw)
            if plan is not None and peak_memory(plan, book.coeffs) <= book.cap:
                out[g] = throughput(plan, book.coeffs, hw)
        self._rows[key] = out
        return out

    # ------------------------------------------------------------------ the round
    def _schedule(self, view: ClusterView) -> list[Decision]:
        started = time.perf_counter()
        hw = self._hardware(view.cluster)
        now = view.now
        usable = ~np.asarray(view.cordoned)
        all_gpus = {g for g in self._all if usable[hw.node(g)]}
        nodes = len({hw.node(g) for g in all_gpus})
        sizes = sia_sizes(hw.gpus_per_node, nodes)
        active = sorted([*view.running(), *view.waiting()], key=lambda j: (j.spec.submit_time, j.job_id))
        if not active:
            self.decision_seconds.append(time.perf_counter() - started)
            return []
        books = [self._book(j, hw) for j in active]
        speed = np.full((len(active), len(sizes)), np.nan)
        pinned: dict[int, int] = {}
        for i, book in enumerate(books):
            opts = self._options(book, sizes, hw)
            if not opts:
                continue
            base = min(opts.values())
            for k, g in enumerate(sizes):
                if g in opts:
                    speed[i, k] = opts[g] / base
            if book.plan is not None:
                cur = sizes.index(book.plan.num_gpus) if book.plan.num_gpus in sizes else None
                if cur is not None and now < book.ready_at - _EPS:
                    pinned[i] = cur
                elif cur is not None:
                    stall = checkpoint_stall(book.jm.model.params_b, self.config.costs)
                    keep = speed[i, cur]
                    speed[i] *= realloc_factor(now - book.submit, book.redeploys, stall)
                    speed[i, cur] = keep
        prm = self.params
        res = solve_allocation(speed, np.array(sizes), np.zeros(len(sizes), dtype=np.int64), np.array([len(all_gpus)]),
                               p=prm.p, lambda_n=prm.lambda_n, pinned=pinned, time_limit=prm.time_limit)
        self._stats["ilp_seconds"] += res.seconds
        target = {j.job_id: (sizes[c] if c >= 0 else 0) for j, c in zip(active, res.choice)}
        out = self._realise(view, active, target, all_gpus, hw)
        self.decision_seconds.append(time.perf_counter() - started)
        return out

    def _realise(
        self, view: ClusterView, active: Sequence[JobState], target: dict[str, int], all_gpus: set[int], hw: Hardware
    ) -> list[Decision]:
        """Placement, speed timelines and the engine decisions for the ILP's answer."""
        now = view.now
        old: dict[str, frozenset[int]] = {}
        for j in active:
            current = self.jobs[j.job_id].plan
            if current is not None:
                old[j.job_id] = frozenset(current.gpus)
        kept = {jid: gpus for jid, gpus in old.items() if target[jid] == len(gpus)}
        free = all_gpus - {g for gpus in kept.values() for g in gpus}
        movers = [(j.job_id, target[j.job_id], old.get(j.job_id, frozenset())) for j in active
                  if target[j.job_id] > 0 and j.job_id not in kept]
        placed = _pack(movers, free, hw)
        if placed is None:  # fragmented: repack every job, previous GPUs preferred
            self._stats["repacks"] += 1
            reqs = [(j.job_id, target[j.job_id], old.get(j.job_id, frozenset())) for j in active if target[j.job_id] > 0]
            repacked = _pack(reqs, set(all_gpus), hw)
            if repacked is None:  # not even that (uneven nodes): keep every allocation this round
                return []
            placed = repacked
            kept = {jid: gpus for jid, gpus in kept.items() if placed.get(jid) == tuple(sorted(gpus))}
        new: dict[str, tuple[int, ...]] = {jid: tuple(sorted(g)) for jid, g in kept.items()}
        new.update({jid: g for jid, g in placed.items() if jid not in kept})
        plans: dict[str, Plan] = {}
        for jid, gpus in new.items():
            jm, book = self.jobs[jid].jm, self.jobs[jid]
            plan = layout_plan(list(gpus), jm.pp, len(gpus) // (jm.pp * jm.tp), jm.tp, book.coeffs, hw)
            if plan is not None:
                plans[jid] = plan
        stall_of = {jid: checkpoint_stall(self.jobs[jid].jm.model.params_b, self.config.costs) for jid in target}
        held_until: dict[int, float] = {}  # a stopping job holds its old GPUs for its stall
        decisions: list[Decision] = []
        preempted: list[str] = []
        changed: list[str] = []
        for jid, held in old.items():
            if jid not in plans:
                preempted.append(jid)
            elif frozenset(plans[jid].gpus) != held:
                changed.append(jid)
                for g in held - frozenset(plans[jid].gpus):
                    held_until[g] = now + stall_of[jid]
        starts = [jid for jid in plans if jid not in old]
        for jid in preempted:
            decisions.append(Preempt(jid))
            self._stats["preempts"] += 1
        for jid in changed + starts:
            book, plan = self.jobs[jid], plans[jid]
            if jid in old:
                ready = now + stall_of[jid]
            else:  # a start waits for stopping jobs' GPUs; a resumed job also restores its checkpoint
                ready = max([now] + [held_until.get(g, now) for g in plan.gpus])
                if jid in self._resume:
                    ready += stall_of[jid]
                    self._resume.discard(jid)
                    self._charge(book, stall_of[jid])
                else:
                    self._stats["starts"] += 1
            speed = self._speed(book, plan, hw)
            book.segments = [(now, 0.0), (ready, speed)] if ready > now + _EPS else [(now, speed)]
            book.plan, book.history, book.ready_at = plan, [], ready
            book.boundaries = [t for t, _ in book.segments if t > now + _EPS]
            for t in book.boundaries:
                view.wake_at(t)
        for jid in changed:
            self._charge(self.jobs[jid], stall_of[jid])
        released = [g for jid in preempted for g in old[jid]]
        decisions += self._ordered(view, released, [(jid, old.get(jid, frozenset()), plans[jid]) for jid in changed + starts], hw)
        return decisions

    def _charge(self, book: SuikaJob, stall: float) -> None:
        book.redeploys += 1
        book.stall += stall
        self._stats["redeploys"] += 1
        self._stats["stall_seconds"] += stall

    def _ordered(
        self, view: ClusterView, released: Sequence[int], moves: list[tuple[str, frozenset[int], Plan]], hw: Hardware
    ) -> list[Decision]:
        """Engine decisions ordered so each fits the per-node free counts when applied (after the
        preemptions free `released`); a cycle of moves is broken by stopping one job and starting
        it again at the end."""
        free = np.asarray(view.free, dtype=int).copy()
        for g in released:
            free[hw.node(g)] += 1
        pending = list(moves)
        out: list[Decision] = []
        tail: list[Decision] = []

        def counts(gpus: Sequence[int] | frozenset[int]) -> dict[int, int]:
            c: dict[int, int] = {}
            for g in gpus:
                c[hw.node(g)] = c.get(hw.node(g), 0) + 1
            return c

        while pending:
            progress = False
            for item in list(pending):
                jid, before, plan = item
                need, give = counts(plan.gpus), counts(before)
                if all(k <= free[n] + give.get(n, 0) for n, k in need.items()):
                    for n, k in give.items():
                        free[n] += k
                    for n, k in need.items():
                        free[n] -= k
                    out.append(self._decision(jid, before, plan, hw))
                    pending.remove(item)
                    progress = True
            if not progress:  # a cycle: stop the first pending job now, start it after the others
                jid, before, plan = pending.pop(0)
                for n, k in counts(before).items():
                    free[n] += k
                for n, k in counts(plan.gpus).items():
                    free[n] -= k
                self._relaunch.add(jid)
                out.append(Preempt(jid))
                tail.append(Start(jid, placement_of(plan.gpus, hw), False, engine_plan(plan)))
        return out + tail

    def _decision(self, jid: str, before: frozenset[int], plan: Plan, hw: Hardware) -> Decision:
        placement = placement_of(plan.gpus, hw)
        if not before:
            return Start(jid, placement, False, engine_plan(plan))
        if len(before) == plan.num_gpus:
            return Migrate(jid, placement)
        return Resize(jid, placement, engine_plan(plan))
