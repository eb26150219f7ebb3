import lightning as L
import torch
import torch.nn.functional as F


class Classifier(L.LightningModule):
    def __init__(self, net, optim_cfg, max_epochs: int):
        super().__init__()
        self.net = net
        self.optim_cfg = optim_cfg
        self.max_epochs = max_epochs

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y, label_smoothing=0.1)
        self.log("train/loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        c = self.optim_cfg
        if c.name == "sgd":
            opt = torch.optim.SGD(self.parameters(), lr=c.lr, momentum=c.momentum,
                                  weight_decay=c.weight_decay, nesterov=c.nesterov)
        else:
            opt = torch.optim.AdamW(self.parameters(), lr=c.lr, weight_decay=c.weight_decay)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=self.max_epochs)
        return [opt], [sched]
