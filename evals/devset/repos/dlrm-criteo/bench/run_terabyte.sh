#!/bin/bash
# MLPerf-style Criteo Terabyte run on one GPU (embedding tables capped at 40M rows).
if [[ $# == 1 ]]; then
    dlrm_extra_option=$1
else
    dlrm_extra_option=""
fi

python dlrm_train.py --arch-sparse-feature-size=128 --arch-mlp-bot="13-512-256-128" \
    --arch-mlp-top="1024-1024-512-256-1" --max-ind-range=40000000 --data-generation=dataset \
    --data-set=terabyte --raw-data-file=/data/criteo_tb/day --processed-data-file=/data/criteo_tb/terabyte_processed.npz \
    --loss-function=bce --round-targets=True --learning-rate=1.0 --mini-batch-size=2048 --print-freq=2048 \
    --print-time --test-freq=102400 --test-mini-batch-size=16384 --test-num-workers=16 --memory-map \
    --mlperf-logging --nepochs=1 --num-workers=8 --use-gpu $dlrm_extra_option 2>&1 | tee run_terabyte_gpu.log

echo "done"
