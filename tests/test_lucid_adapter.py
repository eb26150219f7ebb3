"""Lucid+SchedMate: each enhancement on hand-worked scenarios, with a fixed InsightSource.

The source is a plain class answering fixed insights (this tests the scheduler, not the store).
Unless a test says otherwise the cluster has one 1-GPU main node and no profiling pool, the
table below gives the workloads' metrics, and co-location speeds are constant. JCT = end - submit;
a relaunch pays the engine's 40 s restart cost.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import pytest

from schedmate.adapters.insights import AdvisorInsight, InsightSource, TrackerReading
from schedmate.adapters.lucid import Cancellation, Flags, LucidSchedMate, metrics_from_advice
from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.engine import simulate
from schedmate.schedulers.interference import ConstantInterference
from schedmate.schedulers.job import JobSpec, JobState, Phase
from schedmate.schedulers.lucid import EBMConfig, Lucid, Metrics, WorkloadTable
from schedmate.schedulers.policy import ClusterView
from schedmate.sim.experiments.common import NullInsights, OracleInsights


def workload(model: str) -> dict[str, object]:
    return {"model": model, "dataset": "d", "batch_size": 32, "amp": 0}


LIGHT, MEDIUM, HEAVY = workload("light"), workload("medium"), workload("heavy")
TABLE = WorkloadTable(
    {
        ("light", "d", 32, 0): (Metrics(speed=900, gpu_util=20, gmem_util=5, gmem=2000), 0),
        ("medium", "d", 32, 0): (Metrics(speed=500, gpu_util=55, gmem_util=30, gmem=6000), 1),
        ("heavy", "d", 32, 0): (Metrics(speed=100, gpu_util=98, gmem_util=80, gmem=9000), 2),
    }
)
ADVISED = Metrics(speed=950, gpu_util=22, gmem_util=6, gmem=2100)  # what history says about a job


def match(duration: float, metrics: Metrics | None = ADVISED, latency: float = 0.0) -> AdvisorInsight:
    return AdvisorInsight(
        similar_ids=("hist-1", "hist-2"),
        duration_s=duration,
        duration_top3_s=duration,
        sm_util=metrics.gpu_util if metrics else None,
        metrics=asdict(metrics) if metrics else {},
        latency_s=latency,
    )


NO_MATCH = AdvisorInsight(similar_ids=(), duration_s=None, duration_top3_s=None, sm_util=None)


@dataclass
class FixedInsights(InsightSource):
    """Answers fixed advice per job id; tracks every job as before = 1, after = its true speed ratio."""

    advice: dict[str, AdvisorInsight] = field(default_factory=dict)
    trackable: bool = True
    reads_after: bool = True
    ready_after_s: float = 0.0  # no reading at all before this long after the event (too few lines)
    track_calls: list[tuple[str, float, float]] = field(default_factory=list)
    recorded: list[tuple[str, bool]] = field(default_factory=list)

    def advise(self, job: JobState) -> AdvisorInsight | None:
        return self.advice.get(job.job_id)

    def track(self, job: JobState, *, event_at: float, now: float) -> TrackerReading | None:
        # a perfect tracker: the speed ratio around the event, read off the job's simulated history
        since_s = now - event_at
        speed = [sp for t, sp, _ in job.speed_log if t <= event_at]
        before = next((sp for t, sp, _ in reversed(job.speed_log) if t < event_at and sp > 0), None)
        slowdown = speed[-1] / before if speed and before else 1.0
        self.track_calls.append((job.job_id, round(slowdown, 6), round(since_s, 6)))
        if not self.trackable or since_s < self.ready_after_s:
            return None
        return TrackerReading(before=1.0, after=slowdown if since_s > 0 and self.reads_after else None)

    def record(self, job: JobState, *, finished: bool) -> None:
        self.recorded.append((job.job_id, finished))

    def stats(self) -> dict:
        return {"track_calls": len(self.track_calls)}


class Spy(LucidSchedMate):
    """Records every start: (time, job, phase)."""

    def __init__(self, source: InsightSource, **kw) -> None:
        kw.setdefault("table", TABLE)
        kw.setdefault("ebm", EBMConfig.fast())
        super().__init__(source, **kw)
        self.starts: list[tuple[float, str, Phase]] = []

    def on_start(self, job: JobState, view: ClusterView) -> None:
        self.starts.append((view.now, job.job_id, job.phase))
        super().on_start(job, view)


def run(policy, jobs, cluster="1", factor=0.4) -> dict[str, JobState]:
    result = simulate(jobs, ClusterSpec.parse(cluster), policy, interference=ConstantInterference(factor))
    assert all(j.phase.is_terminal for j in result.jobs)
    return {j.job_id: j for j in result.jobs}


def ends(jobs: dict[str, JobState]) -> dict[str, float]:
    return {k: round(j.end_time, 6) for k, j in jobs.items()}


# ======================================================================== bypass + duration


def test_a_matched_job_skips_the_profiler_and_is_ranked_by_the_advisors_duration():
    # Pool = node 0 (4 GPUs), main = node 1. M is matched: it starts on the main node at 0 and is
    # scored on the advised metrics. U has no match: Lucid profiles it on the pool and its
    # estimate comes from the EBM, not from any advice.
    source = FixedInsights({"M": match(123.0), "U": NO_MATCH})
    policy = Spy(source, prof_scale=1, t_prof=100, packing=False)
    run(policy, [JobSpec("M", 0, 1, 300, attributes=LIGHT), JobSpec("U", 0, 1, 300, attributes=LIGHT)], "2x4")
    assert (0, "M", Phase.RUNNING) in policy.starts and (0, "U", Phase.PROFILING) in policy.starts
    assert not any(j == "M" and p is Phase.PROFILING for _, j, p in policy.starts)
    m, u = policy.job_state("M"), policy.job_state("U")
    assert m.estimate == 123.0 and u.estimate != 123.0
    assert m.features is not None and m.features[5:] == tuple(ADVISED.as_list())
    assert policy.profiler.measured("M") is None and policy.profiler.measured("U") == TABLE.lookup(LIGHT)
    sm = policy.info()["schedmate"]
    assert (sm["advised"], sm["matched"], sm["bypassed"], sm["advisor_estimated"]) == (2, 1, 1, 1)
    assert sm["profiler_gpu_s_saved"] == 100.0  # min(T_prof, 300 s) x 1 GPU
    assert policy.profiler.stats.profiled == 1
    assert sorted(source.recorded) == [("M", False), ("M", True), ("U", False), ("U", True)]


def test_an_incomplete_advised_profile_is_not_used_the_job_is_profiled_but_its_duration_is():
    partial = AdvisorInsight(("h",), 77.0, 77.0, sm_util=40.0, metrics={})
    policy = Spy(FixedInsights({"J": partial}), prof_scale=1, t_prof=100, packing=False)
    run(policy, [JobSpec("J", 0, 1, 300, attributes=LIGHT)], "2x4")
    assert policy.starts[0] == (0, "J", Phase.PROFILING)
    assert policy.job_state("J").estimate == 77.0


def test_metrics_from_advice_reads_aliases_and_needs_all_four():
    full = AdvisorInsight(("h",), 1.0, 1.0, sm_util=50.0, gpu_mem_gb=2.0, metrics={"speed": 10.0, "mem_util": 7.0})
    assert metrics_from_advice(full) == Metrics(speed=10.0, gpu_util=50.0, gmem_util=7.0, gmem=2048.0)
    assert metrics_from_advice(AdvisorInsight(("h",), 1.0, 1.0, sm_util=50.0)) is None
    assert metrics_from_advice(NO_MATCH) is None and metrics_from_advice(None) is None


@pytest.mark.parametrize("charged", [True, False])
def test_the_advisors_latency_delays_the_jobs_entry(charged):
    policy = Spy(FixedInsights({"M": match(100.0, latency=9.0)}), flags=Flags(advisor_latency=charged))
    jobs = run(policy, [JobSpec("M", 5, 1, 100, attributes=LIGHT)])
    assert ends(jobs) == {"M": 114.0 if charged else 105.0}
    assert policy.info()["schedmate"]["advisor_delay_s"] == (9.0 if charged else 0.0)


@pytest.mark.parametrize("calibrate", [True, False])
def test_unmatched_estimates_are_put_on_the_advisors_scale(calibrate):
    """Matched jobs whose advised durations are 7x what the EBM says for them teach the adapter
    a 7x factor; an unmatched job's EBM estimate is scaled by it, so both estimators rank jobs on
    one scale. Without calibration the EBM's value is kept."""

    class Seen(Spy):
        def estimate_duration(self, job, view):
            self.ebm = getattr(self, "ebm", {})
            (self.ebm[job.job_id],) = self.estimator.predict_many([self.job_state(job.job_id).features])
            advice = self._advice.get(job.job_id)
            if advice is not None and advice.matched:  # advised = 7x the EBM, whatever it says
                self._advice[job.job_id] = match(7.0 * self.ebm[job.job_id])
            return super().estimate_duration(job, view)

    trace = [JobSpec(f"M{i}", i, 1, 500, attributes=LIGHT) for i in range(12)]
    trace.append(JobSpec("U", 20, 1, 500, attributes=LIGHT))
    advised = {f"M{i}": match(1.0) for i in range(12)} | {"U": NO_MATCH}
    flags = Flags(bypass_profiling=False, packing_cancellation=False, calibrate_fallback=calibrate)
    policy = Seen(FixedInsights(advised), flags=flags, prof_scale=1, packing=False)
    run(policy, trace, "2x4")
    scale = 7.0 if calibrate else 1.0
    assert policy.job_state("U").estimate == pytest.approx(scale * policy.ebm["U"], rel=1e-6)
    assert policy.info()["schedmate"]["fallback_scale"] == pytest.approx(scale, rel=1e-6)


