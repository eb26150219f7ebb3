"""Scheduling Advisor: static extractor, agent plumbing, retrieval, estimation and evaluation helpers.

* static extractor: hand-written repositories for each way a value can be stated, and a measured
  field-accuracy floor on generated repositories (a seed used neither for development nor for the
  reported evaluation);
* agent: langchain's fake chat model (tool calls really executed against the sandbox), the stub
  OpenAI server for outages; step limit, timeout, rejection of ungrounded values, static fallback;
* retriever: the real MiniLM embedder and a real redis-server (threshold and top-k semantics);
* estimator: mean/p50/p90 of matches and the explicit no-match fallback.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage

from schedmate.agents.advisor.agent import (
    AgentConfig,
    MetadataExtractor,
    ScriptedToolChoice,
    merge_with_static,
)
from schedmate.agents.advisor.baselines import EBMEstimator, HistoryRow, SameUserGpusEstimator
from schedmate.agents.advisor.estimator import JobQuery, MedianFallback, estimate_from_matches
from schedmate.agents.advisor.launch import parse_launch
from schedmate.agents.advisor.retriever import HistoricalJob, SimilarJobRetriever, fingerprint_text
from schedmate.agents.advisor.static_extractor import extract_static
from schedmate.embeddings.store import JobOutcome, JobRecord, JobStore, Match
from schedmate.evals.harness.advisor import (
    SCORED_FIELDS,
    choose_threshold,
    field_accuracy,
    relative_errors,
    share_within,
)
from schedmate.synthetic.jobs import generate_job_corpus
from schedmate.workload import WorkloadMetadata

from .llm_stub import Reply, StubLLM
from .repo_files import write

# ----------------------------------------------------------------------------------------- helpers




ARGPARSE_TRAIN = '''"""Train a ResNet-50 image classifier on ImageNet."""
import argparse

import torch



def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--arch", type=str, default="vit_base_patch16_224")
    p.add_argument("--data-dir", type=str, default="/datasets/imagenet")
    p.add_argument("-b", "--batch-size", type=int, default=256)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--epochs", type=int, default=90)
    p.add_argument("-j", "--workers", type=int, default=8)
    p.add_argument("--amp", action="store_true")
    return p.parse_args()


def main():
    args = get_args()
    loader = torch.utils.data.DataLoader(None, batch_size=args.batch_size, num_workers=args.workers)


def build_cifar(batch_size=128, workers=2):
    """legacy, unused"""
    return torch.utils.data.DataLoader(None, batch_size=512, num_workers=2)


if __name__ == "__main__":
    main()
'''


@pytest.fixture
def argparse_repo(tmp_path: Path) -> Path:
    return write(tmp_path / "argparse", {
        "train.py": ARGPARSE_TRAIN,
        "scripts/train.sh": ('#!/bin/bash\nset -e\nMODEL=resnet50\n# torchrun train.py --arch vit_large\n'
                             'torchrun --nproc_per_node=4 train.py \\\n  --arch $MODEL \\\n  -b 64 --amp \\\n'
                             '  --epochs ${EPOCHS:-30}\n'),
        "README.md": "# cls\n\nImage classification.\n\n## Notes\nThe reference run used a batch size of 512 and 300 epochs.\n",
    })


def test_argparse_defaults_cli_overrides_and_shell_variables(argparse_repo: Path) -> None:
    s = extract_static(argparse_repo, "bash scripts/train.sh")
    assert s.launch.entry == "train.py" and s.launch.launcher == "torchrun"
    f = s.fields
    assert f["model_name"] == "resnet-50"  # $MODEL expanded; beats the misleading default
    assert f["batch_size"] == 64 and s.evidence["batch_size"].kind == "cli"  # short flag -b mapped to its dest
    assert f["iterations"] == 30 and f["iteration_type"] == "epochs"  # ${EPOCHS:-30}
    assert f["learning_rate"] == 0.1 and s.evidence["learning_rate"].kind == "argparse_default"
    assert f["num_workers"] == 8  # the unused legacy helper's literal 2 does not count
    assert f["dataset"] == "imagenet-1k" and f["task_type"] == "image-classification"
    assert f["model_size_b"] == pytest.approx(0.0256)
    assert s.evidence["batch_size"].source == "scripts/train.sh"
    assert any("256" in b for b in s.evidence["batch_size"].beaten)
    assert s.metadata is not None


def test_yaml_config_with_base_and_dotted_overrides(tmp_path: Path) -> None:
    repo = write(tmp_path / "yaml", {
        "train.py": ('"""BERT fine-tuning for question answering on SQuAD."""\nimport argparse\nimport yaml\n\n'
                     'def main():\n    p = argparse.ArgumentParser()\n    p.add_argument("--config")\n'
                     '    p.add_argument("--opts", nargs="*", default=[])\n    p.parse_args()\n'),
        "configs/base.yaml": "model:\n  name: bert-base-uncased\ntrain:\n  batch_size: 16\n  epochs: 2\n  lr: 3.0e-5\n",
        "configs/exp.yaml": "base: configs/base.yaml\ndata:\n  dataset: rajpurkar/squad\n  num_workers: 4\ntrain:\n  batch_size: 32\n",
        "configs/old/exp_old.yaml": "train:\n  batch_size: 8\n  epochs: 10\n",
    })
    s = extract_static(repo, "python train.py --config configs/exp.yaml --opts train.epochs=3 train.lr=5e-5")
    f = s.fields
    assert (f["model_name"], f["dataset"], f["task_type"]) == ("bert-base-uncased", "squad", "question-answering")
    assert f["batch_size"] == 32 and s.evidence["batch_size"].source == "configs/exp.yaml"
    assert (f["iterations"], f["iteration_type"]) == (3, "epochs") and s.evidence["iterations"].kind == "cli"
    assert f["learning_rate"] == pytest.approx(5e-5)
    assert f["num_workers"] == 4
    assert "configs/old/exp_old.yaml" not in s.files  # dead config never loaded


def test_hydra_defaults_experiment_and_cli(tmp_path: Path) -> None:
    repo = write(tmp_path / "hydra", {
        "src/train.py": ('"""Train."""\nimport hydra\n\n@hydra.main(config_path="../conf", config_name="config", '
                         'version_base=None)\ndef main(cfg):\n    pass\n'),
        "conf/config.yaml": "defaults:\n  - model: resnet18\n  - dataset: imagenet\n  - trainer: default\n  - _self_\nseed: 1\n",
        "conf/model/resnet18.yaml": "arch: resnet18\n",
        "conf/model/convnext.yaml": "arch: convnext_base\n",
        "conf/dataset/imagenet.yaml": "data_root: /datasets/imagenet\nworkers: 4\n",
        "conf/trainer/default.yaml": "batch_size: 32\nmax_epochs: 100\nlr: 0.001\n",
        "conf/experiment/big.yaml": ("# @package _global_\ndefaults:\n  - override /model: convnext\n\n"
                                     "trainer:\n  batch_size: 128\n"),
    })
    s = extract_static(repo, "python src/train.py +experiment=big trainer.max_epochs=30 dataset.workers=12")
    f = s.fields
    assert f["model_name"] == "convnext-base"  # selected by the experiment's override
    assert f["batch_size"] == 128 and f["iterations"] == 30 and f["num_workers"] == 12
    assert f["learning_rate"] == 0.001 and f["dataset"] == "imagenet-1k"
    assert "conf/model/resnet18.yaml" not in s.files


def test_constants_modules_with_environment_override(tmp_path: Path) -> None:
    repo = write(tmp_path / "consts", {
        "finetune.py": ('"""Instruction fine-tuning (SFT) of Qwen on Alpaca."""\nfrom config.hparams import BATCH_SIZE, LR, '
                        'MAX_STEPS\nfrom config import data_cfg\n\ndef main():\n    pass\n'),
        "config/__init__.py": "",
        "config/hparams.py": ('import os\n\nBATCH_SIZE = 2\nLR = 2e-5\nMAX_STEPS = int(os.environ.get("MAX_STEPS", 100))\n'
                              'MODEL = "/mnt/models/Qwen2.5-14B"\n'),
        "config/data_cfg.py": 'DATA_PATH = "tatsu-lab/alpaca"\nNUM_WORKERS = 4\n',
        "config/legacy.py": "BATCH_SIZE = 64\nLR = 1.0\n",
        "run.slurm": "#!/bin/bash\n#SBATCH --nodes=2\nexport MAX_STEPS=1500\nsrun torchrun --nproc_per_node=8 finetune.py\n",
    })
    s = extract_static(repo, "sbatch run.slurm")
    f = s.fields
    assert f["iterations"] == 1500 and s.evidence["iterations"].kind == "env"
    assert s.evidence["iterations"].source == "run.slurm"
    assert (f["batch_size"], f["learning_rate"], f["num_workers"]) == (2, 2e-5, 4)
    assert (f["model_name"], f["dataset"], f["task_type"]) == ("qwen-2.5-14b", "alpaca", "instruction-finetuning")
    assert s.launch.sbatch.get("nodes") == "2"


def test_hf_dataclasses_and_library_defaults(tmp_path: Path) -> None:
    repo = write(tmp_path / "hf", {
        "run_qa.py": ('"""Question answering fine-tuning."""\nfrom dataclasses import dataclass, field\n'
                      'from transformers import HfArgumentParser, TrainingArguments, AutoModelForQuestionAnswering\n\n'
                      '@dataclass\nclass ModelArguments:\n    model_name_or_path: str = field(default="gpt2")\n\n'
                      '@dataclass\nclass DataArguments:\n    dataset_name: str = field(default="squad")\n\n'
                      'def main():\n    HfArgumentParser((ModelArguments, DataArguments, TrainingArguments))\n'),
    })
    s = extract_static(repo, "torchrun --nproc_per_node=2 run_qa.py --model_name_or_path microsoft/deberta-large "
                             "--num_train_epochs 3 --max_steps 2000 --learning_rate 1e-5")
    f = s.fields
    assert f["model_name"] == "deberta-large"
    assert (f["iterations"], f["iteration_type"]) == (2000, "steps")  # max_steps overrides epochs
    assert f["batch_size"] == 8 and s.evidence["batch_size"].kind == "library_default"
    assert f["num_workers"] == 0 and f["dataset"] == "squad"


def test_megatron_script_with_quoted_argument_blocks(tmp_path: Path) -> None:
    repo = write(tmp_path / "meg", {
        "pretrain_gpt.py": '"""Pretrain GPT."""\nfrom megatron.training import pretrain\n',
        "megatron/arguments.py": ('import argparse\n\ndef parse():\n    p = argparse.ArgumentParser()\n'
                                  '    p.add_argument("--global-batch-size", type=int, default=None)\n'
                                  '    p.add_argument("--train-iters", type=int, default=None)\n'
                                  '    p.add_argument("--lr", type=float, default=None)\n'
                                  '    p.add_argument("--num-workers", type=int, default=2)\n'
                                  '    p.add_argument("--data-path", type=str, default=None)\n'),
        "examples/gpt.sh": ('#!/bin/bash\n# GPT-3 6.7B on the pile\nDATA_PATH=/datasets/pile/pile_text_document\n'
                            'GPT_ARGS="\n    --global-batch-size 512 \\\n    --lr 3e-4 \\\n    --train-iters 6600\n"\n'
                            'torchrun --nproc_per_node 8 pretrain_gpt.py $GPT_ARGS --data-path $DATA_PATH '
                            '--wandb-exp-name gpt3-6.7b-pile\n'),
    })
    s = extract_static(repo, "bash examples/gpt.sh")
    f = s.fields
    assert (f["model_name"], f["dataset"], f["task_type"]) == ("gpt-3-6.7b", "pile", "lm-pretraining")
    assert (f["batch_size"], f["iterations"], f["learning_rate"]) == (512, 6600, 3e-4)
    assert f["num_workers"] == 2 and s.evidence["num_workers"].source == "megatron/arguments.py"


def test_launch_parsing_variants(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": "", "pkg/run.py": ""})
    cases = {
        "OMP_NUM_THREADS=4 python -m torch.distributed.run --nproc_per_node=2 train.py --x 1": ("torchrun", "train.py"),
        "accelerate launch --multi_gpu --num_processes 8 train.py --y 2": ("accelerate", "train.py"),
        "deepspeed --num_gpus 8 train.py --deepspeed ds.json": ("deepspeed", "train.py"),
        "python -m pkg.run --z": ("module", "pkg/run.py"),
        "yolo detect train model=yolov8m.pt epochs=10": ("yolo", None),
    }
    for cmd, (launcher, entry) in cases.items():
        launch = parse_launch(cmd, tmp_path)
        assert (launch.launcher, launch.entry) == (launcher, entry), cmd
    assert parse_launch(next(iter(cases)), tmp_path).env == {"OMP_NUM_THREADS": "4"}


def test_unknown_stays_none(tmp_path: Path) -> None:
    repo = write(tmp_path / "bare", {"main.py": "print('hello')\n"})
    s = extract_static(repo, "python main.py")
    assert s.fields["batch_size"] is None and s.fields["model_name"] is None
    assert s.metadata is None and "model_name" in s.missing


# ----------------------------------------------------------------------------------------- generated repos


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Any:
    # seed 7: neither the development corpus (seed 1) nor the reported evaluation (20240917)
    return generate_job_corpus(tmp_path_factory.mktemp("jobcorpus"), 40, 7)


def test_static_extractor_field_accuracy_on_generated_repos(corpus: Any) -> None:
    pairs = []
    for rec in corpus:
        s = extract_static(corpus.repo_dir(rec), rec.launch.command, gpus=rec.launch.gpus)
        pairs.append((s.fields, rec.truth.model_dump()))
    acc = field_accuracy(pairs)  # names compared through the generator's alias tables (scoring side only)
    # measured on this seed with the extractor's own vocabulary: 100% on every scored field except model size
    # (80%: DLRM and UNet sizes are written nowhere in those repositories, and the extractor keeps no table of
    # the generator's sizes); the floors leave room for generator changes
    assert acc["mean_scored"] >= 0.95, acc
    for f in SCORED_FIELDS:
        assert acc[f] >= (0.7 if f == "model_size_b" else 0.85), (f, acc)


# ----------------------------------------------------------------------------------------- agent plumbing


class FakeToolModel(GenericFakeChatModel):
    """langchain's fake chat model, plus `bind_tools` (the agent binds its tools to the model)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> FakeToolModel:  # type: ignore[override]
        return self


