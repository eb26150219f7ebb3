"""Job corpus generator: what a generated job is, what its repository contains, how it ran.

Read as a spec:
- generation is deterministic in the seed (in memory and on disk);
- every workload family yields a parseable training project, with noise a file-tree tool skips
  and no labels inside the repository;
- every label (model, dataset, iterations, batch size, lr, workers) is stated somewhere a careful
  reader finds it, while some repositories carry misleading names, dead configs and overrides;
- the generator's alias tables (`aliases`) normalise its names ('Llama-3-8B' == 'meta-llama/Meta-Llama-3-8B'
  == 'llama3-8b'); the core's WorkloadMetadata applies general rules only;
- outcomes: similar workloads run alike, ~40% of jobs fail, script errors early, infra late;
- trace jobs are mapped to workloads by GPU request (large >= 8, medium 4-7, small < 4).
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import random
import re
import statistics
from dataclasses import replace
from itertools import combinations
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from schedmate.schedulers.job import FinalStatus, JobSpec
from schedmate.synthetic.jobs import (
    FAMILIES,
    FAMILY_KEYS,
    WorkloadMetadata,
    assign_workload,
    assign_workloads,
    attach_workloads,
    expected_perf,
    generate_job,
    generate_job_corpus,
    load_manifest,
    normalize_dataset,
    normalize_model_name,
    normalize_task_type,
    render_repo,
    sample_config,
    size_class,
)
from schedmate.synthetic.jobs.codegen import NOISE_DIRS
from schedmate.synthetic.jobs.generator import iter_corpus_jobs

LABELS = ("model_name", "dataset", "iterations", "batch_size", "learning_rate", "num_workers")


def _tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def corpus_jobs():
    """~300 jobs of a simulated history (in memory; nothing written)."""
    return list(iter_corpus_jobs(300, seed=11))


# --------------------------------------------------------------------------------------------- determinism


def test_same_seed_gives_the_same_job_and_another_seed_another():
    a, b = generate_job("vit-l16-in1k", 3), generate_job("vit-l16-in1k", 3)
    assert a.repo.files == b.repo.files and a.repo.command == b.repo.command
    assert a.outcome == b.outcome and a.log_spec == b.log_spec and a.truth == b.truth
    c = generate_job("vit-l16-in1k", 4)
    assert (c.repo.files, c.outcome) != (a.repo.files, a.outcome)


def test_a_config_fixes_the_repository_and_the_seed_only_the_run():
    cfg = sample_config("llama3-8b-sft", random.Random(1))
    first, rerun = generate_job(cfg, 1), generate_job(cfg, 2)
    assert first.repo.files == rerun.repo.files
    assert first.truth == rerun.truth == cfg.truth()
    assert first.outcome != rerun.outcome


def test_corpus_on_disk_is_deterministic_and_labels_stay_outside_the_repos(tmp_path):
    calls = []
    m1 = generate_job_corpus(tmp_path / "a", n=10, seed=5, progress=lambda done, total: calls.append((done, total)))
    generate_job_corpus(tmp_path / "b", n=10, seed=5)
    assert calls == [(i, 10) for i in range(1, 11)]
    assert (tmp_path / "a/manifest.jsonl").read_bytes() == (tmp_path / "b/manifest.jsonl").read_bytes()
    assert _tree_digest(tmp_path / "a/jobs") == _tree_digest(tmp_path / "b/jobs")
    loaded = load_manifest(tmp_path / "a")
    assert loaded.records == m1.records and loaded.seed == 5 and len(loaded) == 10
    for rec in loaded:
        repo = loaded.repo_dir(rec)
        assert repo.is_dir() and repo.parent == tmp_path / "a/jobs"
        names = {p.name for p in repo.rglob("*")}
        assert not {"truth.json", "manifest.jsonl", "labels.json"} & names
        assert rec.launch.gpus == rec.config["gpus"] and rec.launch.command
        assert rec.outcome.duration_s > 0 and rec.submit_time >= 0
        assert {"framework", "steps", "step_time_s", "failure"} <= set(rec.log_spec)
    assert [r.submit_time for r in loaded] == sorted(r.submit_time for r in loaded)
    spec = loaded.records[0].to_jobspec(loaded.root)
    assert isinstance(spec, JobSpec) and Path(spec.code_dir).is_dir()
    assert spec.duration == loaded.records[0].outcome.duration_s


# --------------------------------------------------------------------------------------------- repositories


@pytest.mark.parametrize("family", FAMILY_KEYS)
def test_every_family_yields_a_parseable_project_with_noise(family):
    for seed in range(4):
        job = generate_job(family, seed)
        files = job.repo.files
        assert job.family == family and job.truth.model_name in FAMILIES[family].model_names
        assert "README.md" in files and "requirements.txt" in files and ".git/HEAD" in files
        for path, content in files.items():
            if not isinstance(content, str):
                continue
            if path.endswith(".py"):
                ast.parse(content, filename=path)
            elif path.endswith((".yaml", ".yml")):
                yaml.safe_load(content)
            elif path.endswith(".json"):
                json.loads(content)
        code = [p for p in files if p.endswith(".py") and not p.startswith(NOISE_DIRS)]
        assert code, "a training project has Python code"
        noise = [p for p, c in files.items() if isinstance(c, bytes)]
        assert any(p.startswith(("data/", "checkpoints/", "outputs/")) for p in noise)
        assert any(p.startswith(".git/objects/") for p in noise)
        entry = job.repo.entrypoint
        assert entry == "yolo" or entry in files, "the launch command's script exists"
        assert entry in job.repo.command or job.repo.command.split()[-1] in files


def _candidates(literal: str) -> list[str]:
    """Ways a careful reader reads a name out of a literal: itself, a path component, its stem."""
    text = literal.strip().strip("'\"")
    out = [text]
    parts = [p for p in text.split("/") if p]
    out += parts
    out += [re.sub(r"[-_]?\{.*?\}|\.(ya?ml|json|tar|pt)$", "", p) for p in parts]
    return out


def _check_label(label: str, literal: str, truth: WorkloadMetadata) -> bool:
    if label == "model_name":
        return any(normalize_model_name(c) == truth.model_name for c in _candidates(literal))
    if label == "dataset":
        return any(normalize_dataset(c) == truth.dataset for c in _candidates(literal))
    value = float(literal.strip("'\""))
    expected = getattr(truth, label)
    return math.isclose(value, expected, rel_tol=1e-9)


@pytest.mark.parametrize("family", FAMILY_KEYS)
def test_every_label_is_stated_where_a_careful_reader_finds_it(family):
    for seed in range(8):
        job = generate_job(family, 100 + seed)
        ev = job.repo.evidence
        assert set(LABELS) <= set(ev), f"{family}/{seed}: no evidence for {set(LABELS) - set(ev)}"
        for label in LABELS:
            where, snippet, literal = ev[label]
            if where.startswith("<transformers"):  # HF TrainingArguments default, stated nowhere
                assert "library_default" in job.repo.traps and getattr(job.truth, label) == 0
                continue
            text = job.repo.command if where == "<command>" else job.repo.files[where]
            assert snippet in text, f"{family}/{seed}: {label} snippet {snippet!r} not in {where}"
            assert literal in snippet
            assert _check_label(label, literal, job.truth), f"{family}/{seed}: {label} {literal!r} vs {job.truth}"


def test_some_repositories_mislead_a_careless_reader():
    traps: dict[str, int] = {}
    misleading_var = None
    for family in FAMILY_KEYS:
        for seed in range(12):
            job = generate_job(family, seed)
            for t in job.repo.traps:
                traps[t] = traps.get(t, 0) + 1
            if family == "vit-l16-in1k" and "misleading_name" in job.repo.traps and misleading_var is None:
                misleading_var = job
    for kind in ("misleading_name", "dead_config", "dead_code", "cli_override", "stale_readme", "stale_run_config"):
        assert traps.get(kind, 0) >= 3, f"too few repos with {kind}: {traps}"
    total = 12 * len(FAMILY_KEYS)
    clean = sum(1 for f in FAMILY_KEYS for s in range(12) if not generate_job(f, s).repo.traps)
    assert 0 < clean < total / 2, "most, not all, repos carry something misleading"
    # a ViT built into a variable named after another architecture
    assert misleading_var is not None
    code = "\n".join(c for p, c in misleading_var.repo.text_files().items() if p.endswith(".py"))
    assert re.search(r"^\s*(resnet|vit)\w* = build_model\(", code, re.M) or "resnet" in misleading_var.repo.files["README.md"]


def test_an_overridden_default_is_stated_too_but_is_not_the_truth():
    """argparse repos whose launch command overrides a parser default: the code states a stale value."""
    checked = 0
    for family in ("resnet50-in1k", "convnext-base-in1k", "unet2d-brats", "dlrm-criteo", "mobilenetv2-in1k"):
        for seed in range(60):
            job = generate_job(family, seed)
            if job.config.style != "argparse" or "cli_override" not in job.repo.traps:
                continue
            code = "\n".join(c for p, c in job.repo.text_files().items() if p.endswith(".py"))
            for label in ("batch_size", "learning_rate", "iterations", "num_workers"):
                where, snippet, literal = job.repo.evidence[label]
                if where.endswith(".py"):
                    continue  # this one is stated by its default
                flag = snippet.split()[0]
                default = re.search(rf'"{re.escape(flag)}", type=\w+, default=([^,)]+)', code)
                if default and float(default.group(1)) != float(literal):
                    checked += 1
    assert checked >= 5


# --------------------------------------------------------------------------------------------- schema


def test_model_names_normalise_to_one_canonical_form():
    for alias in ("Llama-3-8B", "meta-llama/Meta-Llama-3-8B", "llama3-8b", "llama3_8b", "/mnt/models/Meta-Llama-3-8B/"):
        assert normalize_model_name(alias) == "llama-3-8b"
    assert normalize_model_name("Qwen/Qwen2.5-14B") == normalize_model_name("qwen2_5_14b") == "qwen-2.5-14b"
    assert normalize_model_name("vit_large_patch16_224") == normalize_model_name("ViT-L/16") == "vit-l-16"
    assert normalize_model_name("gpt3-1.3b") == "gpt-1.3b" != normalize_model_name("gpt3-13b")
    assert normalize_model_name("mistralai/Mistral-7B-v0.1") == "mistral-7b-v0.1"  # unknown: kept, never guessed
    assert normalize_dataset("ILSVRC2012") == normalize_dataset("ImageNet") == "imagenet-1k"
    assert normalize_dataset("tatsu-lab/alpaca") == "alpaca" and normalize_dataset("allenai/c4") == "c4"
    assert normalize_task_type("SFT") == "instruction-finetuning" and normalize_task_type("Question Answering") == "qa"


def test_workload_metadata_validates_and_serialises_canonically():
    m = WorkloadMetadata(model_name="Meta-Llama-3-8B", task_type="instruction tuning", dataset="tatsu-lab/alpaca",
                         iterations="3", iteration_type="epoch", model_size_b="8B", batch_size="4",
                         learning_rate="2e-5", d_model=4096)
    # the core applies general rules only; the generator's alias table maps the task onto its own name
    assert (m.model_name, m.task_type, m.dataset, m.iteration_type) == ("llama-3-8b", "instruction-tuning",
                                                                         "alpaca", "epochs")
    assert normalize_task_type(m.task_type) == "instruction-finetuning"
    assert m.model_size_b == 8.0 and m.batch_size == 4 and m.learning_rate == 2e-5 and m.num_workers is None
    assert WorkloadMetadata(**{**m.model_dump(), "model_size_b": "307M"}).model_size_b == pytest.approx(0.307)
    text = m.canonical_json()
    assert json.loads(text)["d_model"] == 4096 and "num_workers" not in json.loads(text)
    assert list(json.loads(text)) == sorted(json.loads(text))
    unknown = WorkloadMetadata(model_name="bert-base-uncased", task_type="qa", dataset="squad", iterations="2k",
                               iteration_type="Steps", batch_size="auto", learning_rate="unknown", num_workers=None)
    assert unknown.iterations == 2000 and unknown.batch_size is None and unknown.learning_rate is None
    with pytest.raises(ValidationError):
        WorkloadMetadata(model_name="x", task_type="qa", dataset="squad", iterations=3, iteration_type="fortnights")
    with pytest.raises(ValidationError):
        WorkloadMetadata(model_name="", task_type="qa", dataset="squad", iterations=3, iteration_type="steps")
    with pytest.raises(ValidationError):
        WorkloadMetadata(model_name="x", task_type="qa", dataset="squad", iteration_type="steps")  # iterations missing


def test_truth_uses_canonical_names_of_the_schema():
    from schedmate import workload as core

    for family in FAMILY_KEYS:
        truth = generate_job(family, 0).truth
        # the generator's canonical names are fixed points of the core's generic rules too
        assert core.normalize_model_name(truth.model_name) == truth.model_name
        assert core.normalize_dataset(truth.dataset) == truth.dataset
        assert core.normalize_task_type(truth.task_type) == truth.task_type
        assert normalize_model_name(truth.model_name) == truth.model_name
        assert normalize_dataset(truth.dataset) == truth.dataset
        assert normalize_task_type(truth.task_type) == truth.task_type


# --------------------------------------------------------------------------------------------- outcomes


def _log_ratio(a: float, b: float) -> float:
    return abs(math.log(a / b))


def test_similar_workloads_run_alike_and_dissimilar_ones_do_not(corpus_jobs):
    done = [j for j in corpus_jobs if j.outcome.status == "completed" and not j.outcome.early_stopped]
    same, other_family = [], []
    for a, b in combinations(done, 2):
        r = _log_ratio(a.outcome.duration_s, b.outcome.duration_s)
        if a.config == b.config:
            same.append(r)
        elif a.family != b.family:
            other_family.append(r)
    assert len(same) >= 30, "reruns of one config exist in a history"
    assert statistics.median(same) < 0.3  # same workload: within ~35%
    assert statistics.median(other_family) > 3 * statistics.median(same)
    # SM utilisation follows the workload too
    util_same = [abs(a.outcome.sm_util_steady - b.outcome.sm_util_steady)
                 for a, b in combinations(done, 2) if a.config == b.config]
    util_other = [abs(a.outcome.sm_util_steady - b.outcome.sm_util_steady)
                  for a, b in combinations(done, 2) if a.family != b.family]
    assert statistics.median(util_same) < statistics.median(util_other) / 2


def test_reruns_vary_realistically(corpus_jobs):
    by_cfg: dict[str, list[float]] = {}
    for j in corpus_jobs:
        if j.outcome.status == "completed" and not j.outcome.early_stopped:
            by_cfg.setdefault(repr(j.config.to_dict()), []).append(j.outcome.duration_s)
    cvs = [statistics.pstdev(v) / statistics.mean(v) for v in by_cfg.values() if len(v) >= 3]
    assert cvs and 0.02 < statistics.median(cvs) < 0.5


def test_duration_is_a_function_of_the_workload():
    cfg = sample_config("resnet50-in1k", random.Random(0), gpus=4, iteration_type="epochs")
    base = expected_perf(cfg)
    longer = expected_perf(replace(cfg, iterations=cfg.iterations * 2))
    wider = expected_perf(replace(cfg, gpus=8, nodes=1))
    starved = expected_perf(replace(cfg, num_workers=1))
    assert longer.train_s == pytest.approx(2 * base.train_s, rel=0.01)
    assert wider.planned_duration_s < base.planned_duration_s
    assert starved.step_time_s > base.step_time_s and starved.sm_util < base.sm_util
    big = expected_perf(sample_config("qwen2.5-14b-sft", random.Random(0), gpus=8))
    assert big.gpu_mem_gb > base.gpu_mem_gb


def test_about_40_percent_fail_script_errors_early_infrastructure_late(corpus_jobs):
    outcomes = [j.outcome for j in corpus_jobs]
    failed = [o for o in outcomes if o.status == "failed"]
    assert 0.3 <= len(failed) / len(outcomes) <= 0.5
    assert 0.0 < sum(o.status == "cancelled" for o in outcomes) / len(outcomes) < 0.2
    by_cat = {c: [o for o in failed if o.failure_category == c] for c in ("script", "framework", "infrastructure")}
    assert len(by_cat["script"]) > len(by_cat["framework"]) and by_cat["infrastructure"]
    script_frac = [o.duration_s / o.planned_duration_s for o in by_cat["script"]]
    assert statistics.median(script_frac) < 0.05
    assert statistics.median(o.duration_s for o in by_cat["script"]) < 15 * 60  # minutes, not hours
    assert sum(o.steps_done <= 100 for o in by_cat["script"]) >= 0.8 * len(by_cat["script"])
    infra_frac = [o.duration_s / o.planned_duration_s for o in by_cat["infrastructure"]]
    assert statistics.median(infra_frac) > 0.4
    # infrastructure failures cost most of the GPU time lost to failures (Acme: ~82%)
    gpu_time = {c: sum(j.outcome.duration_s * j.config.gpus for j in corpus_jobs
                       if j.outcome.failure_category == c) for c in by_cat}
    assert gpu_time["infrastructure"] > gpu_time["script"]


def test_log_spec_agrees_with_the_outcome(corpus_jobs):
    for job in corpus_jobs[:80]:
        spec, out = job.log_spec, job.outcome
        assert spec["status"] == out.status and spec["duration_s"] == out.duration_s
        assert 0 <= spec["steps_done"] <= spec["steps"] and spec["step_time_s"] > 0
        assert (spec["failure"] is not None) == (out.status == "failed")
        if spec["failure"]:
            assert spec["failure"]["category"] == out.failure_category and spec["failure"]["reason"]
        if out.status == "completed" and not out.early_stopped:
            assert spec["steps_done"] == spec["steps"]


# --------------------------------------------------------------------------------------------- mapping


def _spec(job_id: str, gpus: int, duration: float = 3600.0, status: FinalStatus = FinalStatus.COMPLETED) -> JobSpec:
    return JobSpec(job_id=job_id, submit_time=0.0, num_gpus=gpus, duration=duration, status=status)


def test_size_classes_follow_the_paper():
    assert [size_class(g) for g in (1, 2, 3, 4, 7, 8, 16, 1024)] == [
        "small", "small", "small", "medium", "medium", "large", "large", "large"]


def test_mapping_respects_size_classes_and_is_deterministic():
    specs = [_spec(f"j{i}", g, duration=600.0 * (1 + i % 7)) for i, g in enumerate([1, 2, 3, 4, 5, 6, 7, 8, 16, 64, 256] * 4)]
    out = assign_workloads(specs, seed=3)
    for spec, a in zip(specs, out):
        assert FAMILIES[a.family].scale == size_class(spec.num_gpus) == a.size_class
        assert a.config.gpus == min(spec.num_gpus, 128) and a.config.nodes == math.ceil(a.config.gpus / 8)
        assert a.log_spec["gpus"] == a.config.gpus
    assert out == assign_workloads(specs, seed=3)
    assert {a.job_id: a for a in assign_workloads(list(reversed(specs)), seed=3)} == {a.job_id: a for a in out}
    assert [a.family for a in assign_workloads(specs, seed=4)] != [a.family for a in out]
    assert len({a.family for a in out}) >= 8, "all families of a class get used"


def test_mapped_code_states_a_length_that_matches_the_trace_duration():
    for i, (gpus, hours) in enumerate([(1, 2), (2, 10), (4, 5), (6, 30), (8, 3), (32, 48), (4, 0.05)]):
        spec = _spec(f"m{i}", gpus, duration=hours * 3600)
        a = assign_workload(spec, seed=1)
        est = expected_perf(a.config)
        if hours >= 1:
            assert 0.5 < est.planned_duration_s / spec.duration < 2.0, (a.family, a.config.iterations)
        else:  # a few-minute job becomes a short step-limited run
            assert a.config.iteration_type in ("steps", "epochs") and est.planned_duration_s < 4 * 3600


def test_failed_trace_jobs_get_failure_log_specs():
    specs = [_spec(f"f{i}", 2 ** (i % 5), duration=60.0 * (1 + 37 * i), status=FinalStatus.FAILED) for i in range(20)]
    for a in assign_workloads(specs, seed=2):
        assert a.log_spec["status"] == "failed" and a.log_spec["failure"]["category"] in (
            "script", "framework", "infrastructure")


def test_attach_workloads_writes_code_and_keeps_the_trace_fields(tmp_path):
    specs = [_spec("a/1", 8), _spec("b", 2)]
    attached = attach_workloads(specs, seed=0, code_root=tmp_path)
    for before, after in zip(specs, attached):
        assert (after.job_id, after.duration, after.num_gpus) == (before.job_id, before.duration, before.num_gpus)
        assert after.attributes["workload_family"] in FAMILIES
        assert WorkloadMetadata(**after.attributes["truth"]).model_name
        code = Path(after.code_dir)
        assert code.is_dir() and (code / "README.md").is_file() and code.parent == tmp_path
        cfg_files = render_repo(assign_workload(before, seed=0).config).files
        assert set(cfg_files) == {str(p.relative_to(code)) for p in code.rglob("*") if p.is_file()}
    assert before.code_dir is None and before.attributes == {}
