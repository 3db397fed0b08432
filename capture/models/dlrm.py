"""DLRM as in seed 001: bottom MLP, 26 embedding tables, pairwise-interaction BMM, top MLP.

13 dense features -> bottom MLP 512-256-128 (ReLU); table i has ``rows + rows_step * i``
rows of dim 128 (seed: 100000 + 100 i); the 27 vectors interact by a BMM whose strictly
lower triangle (351 values) is concatenated with the bottom output and zero-padded to a
multiple of 8 (480); top MLP 1024-1024-512-256-1; BCE-with-logits loss; SGD (as the seed).
Ranges per forward pass::

    Bottom_MLP, Embedding_0 ... Embedding_25, Interaction, Concat, Top_MLP
    (loss phase: Loss)
"""
from __future__ import annotations

import argparse

import torch
from torch import nn
from torch.nn import functional as F

from capture import nvtx

DEFAULT_BATCH = 32768
DEFAULT_SEQ = None
LOSS_RANGE = "Loss"
OPTIMIZER = "SGD"
BOTTOM_MLP = (512, 256, 128)
TOP_MLP = (1024, 1024, 512, 256, 1)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=100000,
                        help="rows of table 0 (default: 100000)")
    parser.add_argument("--rows-step", type=int, default=100,
                        help="table i has ROWS + ROWS_STEP * i rows (default: 100)")
    parser.add_argument("--tables", type=int, default=26, help="embedding tables (default: 26)")
    parser.add_argument("--dense", type=int, default=13, help="dense features (default: 13)")


def describe(args: argparse.Namespace) -> dict[str, object]:
    return {"dense_features": args.dense, "tables": args.tables,
            "table_rows": f"{args.rows} + {args.rows_step} * i",
            "embedding_dim": BOTTOM_MLP[-1], "bottom_mlp": list(BOTTOM_MLP),
            "top_mlp": list(TOP_MLP), "batch_size": args.batch}


def _mlp(widths: tuple[int, ...], last_relu: bool) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
        layers.append(nn.Linear(a, b))
        if last_relu or i < len(widths) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class DLRM(nn.Module):
    def __init__(self, dense: int, table_rows: list[int]) -> None:
        super().__init__()
        dim = BOTTOM_MLP[-1]
        self.bottom = _mlp((dense, *BOTTOM_MLP), last_relu=True)
        self.embeddings = nn.ModuleList(nn.Embedding(rows, dim) for rows in table_rows)
        vectors = len(table_rows) + 1
        rows_idx, cols_idx = torch.tril_indices(vectors, vectors, offset=-1)
        self.register_buffer("tril_rows", rows_idx, persistent=False)
        self.register_buffer("tril_cols", cols_idx, persistent=False)
        interactions = vectors * (vectors - 1) // 2
        self.pad = -(dim + interactions) % 8
        self.top = _mlp((dim + interactions + self.pad, *TOP_MLP), last_relu=False)

    def forward(self, dense: torch.Tensor, sparse: torch.Tensor) -> torch.Tensor:
        with nvtx.range("Bottom_MLP"):
            x = self.bottom(dense)
        embedded = []
        for i, table in enumerate(self.embeddings):
            with nvtx.range(f"Embedding_{i}"):
                embedded.append(table(sparse[:, i]))
        with nvtx.range("Interaction"):
            vectors = torch.stack([x, *embedded], dim=1)  # (batch, 27, dim)
            products = torch.bmm(vectors, vectors.transpose(1, 2))
            pairs = products[:, self.tril_rows, self.tril_cols]  # (batch, 351)
        with nvtx.range("Concat"):
            z = F.pad(torch.cat((x, pairs), dim=1), (0, self.pad))
        with nvtx.range("Top_MLP"):
            return self.top(z)


def table_rows(args: argparse.Namespace) -> list[int]:
    return [args.rows + args.rows_step * i for i in range(args.tables)]


def build(args: argparse.Namespace) -> nn.Module:
    return DLRM(args.dense, table_rows(args))


def make_batch(args: argparse.Namespace, generator: torch.Generator) -> dict[str, torch.Tensor]:
    sparse = torch.stack(
        [torch.randint(0, rows, (args.batch,), generator=generator) for rows in table_rows(args)],
        dim=1)
    return {"dense": torch.rand((args.batch, args.dense), generator=generator),
            "sparse": sparse,
            "label": torch.randint(0, 2, (args.batch, 1), generator=generator).float()}


def forward(model: nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    return model(batch["dense"], batch["sparse"])


def loss(output: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    return F.binary_cross_entropy_with_logits(output, batch["label"])


def make_optimizer(model: nn.Module) -> torch.optim.Optimizer:
    return torch.optim.SGD(model.parameters(), lr=0.01)