def call(name: str, args: dict[str, Any], i: int) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call{i}"}])


def answer(i: int = 9, **fields: Any) -> AIMessage:
    base = {k: None for k in ("model_name", "task_type", "dataset", "iterations", "iteration_type", "batch_size",
                              "learning_rate", "num_workers", "model_size_b", "valid_dataset")}
    return call("WorkloadMetadata", {**base, **fields}, i)


CMD = "bash scripts/train.sh"


def test_agent_executes_tools_and_validates_values(argparse_repo: Path) -> None:
    model = FakeToolModel(messages=iter([
        call("file_tree", {"path": "."}, 1),
        call("file_read", {"path": "scripts/train.sh"}, 2),
        call("file_read", {"path": "train.py"}, 3),
        answer(model_name="resnet50", dataset="imagenet", iterations=30, iteration_type="epochs",
               batch_size=64,  # grounded: "-b 64" ... but the line has no batch word -> needs the parser line
               learning_rate=0.5,  # not in any file: rejected
               num_workers=8, task_type="image classification"),
    ]))
    res = MetadataExtractor(model, AgentConfig(tool_choice="auto", timeout_s=30)).extract(argparse_repo, CMD, gpus=4)
    assert res.llm_status == "ok"
    assert res.files_read == ["scripts/train.sh", "train.py"]
    assert [c["name"] for c in res.tool_calls] == ["file_tree", "file_read", "file_read", "WorkloadMetadata"]
    d = res.decisions
    assert d["model_name"].source == "agree" and d["iterations"].source == "agree"
    assert d["learning_rate"].source == "static" and "not found" in d["learning_rate"].reason
    assert res.fields["learning_rate"] == 0.1  # the static value stands
    assert d["num_workers"].source == "agree"
    # "image classification" is only in the README, which the agent never read: not grounded
    assert d["task_type"].source == "static" and "not found" in d["task_type"].reason
    assert res.metadata is not None and res.metadata.model_name == "resnet-50"