def test_a_match_predicted_to_end_within_t_prof_still_goes_through_the_profiler():
    """Short jobs finish in the profiling pool; skipping it would only queue them."""
    policy = Spy(FixedInsights({"S": match(120.0)}), flags=Flags.only("bypass_profiling"), prof_scale=1,
                 packing=False)
    run(policy, [JobSpec("S", 0, 1, 150, attributes=LIGHT)], "2x4")
    assert policy.starts[0][2] is Phase.PROFILING  # T_prof is 200 s by default
    stats = policy.info()["schedmate"]
    assert stats["kept_short_in_profiler"] == 1 and stats["bypassed"] == 0


def test_each_enhancement_can_run_alone():
    source = FixedInsights({"M": match(323.0)})
    only_duration = Spy(source, flags=Flags.only("advisor_duration"), prof_scale=1, packing=False)
    run(only_duration, [JobSpec("M", 0, 1, 300, attributes=LIGHT)], "2x4")
    assert only_duration.starts[0][2] is Phase.PROFILING and only_duration.job_state("M").estimate == 323.0
    only_bypass = Spy(source, flags=Flags.only("bypass_profiling"), prof_scale=1, packing=False)
    run(only_bypass, [JobSpec("M", 0, 1, 300, attributes=LIGHT)], "2x4")
    assert only_bypass.starts[0][2] is Phase.RUNNING and only_bypass.job_state("M").estimate != 323.0
    with pytest.raises(ValueError):
        Flags.only("everything")


