import lightning.pytorch as pl
from datasets import Audio, load_dataset
from torch.utils.data import DataLoader
from transformers import WhisperProcessor


class SpeechDataModule(pl.LightningDataModule):
    def __init__(self, pretrained, dataset, config, train_split, eval_split, sampling_rate=16000,
                 max_duration_s=30, batch_size=8, num_workers=2):
        super().__init__()
        self.processor = WhisperProcessor.from_pretrained(pretrained)
        self.args = dict(dataset=dataset, config=config, train_split=train_split, eval_split=eval_split)
        self.sampling_rate = sampling_rate
        self.batch_size = batch_size
        self.num_workers = num_workers

    def setup(self, stage=None):
        a = self.args
        ds = load_dataset(a["dataset"], a["config"], split=a["train_split"])
        ds = ds.cast_column("audio", Audio(sampling_rate=self.sampling_rate))
        self.train = ds.map(self._prepare, remove_columns=ds.column_names)

    def _prepare(self, batch):
        audio = batch["audio"]
        feats = self.processor.feature_extractor(audio["array"], sampling_rate=audio["sampling_rate"])
        text = batch.get("sentence") or batch.get("text")
        return {"input_features": feats.input_features[0], "labels": self.processor.tokenizer(text).input_ids}

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=self.batch_size, shuffle=True,
                          num_workers=self.num_workers, collate_fn=self._collate)

    def _collate(self, feats):
        inp = self.processor.feature_extractor.pad([{"input_features": f["input_features"]} for f in feats],
                                                   return_tensors="pt")
        lab = self.processor.tokenizer.pad([{"input_ids": f["labels"]} for f in feats], return_tensors="pt")
        labels = lab["input_ids"].masked_fill(lab.attention_mask.ne(1), -100)
        return {"input_features": inp["input_features"], "labels": labels}
