#!/usr/bin/env python3 -u
# Copyright (c) Facebook, Inc. and its affiliates. (trimmed)
"""Train a new model on one or across multiple GPUs."""
import logging
import math
import sys

import torch

from fairseq import checkpoint_utils, options, tasks, utils
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.distributed import utils as distributed_utils
from fairseq.trainer import Trainer

logger = logging.getLogger("fairseq_cli.train")


def main(cfg) -> None:
    utils.import_user_module(cfg.common)
    assert cfg.dataset.max_tokens is not None or cfg.dataset.batch_size is not None, \
        "Must specify batch size either with --max-tokens or --batch-size"

    task = tasks.setup_task(cfg.task)
    model = task.build_model(cfg.model)
    criterion = task.build_criterion(cfg.criterion)
    logger.info("num. model params: {:,}".format(sum(p.numel() for p in model.parameters())))

    trainer = Trainer(cfg, task, model, criterion)
    extra_state, epoch_itr = checkpoint_utils.load_checkpoint(cfg.checkpoint, trainer)

    max_epoch = cfg.optimization.max_epoch or math.inf
    lr = trainer.get_lr()
    while epoch_itr.next_epoch_idx <= max_epoch:
        if lr <= cfg.optimization.stop_min_lr:
            break
        valid_losses, should_stop = train(cfg, trainer, task, epoch_itr)
        if should_stop:
            break
        lr = trainer.lr_step(epoch_itr.epoch, valid_losses[0])
        epoch_itr = trainer.get_train_iterator(epoch_itr.next_epoch_idx, load_dataset=True)


def train(cfg, trainer, task, epoch_itr):
    itr = epoch_itr.next_epoch_itr(fix_batches_to_gpus=False, shuffle=True)
    update_freq = cfg.optimization.update_freq[min(epoch_itr.epoch - 1, len(cfg.optimization.update_freq) - 1)]
    itr = iterators.GroupedIterator(itr, update_freq)
    should_stop = False
    for i, samples in enumerate(itr):
        log_output = trainer.train_step(samples)
        num_updates = trainer.get_num_updates()
        # max_update == 0 means "no limit"
        if cfg.optimization.max_update > 0 and num_updates >= cfg.optimization.max_update:
            should_stop = True
            break
    return [None], should_stop


def cli_main(modify_parser=None) -> None:
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, modify_parser=modify_parser)
    cfg = convert_namespace_to_omegaconf(args)
    distributed_utils.call_main(cfg, main)


if __name__ == "__main__":
    cli_main()
