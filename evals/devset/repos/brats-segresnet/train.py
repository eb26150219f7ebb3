"""Brain tumour segmentation (BraTS 2021) with MONAI.

    python train.py --config configs.base --fold 0
    torchrun --nproc_per_node 4 train.py --config configs.swinunetr --fold 2
"""
import argparse
import importlib
import json
import os

import torch
import torch.distributed as dist
from monai.data import CacheDataset, DataLoader, partition_dataset
from monai.losses import DiceLoss
from monai.networks.nets import SegResNet, SwinUNETR
from monai.transforms import (Compose, ConvertToMultiChannelBasedOnBratsClassesd, EnsureChannelFirstd, LoadImaged,
                              NormalizeIntensityd, RandFlipd, RandSpatialCropd)


def build_model(cfg):
    if cfg.model == "SegResNet":
        return SegResNet(blocks_down=cfg.blocks_down, blocks_up=cfg.blocks_up, init_filters=cfg.init_filters,
                         in_channels=cfg.in_channels, out_channels=cfg.out_channels, dropout_prob=cfg.dropout_prob)
    if cfg.model == "SwinUNETR":
        return SwinUNETR(img_size=cfg.roi_size, in_channels=cfg.in_channels, out_channels=cfg.out_channels,
                         feature_size=cfg.extra.get("feature_size", 48), use_checkpoint=cfg.extra.get("use_checkpoint", False))
    raise ValueError(cfg.model)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="configs.base")
    ap.add_argument("--fold", type=int, default=None)
    ap.add_argument("--epochs", type=int, default=None, help="override cfg.max_epochs")
    args = ap.parse_args()
    cfg = importlib.import_module(args.config).cfg
    if args.fold is not None:
        cfg.fold = args.fold
    if args.epochs is not None:
        cfg.max_epochs = args.epochs

    distributed = "LOCAL_RANK" in os.environ
    if distributed:
        dist.init_process_group("nccl")
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    device = torch.device("cuda")

    with open(os.path.join(cfg.data_root, "brats21_folds.json")) as f:
        items = [x for x in json.load(f)["training"] if x["fold"] != cfg.fold]
    if distributed:
        items = partition_dataset(items, num_partitions=dist.get_world_size(), shuffle=True)[dist.get_rank()]
    keys = ["image", "label"]
    tf = Compose([
        LoadImaged(keys=keys),
        EnsureChannelFirstd(keys="image"),
        ConvertToMultiChannelBasedOnBratsClassesd(keys="label"),
        RandSpatialCropd(keys=keys, roi_size=cfg.roi_size, random_size=False),
        RandFlipd(keys=keys, prob=0.5, spatial_axis=0),
        NormalizeIntensityd(keys="image", nonzero=True, channel_wise=True),
    ])
    ds = CacheDataset(items, transform=tf, cache_rate=cfg.cache_rate, num_workers=4)
    loader = DataLoader(ds, batch_size=cfg.batch_size, shuffle=True, num_workers=cfg.num_workers)

    model = build_model(cfg).to(device)
    if distributed:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device.index])
    loss_fn = DiceLoss(smooth_nr=0, smooth_dr=1e-5, squared_pred=True, to_onehot_y=False, sigmoid=True)
    opt = torch.optim.Adam(model.parameters(), cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=cfg.max_epochs)
    scaler = torch.cuda.amp.GradScaler(enabled=cfg.amp)

    for epoch in range(cfg.max_epochs):
        model.train()
        for batch in loader:
            x, y = batch["image"].to(device), batch["label"].to(device)
            opt.zero_grad()
            with torch.autocast("cuda", enabled=cfg.amp):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        sched.step()
        print(f"epoch {epoch + 1}/{cfg.max_epochs} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
