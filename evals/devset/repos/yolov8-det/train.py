"""Train an Ultralytics YOLOv8 detector from one of our run files.

    python train.py --cfg cfg/coco_x.yaml [--epochs N] [--batch N] [--device 0,1,2,3]

The run file holds every argument passed to `YOLO.train`; CLI flags that are given win.
Note: Ultralytics `batch` is the TOTAL batch across all devices (split evenly per GPU).
"""
import argparse
from pathlib import Path

import yaml
from ultralytics import YOLO

FROZEN_KEYS = {"model"}  # not a train() kwarg


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cfg", required=True, help="run file (yaml)")
    ap.add_argument("--epochs", type=int)
    ap.add_argument("--batch", type=int)
    ap.add_argument("--lr0", type=float)
    ap.add_argument("--workers", type=int)
    ap.add_argument("--device", type=str)
    ap.add_argument("--resume", action="store_true")
    args = ap.parse_args()

    run = yaml.safe_load(Path(args.cfg).read_text())
    for key in ("epochs", "batch", "lr0", "workers", "device"):
        val = getattr(args, key)
        if val is not None:
            run[key] = val

    model = YOLO(run["model"])  # *.yaml = from scratch, *.pt = pretrained
    if run.get("pretrained_weights"):
        model = model.load(run.pop("pretrained_weights"))
    kwargs = {k: v for k, v in run.items() if k not in FROZEN_KEYS}
    model.train(resume=args.resume, **kwargs)


if __name__ == "__main__":
    main()
