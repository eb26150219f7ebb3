"""Direct Preference Optimization (Rafailov et al., 2023) with plain accelerate, no TRL.

    accelerate launch --config_file configs/accelerate/<cfg>.yaml dpo.py --model_name_or_path ...
"""
import argparse
import math

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.utils import set_seed
from datasets import load_dataset
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM, AutoTokenizer, get_scheduler

from src.collator import PreferenceCollator
from src.data import build_pairs


def parse_args():
    p = argparse.ArgumentParser(description="DPO with accelerate")
    p.add_argument("--model_name_or_path", type=str, default="HuggingFaceH4/mistral-7b-sft-beta")
    p.add_argument("--ref_model_name_or_path", type=str, default=None, help="defaults to the policy's init")
    p.add_argument("--dataset_name", type=str, default="HuggingFaceH4/ultrafeedback_binarized")
    p.add_argument("--train_split", type=str, default="train_prefs")
    p.add_argument("--max_length", type=int, default=1024)
    p.add_argument("--max_prompt_length", type=int, default=512)
    p.add_argument("--per_device_train_batch_size", type=int, default=8)
    p.add_argument("--learning_rate", type=float, default=5e-7)
    p.add_argument("--beta", type=float, default=0.1, help="DPO temperature (not a learning rate)")
    p.add_argument("--weight_decay", type=float, default=0.0)
    p.add_argument("--num_train_epochs", type=int, default=1)
    p.add_argument("--max_train_steps", type=int, default=None,
                   help="Total number of training steps. If provided, overrides num_train_epochs.")
    p.add_argument("--gradient_accumulation_steps", type=int, default=1)
    p.add_argument("--lr_scheduler_type", type=str, default="linear")
    p.add_argument("--warmup_ratio", type=float, default=0.1)
    p.add_argument("--dataloader_num_workers", type=int, default=2)
    p.add_argument("--preprocessing_num_workers", type=int, default=16, help="datasets.map processes")
    p.add_argument("--output_dir", type=str, default="out/dpo")
    p.add_argument("--seed", type=int, default=42)
    return p.parse_args()


def dpo_loss(pi_chosen, pi_rejected, ref_chosen, ref_rejected, beta):
    logits = (pi_chosen - pi_rejected) - (ref_chosen - ref_rejected)
    return -F.logsigmoid(beta * logits).mean()


def main():
    args = parse_args()
    # under DeepSpeed the accumulation comes from the accelerate config's deepspeed_config block
    accelerator = Accelerator(gradient_accumulation_steps=args.gradient_accumulation_steps)
    set_seed(args.seed)

    tokenizer = AutoTokenizer.from_pretrained(args.model_name_or_path)
    tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token
    raw = load_dataset(args.dataset_name, split=args.train_split)
    with accelerator.main_process_first():
        train_ds = raw.map(build_pairs(tokenizer, args.max_length, args.max_prompt_length),
                           num_proc=args.preprocessing_num_workers, remove_columns=raw.column_names)

    loader = DataLoader(train_ds, shuffle=True, batch_size=args.per_device_train_batch_size,
                        collate_fn=PreferenceCollator(tokenizer), num_workers=args.dataloader_num_workers)

    policy = AutoModelForCausalLM.from_pretrained(args.model_name_or_path, torch_dtype=torch.bfloat16)
    reference = AutoModelForCausalLM.from_pretrained(args.ref_model_name_or_path or args.model_name_or_path,
                                                     torch_dtype=torch.bfloat16).eval()
    optimizer = torch.optim.AdamW(policy.parameters(), lr=args.learning_rate, weight_decay=args.weight_decay)

    updates_per_epoch = math.ceil(len(loader) / accelerator.gradient_accumulation_steps)
    if args.max_train_steps is None:
        args.max_train_steps = args.num_train_epochs * updates_per_epoch
    else:
        args.num_train_epochs = math.ceil(args.max_train_steps / updates_per_epoch)
    scheduler = get_scheduler(args.lr_scheduler_type, optimizer,
                              num_warmup_steps=int(args.warmup_ratio * args.max_train_steps),
                              num_training_steps=args.max_train_steps)

    policy, reference, optimizer, loader, scheduler = accelerator.prepare(policy, reference, optimizer, loader, scheduler)

    step = 0
    for epoch in range(args.num_train_epochs):
        policy.train()
        for batch in loader:
            with accelerator.accumulate(policy):
                pc, pr = policy_logps(policy, batch)
                with torch.no_grad():
                    rc, rr = policy_logps(reference, batch)
                loss = dpo_loss(pc, pr, rc, rr, args.beta)
                accelerator.backward(loss)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
            if accelerator.sync_gradients:
                step += 1
            if step >= args.max_train_steps:
                break

    accelerator.wait_for_everyone()
    accelerator.unwrap_model(policy).save_pretrained(args.output_dir, save_function=accelerator.save)


def policy_logps(model, batch):
    out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    logps = torch.gather(out.log_softmax(-1)[:, :-1], 2, batch["labels"][:, 1:, None]).squeeze(-1)
    logps = (logps * batch["loss_mask"][:, 1:]).sum(-1)
    half = logps.shape[0] // 2
    return logps[:half], logps[half:]


if __name__ == "__main__":
    main()
