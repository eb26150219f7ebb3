import torch
from datasets import load_dataset
from torch.utils.data import Dataset

TEMPLATE = "Question: {question}\nAnswer: "


class GSM8KDataset(Dataset):
    """GSM8K 'main' config: 7,473 training problems with worked solutions."""

    def __init__(self, name, tok, max_len, split="train"):
        self.rows = load_dataset(name, "main", split=split)
        self.tok = tok
        self.max_len = max_len

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        r = self.rows[i]
        prompt = self.tok(TEMPLATE.format(question=r["question"]))["input_ids"]
        answer = self.tok(r["answer"] + self.tok.eos_token)["input_ids"]
        ids = (prompt + answer)[: self.max_len]
        labels = ([-100] * len(prompt) + answer)[: self.max_len]
        return ids, labels

    def collate(self, items):
        n = max(len(i) for i, _ in items)
        ids = torch.full((len(items), n), self.tok.pad_token_id)
        lab = torch.full((len(items), n), -100)
        for k, (i, l) in enumerate(items):
            ids[k, : len(i)] = torch.tensor(i)
            lab[k, : len(l)] = torch.tensor(l)
        return {"input_ids": ids, "labels": lab, "attention_mask": ids.ne(self.tok.pad_token_id)}
