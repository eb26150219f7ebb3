import torch


class PreferenceCollator:
    """Stacks chosen rows then rejected rows into one padded batch of 2*B sequences."""

    def __init__(self, tokenizer):
        self.pad = tokenizer.pad_token_id

    def __call__(self, rows):
        seqs, masks = [], []
        for key in ("chosen_ids", "rejected_ids"):
            for r in rows:
                seqs.append(r["prompt_ids"] + r[key])
                masks.append([0] * len(r["prompt_ids"]) + [1] * len(r[key]))
        n = max(map(len, seqs))
        ids = torch.full((len(seqs), n), self.pad)
        lm = torch.zeros((len(seqs), n), dtype=torch.long)
        for i, (s, m) in enumerate(zip(seqs, masks)):
            ids[i, : len(s)] = torch.tensor(s)
            lm[i, : len(m)] = torch.tensor(m)
        return {"input_ids": ids, "attention_mask": (ids != self.pad).long(), "labels": ids, "loss_mask": lm}
