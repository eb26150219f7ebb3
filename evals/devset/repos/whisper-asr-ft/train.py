"""Speech recognition fine-tuning.

Configs live outside the package, so pass the folder explicitly:
    python train.py --config-dir conf/whisper --config-name finetune trainer.max_steps=4000
"""
import hydra
import lightning.pytorch as pl
from omegaconf import DictConfig, OmegaConf

from asr.data import SpeechDataModule
from asr.module import WhisperFineTuner


@hydra.main(version_base=None, config_path=None, config_name=None)
def main(cfg: DictConfig):
    print(OmegaConf.to_yaml(cfg, resolve=True))
    dm = SpeechDataModule(cfg.model.pretrained, **cfg.data)
    module = WhisperFineTuner(cfg.model, cfg.optim, total_steps=cfg.trainer.max_steps)
    trainer = pl.Trainer(
        max_steps=cfg.trainer.max_steps,
        precision=cfg.trainer.precision,
        accumulate_grad_batches=cfg.trainer.accumulate_grad_batches,
        val_check_interval=cfg.trainer.val_check_interval,
        devices=cfg.trainer.devices,
        gradient_clip_val=1.0,
    )
    trainer.fit(module, datamodule=dm)


if __name__ == "__main__":
    main()
