"""Artefacts planned from the model and plan a policy's workload declares (issue 26, item 3).

Arena's and Suika's jobs state their model, global batch and parallel plan; the simulated world
renders each job's code from that, so jobs of one model look alike to the advisor. The artefact
may depend only on what the job declares, its id and its outcome-free plan: swapping two jobs'
outcomes (run time, iterations, final state) changes no byte.
"""

from __future__ import annotations

from dataclasses import replace

from schedmate.schedulers.arena import workload as arena_workload
from schedmate.schedulers.arena.hardware import R2, build_cluster
from schedmate.schedulers.arena.workload import generate
from schedmate.schedulers.job import FinalStatus, JobSpec
from schedmate.schedulers.suika import workload as suika_workload
from schedmate.schedulers.suika.workload import TraceConfig, generate_trace
from schedmate.sim.artefacts import DECLARED_KEY, plan_artefact, repo_hash

SEED = 5


def _bytes(spec: JobSpec) -> tuple[str, str, tuple[str, float, int]]:
    art = plan_artefact(spec, SEED)
    return art.key, repo_hash(art.render()), (art.log_framework, art.step_time_s, art.log_interval)


def test_the_key_the_schedulers_write_is_the_one_the_world_reads():
    assert arena_workload.DECLARED_KEY == suika_workload.DECLARED_KEY == DECLARED_KEY


def test_swapping_outcomes_changes_no_artefact_byte():
    for specs in (generate(build_cluster(R2), 0), generate_trace(TraceConfig(hours=2.0, num_jobs=30), 0)):
        a, b = specs[0], specs[1]
        a2 = replace(a, duration=b.duration, status=FinalStatus.FAILED)
        b2 = replace(b, duration=a.duration)
        assert _bytes(a) == _bytes(a2) and _bytes(b) == _bytes(b2)


def test_the_code_states_the_declared_model_batch_and_plan():
    for spec in generate_trace(TraceConfig(hours=2.0, num_jobs=30), 0)[:10]:
        d = spec.attributes[DECLARED_KEY]
        cfg = plan_artefact(spec, SEED).config
        assert cfg.model_size_b == d["params_b"] and cfg.seq_len == d["seq_len"]
        assert (cfg.extra["tp"], cfg.extra["pp"]) == (d["tp"], d["pp"])
        assert cfg.batch_size == d["global_batch"] or d["global_batch"] % cfg.gpus


def test_jobs_of_one_model_share_code_and_other_models_differ():
    specs = generate(build_cluster(R2), 0)
    by_model: dict[str, set[str]] = {}
    for s in specs:
        art = plan_artefact(s, SEED)
        by_model.setdefault(s.attributes[DECLARED_KEY]["model"], set()).add(repo_hash(art.render()))
    # one model's jobs differ only by length bucket and style variant; different models differ
    shared = [m for m, hashes in by_model.items() if len(hashes) < sum(1 for s in specs if s.name == m)]
    assert shared, "no two jobs of one model share an artefact"
    models = sorted(by_model)
    assert any(by_model[x].isdisjoint(by_model[y]) for x in models for y in models if x != y)
