"""The seed models. This module is torch-free: the CLI lists names and sizes from here.

Each model module (`gpt`, `bert`, `ncf`, `dlrm`, `cnn`, and `hf`: Hugging Face's GPT-2, which needs
transformers) provides the same functions, used by
`capture.workload`:

- ``DEFAULT_BATCH``, ``DEFAULT_SEQ`` (None where a sequence length does not apply),
  ``LOSS_RANGE`` (the NVTX name of the loss phase), ``OPTIMIZER`` (a label);
- ``add_arguments(parser)``: model-specific command-line options, defaults = the seed's;
- ``describe(args) -> dict``: the configuration printed before the run;
- ``build(args) -> nn.Module`` (called under ``torch.device(...)``);
- ``make_batch(args, generator) -> dict[str, Tensor]`` (CPU tensors, copied each step);
- ``forward(model, batch) -> Tensor``; ``loss(output, batch) -> Tensor``;
- ``make_optimizer(model) -> torch.optim.Optimizer``;
- optionally ``make_dataset(args, generator, length) -> Dataset`` of per-sample dicts, for
  ``--dataloader`` (cnn: augmented images); without it the loader serves make_batch's rows;
- optionally ``fsdp_units(model) -> list[nn.Module]``: the blocks FSDP2 shards one by one
  (``--distributed fsdp``); the models in FSDP_MODELS have it.
"""
from __future__ import annotations

import importlib
from types import ModuleType

MODEL_NAMES: tuple[str, ...] = ("gpt", "bert", "ncf", "dlrm", "cnn", "hf")

# the models FSDP2 can shard block by block (they have fsdp_units); ncf and dlrm are a few embedding
# tables and small MLPs, with no repeated blocks to shard
FSDP_MODELS: tuple[str, ...] = ("gpt", "bert", "cnn", "hf")

# name -> (d_model, d_ff, num_layers, num_heads); vocab 10000 (seed 003).
GPT_SIZES: dict[str, tuple[int, int, int, int]] = {
    "tiny": (64, 256, 2, 4),
    "small": (768, 3072, 12, 12),
    "medium": (1024, 4096, 24, 16),
    "large": (1280, 5120, 36, 20),
    "xl": (1600, 6400, 48, 25),
    "2.7B": (2560, 10240, 32, 32),
}


def load(name: str) -> ModuleType:
    """Import the model module `name` (this imports torch)."""
    if name not in MODEL_NAMES:
        raise ValueError(f"unknown model {name!r}; choose one of {', '.join(MODEL_NAMES)}")
    return importlib.import_module(f"capture.models.{name}")
