#!/usr/bin/env bash
# Zephyr-7B-beta style DPO on UltraFeedback (8 x H100, ZeRO-3).
set -e
accelerate launch --config_file configs/accelerate/deepspeed_zero3.yaml dpo.py \
  --model_name_or_path HuggingFaceH4/mistral-7b-sft-beta \
  --per_device_train_batch_size 2 \
  --learning_rate 5e-7 \
  --beta 0.01 \
  --num_train_epochs 1 \
  --output_dir out/zephyr-7b-dpo \
  "$@"
