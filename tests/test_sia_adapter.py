"""Sia+SchedMate: pre-profiling-free bootstrapping on the unmodified Sia policy (spec §5.2, §8.2).

A scripted `InsightSource` decides which jobs match which; the scheduler is the real Sia policy
on Sia's measured profiles (skipped when ../shared/data/sia is absent).
"""

from __future__ import annotations

from typing import Any

import pytest

from schedmate.adapters.insights import AdvisorInsight, InsightSource
from schedmate.adapters.sia import SiaSchedMate, copy_model, pick_donor
from schedmate.config import shared_data_dir
from schedmate.schedulers.cluster import ClusterSpec
from schedmate.schedulers.engine import SimConfig
from schedmate.schedulers.job import JobSpec, Phase
from schedmate.schedulers.metrics import summarize
from schedmate.schedulers.sia import SIA_CLUSTER, Sia, SiaThroughput, load_sia_jobs, seed_model, simulate_sia
from schedmate.schedulers.sia.profiles import load_app

T_PROF = 120.0


def _sia_data() -> bool:
    root = shared_data_dir()
    return root is not None and (root / "sia" / "traces" / "cifar10").is_dir()


needs_data = pytest.mark.skipif(not _sia_data(), reason="Sia profiles/workloads absent (../shared/data/sia)")
pytestmark = [pytest.mark.shared_data, needs_data]


class ScriptedSource(InsightSource):
    """Answers `advise` from a fixed table: job id -> similar ids (absent: not detected)."""

    def __init__(self, matches: dict[str, tuple[str, ...]] | None = None, latency_s: float = 0.0) -> None:
        self.matches = matches or {}
        self.latency_s = latency_s
        self.calls: list[tuple[str, str]] = []

    def advise(self, job):  # type: ignore[no-untyped-def]
        self.calls.append(("advise", job.job_id))
        ids = self.matches.get(job.job_id)
        return None if ids is None else AdvisorInsight(ids, None, None, None, latency_s=self.latency_s)

    def record(self, job, *, finished):  # type: ignore[no-untyped-def]
        self.calls.append(("finished" if finished else "arrived", job.job_id))

    def stats(self) -> dict[str, Any]:
        return {"source": "scripted"}


def job(job_id: str, submit: float, app: str = "cifar10", gpus: int = 4, bsz: int = 2048) -> JobSpec:
    attrs = {"application": app, "batch_size": bsz}
    probe = JobSpec(job_id, submit, gpus, 0.0, attributes=attrs)
    return JobSpec(job_id, submit, gpus, SiaThroughput().duration(probe), attributes=attrs)


def cluster() -> ClusterSpec:
    return ClusterSpec.parse(SIA_CLUSTER)


def by_id(result) -> dict:  # type: ignore[no-untyped-def]
    return {j.job_id: j for j in result.jobs}


def test_the_scripted_source_satisfies_the_insight_protocol():
    assert isinstance(ScriptedSource(), InsightSource)


def test_an_unmatched_job_profiles_on_one_gpu_of_each_type_for_t_prof():
    policy = SiaSchedMate(ScriptedSource(), profile_seconds=T_PROF)
    a = by_id(simulate_sia([job("a", 0.0)], cluster(), policy, SimConfig(max_time=60)))["a"]
    assert a.phase is Phase.PROFILING
    types = {cluster().nodes[n].gpu_type for n, _ in a.placement}
    assert types == {"T4", "A100", "2080Ti"} and a.num_gpus == 3
    policy = SiaSchedMate(ScriptedSource(), profile_seconds=T_PROF)
    done = by_id(simulate_sia([job("a", 0.0)], cluster(), policy))["a"]
    assert done.phase is Phase.COMPLETED
    info = policy.info()
    assert info["profiled_jobs"] == 1 and info["bootstrapped"] == 0 and info["bootstrap_share"] == 0.0
    assert info["profiling_gpu_hours"] == pytest.approx(3 * T_PROF / 3600)


def test_a_matched_job_skips_profiling_and_starts_from_the_donors_model():
    # b arrives after a has profiled and run a few rounds; the advisor says b is like a.
    source = ScriptedSource({"b": ("a",)})
    policy = SiaSchedMate(source, profile_seconds=T_PROF)
    jobs = [job("a", 0.0), job("b", 595.0)]
    mid = by_id(simulate_sia(jobs, cluster(), policy, SimConfig(max_time=598)))
    donor = policy.models["a"]
    model = policy.models["b"]
    assert model is not donor and model.source == "history"
    for prof, points in donor.profiles.items():  # every measured point of a, on every type
        assert points.items() <= model.profiles[prof].items()
    assert model.grad == donor.grad and model.grad is not None  # a has run: gradient statistics
    assert mid["b"].phase is Phase.QUEUED  # waits the advisor's 9 s, holding no GPUs
    policy = SiaSchedMate(ScriptedSource({"b": ("a",)}), profile_seconds=T_PROF)
    done = by_id(simulate_sia(jobs, cluster(), policy))
    b = done["b"]
    assert b.phase is Phase.COMPLETED
    assert b.first_start == pytest.approx(660.0)  # 595 + 9 s misses the 600 s round: next one
    info = policy.info()
    assert (info["profiled_jobs"], info["bootstrapped"], info["wrong_app"]) == (1, 1, 0)
    assert info["bootstrap_share"] == pytest.approx(0.5)
    assert info["advisor_seconds"] == pytest.approx(9.0)
    assert policy.bootstraps["b"].donor == "a"


