"""Hyperparameter configuration to run the example on 8 x Nvidia V100 GPUs."""
from configs import default as default_lib


def get_config():
    """Get the hyperparameter configuration to train on 8 x Nvidia V100 GPUs."""
    # Override default configuration to avoid duplication of field definition.
    config = default_lib.get_config()

    config.batch_size = 512
    config.cache = True
    config.half_precision = True
    # config.num_epochs = 90.0   # tried for the 90-epoch table; back to 100
    return config
