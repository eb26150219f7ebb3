"""Hydra entry point: `python train.py model=resnet50 trainer.max_epochs=90`."""
import logging

import hydra
import lightning as L
import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from src.datamodule import ImageFolderDataModule
from src.module import Classifier

log = logging.getLogger(__name__)


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> None:
    log.info("\n%s", OmegaConf.to_yaml(cfg))
    L.seed_everything(cfg.seed)
    net = instantiate(cfg.model)
    dm = ImageFolderDataModule(**cfg.data)
    module = Classifier(net, cfg.optim, max_epochs=cfg.trainer.max_epochs)
    trainer = L.Trainer(**cfg.trainer, default_root_dir=cfg.output_dir,
                        log_every_n_steps=cfg.log_every_n_steps)
    trainer.fit(module, datamodule=dm, ckpt_path=cfg.ckpt_path)


if __name__ == "__main__":
    torch.backends.cudnn.benchmark = True
    main()
