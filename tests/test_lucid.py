"""Lucid reference policy: profiler, packing analyzer and binder, throttle, estimator, end to end.

Scenarios are small and worked out by hand. JCT = end time - submit time; a relaunch pays the
engine's restart cost (40 s up to 8 GPUs). Unless a test says otherwise, the profiling pool is
the first node. Tests that need Lucid's measured data (../shared/data/lucid) skip without it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest

from schedmate.config import shared_data_dir
from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.engine import SimConfig, Simulator, simulate
from schedmate.schedulers.interference import ConstantInterference
from schedmate.schedulers.job import JobSpec, JobState, Phase
from schedmate.schedulers.lucid import (
    ENGINE_CAN_DISCARD,
    BinderRules,
    DurationEstimator,
    EBMConfig,
    Lucid,
    LucidInterference,
    Metrics,
    PackInfo,
    PackingAnalyzer,
    SubmissionForecaster,
    Throttle,
    WorkloadTable,
    assign_workloads,
    auto_label,
    load_default_table,
)
from schedmate.schedulers.policies import POLICIES, make_policy
from schedmate.schedulers.policy import ClusterView

LUCID_DATA = (shared_data_dir() / "lucid") if shared_data_dir() is not None else None
HAVE_DATA = LUCID_DATA is not None and (LUCID_DATA / "single_data.csv").is_file()


def needs_lucid_data(test):
    reason = "../shared/data/lucid is absent (set SCHEDMATE_SHARED_DATA to its path)"
    return pytest.mark.shared_data(pytest.mark.skipif(not HAVE_DATA, reason=reason)(test))


def workload(model: str) -> dict[str, object]:
    return {"model": model, "dataset": "d", "batch_size": 32, "amp": 0}


LIGHT, MEDIUM, HEAVY, FAT = workload("light"), workload("medium"), workload("heavy"), workload("fat")
TABLE = WorkloadTable(
    {
        ("light", "d", 32, 0): (Metrics(speed=900, gpu_util=20, gmem_util=5, gmem=2000), 0),
        ("medium", "d", 32, 0): (Metrics(speed=500, gpu_util=55, gmem_util=30, gmem=6000), 1),
        ("heavy", "d", 32, 0): (Metrics(speed=100, gpu_util=98, gmem_util=80, gmem=9000), 2),
        ("fat", "d", 32, 0): (Metrics(speed=300, gpu_util=25, gmem_util=10, gmem=20000), 0),
    }
)


def lucid(**kw) -> Lucid:
    kw.setdefault("table", TABLE)
    kw.setdefault("ebm", EBMConfig.fast())
    return Lucid(**kw)


@dataclass
class Trace:
    """Records every start: (time, job id, phase, nodes)."""

    starts: list[tuple[float, str, Phase, tuple[int, ...]]] = field(default_factory=list)


class Spy(Lucid):
    def __init__(self, trace: Trace, **kw) -> None:
        kw.setdefault("table", TABLE)
        kw.setdefault("ebm", EBMConfig.fast())
        super().__init__(**kw)
        self.trace = trace

    def on_start(self, job: JobState, view: ClusterView) -> None:
        self.trace.starts.append((view.now, job.job_id, job.phase, tuple(n for n, _ in job.placement)))
        super().on_start(job, view)


class Known(Lucid):
    """An adapter-style subclass: no profiling, metrics and durations known up front."""

    def __init__(self, **kw) -> None:
        kw.setdefault("table", TABLE)
        kw.setdefault("ebm", EBMConfig.fast())
        super().__init__(**kw)
        self.packings: list[tuple[float, str, str]] = []

    def should_profile(self, job, view):
        return False

    def known_metrics(self, job):
        return TABLE.lookup(job.spec.attributes)

    def estimate_duration(self, job, view):
        return job.spec.duration

    def on_packed(self, job, host, view):
        self.packings.append((view.now, job.job_id, host.job_id))


def run(policy, jobs, cluster="2x4", interference=None) -> dict[str, JobState]:
    result = simulate(jobs, ClusterSpec.parse(cluster), policy, interference=interference or ConstantInterference(0.5))
    assert all(j.phase.is_terminal for j in result.jobs)
    return {j.job_id: j for j in result.jobs}


def ends(jobs: dict[str, JobState]) -> dict[str, float]:
    return {k: j.end_time for k, j in jobs.items()}


# ======================================================================== profiler


def test_profiler_serves_least_gpu_first_and_short_jobs_finish_in_the_pool():
    # Pool = node 0 (4 GPUs), T_prof 100 s. A (4 GPUs, 50 s), B (1, 30), C (2, 40) arrive at 0.
    # LGF: B and C start at 0 (3 GPUs); A needs 4 and waits until C ends at 40: A runs 40-90.
    # (FIFO would run A first, 0-50.) All are shorter than T_prof: they finish in the profiler.
    trace = Trace()
    policy = Spy(trace, prof_scale=1, prof_factor=4, t_prof=100)
    jobs = run(policy, [JobSpec("A", 0, 4, 50, attributes=LIGHT), JobSpec("B", 0, 1, 30), JobSpec("C", 0, 2, 40)])
    assert ends(jobs) == {"A": 90, "B": 30, "C": 40}
    assert [(t, j, p) for t, j, p, _ in trace.starts] == [
        (0, "B", Phase.PROFILING),
        (0, "C", Phase.PROFILING),
        (40, "A", Phase.PROFILING),
    ]
    assert all(nodes == (0,) for *_, nodes in trace.starts)  # never on the main node
    stats = policy.profiler.stats
    assert (stats.profiled, stats.finished_in_profiler, stats.moved_on) == (3, 3, 0)
    assert policy.profiler.measured("A") == TABLE.lookup(LIGHT) and policy.profiler.measured("B") is None
    run_a = policy.profiler.run_of("A")
    assert run_a is not None and run_a.started == 40 and run_a.key is None  # left the queue when it started


def test_profiler_order_is_strict_a_job_that_does_not_fit_blocks_larger_ones_behind_it():
    # Pool of 4 GPUs. X (1 GPU, 80 s) runs; Y (4) waits for it; Z (4) arrives later and queues
    # behind Y (same size, later arrival): Y 80-130, Z 130-180.
    jobs = run(
        lucid(prof_scale=1, t_prof=100),
        [JobSpec("X", 0, 1, 80), JobSpec("Y", 1, 4, 50), JobSpec("Z", 2, 4, 50)],
    )
    assert ends(jobs) == {"X": 80, "Y": 130, "Z": 180}


@pytest.mark.parametrize("keep", [False, True])
def test_a_job_longer_than_t_prof_is_cut_and_moves_to_the_main_pool(keep):
    # T_prof 100 s. S (60 s) finishes in the profiler at 60. L (300 s) is stopped at 100, joins
    # the main queue and starts on node 1 at 100, paying the 40 s restart cost. Profiling is a
    # measurement: L then runs its whole 300 s (end 440), or, when progress is kept (or the
    # engine cannot discard it yet), the 200 s left (end 340).
    trace = Trace()
    policy = Spy(trace, prof_scale=1, t_prof=100, keep_profiling_progress=keep)
    jobs = run(policy, [JobSpec("S", 0, 1, 60, attributes=MEDIUM), JobSpec("L", 0, 1, 300, attributes=MEDIUM)])
    discards = ENGINE_CAN_DISCARD and not keep
    assert ends(jobs) == {"S": 60, "L": 440 if discards else 340}
    assert [(t, j, p, n) for t, j, p, n in trace.starts] == [
        (0, "L", Phase.PROFILING, (0,)),  # same GPU count: arrival order (job ids order ties)
        (0, "S", Phase.PROFILING, (0,)),
        (100, "L", Phase.RUNNING, (1,)),
    ]
    stats = policy.profiler.stats
    assert (stats.finished_in_profiler, stats.moved_on, stats.gpu_seconds) == (1, 1, 160)
    assert stats.lost_gpu_seconds == (100 if discards else 0)
    assert jobs["L"].wasted_gpu_time == (100 if discards else 0)
    features = policy.job_state("L").features
    assert features is not None and features[5:] == tuple(TABLE.lookup(MEDIUM).as_list())  # profiled metrics


def test_jobs_larger_than_scale_times_factor_skip_profiling():
    # scale 1 × factor 2 = 2 GPUs: the 4-GPU job goes straight to the main node at 0 (no restart
    # cost: it is its first start); the 2-GPU job is profiled and finishes there.
    trace = Trace()
    policy = Spy(trace, prof_scale=1, prof_factor=2, t_prof=100)
    jobs = run(policy, [JobSpec("big", 0, 4, 50), JobSpec("small", 0, 2, 50)])
    assert ends(jobs) == {"big": 50, "small": 50}
    assert sorted((j, p, n) for _, j, p, n in trace.starts) == [
        ("big", Phase.RUNNING, (1,)),
        ("small", Phase.PROFILING, (0,)),
    ]
    assert policy.profiler.stats.skipped == 1


def test_a_job_larger_than_the_main_pool_may_use_the_profiling_nodes_too():
    # 8 GPUs on 2x4 with a 1-node pool: the main pool has 4, so the job takes both nodes.
    jobs = run(lucid(prof_scale=1), [JobSpec("wide", 0, 8, 100)])
    assert ends(jobs) == {"wide": 100}


# ======================================================================== packing analyzer


def test_auto_labels_follow_lucids_thresholds():
    assert [auto_label(s) for s in (0.5, 0.849, 0.85, 0.949, 0.95, 1.2)] == [2, 2, 1, 1, 0, 0]


def test_the_decision_tree_maps_metrics_to_the_tables_labels():
    analyzer = PackingAnalyzer(TABLE)
    assert analyzer.training_accuracy() == 1.0
    assert [analyzer.score(TABLE.lookup(w)) for w in (LIGHT, MEDIUM, HEAVY, FAT)] == [0, 1, 2, 0]


@needs_lucid_data
def test_the_analyzer_trained_on_lucids_table_fits_its_labels():
    table = load_default_table()
    assert table is not None and len(table) == 66
    assert PackingAnalyzer(table).training_accuracy() >= 0.95


# ======================================================================== binder rules

RULES = BinderRules()
BASE = PackInfo(num_gpus=1, gmem=2000.0, score=0, priority=100.0)


def info(**kw) -> PackInfo:
    return dataclasses.replace(BASE, **kw)


def test_binder_accepts_an_affine_pair():
    assert RULES.affine(BASE, BASE)


def test_binder_rule_same_gpu_count():
    assert not RULES.affine(info(num_gpus=2), BASE)
    assert RULES.affine(info(num_gpus=2), info(num_gpus=2))


def test_binder_rule_jobs_over_8_gpus_are_never_packed():
    assert RULES.affine(info(num_gpus=8), info(num_gpus=8))
    assert not RULES.affine(info(num_gpus=16), info(num_gpus=16))


def test_binder_rule_memory_must_fit_one_24_gb_gpu():
    assert RULES.affine(info(gmem=12000.0), info(gmem=12576.0))  # exactly 24,576 MB
    assert not RULES.affine(info(gmem=12000.0), info(gmem=12577.0))


def test_binder_rule_sharing_scores_sum_to_at_most_2():
    assert RULES.affine(info(score=1), info(score=1)) and RULES.affine(info(score=2), info(score=0))
    assert not RULES.affine(info(score=2), info(score=1)) and not RULES.affine(info(score=1), info(score=2))


def test_binder_rule_the_new_job_must_not_be_much_longer_than_its_partner():
    assert RULES.affine(info(priority=200.0), info(priority=100.0))  # 200 <= 2 x 100
    assert not RULES.affine(info(priority=200.5), info(priority=100.0))
    assert RULES.affine(info(priority=10.0), info(priority=1000.0))  # a much shorter job is fine


def test_binder_never_packs_a_job_with_unknown_metrics():
    assert not RULES.affine(info(score=None), BASE) and not RULES.affine(BASE, info(gmem=None))


def test_binder_takes_the_first_affine_candidate_in_start_order():
    cands = [("too-big", info(num_gpus=2)), ("first", info(score=2)), ("second", info(score=0))]
    assert RULES.pick_partner(info(score=0), cands) == "first"
    assert RULES.pick_partner(info(score=1), cands) == "second"
    assert RULES.pick_partner(info(score=1, num_gpus=4), cands) is None


# ======================================================================== packing in the simulator

# One GPU, no profiling pool (1 node), durations known (Known). C (500 s) heads the queue and
# starts alone; A (1000 s) is affine and packs onto it; B (1000 s) finds no exclusive job (C and
# A share) and no free GPU, so it waits. Co-located speed 0.5 each: C ends at 1000; A has done
# 500 and runs alone. At 1000 B packs onto A (alone again): A's last 500 s take 1000 s (end
# 2000); B has done 500 by then and ends alone at 2500.
PACK_JOBS = [
    JobSpec("A", 0, 1, 1000, attributes=LIGHT),
    JobSpec("B", 0, 1, 1000, attributes=MEDIUM),
    JobSpec("C", 0, 1, 500, attributes=LIGHT),
]


def test_affine_jobs_are_packed_pairwise_with_interference_speeds():
    policy = Known()
    jobs = run(policy, PACK_JOBS, cluster="1")
    assert ends(jobs) == {"C": 1000, "A": 2000, "B": 2500}
    assert policy.packings == [(0, "A", "C"), (1000, "B", "A")]
    assert policy.profiler.stats.profiled == 0 and policy.estimator.predict_calls == 0


def test_a_job_marked_no_pack_is_never_packed():
    # As above, but A may not share (an adapter evicted it once): B packs onto C instead at 0
    # (1000 <= 2 x 500). C ends at 1000, B (500 done) alone ends at 1500; A waits for the GPU.
    class NoPackA(Known):
        def can_pack(self, job, view):
            return job.job_id != "A" and super().can_pack(job, view)

    policy = NoPackA()
    jobs = run(policy, PACK_JOBS, cluster="1")
    assert ends(jobs) == {"C": 1000, "B": 1500, "A": 2500}
    assert policy.packings == [(0, "B", "C")]


def test_binder_in_the_simulator_respects_memory():
    # FAT (20 GB) cannot share with MEDIUM (6 GB): no packing, one job at a time by priority.
    jobs = run(Known(), [JobSpec("F", 0, 1, 100, attributes=FAT), JobSpec("M", 0, 1, 150, attributes=MEDIUM)], "1")
    assert ends(jobs) == {"F": 100, "M": 250}


# ======================================================================== throttle


def test_throttle_on_under_load_off_when_few_jobs_are_coming():
    busy, idle = Throttle(SubmissionForecaster()), Throttle(SubmissionForecaster())
    assert busy.packing_enabled(10.0)  # nothing known yet: packing stays on (Lucid's default)
    for b in range(10):
        for i in range(10):
            busy.forecaster.observe(b * 600 + i)
        idle.forecaster.observe(b * 600)
    # No model before 36 bins: persistence, the mean of the last 6 complete bins (10 and 1).
    assert busy.packing_enabled(6000.0) and busy.last_forecast == 10
    assert not idle.packing_enabled(6000.0) and idle.last_forecast == 1


def test_forecaster_model_is_fit_on_complete_past_bins_only():
    fc = SubmissionForecaster()
    for b in range(100):
        for i in range(12 if (b // 6) % 2 else 3):
            fc.observe(b * 600 + i)
    forecast = fc.forecast(100 * 600 + 5)  # in bin 100: bins 0..99 are complete
    assert fc.fits == 1 and fc.fit_targets == [99]
    assert forecast is not None and len(forecast) == 5 and all(0 <= v <= 15 for v in forecast)
    fc.observe(100 * 600 + 6)  # more arrivals in the current bin change nothing until it ends
    assert fc.forecast(100 * 600 + 500) == forecast


def test_forecaster_fast_paths_match_the_reference_computations():
    import numpy as np

    fc = SubmissionForecaster()
    rng = np.random.default_rng(0)
    for b in range(300):
        for i in range(int(rng.poisson(4))):
            fc.observe(b * 600 + i)
    for complete in (3, 10, 150, 300):
        ks = np.arange(max(1, complete - 12), complete + 6)
        one_by_one = np.array([fc.features(np.array([k]), complete)[0] for k in ks])
        assert np.allclose(fc.features(ks, complete), one_by_one)  # numpy path == plain-Python path
    fc.forecast(300 * 600)
    x = fc.features(np.arange(250, 306), 300)
    assert np.allclose(fc.predict(x), fc._model.predict(x))  # tree sum == scikit-learn's predict


def test_an_empty_forecast_counts_as_unknown_instead_of_comparing_none():
    # mypy found it: an empty forecast left last_forecast None and then compared None > threshold
    class NoBins(SubmissionForecaster):
        def forecast(self, now: float) -> list[float] | None:
            return []

    throttle = Throttle(forecaster=NoBins(), enabled_when_unknown=False)
    assert throttle.packing_enabled(3600.0) is False and throttle.last_forecast is None


def test_with_packing_throttled_off_jobs_run_one_at_a_time():
    # A threshold no forecast reaches, and no packing before the first forecast either.
    policy = Known(throttle=Throttle(SubmissionForecaster(), threshold=1e9, enabled_when_unknown=False))
    jobs = run(policy, PACK_JOBS, cluster="1")
    assert ends(jobs) == {"C": 500, "A": 1500, "B": 2500}
    assert policy.packed == 0 and policy.passes["exclusive"] > 0 and policy.passes["packing"] == 0


# ======================================================================== duration estimator


class RecordingEstimator(DurationEstimator):
    def fit(self, now: float) -> None:
        self.seen = getattr(self, "seen", [])
        self.seen.append((now, tuple(self._ids)))
        super().fit(now)


def small_trace(n: int, seed: int = 0) -> list[JobSpec]:
    import numpy as np

    rng = np.random.default_rng(seed)
    models = [LIGHT, MEDIUM, HEAVY, FAT]
    jobs, t = [], 0.0
    for i in range(n):
        t += float(rng.exponential(60))
        jobs.append(
            JobSpec(
                f"j{i:03d}", round(t), int(rng.choice([1, 1, 2, 4])), float(round(rng.lognormal(6, 1.2)) + 1),
                user=f"u{int(rng.integers(4))}", vc="vc", attributes=models[int(rng.integers(4))],
            )
        )
    return jobs


def test_estimator_trains_on_finished_jobs_only_and_batches_predictions():
    est = RecordingEstimator(config=EBMConfig.fast(), min_train=10)
    jobs = run(lucid(estimator=est, prof_scale=1), small_trace(80), cluster="2x4")
    assert est.fits >= 3  # first at 10 finished jobs, then each time the history doubles
    end = {j: s.end_time for j, s in jobs.items()}
    for fit_time, ids in est.seen:
        assert ids and all(end[i] <= fit_time for i in ids)  # never a job still running or queued
    assert [f.latest_end <= f.time for f in est.fit_log] == [True] * est.fits
    assert est.predicted_rows > est.predict_calls  # whole-queue re-estimates after refits


def test_priority_is_estimated_duration_times_gpus():
    policy = Known()
    jobs = run(policy, [JobSpec("a", 0, 1, 300), JobSpec("b", 0, 4, 100)], cluster="1x4")
    # b: 100 x 4 = 400 > a: 300 x 1: a starts first; b cannot start beside it (3 GPUs free).
    assert policy.job_state("a").priority == 300 and policy.job_state("b").priority == 400
    assert policy.job_state("a").key is None and policy.job_state("b").stage == "running"  # both left the queue
    assert ends(jobs) == {"a": 300, "b": 400}


# ======================================================================== data, registry, e2e


def test_without_measured_data_lucid_runs_and_never_packs():
    policy = Lucid(table=None, ebm=EBMConfig.fast(), prof_scale=1)
    jobs = run(policy, small_trace(30), cluster="2x4")
    assert policy.packed == 0 and policy.profiler.stats.measured == 0 and len(jobs) == 30


def test_lucid_interference_ignores_gpu_count_and_treats_large_models_as_benign(tmp_path):
    csv = tmp_path / "colocate_info.csv"
    csv.write_text(
        "model1,dataset1,gpu_num1,batchsize1,amp1,speed1,model2,dataset2,gpu_num2,batchsize2,amp2,speed2\n"
        "light,d,1,32,0,0.9,heavy,d,1,32,0,0.7\n"
    )
    model = LucidInterference.from_csv(csv, default_factor=0.6)
    light4, heavy4 = JobSpec("l", 0, 4, 1, attributes=LIGHT), JobSpec("h", 0, 4, 1, attributes=HEAVY)
    assert model.speeds(heavy4, light4) == (0.7, 0.9)  # measured on 1 GPU, applied to 4
    bert = JobSpec("b", 0, 4, 1, attributes=workload("BERT"))
    assert model.speeds(bert, light4) == (1.0, 1.0)
    assert model.speeds(JobSpec("x", 0, 1, 1), light4) == (0.6, 0.6)


def test_make_policy_builds_lucid_once_registered():
    if "lucid" not in POLICIES:
        pytest.skip("'lucid' is not in schedulers.policies.POLICIES yet (registry patch pending)")
    assert isinstance(make_policy("lucid"), Lucid)


@needs_lucid_data
def test_end_to_end_lucid_packs_and_beats_fifo_on_a_synthetic_trace():
    from schedmate.schedulers.metrics import summarize
    from schedmate.schedulers.traces import generate_trace

    table = load_default_table()
    jobs = assign_workloads(generate_trace(400, seed=1, cluster_gpus=64, load=1.2).jobs, table, seed=1)
    cluster = ClusterSpec.parse("64")
    interference = LucidInterference.from_shared_data()
    policy = Lucid(table=table, ebm=EBMConfig.fast())
    results = {}
    for name, pol in (("lucid", policy), ("fifo", make_policy("fifo"))):
        results[name] = Simulator(jobs, cluster, pol, SimConfig(record_timeline=False), interference=interference).run()
    assert all(j.phase.is_terminal for j in results["lucid"].jobs)
    jct = {name: summarize(r).mean_jct for name, r in results.items()}
    print(f"mean JCT on 400 synthetic jobs: {jct}; Lucid {policy.info()}")
    assert policy.packed > 0 and policy.profiler.stats.finished_in_profiler > 0
    assert jct["lucid"] < jct["fifo"]
    shared = [j for j in results["lucid"].jobs if policy.job_state(j.job_id).packed_with is not None]
    assert len(shared) == policy.packed and all(j.spec.num_gpus <= 8 for j in shared)