def test_agent_fills_a_field_static_cannot_find_only_if_grounded(tmp_path: Path) -> None:
    repo = write(tmp_path / "odd", {
        "train.py": '"""Train an image classifier."""\nCORPUS = "internal-photos-v2"\nEPOCHS = 12\n',
    })
    static = extract_static(repo, "python train.py")
    assert static.fields["dataset"] is None
    model = FakeToolModel(messages=iter([
        call("file_read", {"path": "train.py"}, 1),
        answer(model_name="made-up-net", dataset="internal-photos-v2", iterations=12, iteration_type="epochs"),
    ]))
    res = MetadataExtractor(model, AgentConfig(tool_choice="auto")).extract(repo, "python train.py")
    assert res.decisions["dataset"].source == "llm" and res.fields["dataset"] == "internal-photos-v2"
    assert res.decisions["model_name"].source == "none"  # invented name rejected, nothing to fall back to
    assert res.decisions["iterations"].source == "agree"


def test_agent_step_limit_falls_back_to_static(argparse_repo: Path) -> None:
    endless = FakeToolModel(messages=iter([call("file_tree", {"path": "."}, i) for i in range(100)]))
    res = MetadataExtractor(endless, AgentConfig(tool_choice="auto", max_model_calls=3, max_tool_calls=10)).extract(
        argparse_repo, CMD)
    assert res.llm_status == "step_limit"
    assert res.model_calls == 3
    assert res.fallback and res.fields["batch_size"] == 64


