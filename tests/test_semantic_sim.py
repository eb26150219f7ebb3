"""SimulationInsights: real agents on generated artefacts, cached by content, thinned by detection.

The expensive pieces (MiniLM, the line classifier) are loaded once per module and shared; Redis
is the session's real redis-server (tests/conftest.py), each source under its own key prefix.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from schedmate.adapters.insights import InsightSource
from schedmate.schedulers.job import FinalStatus, JobSpec, JobState, Phase
from schedmate.sim.artefacts import (
    calibrate_infra,
    failure_truth,
    length_bucket,
    plan_artefact,
    repo_hash,
)
from schedmate.sim.semantic import SimConfig, SimulationInsights, load_agent_models, synthetic_history
from schedmate.sim.simlogs import write_failed_log

SEED = 7


def spec(job_id: str, gpus: int = 4, duration: float = 3600.0, **attrs: Any) -> JobSpec:
    return JobSpec(job_id=job_id, submit_time=0.0, num_gpus=gpus, duration=duration, attributes=dict(attrs))


def twin_of(target: JobSpec, prefix: str, n: int = 1) -> list[JobSpec]:
    """History jobs (other ids) that land in the same artefact cell as `target`."""
    key = plan_artefact(target, SEED).key
    out = []
    for i in itertools.count():
        cand = spec(f"{prefix}-{i}", target.num_gpus, target.duration * (1.0 + 0.05 * (i % 3)))
        if plan_artefact(cand, SEED).key == key:
            out.append(cand)
            if len(out) == n:
                return out


TRACE = [spec(f"j{i}", gpus, dur) for i, (gpus, dur) in enumerate(
    itertools.product((1, 4, 8, 16), (600.0, 7200.0, 86400.0)))]


@pytest.fixture(scope="module")
def models() -> dict[str, Any]:
    return load_agent_models()  # shared by every source of this module


def make(models: dict[str, Any], url: str, tmp: Path, prefix: str, **cfg: Any) -> SimulationInsights:
    config = SimConfig(seed=SEED, redis_url=url, store_prefix=prefix, work_dir=tmp / f"work-{prefix}", **cfg)
    return SimulationInsights(config, **models)


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("content-cache")  # content-addressed: safe to share between tests


@pytest.fixture
def source(models: dict[str, Any], redis_url: str, tmp_path: Path, shared_cache: Path) -> Iterator[SimulationInsights]:
    with make(models, redis_url, tmp_path, "main", cache_dir=shared_cache) as src:
        src.prepare(TRACE)
        yield src


# -- artefacts (pure) --------------------------------------------------------------------------


def test_jobs_of_one_cell_share_identical_artefacts() -> None:
    target = spec("a", 8, 5000.0)
    (twin,) = twin_of(target, "b")
    a, b = plan_artefact(target, SEED), plan_artefact(twin, SEED)
    assert a == b and repo_hash(a.render()) == repo_hash(b.render())
    assert length_bucket(4000.0, 2.0) == length_bucket(4500.0, 2.0) != length_bucket(16000.0, 2.0)


def test_distinct_artefacts_are_bounded_on_a_synthetic_trace() -> None:
    from schedmate.schedulers.traces import generate_trace

    specs = generate_trace(1000, 3).jobs
    keys = {plan_artefact(s, SEED).key for s in specs}
    assert len(keys) < 0.6 * len(specs)


def test_sia_jobs_share_an_artefact_per_application_and_batch() -> None:
    a = plan_artefact(spec("s1", 2, application="bert", batch_size=384), SEED)
    b = plan_artefact(spec("s2", 8, application="bert", batch_size=384), SEED)
    c = plan_artefact(spec("s3", 2, application="bert", batch_size=768), SEED)
    d = plan_artefact(spec("s4", 2, application="imagenet", batch_size=3200), SEED)
    assert a == b and a.family == "bert-base-squad" and d.family == "resnet50-in1k"
    assert c.key != a.key and repo_hash(c.render()) != repo_hash(a.render())


def test_infra_calibration_hits_acme_shares_on_a_heavy_tailed_mix() -> None:
    rng = np.random.default_rng(0)
    gpu_times = np.exp(rng.normal(8.0, 3.0, size=3000))
    cal = calibrate_infra(gpu_times)
    p = np.array([cal.p_infra(g) for g in gpu_times])
    assert p.mean() == pytest.approx(0.11, abs=0.01) == cal.count_share
    gpu_share = (p * gpu_times).sum() / gpu_times.sum()
    assert gpu_share == pytest.approx(0.82, abs=0.03) and gpu_share == pytest.approx(cal.gpu_share, abs=1e-3)
    even = calibrate_infra(np.exp(rng.normal(8.0, 1.0, size=2000)))  # too even to reach 82%: says so
    assert even.count_share == pytest.approx(0.11, abs=0.01) and even.gpu_share < 0.6
    big, small = spec("big", 64, 86400.0), spec("small", 1, 60.0)
    assert cal.p_infra(big.gpu_time) > 0.5 > cal.p_infra(small.gpu_time)


def test_a_user_bug_fails_the_retry_the_same_way() -> None:
    cal = calibrate_infra([1.0, 10.0, 100.0])
    for i in range(50):
        s = spec(f"f{i}", 1, 60.0)
        first = failure_truth(s, 0, SEED, cal)
        if first.category != "infrastructure":
            assert failure_truth(s, 1, SEED, cal) == first


# -- the real agents ---------------------------------------------------------------------------


def test_is_an_insight_source(source: SimulationInsights) -> None:
    assert isinstance(source, InsightSource)


def plan_at_speed(target: JobSpec) -> float:
    """The artefact's plan at its workload's speed (startup + steps x step time), what rate x plan
    recovers from completed twins' measured step times (5% per-run spread)."""
    from schedmate.synthetic.jobs.history import expected_perf

    perf = expected_perf(plan_artefact(target, SEED).config)
    return perf.startup_s + perf.steps_total * perf.step_time_s


