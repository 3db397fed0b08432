"""Where each step's batch comes from: one fixed host batch, or a DataLoader.

Without ``--dataloader`` every step copies the same host batch (made once) to the device, as
the seed workloads do. With it, a ``torch.utils.data.DataLoader`` over the model's dataset
(``make_dataset`` where the model has one, e.g. cnn's augmented images; else the rows of
``make_batch``) gives one batch per step, and a profiled step fetches it inside a user range
``dataloader`` on the step's thread, so that waiting for data shows in the capture.
``--pin-memory`` pins the host batches (the loader's pin thread, or the fixed batch once) and
copies them with ``non_blocking=True``; without it the copies are from pageable memory.
A planted straggler (``--straggle-rank``) sleeps inside the same `dataloader` range, after the fetch;
with one, the range is opened around every profiled step's fetch, with or without a DataLoader.
"""
from __future__ import annotations

import argparse
import contextlib
import time
from types import ModuleType
from typing import Iterator

import torch
from torch.utils.data import DataLoader, Dataset

from capture import nvtx

DATALOADER_RANGE = "dataloader"


class RowDataset(Dataset):
    """Sample i is row i mod B of a batch made by ``make_batch``: batches equal that batch."""

    def __init__(self, batch: dict[str, torch.Tensor], length: int) -> None:
        self.batch, self.length = batch, length
        self.rows = len(next(iter(batch.values())))

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        if not 0 <= index < self.length:
            raise IndexError(index)
        return {key: value[index % self.rows] for key, value in self.batch.items()}


def make_dataset(module: ModuleType, args: argparse.Namespace, length: int) -> Dataset:
    generator = torch.Generator().manual_seed(args.seed)
    if hasattr(module, "make_dataset"):
        return module.make_dataset(args, generator, length)
    return RowDataset(module.make_batch(args, generator), length)


def make_loader(module: ModuleType, args: argparse.Namespace, batches: int,
                pin: bool) -> DataLoader:
    """A loader of exactly BATCHES batches of args.batch samples, in order."""
    dataset = make_dataset(module, args, batches * args.batch)
    return DataLoader(dataset, batch_size=args.batch, shuffle=False, drop_last=True,
                      num_workers=args.workers, pin_memory=pin)


class Feeder:
    """Gives each step its batch on the device."""

    def __init__(self, module: ModuleType, args: argparse.Namespace, device: torch.device,
                 batches: int, ranged: bool | None = None) -> None:
        self.device = device
        # the `dataloader` range: with a DataLoader by default; `ranged` True opens it around the fixed
        # batch too (a planted straggler sleeps in it)
        self.ranged = args.dataloader if ranged is None else ranged
        pin = args.pin_memory and device.type == "cuda"  # pinning needs a GPU
        self.non_blocking = pin
        self.host_batch: dict[str, torch.Tensor] | None = None
        self.batches: Iterator[dict[str, torch.Tensor]] | None = None
        if args.dataloader:
            # iter() starts the workers now, before the steps, as a training loop's epoch does.
            self.batches = iter(make_loader(module, args, batches, pin))
        else:
            batch = module.make_batch(args, torch.Generator().manual_seed(args.seed))
            self.host_batch = {k: v.pin_memory() for k, v in batch.items()} if pin else batch

    def next(self, annotate: bool, delay_s: float = 0.0) -> dict[str, torch.Tensor]:
        """The next host batch, copied to the device (the fetch in `dataloader` when annotated); `delay_s`
        seconds of sleep after the fetch, inside the range (a planted straggler)."""
        with nvtx.range(DATALOADER_RANGE) if annotate and self.ranged else contextlib.nullcontext():
            host = self.host_batch if self.batches is None else next(self.batches)
            assert host is not None  # set in __init__ whenever there is no loader
            if delay_s > 0:
                time.sleep(delay_s)
        return {key: value.to(self.device, non_blocking=self.non_blocking)
                for key, value in host.items()}

    def close(self) -> None:
        """Drop the loader's iterator: its workers exit."""
        self.batches = None
