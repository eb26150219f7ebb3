from dataclasses import dataclass

import torch

IGNORE = -100


def tokenize_conversations(example, tok, max_len):
    ids, labels = [], []
    for turn in example["messages"]:
        piece = tok.apply_chat_template([turn], tokenize=True, add_generation_prompt=False)
        ids += piece
        labels += piece if turn["role"] == "assistant" else [IGNORE] * len(piece)
    return {"input_ids": ids[:max_len], "labels": labels[:max_len]}


@dataclass
class ChatCollator:
    tok: object

    def __call__(self, feats):
        n = max(len(f["input_ids"]) for f in feats)
        pad = self.tok.pad_token_id
        ids = torch.full((len(feats), n), pad)
        lab = torch.full((len(feats), n), IGNORE)
        for i, f in enumerate(feats):
            ids[i, : len(f["input_ids"])] = torch.tensor(f["input_ids"])
            lab[i, : len(f["labels"])] = torch.tensor(f["labels"])
        return {"input_ids": ids, "labels": lab, "attention_mask": ids.ne(pad)}