def test_a_matched_job_gets_the_deployed_rate_x_plan_estimate(source: SimulationInsights) -> None:
    target = TRACE[4]  # 4 GPUs, 2 h
    history = twin_of(target, "h", n=3)  # completed twins: their logs give a step time
    assert source.ingest_history(history) == 3
    got = source.advise(JobState(target))
    assert got is not None and got.matched and set(got.similar_ids) == {h.job_id for h in history}
    assert got.duration_s == pytest.approx(plan_at_speed(target), rel=0.1)  # the code's plan, not the twins' durations
    assert got.duration_top3_s == got.duration_s  # the SJF arms read the same deployed estimate
    assert got.sm_util and 0 < got.sm_util <= 100 and got.gpu_mem_gb and 0.0 < got.latency_s < 30.0  # measured extraction + retrieval
    assert set(got.metrics) == {"speed", "gpu_util", "gmem_util", "gmem"}


def test_an_unknown_workload_is_answered_but_unmatched(source: SimulationInsights) -> None:
    got = source.advise(JobState(TRACE[0]))
    assert got is not None and not got.matched and got.duration_s is None


def test_online_history_makes_earlier_jobs_of_the_run_matchable(models, redis_url, tmp_path) -> None:
    early, late = spec("sia-1", 2, application="yolov3", batch_size=64), spec("sia-2", 4, application="yolov3",
                                                                             batch_size=64)
    with make(models, redis_url, tmp_path, "sia") as src:
        src.prepare([early, late])
        assert not src.advise(JobState(late)).matched  # type: ignore[union-attr]
        src.record(JobState(early), finished=False)
        arrived = src.advise(JobState(late))
        assert arrived is not None and arrived.similar_ids == ("sia-1",) and arrived.duration_s is None
        src.record(JobState(early, phase=Phase.CANCELLED, run_time=1234.0), finished=True)
        done = src.advise(JobState(late))  # no completed run to give a rate: the mean of the matches
        assert done is not None and done.duration_s == pytest.approx(1234.0)
        src.record(JobState(early, phase=Phase.COMPLETED, run_time=1234.0), finished=True)
        rated = src.advise(JobState(late))  # a completed run's step time x the job's own plan
        assert rated is not None and rated.similar_ids == ("sia-1",)
        assert rated.duration_s == pytest.approx(plan_at_speed(late), rel=0.1)


def packed(s: JobSpec, *, solo_s: float = 4000.0, speed_after: float = 0.5) -> JobState:
    """A running job whose simulated history is: solo at speed 1 from t = 0, then co-located
    (speed `speed_after`) from `solo_s` on, as the engine records it."""
    job = JobState(s, phase=Phase.RUNNING)
    job.speed_log = [(0.0, 1.0, 0.0), (solo_s, speed_after, solo_s)]
    return job


