"""BERT encoder with a masked-LM head, sized as seed 002 (BERT-large blocks, 2 of them).

Post-norm encoder layers, token + position + segment embeddings, GELU FFN, dropout 0.1,
MLM decoder tied to the token embedding. The seed's optimizer is LAMB, which torch lacks;
AdamW stands in. Ranges per forward pass::

    embeddings
    layer_N
      attention_sublayer
        computing softmax
      ffn_sublayer
    mlm_head
"""
from __future__ import annotations

import argparse
import math

import torch
from torch import nn
from torch.nn import functional as F

from capture import nvtx

DEFAULT_BATCH = 4
DEFAULT_SEQ = 128
LOSS_RANGE = "loss_computation"
OPTIMIZER = "AdamW (the seed used LAMB)"
MASKED_FRACTION = 0.15


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--layers", type=int, default=2, help="encoder layers (default: 2)")
    parser.add_argument("--hidden", type=int, default=1024, help="hidden size (default: 1024)")
    parser.add_argument("--heads", type=int, default=16, help="attention heads (default: 16)")
    parser.add_argument("--intermediate", type=int, default=4096,
                        help="FFN intermediate size (default: 4096)")
    parser.add_argument("--vocab", type=int, default=30522, help="vocabulary size (default: 30522)")
    parser.add_argument("--max-positions", type=int, default=512,
                        help="position embeddings (default: 512)")
    parser.add_argument("--type-vocab", type=int, default=2, help="segment types (default: 2)")
    parser.add_argument("--dropout", type=float, default=0.1, help="dropout (default: 0.1)")


def describe(args: argparse.Namespace) -> dict[str, object]:
    return {"num_layers": args.layers, "hidden_size": args.hidden, "num_heads": args.heads,
            "intermediate_size": args.intermediate, "vocab_size": args.vocab,
            "max_positions": args.max_positions, "type_vocab_size": args.type_vocab,
            "sequence_length": args.seq, "batch_size": args.batch}


class Embeddings(nn.Module):
    def __init__(self, vocab: int, hidden: int, max_positions: int, type_vocab: int,
                 dropout: float) -> None:
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(max_positions, hidden)
        self.token_type = nn.Embedding(type_vocab, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(dropout)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.word(input_ids) + self.position(positions)[None] + self.token_type(token_type_ids)
        return self.dropout(self.norm(x))


class EncoderLayer(nn.Module):
    def __init__(self, hidden: int, heads: int, intermediate: int, dropout: float) -> None:
        super().__init__()
        if hidden % heads:
            raise ValueError(f"hidden {hidden} must split into {heads} heads")
        self.heads = heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.attn_out = nn.Linear(hidden, hidden)
        self.attn_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.intermediate = nn.Linear(hidden, intermediate)
        self.output = nn.Linear(intermediate, hidden)
        self.ffn_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, additive_mask: torch.Tensor) -> torch.Tensor:
        batch, seq, hidden = x.shape
        with nvtx.range("attention_sublayer"):
            q = self.query(x).view(batch, seq, self.heads, -1).transpose(1, 2)
            k = self.key(x).view(batch, seq, self.heads, -1).transpose(1, 2)
            v = self.value(x).view(batch, seq, self.heads, -1).transpose(1, 2)
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1]) + additive_mask
            with nvtx.range("computing softmax"):
                probs = torch.softmax(scores, dim=-1)
            context = (self.dropout(probs) @ v).transpose(1, 2).reshape(batch, seq, hidden)
            x = self.attn_norm(x + self.dropout(self.attn_out(context)))
        with nvtx.range("ffn_sublayer"):
            h = F.gelu(self.intermediate(x))
            return self.ffn_norm(x + self.dropout(self.output(h)))


def _init_weights(module: nn.Module) -> None:
    """BERT's initialisation: N(0, 0.02) weights, zero biases."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


class BertMLM(nn.Module):
    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__()
        self.embeddings = Embeddings(args.vocab, args.hidden, args.max_positions,
                                     args.type_vocab, args.dropout)
        self.layers = nn.ModuleList(
            EncoderLayer(args.hidden, args.heads, args.intermediate, args.dropout)
            for _ in range(args.layers))
        self.head_dense = nn.Linear(args.hidden, args.hidden)
        self.head_norm = nn.LayerNorm(args.hidden, eps=1e-12)
        self.decoder_bias = nn.Parameter(torch.zeros(args.vocab))
        self.apply(_init_weights)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor,
                attention_mask: torch.Tensor) -> torch.Tensor:
        # outside any range, as in the seed's first kernels (to, rsub, mul)
        additive_mask = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        with nvtx.range("embeddings"):
            x = self.embeddings(input_ids, token_type_ids)
        for i, layer in enumerate(self.layers):
            with nvtx.range(f"layer_{i}"):
                x = layer(x, additive_mask)
        with nvtx.range("mlm_head"):
            h = self.head_norm(F.gelu(self.head_dense(x)))
            return F.linear(h, self.embeddings.word.weight, self.decoder_bias)


def build(args: argparse.Namespace) -> nn.Module:
    if args.seq > args.max_positions:
        raise ValueError(f"--seq {args.seq} exceeds --max-positions {args.max_positions}")
    return BertMLM(args)


def make_batch(args: argparse.Namespace, generator: torch.Generator) -> dict[str, torch.Tensor]:
    shape = (args.batch, args.seq)
    input_ids = torch.randint(0, args.vocab, shape, generator=generator)
    token_type_ids = (torch.arange(args.seq) >= args.seq // 2).long().expand(shape).contiguous()
    masked = torch.rand(shape, generator=generator) < MASKED_FRACTION
    masked[:, 0] = True  # at least one label per sequence
    labels = torch.where(masked, input_ids, torch.full_like(input_ids, -100))
    return {"input_ids": input_ids, "token_type_ids": token_type_ids,
            "attention_mask": torch.ones(shape, dtype=torch.long), "labels": labels}


def forward(model: nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    return model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])


def loss(output: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    return F.cross_entropy(output.reshape(-1, output.shape[-1]), batch["labels"].reshape(-1),
                           ignore_index=-100)


def fsdp_units(model: nn.Module) -> list[nn.Module]:
    """--distributed fsdp: one FSDP2 unit per encoder layer (the root holds the tied embeddings and head)."""
    return list(model.layers)


def make_optimizer(model: nn.Module) -> torch.optim.Optimizer:
    return torch.optim.AdamW(model.parameters(), lr=1e-4)
