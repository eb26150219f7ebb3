"""Trimmed fork of fairseq (internal patches for our cluster); install with `pip install -e .`."""
from setuptools import find_packages, setup

setup(
    name="fairseq",
    version="0.12.3+lab",
    packages=find_packages(exclude=["scripts", "examples"]),
    install_requires=["torch>=1.13", "hydra-core>=1.0.7,<1.1", "omegaconf<2.1", "sacrebleu>=1.4.12"],
    entry_points={
        "console_scripts": [
            "fairseq-preprocess = fairseq_cli.preprocess:cli_main",
            "fairseq-train = fairseq_cli.train:cli_main",
            "fairseq-generate = fairseq_cli.generate:cli_main",
        ],
    },
)