def test_track_reads_the_slowdown_from_the_log_the_simulator_wrote(source: SimulationInsights) -> None:
    read = 0
    for s in TRACE[3:9]:
        art = source.artefact(s.job_id)
        assert art is not None
        # packed once ~30 progress lines of steady state are in the log (a bar's rate still carries
        # start-up before that), then ~60 progress lines after packing
        solo = max(4000.0, 30 * art.log_interval * art.step_time_s)
        later = solo + 60 * art.log_interval * art.step_time_s / 0.5
        reading = source.track(packed(s, solo_s=solo), event_at=solo, now=later)
        if reading is not None:  # a format without a trackable signal answers None
            read += 1
            assert reading.ratio == pytest.approx(0.5, rel=0.12)
    assert read >= 3 and source.stats()["track_calls"] == 6


def test_a_slowdown_is_invisible_until_the_log_shows_it(source: SimulationInsights) -> None:
    s = TRACE[4]
    art = source.artefact(s.job_id)
    assert art is not None
    line_s = art.log_interval * art.step_time_s / 0.5  # seconds per progress line once slowed
    assert source.track(packed(s), event_at=4000.0, now=4000.0 + 0.5 * line_s) is None  # nothing written yet
    later = source.track(packed(s), event_at=4000.0, now=4000.0 + 80 * line_s)
    assert later is not None and later.ratio == pytest.approx(0.5, rel=0.12)


def test_an_unslowed_job_reads_about_one(source: SimulationInsights) -> None:
    s = TRACE[5]
    art = source.artefact(s.job_id)
    assert art is not None
    reading = source.track(packed(s, speed_after=1.0), event_at=4000.0,
                           now=4000.0 + 80 * art.log_interval * art.step_time_s)
    assert reading is not None and reading.ratio == pytest.approx(1.0, rel=0.1)


def test_no_unslowed_job_gets_a_slowdown_its_simulation_never_had(source: SimulationInsights) -> None:
    """The log is written from the simulated history only: a job whose speed never changed must
    read about 1.0, every one of them (the log generator must not draw a random slowdown)."""
    ratios = {}
    for s in TRACE:
        art = source.artefact(s.job_id)
        assert art is not None
        reading = source.track(packed(s, speed_after=1.0), event_at=4000.0,
                               now=4000.0 + 80 * art.log_interval * art.step_time_s)
        if reading is not None and reading.ratio is not None:
            ratios[s.job_id] = reading.ratio
    assert len(ratios) >= len(TRACE) // 2
    assert {j: r for j, r in ratios.items() if not 0.85 <= r <= 1.15} == {}


def fail(source: SimulationInsights, job: JobState, attempt: int, reason: str, folder: Path) -> JobState:
    """The world's side of a failure: the attempt writes its log (the source is never told why)."""
    art = source.artefact(job.job_id)
    assert art is not None
    write_failed_log(job, attempt, art, reason, folder, seed=SEED)
    return job


def test_diagnosis_reads_the_log_the_failed_attempt_wrote(source: SimulationInsights, tmp_path: Path) -> None:
    big = [JobState(s) for s in TRACE if s.num_gpus >= 8][:2]
    for job, reason in zip(big, ("ECCError", "NCCLTimeoutError"), strict=True):
        got = source.diagnose(fail(source, job, 0, reason, tmp_path), attempt=0)
        assert got is not None and got.infrastructure and got.category == "infrastructure"
        assert got.action == "run_diagnostic" and 0.0 < got.latency_s < 60.0  # measured, not a constant
    script = fail(source, JobState(TRACE[1]), 0, "KeyError", tmp_path)
    got = source.diagnose(script, attempt=0)
    assert got is not None and not got.infrastructure


def test_without_a_written_log_there_is_no_diagnosis(source: SimulationInsights) -> None:
    assert source.diagnose(JobState(TRACE[2]), attempt=0) is None
    assert source.stats()["diagnose_no_log"] >= 1


