"""GraphSAGE node classification on OGB with neighbour sampling (PyG).

Configured entirely through environment variables (the lab's batch system passes env files):

    set -a; source configs/products.env; set +a; python train.py
"""
import os
import time

import torch
import torch.nn.functional as F
from ogb.nodeproppred import Evaluator, PygNodePropPredDataset
from torch_geometric.loader import NeighborLoader

from gnn.model import SAGE


def env(name, default, cast=str):
    value = os.environ.get(name)
    return default if value in (None, "") else cast(value)


DATASET = env("DATASET", "ogbn-products")
ROOT = env("DATA_ROOT", "/data/ogb")
HIDDEN = env("HIDDEN", 256, int)
LAYERS = env("NUM_LAYERS", 3, int)
DROPOUT = env("DROPOUT", 0.5, float)
LR = env("LR", 0.003, float)
EPOCHS = env("EPOCHS", 20, int)
BATCH = env("BATCH_SIZE", 1024, int)
FANOUT = [int(x) for x in env("FANOUT", "15,10,5").split(",")]
WORKERS = env("NUM_WORKERS", 6, int)
EVAL_WORKERS = env("EVAL_WORKERS", 12, int)
# LR_DECAY = env("LR_DECAY", 0.5, float)   # step decay experiment, removed


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dataset = PygNodePropPredDataset(DATASET, root=ROOT)
    split = dataset.get_idx_split()
    data = dataset[0]
    data.y = data.y.view(-1)

    train_loader = NeighborLoader(data, input_nodes=split["train"], num_neighbors=FANOUT, batch_size=BATCH,
                                  shuffle=True, num_workers=WORKERS, persistent_workers=WORKERS > 0)
    subgraph_loader = NeighborLoader(data, input_nodes=None, num_neighbors=[-1], batch_size=4096,
                                     num_workers=EVAL_WORKERS)

    model = SAGE(dataset.num_features, HIDDEN, dataset.num_classes, LAYERS, DROPOUT).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    evaluator = Evaluator(name=DATASET)

    for epoch in range(1, EPOCHS + 1):
        model.train()
        t0 = time.time()
        total_loss = 0.0
        for batch in train_loader:
            batch = batch.to(device)
            optimizer.zero_grad()
            out = model(batch.x, batch.edge_index)[: batch.batch_size]
            loss = F.cross_entropy(out, batch.y[: batch.batch_size])
            loss.backward()
            optimizer.step()
            total_loss += float(loss)
        print(f"epoch {epoch:02d} loss {total_loss / len(train_loader):.4f} time {time.time() - t0:.1f}s")
        if epoch % 5 == 0:
            model.eval()
            # layer-wise full-graph inference over subgraph_loader, scored with evaluator


if __name__ == "__main__":
    main()