def test_agent_tool_call_limit(argparse_repo: Path) -> None:
    model = FakeToolModel(messages=iter([call("file_read", {"path": "train.py"}, i) for i in range(5)]
                                        + [answer(batch_size=64)]))
    res = MetadataExtractor(model, AgentConfig(tool_choice="auto", max_model_calls=10, max_tool_calls=2)).extract(
        argparse_repo, CMD)
    assert len(res.files_read) == 2  # later calls were refused by the limit


def test_agent_timeout_falls_back_to_static(argparse_repo: Path) -> None:
    slow = FakeToolModel(messages=iter([call("file_tree", {"path": "."}, i) for i in range(100)]))
    original = slow._generate

    def sleepy(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.4)
        return original(*args, **kwargs)

    object.__setattr__(slow, "_generate", sleepy)
    t0 = time.perf_counter()
    res = MetadataExtractor(slow, AgentConfig(tool_choice="auto", timeout_s=1.0, max_model_calls=50)).extract(
        argparse_repo, CMD)
    assert time.perf_counter() - t0 < 3.0
    assert res.llm_status == "timeout" and res.fallback
    assert res.fields["model_name"] == "resnet-50"


@pytest.mark.parametrize("reply", [Reply(status=503, error="overloaded"), Reply(status=500, error="boom")])
def test_llm_down_reports_static_only(argparse_repo: Path, reply: Reply) -> None:
    from schedmate.llm import LLMConfig, make_chat_model

    stub = StubLLM(default=reply).start()
    try:
        chat = make_chat_model(LLMConfig(backend="openai", model="stub", base_url=stub.url, max_retries=0,
                                         timeout_s=5))
        res = MetadataExtractor(chat, AgentConfig(timeout_s=20)).extract(argparse_repo, CMD)
    finally:
        stub.stop()
    assert res.llm_status == "unavailable", res.llm_error
    assert res.fallback and res.metadata is not None and res.fields["batch_size"] == 64
    assert all(d.reason == "no LLM answer" for d in res.decisions.values())


