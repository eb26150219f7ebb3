#!/usr/bin/env python
"""Extractive QA fine-tuning (SQuAD-style) with the HF Trainer.

Arguments come either from the command line or from a single JSON file:
    python run_qa.py configs/bert_base_squad.json
"""
import logging
import os
import sys
from dataclasses import dataclass, field
from typing import Optional

import datasets
import transformers
from datasets import load_dataset
from transformers import (AutoConfig, AutoModelForQuestionAnswering, AutoTokenizer, DataCollatorWithPadding,
                          HfArgumentParser, Trainer, TrainingArguments, default_data_collator, set_seed)

from prepare import prepare_train_features

logger = logging.getLogger(__name__)


@dataclass
class ModelArguments:
    model_name_or_path: str = field(metadata={"help": "Path to pretrained model or model identifier"})
    config_name: Optional[str] = field(default=None)
    tokenizer_name: Optional[str] = field(default=None)
    cache_dir: Optional[str] = field(default=None)


@dataclass
class DataTrainingArguments:
    dataset_name: Optional[str] = field(default="rajpurkar/squad")
    dataset_config_name: Optional[str] = field(default=None)
    train_file: Optional[str] = field(default=None)
    preprocessing_num_workers: Optional[int] = field(default=None,
                                                     metadata={"help": "processes for datasets.map, not the loader"})
    max_seq_length: int = field(default=384)
    doc_stride: int = field(default=128)
    pad_to_max_length: bool = field(default=True)
    max_train_samples: Optional[int] = field(default=None)
    version_2_with_negative: bool = field(default=False)


def main():
    parser = HfArgumentParser((ModelArguments, DataTrainingArguments, TrainingArguments))
    if len(sys.argv) == 2 and sys.argv[1].endswith(".json"):
        model_args, data_args, training_args = parser.parse_json_file(json_file=os.path.abspath(sys.argv[1]))
    else:
        model_args, data_args, training_args = parser.parse_args_into_dataclasses()

    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
    set_seed(training_args.seed)

    if data_args.dataset_name is not None:
        raw_datasets = load_dataset(data_args.dataset_name, data_args.dataset_config_name,
                                    cache_dir=model_args.cache_dir)
    else:
        raw_datasets = load_dataset("json", data_files={"train": data_args.train_file}, field="data")

    config = AutoConfig.from_pretrained(model_args.config_name or model_args.model_name_or_path)
    tokenizer = AutoTokenizer.from_pretrained(model_args.tokenizer_name or model_args.model_name_or_path, use_fast=True)
    model = AutoModelForQuestionAnswering.from_pretrained(model_args.model_name_or_path, config=config)

    train_dataset = raw_datasets["train"]
    if data_args.max_train_samples is not None:
        train_dataset = train_dataset.select(range(data_args.max_train_samples))
    with training_args.main_process_first(desc="train dataset map pre-processing"):
        train_dataset = train_dataset.map(
            lambda ex: prepare_train_features(ex, tokenizer, data_args),
            batched=True,
            num_proc=data_args.preprocessing_num_workers,
            remove_columns=raw_datasets["train"].column_names,
        )

    collator = default_data_collator if data_args.pad_to_max_length else DataCollatorWithPadding(tokenizer)
    trainer = Trainer(model=model, args=training_args, train_dataset=train_dataset, tokenizer=tokenizer,
                      data_collator=collator)
    train_result = trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
    trainer.save_model()
    trainer.log_metrics("train", train_result.metrics)
    trainer.save_metrics("train", train_result.metrics)


if __name__ == "__main__":
    main()
