import lightning.pytorch as pl
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

_DATASETS = {"cifar10": datasets.CIFAR10, "cifar100": datasets.CIFAR100, "food101": datasets.Food101}


class TorchvisionDataModule(pl.LightningDataModule):
    def __init__(self, dataset: str = "cifar10", root: str = "./data", image_size: int = 224,
                 batch_size: int = 32, num_workers: int = 4):
        super().__init__()
        self.save_hyperparameters()

    def setup(self, stage=None):
        tf = transforms.Compose([transforms.RandomResizedCrop(self.hparams.image_size), transforms.ToTensor()])
        cls = _DATASETS[self.hparams.dataset]
        if self.hparams.dataset == "food101":
            self.train = cls(self.hparams.root, split="train", transform=tf, download=True)
        else:
            self.train = cls(self.hparams.root, train=True, transform=tf, download=True)

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=self.hparams.batch_size, shuffle=True,
                          num_workers=self.hparams.num_workers, persistent_workers=True)
