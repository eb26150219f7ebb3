"""Static extractor on the shapes real training repositories take (hand-written, small, one kind each).

Read as a spec of what the extractor understands, beyond HF-Trainer/argparse scripts launched directly:

- launch: wrapper scripts forwarding "$@" with `${VAR:-default}`s and positional defaults, option
  loops (`--lr) LR="$2"`), bash arrays, project CLIs (`tune run`, `litgpt`) whose YAML is found in the repo;
- configuration: nanoGPT's exec-style Python config + `--key=value`, Hydra `--config-dir/--config-name`
  + dotted overrides + nested defaults, Lightning CLI `fit --config` + `--trainer.max_epochs`, mmengine
  `_base_` inheritance + `--cfg-options`, yacs/detectron2 `_BASE_` + `KEY VALUE`, DeepSpeed JSON;
- code: values derived by the code (`lr = base_lr * batch / 256`, iterations from samples), guarded
  defaults (`if args.lr is None`), literals hard-coded where training runs, a DeepSpeed dict built in code;
- vocabulary: the extractor's own (not the generator's): model families matched word-bounded and
  case-aware ('clip_grad_norm' is not CLIP), sizes from names ('Qwen2.5-14B', '125M') or from
  architecture dimensions (~12*L*h^2 + vocab*h);
- the core's WorkloadMetadata normalises names by general rules only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from schedmate.agents.advisor.knowledge import canonical_dataset, find_model, model_size_b, size_from_dims
from schedmate.agents.advisor.launch import parse_launch
from schedmate.agents.advisor.static_extractor import extract_static
from schedmate.workload import WorkloadMetadata, normalize_dataset, normalize_model_name, normalize_task_type

from .repo_files import write

HF_SFT = '''"""Supervised fine-tuning (SFT) of a causal LM on an instruction dataset."""
from dataclasses import dataclass, field
from transformers import HfArgumentParser, TrainingArguments, AutoModelForCausalLM


@dataclass
class ScriptArguments:
    model_name_or_path: str = field(default="gpt2")
    dataset_name: str = field(default="tatsu-lab/alpaca")


def main():
    HfArgumentParser((ScriptArguments, TrainingArguments)).parse_args_into_dataclasses()


if __name__ == "__main__":
    main()
'''

# ----------------------------------------------------------------------------------------- launch


def test_wrapper_script_forwards_arguments_with_defaults(tmp_path: Path) -> None:
    repo = write(tmp_path / "wrap", {
        "sft.py": HF_SFT,
        "scripts/finetune.sh": ('#!/bin/bash\nset -euo pipefail\nMODEL=${MODEL:-"Qwen/Qwen2.5-14B"}\n'
                                'EPOCHS=${EPOCHS:-3}\nDATA=${1:-yahma/alpaca-cleaned}\nshift || true\n'
                                'torchrun --nproc_per_node 8 sft.py \\\n  --model_name_or_path "$MODEL" \\\n'
                                '  --dataset_name "$DATA" \\\n  --num_train_epochs $EPOCHS \\\n  "$@"\n'),
        "run.sh": "#!/bin/bash\nbash scripts/finetune.sh tatsu-lab/alpaca \"$@\" --dataloader_num_workers 4\n",
    })
    s = extract_static(repo, "EPOCHS=2 bash run.sh --learning_rate 1e-5 --per_device_train_batch_size 4")
    f = s.fields
    assert s.launch.entry == "sft.py" and s.launch.scripts == ["run.sh", "scripts/finetune.sh"]
    assert f["model_name"] == "qwen-2.5-14b" and f["model_size_b"] == pytest.approx(14.8)  # ${MODEL:-default}; public count
    assert f["dataset"] == "alpaca"  # $1 given by run.sh beats the positional default
    assert (f["iterations"], f["iteration_type"]) == (2, "epochs")  # the caller's environment beats the default
    assert (f["learning_rate"], f["batch_size"], f["num_workers"]) == (1e-5, 4, 4)  # forwarded through two "$@"s
    assert f["task_type"] == "instruction-finetuning"


def test_positional_default_applies_when_the_wrapper_gets_no_argument(tmp_path: Path) -> None:
    repo = write(tmp_path / "wrap0", {
        "sft.py": HF_SFT,
        "finetune.sh": 'DATA=${1:-yahma/alpaca-cleaned}\npython sft.py --dataset_name $DATA --max_steps 100\n',
    })
    assert extract_static(repo, "bash finetune.sh").fields["dataset"] == "alpaca-cleaned"


def test_option_loop_in_a_wrapper_script(tmp_path: Path) -> None:
    repo = write(tmp_path / "loop", {
        "sft.py": HF_SFT,
        "train.sh": ('#!/bin/bash\nLR=2e-5\nMODEL=meta-llama/Llama-2-7b-hf\nwhile [[ $# -gt 0 ]]; do\n'
                     '  case "$1" in\n    --lr) LR="$2"; shift 2 ;;\n    --model=*) MODEL="${1#*=}"; shift ;;\n'
                     '    *) echo "unknown $1"; exit 1 ;;\n  esac\ndone\n'
                     'python sft.py --model_name_or_path $MODEL --learning_rate $LR --max_steps 500\n'),
    })
    f = extract_static(repo, "bash train.sh --lr 5e-6 --model=mistralai/Mistral-7B-v0.1").fields
    assert (f["learning_rate"], f["model_name"], f["model_size_b"]) == (5e-6, "mistral-7b-v0.1", 7.24)  # public count of Mistral-7B
    assert (f["iterations"], f["iteration_type"]) == (500, "steps")
    f = extract_static(repo, "bash train.sh").fields  # no arguments: the script's own values
    assert (f["learning_rate"], f["model_name"]) == (2e-5, "llama-2-7b")


def test_bash_array_argument_lists(tmp_path: Path) -> None:
    repo = write(tmp_path / "arr", {
        "train.py": ('"""Image classification."""\nimport argparse\np = argparse.ArgumentParser()\n'
                     'p.add_argument("--model", default="resnet18")\np.add_argument("--epochs", type=int, default=1)\n'
                     'p.add_argument("--lr", type=float, default=0.1)\np.add_argument("--batch-size", type=int, default=8)\n'
                     'p.add_argument("--data", default="/data/cifar10")\n'),
        "train.sh": ('#!/bin/bash\nARGS=(\n  --model convnext_tiny   # the backbone\n  --lr 4e-3\n'
                     '  --data /datasets/imagenet\n)\nARGS+=(--epochs 300)\n'
                     'declare -a EXTRA=(--batch-size "128")\n'
                     'torchrun --nproc_per_node=8 train.py "${ARGS[@]}" ${EXTRA[@]}\n'),
    })
    f = extract_static(repo, "bash train.sh").fields
    assert (f["model_name"], f["learning_rate"], f["batch_size"]) == ("convnext-tiny", 4e-3, 128)
    assert (f["iterations"], f["dataset"], f["task_type"]) == (300, "imagenet-1k", "image-classification")


def test_project_cli_reads_the_yaml_its_config_option_names(tmp_path: Path) -> None:
    repo = write(tmp_path / "tune", {
        "recipes/lora_finetune_single_device.py": '"""LoRA fine-tuning recipe."""\n',
        "recipes/configs/llama3/8B_lora_single_device.yaml": (
            "model:\n  _component_: torchtune.models.llama3.lora_llama3_8b\n  lora_rank: 8\n"
            "checkpointer:\n  checkpoint_dir: /tmp/Meta-Llama-3-8B-Instruct/\n"
            "dataset:\n  _component_: torchtune.datasets.alpaca_cleaned_dataset\n"
            "batch_size: 2\nepochs: 1\noptimizer:\n  _component_: torch.optim.AdamW\n  lr: 3e-4\n"),
        "recipes/configs/llama2/7B_lora.yaml": "model:\n  _component_: torchtune.models.llama2.lora_llama2_7b\nbatch_size: 8\n",
    })
    s = extract_static(repo, "tune run lora_finetune_single_device --config llama3/8B_lora_single_device batch_size=4")
    f = s.fields
    assert s.launch.launcher == "cli" and s.launch.cli == "tune"
    assert "recipes/configs/llama3/8B_lora_single_device.yaml" in s.files
    assert f["model_name"] == "llama-3-8b" and f["model_size_b"] == pytest.approx(8.03)
    assert (f["dataset"], f["batch_size"], f["learning_rate"]) == ("alpaca-cleaned", 4, 3e-4)  # k=v override
    assert (f["iterations"], f["iteration_type"]) == (1, "epochs")


def test_litgpt_style_cli_with_dotted_flags(tmp_path: Path) -> None:
    repo = write(tmp_path / "litgpt", {
        "litgpt/__main__.py": "def main():\n    pass\n",
        "config_hub/finetune/llama-2-7b/lora.yaml": (
            "checkpoint_dir: checkpoints/meta-llama/Llama-2-7b-hf\nprecision: bf16-true\n"
            "data:\n  class_path: litgpt.data.Alpaca2k\n  init_args:\n    num_workers: 4\n"
            "train:\n  global_batch_size: 8\n  micro_batch_size: 2\n  epochs: 4\n"
            "optimizer:\n  class_path: torch.optim.AdamW\n  init_args:\n    lr: 0.0002\n"),
    })
    s = extract_static(repo, "litgpt finetune_lora --config config_hub/finetune/llama-2-7b/lora.yaml --train.epochs 2")
    f = s.fields
    assert (f["model_name"], f["model_size_b"]) == ("llama-2-7b", 6.74)
    # the per-device micro batch is the batch; the global one (8) is micro x devices x accumulation
    assert (f["batch_size"], f["learning_rate"], f["num_workers"]) == (2, 2e-4, 4)
    assert (f["iterations"], f["iteration_type"]) == (2, "epochs") and s.evidence["iterations"].kind == "cli"
    assert f["dataset"] == "alpaca2k"


def test_wrapper_that_consumes_its_first_argument_then_forwards_the_rest(tmp_path: Path) -> None:
    repo = write(tmp_path / "timm", {
        "distributed_train.sh": '#!/bin/bash\nNUM_PROC=$1\nshift\ntorchrun --nproc_per_node=$NUM_PROC train.py "$@"\n',
        "train.py": ('"""ImageNet training script."""\nimport argparse\np = argparse.ArgumentParser()\n'
                     'p.add_argument("--model", default="resnet50")\np.add_argument("-b", "--batch-size", type=int, default=128)\n'
                     'p.add_argument("--epochs", type=int, default=300)\np.add_argument("--data-dir")\n'),
    })
    s = extract_static(repo, "./distributed_train.sh 8 --data-dir /imagenet --model convnext_small -b 256 --epochs 150")
    assert s.launch.launcher_args == ["--nproc_per_node=8"]
    f = s.fields
    assert (f["model_name"], f["batch_size"], f["iterations"], f["dataset"]) == ("convnext-small", 256, 150, "imagenet-1k")


def test_megatron_script_with_arrays_and_positional_paths(tmp_path: Path) -> None:
    repo = write(tmp_path / "meg3", {
        "pretrain_gpt.py": '"""Pretrain GPT."""\nfrom megatron.training import pretrain\n',
        "examples/gpt3/train_gpt3_175b_distributed.sh": (
            "#!/bin/bash\nCHECKPOINT_PATH=$1\nVOCAB_FILE=$2\nDATA_PATH=$3\n"
            "GPT_MODEL_ARGS=(\n    --num-layers 96\n    --hidden-size 12288\n)\n"
            "TRAINING_ARGS=(\n    --global-batch-size 1536\n    --train-iters 500000\n    --lr 6.0e-5\n)\n"
            "torchrun --nproc_per_node 8 pretrain_gpt.py ${GPT_MODEL_ARGS[@]} ${TRAINING_ARGS[@]} \\\n"
            "    --data-path $DATA_PATH --vocab-file $VOCAB_FILE --save $CHECKPOINT_PATH\n"),
    })
    s = extract_static(repo, "bash examples/gpt3/train_gpt3_175b_distributed.sh /ckpt /data/gpt2-vocab.json "
                             "/data/pile/pile_text_document")
    f = s.fields
    assert f["model_name"] == "gpt-3-175b"  # named by the script; the GPT-2 *tokenizer* file is not the model
    assert f["model_size_b"] == pytest.approx(175.0)
    assert (f["batch_size"], f["iterations"], f["learning_rate"], f["dataset"]) == (1536, 500000, 6e-5, "pile")


def test_project_cli_with_a_positional_yaml(tmp_path: Path) -> None:
    repo = write(tmp_path / "lf", {
        "examples/train_lora/llama3_lora_sft.yaml": (
            "model_name_or_path: meta-llama/Meta-Llama-3-8B-Instruct\nstage: sft\nfinetuning_type: lora\n"
            "dataset: identity,alpaca_en_demo\npreprocessing_num_workers: 16\nper_device_train_batch_size: 1\n"
            "learning_rate: 1.0e-4\nnum_train_epochs: 3.0\n"),
    })
    f = extract_static(repo, "llamafactory-cli train examples/train_lora/llama3_lora_sft.yaml").fields
    assert (f["model_name"], f["task_type"], f["dataset"]) == ("llama-3-8b-instruct", "instruction-finetuning", "alpaca")
    assert (f["batch_size"], f["learning_rate"], f["iterations"], f["iteration_type"]) == (1, 1e-4, 3, "epochs")


# ----------------------------------------------------------------------------------------- configuration


NANOGPT_TRAIN = '''"""Train a GPT (nanoGPT-style): python train.py config/x.py --batch_size=32"""
import os
import torch

from model import GPTConfig, GPT

out_dir = 'out'
dataset = 'openwebtext'
gradient_accumulation_steps = 5 * 8
batch_size = 12
block_size = 1024
n_layer = 12
n_head = 12
n_embd = 768
learning_rate = 6e-4
max_iters = 600000
exec(open('configurator.py').read())  # overrides from command line or config file
tokens_per_iter = gradient_accumulation_steps * batch_size * block_size
model = GPT(GPTConfig(n_layer=n_layer, n_head=n_head, n_embd=n_embd))
'''


@pytest.fixture
def nanogpt(tmp_path: Path) -> Path:
    return write(tmp_path / "nanogpt", {
        "train.py": NANOGPT_TRAIN,
        "model.py": ("from dataclasses import dataclass\n\n@dataclass\nclass GPTConfig:\n    vocab_size: int = 50304\n"
                     "    n_layer: int = 12\n\nclass GPT:\n    pass\n"),
        "configurator.py": "import sys\nfor arg in sys.argv[1:]:\n    pass\n",
        "config/train_shakespeare_char.py": ("out_dir = 'out-shakespeare-char'\ndataset = 'shakespeare_char'\n"
                                             "batch_size = 64\nblock_size = 256\nn_layer = 6\nn_head = 6\n"
                                             "n_embd = 384\nlearning_rate = 1e-3\nmax_iters = 5000\n"),
        "config/train_gpt2.py": "batch_size = 12\nmax_iters = 600000\n",
    })


def test_nanogpt_configurator_python_config_and_key_value_overrides(nanogpt: Path) -> None:
    s = extract_static(nanogpt, "python train.py config/train_shakespeare_char.py --max_iters=2000 --batch_size=32")
    f = s.fields
    assert f["dataset"] == "shakespeare" and s.evidence["dataset"].source == "config/train_shakespeare_char.py"
    assert (f["iterations"], f["iteration_type"], f["batch_size"]) == (2000, "steps", 32)  # --k=v beats the file
    assert f["learning_rate"] == 1e-3  # the config file beats the script's global
    # from n_layer / n_embd of the config; the class's default vocab (50304) is not counted: a char-level
    # run replaces it at run time
    assert f["model_size_b"] == pytest.approx(12 * 6 * 384**2 / 1e9)
    assert f["task_type"] == "lm-pretraining" and f["model_name"] == "gpt"  # the class the script builds
    plain = extract_static(nanogpt, "python train.py").fields  # the script's own globals
    assert (plain["dataset"], plain["iterations"], plain["learning_rate"]) == ("openwebtext", 600000, 6e-4)
    assert plain["model_size_b"] == pytest.approx(0.085, abs=0.001)


def test_hydra_config_dir_and_name_with_dotted_overrides_and_nested_defaults(tmp_path: Path) -> None:
    repo = write(tmp_path / "hydra", {
        "train.py": ('"""Instruction tuning."""\nimport hydra\n\n@hydra.main(version_base=None, config_path=None)\n'
                     'def main(cfg):\n    pass\n\nif __name__ == "__main__":\n    main()\n'),
        "recipes/sft_llama.yaml": ("defaults:\n  - model: llama3_8b\n  - optim: adamw\n  - override hydra/launcher: basic\n"
                                   "  - _self_\ndata:\n  name: yahma/alpaca-cleaned\n  num_workers: 8\n"
                                   "trainer:\n  max_steps: 1000\n  batch_size: 16\n"),
        "recipes/model/llama3_8b.yaml": "defaults:\n  - llama_base\nname: meta-llama/Meta-Llama-3-8B\n",
        "recipes/model/llama_base.yaml": "name: meta-llama/Llama-2-7b-hf\nhidden_size: 4096\n",
        "recipes/optim/adamw.yaml": "lr: 2.0e-5\nweight_decay: 0.0\n",
        "recipes/optim/sgd.yaml": "lr: 0.1\n",
    })
    s = extract_static(repo, "python train.py --config-dir recipes --config-name sft_llama trainer.max_steps=250 optim.lr=1e-5")
    f = s.fields
    assert "recipes/sft_llama.yaml" in s.files and "recipes/model/llama_base.yaml" in s.files
    assert "recipes/optim/sgd.yaml" not in s.files
    assert f["model_name"] == "llama-3-8b"  # the option file overrides its own base
    assert (f["iterations"], f["learning_rate"]) == (250, 1e-5) and s.evidence["iterations"].kind == "cli"
    assert (f["batch_size"], f["num_workers"], f["dataset"]) == (16, 8, "alpaca-cleaned")


def test_lightning_cli_fit_config_and_dotted_flags(tmp_path: Path) -> None:
    repo = write(tmp_path / "pl", {
        "main.py": ('"""Image classification with LightningCLI."""\nfrom lightning.pytorch.cli import LightningCLI\n\n'
                    'def cli_main():\n    LightningCLI()\n\nif __name__ == "__main__":\n    cli_main()\n'),
        "configs/cls.yaml": ("trainer:\n  max_epochs: 100\n  devices: 8\nmodel:\n  class_path: src.models.Classifier\n"
                             "  init_args:\n    backbone: efficientnet_b0\n    lr: 0.001\n"
                             "data:\n  class_path: src.data.ImageNetDataModule\n  init_args:\n    batch_size: 64\n"
                             "    num_workers: 6\n    data_dir: /datasets/imagenet\n"),
    })
    s = extract_static(repo, "python main.py fit --config configs/cls.yaml --trainer.max_epochs 30 --data.init_args.batch_size=128")
    f = s.fields
    assert (f["iterations"], f["iteration_type"], f["batch_size"]) == (30, "epochs", 128)
    assert (f["model_name"], f["learning_rate"], f["num_workers"]) == ("efficientnet-b0", 1e-3, 6)
    assert f["dataset"] == "imagenet-1k" and f["model_size_b"] == pytest.approx(0.0053)


def test_mmengine_python_config_with_base_inheritance_and_cfg_options(tmp_path: Path) -> None:
    repo = write(tmp_path / "mmdet", {
        "tools/train.py": ('"""Train a detector."""\nimport argparse\n\ndef parse_args():\n'
                           '    p = argparse.ArgumentParser()\n    p.add_argument("config")\n'
                           '    p.add_argument("--cfg-options", nargs="+")\n    return p.parse_args()\n\n'
                           'def main():\n    args = parse_args()\n\nif __name__ == "__main__":\n    main()\n'),
        "configs/_base_/models/mask-rcnn_r50_fpn.py": ("model = dict(\n    type='MaskRCNN',\n"
                                                       "    backbone=dict(type='ResNet', depth=50))\n"),
        "configs/_base_/datasets/coco_instance.py": (
            "dataset_type = 'CocoDataset'\ndata_root = 'data/coco/'\n"
            "train_dataloader = dict(batch_size=2, num_workers=2,\n    dataset=dict(type=dataset_type, data_root=data_root))\n"
            "val_dataloader = dict(batch_size=1, num_workers=2)\n"),
        "configs/_base_/schedules/schedule_1x.py": (
            "train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=12, val_interval=1)\n"
            "optim_wrapper = dict(type='OptimWrapper', optimizer=dict(type='SGD', lr=0.02, momentum=0.9))\n"),
        "configs/mask_rcnn/mask-rcnn_r50_fpn_2x_coco.py": (
            "_base_ = [\n    '../_base_/models/mask-rcnn_r50_fpn.py',\n    '../_base_/datasets/coco_instance.py',\n"
            "    '../_base_/schedules/schedule_1x.py',\n]\ntrain_cfg = dict(max_epochs=24)\n"),
    })
    s = extract_static(repo, "python tools/train.py configs/mask_rcnn/mask-rcnn_r50_fpn_2x_coco.py "
                             "--cfg-options train_dataloader.batch_size=4 optim_wrapper.optimizer.lr=0.01")
    f = s.fields
    assert "configs/_base_/schedules/schedule_1x.py" in s.files
    assert (f["iterations"], f["iteration_type"]) == (24, "epochs")  # the child overrides one key of the base dict
    assert (f["batch_size"], f["learning_rate"], f["num_workers"]) == (4, 0.01, 2)  # --cfg-options; val loader ignored
    # the config file's OpenMMLab name states the detector with its components
    assert (f["model_name"], f["dataset"], f["task_type"]) == ("mask-rcnn-r50-fpn", "coco", "instance-segmentation")


def test_mmengine_new_style_read_base_through_dist_train_script(tmp_path: Path) -> None:
    repo = write(tmp_path / "mmpre", {
        "tools/train.py": '"""Train a model."""\nimport argparse\n',
        "tools/dist_train.sh": ('#!/usr/bin/env bash\nCONFIG=$1\nGPUS=$2\nPORT=${PORT:-29500}\n'
                                'PYTHONPATH="$(dirname $0)/..":$PYTHONPATH \\\npython -m torch.distributed.launch '
                                '--nproc_per_node=$GPUS --master_port=$PORT \\\n    $(dirname "$0")/train.py $CONFIG '
                                '--launcher pytorch ${@:3}\n'),
        "configs/_base_/models/resnet50.py": ("model = dict(type='ImageClassifier', backbone=dict(type='ResNet', depth=50),\n"
                                              "             head=dict(type='LinearClsHead', num_classes=1000))\n"),
        "configs/_base_/datasets/imagenet_bs32.py": (
            "dataset_type = 'ImageNet'\ntrain_dataloader = dict(batch_size=32, num_workers=5,\n"
            "    dataset=dict(type=dataset_type, data_root='data/imagenet'))\n"),
        "configs/_base_/schedules/imagenet_bs256.py": ("optim_wrapper = dict(optimizer=dict(type='SGD', lr=0.1))\n"
                                                       "train_cfg = dict(by_epoch=True, max_epochs=100)\n"),
        "configs/resnet/resnet50_8xb32_in1k.py": (
            "from mmengine.config import read_base\nwith read_base():\n    from .._base_.models.resnet50 import *\n"
            "    from .._base_.datasets.imagenet_bs32 import *\n    from .._base_.schedules.imagenet_bs256 import *\n"),
    })
    s = extract_static(repo, "bash tools/dist_train.sh configs/resnet/resnet50_8xb32_in1k.py 8 "
                             "--cfg-options train_cfg.max_epochs=90")
    f = s.fields
    assert (s.launch.launcher, s.launch.entry) == ("torchrun", "tools/train.py")  # $(dirname "$0")/train.py
    assert (f["model_name"], f["model_size_b"]) == ("resnet-50", 0.0256)  # backbone type + depth, not 'ImageClassifier'
    assert (f["iterations"], f["batch_size"], f["learning_rate"], f["num_workers"]) == (90, 32, 0.1, 5)  # ${@:3}
    assert (f["dataset"], f["task_type"]) == ("imagenet-1k", "image-classification")


def test_yacs_base_file_and_key_value_overrides(tmp_path: Path) -> None:
    repo = write(tmp_path / "d2", {
        "tools/train_net.py": ('"""Detectron2 training script."""\nimport argparse\n\ndef main():\n'
                               '    p = argparse.ArgumentParser()\n    p.add_argument("--config-file", default="")\n'
                               '    p.add_argument("--num-gpus", type=int, default=1)\n'
                               '    p.add_argument("opts", nargs=argparse.REMAINDER)\n\nmain()\n'),
        "configs/Base-RCNN-FPN.yaml": ("MODEL:\n  META_ARCHITECTURE: GeneralizedRCNN\nDATASETS:\n"
                                       "  TRAIN: (\"coco_2017_train\",)\n  TEST: (\"coco_2017_val\",)\n"
                                       "SOLVER:\n  IMS_PER_BATCH: 16\n  BASE_LR: 0.02\n  MAX_ITER: 90000\n"
                                       "DATALOADER:\n  NUM_WORKERS: 4\n"),
        "configs/COCO-Detection/faster_rcnn_R_50_FPN_3x.yaml": ('_BASE_: "../Base-RCNN-FPN.yaml"\nMODEL:\n'
                                                               '  RESNETS:\n    DEPTH: 50\nSOLVER:\n  MAX_ITER: 270000\n'),
    })
    s = extract_static(repo, "python tools/train_net.py --config-file configs/COCO-Detection/faster_rcnn_R_50_FPN_3x.yaml "
                             "--num-gpus 8 SOLVER.IMS_PER_BATCH 8 SOLVER.BASE_LR 0.01")
    f = s.fields
    assert (f["iterations"], f["iteration_type"]) == (270000, "steps")  # the child file beats _BASE_
    assert (f["batch_size"], f["learning_rate"], f["num_workers"]) == (8, 0.01, 4)  # KEY VALUE pairs
    assert (f["model_name"], f["dataset"], f["task_type"]) == ("faster-rcnn-r50-fpn", "coco", "object-detection")


def test_hydra_target_classes_and_experiment(tmp_path: Path) -> None:
    repo = write(tmp_path / "lht", {
        "src/train.py": ('"""Train."""\nimport hydra\n\n@hydra.main(version_base="1.3", config_path="../configs", '
                         'config_name="train.yaml")\ndef main(cfg):\n    pass\n'),
        "configs/train.yaml": "defaults:\n  - _self_\n  - data: mnist\n  - model: mnist\n  - trainer: default\n  - experiment: null\n",
        "configs/data/mnist.yaml": ("_target_: src.data.mnist_datamodule.MNISTDataModule\ndata_dir: ${paths.data_dir}\n"
                                    "batch_size: 128\nnum_workers: 0\n"),
        "configs/model/mnist.yaml": ("_target_: src.models.mnist_module.MNISTLitModule\noptimizer:\n  _target_: torch.optim.Adam\n"
                                     "  lr: 0.001\nnet:\n  _target_: src.models.components.simple_dense_net.SimpleDenseNet\n"),
        "configs/trainer/default.yaml": "_target_: lightning.pytorch.trainer.Trainer\nmax_epochs: 10\n",
        "configs/experiment/example.yaml": "# @package _global_\ndata:\n  batch_size: 64\nmodel:\n  optimizer:\n    lr: 0.002\n",
    })
    f = extract_static(repo, "python src/train.py experiment=example trainer.max_epochs=20").fields
    assert (f["model_name"], f["dataset"], f["task_type"]) == ("simple-dense-net", "mnist", "image-classification")
    assert (f["batch_size"], f["learning_rate"], f["iterations"], f["num_workers"]) == (64, 0.002, 20, 0)


def test_yacs_defaults_module_and_yaml_override(tmp_path: Path) -> None:
    repo = write(tmp_path / "swin", {
        "main.py": ('"""Swin Transformer training."""\nimport argparse\nfrom config import get_config\n\n'
                    'def parse_option():\n    p = argparse.ArgumentParser()\n    p.add_argument("--cfg", type=str)\n'
                    '    p.add_argument("--batch-size", type=int)\n    p.add_argument("--data-path", type=str)\n'
                    '    return p.parse_args()\n'),
        "config.py": ("from yacs.config import CfgNode as CN\n_C = CN()\n_C.DATA = CN()\n_C.DATA.BATCH_SIZE = 128\n"
                      "_C.DATA.NUM_WORKERS = 8\n_C.MODEL = CN()\n_C.MODEL.NAME = 'swin_tiny_patch4_window7_224'\n"
                      "_C.TRAIN = CN()\n_C.TRAIN.EPOCHS = 300\n_C.TRAIN.BASE_LR = 5e-4\n"),
        "configs/swin/swin_base_patch4_window7_224.yaml": "MODEL:\n  TYPE: swin\n  NAME: swin_base_patch4_window7_224\n",
    })
    s = extract_static(repo, "python -m torch.distributed.launch --nproc_per_node 8 main.py "
                             "--cfg configs/swin/swin_base_patch4_window7_224.yaml --data-path /data/imagenet --batch-size 64")
    f = s.fields
    assert (f["model_name"], f["model_size_b"]) == ("swin-base", 0.088)  # the YAML beats the defaults module
    assert (f["iterations"], f["learning_rate"], f["num_workers"]) == (300, 5e-4, 8)  # `_C.TRAIN.EPOCHS = 300`
    assert (f["batch_size"], f["dataset"]) == (64, "imagenet-1k")


def test_deepspeed_json_named_on_the_command_line(tmp_path: Path) -> None:
    repo = write(tmp_path / "dsjson", {
        "train.py": ('"""Pretrain a GPT-NeoX model with DeepSpeed."""\nimport argparse\nimport deepspeed\n'
                     'p = argparse.ArgumentParser()\np.add_argument("--model", default="EleutherAI/pythia-1.4b")\n'
                     'p.add_argument("--train-iters", type=int, default=1000)\np.add_argument("--data-path", default="/data/pile")\n'
                     'deepspeed.add_config_arguments(p)\n'),
        "ds_config.json": ('{"train_batch_size": 512, "train_micro_batch_size_per_gpu": 8, '
                           '"optimizer": {"type": "Adam", "params": {"lr": 0.0002}}}'),
    })
    f = extract_static(repo, "deepspeed --num_gpus 8 train.py --deepspeed_config ds_config.json --train-iters 143000").fields
    assert (f["batch_size"], f["learning_rate"]) == (8, 2e-4)  # the micro batch per GPU, not the total 512
    assert (f["model_name"], f["model_size_b"], f["iterations"], f["dataset"]) == ("pythia-1.4b", 1.4, 143000, "pile")


# ----------------------------------------------------------------------------------------- code


def test_values_derived_in_code_are_folded(tmp_path: Path) -> None:
    repo = write(tmp_path / "derived", {
        "main_pretrain.py": ('"""Masked image modeling pre-training of a ViT (MAE-style) on ImageNet."""\nimport argparse\n'
                             'import torch\n\ndef get_args():\n    p = argparse.ArgumentParser()\n'
                             '    p.add_argument("--model", default="vit_large_patch16_224")\n'
                             '    p.add_argument("--batch_size", type=int, default=64)\n'
                             '    p.add_argument("--accum_iter", type=int, default=1)\n'
                             '    p.add_argument("--blr", type=float, default=1.5e-4)\n'
                             '    p.add_argument("--lr", type=float, default=None)\n'
                             '    p.add_argument("--total_samples", type=int, default=1281167 * 100)\n'
                             '    p.add_argument("--data_path", default="/datasets01/imagenet_full_size/061417/")\n'
                             '    return p.parse_args()\n\n'
                             'def main(args):\n    eff_batch_size = args.batch_size * args.accum_iter * misc.get_world_size()\n'
                             '    if args.lr is None:  # only when no absolute lr is given\n'
                             '        args.lr = args.blr * eff_batch_size / 256\n'
                             '    max_steps = args.total_samples // eff_batch_size\n'
                             '    optimizer = torch.optim.AdamW([], lr=args.lr, betas=(0.9, 0.95))\n\n'
                             'if __name__ == "__main__":\n    main(get_args())\n'),
    })
    cmd = "torchrun --nproc_per_node 8 main_pretrain.py --batch_size 128 --accum_iter 2 --blr 1e-4"
    s = extract_static(repo, cmd, gpus=8)  # the world size is the job's GPU count
    f = s.fields
    assert f["learning_rate"] == pytest.approx(1e-4 * 128 * 2 * 8 / 256) and s.evidence["learning_rate"].kind == "derived"
    assert (f["iterations"], f["iteration_type"]) == (1281167 * 100 // (128 * 2 * 8), "steps")
    assert f["batch_size"] == 128  # as the configuration states it, not the derived effective batch
    assert f["model_name"] == "vit-l-16" and f["dataset"] == "imagenet-1k"
    given = extract_static(repo, "python main_pretrain.py --lr 5e-4", gpus=8).fields
    assert given["learning_rate"] == 5e-4  # the guarded derivation does not run when lr is given
    # the launcher states the process count (torchrun --nproc_per_node 8, one node): the same derivation
    assert extract_static(repo, cmd).fields["learning_rate"] == pytest.approx(1e-4 * 128 * 2 * 8 / 256)
    plain = cmd.replace("torchrun --nproc_per_node 8", "python")
    unknown = extract_static(repo, plain).fields  # GPU count unknown: nothing is derived, the stated base lr stays
    assert unknown["learning_rate"] == 1e-4 and unknown["iterations"] is None


def test_values_hard_coded_in_the_training_loop(tmp_path: Path) -> None:
    repo = write(tmp_path / "loop", {
        "train.py": ('"""Train ResNet-50 on ImageNet."""\nimport torch\nimport torchvision\n\n'
                     'def train():\n    model = torchvision.models.resnet50()\n'
                     '    train_loader = torch.utils.data.DataLoader(torchvision.datasets.ImageFolder("/data/imagenet/train"),\n'
                     '                                               batch_size=256, num_workers=16, shuffle=True)\n'
                     '    val_loader = torch.utils.data.DataLoader(None, batch_size=1024, num_workers=4)\n'
                     '    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)\n'
                     '    for epoch in range(90):\n        for x, y in train_loader:\n            pass\n\n'
                     'def legacy():\n    torch.optim.SGD([], lr=99.0)\n\n'
                     'if __name__ == "__main__":\n    train()\n'),
    })
    s = extract_static(repo, "python train.py")
    f = s.fields
    assert (f["iterations"], f["iteration_type"]) == (90, "epochs") and s.evidence["iterations"].kind == "code"
    assert (f["batch_size"], f["num_workers"], f["learning_rate"]) == (256, 16, 0.1)  # not the val loader's
    assert (f["model_name"], f["dataset"], f["task_type"]) == ("resnet-50", "imagenet-1k", "image-classification")


def test_datasets_and_model_classes_named_only_in_code(tmp_path: Path) -> None:
    repo = write(tmp_path / "incode", {
        "sft.py": ('"""Fine-tune a chat model."""\nfrom datasets import load_dataset\nfrom trl import SFTConfig, SFTTrainer\n\n'
                   'def main():\n    train = load_dataset("HuggingFaceH4/ultrachat_200k", split="train_sft")\n'
                   '    evals = load_dataset("HuggingFaceH4/mt_bench", split="test")\n'
                   '    cfg = SFTConfig(output_dir="out", num_train_epochs=2, per_device_train_batch_size=4, learning_rate=2e-5)\n'
                   '    SFTTrainer(model="Qwen/Qwen2.5-0.5B", args=cfg, train_dataset=train)\n\nmain()\n'),
        "cifar.py": ('"""Small CNN."""\nimport torchvision\nfrom model import TinyNet\n\n'
                     'def run():\n    ds = torchvision.datasets.CIFAR100(root="./data", train=True)\n    model = TinyNet(width=64)\n'
                     '    model = torch.compile(model)\n    for epoch in range(30):\n        pass\n\nrun()\n'),
        "model.py": "class TinyNet:\n    pass\n",
    })
    f = extract_static(repo, "python sft.py").fields
    assert (f["dataset"], f["model_name"], f["model_size_b"]) == ("ultrachat-200k", "qwen-2.5-0.5b", 0.494)
    assert (f["iterations"], f["batch_size"], f["learning_rate"]) == (2, 4, 2e-5)  # SFTConfig literals
    f = extract_static(repo, "python cifar.py").fields
    assert (f["dataset"], f["model_name"], f["iterations"]) == ("cifar-100", "tinynet", 30)  # the class it builds


def test_deepspeed_dict_built_in_code(tmp_path: Path) -> None:
    repo = write(tmp_path / "dsdict", {
        "train.py": ('"""Fine-tune OPT with DeepSpeed."""\nimport argparse\nimport deepspeed\n\n'
                     'def main():\n    p = argparse.ArgumentParser()\n    p.add_argument("--micro_bs", type=int, default=4)\n'
                     '    p.add_argument("--model_name_or_path", default="facebook/opt-1.3b")\n'
                     '    p.add_argument("--dataset_name", default="openwebtext")\n'
                     '    p.add_argument("--max_steps", type=int, default=2000)\n'
                     '    args = p.parse_args()\n    world = 8\n'
                     '    ds_config = {\n        "train_batch_size": args.micro_bs * world,\n'
                     '        "train_micro_batch_size_per_gpu": args.micro_bs,\n'
                     '        "optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "weight_decay": 0.0}},\n'
                     '    }\n    deepspeed.initialize(config=ds_config)\n\nmain()\n'),
    })
    s = extract_static(repo, "deepspeed train.py --micro_bs 2")
    f = s.fields
    # the per-GPU micro batch (CLI 2) is the batch; the dict's train_batch_size is the total over 8 ranks
    assert (f["batch_size"], f["learning_rate"]) == (2, 1e-4) and s.evidence["learning_rate"].kind == "code_dict"
    assert (f["model_name"], f["model_size_b"]) == ("opt-1.3b", 1.3)


# ----------------------------------------------------------------------------------------- vocabulary


def test_gradient_clipping_is_not_the_clip_model(tmp_path: Path) -> None:
    repo = write(tmp_path / "clipgrad", {
        "train.py": ('"""Train a ResNet-18 classifier on CIFAR-10."""\nimport argparse\nimport torch\n'
                     'p = argparse.ArgumentParser()\np.add_argument("--arch", default="resnet18")\n'
                     'p.add_argument("--clip", type=float, default=1.0, help="clip gradients")\n'
                     'p.add_argument("--epochs", type=int, default=200)\np.add_argument("--dataset", default="cifar10")\n'
                     'args = p.parse_args()\ntorch.nn.utils.clip_grad_norm_([], args.clip)\n'),
        "README.md": "# Training\nWe clip_grad_norm every step; see --clip. Contrastive methods are future work.\n",
    })
    f = extract_static(repo, "python train.py --clip 0.5").fields
    assert f["model_name"] == "resnet-18" and f["task_type"] == "image-classification"
    assert f["dataset"] == "cifar-10"
    assert find_model("torch.nn.utils.clip_grad_norm_(params, args.clip) --clip 1.0") is None
    assert find_model("we fine-tune CLIP") == ("clip", "CLIP")  # the capitalised model name still counts


@pytest.mark.parametrize(("text", "canonical", "size"), [
    ("Qwen/Qwen2.5-14B", "qwen-2.5-14b", 14.8),  # exact public counts where the name rounds
    ("meta-llama/Meta-Llama-3-8B-Instruct", "llama-3-8b-instruct", 8.0),
    ("--model_name_or_path /ckpt/llama2_7b", "llama-2-7b", 7.0),
    ("facebook/opt-125m", "opt-125m", 0.125),
    ("EleutherAI/gpt-neox-20b", "gpt-neox-20b", 20.0),
    ("google/gemma-2b", "gemma-2b", 2.51),  # 256k-token embeddings: 2.51B, not 2B
    ("mistralai/Mixtral-8x7B-v0.1", "mixtral-8x7b-v0.1", 46.7),  # experts share attention
    ("meta-llama/Llama-3.2-1B-Instruct", "llama-3.2-1b-instruct", 1.24),
    ("microsoft/Phi-3-mini-4k-instruct", "phi-3-mini", 3.82),
    ("vit_large_patch16_224", "vit-l-16", 0.304),
    ("openai/clip-vit-large-patch14", "clip-vit-l-14", 0.428),
    ("yolov8m.pt", "yolov8m", 0.0259),
    ("openai/whisper-small", "whisper-small", 0.244),
    ("runwayml/stable-diffusion-v1-5", "stable-diffusion-v1-5", 0.86),
])
def test_model_families_and_sizes_from_names(text: str, canonical: str, size: float) -> None:
    found = find_model(text)
    assert found is not None and found[0] == canonical
    got = model_size_b(found[0], found[1])
    assert got is not None and got[0] == pytest.approx(size, rel=0.05)


def test_ambiguous_short_words_need_more_than_the_word() -> None:
    for text in ("--opt adamw", "phi = 0.5", "the t5 column", "--clip 1", "gpt"):
        assert find_model(text) is None, text


def test_size_from_architecture_dimensions(tmp_path: Path) -> None:
    assert size_from_dims(24, 2048, 50257) == pytest.approx(1.31, abs=0.01)  # GPT-3 XL
    repo = write(tmp_path / "dims", {
        "pretrain.py": '"""Pretrain a causal LM from scratch."""\nimport yaml\n',
        "configs/model.yaml": ("model:\n  name: my-tiny-lm\n  num_hidden_layers: 24\n  hidden_size: 2048\n"
                               "  vocab_size: 50257\n  vision_hidden_size: 1024\ntrain:\n  max_steps: 10\n"),
    })
    s = extract_static(repo, "python pretrain.py --config configs/model.yaml")
    assert s.fields["model_name"] == "my-tiny-lm"  # an unknown name is kept, never guessed
    assert s.fields["model_size_b"] == pytest.approx(1.31, abs=0.01) and s.evidence["model_size_b"].kind == "derived"


def test_dataset_spellings() -> None:
    cases = {"ILSVRC2012": "imagenet-1k", "coco_2017_train": None, "CocoDataset": "coco", "squad_v2": "squad-v2",
             "torchtune.datasets.alpaca_cleaned_dataset": None, "alpaca_cleaned_dataset": "alpaca-cleaned",
             "HuggingFaceFW/fineweb-edu": "fineweb-edu", "wikitext-103-raw-v1": "wikitext-103", "cifar100": "cifar-100"}
    for text, canon in cases.items():
        assert canonical_dataset(text) == canon, text


# ----------------------------------------------------------------------------------------- core


def test_core_normalisation_uses_general_rules_only() -> None:
    assert normalize_model_name("meta-llama/Meta-Llama-3-8B") == normalize_model_name("llama3_8b") == "llama-3-8b"
    assert normalize_model_name("/ckpt/Llama-2-7b-hf/") == "llama-2-7b"
    assert normalize_model_name("Qwen2.5 14B") == "qwen-2.5-14b" and normalize_model_name("ViT-L/16") == "vit-l-16"
    assert normalize_model_name("yolov8m.pt") == "yolov8m" and normalize_model_name("t5-small") == "t5-small"
    assert normalize_model_name("ResNet50") == "resnet-50" and normalize_model_name("mobilenetv2") == "mobilenetv2"
    # no table: a name is never mapped to another spelling's canonical name
    assert normalize_model_name("gpt3-1.3b") == "gpt-3-1.3b" and normalize_dataset("ILSVRC2012") == "ilsvrc2012"
    assert normalize_dataset("tatsu-lab/alpaca") == "alpaca" and normalize_task_type("Question Answering") == \
        "question-answering"
    assert normalize_task_type("instruction fine-tuning") == "instruction-finetuning"
    for name in ("llama-3-8b", "qwen-2.5-14b", "stable-diffusion-v1-5", "vit-l-16", "gpt-1.3b"):
        assert normalize_model_name(name) == name  # idempotent
    m = WorkloadMetadata(model_name="Meta-Llama-3-8B", task_type="SFT", dataset="tatsu-lab/alpaca", iterations=3,
                         iteration_type="epoch")
    assert (m.model_name, m.task_type, m.dataset) == ("llama-3-8b", "sft", "alpaca")


def test_launch_of_sbatch_with_options_and_script_arguments(tmp_path: Path) -> None:
    write(tmp_path, {"job.sbatch": "#!/bin/bash\n#SBATCH --nodes=2\nsrun python train.py --lr $1\n",
                     "train.py": ""})
    launch = parse_launch("sbatch --nodes 2 job.sbatch 3e-4", tmp_path)
    assert launch.entry == "train.py" and launch.args[:2] == ["--lr", "3e-4"] and launch.sbatch["nodes"] == "2"
