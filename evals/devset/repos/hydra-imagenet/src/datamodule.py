import lightning as L
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


class ImageFolderDataModule(L.LightningDataModule):
    def __init__(self, name: str, root: str, num_classes: int, image_size: int,
                 batch_size: int = 64, num_workers: int = 4):
        super().__init__()
        self.save_hyperparameters()

    def setup(self, stage=None):
        hp = self.hparams
        tf = transforms.Compose([
            transforms.RandomResizedCrop(hp.image_size),
            transforms.RandomHorizontalFlip(),
            transforms.ToTensor(),
        ])
        if hp.name == "cifar10":
            self.train = datasets.CIFAR10(hp.root, train=True, transform=tf, download=True)
        else:
            self.train = datasets.ImageFolder(f"{hp.root}/train", transform=tf)

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=self.hparams.batch_size, shuffle=True,
                          num_workers=self.hparams.num_workers, pin_memory=True, drop_last=True)
