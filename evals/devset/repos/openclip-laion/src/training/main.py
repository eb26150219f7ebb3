"""Contrastive image-text training (CLIP objective) with open_clip models.

Run from the repo root with src/ on the path:
    PYTHONPATH=src torchrun --nproc_per_node 8 -m training.main --model ViT-B-32 ...
"""
import logging
import math
import sys

import open_clip
import torch
import torch.distributed as dist
from open_clip import ClipLoss

from training.data import get_wds_loader
from training.params import parse_args


def cosine_lr(optimizer, base_lr, warmup_length, steps):
    def _lr_adjuster(step):
        if step < warmup_length:
            lr = base_lr * (step + 1) / warmup_length
        else:
            e = step - warmup_length
            lr = 0.5 * (1 + math.cos(math.pi * e / (steps - warmup_length))) * base_lr
        for g in optimizer.param_groups:
            g["lr"] = lr
        return lr
    return _lr_adjuster


def main(argv):
    args = parse_args(argv)
    dist.init_process_group("nccl", init_method=args.dist_url)
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", rank % torch.cuda.device_count())

    model, preprocess_train, _ = open_clip.create_model_and_transforms(args.model, pretrained=args.pretrained,
                                                                       precision=args.precision, device=device)
    if args.grad_checkpointing:
        model.set_grad_checkpointing()
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device])

    loader, num_batches = get_wds_loader(args, preprocess_train, world)
    exclude = lambda n, p: p.ndim < 2 or "bn" in n or "ln" in n or "bias" in n or "logit_scale" in n
    named = list(model.named_parameters())
    optimizer = torch.optim.AdamW(
        [{"params": [p for n, p in named if exclude(n, p) and p.requires_grad], "weight_decay": 0.},
         {"params": [p for n, p in named if not exclude(n, p) and p.requires_grad], "weight_decay": args.wd}],
        lr=args.lr, betas=(args.beta1, args.beta2), eps=args.eps)
    total_steps = (num_batches // args.accum_freq) * args.epochs
    scheduler = cosine_lr(optimizer, args.lr, args.warmup, total_steps)
    loss_fn = ClipLoss(local_loss=args.local_loss, gather_with_grad=args.gather_with_grad, cache_labels=True,
                       rank=rank, world_size=world)
    scaler = torch.cuda.amp.GradScaler() if args.precision == "amp" else None

    step = 0
    for epoch in range(args.epochs):
        model.train()
        for images, texts in loader:
            scheduler(step)
            images, texts = images.to(device, non_blocking=True), texts.to(device, non_blocking=True)
            with torch.autocast("cuda", enabled=args.precision.startswith("amp")):
                img_f, txt_f, logit_scale = model(images, texts)
                loss = loss_fn(img_f, txt_f, logit_scale)
            optimizer.zero_grad()
            if scaler is not None:
                scaler.scale(loss).backward()
                if args.grad_clip_norm is not None:
                    scaler.unscale_(optimizer)
                    torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip_norm, norm_type=2.0)
                scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()
                optimizer.step()
            with torch.no_grad():
                model.module.logit_scale.clamp_(0, math.log(100))
            step += 1
            if rank == 0 and step % 100 == 0:
                logging.info("epoch %d step %d/%d loss %.4f", epoch, step, total_steps, loss.item())


if __name__ == "__main__":
    main(sys.argv[1:])
