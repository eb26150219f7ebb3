"""Chat SFT for decoder-only models (Qwen / Llama families) with FSDP via accelerate.

Length is --num_epochs unless --max_steps > 0, in which case training stops after that many
optimizer steps (the epoch count is then only an upper bound).
"""
import argparse
import math
import os

import torch
from accelerate import Accelerator
from datasets import load_dataset
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM, AutoTokenizer, get_cosine_schedule_with_warmup

from chat_data import ChatCollator, tokenize_conversations


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="Qwen/Qwen2.5-0.5B")
    p.add_argument("--dataset", default="HuggingFaceH4/ultrachat_200k")
    p.add_argument("--split", default="train_sft")
    p.add_argument("--output_dir", default="outputs/debug")
    p.add_argument("--max_seq_len", type=int, default=2048)
    p.add_argument("--per_device_batch_size", type=int, default=1)
    p.add_argument("--grad_accum", type=int, default=1)
    p.add_argument("--learning_rate", type=float, default=2e-5)
    p.add_argument("--weight_decay", type=float, default=0.0)
    p.add_argument("--warmup_ratio", type=float, default=0.0)
    p.add_argument("--num_epochs", type=int, default=1)
    p.add_argument("--max_steps", type=int, default=-1)
    p.add_argument("--num_workers", type=int, default=2)
    p.add_argument("--zero_stage", type=int, default=2, help="kept for CLI compatibility; FSDP is used")
    p.add_argument("--gradient_checkpointing", action="store_true")
    p.add_argument("--seed", type=int, default=42)
    return p.parse_args()


def main():
    args = parse_args()
    accelerator = Accelerator(gradient_accumulation_steps=args.grad_accum, mixed_precision="bf16")
    tok = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, torch_dtype=torch.bfloat16)
    if args.gradient_checkpointing:
        model.gradient_checkpointing_enable()

    ds = load_dataset(args.dataset, split=args.split)
    ds = ds.map(lambda ex: tokenize_conversations(ex, tok, args.max_seq_len),
                remove_columns=ds.column_names, num_proc=16)
    loader = DataLoader(ds, batch_size=args.per_device_batch_size, shuffle=True,
                        num_workers=args.num_workers, collate_fn=ChatCollator(tok), pin_memory=True)

    opt = torch.optim.AdamW(model.parameters(), lr=args.learning_rate, weight_decay=args.weight_decay,
                            betas=(0.9, 0.95))
    steps_per_epoch = math.ceil(len(loader) / args.grad_accum)
    total_steps = args.max_steps if args.max_steps > 0 else steps_per_epoch * args.num_epochs
    sched = get_cosine_schedule_with_warmup(opt, int(args.warmup_ratio * total_steps), total_steps)
    model, opt, loader, sched = accelerator.prepare(model, opt, loader, sched)

    step = 0
    for epoch in range(args.num_epochs):
        model.train()
        for batch in loader:
            with accelerator.accumulate(model):
                loss = model(**batch).loss
                accelerator.backward(loss)
                if accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                sched.step()
                opt.zero_grad()
            if accelerator.sync_gradients:
                step += 1
                if step % 10 == 0:
                    accelerator.print(f"epoch {epoch} step {step}/{total_steps} loss {loss.item():.4f}")
                if step >= total_steps:
                    break
        if step >= total_steps:
            break

    accelerator.wait_for_everyone()
    unwrapped = accelerator.unwrap_model(model)
    unwrapped.save_pretrained(os.path.join(args.output_dir, "final"),
                              save_function=accelerator.save,
                              state_dict=accelerator.get_state_dict(model))


if __name__ == "__main__":
    main()
