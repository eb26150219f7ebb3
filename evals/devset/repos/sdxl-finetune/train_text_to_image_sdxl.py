#!/usr/bin/env python
# Fine-tune the SDXL UNet on an image-caption dataset (text encoders and VAE frozen).
# Structure follows the diffusers example script; trimmed to the paths we use.
import argparse
import logging
import math
import os

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.utils import ProjectConfiguration, set_seed
from datasets import load_dataset
from diffusers import AutoencoderKL, DDPMScheduler, UNet2DConditionModel
from diffusers.optimization import get_scheduler
from torchvision import transforms
from transformers import AutoTokenizer, CLIPTextModel, CLIPTextModelWithProjection

logger = logging.getLogger(__name__)


def parse_args(input_args=None):
    parser = argparse.ArgumentParser(description="Simple example of a training script.")
    parser.add_argument("--pretrained_model_name_or_path", type=str, required=True)
    parser.add_argument("--pretrained_vae_model_name_or_path", type=str, default=None)
    parser.add_argument("--dataset_name", type=str, default=None)
    parser.add_argument("--train_data_dir", type=str, default=None)
    parser.add_argument("--image_column", type=str, default="image")
    parser.add_argument("--caption_column", type=str, default="text")
    parser.add_argument("--max_train_samples", type=int, default=None)
    parser.add_argument("--output_dir", type=str, default="sdxl-model-finetuned")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--resolution", type=int, default=1024)
    parser.add_argument("--center_crop", action="store_true")
    parser.add_argument("--random_flip", action="store_true")
    parser.add_argument("--train_batch_size", type=int, default=16, help="Batch size (per device) for the training dataloader.")
    parser.add_argument("--num_train_epochs", type=int, default=100)
    parser.add_argument("--max_train_steps", type=int, default=None,
                        help="Total number of training steps to perform.  If provided, overrides num_train_epochs.")
    parser.add_argument("--checkpointing_steps", type=int, default=500)
    parser.add_argument("--gradient_accumulation_steps", type=int, default=1)
    parser.add_argument("--gradient_checkpointing", action="store_true")
    parser.add_argument("--learning_rate", type=float, default=1e-4)
    parser.add_argument("--scale_lr", action="store_true", default=False,
                        help="Scale the learning rate by the number of GPUs, gradient accumulation steps, and batch size.")
    parser.add_argument("--lr_scheduler", type=str, default="constant")
    parser.add_argument("--lr_warmup_steps", type=int, default=500)
    parser.add_argument("--snr_gamma", type=float, default=None)
    parser.add_argument("--use_8bit_adam", action="store_true")
    parser.add_argument("--dataloader_num_workers", type=int, default=0,
                        help="Number of subprocesses to use for data loading. 0 means that the data will be loaded in the main process.")
    parser.add_argument("--adam_beta1", type=float, default=0.9)
    parser.add_argument("--adam_beta2", type=float, default=0.999)
    parser.add_argument("--adam_weight_decay", type=float, default=1e-2)
    parser.add_argument("--adam_epsilon", type=float, default=1e-08)
    parser.add_argument("--max_grad_norm", default=1.0, type=float)
    parser.add_argument("--mixed_precision", type=str, default=None, choices=["no", "fp16", "bf16"])
    parser.add_argument("--report_to", type=str, default="tensorboard")
    parser.add_argument("--use_ema", action="store_true")
    args = parser.parse_args(input_args)
    if args.dataset_name is None and args.train_data_dir is None:
        raise ValueError("Need either a dataset name or a training folder.")
    return args


