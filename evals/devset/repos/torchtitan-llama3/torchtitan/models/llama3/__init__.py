from torchtitan.models.llama3.model import TransformerModelArgs, Transformer

__all__ = ["Transformer"]

llama3_configs = {
    "debugmodel": TransformerModelArgs(dim=256, n_layers=6, n_heads=16, vocab_size=2000, rope_theta=500000),
    "8B": TransformerModelArgs(
        dim=4096, n_layers=32, n_heads=32, n_kv_heads=8,
        ffn_dim_multiplier=1.3, multiple_of=1024, rope_theta=500000,
    ),
    "70B": TransformerModelArgs(
        dim=8192, n_layers=80, n_heads=64, n_kv_heads=8,
        ffn_dim_multiplier=1.3, multiple_of=4096, rope_theta=500000,
    ),
    "405B": TransformerModelArgs(
        dim=16384, n_layers=126, n_heads=128, n_kv_heads=8,
        ffn_dim_multiplier=1.2, multiple_of=4096, rope_theta=500000,
    ),
}
