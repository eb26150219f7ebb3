# Copyright (c) Facebook, Inc. and its affiliates. (trimmed)
from dataclasses import dataclass, field
from typing import List, Optional

from omegaconf import II


@dataclass
class CommonConfig:
    seed: int = field(default=1, metadata={"help": "pseudo random number generator seed"})
    fp16: bool = field(default=False, metadata={"help": "use FP16"})
    log_interval: int = field(default=100)
    log_format: Optional[str] = field(default=None)


@dataclass
class DistributedTrainingConfig:
    distributed_world_size: int = field(default=1)  # set from torch.cuda.device_count() when not given
    ddp_backend: str = field(default="pytorch_ddp")


@dataclass
class DatasetConfig:
    num_workers: int = field(default=1, metadata={"help": "how many subprocesses to use for data loading"})
    skip_invalid_size_inputs_valid_test: bool = field(default=False)
    max_tokens: Optional[int] = field(default=None, metadata={"help": "maximum number of tokens in a batch"})
    batch_size: Optional[int] = field(
        default=None, metadata={"help": "number of examples in a batch", "argparse_alias": "--max-sentences"}
    )
    required_batch_size_multiple: int = field(default=8)
    train_subset: str = field(default="train")
    valid_subset: str = field(default="valid")
    max_tokens_valid: Optional[int] = II("dataset.max_tokens")
    batch_size_valid: Optional[int] = II("dataset.batch_size")


@dataclass
class OptimizationConfig:
    max_epoch: int = field(default=0, metadata={"help": "force stop training at specified epoch"})
    max_update: int = field(default=0, metadata={"help": "force stop training at specified update"})
    stop_time_hours: float = field(default=0)
    clip_norm: float = field(default=0.0, metadata={"help": "clip threshold of gradients"})
    update_freq: List[int] = field(default_factory=lambda: [1], metadata={"help": "update parameters every N_i batches"})
    lr: List[float] = field(default_factory=lambda: [0.25], metadata={"help": "learning rate for the first N epochs"})
    stop_min_lr: float = field(default=-1.0)


@dataclass
class FairseqConfig:
    common: CommonConfig = CommonConfig()
    distributed_training: DistributedTrainingConfig = DistributedTrainingConfig()
    dataset: DatasetConfig = DatasetConfig()
    optimization: OptimizationConfig = OptimizationConfig()