def main(args):
    accelerator = Accelerator(gradient_accumulation_steps=args.gradient_accumulation_steps,
                              mixed_precision=args.mixed_precision, log_with=args.report_to,
                              project_config=ProjectConfiguration(project_dir=args.output_dir))
    if args.seed is not None:
        set_seed(args.seed)

    noise_scheduler = DDPMScheduler.from_pretrained(args.pretrained_model_name_or_path, subfolder="scheduler")
    tok1 = AutoTokenizer.from_pretrained(args.pretrained_model_name_or_path, subfolder="tokenizer", use_fast=False)
    tok2 = AutoTokenizer.from_pretrained(args.pretrained_model_name_or_path, subfolder="tokenizer_2", use_fast=False)
    te1 = CLIPTextModel.from_pretrained(args.pretrained_model_name_or_path, subfolder="text_encoder")
    te2 = CLIPTextModelWithProjection.from_pretrained(args.pretrained_model_name_or_path, subfolder="text_encoder_2")
    vae_path = args.pretrained_vae_model_name_or_path or args.pretrained_model_name_or_path
    vae = AutoencoderKL.from_pretrained(vae_path, subfolder=None if args.pretrained_vae_model_name_or_path else "vae")
    unet = UNet2DConditionModel.from_pretrained(args.pretrained_model_name_or_path, subfolder="unet")
    for m in (vae, te1, te2):
        m.requires_grad_(False)
    if args.gradient_checkpointing:
        unet.enable_gradient_checkpointing()

    if args.scale_lr:
        args.learning_rate = (
            args.learning_rate * args.gradient_accumulation_steps * args.train_batch_size * accelerator.num_processes
        )

    if args.use_8bit_adam:
        import bitsandbytes as bnb
        optimizer_class = bnb.optim.AdamW8bit
    else:
        optimizer_class = torch.optim.AdamW
    optimizer = optimizer_class(unet.parameters(), lr=args.learning_rate, betas=(args.adam_beta1, args.adam_beta2),
                                weight_decay=args.adam_weight_decay, eps=args.adam_epsilon)

    if args.dataset_name is not None:
        dataset = load_dataset(args.dataset_name)
    else:
        dataset = load_dataset("imagefolder", data_files={"train": os.path.join(args.train_data_dir, "**")})
    train_tf = transforms.Compose([
        transforms.Resize(args.resolution, interpolation=transforms.InterpolationMode.BILINEAR),
        transforms.CenterCrop(args.resolution) if args.center_crop else transforms.RandomCrop(args.resolution),
        transforms.RandomHorizontalFlip() if args.random_flip else transforms.Lambda(lambda x: x),
        transforms.ToTensor(),
        transforms.Normalize([0.5], [0.5]),
    ])

    def preprocess(examples):
        examples["pixel_values"] = [train_tf(im.convert("RGB")) for im in examples[args.image_column]]
        examples["input_ids_1"] = tok1(examples[args.caption_column], padding="max_length", truncation=True,
                                       max_length=tok1.model_max_length, return_tensors="pt").input_ids
        examples["input_ids_2"] = tok2(examples[args.caption_column], padding="max_length", truncation=True,
                                       max_length=tok2.model_max_length, return_tensors="pt").input_ids
        return examples

    train_dataset = dataset["train"].with_transform(preprocess)
    train_dataloader = torch.utils.data.DataLoader(
        train_dataset, shuffle=True, batch_size=args.train_batch_size, num_workers=args.dataloader_num_workers,
        collate_fn=lambda ex: {k: torch.stack([e[k] for e in ex]) for k in ("pixel_values", "input_ids_1", "input_ids_2")},
    )

    num_update_steps_per_epoch = math.ceil(len(train_dataloader) / args.gradient_accumulation_steps)
    if args.max_train_steps is None:
        args.max_train_steps = args.num_train_epochs * num_update_steps_per_epoch
    lr_scheduler = get_scheduler(args.lr_scheduler, optimizer=optimizer,
                                 num_warmup_steps=args.lr_warmup_steps * args.gradient_accumulation_steps,
                                 num_training_steps=args.max_train_steps * args.gradient_accumulation_steps)
    unet, optimizer, train_dataloader, lr_scheduler = accelerator.prepare(unet, optimizer, train_dataloader, lr_scheduler)
    vae.to(accelerator.device)
    te1.to(accelerator.device)
    te2.to(accelerator.device)
    args.num_train_epochs = math.ceil(args.max_train_steps / num_update_steps_per_epoch)

    global_step = 0
    for epoch in range(args.num_train_epochs):
        unet.train()
        for step, batch in enumerate(train_dataloader):
            with accelerator.accumulate(unet):
                latents = vae.encode(batch["pixel_values"].to(vae.dtype)).latent_dist.sample() * vae.config.scaling_factor
                noise = torch.randn_like(latents)
                t = torch.randint(0, noise_scheduler.config.num_train_timesteps, (latents.shape[0],), device=latents.device)
                noisy = noise_scheduler.add_noise(latents, noise, t)
                with torch.no_grad():
                    enc1 = te1(batch["input_ids_1"], output_hidden_states=True)
                    enc2 = te2(batch["input_ids_2"], output_hidden_states=True)
                prompt_embeds = torch.cat([enc1.hidden_states[-2], enc2.hidden_states[-2]], dim=-1)
                add_time_ids = torch.tensor([[args.resolution, args.resolution, 0, 0, args.resolution, args.resolution]],
                                            device=latents.device).repeat(latents.shape[0], 1)
                pred = unet(noisy, t, prompt_embeds,
                            added_cond_kwargs={"text_embeds": enc2[0], "time_ids": add_time_ids}).sample
                loss = F.mse_loss(pred.float(), noise.float(), reduction="mean")
                accelerator.backward(loss)
                if accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(unet.parameters(), args.max_grad_norm)
                optimizer.step()
                lr_scheduler.step()
                optimizer.zero_grad()
            if accelerator.sync_gradients:
                global_step += 1
                if global_step % args.checkpointing_steps == 0 and accelerator.is_main_process:
                    accelerator.save_state(os.path.join(args.output_dir, f"checkpoint-{global_step}"))
            if global_step >= args.max_train_steps:
                break
    accelerator.end_training()


if __name__ == "__main__":
    main(parse_args())
