"""Fine-tune phi-2 on GSM8K chain-of-thought answers with DeepSpeed ZeRO.

The DeepSpeed config is built in code (see build_ds_config) so that batch arithmetic is checked
in one place: global = micro * grad_accum * world_size.
"""
import argparse
import math
import os

import deepspeed
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler
from transformers import AutoModelForCausalLM, AutoTokenizer

from gsm8k import GSM8KDataset

BASE_MODEL = "microsoft/phi-2"


def parse():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=BASE_MODEL)
    ap.add_argument("--data", default="openai/gsm8k")
    ap.add_argument("--micro_batch", type=int, default=4)
    ap.add_argument("--global_batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-5)
    ap.add_argument("--min_lr_ratio", type=float, default=0.1)
    ap.add_argument("--num_steps", type=int, default=0, help="optimizer steps; 0 = derive from --epochs")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--zero", type=int, default=2)
    ap.add_argument("--max_len", type=int, default=1024)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--local_rank", type=int, default=-1)
    return ap.parse_args()


def build_ds_config(args, world_size, total_steps):
    assert args.global_batch % (args.micro_batch * world_size) == 0, "global batch must divide evenly"
    grad_accum = args.global_batch // (args.micro_batch * world_size)
    return {
        "train_batch_size": args.global_batch,
        "train_micro_batch_size_per_gpu": args.micro_batch,
        "gradient_accumulation_steps": grad_accum,
        "gradient_clipping": 1.0,
        "bf16": {"enabled": True},
        "optimizer": {
            "type": "AdamW",
            "params": {"lr": args.lr, "betas": [0.9, 0.95], "weight_decay": 0.1},
        },
        "scheduler": {
            "type": "WarmupCosineLR",
            "params": {
                "total_num_steps": total_steps,
                "warmup_num_steps": int(0.05 * total_steps),
                "cos_min_ratio": args.min_lr_ratio,
            },
        },
        "zero_optimization": {"stage": args.zero, "overlap_comm": True},
        "activation_checkpointing": {"partition_activations": False},
        "steps_per_print": 20,
    }


def main():
    args = parse()
    deepspeed.init_distributed()
    world = dist.get_world_size()
    tok = AutoTokenizer.from_pretrained(args.model)
    tok.pad_token = tok.eos_token
    ds = GSM8KDataset(args.data, tok, args.max_len, split="train")

    steps_per_epoch = math.ceil(len(ds) / args.global_batch)
    total_steps = args.num_steps if args.num_steps > 0 else steps_per_epoch * args.epochs
    ds_config = build_ds_config(args, world, total_steps)

    model = AutoModelForCausalLM.from_pretrained(args.model, torch_dtype=torch.bfloat16)
    model.gradient_checkpointing_enable()
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=ds_config)

    sampler = DistributedSampler(ds, shuffle=True, seed=0)
    loader = DataLoader(ds, batch_size=args.micro_batch, sampler=sampler, num_workers=args.workers,
                        collate_fn=ds.collate)
    step, epoch = 0, 0
    while step < total_steps:
        sampler.set_epoch(epoch)
        for batch in loader:
            batch = {k: v.to(engine.device) for k, v in batch.items()}
            loss = engine(**batch).loss
            engine.backward(loss)
            engine.step()
            if engine.is_gradient_accumulation_boundary():
                step += 1
                if step >= total_steps:
                    break
        epoch += 1
    engine.save_checkpoint(os.environ.get("CKPT_DIR", "ckpt/phi2-gsm8k"))


if __name__ == "__main__":
    main()
