"""Abstractive summarization (CNN/DailyMail) with T5 and DeepSpeed.

Note: the optimizer and its lr come from the DeepSpeed JSON (`optimizer` block). --lr below is only
used by the non-DeepSpeed debug path (--no_deepspeed).
"""
import argparse
import os

import deepspeed
import torch
from datasets import load_dataset
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from transformers import AutoTokenizer, T5ForConditionalGeneration


def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", type=str, default="t5-base")
    parser.add_argument("--dataset", type=str, default="cnn_dailymail")
    parser.add_argument("--dataset_config", type=str, default="3.0.0")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--batch_size", type=int, default=16, help="debug path only")
    parser.add_argument("--num_workers", type=int, default=2)
    parser.add_argument("--max_source_len", type=int, default=512)
    parser.add_argument("--max_target_len", type=int, default=128)
    parser.add_argument("--no_deepspeed", action="store_true")
    parser.add_argument("--local_rank", type=int, default=-1)
    parser = deepspeed.add_config_arguments(parser)  # adds --deepspeed / --deepspeed_config
    return parser.parse_args()


def build_dataset(args, tokenizer):
    raw = load_dataset(args.dataset, args.dataset_config, split="train")

    def preprocess(batch):
        inputs = ["summarize: " + a for a in batch["article"]]
        model_inputs = tokenizer(inputs, max_length=args.max_source_len, truncation=True, padding="max_length")
        labels = tokenizer(text_target=batch["highlights"], max_length=args.max_target_len, truncation=True,
                           padding="max_length")
        model_inputs["labels"] = [[(t if t != tokenizer.pad_token_id else -100) for t in l]
                                  for l in labels["input_ids"]]
        return model_inputs

    ds = raw.map(preprocess, batched=True, remove_columns=raw.column_names, num_proc=8)
    ds.set_format("torch")
    return ds


def main():
    args = get_args()
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = T5ForConditionalGeneration.from_pretrained(args.model)
    train_ds = build_dataset(args, tokenizer)

    if args.no_deepspeed:
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
        loader = DataLoader(train_ds, batch_size=args.batch_size, shuffle=True, num_workers=args.num_workers)
        model.cuda().train()
        for epoch in range(args.epochs):
            for batch in loader:
                loss = model(**{k: v.cuda() for k, v in batch.items()}).loss
                loss.backward()
                opt.step()
                opt.zero_grad()
        return

    deepspeed.init_distributed()
    engine, _, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())
    sampler = DistributedSampler(train_ds, shuffle=True)
    loader = DataLoader(train_ds, batch_size=engine.train_micro_batch_size_per_gpu(), sampler=sampler,
                        num_workers=args.num_workers, pin_memory=True)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for step, batch in enumerate(loader):
            batch = {k: v.to(engine.device) for k, v in batch.items()}
            loss = engine(**batch).loss
            engine.backward(loss)
            engine.step()
            if engine.global_rank == 0 and step % 100 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}")
        engine.save_checkpoint(os.path.join("checkpoints", args.model.replace("/", "_")), tag=f"epoch{epoch}")


if __name__ == "__main__":
    main()