def test_llm_unreachable_reports_static_only(argparse_repo: Path) -> None:
    from schedmate.llm import LLMConfig, make_chat_model

    chat = make_chat_model(LLMConfig(backend="openai", model="x", base_url="http://127.0.0.1:9/v1", max_retries=0,
                                     timeout_s=2))
    res = MetadataExtractor(chat).extract(argparse_repo, CMD)
    assert res.llm_status == "unavailable" and res.metadata is not None


def test_no_model_is_static_only(argparse_repo: Path) -> None:
    res = MetadataExtractor(None).extract(argparse_repo, CMD)
    assert res.llm_status == "disabled" and res.fields["iterations"] == 30


class ForcedChoiceRecorder(GenericFakeChatModel):
    """A backend that, like llama.cpp, answers a forced tool choice with a call of that tool."""

    seen: list[Any] = []
    payloads: list[list[BaseMessage]] = []
    forced: str | None = None

    def bind_tools(self, tools: Any, tool_choice: Any = None, **kwargs: Any) -> ForcedChoiceRecorder:  # type: ignore[override]
        name = tool_choice["function"]["name"] if isinstance(tool_choice, dict) else None
        self.seen.append(name)
        return self.model_copy(update={"forced": name})

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        from langchain_core.outputs import ChatGeneration, ChatResult

        self.payloads.append(list(messages))
        args_by_tool = {"file_tree": {"path": "."}, "file_read": {"path": "scripts/train.sh"},
                        "WorkloadMetadata": answer().tool_calls[0]["args"] | {"batch_size": 64}}
        msg = call(self.forced or "file_tree", args_by_tool[self.forced or "file_tree"], len(self.seen))
        return ChatResult(generations=[ChatGeneration(message=msg)])


def test_scripted_tool_choice_orders_actions_for_named_choice_backends(argparse_repo: Path) -> None:
    inner = ForcedChoiceRecorder(messages=iter([]), seen=[], payloads=[])
    res = MetadataExtractor(inner, AgentConfig(tool_choice="scripted", max_tool_calls=3)).extract(argparse_repo, CMD)
    assert inner.seen == ["file_tree", "file_read", "file_read", "WorkloadMetadata"]
    assert res.llm_status == "ok" and res.decisions["batch_size"].source == "agree"
    last = inner.payloads[-1]
    ai_turns = [m for m in last if isinstance(m, AIMessage)]
    assert ai_turns and all(m.content for m in ai_turns)  # llama.cpp rejects null assistant content


