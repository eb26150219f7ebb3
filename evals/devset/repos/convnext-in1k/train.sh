#!/bin/bash
# ConvNeXt-B ImageNet-1k recipe (300 epochs, AdamW, EMA). Extra args are appended: ./train.sh --epochs 100
set -e
NUM_PROC=${NUM_PROC:-8}
DATA_DIR=${DATA_DIR:-/datasets/imagenet}

ARGS=(
  --data-dir "$DATA_DIR"
  --dataset imagenet
  --model convnext_base
  --drop-path 0.5
  --epochs 300
  --warmup-epochs 20
  --batch-size 128          # per GPU; 8 x 128 x grad-accum 4 = 4096
  --grad-accum-steps 4
  --opt adamw
  --lr 4e-3
  --weight-decay 0.05
  --sched cosine
  --aa rand-m9-mstd0.5-inc1
  --mixup 0.8 --cutmix 1.0
  --smoothing 0.1
  --reprob 0.25
  --model-ema --model-ema-decay 0.9999
  --amp
  --workers 10
  --pin-mem
)

# Older recipe, kept for reference (SGD, 90 epochs):
# ARGS+=(--opt sgd --lr 0.5 --epochs 90 --batch-size 256)

if [[ -n "$RESUME" ]]; then
  ARGS+=(--resume "$RESUME")
fi

torchrun --nproc_per_node="$NUM_PROC" train.py "${ARGS[@]}" "$@"
