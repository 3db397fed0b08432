"""Uninstrumented timings on the GPU machine (no nsys), to pick the what-if baseline's source size
(scripts/capture_what_if.sh).

Batch 256: the CPU time of one DataLoader batch (workers 0, as the baseline) per source size, and the synchronized
step time of the fp32 (no TF32) and bf16 training steps. Prints the source size whose batch load time is nearest
the fp32 step time last, alone on its line."""
import argparse
import json
import sys
import time

import torch

from capture.models import cnn
from capture.workload import _set_tf32

BATCH = 256
SOURCES = (32, 48, 64, 96, 128, 160)


def args_for(source: int) -> argparse.Namespace:
    return argparse.Namespace(image_size=32, source_size=source, pool=64, classes=100, seed=0, batch=BATCH,
                              width=64, stages=4, blocks=2, channels_last=False)


def load_ms(source: int) -> float:
    ds = cnn.make_dataset(args_for(source), torch.Generator().manual_seed(0), 4 * BATCH)
    it = iter(torch.utils.data.DataLoader(ds, batch_size=BATCH, num_workers=0))
    next(it)
    t = time.perf_counter()
    next(it)
    next(it)
    return (time.perf_counter() - t) / 2 * 1e3


def step_ms(dtype: str) -> float:
    _set_tf32(False)
    dev = torch.device("cuda")
    a = args_for(32)
    with dev:
        model = cnn.build(a)
    opt = cnn.make_optimizer(model)
    batch = {k: v.to(dev) for k, v in cnn.make_batch(a, torch.Generator().manual_seed(0)).items()}
    auto = torch.autocast("cuda", dtype=torch.bfloat16, enabled=dtype == "bf16")
    times = []
    for i in range(8):
        torch.cuda.synchronize()
        t = time.perf_counter()
        with auto:
            loss = cnn.loss(cnn.forward(model, batch), batch)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        if i >= 3:
            times.append((time.perf_counter() - t) * 1e3)
    return sorted(times)[len(times) // 2]


load_ms(32)  # the first call pays a one-off start-up (over a second here), whatever the size
loads = {s: round(load_ms(s), 1) for s in SOURCES}
steps = {d: round(step_ms(d), 1) for d in ("fp32", "bf16")}
print(json.dumps({"batch": BATCH, "torch_threads": torch.get_num_threads(), "load_ms": loads, "step_ms": steps}))
best = min(SOURCES, key=lambda s: abs(loads[s] - steps["fp32"]))
print(best)
sys.stdout.flush()
