"""GPT-style decoder LM with the NVTX vocabulary and nesting of seed 003.

Pre-norm blocks (RMSNorm), RoPE, causal softmax attention written out by hand, SwiGLU FFN,
bias-free linears, vocab 10000. Ranges per forward pass::

    token_embeddings
    layer_N
      attention_sublayer
        attention projections
        rope encoding
        causal mask construction
        scaled_dot_product_attention
          annotated_scaled_dot_product_attention
            computing attention scores
            computing softmax
            final matmul
        output projection
      ffn_sublayer
    final_norm
    lm_head

Inference with a static KV cache (``--mode decode``, `capture.decode`) goes through
`GPTLM.forward_cached`, a separate path with the same ranges plus `kv cache update` inside
`attention_sublayer` (after `rope encoding`): K/V of the given positions are written into a
`KVCache` of fixed length, and attention runs over the whole cache under a mask
``arange(L) <= position``, so every decode step has the same shapes (one CUDA graph replays any
of them). The training `forward` is untouched.

(`causal mask construction` sits beside `scaled_dot_product_attention`, not inside it: in
the seed's nvtx_sum the mask range's total does not fit inside the SDPA ranges.)
"""
from __future__ import annotations

import argparse
import math

import torch
from torch import nn
from torch.nn import functional as F

from capture import nvtx
from capture.models import GPT_SIZES

DEFAULT_BATCH = 4
DEFAULT_SEQ = 512
LOSS_RANGE = "loss_computation"
OPTIMIZER = "AdamW"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--size", choices=list(GPT_SIZES), default="small",
                        help="model size (default: small; the seed profiles 2.7B)")
    parser.add_argument("--vocab", type=int, default=10000, help="vocabulary size (default: 10000)")


def describe(args: argparse.Namespace) -> dict[str, object]:
    d_model, d_ff, num_layers, num_heads = GPT_SIZES[args.size]
    described: dict[str, object] = {
        "size": args.size, "d_model": d_model, "d_ff": d_ff, "num_layers": num_layers,
        "num_heads": num_heads, "vocab_size": args.vocab, "context_length": args.seq,
        "batch_size": args.batch}
    if getattr(args, "mode", None) == "decode":  # the context is prompt + tokens (capture.decode)
        described.update(prompt=args.prompt, tokens=args.tokens,
                         graphs="on" if args.graphs else "off")
    return described


class KVCache:
    """Per-layer K and V buffers of shape (batch, heads, length, head_dim), allocated once, as an
    inference server's static cache: a request overwrites the positions it uses."""

    def __init__(self, model: "GPTLM", batch: int, length: int, dtype: torch.dtype,
                 device: torch.device | str) -> None:
        first = model.layers[0].attn
        heads = first.num_heads
        head_dim = first.q_proj.in_features // heads
        self.length = length
        self.keys = [torch.zeros(batch, heads, length, head_dim, dtype=dtype, device=device)
                     for _ in model.layers]
        self.values = [torch.zeros_like(k) for k in self.keys]


def softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    """max-subtracted exp / sum, as separate kernels (the seed's max, exp, sum, div)."""
    shifted = x - x.detach().amax(dim=dim, keepdim=True)  # the shift does not change the gradient
    exp = torch.exp(shifted)
    return exp / exp.sum(dim=dim, keepdim=True)


def annotated_scaled_dot_product_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                           mask: torch.Tensor) -> torch.Tensor:
    with nvtx.range("annotated_scaled_dot_product_attention"):
        with nvtx.range("computing attention scores"):
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
            scores = scores.masked_fill(~mask, float("-inf"))
        with nvtx.range("computing softmax"):
            weights = softmax(scores, dim=-1)
        with nvtx.range("final matmul"):
            return weights @ v


