# GPT-2 medium-sized model trained from scratch on OpenWebText
# launch as the following (e.g. in a screen session) and wait ~5 days:
# $ torchrun --standalone --nproc_per_node=8 train.py config/train_gpt2_medium.py

wandb_log = True
wandb_project = 'owt'
wandb_run_name = 'gpt2-350M'

# these make the total batch size be ~0.5M
# 12 batch size * 1024 block size * 5 gradaccum * 8 GPUs = 491,520
batch_size = 12
block_size = 1024
gradient_accumulation_steps = 5 * 8

n_layer = 24
n_head = 16
n_embd = 1024
dropout = 0.0

learning_rate = 3e-4
max_iters = 600000
lr_decay_iters = 600000
min_lr = 3e-5

# eval stuff
eval_interval = 1000
eval_iters = 200
log_interval = 10

# weight decay
weight_decay = 1e-1
