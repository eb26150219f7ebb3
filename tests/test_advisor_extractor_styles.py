"""Static extractor: general rules for how real training code states (or hides) a value.

Each test is a small hand-written repository in one real project's style (not a copy of any dev-set
repository) and reads as the rule it checks:

- batch: the batch one device sees wins over a total stated beside it (micro vs global);
- length: configurator globals are replaced by config files and `--key=value`; loop bounds read from the
  configuration (`range(max_iters + 1)`, `range(1, epochs + 1)`) add nothing; `range(start, start + N)` is N;
  schedule lengths are not training lengths; sample budgets over the global batch; per-epoch step caps
  times epochs; Composer time strings; two limits in one section stop at whichever comes first;
- code: a value reassigned from something unreadable is unknown; in-loop lr annealing is not the start lr;
  helpers whose every branch returns the same defaults; imports through the launcher's PYTHONPATH;
- configs: Python-module configs holding a dataclass instance (`--config exps.small`), a project `get_cfg()`
  setting yacs defaults, DeepSpeed's optimizer block, mmengine's `--auto-scale-lr`;
- workers: a DataLoader without `num_workers` is 0, `preprocessing_num_workers` is not a loader setting,
  framework defaults (Megatron 2);
- vocabulary: tasks (summarization, translation, masked image modelling), OpenMMLab config names, launch
  script names, dataset names that keep their size qualifier, public sizes of named variants and of word LMs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from schedmate.agents.advisor.knowledge import canonical_dataset, find_model, model_size_b, recurrent_lm_size
from schedmate.agents.advisor.static_extractor import extract_static

from .repo_files import write

# ----------------------------------------------------------------------------------------- batch


def test_micro_batch_wins_over_the_global_batch_in_flag_strings(tmp_path: Path) -> None:
    repo = write(tmp_path / "neox", {
        "train.py": ('"""Pretrain a decoder LM."""\nimport argparse\np = argparse.ArgumentParser()\n'
                     'p.add_argument("--micro-batch-size", type=int, default=1)\n'
                     'p.add_argument("--global-batch-size", type=int, default=64)\n'
                     'p.add_argument("--train-iters", type=int)\np.add_argument("--lr", type=float)\n'),
        "run.sh": "python train.py --global-batch-size 1024 --micro-batch-size 2 --train-iters 5000 --lr 1e-4\n",
    })
    f = extract_static(repo, "bash run.sh").fields
    assert (f["batch_size"], f["iterations"], f["iteration_type"]) == (2, 5000, "steps")


def test_a_per_device_default_beats_a_global_batch_given_on_the_command_line(tmp_path: Path) -> None:
    repo = write(tmp_path / "ft", {
        "ft.py": ('import argparse\nap = argparse.ArgumentParser()\nap.add_argument("--per_device_batch_size", type=int, '
                  'default=6)\nap.add_argument("--total_batch_size", type=int, default=96)\n'),
    })
    f = extract_static(repo, "torchrun --nproc_per_node 4 ft.py --total_batch_size 192").fields
    assert f["batch_size"] == 6


def test_deepspeed_json_micro_batch_and_its_optimizer_lr_over_the_script_flag(tmp_path: Path) -> None:
    repo = write(tmp_path / "ds", {
        "pretrain.py": ('"""Pretrain BLOOM-style LM with DeepSpeed."""\nimport argparse, deepspeed\n'
                        'p = argparse.ArgumentParser()\np.add_argument("--lr", type=float, default=1e-3)\n'
                        'p.add_argument("--num_epochs", type=int, default=1)\ndeepspeed.add_config_arguments(p)\n'),
        "zero2.json": ('{"train_batch_size": 256, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 8,'
                       ' "optimizer": {"type": "AdamW", "params": {"lr": 6e-5}},'
                       ' "scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 90000}}}'),
    })
    f = extract_static(repo, "deepspeed --num_gpus 8 pretrain.py --deepspeed_config zero2.json --lr 3e-4 "
                             "--num_epochs 2").fields
    assert (f["batch_size"], f["learning_rate"]) == (4, 6e-5)
    assert (f["iterations"], f["iteration_type"]) == (2, "epochs")  # the scheduler's step count is no budget


# ----------------------------------------------------------------------------------------- length


def test_configurator_globals_are_defaults_and_an_inclusive_loop_bound_adds_nothing(tmp_path: Path) -> None:
    repo = write(tmp_path / "tinylm", {
        "train.py": ('"""Train a small GPT."""\nimport pickle\nn_layer = 12\nn_embd = 768\nmax_iters = 100000\n'
                     'learning_rate = 6e-4\nbatch_size = 8\nexec(open("configurator.py").read())\n'
                     'vocab = None\nif os.path.exists("meta.pkl"):\n    vocab = pickle.load(open("meta.pkl", "rb"))["n"]\n'
                     'args = dict(n_layer=n_layer, n_embd=n_embd, vocab_size=vocab if vocab is not None else 50304)\n'
                     'for it in range(max_iters + 1):\n    pass\n'),
        "configurator.py": "# reads config files and --key=value\n",
        "config/small.py": "n_layer = 4\nn_embd = 256\nmax_iters = 3000\nlearning_rate = 1e-3\n",
    })
    s = extract_static(repo, "python train.py config/small.py --max_iters=1500")
    f = s.fields
    assert (f["iterations"], f["iteration_type"], f["learning_rate"]) == (1500, "steps", 1e-3)
    # the vocabulary is read from a file at run time: the size counts the stated layers only
    assert f["model_size_b"] == pytest.approx(12 * 4 * 256 ** 2 / 1e9)


def test_loop_counts_from_range_start_and_stop(tmp_path: Path) -> None:
    repo = write(tmp_path / "loops", {
        "a.py": ('import argparse\np = argparse.ArgumentParser()\np.add_argument("--epochs", type=int, default=40)\n'
                 'args = p.parse_args()\nfor epoch in range(1, args.epochs + 1):\n    pass\n'),
        "b.py": ('import torch\nstart_epoch = 0\nif resume:\n    start_epoch = torch.load("ck.pt")["epoch"]\n'
                 'for epoch in range(start_epoch, start_epoch + 150):\n    pass\n'),
    })
    assert extract_static(repo, "python a.py --epochs 12").fields["iterations"] == 12
    f = extract_static(repo, "python b.py").fields
    assert (f["iterations"], f["iteration_type"]) == (150, "epochs")


def test_a_scheduler_stretched_over_processes_is_not_the_training_length(tmp_path: Path) -> None:
    repo = write(tmp_path / "nt", {
        "run_ner.py": ('"""Token classification without Trainer."""\nimport argparse\nfrom accelerate import Accelerator\n'
                       'from transformers import get_scheduler\n\ndef main():\n    p = argparse.ArgumentParser()\n'
                       '    p.add_argument("--max_train_steps", type=int, default=None)\n'
                       '    p.add_argument("--num_train_epochs", type=int, default=3)\n    args = p.parse_args()\n'
                       '    acc = Accelerator()\n    sched = get_scheduler("linear", optimizer=None, num_warmup_steps=0,\n'
                       '        num_training_steps=args.max_train_steps * acc.num_processes)\n\nmain()\n'),
    })
    f = extract_static(repo, "accelerate launch --num_processes 4 run_ner.py --max_train_steps 800", gpus=4).fields
    assert (f["iterations"], f["iteration_type"]) == (800, "steps")


def test_sample_budget_over_global_batch_and_framework_default_workers(tmp_path: Path) -> None:
    repo = write(tmp_path / "mlm", {
        "pretrain_bert.py": ('"""Pretrain BERT with Megatron."""\nfrom megatron.training import pretrain\n'
                             'from megatron.core.models.bert import BertModel\n'),
        "examples/bert.sh": ('GBS=${GBS:-256}\npython pretrain_bert.py --num-layers 24 --hidden-size 1024 '
                             '--micro-batch-size 8 --global-batch-size $GBS --train-samples 1000000 --lr 1e-4\n'),
    })
    f = extract_static(repo, "GBS=512 bash examples/bert.sh").fields
    assert (f["iterations"], f["iteration_type"]) == (1000000 // 512, "steps")
    assert (f["batch_size"], f["num_workers"]) == (8, 2)


def test_per_epoch_step_caps_multiply_with_epochs(tmp_path: Path) -> None:
    repo = write(tmp_path / "caps", {
        "recipe.yaml": "epochs: 3\nmax_steps_per_epoch: 200\nbatch_size: 4\n",
        "ctr.py": ('"""Click-through-rate model."""\nimport argparse\np = argparse.ArgumentParser()\n'
                   'p.add_argument("--nepochs", type=int, default=1)\np.add_argument("--num-batches", type=int, default=0)\n'
                   'args = p.parse_args()\nfor k in range(args.nepochs):\n    for j, b in enumerate(loader):\n'
                   '        if j >= args.num_batches:\n            break\n'),
        "samples.py": ('import argparse, math\np = argparse.ArgumentParser()\np.add_argument("--epochs", type=int, default=5)\n'
                       'p.add_argument("--samples", type=int, default=100000)\nargs = p.parse_args()\n\ndef loader():\n'
                       '    num_batches = math.ceil(args.samples / 256)\n    return num_batches\n\nloader()\n'),
    })
    f = extract_static(repo, "tune run full_finetune_single_device --config recipe.yaml").fields
    assert (f["iterations"], f["iteration_type"]) == (600, "steps")
    f = extract_static(repo, "python ctr.py --nepochs 2 --num-batches 5000").fields
    assert (f["iterations"], f["iteration_type"]) == (10000, "steps")
    f = extract_static(repo, "python samples.py").fields  # ceil(samples / batch) is one epoch's size
    assert (f["iterations"], f["iteration_type"]) == (5, "epochs")


def test_composer_time_strings(tmp_path: Path) -> None:
    repo = write(tmp_path / "foundry", {
        "main.py": '"""Train with Composer."""\nimport sys\nfrom omegaconf import OmegaConf\n',
        "yamls/a.yaml": "max_duration: 12000ba\ndevice_train_microbatch_size: 4\nglobal_train_batch_size: 256\n",
        "yamls/b.yaml": "max_duration: 3ep\ndevice_train_microbatch_size: 2\n",
        "yamls/c.yaml": "max_duration: 2000000000tok\n",
    })
    f = extract_static(repo, "composer main.py yamls/a.yaml").fields
    assert (f["iterations"], f["iteration_type"], f["batch_size"]) == (12000, "steps", 4)
    f = extract_static(repo, "composer main.py yamls/b.yaml max_duration=5ep").fields
    assert (f["iterations"], f["iteration_type"]) == (5, "epochs")
    assert extract_static(repo, "composer main.py yamls/c.yaml").fields["iterations"] is None  # tokens: no count


def test_epochs_and_max_steps_in_one_section_stop_at_whichever_comes_first(tmp_path: Path) -> None:
    repo = write(tmp_path / "lit", {
        "litgpt/__main__.py": "def main():\n    pass\n",
        "cfg/short.yaml": ("data:\n  class_path: litgpt.data.Alpaca\ntrain:\n  global_batch_size: 128\n"
                           "  micro_batch_size: 4\n  epochs: 1\n  max_steps: 2000\n"),
        "cfg/long.yaml": ("data:\n  class_path: litgpt.data.Alpaca\ntrain:\n  global_batch_size: 16\n"
                          "  micro_batch_size: 4\n  epochs: 1\n  max_steps: 2000\n"),
    })
    # 52k Alpaca examples / 128 = 407 steps per epoch < 2000: the epoch ends first
    f = extract_static(repo, "litgpt finetune checkpoints/meta-llama/Llama-2-7b-hf --config cfg/short.yaml").fields
    assert (f["iterations"], f["iteration_type"]) == (1, "epochs")
    # 52k / 16 = 3251 steps per epoch > 2000: the step limit ends first
    f = extract_static(repo, "litgpt finetune checkpoints/meta-llama/Llama-2-7b-hf --config cfg/long.yaml").fields
    assert (f["iterations"], f["iteration_type"]) == (2000, "steps")


# ----------------------------------------------------------------------------------------- code and configs


def test_lr_annealed_inside_the_loop_is_not_the_starting_rate(tmp_path: Path) -> None:
    repo = write(tmp_path / "rnn", {
        "main.py": ('import argparse\np = argparse.ArgumentParser()\np.add_argument("--lr", type=float, default=10)\n'
                    'p.add_argument("--epochs", type=int, default=5)\nargs = p.parse_args()\nlr = args.lr\n'
                    'for epoch in range(1, args.epochs + 1):\n    val_loss = evaluate()\n'
                    '    if val_loss > best_val_loss:\n        lr /= 2.0\n    else:\n        best_val_loss = val_loss\n'),
    })
    assert extract_static(repo, "python main.py --lr 4").fields["learning_rate"] == 4.0


def test_python_module_config_with_a_dataclass_instance(tmp_path: Path) -> None:
    repo = write(tmp_path / "seg", {
        "train.py": ('"""3D segmentation."""\nimport argparse, importlib\nfrom torch.utils.data import DataLoader\n\n'
                     'def main():\n    ap = argparse.ArgumentParser()\n    ap.add_argument("--config", default="exps.default")\n'
                     '    ap.add_argument("--max_epochs", type=int, default=None)\n    args = ap.parse_args()\n'
                     '    cfg = importlib.import_module(args.config).cfg\n'
                     '    loader = DataLoader(ds, batch_size=cfg.batch_size, num_workers=cfg.workers)\n\nmain()\n'),
        "exps/__init__.py": "",
        "exps/default.py": ('from dataclasses import dataclass\n\n@dataclass\nclass Settings:\n    net: str = "UNETR"\n'
                            '    data_dir: str = "/datasets/brats2023"\n    batch_size: int = 2\n    lr: float = 3e-4\n'
                            '    max_epochs: int = 100\n    workers: int = 4\n\ncfg = Settings()\n'),
        "exps/big.py": 'from exps.default import Settings\n\ncfg = Settings(net="SwinUNETR", lr=1e-4, workers=16)\n',
    })
    f = extract_static(repo, "python train.py --config exps.big --max_epochs 250").fields
    assert (f["model_name"], f["dataset"], f["learning_rate"], f["batch_size"]) == ("swin-unetr", "brats", 1e-4, 2)
    assert (f["iterations"], f["iteration_type"], f["num_workers"]) == (250, "epochs", 16)
    assert f["model_size_b"] == pytest.approx(0.062)


def test_project_get_cfg_sets_yacs_defaults_under_the_yaml(tmp_path: Path) -> None:
    repo = write(tmp_path / "det", {
        "train_net.py": ('"""Detectron2 trainer."""\nfrom detectron2.engine import default_argument_parser\n'
                         'from project_defaults import get_cfg\n\ndef main():\n    cfg = get_cfg()\n\nmain()\n'),
        "project_defaults.py": ('from detectron2.config import get_cfg as base\n\ndef get_cfg():\n    cfg = base()\n'
                                '    cfg.DATALOADER.NUM_WORKERS = 3\n    cfg.SOLVER.BASE_LR = 0.005\n    return cfg\n'),
        "configs/retinanet_R_50_FPN_1x.yaml": "SOLVER:\n  BASE_LR: 0.01\n  MAX_ITER: 90000\n  IMS_PER_BATCH: 16\n",
    })
    f = extract_static(repo, "python train_net.py --config-file configs/retinanet_R_50_FPN_1x.yaml").fields
    assert (f["num_workers"], f["learning_rate"]) == (3, 0.01)  # the YAML beats the project default
    assert f["model_name"].startswith("retinanet-r50") and f["model_size_b"] == pytest.approx(0.0378)


def test_mmengine_auto_scale_lr(tmp_path: Path) -> None:
    repo = write(tmp_path / "mmpose", {
        "tools/train.py": ('import argparse\np = argparse.ArgumentParser()\np.add_argument("config")\n'
                           'p.add_argument("--auto-scale-lr", action="store_true")\np.add_argument("--launcher")\n'),
        "configs/base.py": ("auto_scale_lr = dict(base_batch_size=256, enable=False)\n"
                            "optim_wrapper = dict(optimizer=dict(type='AdamW', lr=0.001))\n"
                            "train_dataloader = dict(batch_size=64, num_workers=4)\n"
                            "model = dict(type='TopdownPoseEstimator')\n"),
    })
    cmd = "python -m torch.distributed.launch --nproc_per_node=2 tools/train.py configs/base.py --launcher pytorch"
    assert extract_static(repo, cmd).fields["learning_rate"] == pytest.approx(0.001)
    assert extract_static(repo, cmd + " --auto-scale-lr").fields["learning_rate"] == pytest.approx(0.001 * 2 * 64 / 256)


def test_defaults_from_a_helper_and_imports_through_pythonpath(tmp_path: Path) -> None:
    repo = write(tmp_path / "contrastive", {
        "src/trainer/main.py": ('"""Contrastive image-text training (CLIP)."""\nfrom trainer.args import parse_args\n\n'
                                'def main():\n    args = parse_args()\n\nmain()\n'),
        "src/trainer/args.py": ('import argparse\n\ndef defaults(arch):\n    if "vit" in arch:\n'
                                '        return {"lr": 1e-3, "eps": 1e-6}\n    return {"lr": 1e-3, "eps": 1e-8}\n\n'
                                'def parse_args():\n    p = argparse.ArgumentParser()\n    p.add_argument("--lr", type=float, default=None)\n'
                                '    p.add_argument("--model", default="RN50")\n    args = p.parse_args()\n'
                                '    fallback = defaults(args.model)\n    return args\n'),
    })
    f = extract_static(repo, "PYTHONPATH=src python src/trainer/main.py --model RN50").fields
    assert f["learning_rate"] == 1e-3
    assert extract_static(repo, "PYTHONPATH=src python src/trainer/main.py --lr 5e-4").fields["learning_rate"] == 5e-4


# ----------------------------------------------------------------------------------------- workers


def test_loader_workers_library_defaults(tmp_path: Path) -> None:
    repo = write(tmp_path / "w", {
        "plain.py": ('from torch.utils.data import DataLoader\n\ndef main():\n    train_loader = DataLoader(ds, batch_size=32, '
                     'shuffle=True)\n    val_loader = DataLoader(vs, batch_size=64, num_workers=8)\n\nmain()\n'),
        "hf.py": ('from transformers import HfArgumentParser, TrainingArguments\nfrom dataclasses import dataclass\n\n'
                  '@dataclass\nclass DataArgs:\n    preprocessing_num_workers: int = 12\n\n'
                  'def main():\n    HfArgumentParser((DataArgs, TrainingArguments))\n\nmain()\n'),
    })
    assert extract_static(repo, "python plain.py").fields["num_workers"] == 0  # the eval loader's 8 does not count
    assert extract_static(repo, "python hf.py --preprocessing_num_workers 24").fields["num_workers"] == 0


# ----------------------------------------------------------------------------------------- vocabulary


@pytest.mark.parametrize(("readme", "task"), [
    ("# Abstractive summarization of news articles with BART", "summarization"),
    ("# English-German machine translation fine-tuning", "translation"),
    ("# Masked autoencoder pre-training for vision transformers", "masked-image-modeling"),
])
def test_task_cues(tmp_path: Path, readme: str, task: str) -> None:
    repo = write(tmp_path / "t", {"README.md": readme + "\n", "train.py": "import torch\n"})
    assert extract_static(repo, "python train.py").fields["task_type"] == task


def test_an_error_metric_named_mae_is_not_masked_image_modelling(tmp_path: Path) -> None:
    repo = write(tmp_path / "reg", {"README.md": "# House prices\nWe report MAE on the test split.\n",
                                    "train.py": 'metrics = {"MAE": 0.0}\nimport torchvision\n'})
    assert extract_static(repo, "python train.py").fields["task_type"] != "masked-image-modeling"


def test_openmmlab_config_names_state_the_model_not_its_backbone(tmp_path: Path) -> None:
    repo = write(tmp_path / "mmseg", {
        "tools/train.py": 'import argparse\np = argparse.ArgumentParser()\np.add_argument("config")\n',
        "configs/_base_/models/pspnet_r50-d8.py": ("model = dict(type='EncoderDecoder', pretrained='open-mmlab://resnet50_v1c',\n"
                                                  "    backbone=dict(type='ResNetV1c', depth=50), decode_head=dict(type='PSPHead'))\n"),
        "configs/pspnet/pspnet_r50-d8_4xb4-40k_voc12aug-512x512.py": (
            "_base_ = ['../_base_/models/pspnet_r50-d8.py']\ntrain_cfg = dict(type='IterBasedTrainLoop', max_iters=40000)\n"
            "train_dataloader = dict(batch_size=4, num_workers=4)\n"),
    })
    f = extract_static(repo, "python tools/train.py configs/pspnet/pspnet_r50-d8_4xb4-40k_voc12aug-512x512.py").fields
    assert f["model_name"] == "pspnet-r50-d8"
    assert (f["iterations"], f["iteration_type"], f["batch_size"]) == (40000, "steps", 4)


def test_a_launch_script_named_after_its_model_beats_prose_in_its_comments(tmp_path: Path) -> None:
    repo = write(tmp_path / "mg", {
        "pretrain_gpt.py": '"""Pretrain GPT."""\nimport argparse\n',
        "examples/train_gpt_6.7b.sh": "# GPT-3 style model\npython pretrain_gpt.py --micro-batch-size 1\n",
    })
    f = extract_static(repo, "bash examples/train_gpt_6.7b.sh").fields
    assert (f["model_name"], f["model_size_b"]) == ("gpt-6.7b", 6.7)
    # a bare family in the file name says less than a sized name in the comments
    write(repo, {"examples/train_llama.sh": "# Llama-2-13B on 4 nodes\npython pretrain_gpt.py --micro-batch-size 1\n"})
    assert extract_static(repo, "bash examples/train_llama.sh").fields["model_name"] == "llama-2-13b"


def test_stated_dimensions_with_vocabulary_beat_a_rounded_size_in_a_run_name(tmp_path: Path) -> None:
    repo = write(tmp_path / "run", {
        "train.py": '"""LM pretraining."""\nimport sys\n',
        "cfg.yaml": "run_name: mpt-3b-web\nmodel:\n  name: mpt_causal_lm\n  d_model: 2560\n  n_layers: 32\n  vocab_size: 50368\n",
    })
    f = extract_static(repo, "composer train.py cfg.yaml").fields
    assert f["model_name"] == "mpt-3b"
    assert f["model_size_b"] == pytest.approx((12 * 32 * 2560 ** 2 + 50368 * 2560) / 1e9)


def test_names_and_public_sizes() -> None:
    assert find_model("tf_efficientnet_b3")[0] == "efficientnet-b3"  # timm's TF port: the same network
    assert find_model("mae_vit_large_patch16")[0] == "mae-vit-l-16"
    assert find_model("vit-base-p16_64xb64")[0] == "vit-b-16"
    assert model_size_b("mask-rcnn-r101-fpn") == (0.063, "public size of mask-rcnn-r101")
    assert model_size_b("stable-diffusion-xl")[0] == pytest.approx(2.57)  # the UNet that is trained
    assert model_size_b("flan-t5-large")[0] == pytest.approx(0.77)
    assert model_size_b("clip-rn101")[0] == pytest.approx(0.120)
    assert (canonical_dataset("HuggingFaceH4/ultrachat_200k"), canonical_dataset("ultrachat")) == ("ultrachat-200k",
                                                                                                   "ultrachat")
    assert canonical_dataset("databricks/databricks-dolly-15k") == "databricks-dolly-15k"
    assert canonical_dataset("mosaicml/dolly_hhrlhf") == "dolly-hhrlhf"
    assert canonical_dataset("criteo_terabyte") == "criteo-tb"


def test_word_lm_size_from_embedding_hidden_layers_and_corpus_vocabulary(tmp_path: Path) -> None:
    # 2-layer GRU, emsize 400, nhid 400, untied, on Penn Treebank (10k words)
    gru = 10000 * 400 + (3 * (400 * 800 + 800)) * 2 + 400 * 10000 + 10000
    assert recurrent_lm_size("GRU", 10000, 400, 400, 2, tied=False) == pytest.approx(gru / 1e9)
    repo = write(tmp_path / "wlm", {
        "main.py": ('import argparse\np = argparse.ArgumentParser()\np.add_argument("--data", default="./data/penn")\n'
                    'p.add_argument("--model", default="LSTM")\np.add_argument("--emsize", type=int, default=200)\n'
                    'p.add_argument("--nhid", type=int, default=200)\np.add_argument("--nlayers", type=int, default=2)\n'
                    'p.add_argument("--tied", action="store_true")\np.add_argument("--clip", type=float, default=0.25)\n'),
    })
    f = extract_static(repo, "python main.py --data ./data/ptb --model GRU --emsize 400 --nhid 400 --clip 0.5").fields
    assert (f["dataset"], f["model_size_b"]) == ("ptb", pytest.approx(gru / 1e9))
