"""The metadata extractor on hand-written repositories in real projects' styles (`evals/devset/repos`).

Generated corpora share a vocabulary with nothing the agent reads any more, but they are still
one generator's idea of a repository. These repositories were written by hand, without the
generator's or the extractor's vocabulary (`evals/devset/README.md`), in the styles real projects
use: wrapper scripts, bash arrays, Hydra, mmengine/yacs inheritance, Lightning CLI, nanoGPT's
configurator, DeepSpeed, Megatron launchers, project CLIs, values derived in code. The truth is
what a careful engineer reads off the code after every override.

Scoring, fixed before the extractor was run on any item (the "blind" split):
- names (model, dataset): equal after the core's generic normalisation (separators ignored: added
  after the first blind run, which counted `food101` vs `food-101` as a miss), or one is the other plus
  a dash-separated qualifier that is not a size (`bert-base` ~ `bert-base-uncased`; `llama-2` is
  not `llama-2-7b`);
- task: equal, or in one of the synonym groups below (general English equivalents, not per item);
- counts and iteration type: equal; learning rate: equal to 1e-6 relative; model size: within 10%;
- a field whose truth is null (the code does not determine it) is not scored.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schedmate.workload import normalize_dataset, normalize_model_name, normalize_task_type

__all__ = ["DEFAULT_REPOS", "FIELDS", "RepoJob", "load_repo_jobs", "names_match", "score_devset_repos"]

DEFAULT_REPOS = Path(__file__).resolve().parents[1] / "devset" / "repos"
FIELDS = ("model_name", "task_type", "dataset", "iterations", "iteration_type", "model_size_b", "batch_size",
          "learning_rate", "num_workers")

_TASK_SYNONYMS: tuple[frozenset[str], ...] = tuple(frozenset(g) for g in (
    {"language-modeling", "lm-pretraining", "pretraining", "causal-lm", "causal-language-modeling", "text-generation"},
    {"question-answering", "qa", "extractive-qa", "extractive-question-answering"},
    {"instruction-finetuning", "instruction-tuning", "sft", "supervised-finetuning", "chat-finetuning"},
    {"image-classification", "classification"},
    {"object-detection", "detection"},
    {"semantic-segmentation", "segmentation", "image-segmentation"},
    {"speech-recognition", "asr", "automatic-speech-recognition"},
    {"text-to-image", "image-generation", "diffusion"},
    {"contrastive-pretraining", "contrastive-learning", "image-text-pretraining"},
    {"recommendation", "ctr-prediction", "click-through-rate-prediction"},
    {"masked-image-modeling", "self-supervised-pretraining", "mae-pretraining"},
    {"text-classification", "sequence-classification"},
    {"summarization", "text-summarization"},
))
_SIZE_TOKEN = re.compile(r"^\d+(\.\d+)?[kmbt]$|^\d+x\d+(\.\d+)?[kmbt]$")


@dataclass(frozen=True)
class RepoJob:
    id: str
    repo: Path
    command: str
    gpus: int | None
    truth: dict[str, Any]
    split: str = "jobs"  # the label file it came from: `jobs` (first batches), `jobs-c` (a later blind batch)


def load_repo_jobs(folder: Path | str = DEFAULT_REPOS, splits: tuple[str, ...] | None = None) -> list[RepoJob]:
    """Launch commands with their true metadata (`jobs*.jsonl`, one file per collection batch);
    a bad line names file and line. `splits` keeps only those batches (file stems, e.g. `("jobs", "jobs-c")`);
    the others are not even opened (a blind batch stays unread while rules are tuned)."""
    folder = Path(folder)
    jobs = []
    paths = sorted(folder.glob("jobs*.jsonl"), key=lambda p: p.stem)  # jobs, jobs-b, jobs-c, ...
    if splits is not None:
        paths = [p for p in paths if p.stem in splits]
    if not paths:
        raise ValueError(f"{folder}: no jobs*.jsonl")
    for path in paths:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
                jobs.append(RepoJob(d["id"], folder / d["repo"], d["command"], d.get("gpus"), dict(d["truth"]),
                                    path.stem))
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{n}: {exc}") from None
    return jobs


def names_match(got: str, truth: str, normalise: Any) -> bool:
    a, b = normalise(str(got)), normalise(str(truth))
    if a == b or re.sub(r"[^a-z0-9.]", "", a) == re.sub(r"[^a-z0-9.]", "", b):  # food101 ~ food-101
        return True
    short, long = sorted((a, b), key=len)
    if not long.startswith(short + "-"):
        return False
    return not any(_SIZE_TOKEN.match(tok) for tok in long[len(short) + 1:].split("-"))


def _task_match(got: str, truth: str) -> bool:
    a, b = normalize_task_type(str(got)), normalize_task_type(str(truth))
    return a == b or any(a in g and b in g for g in _TASK_SYNONYMS)


def field_right(field: str, got: Any, truth: Any) -> bool:
    if got is None:
        return False
    try:
        if field == "model_name":
            return names_match(got, truth, normalize_model_name)
        if field == "dataset":
            return names_match(got, truth, normalize_dataset)
        if field == "task_type":
            return _task_match(got, truth)
        if field == "iteration_type":
            return str(got).lower().rstrip("s") == str(truth).lower().rstrip("s")
        if field == "learning_rate":
            return math.isclose(float(got), float(truth), rel_tol=1e-6)
        if field == "model_size_b":
            return abs(float(got) - float(truth)) <= 0.10 * abs(float(truth))
        return int(got) == int(truth)
    except (TypeError, ValueError):
        return False


def score_devset_repos(folder: Path | str = DEFAULT_REPOS, splits: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Run the static extractor on every launch command and score it field by field."""
    from schedmate.agents.advisor.static_extractor import extract_static

    jobs = load_repo_jobs(folder, splits)
    right: Counter[str] = Counter()
    scored: Counter[str] = Counter()
    per_job = []
    t0 = time.perf_counter()
    for job in jobs:
        try:
            fields = extract_static(job.repo, job.command, gpus=job.gpus).fields
            error = None
        except Exception as exc:  # noqa: BLE001 -- one broken repo is a miss, not a crashed report
            fields, error = {}, f"{type(exc).__name__}: {exc}"[:200]
        marks = {}
        for f in FIELDS:
            truth = job.truth.get(f)
            if truth is None:
                continue
            ok = field_right(f, fields.get(f), truth)
            scored[f] += 1
            right[f] += ok
            marks[f] = {"ok": ok, "got": fields.get(f), "truth": truth}
        per_job.append({"id": job.id, "split": job.split, "all_right": all(m["ok"] for m in marks.values()),
                        "fields": marks, "error": error})
    total_scored = sum(scored.values())
    by_split = {}
    for split in sorted({j["split"] for j in per_job}):
        marks_s = [m["ok"] for j in per_job if j["split"] == split for m in j["fields"].values()]
        jobs_s = [j for j in per_job if j["split"] == split]
        by_split[split] = {"items": len(jobs_s), "fields_right": round(sum(marks_s) / len(marks_s), 4) if marks_s else None,
                           "jobs_all_right": round(sum(j["all_right"] for j in jobs_s) / len(jobs_s), 4)}
    return {
        "by_split": by_split,
        "items": len(jobs), "repos": len({j.repo.name for j in jobs}),
        "field_accuracy": {f: round(right[f] / scored[f], 4) for f in FIELDS if scored[f]},
        "fields_right": round(sum(right.values()) / total_scored, 4) if total_scored else None,
        "jobs_all_right": round(sum(j["all_right"] for j in per_job) / len(per_job), 4) if per_job else None,
        "seconds": round(time.perf_counter() - t0, 2), "per_job": per_job,
    }
