import lightning.pytorch as pl
import timm
import torch
import torch.nn.functional as F


class ViTClassifier(pl.LightningModule):
    def __init__(self, model_name: str = "vit_tiny_patch16_224", num_classes: int = 10, pretrained: bool = True,
                 lr: float = 3e-4, weight_decay: float = 0.0, warmup_epochs: int = 0, label_smoothing: float = 0.0):
        super().__init__()
        self.save_hyperparameters()
        self.net = timm.create_model(model_name, pretrained=pretrained, num_classes=num_classes)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y, label_smoothing=self.hparams.label_smoothing)
        self.log("train_loss", loss, prog_bar=True, sync_dist=True)
        return loss

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay)
        total = self.trainer.estimated_stepping_batches
        warm = int(total * self.hparams.warmup_epochs / max(1, self.trainer.max_epochs))
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=self.hparams.lr, total_steps=total,
                                                    pct_start=max(warm / total, 1e-3))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}