def test_scripted_choice_of_tools() -> None:
    wrapper = ScriptedToolChoice(inner=FakeToolModel(messages=iter([])), reads=1)
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_core.tools import tool

    @tool
    def file_tree(path: str = ".") -> str:
        """tree"""
        return ""

    @tool
    def file_read(path: str) -> str:
        """read"""
        return ""

    bound = wrapper.bind_tools([file_tree, file_read, WorkloadMetadata])
    obs = ToolMessage("x", tool_call_id="1")
    assert bound._choice([HumanMessage("q")]) == "file_tree"
    assert bound._choice([HumanMessage("q"), obs]) == "file_read"
    assert bound._choice([HumanMessage("q"), obs, obs]) == "WorkloadMetadata"


def test_merge_policy(argparse_repo: Path) -> None:
    static = extract_static(argparse_repo, CMD)
    observed = "torchrun train.py --arch resnet50 -b 64\nbatch size: 128\nlr = 0.3\n"
    prop = {"batch_size": 128, "learning_rate": 0.3, "model_name": "resnet50", "iterations": None}
    d = merge_with_static(static, prop, observed)
    assert d["batch_size"].source == "static" and "outranks" in d["batch_size"].reason  # cli beats the LLM
    assert d["learning_rate"].source == "static"  # argparse default outranks too
    d2 = merge_with_static(static, prop, observed, policy="llm")
    assert d2["batch_size"].source == "llm" and d2["batch_size"].value == 128
    d3 = merge_with_static(static, {"batch_size": "lots"}, observed)
    assert "invalid" in d3["batch_size"].reason


# ----------------------------------------------------------------------------------------- retrieval


@pytest.fixture(scope="module")
def embedder() -> Any:
    pytest.importorskip("FlagEmbedding", reason="needs the `embed` extra")
    from schedmate.embeddings.embedder import make_embedder

    return make_embedder()


def meta(model: str, dataset: str, iterations: int, **kw: Any) -> WorkloadMetadata:
    task = {"resnet50": "image-classification", "bert-base-uncased": "qa", "meta-llama/Meta-Llama-3-8B":
            "instruction-finetuning"}[model]
    return WorkloadMetadata(model_name=model, task_type=task, dataset=dataset, iterations=iterations,
                            iteration_type="epochs" if iterations < 1000 else "steps", **kw)


@pytest.fixture
def retriever(redis_url: str, embedder: Any) -> Iterator[SimilarJobRetriever]:
    store = JobStore.connect(redis_url, embedder.dim, prefix="advisor-test")
    r = SimilarJobRetriever(store, embedder, threshold=0.9, top_k=2)
    r.ingest([
        HistoricalJob("r1", meta("resnet50", "imagenet", 90, batch_size=256), JobOutcome(duration=1000, sm_util=80),
                      gpus=8),
        HistoricalJob("r2", meta("resnet50", "imagenet", 90, batch_size=256), JobOutcome(duration=1200, sm_util=70),
                      gpus=8),
        HistoricalJob("r3", meta("resnet50", "imagenet", 90, batch_size=256), JobOutcome(duration=5000, sm_util=60),
                      gpus=8),
        HistoricalJob("b1", meta("bert-base-uncased", "squad", 2, batch_size=32), JobOutcome(duration=300, sm_util=90),
                      gpus=1),
        HistoricalJob("l1", meta("meta-llama/Meta-Llama-3-8B", "alpaca", 3000, batch_size=4),
                      JobOutcome(duration=9000, sm_util=95), gpus=16),
    ])
    yield r
    store.close()


def test_retrieval_threshold_and_top_k(retriever: SimilarJobRetriever) -> None:
    q = meta("resnet50", "imagenet", 90, batch_size=256)
    res = retriever.query(q, gpus=8)
    assert len(res.matches) == 2  # top-k caps k' even though three identical jobs exist
    assert {m.job_id for m in res.matches} <= {"r1", "r2", "r3"}
    assert all(m.score >= 0.9 for m in res.matches)
    assert res.matches[0].score >= res.matches[1].score
    assert all(m.record is not None and m.record.outcome.duration for m in res.matches)
    assert len(retriever.query(q, gpus=8, top_k=5).matches) == 3  # k' <= k: only three clear T
    assert retriever.query(q, gpus=8, top_k=0).matches == []
    assert [m.job_id for m in retriever.query(q, gpus=8, exclude=["r1", "r2"]).matches] == ["r3"]
    scores = [m.score for m in retriever.query(q, gpus=8, threshold=-1.0, top_k=5).matches]
    assert len(scores) == 5 and scores == sorted(scores, reverse=True)
    t = (scores[2] + scores[3]) / 2  # between the resnet jobs and the rest
    assert len(retriever.query(q, gpus=8, threshold=t, top_k=5).matches) == 3


