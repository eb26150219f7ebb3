"""Sia reference policy: goodput model, configurations, ILP, work units, bootstrapping, end to end.

Tests marked `shared_data` read Sia's measured profiles and workloads from ../shared/data and are
skipped with a reason when it is absent; the rest use synthetic inputs.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from schedmate.config import shared_data_dir
from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.engine import SimConfig
from schedmate.schedulers.job import JobSpec, Phase
from schedmate.schedulers.metrics import summarize
from schedmate.schedulers.sia import SIA_CLUSTER, Sia, SiaFIFO, SiaThroughput, load_sia_jobs, seed_model, simulate_sia
from schedmate.schedulers.sia.configs import candidate_configs, cluster_types, config_arrays
from schedmate.schedulers.sia.goodput import (
    GoodputFunction,
    GradParams,
    PerfParams,
    efficiency,
    fit_perf_params,
    predict_profile,
    split_batch,
)
from schedmate.schedulers.sia.ilp import objective_matrix, solve_allocation
from schedmate.schedulers.sia.jobs import SiaJobModel, truth_for, work_curve
from schedmate.schedulers.sia.policy import realloc_factor
from schedmate.schedulers.sia.profiles import load_app, profile_name


def _sia_data() -> bool:
    root = shared_data_dir()
    return root is not None and (root / "sia" / "traces" / "cifar10").is_dir()


needs_data = pytest.mark.skipif(not _sia_data(), reason="Sia profiles/workloads absent (../shared/data/sia)")
shared = [pytest.mark.shared_data, needs_data]


def workload(name: str):  # type: ignore[no-untyped-def]
    return shared_data_dir() / "sia" / "workloads" / name  # type: ignore[operator]


# ======================================================================== goodput model


TRUE = PerfParams(0.02, 0.0015, 0.08, 0.004, 0.01, 0.002, 1.6)


def _synthetic_points() -> tuple[np.ndarray, ...]:
    rows = [(n, r, b) for n, r in [(1, 1), (1, 2), (1, 4), (1, 8), (2, 16), (3, 24), (2, 4), (4, 32)] for b in (16, 32, 64, 128)]
    nodes, reps, bsz = (np.array(c, dtype=float) for c in zip(*rows))
    st, sy = predict_profile(TRUE, nodes, reps, bsz)
    return nodes, reps, bsz, st, sy


def test_fit_recovers_synthetic_step_times_on_held_out_configurations():
    nodes, reps, bsz, st, sy = _synthetic_points()
    held = (reps == 8) | (reps == 24)  # fit without these, predict them
    p = fit_perf_params(nodes[~held], reps[~held], bsz[~held], st[~held], sy[~held])
    pred, _ = predict_profile(p, nodes[held], reps[held], bsz[held])
    assert np.max(np.abs(pred - st[held]) / st[held]) < 0.05
    assert 1.0 <= p.gamma <= 10.0


def test_fit_with_only_single_gpu_points_is_optimistic_about_scaling():
    # Pollux's prior: without multi-GPU data the network terms are pinned tiny (inter ≥ 1.1 × intra).
    b = np.array([16.0, 32, 64, 128])
    st, sy = predict_profile(TRUE, np.ones(4), np.ones(4), b)
    p = fit_perf_params(np.ones(4), np.ones(4), b, st, sy)
    assert p.alpha_r < 1e-6 and p.alpha_n >= p.alpha_r
    fn = GoodputFunction(p, None, 32, 4096, (16, 128))
    t1 = fn.throughput(1, 1, 64)
    t8 = fn.throughput(1, 8, 64)
    assert t8 / t1 == pytest.approx(8.0, rel=0.02)


def test_efficiency_is_one_at_the_initial_batch_and_gain_is_bounded_by_scale():
    g = GradParams(sqr=1.0, var=10.0)
    assert efficiency(g, 128, 128) == pytest.approx(1.0)
    for b in (256, 1024, 8192):
        eff = float(efficiency(g, b, 128))
        scale = b / 128
        assert 1.0 / scale <= eff <= 1.0  # gain = eff·scale ∈ [1, scale]
    # Pure noise (sqr = 0): a larger batch is perfectly efficient; pure signal (var = 0): useless.
    assert float(efficiency(GradParams(0.0, 1.0), 1024, 128)) == pytest.approx(1.0)
    assert float(efficiency(GradParams(1.0, 0.0), 1024, 128)) == pytest.approx(128 / 1024)


def test_split_batch_accumulates_when_a_gpu_cannot_hold_its_share():
    atomic, accum = split_batch(4096.0, 4.0, 256, 128)
    assert (int(atomic), int(accum)) == (256, 3)  # 1024 per GPU = 4 × 256
    atomic, accum = split_batch(256.0, 1.0, 512, 128)
    assert int(accum) == 1 and int(atomic) == 128  # one replica above B₀ accumulates at least once


def test_batch_size_tuning_never_loses_to_a_fixed_batch():
    fn = GoodputFunction(TRUE, GradParams(1.0, 50.0), 64, 4096, (16, 256))
    nodes, reps = np.array([1.0, 1, 2, 3]), np.array([1.0, 4, 16, 24])
    tuned, atomic, accum = fn.optimize(nodes, reps)
    fixed, _, _ = fn.optimize(nodes, reps, batch_size=1024)
    assert np.all(tuned >= fixed * (1 - 1e-9))
    assert np.all((atomic >= 16) & (atomic <= 256))


@pytest.mark.shared_data
@needs_data
@pytest.mark.parametrize("app", ["cifar10", "imagenet", "deepspeech2", "bert"])
def test_fit_reproduces_measured_step_times_on_held_out_points(app):
    a = load_app(app)
    rng = np.random.default_rng(0)
    for prof in ("aws", "dgx-ext", "rtx"):
        t = a.tables[prof]
        idx = rng.permutation(len(t))
        train, test = idx[: int(0.8 * len(t))], idx[int(0.8 * len(t)) :]
        p = fit_perf_params(t.num_nodes[train], t.num_replicas[train], t.local_bsz[train], t.step_time[train], t.sync_time[train])
        pred, _ = predict_profile(p, t.num_nodes[test], t.num_replicas[test], t.local_bsz[test])
        err = np.abs(pred - t.step_time[test]) / t.step_time[test]
        assert np.median(err) < 0.10, (app, prof, np.median(err))
        assert np.quantile(err, 0.9) < 0.30, (app, prof, np.quantile(err, 0.9))


# ======================================================================== configurations


def test_candidate_configurations_follow_sia_per_node_size_and_capacity():
    cluster = ClusterSpec.parse(SIA_CLUSTER)
    assert cluster.total_gpus == 64
    types = cluster_types(cluster)
    configs = candidate_configs(types)
    by_type = {t: [(c.nodes, c.gpus) for c in configs if c.gpu_type == t] for t in types}
    assert by_type["T4"] == [(1, 1), (1, 2), (1, 4), (2, 8), (3, 12), (4, 16), (5, 20), (6, 24)]
    assert [g for _, g in by_type["T4"]] == [1, 2, 4, 8, 12, 16, 20, 24]
    assert by_type["A100"] == [(1, 1), (1, 2), (1, 4), (1, 8), (2, 16)]
    assert by_type["2080Ti"] == [(1, 1), (1, 2), (1, 4), (1, 8), (2, 16), (3, 24)]
    gpus, tidx = config_arrays(configs, list(types))
    for t_i, t in enumerate(types):
        assert gpus[tidx == t_i].max() == types[t].capacity


def test_gpu_type_names_map_to_sia_profiles():
    assert (profile_name("T4"), profile_name("A100"), profile_name("2080Ti")) == ("aws", "dgx-ext", "rtx")
    assert profile_name("rtx") == "rtx"
    with pytest.raises(KeyError, match="no Sia profile"):
        profile_name("H100")


# ======================================================================== ILP


def _brute_force(speed, gpus, tidx, cap, p, lam):  # type: ignore[no-untyped-def]
    a = objective_matrix(speed, p)
    n_jobs, n_cfg = speed.shape
    best, best_choice = math.inf, None
    for choice in itertools.product(range(-1, n_cfg), repeat=n_jobs):
        used = np.zeros(cap.size)
        obj = 0.0
        ok = True
        for j, c in enumerate(choice):
            if c < 0:
                obj += lam
                continue
            if not np.isfinite(a[j, c]):
                ok = False
                break
            used[tidx[c]] += gpus[c]
            obj += a[j, c]
        if ok and np.all(used <= cap) and obj < best - 1e-12:
            best, best_choice = obj, choice
    return best, best_choice


def test_ilp_solves_a_hand_checked_instance_to_its_optimum():
    # One type with 4 GPUs; configs of 1, 2, 4 GPUs. Job A scales linearly, B barely scales.
    # A = round(S^-0.5, 2): A → [1, .71, .5], B → [1, .91, .88]; minimise Σ A + 1.1·(unallocated).
    # Every feasible option by hand: A on 4 alone costs .5 + 1.1 = 1.60, the cheapest (A and B on
    # 2 each: 1.62). With a fifth GPU, B also runs on 1 GPU beside A's 4: .5 + 1 = 1.50.
    speed = np.array([[1.0, 2.0, 4.0], [1.0, 1.2, 1.3]])
    gpus, tidx, cap = np.array([1, 2, 4]), np.zeros(3, dtype=int), np.array([4.0])
    options = {
        (2, -1): 0.5 + 1.1,
        (1, 1): 0.71 + 0.91,
        (1, 0): 0.71 + 1.0,
        (0, 1): 1.0 + 0.91,
        (0, 0): 2.0,
        (-1, 2): 1.1 + 0.88,
    }
    expected = min(options, key=options.get)  # (2, -1): 1.60
    res = solve_allocation(speed, gpus, tidx, cap, p=-0.5, lambda_n=1.1)
    assert tuple(res.choice) == expected and res.objective == pytest.approx(1.6)
    # With 5 GPUs B fits beside A's 4: both run.
    res5 = solve_allocation(speed, gpus, tidx, np.array([5.0]), p=-0.5, lambda_n=1.1)
    assert tuple(res5.choice) == (2, 0) and res5.objective == pytest.approx(1.5)


def test_ilp_respects_capacity_and_one_config_per_job_and_matches_brute_force():
    rng = np.random.default_rng(7)
    gpus = np.array([1, 2, 4, 1, 2, 4, 8])
    tidx = np.array([0, 0, 0, 1, 1, 1, 1])
    for _ in range(15):
        n_jobs = int(rng.integers(1, 5))
        speed = np.cumsum(rng.uniform(0.0, 1.5, size=(n_jobs, gpus.size)), axis=1) + 1.0
        speed[rng.random(speed.shape) < 0.2] = np.nan  # some configs not offered
        cap = np.array([float(rng.integers(1, 6)), float(rng.integers(1, 10))])
        res = solve_allocation(speed, gpus, tidx, cap, p=-0.5, lambda_n=1.1)
        used = np.zeros(2)
        for j, c in enumerate(res.choice):
            if c >= 0:
                assert np.isfinite(speed[j, c])
                used[tidx[c]] += gpus[c]
        assert np.all(used <= cap)
        assert res.choice.shape == (n_jobs,)  # one entry, i.e. at most one config, per job
        best, _ = _brute_force(speed, gpus, tidx, cap, -0.5, 1.1)
        assert res.objective == pytest.approx(best, abs=1e-9)


def test_ilp_pins_non_preemptible_jobs():
    speed = np.array([[1.0, 3.0], [1.0, 3.0]])
    res = solve_allocation(speed, np.array([1, 2]), np.zeros(2, dtype=int), np.array([2.0]), pinned={1: 1})
    assert tuple(res.choice) == (-1, 1)


def test_reallocation_factor_penalises_restarts():
    assert realloc_factor(10.0, 5, 30.0) == 1.0  # younger than the penalty: free to move
    assert realloc_factor(300.0, 2, 30.0) == pytest.approx((300 - 60) / 330)
    assert realloc_factor(300.0, 20, 30.0) == 0.0
    # A running job on config 0 sees config 1 as 20% better; the factor multiplies every config but
    # its current one. A fresh job moves, a job that already restarted often stays.
    speed = np.array([[1.0, 1.2]])
    gpus, tidx, cap = np.array([1, 1]), np.array([0, 1]), np.array([1.0, 1.0])
    for age, restarts, moves in [(10.0, 0, True), (600.0, 10, False)]:
        f = realloc_factor(age, restarts, 30.0)
        row = speed.copy()
        row[0, 1] *= f
        choice = solve_allocation(row, gpus, tidx, cap).choice[0]
        assert bool(choice == 1) is moves


# ======================================================================== work units and the engine


@pytest.mark.shared_data
@needs_data
def test_a_job_on_its_submitted_configuration_runs_at_speed_one():
    spec = JobSpec("cifar10-0", 0.0, 8, 0.0, attributes={"application": "cifar10", "batch_size": 2048})
    tp = SiaThroughput()
    duration = tp.duration(spec)
    assert duration == pytest.approx(work_curve("cifar10", 8, 2048).duration)
    spec = JobSpec("cifar10-0", 0.0, 8, duration, attributes={"application": "cifar10", "batch_size": 2048})
    # Only 2080Ti (rtx) nodes, rigid FIFO: exactly the reference run.
    result = simulate_sia([spec], ClusterSpec.parse("3x8:2080Ti"), SiaFIFO(throughput=tp))
    job = result.jobs[0]
    assert job.end_time - job.spec.submit_time == pytest.approx(duration, rel=1e-9)
    # On A100s the same rigid job is faster; the work curve maps work ↔ progress monotonically.
    fast = simulate_sia([spec], ClusterSpec.parse("2x8:A100"), SiaFIFO(throughput=tp)).jobs[0]
    assert fast.end_time < duration
    curve = tp.curve(spec)
    ws = np.linspace(0, curve.duration, 50)
    ps = [curve.progress_at(w) for w in ws]
    assert np.all(np.diff(ps) >= 0) and ps[-1] == pytest.approx(load_app("cifar10").target_progress)
    w = 0.37 * curve.duration
    assert curve.work_at(curve.progress_at(w)) == pytest.approx(w)


@pytest.mark.shared_data
@needs_data
def test_load_sia_jobs_gives_positive_durations_from_the_goodput_model():
    jobs = load_sia_jobs(workload("philly/workload-1.csv"))
    assert len(jobs) == 160
    assert all(j.duration > 0 and "duration_unknown" not in j.attributes for j in jobs)
    by_app = {j.attributes["application"] for j in jobs}
    assert {"cifar10", "imagenet"} <= by_app
    imagenet = max(j.duration for j in jobs if j.attributes["application"] == "imagenet")
    cifar = max(j.duration for j in jobs if j.attributes["application"] == "cifar10")
    assert imagenet > 10 * cifar  # hours vs minutes


# ======================================================================== profile-as-you-go and bootstrapping


@pytest.mark.shared_data
@needs_data
def test_profile_as_you_go_adds_points_refits_and_widens_exploration():
    app = load_app("cifar10")
    model = seed_model(app, ["aws", "dgx-ext", "rtx"])
    assert model.max_profiled_replicas("rtx") == 1 and model.grad is None
    truth = truth_for(app)
    before = model.perf["rtx"]
    step, sync = truth.measure("rtx", 1, 8, 128)
    assert model.observe("rtx", 1, 8, 128, step, sync)
    assert not model.observe("rtx", 1, 8, 128, step, sync)  # a known point changes nothing
    assert model.perf["rtx"] != before and model.max_profiled_replicas("rtx") == 8
    pred, _ = predict_profile(model.perf["rtx"], np.array([1]), np.array([8]), np.array([128]))
    assert pred[0] == pytest.approx(step, rel=0.1)
    copy = model.copy()
    copy.observe("rtx", 2, 16, 128, *truth.measure("rtx", 2, 16, 128))
    assert model.max_profiled_replicas("rtx") == 8  # copies are independent


class HistorySia(Sia):
    """What a SchedMate adapter does: start new jobs from a similar job's model, no seeding."""

    def __init__(self, donor: SiaJobModel, **kw):  # type: ignore[no-untyped-def]
        super().__init__(**kw)
        self.donor = donor

    def bootstrap(self, job, view):  # type: ignore[no-untyped-def]
        model = self.donor.copy()
        model.source = "history"
        return model


