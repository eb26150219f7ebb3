"""Scoring the extractor on hand-written repositories: what counts as right."""

from __future__ import annotations

import json
from pathlib import Path

from schedmate.evals.harness.devset_advisor import field_right, load_repo_jobs, names_match, score_devset_repos
from schedmate.workload import normalize_model_name


def test_a_name_with_a_qualifier_matches_but_a_different_size_does_not() -> None:
    assert names_match("bert-base-uncased", "bert-base", normalize_model_name)
    assert names_match("meta-llama/Llama-2-7b-hf", "llama-2-7b", normalize_model_name)
    assert not names_match("llama-2-13b", "llama-2-7b", normalize_model_name)
    assert not names_match("llama-2", "llama-2-7b", normalize_model_name)


def test_fields_are_scored_by_kind() -> None:
    assert field_right("task_type", "qa", "question-answering")
    assert not field_right("task_type", "image-classification", "object-detection")
    assert field_right("model_size_b", 7.0, 6.74) and not field_right("model_size_b", 13.0, 6.74)
    assert field_right("learning_rate", "2e-5", 2e-05) and not field_right("learning_rate", 2e-4, 2e-05)
    assert field_right("iterations", 3, 3) and not field_right("iterations", None, 3)


def test_the_real_set_scores_every_launch_command(tmp_path: Path) -> None:
    repo = tmp_path / "tiny"
    repo.mkdir()
    (repo / "train.py").write_text(
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--lr', type=float, default=0.1)\n"
        "p.add_argument('--epochs', type=int, default=90)\np.add_argument('--batch-size', type=int, default=256)\n"
        "p.add_argument('--workers', type=int, default=8)\nargs = p.parse_args()\n"
        "import torchvision\nmodel = torchvision.models.resnet50()\n"
        "train = torchvision.datasets.ImageNet('/data/imagenet', split='train')\n")
    truth = {"model_name": "resnet-50", "task_type": "image-classification", "dataset": "imagenet", "iterations": 30,
             "iteration_type": "epochs", "model_size_b": None, "batch_size": 256, "learning_rate": 0.1, "num_workers": 8}
    (tmp_path / "jobs.jsonl").write_text(json.dumps({"id": "t1", "repo": "tiny", "command": "python train.py --epochs 30",
                                                     "gpus": 1, "truth": truth}) + "\n")
    assert [j.id for j in load_repo_jobs(tmp_path)] == ["t1"]
    report = score_devset_repos(tmp_path)
    assert report["items"] == 1 and "model_size_b" not in report["field_accuracy"]  # null truth: not scored
    marks = report["per_job"][0]["fields"]
    assert marks["iterations"]["ok"] and marks["batch_size"]["ok"] and marks["learning_rate"]["ok"]
    # a later batch in its own file is scored with the rest and reported apart
    (tmp_path / "jobs-c.jsonl").write_text(json.dumps({"id": "t2", "repo": "tiny", "command": "python train.py --epochs 5",
                                                       "gpus": 1, "truth": {**truth, "iterations": 6}}) + "\n")
    report = score_devset_repos(tmp_path)
    assert [j.split for j in load_repo_jobs(tmp_path)] == ["jobs", "jobs-c"]
    assert report["by_split"]["jobs-c"]["items"] == 1 and report["by_split"]["jobs-c"]["jobs_all_right"] == 0.0
