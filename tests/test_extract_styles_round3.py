"""Static extractor rules for the framework styles of the real batch jobs-d (issue 23, item 4), each on a small
repository written here in our own words: registry-based argparse (`CONFIGS[name]` by `--config`), an OmegaConf
package default merged under a YAML with a named lr scaling rule and fixed-length epochs, TF-Model-Garden style
`--params_override` and a stepwise schedule, framework loader defaults by launcher, torchtune-style
underscore versions, and a sized mention of a model family beating a sizeless one."""

from __future__ import annotations

from pathlib import Path

from schedmate.agents.advisor.names import find_known_model
from schedmate.agents.advisor.static_extractor import extract_static
from schedmate.evals.harness.devset_advisor import field_right

from .repo_files import write


def _check(fields: dict, expected: dict) -> None:
    wrong = {k: (fields.get(k), v) for k, v in expected.items() if not field_right(k, fields.get(k), v)}
    assert not wrong, f"(got, expected): {wrong}"


REGISTRY_TRAIN = (
    '"""Pretrain a small language model on a text corpus."""\nimport argparse\nfrom dataclasses import dataclass\n\n'
    "STEPS_LONG = 20000\n\n\n@dataclass\nclass ModelCfg:\n    n_layer: int = 6\n    n_embd: int = 384\n\n\n"
    "@dataclass\nclass RunCfg:\n    model_name: str = 'gpt2'\n    dataset: str = 'openwebtext'\n    lr: float = 1e-3\n"
    "    batch_size: int = 16\n    max_iters: int = 1000\n    num_workers: int = 2\n\n\n"
    "CONFIGS = {\n    'small': RunCfg(lr=6e-4, batch_size=12, max_iters=STEPS_LONG),\n"
    "    'tiny': RunCfg(model_name='gpt2', batch_size=64, lr=1e-3, max_iters=500, num_workers=0),\n}\n\n\n"
    "def main():\n    p = argparse.ArgumentParser()\n    p.add_argument('--config', default='tiny', choices=list(CONFIGS))\n"
    "    args = p.parse_args()\n    cfg = CONFIGS[args.config]\n\n\nif __name__ == '__main__':\n    main()\n")


def test_registry_config_selected_by_name_and_by_default(tmp_path: Path) -> None:
    repo = write(tmp_path / "reg", {"train.py": REGISTRY_TRAIN})
    got = extract_static(repo, "python train.py --config small", gpus=1).fields
    _check(got, {"batch_size": 12, "learning_rate": 6e-4, "iterations": 20000, "iteration_type": "steps",
                 "num_workers": 2, "dataset": "openwebtext"})
    got = extract_static(repo, "python train.py", gpus=1).fields  # argparse default 'tiny'
    _check(got, {"batch_size": 64, "iterations": 500, "num_workers": 0})


def test_registry_list_of_named_configs(tmp_path: Path) -> None:
    text = REGISTRY_TRAIN.replace(
        "CONFIGS = {\n    'small': RunCfg(lr=6e-4, batch_size=12, max_iters=STEPS_LONG),\n"
        "    'tiny': RunCfg(model_name='gpt2', batch_size=64, lr=1e-3, max_iters=500, num_workers=0),\n}\n",
        "_CONFIGS = [\n    RunCfg(name='base_run', lr=2e-4, batch_size=8, max_iters=3000),\n]\n"
        "CONFIGS = {c.name: c for c in _CONFIGS}\n")
    repo = write(tmp_path / "reglist", {"train.py": text})
    got = extract_static(repo, "python train.py --config base_run", gpus=1).fields
    _check(got, {"batch_size": 8, "learning_rate": 2e-4, "iterations": 3000})


def test_omegaconf_default_scaling_rule_and_epoch_length(tmp_path: Path) -> None:
    repo = write(tmp_path / "sslpkg", {
        "dino/__init__.py": "",
        "dino/cfg.py": ("from omegaconf import OmegaConf\n\n\ndef load(path, opts, default_cfg):\n"
                        "    return OmegaConf.merge(default_cfg, OmegaConf.load(path), OmegaConf.from_cli(opts))\n"),
        "dino/train.py": "import argparse\nfrom dino import cfg\np = argparse.ArgumentParser()\n"
                         "p.add_argument('--config-file')\np.add_argument('opts', nargs='*')\n",
        "dino/configs/base_default_config.yaml": (
            "train:\n  batch_size_per_gpu: 32\n  num_workers: 6\n  EPOCH_LENGTH: 500\n"
            "student:\n  arch: vit_base\n  patch_size: 16\nteacher:\n  momentum_teacher: 0.99\n"
            "optim:\n  epochs: 10\n  base_lr: 0.001\n  lr: 0.\n  scaling_rule: sqrt_wrt_1024\n"),
        "dino/configs/run/short.yaml": "train:\n  batch_size_per_gpu: 64\n",
    })
    got = extract_static(repo, "python dino/train.py --config-file dino/configs/run/short.yaml optim.epochs=20",
                         gpus=8).fields
    _check(got, {"batch_size": 64, "num_workers": 6, "iterations": 10000, "iteration_type": "steps",
                 "learning_rate": 0.0007071, "model_name": "dino-vit-b-16", "model_size_b": 0.086,
                 "task_type": "self-supervised-pretraining"})


