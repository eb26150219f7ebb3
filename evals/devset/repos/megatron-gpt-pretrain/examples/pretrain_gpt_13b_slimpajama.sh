#!/bin/bash
# 13B, 16 nodes x 8 GPUs, TP=2 PP=4. Sample-based schedule: 300B tokens / 2048 seq = 146,484,375 samples.
set -x
export CUDA_DEVICE_MAX_CONNECTIONS=1

TP=${TP:-2}
PP=${PP:-4}
NNODES=${SLURM_NNODES:-16}
GPUS_PER_NODE=8
GBS=${GBS:-1024}
MBS=${MBS:-1}
LR=${LR:-1.0e-4}

DATA_PREFIX=/lustre/datasets/slimpajama/slimpajama_text_document
TOKENIZER_MODEL=/lustre/tokenizers/llama2/tokenizer.model

MODEL_ARGS=(
    --num-layers 40
    --hidden-size 5120
    --ffn-hidden-size 13824
    --num-attention-heads 40
    --seq-length 2048
    --max-position-embeddings 2048
    --position-embedding-type rope
    --normalization RMSNorm
    --swiglu
    --untie-embeddings-and-output-weights
    --disable-bias-linear
)

TRAINING_ARGS=(
    --micro-batch-size $MBS
    --global-batch-size $GBS
    --train-samples 146484375
    --lr-decay-samples 146484375
    --lr-warmup-samples 2000000
    --lr $LR
    --min-lr 1.0e-5
    --lr-decay-style cosine
    --weight-decay 0.1
    --adam-beta2 0.95
    --clip-grad 1.0
    --bf16
    --use-distributed-optimizer
    --sequence-parallel
)

PARALLEL_ARGS=(
    --tensor-model-parallel-size $TP
    --pipeline-model-parallel-size $PP
)

DATA_ARGS=(
    --data-path $DATA_PREFIX
    --tokenizer-type Llama2Tokenizer
    --tokenizer-model $TOKENIZER_MODEL
    --split 998,1,1
)

srun --ntasks-per-node=$GPUS_PER_NODE python pretrain_gpt.py \
    "${MODEL_ARGS[@]}" "${TRAINING_ARGS[@]}" "${PARALLEL_ARGS[@]}" "${DATA_ARGS[@]}" \
    --log-interval 10 --save-interval 2000 --eval-interval 2000 --eval-iters 20 \
    --save /lustre/ckpt/gpt-13b --load /lustre/ckpt/gpt-13b