def test_same_inputs_same_answers_without_any_shared_cache(models, redis_url, tmp_path) -> None:
    def run(name: str) -> tuple[list[Any], list[Any], dict[str, Any]]:
        with make(models, redis_url, tmp_path, name) as src:  # in-memory cache only
            src.prepare(TRACE)
            src.ingest_history(synthetic_history(TRACE, 8, seed=SEED))
            jobs = [fail(src, JobState(s), 0, "NCCLTimeoutError", tmp_path / "logs") for s in TRACE[6:10]]
            return ([src.advise(j) for j in jobs], [src.diagnose(j, attempt=0) for j in jobs],
                    {k: src.stats()[k] for k in ("extract_runs", "diagnose_runs", "distinct_artefacts")})

    first, second = run("det-a"), run("det-b")
    # everything but the measured latencies (wall time differs between two cold runs)
    strip = lambda answers: [dataclasses.replace(a, latency_s=0.0) if a is not None else None for a in answers]  # noqa: E731
    assert [strip(x) for x in first[:2]] == [strip(x) for x in second[:2]] and first[2] == second[2]
    assert first[2]["extract_runs"] > 0 and all(a.latency_s > 0 for a in first[0] if a is not None)


def test_a_second_run_makes_no_agent_call_and_answers_the_same(models, redis_url, tmp_path) -> None:
    cache = tmp_path / "shared-cache"
    answers = []
    for run in range(2):
        with make(models, redis_url, tmp_path, f"run{run}", cache_dir=cache) as src:
            src.prepare(TRACE)
            src.ingest_history(synthetic_history(TRACE, 12, seed=SEED))
            jobs = [fail(src, JobState(s), 0, "KeyError", tmp_path / "logs") for s in TRACE[:6]]
            answers.append(([src.advise(j) for j in jobs], [src.track(packed(j.spec, speed_after=0.6), event_at=4000.0, now=1e6) for j in jobs],
                            [src.diagnose(j, attempt=0) for j in jobs]))
            stats = src.stats()
        if run == 0:
            assert stats["agent_runs"] > 0
        else:
            assert stats["agent_runs"] == 0 and stats["cache_misses"] == 0 and stats["cache_hits"] > 0
    assert answers[0] == answers[1]


def test_detection_rate_zero_sees_nothing_and_costs_nothing(tmp_path: Path) -> None:
    with SimulationInsights(SimConfig(seed=SEED, detection_rate=0.0, redis_url="redis://127.0.0.1:1/0",
                                      work_dir=tmp_path / "w")) as src:
        report = src.prepare(TRACE)
        jobs = [JobState(s) for s in TRACE]
        assert all(src.advise(j) is None for j in jobs)
        assert all(src.track(packed(j.spec), event_at=4000.0, now=1e6) is None for j in jobs)
        for j in jobs:
            src.record(j, finished=True)
        stats = src.stats()
    assert report.detected_jobs == 0 and report.extractions_run == 0
    assert stats["advise_undetected"] == len(TRACE) and stats["agent_runs"] == 0 and stats["store_errors"] == 0
    assert not stats["store_connected"] and not stats["models_loaded"]


def test_sources_sharing_a_work_dir_run_their_own_redis(models, tmp_path: Path) -> None:
    shared = tmp_path / "shared-work"
    a = SimulationInsights(SimConfig(seed=SEED, work_dir=shared, store_prefix="a"), **models)
    b = SimulationInsights(SimConfig(seed=SEED, work_dir=shared, store_prefix="b"), **models)
    target = TRACE[4]
    (twin,) = twin_of(target, "w")
    try:
        for src in (a, b):
            src.prepare([target, twin])
            src.record(JobState(twin, phase=Phase.FAILED, run_time=100.0), finished=True)
        a.close()  # stops a's server only
        got = b.advise(JobState(target))
        assert got is not None and got.duration_s == 100.0 and b.stats()["store_errors"] == 0
    finally:
        b.close()


def test_detection_rate_one_sees_every_job_and_half_sees_about_half() -> None:
    full = SimulationInsights(SimConfig(detection_rate=1.0))
    half = SimulationInsights(SimConfig(detection_rate=0.5))
    try:
        ids = [f"job-{i}" for i in range(2000)]
        assert all(full.detected(i) for i in ids)
        share = np.mean([half.detected(i) for i in ids])
        assert 0.45 < share < 0.55 and [half.detected(i) for i in ids] == [half.detected(i) for i in ids]
    finally:
        full.close(), half.close()


