"""Rate x plan, the early-exit model, the duration metrics and the shared-users corpus split.

Hand-computed examples: each expected number is worked out in the comment next to it.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from schedmate.agents.advisor.early_exit import (
    EarlyExitModel,
    ExitPositions,
    ExitRecord,
    forecast,
    shrunk_rate,
    weighted_quantile,
)
from schedmate.agents.advisor.rate_estimator import Plan, RateSample, estimate_rate_plan, sample_train_time
from schedmate.embeddings.store import JobOutcome, JobRecord, Match
from schedmate.evals.harness.advisor_rate import (
    RateForecast,
    abs_log_ratios,
    duration_metrics,
    exit_records,
    measured_fields,
    spearman,
)
from schedmate.synthetic.jobs.generator import generate_job_corpus, iter_corpus_jobs, load_manifest


def sample(job_id: str = "h", **kw: object) -> RateSample:
    base: dict[str, object] = {"model_name": "resnet-50", "dataset": "imagenet-1k", "task_type": "image-classification",
                               "batch_size": 32, "gpus": 4, "step_time_s": 0.5, "steps_per_epoch": 100,
                               "startup_s": 60.0}
    base.update(kw)
    return RateSample(job_id=job_id, **base)  # type: ignore[arg-type]


def plan(**kw: object) -> Plan:
    base: dict[str, object] = {"model_name": "resnet-50", "dataset": "imagenet-1k", "task_type": "image-classification",
                               "iterations": 1000, "iteration_type": "steps", "batch_size": 32, "gpus": 4}
    base.update(kw)
    return Plan(**base)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------- rate x plan


def test_steps_plan_scales_step_time_by_the_batch_ratio() -> None:
    # 1000 steps x 0.5 s/step x (64 / 32) = 1000 s
    assert sample_train_time(plan(batch_size=64), sample()) == pytest.approx(1000.0)
    # unknown batch on either side: no scaling, 1000 x 0.5 = 500 s
    assert sample_train_time(plan(batch_size=None), sample()) == pytest.approx(500.0)


def test_epochs_plan_uses_epoch_time_scaled_by_gpus_not_batch() -> None:
    # 3 epochs x 100 steps/epoch x 2 s/step x (4 GPUs / 8 GPUs) = 300 s, whatever the batch
    p = plan(iterations=3, iteration_type="epochs", gpus=8, batch_size=256)
    assert sample_train_time(p, sample(step_time_s=2.0)) == pytest.approx(300.0)
    # no steps per epoch measured: an epoch cannot be converted
    assert sample_train_time(p, sample(steps_per_epoch=None)) is None


def test_model_size_ratio_scales_the_work() -> None:
    # 1000 steps x 0.5 s x (6.7 / 2.7)
    p = plan(model_size_b=6.7)
    assert sample_train_time(p, sample(model_size_b=2.7)) == pytest.approx(500.0 * 6.7 / 2.7)


def test_sequence_length_ratio_scales_the_work_when_both_state_one() -> None:
    # 1000 steps x 0.5 s x (512 / 2048): a quarter of the tokens per sample
    assert sample_train_time(plan(seq_len=512), sample(seq_len=2048)) == pytest.approx(125.0)
    assert sample_train_time(plan(seq_len=512), sample(seq_len=None)) == pytest.approx(500.0)
    # an epoch is a fixed number of samples: longer samples take longer too
    p = plan(iterations=3, iteration_type="epochs", gpus=4, seq_len=4096)
    assert sample_train_time(p, sample(step_time_s=2.0, seq_len=1024)) == pytest.approx(3 * 100 * 2.0 * 4)
    assert Plan.from_fields({"seq_len": "2048"}, 8).seq_len == 2048 and Plan.from_fields({"seq_len": 0}, 8).seq_len is None


def test_first_tier_wins_and_median_is_taken_in_log_space() -> None:
    same_gpus = [sample("a", step_time_s=0.1), sample("b", step_time_s=0.4)]
    other_gpus = sample("c", gpus=8, step_time_s=5.0)
    est = estimate_rate_plan(plan(), [*same_gpus, other_gpus])
    assert est is not None
    assert est.tier == "model+dataset+task+gpus"
    assert sorted(est.sample_ids) == ["a", "b"]
    # 1000 x 0.1 = 100 s and 1000 x 0.4 = 400 s: the log-space median is sqrt(100 x 400) = 200 s
    assert est.train_s == pytest.approx(200.0)
    assert est.spread == pytest.approx(math.log(2.0))  # std of (ln 100, ln 400) = ln 2
    assert est.duration_s == pytest.approx(260.0)  # + median startup 60 s


def test_softer_tiers_and_no_match() -> None:
    # GPUs differ: model+dataset+task tier
    est = estimate_rate_plan(plan(gpus=2), [sample("c", gpus=8)])
    assert est is not None and est.tier == "model+dataset+task"
    # only the model agrees
    est = estimate_rate_plan(plan(), [sample("d", dataset="cifar-10", task_type="other")])
    assert est is not None and est.tier == "model"
    # another size of the model on the same dataset and task: size-scaled
    p = plan(model_name="gpt-6.7b", model_size_b=6.7)
    est = estimate_rate_plan(p, [sample("e", model_name="gpt-2.7b", model_size_b=2.7, step_time_s=1.0)])
    assert est is not None and est.tier == "dataset+task, size-scaled"
    assert est.train_s == pytest.approx(1000 * 1.0 * 6.7 / 2.7)
    # ... but not without both sizes
    assert estimate_rate_plan(plan(model_name="gpt-6.7b"), [sample("e", model_name="gpt-2.7b")]) is None
    # a similar job that never reached a step carries no speed
    assert estimate_rate_plan(plan(), [sample("f", step_time_s=None)]) is None
    # no plan: nothing to multiply
    assert estimate_rate_plan(plan(iterations=None), [sample()]) is None


def test_rate_sample_reads_store_records_and_old_records_still_load() -> None:
    out = JobOutcome(duration=1000.0, startup_s=60.0, step_time_s=0.5, steps_done=1000, steps_total=1000,
                     steps_per_epoch=100)
    rec = JobRecord(job_id="j", vector=[1.0, 0.0], submitted={"gpus": 4, "user": "u"},
                    workload={"model_name": "resnet-50", "dataset": "imagenet-1k", "batch_size": 32,
                              "task_type": "image-classification", "model_size_b": 0.025}, outcome=out)
    s = RateSample.from_record(JobRecord.model_validate_json(rec.model_dump_json()))
    assert (s.gpus, s.batch_size, s.step_time_s, s.steps_per_epoch, s.startup_s, s.model_size_b) == (
        4, 32, 0.5, 100, 60.0, 0.025)
    old = JobOutcome.model_validate(json.loads('{"duration": 12.0, "sm_util": 40.0}'))  # written before the fields
    assert old.step_time_s is None and old.steps_done is None


# ----------------------------------------------------------------------------------------- early exits


def test_shrunk_rate() -> None:
    assert shrunk_rate(2, 2, prior=0.5, strength=2.0) == pytest.approx(0.75)  # (2 + 2 x 0.5) / (2 + 2)
    assert shrunk_rate(0, 0, prior=0.3, strength=5.0) == pytest.approx(0.3)


def test_exit_probability_backs_off_global_user_group() -> None:
    recs = [ExitRecord("u", "g", True, 0.0, 0.5), ExitRecord("u", "h", True, 0.5),
            ExitRecord("v", "k", False, 1.0), ExitRecord("v", "k", False, 1.0)]
    m = EarlyExitModel(prior_strength=2.0).fit(recs)
    assert m.base_rate == pytest.approx(0.5)  # 2 of 4
    p_user = (2 + 2 * 0.5) / (2 + 2)  # user u: 2 exits of 2 runs, shrunk to 0.5 -> 0.75
    assert m.p_exit("u", None) == pytest.approx(p_user)
    assert m.p_exit("u", "g") == pytest.approx((1 + 2 * p_user) / (1 + 2))  # group g: 1 of 1, shrunk to 0.75
    assert m.p_exit("v", "k") == pytest.approx((0 + 2 * ((0 + 1.0) / 4)) / (2 + 2))  # v: 0/2 -> 0.25; k: 0/2 -> 0.125
    assert m.p_exit("stranger", "new") == pytest.approx(0.5)


def test_exit_positions_use_the_users_own_once_there_are_enough() -> None:
    recs = [ExitRecord("u", "g", True, 0.0, 0.4)] * 3 + [ExitRecord("v", "k", True, 0.5)] * 3
    m = EarlyExitModel(min_positions=3).fit(recs)
    assert m.positions("u") == ExitPositions(pre_step_share=1.0, startup_ratios=(0.4,) * 3, progress=())
    m = EarlyExitModel(min_positions=4).fit(recs)  # too few of u's own: all exits
    pos = m.positions("u")
    assert pos.pre_step_share == pytest.approx(0.5) and pos.progress == (0.5,) * 3


def test_weighted_quantile() -> None:
    assert weighted_quantile([10.0, 1.0, 5.0], [0.2, 0.5, 0.3], 0.5) == 1.0  # cumulative 0.5 at 1
    assert weighted_quantile([10.0, 1.0, 5.0], [0.2, 0.5, 0.3], 0.6) == 5.0
    assert weighted_quantile([10.0, 1.0, 5.0], [0.2, 0.5, 0.3], 0.9) == 10.0


def test_forecast_mixes_full_run_and_exits() -> None:
    pos = ExitPositions(pre_step_share=1.0, startup_ratios=(0.5,), progress=())
    f = forecast(100.0, 900.0, 0.0, 0.0, pos)  # no exit risk: the plan itself
    assert (f.plan_s, f.p50_s, f.expected_s) == (1000.0, 1000.0, 1000.0)
    f = forecast(100.0, 900.0, 0.0, 0.75, pos)  # 75% die before the first step, at half the startup (50 s)
    assert f.p50_s == pytest.approx(50.0)
    assert f.expected_s == pytest.approx(0.25 * 1000.0 + 0.75 * 50.0)
    assert f.p90_s == pytest.approx(1000.0)
    both = ExitPositions(pre_step_share=0.5, startup_ratios=(0.5,), progress=(0.5,))
    f = forecast(100.0, 900.0, 0.0, 0.5, both)  # 25% at 50 s, 25% at 100 + 0.5 x 900 = 550 s, 50% at 1000 s
    assert f.expected_s == pytest.approx(0.25 * 50 + 0.25 * 550 + 0.5 * 1000)
    assert f.p50_s == pytest.approx(550.0)
    # no observed exit positions: the exit probability cannot be placed, the plan stands
    assert forecast(100.0, 900.0, 0.0, 0.9, ExitPositions(0.0, (), ())).p50_s == pytest.approx(1000.0)


def test_rate_forecast_points_and_fallback() -> None:
    est = estimate_rate_plan(plan(), [sample()])
    f = RateForecast(est, forecast(est.startup_s, est.train_s, est.spread, 0.0, ExitPositions(0.0, (), ())), (7.0, 9.0))
    assert f.point("plan")[0] == pytest.approx(560.0)  # 60 + 1000 x 0.5
    assert RateForecast(None, None, (7.0, 9.0)).point("p50") == (7.0, 9.0)


# ----------------------------------------------------------------------------------------- metrics


def test_abs_log_ratio_and_spearman() -> None:
    assert abs_log_ratios([200.0, 50.0, None, 0.0], [100.0, 100.0, 5.0, 5.0]) == pytest.approx(
        [math.log(2), math.log(2)])  # None and a zero estimate are not scored
    assert spearman([1, 2, 3, 4], [10, 30, 20, 40]) == pytest.approx(0.8)  # 1 - 6 x 2 / (4 x 15)
    assert spearman([4, 3, 2, 1], [1, 2, 3, 4]) == pytest.approx(-1.0)
    assert spearman([1, 1, 1], [1, 2, 3]) is None  # a constant estimate ranks nothing
    assert spearman([1, 2], [1, 2]) is None


class _Job:
    def __init__(self, job_id: str, status: str, duration: float) -> None:
        self.id = job_id

        class _O:
            pass

        self.outcome = _O()
        self.outcome.status = status  # type: ignore[attr-defined]
        self.outcome.duration_s = duration  # type: ignore[attr-defined]


def test_duration_metrics_by_status_and_match() -> None:
    jobs = [_Job("a", "completed", 100.0), _Job("b", "completed", 100.0), _Job("c", "failed", 10.0),
            _Job("d", "cancelled", 50.0)]
    table = {"a": (150.0, None), "b": (400.0, None), "c": (100.0, None), "d": (None, None)}
    m = duration_metrics(jobs, table, matched={"a", "c"})  # type: ignore[arg-type]
    assert m["all"]["n"] == 3  # d has no estimate
    assert m["completed"]["within_100"] == pytest.approx(0.5)  # a: 50% off, b: 300% off
    assert m["completed"]["median_abs_log"] == pytest.approx(np.median([math.log(1.5), math.log(4)]))
    assert m["failed"]["within_100"] == 0.0 and m["cancelled"] == {"n": 0}
    assert m["matched"]["n"] == 2 and m["unmatched"]["n"] == 1
    assert m["all"]["over_share"] == 1.0


# ----------------------------------------------------------------------------------------- corpus split


def _purity(mode: str) -> float:
    by_user: dict[str, Counter[str]] = defaultdict(Counter)
    jobs = list(iter_corpus_jobs(200, 5, users_mode=mode))  # type: ignore[arg-type]
    for j in jobs:
        by_user[j.user.name][j.family] += 1
    return sum(max(c.values()) for c in by_user.values()) / len(jobs)


def test_shared_users_carry_no_workload_family() -> None:
    # share of jobs in their user's most frequent family: users own families vs one codebase, many users
    assert _purity("family") > 0.5
    assert _purity("shared") < 0.4
    owners: dict[str, set[str]] = defaultdict(set)
    for j in iter_corpus_jobs(200, 5, users_mode="shared"):
        owners[j.experiment].add(j.user.name)
    assert max(len(u) for u in owners.values()) >= 3  # one experiment, submitted by several users
    assert all(len(u) == 1 for u in _owners_family().values())  # the default: an experiment has one user


def _owners_family() -> dict[str, set[str]]:
    owners: dict[str, set[str]] = defaultdict(set)
    for j in iter_corpus_jobs(200, 5):
        owners[j.experiment].add(j.user.name)
    return owners


def test_users_mode_is_recorded_and_the_default_corpus_is_unchanged(tmp_path: Path) -> None:
    generate_job_corpus(tmp_path / "f", 6, 3)
    assert "users_mode" not in json.loads((tmp_path / "f" / "corpus.json").read_text())
    assert load_manifest(tmp_path / "f").users_mode == "family"
    generate_job_corpus(tmp_path / "s", 6, 3, users_mode="shared")
    assert load_manifest(tmp_path / "s").users_mode == "shared"
    with pytest.raises(ValueError, match="users_mode"):
        list(iter_corpus_jobs(3, 3, users_mode="mixed"))  # type: ignore[arg-type]


def test_measured_history_and_exit_records(tmp_path: Path) -> None:
    m = generate_job_corpus(tmp_path / "c", 60, 11)
    recs = m.records
    meas = {r.id: measured_fields(r) for r in recs}
    for r in recs:
        got = meas[r.id]
        assert got["steps_done"] == r.outcome.steps_done
        if r.outcome.status == "completed" and r.outcome.steps_done >= 20:
            # wall time per step over the whole training phase
            assert got["step_time_s"] * r.outcome.steps_done + got["startup_s"] == pytest.approx(r.outcome.duration_s)
        elif r.outcome.steps_done > 0:
            # a run that did not finish: its end (crash, hang, drain) is not training time
            assert got["step_time_s"] == r.log_spec["step_time_s"]
        if r.outcome.steps_done == 0:
            assert got["step_time_s"] is None and got["startup_s"] is None  # nothing logged past startup
    fps = {r.id: r.truth.model_dump() for r in recs}
    exits = exit_records(recs, fps, meas)
    by_id = dict(zip([r.id for r in recs], exits, strict=True))
    for r in recs:
        e = by_id[r.id]
        assert e.exited_early == (r.outcome.status != "completed" or r.outcome.early_stopped)
        if e.exited_early and r.outcome.steps_done == 0:
            assert e.progress == 0.0
    assert any(e.startup_ratio for e in exits)  # some pre-step exits are placed relative to a startup


def test_estimate_rate_from_matches_and_its_fallback() -> None:
    from schedmate.agents.advisor.estimator import JobQuery, MedianFallback, estimate_rate_from_matches
    from schedmate.embeddings.store import Match

    out = JobOutcome(duration=560.0, startup_s=60.0, step_time_s=0.5, steps_done=1000, steps_total=1000)
    rec = JobRecord(job_id="h1", vector=[1.0, 0.0], submitted={"gpus": 4},
                    workload={"model_name": "resnet-50", "dataset": "imagenet-1k", "task_type": "cls"}, outcome=out)
    fields = {"model_name": "resnet-50", "dataset": "imagenet-1k", "task_type": "cls", "iterations": 2000,
              "iteration_type": "steps"}
    job = JobQuery(job_id="n", user="u", gpus=4)
    est = estimate_rate_from_matches(job, fields, [Match(job_id="h1", score=0.5, record=rec)])
    assert est.source == "history" and est.duration_s == pytest.approx(60.0 + 2000 * 0.5)  # twice the steps
    exits = EarlyExitModel().fit([ExitRecord("u", None, True, 0.0, 0.5)] * 9 + [ExitRecord("u", None, False, 1.0)])
    est = estimate_rate_from_matches(job, fields, [Match(job_id="h1", score=0.5, record=rec)], exits=exits, point="p50")
    assert est.duration_s == pytest.approx(30.0)  # 9 of 10 runs died before a step, at half the startup
    fb = estimate_rate_from_matches(job, {**fields, "model_name": "vit-b-16"}, [Match(job_id="h1", score=0.5, record=rec)],
                                    fallback=MedianFallback([100.0, 300.0]))
    assert fb.source == "fallback" and fb.duration_s == pytest.approx(200.0)


def test_exit_calibration_brier_scores() -> None:
    from types import SimpleNamespace

    from schedmate.evals.harness.advisor_rate import exit_calibration

    model = EarlyExitModel(prior_strength=1.0).fit([ExitRecord("u", "g", True, 0.0), ExitRecord("v", "k", False, 1.0)])
    jobs = [SimpleNamespace(user="u", experiment="g", outcome=SimpleNamespace(status="failed", early_stopped=False)),
            SimpleNamespace(user="v", experiment="k", outcome=SimpleNamespace(status="completed", early_stopped=False))]
    cal = exit_calibration(jobs, model)  # type: ignore[arg-type]
    # base 0.5; u: (1 + 0.5) / 2 = 0.75, then g: (1 + 0.75) / 2 = 0.875; v: 0.25, then k: 0.125
    assert cal["brier_model"] == pytest.approx(((0.875 - 1) ** 2 + 0.125 ** 2) / 2)
    assert cal["brier_base_rate"] == pytest.approx(0.25)


def test_same_launch_config_tier_comes_first() -> None:
    same = sample("same", num_workers=8, step_time_s=0.2)
    starved = sample("starved", num_workers=1, step_time_s=0.6)  # same GPUs and batch, a starved dataloader
    est = estimate_rate_plan(plan(num_workers=8), [same, starved])
    assert est is not None and est.tier == "same launch config" and est.sample_ids == ["same"]
    assert est.train_s == pytest.approx(200.0)  # 1000 x 0.2


def test_gpu_elasticity_learned_from_the_pool() -> None:
    from schedmate.agents.advisor.rate_estimator import gpu_elasticity

    # a global batch split across GPUs: 8 GPUs take half the step time of 4 -> slope -1
    pool = [sample("g4", gpus=4, step_time_s=1.0), sample("g8", gpus=8, step_time_s=0.5)]
    assert gpu_elasticity(plan(), pool) == pytest.approx(-1.0)
    est = estimate_rate_plan(plan(gpus=16), pool)  # no job on 16 GPUs: model+dataset+task tier
    assert est is not None and est.tier == "model+dataset+task" and est.gpu_elasticity == pytest.approx(-1.0)
    assert est.train_s == pytest.approx(250.0)  # both samples say 1000 x 0.25 s
    # per-device batch: same step time at any GPU count -> 0; one GPU count -> no slope
    assert gpu_elasticity(plan(), [sample("a", gpus=4), sample("b", gpus=8)]) == pytest.approx(0.0)
    assert gpu_elasticity(plan(), [sample("a"), sample("b", step_time_s=9.0)]) == 0.0
    # clipped to the physical range
    assert gpu_elasticity(plan(), [sample("a", gpus=1, step_time_s=1.0), sample("b", gpus=2, step_time_s=0.1)]) == -1.0


def test_startup_spread_is_measured_like_the_train_spread() -> None:
    pool = [sample("a", startup_s=60.0), sample("b", startup_s=240.0), sample("c", startup_s=None),
            sample("d", startup_s=0.0)]
    est = estimate_rate_plan(plan(), pool)
    assert est is not None
    assert est.startup_spread == pytest.approx(math.log(2.0))  # std of (ln 60, ln 240) = ln 2; 0 s has no log
    assert est.startups_measured == 2
    # the point estimate is unchanged: median start-up of (0, 60, 240) = 60 s + 1000 x 0.5 s
    assert est.duration_s == pytest.approx(560.0)
    one = estimate_rate_plan(plan(), [sample("a", startup_s=60.0)])
    assert one is not None and (one.startup_spread, one.startups_measured) == (0.0, 1)


def _pool_match(job_id: str, startup_s: float | None, step_time_s: float = 0.5, *, model: str = "resnet-50",
                dataset: str = "imagenet-1k", status: str = "completed") -> Match:
    rec = JobRecord(job_id=job_id, vector=[1.0, 0.0], submitted={"gpus": 4},
                    workload={"model_name": model, "dataset": dataset, "task_type": "image-classification",
                              "batch_size": 32},
                    outcome=JobOutcome(duration=600.0, final_status=status, step_time_s=step_time_s,
                                       startup_s=startup_s))
    return Match(job_id=job_id, score=0.9, record=rec)


FIELDS = {"model_name": "resnet-50", "dataset": "imagenet-1k", "task_type": "image-classification",
          "iterations": 1000, "iteration_type": "steps", "batch_size": 32}


def test_the_deployed_p90_covers_a_startup_at_the_pools_90_percent_quantile() -> None:
    """Issue 24: a p90 that widened only the training killed jobs whose start-up outlasted the limit."""
    from schedmate.agents.advisor.estimator import estimate_from_pool

    starts = [15.0, 30.0, 60.0, 120.0, 240.0]  # same speed (train spread 0), start-ups 60 x 2^k, k = -2..2
    est = estimate_from_pool(FIELDS, 4, [_pool_match(f"h{i}", s) for i, s in enumerate(starts)],
                             threshold=0.5, top_k=5)
    train = 1000 * 0.5
    assert est.duration_s == pytest.approx(60.0 + train)  # the point estimate: median start-up + training
    # the pool's 90 % start-up (linear interpolation: 120 + 0.6 x 120 = 192 s) plus the training fits under p90;
    # the old rule (median start-up + training at its 90 %) gave 560 s and did not cover it
    assert est.duration_p90_s is not None and est.duration_p90_s >= float(np.percentile(starts, 90)) + train
    # start-up at its log-normal 90 %: 60 x exp(1.2816 x sqrt(2) ln 2) = 210.9 s
    assert est.duration_p90_s == pytest.approx(60.0 * math.exp(1.2816 * math.sqrt(2) * math.log(2)) + train)
    assert est.interval_s is not None and est.interval_s[1] == est.duration_p90_s
    assert "(log-spread 0.98)" in est.why[0]  # the start-up's, said beside the training's


def test_one_or_no_measured_startup_says_so_and_adds_no_spread() -> None:
    from schedmate.agents.advisor.estimator import estimate_from_pool

    one = estimate_from_pool(FIELDS, 4, [_pool_match("h", 100.0)], threshold=0.5, top_k=5)
    assert one.duration_p90_s == pytest.approx(600.0) and "one start-up: no spread measured" in one.why[0]
    none = estimate_from_pool(FIELDS, 4, [_pool_match("h", None)], threshold=0.5, top_k=5)
    assert none.duration_p90_s == pytest.approx(500.0) and "no start-up measured" in none.why[0]


def test_one_matched_startup_takes_its_spread_from_the_retrieved_pool() -> None:
    """Issue 24: one matched job's start-up taken as certain was most of the start-up kills; the other
    retrieved completed runs (another model and dataset: no rate tier) still say how start-ups vary."""
    from schedmate.agents.advisor.estimator import estimate_from_pool

    pool = [_pool_match("h", 100.0),  # the only job in any tier: rate and median start-up
            _pool_match("v1", 50.0, model="vit-b-16", dataset="cifar-10"),
            _pool_match("v2", 200.0, model="vit-b-16", dataset="cifar-10"),
            _pool_match("v3", 0.0, model="vit-b-16", dataset="cifar-10"),  # 0 s: no log, not counted
            _pool_match("f", 5000.0, model="vit-b-16", dataset="cifar-10", status="failed")]  # not a completed run
    est = estimate_from_pool(FIELDS, 4, pool, threshold=0.5, top_k=5)
    assert est.based_on == ("h",)  # the vit runs share no tier with the plan
    assert est.duration_s == pytest.approx(100.0 + 500.0)  # the point estimate is unchanged
    # std of (ln 50, ln 100, ln 200) = sqrt(2/3) ln 2 = 0.566; start-up at its log-normal 90 %, training exact
    spread = math.sqrt(2 / 3) * math.log(2.0)
    assert est.duration_p90_s == pytest.approx(100.0 * math.exp(1.2816 * spread) + 500.0)  # 706.7 s
    assert est.duration_p90_s > 600.0  # the old rule: the single start-up as certain, p90 = the estimate
    assert "start-up spread from 3 retrieved jobs: log-spread 0.57" in est.why[0]
    # a pool with one measured start-up (the failed run's does not count): no spread, said so
    alone = estimate_from_pool(FIELDS, 4, [pool[0], pool[3], pool[4]], threshold=0.5, top_k=5)
    assert alone.duration_p90_s == pytest.approx(600.0) and "one start-up: no spread measured" in alone.why[0]


def test_the_eval_refuses_an_unknown_rate_point(tmp_path: Path) -> None:
    from schedmate.evals.harness.advisor import AdvisorEvalConfig, run_advisor_eval

    with pytest.raises(ValueError, match="rate_point"):
        run_advisor_eval(tmp_path / "data", tmp_path / "out", AdvisorEvalConfig(rate_point="median-ish"))
    assert AdvisorEvalConfig().rate_point == "mean"  # the expected duration, fixed before any eval corpus
