#!/usr/bin/env bash
# Launch SFT on a single 8-GPU node. Every flag below is a default: anything passed on the command
# line is appended after them and wins (argparse keeps the last occurrence).
#
#   bash scripts/run_sft.sh --learning_rate 5e-6
#   MODEL=Qwen/Qwen2.5-7B NGPUS=4 bash scripts/run_sft.sh --max_steps 2000
set -euo pipefail

MODEL=${MODEL:-Qwen/Qwen2.5-14B}
DATA=${DATA:-HuggingFaceH4/ultrachat_200k}
NGPUS=${NGPUS:-8}
OUT=${OUT:-outputs/$(basename "$MODEL")-sft}

export OMP_NUM_THREADS=8
export TOKENIZERS_PARALLELISM=false
# export NCCL_DEBUG=INFO

torchrun --nnodes 1 --nproc_per_node "$NGPUS" --master_port "${PORT:-29500}" sft.py \
    --model "$MODEL" \
    --dataset "$DATA" \
    --split train_sft \
    --output_dir "$OUT" \
    --max_seq_len 4096 \
    --per_device_batch_size 2 \
    --grad_accum 8 \
    --learning_rate 1e-5 \
    --warmup_ratio 0.03 \
    --num_epochs 2 \
    --num_workers 4 \
    --zero_stage 3 \
    --gradient_checkpointing \
    "$@"
