"""Thin wrapper around llm-foundry's trainer so our YAMLs can add project-level callbacks.

    composer train.py yamls/pretrain/mpt-1b.yaml [dotted.key=value ...]

`composer` is the MosaicML launcher (one process per GPU). Durations use Composer time strings:
'24800ba' = batches (optimizer steps), '2ep' = epochs, '26000000000tok' = tokens.
"""
import sys

from llmfoundry.command_utils import train_from_yaml
from omegaconf import OmegaConf as om


def _load(yaml_path, overrides):
    with open(yaml_path) as f:
        cfg = om.load(f)
    cli = om.from_cli(overrides)
    return om.merge(cfg, cli)


if __name__ == "__main__":
    yaml_path, args_list = sys.argv[1], sys.argv[2:]
    cfg = _load(yaml_path, args_list)
    om.resolve(cfg)
    train_from_yaml(yaml_path, args_list)
