import lightning.pytorch as pl
import torch
from transformers import WhisperForConditionalGeneration, get_linear_schedule_with_warmup


class WhisperFineTuner(pl.LightningModule):
    def __init__(self, model_cfg, optim_cfg, total_steps):
        super().__init__()
        self.model = WhisperForConditionalGeneration.from_pretrained(model_cfg.pretrained)
        if model_cfg.get("freeze_encoder"):
            self.model.freeze_encoder()
        self.optim_cfg = optim_cfg
        self.total_steps = total_steps

    def training_step(self, batch, _):
        out = self.model(**batch)
        self.log("loss", out.loss, prog_bar=True)
        return out.loss

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.optim_cfg.lr, weight_decay=self.optim_cfg.weight_decay)
        sched = get_linear_schedule_with_warmup(opt, self.optim_cfg.warmup_steps, self.total_steps)
        return [opt], [{"scheduler": sched, "interval": "step"}]
