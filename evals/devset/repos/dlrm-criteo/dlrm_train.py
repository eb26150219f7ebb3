# Deep Learning Recommendation Model (DLRM) training, trimmed to what our benchmarks use.
#
# Architecture is given as strings: --arch-mlp-bot "13-512-256-64" is the dense-feature MLP,
# --arch-sparse-feature-size is the embedding dim, embedding table rows come from the dataset's
# per-feature cardinalities (capped by --max-ind-range), so the model size is only known once
# the processed day_fea_count.npz has been read.
import argparse
import sys
import time

import numpy as np
import torch
import torch.nn as nn

import data_utils


class DLRM_Net(nn.Module):
    def create_mlp(self, ln, sigmoid_layer):
        layers = nn.ModuleList()
        for i in range(0, ln.size - 1):
            layers.append(nn.Linear(int(ln[i]), int(ln[i + 1]), bias=True))
            layers.append(nn.Sigmoid() if i == sigmoid_layer else nn.ReLU())
        return nn.Sequential(*layers)

    def create_emb(self, m, ln):
        return nn.ModuleList([nn.EmbeddingBag(int(n), m, mode="sum", sparse=True) for n in ln])

    def __init__(self, m_spa, ln_emb, ln_bot, ln_top, arch_interaction_op="dot", sigmoid_top=-1):
        super().__init__()
        self.emb_l = self.create_emb(m_spa, ln_emb)
        self.bot_l = self.create_mlp(ln_bot, -1)
        self.top_l = self.create_mlp(ln_top, sigmoid_top)
        self.arch_interaction_op = arch_interaction_op

    def interact_features(self, x, ly):
        (batch_size, d) = x.shape
        T = torch.cat([x] + ly, dim=1).view((batch_size, -1, d))
        Z = torch.bmm(T, torch.transpose(T, 1, 2))
        _, ni, nj = Z.shape
        li = torch.tensor([i for i in range(ni) for j in range(i)])
        lj = torch.tensor([j for i in range(nj) for j in range(i)])
        return torch.cat([x, Z[:, li, lj]], dim=1)

    def forward(self, dense_x, lS_o, lS_i):
        x = self.bot_l(dense_x)
        ly = [E(lS_i[k], lS_o[k]) for k, E in enumerate(self.emb_l)]
        return self.top_l(self.interact_features(x, ly))


def main():
    parser = argparse.ArgumentParser(description="Train Deep Learning Recommendation Model (DLRM)")
    parser.add_argument("--arch-sparse-feature-size", type=int, default=2)
    parser.add_argument("--arch-embedding-size", type=str, default="4-3-2")
    parser.add_argument("--arch-mlp-bot", type=str, default="4-3-2")
    parser.add_argument("--arch-mlp-top", type=str, default="4-2-1")
    parser.add_argument("--arch-interaction-op", type=str, default="dot")
    parser.add_argument("--max-ind-range", type=int, default=-1)
    parser.add_argument("--data-generation", type=str, default="random")  # synthetic or dataset
    parser.add_argument("--data-set", type=str, default="kaggle")  # or terabyte
    parser.add_argument("--raw-data-file", type=str, default="")
    parser.add_argument("--processed-data-file", type=str, default="")
    parser.add_argument("--memory-map", action="store_true", default=False)
    parser.add_argument("--data-sub-sample-rate", type=float, default=0.0)  # in [0, 1]
    parser.add_argument("--loss-function", type=str, default="mse")  # or bce or wbce
    parser.add_argument("--round-targets", type=bool, default=False)
    parser.add_argument("--num-workers", type=int, default=0)
    parser.add_argument("--mini-batch-size", type=int, default=1)
    parser.add_argument("--nepochs", type=int, default=1)
    parser.add_argument("--num-batches", type=int, default=0, help="0 = full epoch")
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--print-freq", type=int, default=1)
    parser.add_argument("--test-freq", type=int, default=-1)
    parser.add_argument("--test-mini-batch-size", type=int, default=-1)
    parser.add_argument("--test-num-workers", type=int, default=-1)
    parser.add_argument("--print-time", action="store_true", default=False)
    parser.add_argument("--use-gpu", action="store_true", default=False)
    parser.add_argument("--mlperf-logging", action="store_true", default=False)
    args = parser.parse_args()

    device = torch.device("cuda", 0) if args.use_gpu else torch.device("cpu")
    ln_bot = np.fromstring(args.arch_mlp_bot, dtype=int, sep="-")
    m_spa = args.arch_sparse_feature_size

    if args.data_generation == "dataset":
        train_data, train_ld, test_data, test_ld = data_utils.make_criteo_data_and_loaders(args)
        ln_emb = train_data.counts
        if args.max_ind_range > 0:
            ln_emb = np.array([min(n, args.max_ind_range) for n in ln_emb])
        nbatches = args.num_batches if args.num_batches > 0 else len(train_ld)
    else:
        ln_emb = np.fromstring(args.arch_embedding_size, dtype=int, sep="-")
        train_ld = data_utils.make_random_loader(args, ln_emb, ln_bot[0])
        nbatches = args.num_batches

    num_fea = ln_emb.size + 1
    num_int = (num_fea * (num_fea - 1)) // 2 + ln_bot[-1]
    ln_top = np.fromstring(f"{num_int}-" + args.arch_mlp_top.split("-", 1)[1], dtype=int, sep="-")

    dlrm = DLRM_Net(m_spa, ln_emb, ln_bot, ln_top, args.arch_interaction_op, sigmoid_top=ln_top.size - 2)
    dlrm = dlrm.to(device)
    print("model params:", sum(p.numel() for p in dlrm.parameters()))
    optimizer = torch.optim.SGD(dlrm.parameters(), lr=args.learning_rate)
    loss_fn = torch.nn.BCELoss(reduction="mean") if args.loss_function == "bce" else torch.nn.MSELoss()

    for k in range(args.nepochs):
        t0 = time.time()
        for j, (X, lS_o, lS_i, T) in enumerate(train_ld):
            if j >= nbatches:
                break
            Z = dlrm(X.to(device), [o.to(device) for o in lS_o], [i.to(device) for i in lS_i])
            E = loss_fn(Z, T.to(device))
            optimizer.zero_grad()
            E.backward()
            optimizer.step()
            if j % args.print_freq == 0:
                print(f"epoch {k} it {j}/{nbatches} loss {E.item():.6f} {(time.time() - t0) * 1000 / (j + 1):.2f} ms/it",
                      flush=True)


if __name__ == "__main__":
    sys.exit(main())