class RMSNorm(nn.Module):
    def __init__(self, d_model: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        in_dtype = x.dtype
        x = x.float()
        rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (x * rms * self.weight).to(in_dtype)


class RotaryEmbedding(nn.Module):
    def __init__(self, head_dim: int, context_length: int, theta: float = 10000.0) -> None:
        super().__init__()
        freqs = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
        angles = torch.arange(context_length, dtype=torch.float32)[:, None] * freqs[None, :]
        self.register_buffer("cos", torch.cos(angles), persistent=False)
        self.register_buffer("sin", torch.sin(angles), persistent=False)

    def forward(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        cos, sin = self.cos[positions], self.sin[positions]  # (T, head_dim / 2)
        even, odd = x[..., 0::2], x[..., 1::2]
        rotated = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)
        return rotated.flatten(-2)


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, context_length: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, d_model, bias=False)
        self.v_proj = nn.Linear(d_model, d_model, bias=False)
        self.output_proj = nn.Linear(d_model, d_model, bias=False)
        self.rope = RotaryEmbedding(d_model // num_heads, context_length)

    def _projections(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q, k and v of `x` per head, (batch, heads, seq, head_dim): the same kernels with and without a cache."""
        batch, seq, _ = x.shape
        heads = self.num_heads
        with nvtx.range("attention projections"):
            q = self.q_proj(x).view(batch, seq, heads, -1).transpose(1, 2)
            k = self.k_proj(x).view(batch, seq, heads, -1).transpose(1, 2)
            v = self.v_proj(x).view(batch, seq, heads, -1).transpose(1, 2)
        return q, k, v

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, d_model = x.shape
        q, k, v = self._projections(x)
        with nvtx.range("rope encoding"):
            positions = torch.arange(seq, device=x.device)
            q = self.rope(q, positions)
            k = self.rope(k, positions)
        with nvtx.range("causal mask construction"):
            index = torch.arange(seq, device=x.device)
            mask = index[:, None] >= index[None, :]
        with nvtx.range("scaled_dot_product_attention"):
            out = annotated_scaled_dot_product_attention(q, k, v, mask)
        with nvtx.range("output projection"):
            return self.output_proj(out.transpose(1, 2).reshape(batch, seq, d_model))

    def forward_cached(self, x: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                       positions: torch.Tensor) -> torch.Tensor:
        """Attention of the tokens at `positions` (a device tensor) over the whole cache: their K/V
        written in at those positions first, the positions after each query masked out."""
        batch, seq, d_model = x.shape
        q, k, v = self._projections(x)
        with nvtx.range("rope encoding"):
            q = self.rope(q, positions)
            k = self.rope(k, positions)
        with nvtx.range("kv cache update"):
            keys.index_copy_(2, positions, k.to(keys.dtype))
            values.index_copy_(2, positions, v.to(values.dtype))
        with nvtx.range("causal mask construction"):
            index = torch.arange(keys.shape[2], device=x.device)
            mask = index[None, :] <= positions[:, None]  # (seq, cache length)
        with nvtx.range("scaled_dot_product_attention"):
            out = annotated_scaled_dot_product_attention(q, keys, values, mask)
        with nvtx.range("output projection"):
            return self.output_proj(out.transpose(1, 2).reshape(batch, seq, d_model))


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate = self.w1(x)
        return self.w2(gate * torch.sigmoid(gate) * self.w3(x))


class Block(nn.Module):
    def __init__(self, d_model: int, d_ff: int, num_heads: int, context_length: int) -> None:
        super().__init__()
        self.ln1 = RMSNorm(d_model)
        self.attn = CausalSelfAttention(d_model, num_heads, context_length)
        self.ln2 = RMSNorm(d_model)
        self.ffn = SwiGLU(d_model, d_ff)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with nvtx.range("attention_sublayer"):
            x = x + self.attn(self.ln1(x))
        with nvtx.range("ffn_sublayer"):
            return x + self.ffn(self.ln2(x))

    def forward_cached(self, x: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                       positions: torch.Tensor) -> torch.Tensor:
        with nvtx.range("attention_sublayer"):
            x = x + self.attn.forward_cached(self.ln1(x), keys, values, positions)
        with nvtx.range("ffn_sublayer"):
            return x + self.ffn(self.ln2(x))


class GPTLM(nn.Module):
    def __init__(self, vocab_size: int, context_length: int, d_model: int, d_ff: int,
                 num_layers: int, num_heads: int) -> None:
        super().__init__()
        if d_model % num_heads or (d_model // num_heads) % 2:
            raise ValueError(f"d_model {d_model} must split into {num_heads} heads of even size")
        self.token_embeddings = nn.Embedding(vocab_size, d_model)
        self.layers = nn.ModuleList(
            Block(d_model, d_ff, num_heads, context_length) for _ in range(num_layers))
        self.ln_final = RMSNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        with nvtx.range("token_embeddings"):
            x = self.token_embeddings(tokens)
        for i, layer in enumerate(self.layers):
            with nvtx.range(f"layer_{i}"):
                x = layer(x)
        with nvtx.range("final_norm"):
            x = self.ln_final(x)
        with nvtx.range("lm_head"):
            return self.lm_head(x)

    def forward_cached(self, tokens: torch.Tensor, cache: KVCache,
                       positions: torch.Tensor) -> torch.Tensor:
        """Logits of `tokens` (batch, seq) at `positions` (seq,), a device tensor: the prompt at
        0..P-1 (prefill) or one token at p (a decode step), K/V kept in `cache`."""
        with nvtx.range("token_embeddings"):
            x = self.token_embeddings(tokens)
        for i, layer in enumerate(self.layers):
            with nvtx.range(f"layer_{i}"):
                x = layer.forward_cached(x, cache.keys[i], cache.values[i], positions)
        with nvtx.range("final_norm"):
            x = self.ln_final(x)
        with nvtx.range("lm_head"):
            return self.lm_head(x)


def build(args: argparse.Namespace) -> nn.Module:
    d_model, d_ff, num_layers, num_heads = GPT_SIZES[args.size]
    return GPTLM(args.vocab, args.seq, d_model, d_ff, num_layers, num_heads)


def make_batch(args: argparse.Namespace, generator: torch.Generator) -> dict[str, torch.Tensor]:
    tokens = torch.randint(0, args.vocab, (args.batch, args.seq + 1), generator=generator)
    return {"tokens": tokens[:, :-1].contiguous(), "targets": tokens[:, 1:].contiguous()}


def forward(model: nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    return model(batch["tokens"])


def loss(output: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    return F.cross_entropy(output.reshape(-1, output.shape[-1]), batch["targets"].reshape(-1))


def fsdp_units(model: nn.Module) -> list[nn.Module]:
    """--distributed fsdp: one FSDP2 unit per transformer block (the root holds the embeddings and head)."""
    return list(model.layers)


def make_optimizer(model: nn.Module) -> torch.optim.Optimizer:
    return torch.optim.AdamW(model.parameters(), lr=1e-4)