def _one_job(app: str = "cifar10", gpus: int = 8, bsz: int = 2048) -> list[JobSpec]:
    tp = SiaThroughput()
    spec = JobSpec(f"{app}-0", 0.0, gpus, 0.0, attributes={"application": app, "batch_size": bsz})
    return [JobSpec(spec.job_id, 0.0, gpus, tp.duration(spec), attributes=spec.attributes)]


@pytest.mark.shared_data
@needs_data
def test_bootstrap_hook_lets_a_history_model_skip_the_one_gpu_start():
    jobs = _one_job()
    cluster = ClusterSpec.parse(SIA_CLUSTER)
    first = simulate_sia(jobs, cluster, Sia(), SimConfig(max_time=61)).jobs[0]
    assert first.phase is Phase.RUNNING and first.num_gpus == 1  # no gradient statistics yet
    # A donor that has run: multi-GPU points on every type and gradient statistics.
    app = load_app("cifar10")
    truth = truth_for(app)
    donor = seed_model(app, ["aws", "dgx-ext", "rtx"])
    for prof, per_node in (("aws", 4), ("dgx-ext", 8), ("rtx", 8)):
        for reps in (2, 4, 8):
            nodes = max(1, reps // per_node)
            donor.observe(prof, nodes, reps, 128, *truth.measure(prof, nodes, reps, 128))
    donor.set_grad(truth.grad_stats(1024, 5))
    policy = HistorySia(donor)
    first = simulate_sia(jobs, cluster, policy, SimConfig(max_time=61)).jobs[0]
    assert first.phase is Phase.RUNNING and first.num_gpus > 1
    assert policy.model_of(first.job_id).source == "history" and first.job_id in policy.batches


@pytest.mark.shared_data
@needs_data
def test_optional_profiling_holds_one_gpu_per_type_before_scheduling():
    jobs = _one_job(gpus=4, bsz=512)
    cluster = ClusterSpec.parse(SIA_CLUSTER)
    early = simulate_sia(jobs, cluster, Sia(profile_seconds=120), SimConfig(max_time=30)).jobs[0]
    assert early.phase is Phase.PROFILING and early.num_gpus == 3
    assert {cluster.nodes[n].gpu_type for n, _ in early.placement} == {"T4", "A100", "2080Ti"}
    plain = simulate_sia(jobs, cluster, Sia()).jobs[0]
    profiled_policy = Sia(profile_seconds=120)
    profiled = simulate_sia(jobs, cluster, profiled_policy).jobs[0]
    assert profiled.phase is Phase.COMPLETED and plain.phase is Phase.COMPLETED
    assert profiled.end_time > plain.end_time  # profiling costs time
    assert profiled_policy.stats.profiled_jobs == 1


# ======================================================================== end to end


def test_policy_rejects_parameters_that_break_the_ilp_conditions():
    with pytest.raises(ValueError):
        Sia(p=-0.5, lambda_n=0.9)
    with pytest.raises(ValueError):
        Sia(p=-0.5, lambda_n=-1.1)


def test_registry_builds_sia_when_registered():
    from schedmate.schedulers.policies import POLICIES, make_policy

    if "sia" not in POLICIES:
        pytest.skip("schedulers/policies/__init__.py does not register 'sia' yet (see the Sia report)")
    assert isinstance(make_policy("sia"), Sia) and isinstance(make_policy("sia-fifo"), SiaFIFO)


@pytest.mark.shared_data
@needs_data
def test_sia_completes_a_philly_workload_and_beats_heterogeneity_unaware_fifo(capsys):
    # The first 30 jobs of philly/workload-1 (cifar10/deepspeech2/bert/imagenet/yolov3) on the
    # paper's 64-GPU, 3-type cluster; the whole file takes about a minute (see the report).
    jobs = load_sia_jobs(workload("philly/workload-1.csv"), limit=30)
    cluster = ClusterSpec.parse(SIA_CLUSTER)
    sia_policy = Sia(time_limit=5.0)
    sia = summarize(simulate_sia(jobs, cluster, sia_policy))
    fifo = summarize(simulate_sia(jobs, cluster, SiaFIFO()))
    with capsys.disabled():
        print(
            f"\n[sia e2e philly-1 x30] Sia mean JCT {sia.mean_jct / 3600:.3f} h p99 {sia.p99_jct / 3600:.2f} h "
            f"makespan {sia.makespan / 3600:.2f} h | FIFO mean JCT {fifo.mean_jct / 3600:.3f} h "
            f"p99 {fifo.p99_jct / 3600:.2f} h makespan {fifo.makespan / 3600:.2f} h | "
            f"Sia rounds {sia_policy.stats.rounds}, ILP {sia_policy.stats.ilp_seconds:.1f} s"
        )
    assert sia.completed == sia.jobs == 30 and fifo.completed == 30
    assert sia.mean_jct < fifo.mean_jct
    assert sia_policy.stats.statuses.get("fallback", 0) == 0
