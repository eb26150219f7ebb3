"""JobConfig: defaults here < TOML file (--job.config_file) < --section.key CLI overrides."""
import argparse
import sys
from collections import defaultdict

try:
    import tomllib
except ModuleNotFoundError:
    import tomli as tomllib


class JobConfig:
    def __init__(self):
        self.parser = argparse.ArgumentParser(description="torchtitan arg parser.")
        p = self.parser
        p.add_argument("--job.config_file", type=str, default=None)
        p.add_argument("--job.dump_folder", type=str, default="./torchtitan/outputs")
        # model
        p.add_argument("--model.name", type=str, default="llama3")
        p.add_argument("--model.flavor", type=str, default="debugmodel")
        p.add_argument("--model.tokenizer_path", type=str, default="./tests/assets/test_tiktoken.model")
        # optimizer
        p.add_argument("--optimizer.name", type=str, default="AdamW")
        p.add_argument("--optimizer.lr", type=float, default=8e-4)
        p.add_argument("--optimizer.eps", type=float, default=1e-8)
        # lr scheduler
        p.add_argument("--lr_scheduler.warmup_steps", type=int, default=200)
        p.add_argument("--lr_scheduler.decay_type", type=str, default="linear")
        # training
        p.add_argument("--training.dataset", type=str, default="c4_test")
        p.add_argument("--training.dataset_path", type=str, default=None)
        p.add_argument("--training.batch_size", type=int, default=8, help="local (per data-parallel rank) batch size")
        p.add_argument("--training.seq_len", type=int, default=2048)
        p.add_argument("--training.max_norm", type=float, default=1.0, help="max norm for gradient clipping")
        p.add_argument("--training.steps", type=int, default=10000)
        p.add_argument("--training.gradient_accumulation_steps", type=int, default=1)
        # parallelism
        p.add_argument("--parallelism.data_parallel_shard_degree", type=int, default=-1)
        p.add_argument("--parallelism.tensor_parallel_degree", type=int, default=1)
        p.add_argument("--parallelism.pipeline_parallel_degree", type=int, default=1)
        # checkpoint / activation checkpointing / float8 omitted

    def parse_args(self, args_list=sys.argv[1:]):
        args, cmd_args = self.parse_args_from_command_line(args_list)
        config_file = getattr(args, "job.config_file", None)
        args_dict = self._args_to_two_level_dict(args)
        if config_file is not None:
            with open(config_file, "rb") as f:
                for k, v in tomllib.load(f).items():
                    args_dict[k] |= v
        # command line wins over the TOML file
        for section, section_args in self._args_to_two_level_dict(cmd_args).items():
            args_dict[section] |= section_args
        for k, v in args_dict.items():
            setattr(self, k, type("Section", (), v))

    @staticmethod
    def _args_to_two_level_dict(args):
        d = defaultdict(dict)
        for k, v in vars(args).items():
            first, second = k.split(".", 1)
            d[first][second] = v
        return d

    def parse_args_from_command_line(self, args_list):
        args = self.parser.parse_args(args_list)
        aux = argparse.ArgumentParser()
        for arg, val in vars(args).items():
            aux.add_argument("--" + arg, type=type(val) if val is not None else str)
        aux.set_defaults(**{k: None for k in vars(args)})
        cmd_args, _ = aux.parse_known_args(args_list)
        cmd_args = argparse.Namespace(**{k: v for k, v in vars(cmd_args).items() if v is not None})
        return args, cmd_args
