"""Static extractor on styles the maintainers' held-out set found weak (issue 23, item 4), and its confidence.

Small repositories written here in our own words: gin configs (files, includes, macros, command-line
bindings, `@gin.configurable` defaults), model size from configuration arithmetic (FFN width, gated MLPs,
grouped-query attention, tied heads, Meta's `multiple_of`, encoder-decoder depth), exact public counts of hub
checkpoints whose names round, an axolotl-style YAML recipe, a HF model config given as `--config_name x.json`,
and the per-field confidence / abstention.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schedmate.agents.advisor.facts import confidence, evidence_tier
from schedmate.agents.advisor.knowledge import checkpoint_size_b, find_model, llama_ffn, model_size_b, size_from_dims
from schedmate.agents.advisor.static_extractor import extract_static
from schedmate.evals.harness.devset_advisor import confidence_report, field_right

from .repo_files import write


def _check(fields: dict, expected: dict) -> None:
    wrong = {k: (fields.get(k), v) for k, v in expected.items() if not field_right(k, fields.get(k), v)}
    assert not wrong, f"(got, expected): {wrong}"


GIN_TRAIN = ('"""Train an image classifier; every hyperparameter is bound with gin."""\nimport gin\n'
             "from absl import app, flags\n\nFLAGS = flags.FLAGS\n"
             "flags.DEFINE_multi_string('gin_file', None, 'Gin files.')\n"
             "flags.DEFINE_multi_string('gin_bindings', [], 'Extra bindings.')\n\n\n"
             "@gin.configurable\ndef train(model_name='resnet50', dataset='cifar10', batch_size=32, learning_rate=1e-3,\n"
             "          num_steps=1000, num_workers=4):\n    pass\n\n\n"
             "def main(argv):\n    gin.parse_config_files_and_bindings(FLAGS.gin_file, FLAGS.gin_bindings)\n    train()\n\n\n"
             "if __name__ == '__main__':\n    app.run(main)\n")


def test_gin_files_includes_macros_and_command_line_bindings(tmp_path: Path) -> None:
    repo = write(tmp_path / "gin-cls", {
        "train.py": GIN_TRAIN,
        "configs/base.gin": ("# shared settings\nSTEPS = 50_000\ntrain.num_steps = %STEPS\n"
                             "train.batch_size = 64\ntrain.learning_rate = 0.001\ntrain.dataset = 'imagenet2012'\n"),
        "configs/r101.gin": "include 'configs/base.gin'\n\ntrain.batch_size = 256\ntrain.model_name = 'resnet101'\n",
    })
    f = extract_static(repo, "python train.py --gin_file=configs/r101.gin "
                             "--gin_bindings='train.learning_rate = 0.1'").fields
    _check(f, {"model_name": "resnet-101", "dataset": "imagenet-1k", "batch_size": 256, "learning_rate": 0.1,
               "iterations": 50000, "iteration_type": "steps", "num_workers": 4, "model_size_b": 0.0445})
    # no file binds the workers or the model: the configurable's own defaults count
    f = extract_static(repo, "python train.py --gin_file configs/base.gin --gin.train.batch_size=128").fields
    _check(f, {"model_name": "resnet-50", "batch_size": 128, "learning_rate": 0.001, "num_workers": 4})


def test_hf_model_config_json_with_grouped_query_attention(tmp_path: Path) -> None:
    repo = write(tmp_path / "tiny-llama", {
        "pretrain.py": ('"""Pre-train a decoder-only language model from scratch."""\nimport argparse\n'
                        "from transformers import AutoConfig, AutoModelForCausalLM\n"
                        "p = argparse.ArgumentParser()\np.add_argument('--config_name', default=None)\n"
                        "p.add_argument('--per_device_train_batch_size', type=int, default=8)\n"
                        "p.add_argument('--learning_rate', type=float, default=4e-4)\n"
                        "p.add_argument('--max_steps', type=int, default=100000)\nargs = p.parse_args()\n"
                        "model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(args.config_name))\n"),
        # TinyLlama-1.1B's shape: 22 layers, d 2048, FFN 5632 (SwiGLU), 32 heads over 4 KV heads, untied head
        "configs/tinyllama.json": json.dumps({"architectures": ["LlamaForCausalLM"], "hidden_size": 2048,
                                              "intermediate_size": 5632, "num_hidden_layers": 22,
                                              "num_attention_heads": 32, "num_key_value_heads": 4,
                                              "hidden_act": "silu", "vocab_size": 32000,
                                              "tie_word_embeddings": False}),
    })
    f = extract_static(repo, "torchrun --nproc_per_node 8 pretrain.py --config_name configs/tinyllama.json "
                             "--per_device_train_batch_size 16").fields
    _check(f, {"model_size_b": 1.10, "batch_size": 16, "learning_rate": 4e-4, "iterations": 100000})


def test_meta_style_model_args_with_multiple_of_and_tied_embeddings(tmp_path: Path) -> None:
    repo = write(tmp_path / "llama-1b", {
        "train.py": "import sys, yaml\ncfg = yaml.safe_load(open(sys.argv[2]))\n",
        # a Llama-3.2-1B-like shape: FFN from multiple_of (8192), 8 KV heads, 128k vocabulary, tied
        "configs/llama_small.yaml": ("model:\n  dim: 2048\n  n_layers: 16\n  n_heads: 32\n  n_kv_heads: 8\n"
                                     "  multiple_of: 1024\n  ffn_dim_multiplier: 1.5\n  vocab_size: 128256\n"
                                     "  tie_embeddings: true\ntraining:\n  batch_size: 4\n  lr: 3.0e-4\n"
                                     "  steps: 20000\n"),
    })
    f = extract_static(repo, "torchrun --nproc_per_node 8 train.py --config configs/llama_small.yaml").fields
    _check(f, {"model_size_b": 1.24, "batch_size": 4, "learning_rate": 3e-4, "iterations": 20000})


def test_transformer_arithmetic() -> None:
    assert llama_ffn(4096, 1024, 1.3) == 14336  # Llama-3-8B
    assert llama_ffn(4096, 256) == 11008  # Llama-2-7B
    # Llama-2-7B: 32 x (4h^2 + 3 x h x 11008) + untied 32000-token head
    assert size_from_dims(32, 4096, 32000, ffn=11008, gated=True, tied=False) == pytest.approx(6.74, rel=0.01)
    # Llama-3-8B: grouped-query attention (8 of 32 heads) and a 128256-token vocabulary
    assert size_from_dims(32, 4096, 128256, ffn=14336, heads=32, kv_heads=8, gated=True,
                          tied=False) == pytest.approx(8.03, rel=0.01)
    # GPT-2 small: plain 4h MLP, tied head -- the classic 12 L h^2 + V h
    assert size_from_dims(12, 768, 50257) == pytest.approx(0.124, rel=0.02)
    # T5-base: 12 encoder + 12 decoder layers (cross-attention), d_ff 3072, shared 32128 vocabulary
    assert size_from_dims(12, 768, 32128, ffn=3072, decoder_layers=12) == pytest.approx(0.223, rel=0.03)


@pytest.mark.parametrize(("text", "size"), [
    ("google/gemma-7b", 8.54), ("google/gemma-2-9b-it", 9.24), ("meta-llama/Llama-3.2-1B-Instruct", 1.24),
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", 46.7), ("microsoft/Phi-3-mini-4k-instruct", 3.82),
    ("Qwen/Qwen2.5-7B-Instruct", 7.62), ("meta-llama/Llama-2-7b-hf", 6.74), ("HuggingFaceTB/SmolLM2-360M", 0.362),
    ("allenai/OLMo-7B", 6.89), ("bert-base-uncased", 0.110), ("resnet50", 0.0256), ("EleutherAI/pythia-410m", 0.41),
])
def test_named_checkpoints_give_their_public_counts(text: str, size: float) -> None:
    found = find_model(text)
    assert found is not None
    got = model_size_b(*found)
    assert got is not None and got[0] == pytest.approx(size, rel=0.02)


def test_checkpoint_table_drops_release_and_tuning_suffixes() -> None:
    assert checkpoint_size_b("llama-3.1-8b-instruct") == (8.03, "llama-3.1-8b")
    assert checkpoint_size_b("qwen2.5-0.5b-instruct") == (0.494, "qwen-2.5-0.5b")
    assert checkpoint_size_b("llama-2-7b-chat-hf") == (6.74, "llama-2-7b")
    assert checkpoint_size_b("my-llama-7b") is None


def test_axolotl_style_yaml_recipe(tmp_path: Path) -> None:
    repo = write(tmp_path / "axo", {
        "README.md": "# QLoRA recipes\nFine-tune chat models with YAML recipes.\n",
        "examples/llama-3/qlora.yml": ("base_model: NousResearch/Meta-Llama-3-8B\nload_in_4bit: true\nadapter: qlora\n"
                                       "datasets:\n  - path: yahma/alpaca-cleaned\n    type: alpaca\n"
                                       "sequence_len: 4096\ngradient_accumulation_steps: 4\nmicro_batch_size: 2\n"
                                       "num_epochs: 4\noptimizer: paged_adamw_32bit\nlearning_rate: 0.0002\n"
                                       "dataloader_num_workers: 4\n"),
    })
    f = extract_static(repo, "accelerate launch -m axolotl.cli.train examples/llama-3/qlora.yml").fields
    _check(f, {"model_name": "llama-3-8b", "model_size_b": 8.03, "dataset": "alpaca-cleaned", "batch_size": 2,
               "learning_rate": 2e-4, "iterations": 4, "iteration_type": "epochs", "num_workers": 4})


def test_confidence_tiers_and_abstention(tmp_path: Path) -> None:
    assert evidence_tier("batch_size", "cli", "<command>") == "command"
    assert evidence_tier("batch_size", "cli", "run.sh") == "script"
    assert evidence_tier("model_size_b", "derived", "<public model size>") == "public-size"
    assert evidence_tier("model_size_b", "derived", "configs/x.json") == "arith"
    assert evidence_tier("model_name", "name:docstring", "train.py") == "name"
    table = {"batch_size": {"command": (19, 20), "code": (1, 4)}}
    assert confidence("batch_size", "command", table) > confidence("batch_size", "code", table)
    assert 0.0 < confidence("learning_rate", "unseen-tier", table) < 1.0
    repo = write(tmp_path / "gin-cls", {"train.py": GIN_TRAIN,
                                        "configs/base.gin": "train.batch_size = 64\ntrain.dataset = 'imagenet2012'\n"})
    res = extract_static(repo, "python train.py --gin_file configs/base.gin --gin_bindings='train.num_steps = 10'")
    assert res.tiers["iterations"] == "command" and res.tiers["batch_size"] == "config"
    assert all(0.0 <= c <= 1.0 for c in res.confidence.values())
    assert res.abstaining(1.01) == {k: None for k in res.fields}
    assert res.abstaining(0.0) == res.fields
    assert extract_static(repo, "python train.py --gin_file configs/base.gin", abstain_below=1.01).fields["batch_size"] is None


def test_confidence_report_picks_a_threshold_only_when_it_pays() -> None:
    def job(repo: str, marks: list[tuple[str, bool]]) -> dict:
        return {"repo": repo, "fields": {f"f{i}": {"ok": ok, "tier": tier, "confidence": None}
                                         for i, (tier, ok) in enumerate(marks)}}
    # `name` is wrong half the time in every repository, `command` always right: abstaining on `name` pays
    per_job = [job(f"r{k}", [("command", True)] * 24 + [("name", k % 2 == 0)]) for k in range(8)]
    rep = confidence_report(per_job)
    assert rep["threshold"]["chosen"] > 0
    assert rep["threshold"]["at_chosen"]["accuracy"] > rep["threshold"]["at_0"]["accuracy"]
    assert rep["threshold"]["at_chosen"]["coverage"] >= 0.95 * rep["threshold"]["at_0"]["coverage"]
