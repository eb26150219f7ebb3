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

from schedmate.errors import BadInput, NotFound
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
        raise NotFound(f"{folder}: no jobs*.jsonl")
    for path in paths:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
                jobs.append(RepoJob(d["id"], folder / d["repo"], d["command"], d.get("gpus"), dict(d["truth"]),
                                    path.stem))
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise BadInput(f"{path}:{n}: {exc}") from None
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
    per_job: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for job in jobs:
        try:
            res = extract_static(job.repo, job.command, gpus=job.gpus)
            fields, tiers, conf = res.fields, res.tiers, res.confidence
            error = None
        except Exception as exc:  # noqa: BLE001 -- one broken repo is a miss, not a crashed report
            fields, tiers, conf, error = {}, {}, {}, f"{type(exc).__name__}: {exc}"[:200]
        marks = {}
        for f in FIELDS:
            truth = job.truth.get(f)
            if truth is None:
                continue
            ok = field_right(f, fields.get(f), truth)
            scored[f] += 1
            right[f] += ok
            marks[f] = {"ok": ok, "got": fields.get(f), "truth": truth,
                        "tier": tiers.get(f) if fields.get(f) is not None else None, "confidence": conf.get(f)}
        per_job.append({"id": job.id, "repo": job.repo.name, "split": job.split,
                        "all_right": all(m["ok"] for m in marks.values()),
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
        "seconds": round(time.perf_counter() - t0, 2), "confidence": confidence_report(per_job), "per_job": per_job,
    }


# ------------------------------------------------------------------------------------------ confidence

THRESHOLDS = (0.0, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.93, 0.95, 0.97, 0.99)
KEEP_COVERAGE = 0.95  # an abstention threshold may give up at most 5% of the answered fields
MIN_GAIN = 0.01  # ... and must raise the accuracy of the answers by at least a point


def calibration_table(per_job: list[dict[str, Any]], skip_repo: str | None = None) -> dict[str, dict[str, tuple[int, int]]]:
    """(right, scored) per field and evidence tier over answered fields (`skip_repo` left out)."""
    table: dict[str, dict[str, list[int]]] = {}
    for j in per_job:
        if j.get("repo") == skip_repo:
            continue
        for f, m in j["fields"].items():
            if m.get("tier") is None:
                continue
            cell = table.setdefault(f, {}).setdefault(m["tier"], [0, 0])
            cell[0] += bool(m["ok"])
            cell[1] += 1
    return {f: {t: (c[0], c[1]) for t, c in sorted(cells.items())} for f, cells in sorted(table.items())}


def _curve(points: list[tuple[float | None, bool]]) -> list[dict[str, Any]]:
    """Coverage (answered at >= t, over all scored fields) and accuracy of those answers, per threshold."""
    n = len(points)
    rows = []
    for t in THRESHOLDS:
        kept = [ok for c, ok in points if c is not None and c >= t]
        rows.append({"threshold": t, "coverage": round(len(kept) / n, 4) if n else None,
                     "accuracy": round(sum(kept) / len(kept), 4) if kept else None,
                     "fields_right": round(sum(kept) / n, 4) if n else None})
    return rows


def confidence_report(per_job: list[dict[str, Any]]) -> dict[str, Any]:
    """How well the extractor's per-field confidence separates right from wrong values on the dev set.

    * `in_sample`: the confidences the extractor reported (its table was calibrated on these items);
    * `leave_one_repo_out`: each item's confidence recomputed from a table without its repository -- the
      honest estimate of how the confidence carries to a repository it was not calibrated on;
    * `threshold`: the highest threshold whose leave-one-repo-out coverage keeps >= 95% of the answered
      fields and raises their accuracy by >= 1 point (else 0: no abstention), with accuracy among answers and
      fields right (abstentions count as wrong) at 0 and at it;
    * `brier`: mean squared error of the confidence as a probability of being right (answered fields).
    """
    from schedmate.agents.advisor.facts import ABSTAIN_BELOW, confidence

    tables = {r: calibration_table(per_job, skip_repo=r) for r in {j.get("repo") for j in per_job}}
    ins: list[tuple[float | None, bool]] = []
    loo: list[tuple[float | None, bool]] = []
    by_field: dict[str, list[tuple[float | None, bool]]] = {}
    for j in per_job:
        for f, m in j["fields"].items():
            tier = m.get("tier")
            ins.append((m.get("confidence") if tier is not None else None, bool(m["ok"])))
            c = confidence(f, tier, tables[j.get("repo")]) if tier is not None else None
            loo.append((c, bool(m["ok"])))
            by_field.setdefault(f, []).append((c, bool(m["ok"])))
    curve = _curve(loo)
    base = curve[0]
    pick = base
    for row in curve[1:]:
        if row["coverage"] is not None and base["coverage"] and row["coverage"] >= KEEP_COVERAGE * base["coverage"] \
                and (row["accuracy"] or 0) >= (base["accuracy"] or 0) + MIN_GAIN:
            pick = row

    def brier(points: list[tuple[float | None, bool]]) -> float | None:
        ans = [(c, ok) for c, ok in points if c is not None]
        return round(sum((c - ok) ** 2 for c, ok in ans) / len(ans), 4) if ans else None

    return {"in_sample": _curve(ins), "leave_one_repo_out": curve,
            "threshold": {"chosen": pick["threshold"], "configured": ABSTAIN_BELOW, "at_0": base, "at_chosen": pick},
            "brier": {"in_sample": brier(ins), "leave_one_repo_out": brier(loo)},
            "per_field_leave_one_repo_out": {f: _curve(p)[0:1] + [r for r in _curve(p) if r["threshold"] == pick["threshold"]]
                                             for f, p in sorted(by_field.items())},
            "table": calibration_table(per_job)}


def format_confidence_table(report: dict[str, Any]) -> str:
    """The coverage-vs-accuracy table as text (leave-one-repo-out confidences beside the in-sample ones)."""
    conf = report["confidence"]
    lines = ["threshold  coverage  accuracy  fields-right | in-sample coverage  accuracy  (leave-one-repo-out | in-sample)"]
    for a, b in zip(conf["leave_one_repo_out"], conf["in_sample"]):
        lines.append(f"  >= {a['threshold']:<5} {a['coverage']:>8.1%} {a['accuracy'] or 0:>9.1%} {a['fields_right']:>12.1%} |"
                     f" {b['coverage']:>18.1%} {b['accuracy'] or 0:>9.1%}")
    t = conf["threshold"]
    lines.append(f"abstain below {t['chosen']} (configured {t['configured']}): accuracy of answers "
                 f"{t['at_0']['accuracy']:.1%} -> {t['at_chosen']['accuracy']:.1%}, coverage "
                 f"{t['at_0']['coverage']:.1%} -> {t['at_chosen']['coverage']:.1%}; "
                 f"Brier {conf['brier']['leave_one_repo_out']} (in-sample {conf['brier']['in_sample']})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """`python -m schedmate.evals.harness.devset_advisor [--calibrate] [--splits jobs,jobs-c]`: score the dev
    set and print the coverage-vs-accuracy table; `--calibrate` prints the table to paste into
    `agents/advisor/facts.py` (CALIBRATION, ABSTAIN_BELOW)."""
    import argparse
    import pprint

    p = argparse.ArgumentParser(prog="devset_advisor")
    p.add_argument("--splits", default="jobs,jobs-c", help="label batches to score (file stems); never a blind one")
    p.add_argument("--calibrate", action="store_true")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    r = score_devset_repos(splits=tuple(x for x in a.splits.split(",") if x))
    print(f"fields right {r['fields_right']:.1%}, all right {r['jobs_all_right']:.1%}; per batch "
          + ", ".join(f"{k} {v['fields_right']:.1%}" for k, v in r["by_split"].items()))
    print("per field", r["field_accuracy"])
    print(format_confidence_table(r))
    if a.out:
        Path(a.out).write_text(json.dumps(r, indent=1, default=str))
    if a.calibrate:
        print("CALIBRATION: dict[str, dict[str, tuple[int, int]]] = " + pprint.pformat(r["confidence"]["table"], width=115))
        print(f"ABSTAIN_BELOW = {r['confidence']['threshold']['chosen']}")


if __name__ == "__main__":
    main()
