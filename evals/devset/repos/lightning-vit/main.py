"""LightningCLI entry point.

    python main.py fit --config configs/vit.yaml --trainer.max_epochs 30
"""
from lightning.pytorch.cli import LightningCLI

from vitcls.data import TorchvisionDataModule  # noqa: F401  (registered for the CLI)
from vitcls.model import ViTClassifier  # noqa: F401


def cli_main():
    LightningCLI(
        ViTClassifier,
        TorchvisionDataModule,
        save_config_kwargs={"overwrite": True},
        seed_everything_default=42,
    )


if __name__ == "__main__":
    cli_main()
