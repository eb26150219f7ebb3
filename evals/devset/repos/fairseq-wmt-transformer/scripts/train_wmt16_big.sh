#!/usr/bin/env bash
# Scaling NMT (Ott et al., 2018) recipe on WMT'16 En-De, 8 x V100/A100.
# Effective batch ~ 3584 tok x 8 GPUs x UPDATE_FREQ.
set -euo pipefail

export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0,1,2,3,4,5,6,7}
UPDATE_FREQ=${UPDATE_FREQ:-16}
DATA=data-bin/wmt16_en_de_bpe32k      # joined dictionary, 32,768 types incl. specials
SAVE=checkpoints/wmt16_en_de_big

# old recipe (no update-freq, lr 0.001) -- kept for reference, diverged on A100s
# fairseq-train $DATA --arch transformer_vaswani_wmt_en_de_big --lr 0.001 --max-tokens 4096 --max-epoch 40

fairseq-train $DATA \
    --arch transformer_vaswani_wmt_en_de_big --share-all-embeddings \
    --optimizer adam --adam-betas '(0.9, 0.98)' --clip-norm 0.0 \
    --lr 0.0005 --lr-scheduler inverse_sqrt --warmup-updates 4000 --warmup-init-lr 1e-07 \
    --dropout 0.3 --weight-decay 0.0 \
    --criterion label_smoothed_cross_entropy --label-smoothing 0.1 \
    --max-tokens 3584 --update-freq "$UPDATE_FREQ" \
    --max-update 300000 --save-interval-updates 10000 --keep-interval-updates 20 \
    --fp16 --save-dir "$SAVE" "$@"