# ======================================================================== packing cancellation

# One GPU. A (1000 s) starts alone at 0; B (500 s) arrives at 10 and is packed onto A (both
# light, 500 <= 2 x 1000). Both then run at the co-location factor.
PAIR = [JobSpec("A", 0, 1, 1000, attributes=LIGHT), JobSpec("B", 10, 1, 500, attributes=LIGHT)]
KNOWN = {"A": match(1000.0, TABLE.lookup(LIGHT)), "B": match(500.0, TABLE.lookup(LIGHT))}


def test_a_bad_packing_evicts_the_newcomer_once_and_it_is_never_packed_again():
    # Factor 0.4 < theta 0.5. Check at 10 + 60 = 70: A ran 60 s at 0.4 → ratio 0.4 → B evicted,
    # its 24 s of work lost (24 GPU-s wasted). A (34 s done) runs alone to 70 + 966 = 1036. B may
    # not share again: it waits for the GPU and reruns all 500 s after a 40 s restart: 1576.
    source = FixedInsights(dict(KNOWN))
    policy = Spy(source)
    jobs = run(policy, PAIR, factor=0.4)
    assert ends(jobs) == {"A": 1036.0, "B": 1576.0}
    assert source.track_calls == [("A", 0.4, 60.0)]  # A only, one check
    assert policy.job_state("B").no_pack and not policy.job_state("A").no_pack and jobs["B"].restarts == 1
    assert policy.evicted == {"B"} and jobs["B"].evictions == 0  # a Preempt that discards its progress, not an Evict
    assert jobs["B"].wasted_gpu_time == pytest.approx(24.0) and jobs["A"].restarts == 0
    sm = policy.info()["schedmate"]
    assert (sm["packs"], sm["checks"], sm["evictions"], sm["untracked"]) == (1, 1, 1, 0)
    assert sm["eviction_wasted_gpu_s"] == pytest.approx(24.0) and policy.packed == 1