def test_saved_answers_replay_identically_without_redis_or_models(source: SimulationInsights, tmp_path) -> None:
    source.ingest_history(synthetic_history(TRACE, 12, seed=SEED))
    jobs = [JobState(s) for s in TRACE]
    for j in jobs[:5]:
        fail(source, j, 0, "CUDAError", tmp_path / "logs")
    original = ([source.advise(j) for j in jobs], [source.track(packed(j.spec, speed_after=0.7), event_at=4000.0, now=1e6) for j in jobs[:5]],
                [source.diagnose(j, attempt=0) for j in jobs[:5]])
    path = tmp_path / "insights.json"
    source.save(path)
    with SimulationInsights.load(path) as replay:
        again = ([replay.advise(j) for j in jobs], [replay.track(packed(j.spec, speed_after=0.7), event_at=4000.0, now=1e6) for j in jobs[:5]],
                 [replay.diagnose(j, attempt=0) for j in jobs[:5]])
        assert replay.track(packed(jobs[0].spec), event_at=100.0, now=1e6) is None  # never asked: not invented
        stats = replay.stats()
    assert again == original
    assert stats["replay"] and stats["agent_runs"] == 0 and stats["replay_misses"] == 1
    assert not stats["store_connected"] and not stats["models_loaded"]


def test_redis_down_means_no_answer_and_a_counter_never_a_crash(models, tmp_path) -> None:
    with SimulationInsights(SimConfig(seed=SEED, redis_url="redis://127.0.0.1:1/0", work_dir=tmp_path / "w"),
                            **models) as src:
        src.prepare(TRACE[:2])
        job = JobState(TRACE[0])
        assert src.advise(job) is None and src.advise(job) is None
        src.record(job, finished=True)
        stats = src.stats()
    assert stats["store_errors"] == 3 and stats["extract_runs"] >= 1


def test_jobs_without_an_artefact_get_none(source: SimulationInsights) -> None:
    stranger = JobState(spec("never-prepared"))
    assert source.advise(stranger) is None
    assert source.track(packed(stranger.spec), event_at=4000.0, now=1e6) is None
    assert source.diagnose(stranger, attempt=0) is None  # no log written
    source.record(stranger, finished=True)
    assert source.stats()["no_artefact"] == 2


def test_unknown_sia_application_is_counted_not_fatal(tmp_path: Path) -> None:
    with SimulationInsights(SimConfig(work_dir=tmp_path / "w")) as src:
        report = src.prepare([spec("x", 1, application="alphafold", batch_size=1)], extract=False)
        assert report.jobs == 1 and src.stats()["unmappable_jobs"] == 1 and src.artefact("x") is None


def test_finished_record_uses_the_measured_outcome(models, redis_url, tmp_path) -> None:
    target = TRACE[5]
    (twin,) = twin_of(target, "r")
    with make(models, redis_url, tmp_path, "rec") as src:
        src.prepare([target, twin])
        src.record(JobState(twin, phase=Phase.FAILED, run_time=42.0), finished=True)
        got = src.advise(JobState(target))
        rec = src._agents.store.get(twin.job_id)  # noqa: SLF001 -- what the store holds
    assert got is not None and got.duration_s == 42.0
    assert rec.outcome.final_status is FinalStatus.FAILED and rec.submitted["metrics"]["gpu_util"] > 0


@pytest.mark.slow
def test_llm_extraction_runs_once_per_artefact_then_comes_from_the_cache(redis_url, tmp_path) -> None:
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python not installed")
    from schedmate.llm import LLMConfig

    cfg = {"seed": SEED, "redis_url": redis_url, "cache_dir": tmp_path / "c", "llm_modules": ("advisor",),
           "llm": LLMConfig(max_tokens=256, timeout_s=120, ctx=8192)}
    jobs = [TRACE[4], *twin_of(TRACE[4], "llm")]
    with SimulationInsights(SimConfig(**cfg, work_dir=tmp_path / "w1")) as src:
        report = src.prepare(jobs)
        first = src.stats()
    assert report.distinct_artefacts == 1 and report.extractions_run == 1
    assert first["modes"]["extract"].startswith("llm") and first["llm_calls"] > 0
    with SimulationInsights(SimConfig(**cfg, work_dir=tmp_path / "w2")) as src:
        src.prepare(jobs)
        assert src.stats()["agent_runs"] == 0 and src.stats()["llm_calls"] == 0


def test_sources_sharing_a_cache_file_keep_each_others_entries(tmp_path: Path) -> None:
    from schedmate.sim.insight_cache import ContentCache

    a, b = ContentCache.open(tmp_path), ContentCache.open(tmp_path)
    a.put("extract", "h1:static", {"fields": {"model_name": "x"}})
    b.put("track", "h2:regex", {"before": 2.0, "after": 1.0})
    a.flush(), b.flush()
    merged = ContentCache.open(tmp_path)
    assert merged.get("extract", "h1:static") and merged.get("track", "h2:regex") and len(merged) == 2
