"""``--distributed ddp|fsdp``: one rank of a torchrun job, the model under DDP or FSDP2.

`nsysql capture MODEL --nproc N` starts N of these through ``torchrun --nproc_per_node=N``;
torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) says which
rank this process is. Each rank drives the GPU of its LOCAL_RANK and joins an NCCL process
group (gloo on the CPU). `ddp` wraps the model in DistributedDataParallel (its bucketed
gradient all-reduce overlaps the backward pass); `fsdp` shards it with FSDP2
(`torch.distributed.fsdp.fully_shard`, torch 2.6 or later): one unit per block the model's
``fsdp_units`` names, then the root (parameters all-gathered before use, gradients
reduce-scattered after the backward).
"""
from __future__ import annotations

import os
from types import ModuleType

import torch
import torch.distributed as dist
from torch import nn

KINDS = ("ddp", "fsdp")


class Ranks:
    """This process's place in the job: rank, local rank (its GPU) and world size."""

    def __init__(self, rank: int, local_rank: int, world: int) -> None:
        self.rank, self.local_rank, self.world = rank, local_rank, world


def ranks_from_env(environ: dict[str, str] | None = None) -> Ranks:
    """The ranks torchrun set; SystemExit with one line where it did not."""
    environ = dict(os.environ) if environ is None else environ
    missing = [key for key in ("RANK", "LOCAL_RANK", "WORLD_SIZE") if key not in environ]
    if missing:
        raise SystemExit(f"error: --distributed needs torchrun's environment ({', '.join(missing)} unset): "
                         "run `torchrun --nproc_per_node=N -m capture MODEL --distributed ddp ...` "
                         "or `nsysql capture MODEL --nproc N`")
    return Ranks(int(environ["RANK"]), int(environ["LOCAL_RANK"]), int(environ["WORLD_SIZE"]))


def device_of(ranks: Ranks, requested: str | None) -> torch.device:
    """The rank's device: GPU LOCAL_RANK (the CPU with --device cpu, or without CUDA)."""
    if requested == "cpu" or (requested is None and not torch.cuda.is_available()):
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise SystemExit("error: --device cuda but torch.cuda.is_available() is False")
    count = torch.cuda.device_count()
    if ranks.local_rank >= count:
        raise SystemExit(f"error: rank {ranks.rank} has LOCAL_RANK {ranks.local_rank}, but torch sees "
                         f"{count} GPU(s): one GPU per rank, so at most {count} ranks per node")
    torch.cuda.set_device(ranks.local_rank)
    return torch.device("cuda", ranks.local_rank)


def init(device: torch.device) -> str:
    """Join torchrun's process group (env://); returns the backend."""
    if device.type != "cuda":
        dist.init_process_group("gloo")
        return "gloo"
    # device_id binds the rank to its GPU and creates the NCCL communicator now, in model_init
    dist.init_process_group("nccl", device_id=device)
    return "nccl"


def wrap(model: nn.Module, module: ModuleType, kind: str, device: torch.device) -> nn.Module:
    """The model as the training loop calls it: DDP around it, or FSDP2 applied in place."""
    if kind == "ddp":
        ids = [device.index] if device.type == "cuda" else None
        return nn.parallel.DistributedDataParallel(model, device_ids=ids)
    if kind == "fsdp":
        from torch.distributed.fsdp import fully_shard

        units = getattr(module, "fsdp_units", None)
        if units is None:
            raise SystemExit(f"error: --distributed fsdp: {module.__name__} names no blocks to shard")
        for unit in units(model):
            fully_shard(unit)
        fully_shard(model)
        return model
    raise ValueError(f"unknown --distributed {kind!r}: choose one of {', '.join(KINDS)}")


def shutdown() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()