@pytest.mark.parametrize(("factor", "theta", "evicted"), [(0.6, 0.5, False), (0.6, 0.65, True), (0.5, 0.5, False)])
def test_the_pair_is_kept_unless_the_ratio_falls_below_theta(factor, theta, evicted):
    policy = Spy(FixedInsights(dict(KNOWN)), cancellation=Cancellation(theta=theta))
    run(policy, PAIR, factor=factor)
    assert ("B" in policy.evicted) is evicted and policy.job_state("B").no_pack is evicted
    assert policy.info()["schedmate"]["evictions"] == int(evicted)


def test_an_untracked_pair_is_kept_after_the_retries():
    # No reading at 60 s, nor at the retries 120, 240 and 480 s after packing: the pair stays.
    untracked = FixedInsights(dict(KNOWN), trackable=False)
    policy = Spy(untracked)
    jobs = run(policy, PAIR, factor=0.4)
    reference = run(Spy(FixedInsights(dict(KNOWN)), flags=Flags(packing_cancellation=False)), PAIR, factor=0.4)
    assert ends(jobs) == ends(reference)
    assert [since for _, _, since in untracked.track_calls] == [60.0, 120.0, 240.0, 480.0]
    sm = policy.info()["schedmate"]
    assert (sm["untracked"], sm["retried"], sm["checks"], sm["evictions"]) == (1, 3, 0, 0)


def test_no_reading_after_packing_keeps_the_pair():
    source = FixedInsights(dict(KNOWN), reads_after=False)
    policy = Spy(source, cancellation=Cancellation(retries=0))
    run(policy, PAIR, factor=0.4)
    assert not policy.evicted and len(source.track_calls) == 1
    assert policy.info()["schedmate"]["no_reading_after"] == 1


def test_a_reading_that_is_not_ready_at_the_first_check_is_read_at_a_retry():
    # The tracker needs 100 s of lines after packing: nothing at 70, a reading at 130 (120 s
    # after packing) → ratio 0.4 → B evicted at 130 with 48 s of work lost. A (58 s done) ends
    # at 130 + 942 = 1072; B reruns 500 s after the 40 s restart: 1612.
    source = FixedInsights(dict(KNOWN), ready_after_s=100.0)
    policy = Spy(source)
    jobs = run(policy, PAIR, factor=0.4)
    assert ends(jobs) == {"A": 1072.0, "B": 1612.0}
    assert source.track_calls == [("A", 0.4, 60.0), ("A", 0.4, 120.0)]
    assert jobs["B"].wasted_gpu_time == pytest.approx(48.0)


