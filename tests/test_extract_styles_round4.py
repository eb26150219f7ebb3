"""Static extractor rule added after batch e of the real dev set (its blind score came first: README, "Agents
on real artefacts"), on a small repository written here in our own words: a value the code derives into a
local name and then copies into the configuration (`scaled = args.lr * args.batch_size * world / 512`,
`args.lr = scaled`) is the derived value, not the argparse default."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedmate.agents.advisor.static_extractor import extract_static

from .repo_files import write

TRAIN = (
    '"""Train an image classifier."""\nimport argparse\n\nimport torch.distributed as dist\n\n\n'
    "def get_args():\n    p = argparse.ArgumentParser()\n    p.add_argument('--lr', type=float, default=4e-4)\n"
    "    p.add_argument('--batch-size', type=int, default=64)\n    p.add_argument('--epochs', type=int, default=90)\n"
    "    return p.parse_args()\n\n\n"
    "def main(args):\n    world = dist.get_world_size()\n"
    "    linear_scaled_lr = args.lr * args.batch_size * world / 256.0\n    args.lr = linear_scaled_lr\n"
    "    for epoch in range(args.epochs):\n        pass\n\n\n"
    "if __name__ == '__main__':\n    main(get_args())\n"
)


def test_a_learning_rate_scaled_into_a_local_name_then_copied_back_is_the_scaled_one(tmp_path: Path) -> None:
    repo = write(tmp_path / "cls", {"train.py": TRAIN})
    got = extract_static(repo, "torchrun --nproc_per_node=8 train.py --batch-size 64", gpus=8).fields
    assert got["learning_rate"] == pytest.approx(4e-4 * 64 * 8 / 256)


def test_a_copy_of_a_stated_value_is_not_called_derived(tmp_path: Path) -> None:
    text = TRAIN.replace("linear_scaled_lr = args.lr * args.batch_size * world / 256.0", "linear_scaled_lr = 0.1")
    repo = write(tmp_path / "cls2", {"train.py": text})
    got = extract_static(repo, "torchrun --nproc_per_node=8 train.py --lr 0.003", gpus=8).fields
    assert got["learning_rate"] == pytest.approx(0.003)  # the command line still beats a literal in code
