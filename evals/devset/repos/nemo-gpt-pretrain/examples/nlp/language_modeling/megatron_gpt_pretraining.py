# Copyright (c) 2023, NVIDIA CORPORATION.  All rights reserved.  (trimmed copy)
import torch.multiprocessing as mp
from omegaconf.omegaconf import OmegaConf, open_dict

from nemo.collections.nlp.models.language_modeling.megatron_gpt_model import MegatronGPTModel
from nemo.collections.nlp.parts.megatron_trainer_builder import MegatronTrainerBuilder
from nemo.core.config import hydra_runner
from nemo.utils import logging
from nemo.utils.exp_manager import exp_manager

mp.set_start_method("spawn", force=True)


@hydra_runner(config_path="conf", config_name="megatron_gpt_config")
def main(cfg) -> None:
    logging.info("\n\n************** Experiment configuration ***********")
    logging.info(f"\n{OmegaConf.to_yaml(cfg)}")

    trainer = MegatronTrainerBuilder(cfg).create_trainer()
    exp_manager(trainer, cfg.exp_manager)

    # continue training from a .nemo checkpoint (unused on the cluster)
    # if cfg.model.get("restore_from_path"):
    #     model = MegatronGPTModel.restore_from(cfg.model.restore_from_path, trainer=trainer)

    with open_dict(cfg):
        # the scheduler length follows the trainer unless set explicitly
        if cfg.model.optim.sched.get("max_steps") is None:
            cfg.model.optim.sched.max_steps = cfg.trainer.max_steps

    model = MegatronGPTModel(cfg.model, trainer)
    trainer.fit(model)


if __name__ == "__main__":
    main()