def test_retrieval_no_match_above_a_high_threshold(retriever: SimilarJobRetriever) -> None:
    q = WorkloadMetadata(model_name="yolov8m", task_type="object-detection", dataset="coco", iterations=100,
                         iteration_type="epochs")
    assert retriever.query(q, gpus=1, threshold=0.97).matches == []
    est = estimate_from_matches(JobQuery("new"), retriever.query(q, gpus=1, threshold=0.97).matches,
                                fallback=MedianFallback([10.0, 20.0, 30.0], [50.0]))
    assert est.source == "fallback" and est.duration_s == 20.0 and est.fallback == "history-median"
    assert "no similar historical job" in est.note


def test_fingerprint_text_is_canonical() -> None:
    a = fingerprint_text({"b": 1, "a": None, "model_name": "x"}, gpus=8)
    assert a == '{"b":1,"gpus":8,"model_name":"x"}'
    m = meta("resnet50", "imagenet", 90)
    assert fingerprint_text(m) == fingerprint_text(m.model_dump())


# ----------------------------------------------------------------------------------------- estimation


def _match(job_id: str, duration: float | None, util: float | None, score: float = 0.95) -> Match:
    rec = JobRecord(job_id=job_id, vector=[1.0, 0.0], outcome=JobOutcome(duration=duration, sm_util=util))
    return Match(job_id=job_id, score=score, record=rec)


def test_estimate_mean_p50_p90() -> None:
    est = estimate_from_matches(JobQuery("j"), [_match("a", 100, 50), _match("b", 200, None), _match("c", 600, 70)])
    assert est.source == "history" and est.matched and est.n_matches == 3
    assert est.duration_s == pytest.approx(300) and est.duration_p50_s == pytest.approx(200)
    assert est.duration_p90_s == pytest.approx(520)
    assert est.sm_util == pytest.approx(60)  # the job without a utilisation record is skipped
    assert est.match_ids == ["a", "b", "c"]


def test_estimate_no_match_says_so() -> None:
    est = estimate_from_matches(JobQuery("j"), [])
    assert est.source == "none" and est.duration_s is None and "scheduler's default" in est.note
    est = estimate_from_matches(JobQuery("j"), [_match("a", None, None)], fallback=MedianFallback([5.0]))
    assert est.source == "fallback" and est.duration_s == 5.0
    est = estimate_from_matches(JobQuery("j"), [_match("a", 10, 1)], fallback=MedianFallback([5.0]),
                                reason="extractor timed out")
    assert est.source == "fallback" and "extractor timed out" in est.note


def test_same_user_same_gpus_baseline() -> None:
    rows = [HistoryRow(JobQuery("1", user="u", gpus=8), 100, 50), HistoryRow(JobQuery("2", user="u", gpus=8), 300, 70),
            HistoryRow(JobQuery("3", user="u", gpus=1), 10, 20), HistoryRow(JobQuery("4", user="v", gpus=8), 1000)]
    b = SameUserGpusEstimator().fit(rows)
    assert b.predict(JobQuery("n", user="u", gpus=8)) == (200.0, 60.0)
    assert b.level(JobQuery("n", user="u", gpus=4)) == "user"
    assert b.predict(JobQuery("n", user="u", gpus=4))[0] == pytest.approx(410 / 3)
    assert b.level(JobQuery("n", user="w", gpus=8)) == "all" and b.predict(JobQuery("n", user="w"))[0] == 200.0


def test_ebm_baseline_learns_user_and_gpus() -> None:
    rows = []
    for i in range(60):
        user, gpus = ("fast", 1) if i % 2 else ("slow", 8)
        rows.append(HistoryRow(JobQuery(str(i), user=user, gpus=gpus, submit_time=i * 3600.0),
                               100.0 if user == "fast" else 10_000.0, 50.0))
    ebm = EBMEstimator(outer_bags=1, interactions=0, max_rounds=300).fit(rows)
    fast, _ = ebm.predict(JobQuery("f", user="fast", gpus=1, submit_time=0))
    slow, util = ebm.predict(JobQuery("s", user="slow", gpus=8, submit_time=0))
    assert fast is not None and slow is not None and slow > 10 * fast
    assert util == pytest.approx(50.0, abs=1.0)


# ----------------------------------------------------------------------------------------- evaluation helpers


