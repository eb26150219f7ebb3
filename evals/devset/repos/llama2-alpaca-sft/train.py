#!/usr/bin/env python
# Supervised instruction fine-tuning with the HF Trainer.
# Adapted from our internal fork of the Stanford Alpaca recipe; the prompt templates live in
# prompts.py so the eval harness can share them.
import copy
import logging
from dataclasses import dataclass, field
from typing import Dict, Optional, Sequence

import torch
import transformers
from datasets import load_dataset
from torch.utils.data import Dataset
from transformers import Trainer

from prompts import PROMPT_DICT

IGNORE_INDEX = -100
DEFAULT_PAD_TOKEN = "[PAD]"

logger = logging.getLogger(__name__)


@dataclass
class ModelArguments:
    model_name_or_path: Optional[str] = field(default="facebook/opt-125m")
    use_flash_attn: bool = field(default=True)


@dataclass
class DataArguments:
    data_path: str = field(default="tatsu-lab/alpaca", metadata={"help": "HF dataset id or local json."})
    eval_data_path: Optional[str] = field(default=None)
    max_train_samples: Optional[int] = field(default=None)


@dataclass
class TrainingArguments(transformers.TrainingArguments):
    cache_dir: Optional[str] = field(default=None)
    optim: str = field(default="adamw_torch")
    model_max_length: int = field(
        default=512,
        metadata={"help": "Maximum sequence length. Sequences will be right padded (and possibly truncated)."},
    )


def _tokenize_fn(strings: Sequence[str], tokenizer) -> Dict:
    tokenized_list = [
        tokenizer(text, return_tensors="pt", padding="longest",
                  max_length=tokenizer.model_max_length, truncation=True)
        for text in strings
    ]
    input_ids = labels = [t.input_ids[0] for t in tokenized_list]
    lens = [t.input_ids.ne(tokenizer.pad_token_id).sum().item() for t in tokenized_list]
    return dict(input_ids=input_ids, labels=labels, input_ids_lens=lens, labels_lens=lens)


class SupervisedDataset(Dataset):
    def __init__(self, data_path: str, tokenizer, max_samples: Optional[int] = None):
        super().__init__()
        logger.warning("Loading data from %s", data_path)
        if data_path.endswith(".json"):
            raw = load_dataset("json", data_files=data_path)["train"]
        else:
            raw = load_dataset(data_path)["train"]
        if max_samples is not None:
            raw = raw.select(range(max_samples))
        sources, targets = [], []
        for ex in raw:
            tmpl = PROMPT_DICT["prompt_input"] if ex.get("input") else PROMPT_DICT["prompt_no_input"]
            sources.append(tmpl.format_map(ex))
            targets.append(f"{ex['output']}{tokenizer.eos_token}")
        examples = [s + t for s, t in zip(sources, targets)]
        ex_tok, src_tok = _tokenize_fn(examples, tokenizer), _tokenize_fn(sources, tokenizer)
        self.input_ids = ex_tok["input_ids"]
        self.labels = copy.deepcopy(self.input_ids)
        for label, n in zip(self.labels, src_tok["input_ids_lens"]):
            label[:n] = IGNORE_INDEX

    def __len__(self):
        return len(self.input_ids)

    def __getitem__(self, i):
        return dict(input_ids=self.input_ids[i], labels=self.labels[i])


@dataclass
class DataCollatorForSupervisedDataset:
    tokenizer: transformers.PreTrainedTokenizer

    def __call__(self, instances):
        input_ids = [x["input_ids"] for x in instances]
        labels = [x["labels"] for x in instances]
        input_ids = torch.nn.utils.rnn.pad_sequence(input_ids, batch_first=True,
                                                    padding_value=self.tokenizer.pad_token_id)
        labels = torch.nn.utils.rnn.pad_sequence(labels, batch_first=True, padding_value=IGNORE_INDEX)
        return dict(input_ids=input_ids, labels=labels,
                    attention_mask=input_ids.ne(self.tokenizer.pad_token_id))


def train():
    parser = transformers.HfArgumentParser((ModelArguments, DataArguments, TrainingArguments))
    model_args, data_args, training_args = parser.parse_args_into_dataclasses()

    model = transformers.AutoModelForCausalLM.from_pretrained(
        model_args.model_name_or_path,
        cache_dir=training_args.cache_dir,
        torch_dtype=torch.bfloat16 if training_args.bf16 else None,
        attn_implementation="flash_attention_2" if model_args.use_flash_attn else "eager",
    )
    tokenizer = transformers.AutoTokenizer.from_pretrained(
        model_args.model_name_or_path,
        cache_dir=training_args.cache_dir,
        model_max_length=training_args.model_max_length,
        padding_side="right",
        use_fast=False,
    )
    if tokenizer.pad_token is None:
        tokenizer.add_special_tokens({"pad_token": DEFAULT_PAD_TOKEN})
        model.resize_token_embeddings(len(tokenizer))

    train_dataset = SupervisedDataset(data_args.data_path, tokenizer, data_args.max_train_samples)
    eval_dataset = None
    # if data_args.eval_data_path:
    #     eval_dataset = SupervisedDataset(data_args.eval_data_path, tokenizer)
    trainer = Trainer(
        model=model,
        tokenizer=tokenizer,
        args=training_args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        data_collator=DataCollatorForSupervisedDataset(tokenizer=tokenizer),
    )
    trainer.train()
    trainer.save_state()
    trainer.save_model(output_dir=training_args.output_dir)


if __name__ == "__main__":
    train()
