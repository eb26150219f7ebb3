#!/bin/bash
python dlrm_train.py --arch-sparse-feature-size=16 --arch-mlp-bot="13-512-256-64-16" \
    --arch-mlp-top="512-256-1" --data-generation=dataset --data-set=kaggle \
    --raw-data-file=/data/criteo_kaggle/train.txt --processed-data-file=/data/criteo_kaggle/kaggleAdDisplayChallenge_processed.npz \
    --loss-function=bce --round-targets=True --learning-rate=0.1 --mini-batch-size=128 \
    --print-freq=1024 --print-time --test-mini-batch-size=16384 --test-num-workers=16 --nepochs=2 --use-gpu "$@"
