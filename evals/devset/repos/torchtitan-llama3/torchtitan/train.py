"""Entry point: python -m torchtitan.train --job.config_file <toml> [--section.key value ...]"""
import torch

from torchtitan.config_manager import JobConfig
from torchtitan.datasets.hf_datasets import build_hf_dataloader
from torchtitan.models.llama3 import Transformer, llama3_configs


def main(job_config: JobConfig):
    model_args = llama3_configs[job_config.model.flavor]
    with torch.device("meta"):
        model = Transformer(model_args)
    dataloader = build_hf_dataloader(dp_world_size=1, dp_rank=0, tokenizer=None, job_config=job_config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=job_config.optimizer.lr, eps=job_config.optimizer.eps,
                                  fused=True)
    data_iter = iter(dataloader)
    step = 0
    while step < job_config.training.steps:
        step += 1
        for _ in range(job_config.training.gradient_accumulation_steps):
            inputs, labels = next(data_iter)
            loss = torch.nn.functional.cross_entropy(model(inputs).flatten(0, 1), labels.flatten())
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), job_config.training.max_norm)
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    config = JobConfig()
    config.parse_args()
    main(config)
