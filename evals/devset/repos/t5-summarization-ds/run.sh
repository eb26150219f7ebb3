#!/bin/bash
# 8x A100-80G; t5-3b fits with ZeRO-2 + bf16 at micro batch 8.
deepspeed --num_gpus 8 train.py --deepspeed --deepspeed_config ds_config.json --model t5-3b --epochs 2 --num_workers 4
