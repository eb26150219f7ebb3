#!/bin/bash
# DeBERTa-v3-large on MNLI (paper setting: lr 6e-6 / bs 64 total / 2 epochs)
accelerate launch --config_file accelerate_config.yaml run_glue_no_trainer.py \
  --model_name_or_path microsoft/deberta-v3-large \
  --task_name mnli \
  --max_length 256 \
  --per_device_train_batch_size 8 \
  --gradient_accumulation_steps 2 \
  --learning_rate 6e-6 \
  --num_warmup_steps 1000 \
  --num_train_epochs 2 \
  --seed 42 \
  --output_dir out/deberta-v3-large-mnli
