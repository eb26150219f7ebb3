# Copyright (c) Facebook, Inc. and its affiliates. (trimmed)
"""RoBERTa: A Robustly Optimized BERT Pretraining Approach."""
from fairseq.models import register_model, register_model_architecture
from fairseq.models.fairseq_model import FairseqEncoderModel


@register_model("roberta")
class RobertaModel(FairseqEncoderModel):
    @classmethod
    def build_model(cls, args, task):
        base_architecture(args)
        encoder = RobertaEncoder(args, task.source_dictionary)
        return cls(args, encoder)


@register_model_architecture("roberta", "roberta")
def base_architecture(args):
    args.encoder_layers = getattr(args, "encoder_layers", 12)
    args.encoder_embed_dim = getattr(args, "encoder_embed_dim", 768)
    args.encoder_ffn_embed_dim = getattr(args, "encoder_ffn_embed_dim", 3072)
    args.encoder_attention_heads = getattr(args, "encoder_attention_heads", 12)
    args.max_positions = getattr(args, "max_positions", 512)
    args.untie_weights_roberta = getattr(args, "untie_weights_roberta", False)


@register_model_architecture("roberta", "roberta_base")
def roberta_base_architecture(args):
    base_architecture(args)


@register_model_architecture("roberta", "roberta_large")
def roberta_large_architecture(args):
    args.encoder_layers = getattr(args, "encoder_layers", 24)
    args.encoder_embed_dim = getattr(args, "encoder_embed_dim", 1024)
    args.encoder_ffn_embed_dim = getattr(args, "encoder_ffn_embed_dim", 4096)
    args.encoder_attention_heads = getattr(args, "encoder_attention_heads", 16)
    base_architecture(args)
