"""``--allreduce``: a one-process torch.distributed group that averages the gradients.

With one rank NCCL has nothing to exchange, but an averaging all-reduce (ReduceOp.AVG, a
pre-multiplied sum in NCCL) still runs NCCL's one-rank reduce kernel on NCCL's own stream,
so the capture shows real NCCL kernels and their ordering against compute. (A SUM, as DDP
issues after dividing the gradients itself, is a no-op on one rank: no kernel at all.)
On the CPU the group uses gloo and SUM, which is the same average for one rank.
"""
from __future__ import annotations

import os
import tempfile

import torch
import torch.distributed as dist
from torch import nn


def init(device: torch.device) -> str:
    """Start a world of one (file store, no network); returns the backend."""
    store = os.path.join(tempfile.mkdtemp(prefix="nsysql-capture-pg-"), "store")
    if device.type != "cuda":
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
        return "gloo"
    # device_id binds the rank to the GPU and creates the communicator now, in model_init.
    index = device.index if device.index is not None else torch.cuda.current_device()
    dist.init_process_group("nccl", init_method=f"file://{store}", rank=0, world_size=1,
                            device_id=torch.device("cuda", index))
    return "nccl"


def all_reduce_gradients(model: nn.Module) -> None:
    """Average every gradient over the world, one all-reduce per parameter."""
    op = dist.ReduceOp.AVG if dist.get_backend() == "nccl" else dist.ReduceOp.SUM
    for parameter in model.parameters():
        if parameter.grad is not None:
            dist.all_reduce(parameter.grad, op=op)


def shutdown() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()
