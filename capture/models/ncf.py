"""NCF / NeuMF as in seed 000 (MLPerf recommendation), ranges named like its Layer column.

GMF (MF embeddings, dim 64, multiplied) beside an MLP (embeddings 128, concat, Linear
layers 256 -> 256 -> 128 -> 64 with ReLU and dropout), concatenated into a one-logit NeuMF
layer; BCE-with-logits loss; Adam. Ranges per forward pass::

    MF_User_Embedding, MF_Item_Embedding, GMF,
    MLP_User_Embedding, MLP_Item_Embedding, MLP_Concat,
    MLP_0 > Dropout, MLP_1 > Dropout, MLP_2 > Dropout,   (the seed's "MLP_0:Dropout")
    NeuMF_Concat, NeuMF_MLP
    (loss phase: Loss)
"""
from __future__ import annotations

import argparse

import torch
from torch import nn
from torch.nn import functional as F

from capture import nvtx

DEFAULT_BATCH = 1048576
DEFAULT_SEQ = None
LOSS_RANGE = "Loss"
OPTIMIZER = "Adam"
MLP_SIZES = (256, 128, 64)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--users", type=int, default=138493, help="users (default: 138493)")
    parser.add_argument("--items", type=int, default=26744, help="items (default: 26744)")
    parser.add_argument("--mf-dim", type=int, default=64, help="MF embedding size (default: 64)")
    parser.add_argument("--mlp-dim", type=int, default=128,
                        help="MLP embedding size (default: 128)")
    parser.add_argument("--dropout", type=float, default=0.5, help="MLP dropout (default: 0.5)")


def describe(args: argparse.Namespace) -> dict[str, object]:
    return {"users": args.users, "items": args.items, "mf_embedding": args.mf_dim,
            "mlp_embedding": args.mlp_dim, "mlp_layers": list(MLP_SIZES),
            "dropout": args.dropout, "batch_size": args.batch}


class NeuMF(nn.Module):
    def __init__(self, users: int, items: int, mf_dim: int, mlp_dim: int, dropout: float) -> None:
        super().__init__()
        self.mf_user = nn.Embedding(users, mf_dim)
        self.mf_item = nn.Embedding(items, mf_dim)
        self.mlp_user = nn.Embedding(users, mlp_dim)
        self.mlp_item = nn.Embedding(items, mlp_dim)
        widths = (2 * mlp_dim, *MLP_SIZES)
        self.mlp = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:]))
        self.dropout = nn.Dropout(dropout)
        self.final = nn.Linear(MLP_SIZES[-1] + mf_dim, 1)

    def forward(self, user: torch.Tensor, item: torch.Tensor) -> torch.Tensor:
        with nvtx.range("MF_User_Embedding"):
            mf_user = self.mf_user(user)
        with nvtx.range("MF_Item_Embedding"):
            mf_item = self.mf_item(item)
        with nvtx.range("GMF"):
            gmf = mf_user * mf_item
        with nvtx.range("MLP_User_Embedding"):
            mlp_user = self.mlp_user(user)
        with nvtx.range("MLP_Item_Embedding"):
            mlp_item = self.mlp_item(item)
        with nvtx.range("MLP_Concat"):
            x = torch.cat((mlp_user, mlp_item), dim=1)
        for i, layer in enumerate(self.mlp):
            with nvtx.range(f"MLP_{i}"):
                x = F.relu(layer(x))
                with nvtx.range("Dropout"):
                    x = self.dropout(x)
        with nvtx.range("NeuMF_Concat"):
            x = torch.cat((gmf, x), dim=1)
        with nvtx.range("NeuMF_MLP"):
            return self.final(x)


def build(args: argparse.Namespace) -> nn.Module:
    return NeuMF(args.users, args.items, args.mf_dim, args.mlp_dim, args.dropout)


def make_batch(args: argparse.Namespace, generator: torch.Generator) -> dict[str, torch.Tensor]:
    return {"user": torch.randint(0, args.users, (args.batch,), generator=generator),
            "item": torch.randint(0, args.items, (args.batch,), generator=generator),
            "label": torch.randint(0, 2, (args.batch, 1), generator=generator).float()}


def forward(model: nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    return model(batch["user"], batch["item"])


def loss(output: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    return F.binary_cross_entropy_with_logits(output, batch["label"])


def make_optimizer(model: nn.Module) -> torch.optim.Optimizer:
    return torch.optim.Adam(model.parameters(), lr=1e-3)
