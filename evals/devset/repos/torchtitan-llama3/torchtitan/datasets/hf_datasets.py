"""Streaming text datasets, tokenised on the fly and packed to seq_len."""
from dataclasses import dataclass
from typing import Callable

import torch
from datasets import load_dataset
from torch.utils.data import IterableDataset
from torchdata.stateful_dataloader import StatefulDataLoader


@dataclass
class DatasetConfig:
    path: str
    loader: Callable
    text_processor: Callable


DATASETS = {
    "c4": DatasetConfig(path="allenai/c4", loader=lambda p: load_dataset(p, name="en", split="train", streaming=True),
                        text_processor=lambda s: s["text"]),
    "c4_test": DatasetConfig(path="tests/assets/c4_test", loader=lambda p: load_dataset(p, split="train"),
                             text_processor=lambda s: s["text"]),
    "fineweb": DatasetConfig(path="HuggingFaceFW/fineweb", loader=lambda p: load_dataset(p, name="sample-350BT", split="train", streaming=True),
                             text_processor=lambda s: s["text"]),
}


class HuggingFaceDataset(IterableDataset):
    def __init__(self, dataset_name, dataset_path, tokenizer, seq_len=2048, dp_rank=0, dp_world_size=1, infinite=False):
        cfg = DATASETS[dataset_name.lower()]
        self._data = cfg.loader(dataset_path or cfg.path)
        self._tokenizer = tokenizer
        self.seq_len = seq_len
        self.infinite = infinite
        self._text = cfg.text_processor
        self._buffer: list[int] = []

    def __iter__(self):
        max_buffer = self.seq_len + 1
        while True:
            for sample in self._data:
                self._buffer.extend(self._tokenizer.encode(self._text(sample), bos=True, eos=True))
                while len(self._buffer) >= max_buffer:
                    x = torch.LongTensor(self._buffer[:max_buffer])
                    self._buffer = self._buffer[max_buffer:]
                    yield x[:-1], x[1:]
            if not self.infinite:
                break


def build_hf_dataloader(dp_world_size, dp_rank, tokenizer, job_config, infinite=True):
    ds = HuggingFaceDataset(job_config.training.dataset, job_config.training.dataset_path, tokenizer,
                            job_config.training.seq_len, dp_rank, dp_world_size, infinite)
    return StatefulDataLoader(ds, batch_size=job_config.training.batch_size)
