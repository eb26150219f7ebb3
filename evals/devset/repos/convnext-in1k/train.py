#!/usr/bin/env python3
"""ImageNet training entry point (trimmed-down timm-style script).

Only the options our recipes use are kept. Model names are timm model names.
"""
import argparse
import logging
import os
import time

import timm
import torch
import torch.distributed as dist
from timm.data import Mixup, create_dataset, create_loader, resolve_data_config
from timm.loss import SoftTargetCrossEntropy
from timm.optim import create_optimizer_v2
from timm.scheduler import create_scheduler_v2
from timm.utils import ModelEmaV2

_logger = logging.getLogger("train")

parser = argparse.ArgumentParser(description="PyTorch ImageNet Training")
group = parser.add_argument_group("Dataset parameters")
group.add_argument("--data-dir", metavar="DIR")
group.add_argument("--dataset", default="imagenet")
group.add_argument("--train-split", default="train")
group.add_argument("--val-split", default="validation")
group = parser.add_argument_group("Model parameters")
group.add_argument("--model", default="resnet50", type=str)
group.add_argument("--pretrained", action="store_true")
group.add_argument("--num-classes", type=int, default=1000)
group.add_argument("--drop-path", type=float, default=None)
group = parser.add_argument_group("Optimizer / schedule")
group.add_argument("-b", "--batch-size", type=int, default=128)
group.add_argument("--grad-accum-steps", type=int, default=1)
group.add_argument("--opt", default="sgd")
group.add_argument("--lr", type=float, default=None)
group.add_argument("--lr-base", type=float, default=0.1)
group.add_argument("--lr-base-size", type=int, default=256)
group.add_argument("--weight-decay", type=float, default=2e-5)
group.add_argument("--sched", default="cosine")
group.add_argument("--epochs", type=int, default=300)
group.add_argument("--warmup-epochs", type=int, default=5)
group.add_argument("--clip-grad", type=float, default=None)
group = parser.add_argument_group("Augmentation")
group.add_argument("--aa", default=None)
group.add_argument("--mixup", type=float, default=0.0)
group.add_argument("--cutmix", type=float, default=0.0)
group.add_argument("--smoothing", type=float, default=0.1)
group.add_argument("--reprob", type=float, default=0.0)
group = parser.add_argument_group("Misc")
group.add_argument("--model-ema", action="store_true")
group.add_argument("--model-ema-decay", type=float, default=0.9998)
group.add_argument("--amp", action="store_true")
group.add_argument("-j", "--workers", type=int, default=4)
group.add_argument("--pin-mem", action="store_true")
group.add_argument("--resume", default="")
group.add_argument("--output", default="./output")


def main():
    args = parser.parse_args()
    dist.init_process_group("nccl")
    world = dist.get_world_size()
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))

    if args.lr is None:
        # timm convention: scale the base lr by the global batch when --lr is not given
        global_batch = args.batch_size * world * args.grad_accum_steps
        args.lr = args.lr_base * global_batch / args.lr_base_size

    model = timm.create_model(args.model, pretrained=args.pretrained, num_classes=args.num_classes,
                              drop_path_rate=args.drop_path).to(device)
    ema = ModelEmaV2(model, decay=args.model_ema_decay) if args.model_ema else None
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device.index])

    data_cfg = resolve_data_config(vars(args), model=model.module)
    ds_train = create_dataset(args.dataset, root=args.data_dir, split=args.train_split, is_training=True)
    loader = create_loader(ds_train, input_size=data_cfg["input_size"], batch_size=args.batch_size,
                           is_training=True, auto_augment=args.aa, re_prob=args.reprob,
                           num_workers=args.workers, distributed=True, pin_memory=args.pin_mem)
    mixup = Mixup(mixup_alpha=args.mixup, cutmix_alpha=args.cutmix, label_smoothing=args.smoothing,
                  num_classes=args.num_classes) if args.mixup or args.cutmix else None
    criterion = SoftTargetCrossEntropy() if mixup else torch.nn.CrossEntropyLoss()

    optimizer = create_optimizer_v2(model, opt=args.opt, lr=args.lr, weight_decay=args.weight_decay)
    updates_per_epoch = (len(loader) + args.grad_accum_steps - 1) // args.grad_accum_steps
    scheduler, num_epochs = create_scheduler_v2(optimizer, sched=args.sched, num_epochs=args.epochs,
                                                warmup_epochs=args.warmup_epochs,
                                                updates_per_epoch=updates_per_epoch)
    scaler = torch.cuda.amp.GradScaler(enabled=args.amp)

    for epoch in range(num_epochs):
        loader.sampler.set_epoch(epoch)
        model.train()
        t0 = time.time()
        for i, (x, y) in enumerate(loader):
            x, y = x.to(device), y.to(device)
            if mixup:
                x, y = mixup(x, y)
            with torch.autocast("cuda", enabled=args.amp):
                loss = criterion(model(x), y) / args.grad_accum_steps
            scaler.scale(loss).backward()
            if (i + 1) % args.grad_accum_steps == 0:
                if args.clip_grad:
                    scaler.unscale_(optimizer)
                    torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip_grad)
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
                if ema is not None:
                    ema.update(model)
        scheduler.step(epoch + 1)
        _logger.info("epoch %d done in %.1fs", epoch, time.time() - t0)


if __name__ == "__main__":
    main()
