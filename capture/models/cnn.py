"""A small ResNet-style image classifier fed by a real per-sample CPU augmentation pipeline.

CIFAR-style ResNet: a 3x3 conv stem at full resolution, STAGES stages of BLOCKS basic blocks
(two 3x3 conv-BN layers and a residual; every stage after the first halves the resolution and
doubles the width, with a 1x1 conv-BN projection on its first block), global average pool and
a linear classifier; cross-entropy loss; SGD with momentum. The defaults (width 64, 4 stages
of 2 blocks, 32x32 images, 100 classes) are ResNet-18 for CIFAR-100: 11.2M parameters.
Ranges per forward pass::

    stem
    stage_1 ... stage_S
      block_0 ... block_B-1
        conv1, conv2, shortcut (projection blocks only)
    head
    (loss phase: loss_computation)

The data are synthetic: a pool of random uint8 images of SOURCE_SIZE pixels. Each sample is
augmented on the CPU in torch, the way torchvision's training transforms do it: a random
resized crop (scale 0.25-1, aspect 3/4-4/3) to IMAGE_SIZE with an antialiased bilinear resize
when SOURCE_SIZE > IMAGE_SIZE, else a reflect-padded (4 px) random crop; a random horizontal
flip; scaling to [0, 1] and per-channel normalisation. A larger SOURCE_SIZE costs more CPU
per sample (the resize reads the whole crop), which is how a capture makes the GPU wait for
data.
"""
from __future__ import annotations

import argparse
import math

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import Dataset, default_collate

from capture import nvtx

DEFAULT_BATCH = 128
DEFAULT_SEQ = None
LOSS_RANGE = "loss_computation"
OPTIMIZER = "SGD"
MEAN = (0.507, 0.487, 0.441)  # CIFAR-100's channel statistics
STD = (0.267, 0.256, 0.276)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--image-size", type=int, default=32,
                        help="side of the network's input images (default: 32)")
    parser.add_argument("--source-size", type=int, default=None,
                        help="side of the stored images the augmentation crops from "
                             "(default: the image size)")
    parser.add_argument("--pool", type=int, default=64,
                        help="distinct stored images, reused with fresh augmentation "
                             "(default: 64)")
    parser.add_argument("--width", type=int, default=64,
                        help="channels of the stem and stage 1 (default: 64)")
    parser.add_argument("--stages", type=int, default=4, help="stages (default: 4)")
    parser.add_argument("--blocks", type=int, default=2,
                        help="basic blocks per stage (default: 2)")
    parser.add_argument("--classes", type=int, default=100, help="classes (default: 100)")
    parser.add_argument("--channels-last", action=argparse.BooleanOptionalAction,
                        default=False,
                        help="NHWC weights and activations, as tensor-core convolutions "
                             "prefer (default: off)")


def source_size(args: argparse.Namespace) -> int:
    return args.source_size or args.image_size


def describe(args: argparse.Namespace) -> dict[str, object]:
    widths = [args.width * 2 ** i for i in range(args.stages)]
    return {"image_size": args.image_size, "source_size": source_size(args),
            "pool": args.pool, "stage_widths": widths, "blocks_per_stage": args.blocks,
            "classes": args.classes, "channels_last": args.channels_last,
            "batch_size": args.batch}


def _conv_bn(c_in: int, c_out: int, kernel: int, stride: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, kernel, stride=stride, padding=kernel // 2, bias=False),
        nn.BatchNorm2d(c_out))


class BasicBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = _conv_bn(c_in, c_out, 3, stride)
        self.conv2 = _conv_bn(c_out, c_out, 3, 1)
        self.shortcut = _conv_bn(c_in, c_out, 1, stride) if stride != 1 or c_in != c_out else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with nvtx.range("conv1"):
            y = F.relu(self.conv1(x))
        with nvtx.range("conv2"):
            y = self.conv2(y)
        if self.shortcut is not None:
            with nvtx.range("shortcut"):
                x = self.shortcut(x)
        return F.relu(y + x)