def test_error_metrics() -> None:
    errs = relative_errors([100, 300, None, 50], [100, 100, 100, 0])
    assert errs == [0.0, 2.0]  # missing estimate and zero truth skipped
    assert share_within(errs) == 0.5 and share_within([]) is None


def test_choose_threshold_prefers_the_best_share_on_dev() -> None:
    cands = [[(0.99, 100.0, None), (0.80, 1000.0, None)], [(0.85, 5000.0, None)]]
    truths = [100.0, 100.0]
    fallbacks = [150.0, 150.0]
    t, curve = choose_threshold(cands, truths, fallbacks, (0.8, 0.9, 0.95))
    assert t == 0.95 and curve[0]["within_100"] == 0.0 and curve[-1]["within_100"] == 1.0


def test_field_accuracy() -> None:
    truth = {"model_name": "resnet-50", "learning_rate": 0.1, "model_size_b": 0.0256}
    acc = field_accuracy([({"model_name": "resnet-50", "learning_rate": 0.1 + 1e-12, "model_size_b": 0.025}, truth),
                          ({"model_name": "vit-l-16", "learning_rate": 0.2}, truth)])
    assert acc["model_name"] == 0.5 and acc["learning_rate"] == 0.5 and acc["model_size_b"] == 0.5


def test_scheduling_advisor_advise_record_and_store_outage(retriever: SimilarJobRetriever, argparse_repo: Path) -> None:
    from schedmate.agents.advisor.advisor import SchedulingAdvisor
    from schedmate.embeddings.store import StoreUnavailable

    retriever.threshold = -1.0
    advisor = SchedulingAdvisor(retriever, fallback=MedianFallback([42.0]))
    job = JobQuery("new", user="u", gpus=8)
    advice = advisor.advise(job, argparse_repo, CMD)
    assert advice.estimate.source == "history" and advice.estimate.n_matches == 2
    assert advice.fingerprint["model_name"] == "resnet-50" and advice.sources["batch_size"] == "static"
    advisor.record("new", advice.fingerprint, JobOutcome(duration=77.0, sm_util=40.0), gpus=8)
    again = advisor.advise(JobQuery("next", gpus=8), argparse_repo, CMD)
    assert again.estimate.match_ids[0] == "new" and again.estimate.scores[0] > 0.999

    def down(*args: Any, **kwargs: Any) -> Any:
        raise StoreUnavailable("Redis at x is unavailable")

    retriever.query = down  # type: ignore[method-assign]
    out = advisor.advise(job, argparse_repo, CMD)
    assert out.estimate.source == "fallback" and out.estimate.duration_s == 42.0
    assert "job store unavailable" in out.estimate.note


def test_static_extractor_survives_broken_inputs(tmp_path: Path) -> None:
    repo = write(tmp_path / "broken", {
        "train.py": "def main(:\n    pass\n",
        "cfg.yaml": "a: [1, 2\n",
        "run.sh": "python train.py --config cfg.yaml --lr 'unbalanced\n",
    })
    for cmd in ("bash run.sh", "python train.py --config cfg.yaml", "", "sbatch missing.sbatch", "rm -rf / ; echo $("):
        s = extract_static(repo, cmd)
        assert s.metadata is None and isinstance(s.errors, list)
    assert extract_static(tmp_path / "no-such-repo", "python x.py").metadata is None


def test_grounding_rules() -> None:
    from schedmate.agents.advisor.validation import grounded

    listing = "[./] 3 entries\ntrain.py (65 B)\nconfigs/\n  base.yaml (1.2 kB)\n"
    assert grounded("model_size_b", 65, 65.0, listing) is None  # file sizes are not model sizes
    assert grounded("model_size_b", "8B", 8.0, "--model_name_or_path meta-llama/Meta-Llama-3-8B") == "8b"
    text = "epochs: 30\nbatch_size: 64\nseed: 64\nlr: 3.0e-4\nworkers: 8\ndata_dir: /datasets/imagenet/train\n"
    assert grounded("iterations", 30, 30, text, iteration_type="epochs")
    assert grounded("iterations", 30, 30, text, iteration_type="steps") is None  # unit must match the line
    assert grounded("batch_size", 64, 64, text) == "batch_size: 64"
    assert grounded("num_workers", 64, 64, text) is None  # 64 exists, but not on a worker line
    assert grounded("learning_rate", "0.0003", 3e-4, text) == "lr: 3.0e-4"
    assert grounded("dataset", "imagenet", "imagenet-1k", text) == "imagenet"
    assert grounded("dataset", "train", "train", text) is None  # generic words never count
    assert grounded("valid_dataset", "imagenet", "imagenet-1k", text) is None  # not on a validation line