def test_params_override_and_stepwise_lr(tmp_path: Path) -> None:
    repo = write(tmp_path / "tfmg", {
        "vision/train.py": "from absl import flags\nflags.DEFINE_string('config_file', None, '')\n"
                           "flags.DEFINE_string('params_override', None, '')\n",
        "vision/exp/cls.yaml": (
            "task:\n  model:\n    backbone:\n      resnet:\n        model_id: 50\n  train_data:\n"
            "    input_path: imagenet-2012-tfrecord/train*\n    global_batch_size: 512\n"
            "trainer:\n  train_steps: 9000\n  optimizer_config:\n    learning_rate:\n      type: stepwise\n"
            "      stepwise:\n        boundaries: [3000, 6000]\n        values: [0.2, 0.02, 0.002]\n"),
    })
    got = extract_static(repo, "python vision/train.py --config_file=vision/exp/cls.yaml "
                               "--params_override=trainer.train_steps=4500,task.train_data.global_batch_size=256",
                         gpus=2).fields
    _check(got, {"iterations": 4500, "batch_size": 256, "learning_rate": 0.2})


def test_loader_defaults_by_launcher(tmp_path: Path) -> None:
    repo = write(tmp_path / "factory", {"recipes/sft.yaml": (
        "model_name_or_path: Qwen/Qwen2.5-1.5B\ndataset: alpaca_en\nper_device_train_batch_size: 4\n"
        "learning_rate: 2.0e-5\nnum_train_epochs: 2.0\npreprocessing_num_workers: 8\n")})
    got = extract_static(repo, "llamafactory-cli train recipes/sft.yaml", gpus=1).fields
    _check(got, {"num_workers": 0, "batch_size": 4})
    repo = write(tmp_path / "titan", {"cfg/run.toml": (
        "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nsteps = 200\nbatch_size = 2\ndataset = \"c4\"\n"
        "[optimizer]\nlr = 1e-4\n")})
    got = extract_static(repo, "torchrun --nproc_per_node=8 -m torchtitan.train --job.config_file cfg/run.toml",
                         gpus=8).fields
    _check(got, {"num_workers": 0, "iterations": 200})
    repo = write(tmp_path / "d2", {
        "tools/train_net.py": "from detectron2.engine import default_argument_parser, launch\n",
        "configs/base.yaml": "SOLVER:\n  IMS_PER_BATCH: 8\n  BASE_LR: 0.01\n  MAX_ITER: 5000\n"
                            "DATASETS:\n  TRAIN: ('coco_2017_train',)\n",
        "configs/retinanet_R_50_FPN_1x.yaml": "_BASE_: base.yaml\n"})
    got = extract_static(repo, "python tools/train_net.py --config-file configs/retinanet_R_50_FPN_1x.yaml "
                               "--num-gpus 2", gpus=2).fields
    _check(got, {"num_workers": 4, "iterations": 5000, "task_type": "object-detection"})


def test_underscore_point_versions_and_sized_mentions(tmp_path: Path) -> None:
    assert find_known_model("torchtune.models.qwen2_5.lora_qwen2_5_7b")[0] == "qwen-2.5-7b"
    assert find_known_model("llama3_2_3b")[0] == "llama-3.2-3b"
    assert find_known_model("resnet_50")[0] == "resnet-50"
    repo = write(tmp_path / "mega", {"scripts/run_gpt3_6.7b.sh": (
        "#!/bin/bash\nCKPT=$1\ntorchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 "
        "--num-attention-heads 32 --micro-batch-size 2 --train-iters 1000 --lr 1e-4 --load $CKPT "
        "--data-path /data/pile_text_document\n")})
    got = extract_static(repo, "bash scripts/run_gpt3_6.7b.sh /ckpt/gpt3", gpus=8).fields
    _check(got, {"model_name": "gpt-3-6.7b", "num_workers": 2})