class ResNet(nn.Module):
    def __init__(self, width: int, stages: int, blocks: int, classes: int,
                 channels_last: bool) -> None:
        super().__init__()
        if min(width, stages, blocks, classes) < 1:
            raise ValueError("width, stages, blocks and classes must be at least 1")
        self.channels_last = channels_last
        self.stem = _conv_bn(3, width, 3, 1)
        self.stages = nn.ModuleList()
        c_in = width
        for i in range(stages):
            c_out = width * 2 ** i
            self.stages.append(nn.ModuleList(
                BasicBlock(c_in if j == 0 else c_out, c_out, 2 if i and j == 0 else 1)
                for j in range(blocks)))
            c_in = c_out
        self.fc = nn.Linear(c_in, classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        with nvtx.range("stem"):
            if self.channels_last:  # the loader's batches are NCHW
                images = images.contiguous(memory_format=torch.channels_last)
            x = F.relu(self.stem(images))
        for i, stage in enumerate(self.stages, start=1):
            with nvtx.range(f"stage_{i}"):
                for j, block in enumerate(stage):
                    with nvtx.range(f"block_{j}"):
                        x = block(x)
        with nvtx.range("head"):
            return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def build(args: argparse.Namespace) -> nn.Module:
    model = ResNet(args.width, args.stages, args.blocks, args.classes, args.channels_last)
    if args.channels_last:
        model = model.to(memory_format=torch.channels_last)
    return model


# --- data -------------------------------------------------------------------------------

def _uniform(generator: torch.Generator, low: float, high: float) -> float:
    return low + (high - low) * torch.rand((), generator=generator).item()


def _randint(generator: torch.Generator, high: int) -> int:
    """A random int in [0, high]."""
    return int(torch.randint(0, high + 1, (), generator=generator))


def random_resized_crop(image: torch.Tensor, size: int, generator: torch.Generator) -> torch.Tensor:
    """torchvision's RandomResizedCrop(scale=(0.25, 1)) on a uint8 CHW image -> float CHW."""
    _, height, width = image.shape
    crop_h, crop_w = height, width  # fallback after 10 misses: the whole image
    for _ in range(10):
        area = height * width * _uniform(generator, 0.25, 1.0)
        aspect = math.exp(_uniform(generator, math.log(3 / 4), math.log(4 / 3)))
        w, h = round(math.sqrt(area * aspect)), round(math.sqrt(area / aspect))
        if 0 < w <= width and 0 < h <= height:
            crop_h, crop_w = h, w
            break
    top, left = _randint(generator, height - crop_h), _randint(generator, width - crop_w)
    crop = image[:, top:top + crop_h, left:left + crop_w].float()
    return F.interpolate(crop[None], size=(size, size), mode="bilinear", antialias=True,
                         align_corners=False)[0]


def padded_random_crop(image: torch.Tensor, size: int, generator: torch.Generator) -> torch.Tensor:
    """The CIFAR recipe: reflect-pad by 4 and crop SIZE x SIZE at a random place -> float CHW."""
    padded = F.pad(image.float()[None], (4, 4, 4, 4), mode="reflect")[0]
    top = _randint(generator, padded.shape[1] - size)
    left = _randint(generator, padded.shape[2] - size)
    return padded[:, top:top + size, left:left + size]


def augment(image: torch.Tensor, size: int, generator: torch.Generator) -> torch.Tensor:
    """Crop (resized when the source is larger), flip, normalise: float32 CHW, contiguous."""
    if image.shape[-1] > size:
        x = random_resized_crop(image, size, generator)
    else:
        x = padded_random_crop(image, size, generator)
    if torch.rand((), generator=generator).item() < 0.5:
        x = x.flip(-1)
    mean = torch.tensor(MEAN).view(3, 1, 1)
    std = torch.tensor(STD).view(3, 1, 1)
    return ((x / 255.0 - mean) / std).contiguous()


class SyntheticImages(Dataset):
    """LENGTH samples drawn from a pool of random uint8 images, augmented per sample.

    Sample i's augmentation has its own seed (seed, i), so a sample is the same in the main
    process and in any DataLoader worker.
    """

    def __init__(self, length: int, image_size: int, source_size: int, pool: int,
                 classes: int, generator: torch.Generator, seed: int = 0) -> None:
        if source_size < image_size:
            raise ValueError(f"source size {source_size} is smaller than image size {image_size}")
        if pool < 1:
            raise ValueError(f"pool must be at least 1, got {pool}")
        self.length, self.image_size, self.seed = length, image_size, seed
        # The pool does not depend on LENGTH: make_batch's samples are the loader's first ones.
        self.images = torch.randint(0, 256, (pool, 3, source_size, source_size),
                                    dtype=torch.uint8, generator=generator)
        self.labels = torch.randint(0, classes, (pool,), generator=generator)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        if not 0 <= index < self.length:
            raise IndexError(index)
        slot = index % len(self.images)
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + index)
        return {"image": augment(self.images[slot], self.image_size, generator),
                "label": self.labels[slot]}


def make_dataset(args: argparse.Namespace, generator: torch.Generator, length: int) -> Dataset:
    return SyntheticImages(length, args.image_size, source_size(args), args.pool, args.classes,
                           generator, seed=args.seed)


def make_batch(args: argparse.Namespace, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """The first batch the DataLoader would give, made once in the main process."""
    dataset = make_dataset(args, generator, args.batch)
    return default_collate([dataset[i] for i in range(args.batch)])


def forward(model: nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    return model(batch["image"])


def loss(output: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    return F.cross_entropy(output, batch["label"])


def fsdp_units(model: nn.Module) -> list[nn.Module]:
    """--distributed fsdp: one FSDP2 unit per basic block (the root holds the stem and classifier)."""
    return [block for stage in model.stages for block in stage]


def make_optimizer(model: nn.Module) -> torch.optim.Optimizer:
    return torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
