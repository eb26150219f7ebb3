"""ViT configs. Usage: --config=configs/vit.py:<variant>,<dataset>  e.g.  vit.py:b16,imagenet2012

variant in {ti16, s16, b16, b32, l16}; dataset is a TFDS name.
"""
import ml_collections

from configs import default as default_lib

_VARIANTS = {
    "ti16": dict(patch=16, hidden_size=192, mlp_dim=768, num_layers=12, num_heads=3),
    "s16": dict(patch=16, hidden_size=384, mlp_dim=1536, num_layers=12, num_heads=6),
    "b16": dict(patch=16, hidden_size=768, mlp_dim=3072, num_layers=12, num_heads=12),
    "b32": dict(patch=32, hidden_size=768, mlp_dim=3072, num_layers=12, num_heads=12),
    "l16": dict(patch=16, hidden_size=1024, mlp_dim=4096, num_layers=24, num_heads=16),
}


def get_config(arg="b16,imagenet2012"):
    variant, dataset = arg.split(",")
    config = default_lib.get_config()
    config.model = f"ViT-{variant.upper()}"
    config.vit = ml_collections.ConfigDict(_VARIANTS[variant])
    config.dataset = dataset
    config.optimizer = "adamw"
    config.weight_decay = 0.05
    config.learning_rate = 1.5e-4   # per 256 examples
    config.batch_size = 1024
    config.num_epochs = 300.0
    config.warmup_epochs = 20.0
    config.half_precision = True
    return config
