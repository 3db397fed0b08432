"""Hugging Face GPT-2: transformers' GPT2LMHeadModel built from a config (random weights, no download).

A model as users bring it: no NVTX ranges of its own. Its ranges come from nsysql.annotate
(`--annotate`, the capture's default): `model/transformer/h.3/attn`, ... around each layer's
forward and backward; with `--no-annotate-backward` the forward ones only, as a user's forward
hooks give. The defaults are distilgpt2's sizes (6 blocks, 768 wide, 12 heads, GPT-2's vocabulary);
attention is transformers' default (PyTorch's scaled_dot_product_attention). The loss is computed
outside the model (cross-entropy of the next token), like the other models, not by passing labels.
transformers is imported only when the model is built: `python -m capture --help` runs without it.
"""
from __future__ import annotations

import argparse

import torch
from torch import nn
from torch.nn import functional as F

DEFAULT_BATCH = 4
DEFAULT_SEQ = 128
LOSS_RANGE = "loss_computation"
OPTIMIZER = "AdamW"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--layers", type=int, default=6, help="transformer blocks (default: 6)")
    parser.add_argument("--hidden", type=int, default=768, help="hidden size (default: 768)")
    parser.add_argument("--heads", type=int, default=12, help="attention heads (default: 12)")
    parser.add_argument("--vocab", type=int, default=50257, help="vocabulary size (default: 50257)")


def describe(args: argparse.Namespace) -> dict[str, object]:
    return {"model_class": "transformers.GPT2LMHeadModel", "num_layers": args.layers,
            "hidden_size": args.hidden, "num_heads": args.heads, "vocab_size": args.vocab,
            "sequence_length": args.seq, "batch_size": args.batch}


def build(args: argparse.Namespace) -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    if args.hidden % args.heads:
        raise ValueError(f"hidden {args.hidden} must split into {args.heads} heads")
    config = GPT2Config(vocab_size=args.vocab, n_positions=max(1024, args.seq), n_embd=args.hidden,
                        n_layer=args.layers, n_head=args.heads, use_cache=False)
    return GPT2LMHeadModel(config)


def make_batch(args: argparse.Namespace, generator: torch.Generator) -> dict[str, torch.Tensor]:
    tokens = torch.randint(0, args.vocab, (args.batch, args.seq + 1), generator=generator)
    return {"tokens": tokens[:, :-1].contiguous(), "targets": tokens[:, 1:].contiguous()}


def forward(model: nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    return model(input_ids=batch["tokens"]).logits


def loss(output: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    return F.cross_entropy(output.reshape(-1, output.shape[-1]), batch["targets"].reshape(-1))


def fsdp_units(model: nn.Module) -> list[nn.Module]:
    """--distributed fsdp: one FSDP2 unit per GPT-2 block (the root holds the tied embeddings and head)."""
    return list(model.transformer.h)


def make_optimizer(model: nn.Module) -> torch.optim.Optimizer:
    return torch.optim.AdamW(model.parameters(), lr=1e-4)
