"""``--mode decode`` (gpt): LLM inference with a static KV cache, greedy, as a server runs it.

Range layout::

    model_init          the model built on the CPU, its weights copied to the GPU (model.to(device):
                        the H2D memcpys of a checkpoint load), the KV cache allocated
    warmup              the --warmup requests (default 1), each a whole `request` as below; with --graphs
      graph_capture     first: torch's side-stream warm-up iterations of a decode step, then its
                        capture into one CUDA graph
      request ...
    request             one per --steps: a new random prompt of batch x P tokens (made on the CPU,
                        copied), then
      prefill           one forward over the prompt (cache positions 0..P-1); the argmax of the
                        last position is the first token, kept on the GPU
      decode_step       T-1 of them: one forward of the last token at position p (K/V written into
                        the cache at p, attention over the whole cache under arange(L) <= p), the
                        argmax written into the static input buffer; nothing synchronizes, so with
                        --graphs (one graph replay each) the CPU runs ahead of the GPU
      (the generated tokens copied to the host: the request's one synchronize)
    result

The model's own ranges (token_embeddings, layer_N > attention_sublayer > ..., lm_head) are inside
prefill and eager decode steps; a graph replay has none (NVTX fires at capture only). Eager and
graph decode steps run the same static-shape code, hence the same kernels. The cache holds
P + T positions: the model is built with that context (``--seq`` does not apply).
"""
from __future__ import annotations

import argparse
from typing import Callable, ContextManager

import torch

from capture import nvtx
from capture.models import gpt

GRAPH_WARMUP_ITERATIONS = 3  # torch.cuda.graphs' recommended warm-up on a side stream


class Decoder:
    """Greedy generation of `tokens` tokens per request over a static cache, eager or graphed.

    The state a decode step reads and writes lives in static device buffers (`token`, `position`,
    `generated`), so one captured step replays for any position."""

    def __init__(self, model: gpt.GPTLM, batch: int, prompt: int, tokens: int,
                 device: torch.device, bf16: bool = False) -> None:
        self.model, self.prompt, self.tokens, self.device = model, prompt, tokens, device
        # one autocast per forward, without the weight-cast cache: the same kernels eager and in a graph
        self.autocast: Callable[[], ContextManager[object]] = (
            lambda: torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16, cache_enabled=False))
        cache_dtype = torch.bfloat16 if bf16 else torch.float32
        self.cache = gpt.KVCache(model, batch, prompt + tokens, cache_dtype, device)
        self.token = torch.zeros(batch, 1, dtype=torch.long, device=device)
        self.position = torch.zeros(1, dtype=torch.long, device=device)
        self.generated = torch.zeros(batch, tokens, dtype=torch.long, device=device)
        self.prompt_positions = torch.arange(prompt, device=device)
        self.graph: torch.cuda.CUDAGraph | None = None
        self.logits: torch.Tensor | None = None  # the last forward's logits (a graph's static output)

    def prefill(self, prompt: torch.Tensor) -> torch.Tensor:
        """The prompt's forward: cache positions 0..P-1 filled, the first token chosen; its logits."""
        with self.autocast():
            logits = self.model.forward_cached(prompt, self.cache, self.prompt_positions)
        first = logits[:, -1].argmax(dim=-1)
        self.generated[:, 0].copy_(first)
        self.token.copy_(first[:, None])
        self.position.fill_(self.prompt)
        self.logits = logits
        return logits

    def _step(self) -> torch.Tensor:
        """One decode step on the static buffers (what a graph captures): its logits (batch, 1, V)."""
        with self.autocast():
            logits = self.model.forward_cached(self.token, self.cache, self.position)
        following = logits[:, -1].argmax(dim=-1)
        self.generated.index_copy_(1, self.position - (self.prompt - 1), following[:, None])
        self.token.copy_(following[:, None])
        self.position.add_(1)
        return logits

    def decode_step(self) -> torch.Tensor:
        """The next token: the captured graph replayed when there is one, else the step run eagerly."""
        if self.graph is not None:
            self.graph.replay()
        else:
            self.logits = self._step()
        assert self.logits is not None
        return self.logits

    def capture(self) -> None:
        """Side-stream warm-up iterations (each at position P, so they stay inside the cache), then
        the capture of one step into a CUDA graph; the next prefill resets the buffers."""
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(GRAPH_WARMUP_ITERATIONS):
                self.position.fill_(self.prompt)
                self._step()
        torch.cuda.current_stream().wait_stream(side)
        self.position.fill_(self.prompt)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self.logits = self._step()
        self.graph = graph

    def request(self, prompt: torch.Tensor) -> torch.Tensor:
        """One request: prefill, T-1 decode steps, the tokens copied to the host (one sync)."""
        with nvtx.range("prefill"):
            self.prefill(prompt)
        for _ in range(self.tokens - 1):
            with nvtx.range("decode_step"):
                self.decode_step()
        return self.generated.cpu()


def _prompt(args: argparse.Namespace, generator: torch.Generator, device: torch.device) -> torch.Tensor:
    """A new random prompt of batch x P tokens, made on the CPU and copied, as a request arrives."""
    return torch.randint(0, args.vocab, (args.batch, args.prompt), generator=generator).to(device)


def run(args: argparse.Namespace, module: object, device: torch.device,
        echo: Callable[[str], None]) -> dict[str, object]:
    """The decode workload (model_init, warmup, request per --steps, result); returns {'device',
    'tokens' (the last request's generated tokens, batch x T)}."""
    if args.graphs and device.type != "cuda":
        raise SystemExit("error: --graphs needs CUDA (a CUDA graph per decode step)")
    echo("Initializing model...")
    with nvtx.range("model_init"):
        with torch.device("cpu"):
            model = gpt.build(args)  # on the host, as a checkpoint is loaded
        model.eval()
        model.to(device)  # the weight upload: host-to-device copies
        decoder = Decoder(model, args.batch, args.prompt, args.tokens, device, bf16=args.dtype == "bf16")
        nvtx.synchronize(device)
    generator = torch.Generator().manual_seed(args.seed)
    with torch.no_grad(), nvtx.module_ranges(model, args.annotate, backward=False):
        if args.warmup or args.graphs:
            echo(f"Running {args.warmup} warm-up request(s)" + (" and the graph capture..." if args.graphs
                                                                  else "..."))
            with nvtx.range("warmup"):
                if args.graphs:
                    with nvtx.range("graph_capture"):
                        decoder.capture()
                        nvtx.synchronize(device)
                for _ in range(args.warmup):
                    with nvtx.range("request"):
                        decoder.request(_prompt(args, generator, device))
        nvtx.synchronize(device)
        generated = torch.zeros(0)
        for i in range(args.steps):
            with nvtx.range("request"):
                generated = decoder.request(_prompt(args, generator, device))
            echo(f"request {i + 1}/{args.steps}: {args.batch} x {args.tokens} tokens generated "
                 f"(first row starts {generated[0, :4].tolist()})")
    nvtx.synchronize(device)
    result: dict[str, object] = {"device": str(device)}
    with nvtx.range("result"):
        result["tokens"] = generated.tolist()
    echo("")
    echo(f"Decoding complete. device={device}, requests={args.steps}, tokens per request={args.tokens}")
    return result
