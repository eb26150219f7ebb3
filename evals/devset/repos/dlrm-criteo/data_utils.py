"""Criteo Kaggle / Terabyte loading (binary pre-processed day files)."""
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class CriteoDataset(Dataset):
    def __init__(self, dataset, max_ind_range, sub_sample_rate, split, raw_path, pro_data, memory_map):
        days = 24 if dataset == "terabyte" else 7
        counts_file = raw_path + "_fea_count.npz"
        with np.load(counts_file) as data:
            self.counts = data["counts"]
        self.days = days
        self.split = split
        self.pro_data = pro_data

    def __len__(self):
        raise NotImplementedError("binary day files are read by the memory-mapped reader in production")

    def __getitem__(self, i):
        raise NotImplementedError


def collate_wrapper_criteo(list_of_tuples):
    transposed = list(zip(*list_of_tuples))
    X_int = torch.log(torch.tensor(transposed[0], dtype=torch.float) + 1)
    X_cat = torch.tensor(transposed[1], dtype=torch.long)
    T = torch.tensor(transposed[2], dtype=torch.float32).view(-1, 1)
    batch_size, feature_count = X_cat.shape
    lS_i = [X_cat[:, i] for i in range(feature_count)]
    lS_o = [torch.tensor(range(batch_size)) for _ in range(feature_count)]
    return X_int, lS_o, lS_i, T


def make_criteo_data_and_loaders(args):
    train_data = CriteoDataset(args.data_set, args.max_ind_range, args.data_sub_sample_rate, "train",
                               args.raw_data_file, args.processed_data_file, args.memory_map)
    test_data = CriteoDataset(args.data_set, args.max_ind_range, args.data_sub_sample_rate, "test",
                              args.raw_data_file, args.processed_data_file, args.memory_map)
    train_loader = DataLoader(train_data, batch_size=args.mini_batch_size, shuffle=False,
                              num_workers=args.num_workers, collate_fn=collate_wrapper_criteo,
                              pin_memory=False, drop_last=False)
    test_loader = DataLoader(test_data, batch_size=args.test_mini_batch_size, shuffle=False,
                             num_workers=args.test_num_workers, collate_fn=collate_wrapper_criteo)
    return train_data, train_loader, test_data, test_loader


def make_random_loader(args, ln_emb, m_den):
    raise NotImplementedError("synthetic data path removed from this snapshot")
