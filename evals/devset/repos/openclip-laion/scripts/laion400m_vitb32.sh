#!/bin/bash
# 4 nodes x 8 GPUs; global batch 32,768 (1024 / GPU). 32 virtual epochs of 400M samples = 12.8B samples seen.
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=8
#SBATCH --gres=gpu:8
#SBATCH --cpus-per-task=12

export MASTER_PORT=12802
export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export PYTHONPATH="$PYTHONPATH:$PWD/src"

srun --cpu_bind=v --accel-bind=gn python -u src/training/main.py \
    --save-frequency 1 \
    --report-to tensorboard \
    --train-data="/data/laion400m/{00000..41455}.tar" \
    --train-num-samples 400000000 \
    --dataset-type webdataset \
    --warmup 2000 \
    --batch-size=1024 \
    --epochs=32 \
    --workers=8 \
    --model ViT-B-32 \
    --name "ViT-B-32-laion400m" \
    --seed 0 \
    --local-loss \
    --gather-with-grad \
    --grad-clip-norm 1.0
