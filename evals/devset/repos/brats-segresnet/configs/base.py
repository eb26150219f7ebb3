"""Experiment settings as plain Python (imported by name: --config configs.base)."""
from dataclasses import dataclass, field


@dataclass
class Config:
    # data
    data_root: str = "/data/BraTS2021/TrainingData"
    fold: int = 0
    num_folds: int = 5
    roi_size: tuple = (128, 128, 128)
    cache_rate: float = 0.0
    num_workers: int = 8
    # model
    model: str = "SegResNet"
    init_filters: int = 16
    blocks_down: tuple = (1, 2, 2, 4)
    blocks_up: tuple = (1, 1, 1)
    in_channels: int = 4
    out_channels: int = 3
    dropout_prob: float = 0.2
    # optimisation
    batch_size: int = 1
    lr: float = 1e-4
    weight_decay: float = 1e-5
    max_epochs: int = 300
    val_interval: int = 1
    amp: bool = True
    extra: dict = field(default_factory=dict)


cfg = Config()