def test_the_source_hears_about_arrivals_before_advice_and_about_finishes():
    source = ScriptedSource()
    simulate_sia([job("a", 0.0)], cluster(), SiaSchedMate(source, profile_seconds=T_PROF))
    assert source.calls == [("arrived", "a"), ("advise", "a"), ("finished", "a")]


def test_the_measured_advisor_latency_replaces_the_default():
    policy = SiaSchedMate(ScriptedSource({"b": ("a",)}, latency_s=75.0), profile_seconds=T_PROF)
    done = by_id(simulate_sia([job("a", 0.0), job("b", 595.0)], cluster(), policy))
    assert done["b"].first_start == pytest.approx(720.0)  # ready at 670: the 720 s round
    assert policy.info()["advisor_seconds"] == pytest.approx(75.0)


def test_a_match_whose_donor_is_still_profiling_profiles_as_sia():
    policy = SiaSchedMate(ScriptedSource({"b": ("a",)}), profile_seconds=T_PROF)
    simulate_sia([job("a", 0.0), job("b", 30.0)], cluster(), policy)
    info = policy.info()
    assert (info["matched"], info["bootstrapped"], info["no_donor"], info["profiled_jobs"]) == (1, 0, 1, 2)


def test_the_most_similar_donor_with_a_model_is_chosen():
    models = {"x": None, "y": "model-y", "z": "model-z"}
    assert pick_donor(("self", "x", "y", "z"), "self", models.get) == "y"  # type: ignore[arg-type]
    assert pick_donor(("x", "unknown"), "self", models.get) is None  # type: ignore[arg-type]
    assert pick_donor(("self",), "self", lambda _: "own-model") is None  # type: ignore[arg-type,return-value]


def test_a_job_bootstrapped_from_another_application_runs_and_is_counted():
    source = ScriptedSource({"b": ("a",)})
    policy = SiaSchedMate(source, profile_seconds=T_PROF)
    jobs = [job("a", 0.0), job("b", 595.0, app="deepspeech2", gpus=2, bsz=320)]
    done = by_id(simulate_sia(jobs, cluster(), policy))
    assert done["b"].phase is Phase.COMPLETED
    info = policy.info()
    assert (info["bootstrapped"], info["wrong_app"], info["wrong_app_share"]) == (1, 1, 1.0)
    assert policy.bootstraps["b"].donor_app == "cifar10" and policy.bootstraps["b"].app == "deepspeech2"
    assert policy.history["b"].app.name == "deepspeech2"  # its own batch limits, a's curves


def test_copied_models_keep_the_new_jobs_application_and_are_independent():
    donor = seed_model(load_app("cifar10"), ["aws", "dgx-ext", "rtx"])
    model = copy_model(donor, "deepspeech2")
    assert model.app.name == "deepspeech2" and model.perf == donor.perf
    model.observe("rtx", 1, 8, 16, 0.5, 0.1)
    assert (1, 8, 16) not in donor.profiles["rtx"]


@pytest.mark.parametrize("source", ["silent", "unmatched"])
def test_detection_rate_zero_is_plain_sia(source):
    path = shared_data_dir() / "sia" / "workloads" / "philly" / "workload-1.csv"  # type: ignore[operator]
    jobs = load_sia_jobs(path, limit=16)
    plain = simulate_sia(jobs, cluster(), Sia(profile_seconds=T_PROF))
    src = ScriptedSource() if source == "silent" else ScriptedSource({j.job_id: () for j in jobs})
    policy = SiaSchedMate(src, profile_seconds=T_PROF, advisor_latency_s=0.0)
    sm = simulate_sia(jobs, cluster(), policy)
    jct = lambda r: {j.job_id: j.end_time - j.spec.submit_time for j in r.jobs}  # noqa: E731
    assert jct(sm) == jct(plain)
    assert summarize(sm).mean_jct == summarize(plain).mean_jct
    assert policy.info()["bootstrapped"] == 0 and policy.stats.profiled_jobs == len(jobs)


def test_reserved_profiling_gets_every_new_job_its_gpus_within_a_round():
    # Sia's ILP hands out every GPU; without a reservation new jobs wait for a gap to profile.
    path = shared_data_dir() / "sia" / "workloads" / "philly" / "workload-1.csv"  # type: ignore[operator]
    jobs = load_sia_jobs(path, limit=12)
    waits = {}
    for reserve in (False, True):
        result = simulate_sia(jobs, cluster(), Sia(profile_seconds=T_PROF, reserve_profiling=reserve))
        waits[reserve] = max(j.first_start - j.spec.submit_time for j in result.jobs)  # profiling start
    assert waits[True] <= 60.0 < waits[False]