def test_a_pair_that_splits_before_its_check_is_not_checked():
    # B is only 20 s long: at 0.4 it ends at 10 + 50 = 60, before the check at 70.
    short = [PAIR[0], JobSpec("B", 10, 1, 20, attributes=LIGHT)]
    source = FixedInsights({"A": KNOWN["A"], "B": match(20.0, TABLE.lookup(LIGHT))})
    policy = Spy(source)
    run(policy, short, factor=0.4)
    assert policy.info()["schedmate"]["ended_before_check"] == 1 and source.track_calls == []


def test_eviction_can_keep_progress_with_the_engines_evict():
    policy = Spy(FixedInsights(dict(KNOWN)), cancellation=Cancellation(discard_progress=False))
    jobs = run(policy, PAIR, factor=0.4)
    # B keeps its 24 s: it reruns 476 s after the restart cost: 1036 + 40 + 476 = 1552.
    assert ends(jobs) == {"A": 1036.0, "B": 1552.0}
    assert jobs["B"].wasted_gpu_time == 0 and jobs["B"].evictions == 1 and policy.evicted == {"B"}


# ======================================================================== no information = Lucid


def mixed_trace(n: int, seed: int = 0) -> list[JobSpec]:
    rng = np.random.default_rng(seed)
    models = [LIGHT, MEDIUM, HEAVY]
    jobs, t = [], 0.0
    for i in range(n):
        t += float(rng.exponential(40))
        jobs.append(
            JobSpec(
                f"j{i:03d}", round(t), int(rng.choice([1, 1, 2, 4])), float(round(rng.lognormal(6, 1.2)) + 1),
                user=f"u{int(rng.integers(4))}", vc="vc", attributes=models[int(rng.integers(3))],
            )
        )
    return jobs


@pytest.mark.parametrize("source", [NullInsights(), OracleInsights(detection_rate=0.0)], ids=["null", "oracle-d0"])
def test_with_nothing_detected_lucid_schedmate_is_plain_lucid(source):
    trace = mixed_trace(120)
    lucid = Lucid(table=TABLE, ebm=EBMConfig.fast(), prof_scale=1, t_prof=100)
    plain = run(lucid, trace, "3x4", factor=0.5)
    adapted = run(LucidSchedMate(source, table=TABLE, ebm=EBMConfig.fast(), prof_scale=1, t_prof=100), trace, "3x4", factor=0.5)
    assert ends(adapted) == ends(plain)
    assert sum(lucid.job_state(k).packed_with is not None for k in plain) > 0  # packing did happen


def test_with_everything_detected_an_oracle_saves_profiling_and_evicts_bad_pairs():
    class Packings(LucidSchedMate):
        def on_packed(self, job, host, view):
            self.pairs = [*getattr(self, "pairs", []), (view.now, job.job_id, host.job_id)]
            super().on_packed(job, host, view)

    trace = mixed_trace(120)
    oracle = OracleInsights(detection_rate=1.0, metrics_of=lambda s: asdict(TABLE.lookup(s.attributes)))
    policy = Packings(oracle, table=TABLE, ebm=EBMConfig.fast(), prof_scale=1, t_prof=100)
    run(policy, trace, "3x4", factor=0.3)
    sm = policy.info()["schedmate"]
    short = sum(s.duration <= 100 for s in trace)  # these still finish inside the profiler
    assert sm["bypassed"] == 120 - short and sm["kept_short_in_profiler"] == short
    assert policy.profiler.stats.profiled == short and sm["profiler_gpu_s_saved"] > 0
    # a host packed at 0.3 straight after a previous partner left shows no change in its log
    # (0.3 before and after): only pairs that slowed a host running alone are evicted
    assert 0 < sm["evictions"] == sum(r < 0.5 for r in policy.sm.ratios) < sm["checks"]
    evicted = policy.evicted
    assert len(evicted) == sm["evictions"]  # each evicted once
    for job_id in evicted:  # ... and never part of a packing after its eviction
        assert [p for p in policy.pairs if job_id in p[1:]] == [p for p in policy.pairs if p[1] == job_id][:1]
